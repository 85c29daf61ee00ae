#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat exec`: another process in a running container, in every one of its
# namespaces and its cgroup, with the container's process settings unless a
# flag says otherwise; exit codes, --detach, --pid-file, --tty.

load helpers

start_sleeper() {
	make_bundle
	cfg_set '.process.env += ["FROM_CONFIG=yes"]'
	cfg_args sleep 300
	moat_run_detached
}

@test "exec runs in the container's pid, mount, uts, net, ipc, user and cgroup namespaces" {
	start_sleeper
	local pid ns
	pid=$(host_pid)
	run --separate-stderr moat exec "$CID" sh -c \
		'for n in pid mnt uts net ipc user cgroup; do echo "$n $(readlink /proc/self/ns/$n)"; done'
	assert_success
	for ns in pid mnt uts net ipc user cgroup; do
		assert_line_exact "$ns $(readlink "/proc/$pid/ns/$ns")"
	done
}

@test "exec joins the container's cgroup" {
	start_sleeper
	local pid
	pid=$(host_pid)
	moat exec -d --pid-file "$TEST_DIR/exec.pid" "$CID" sleep 60
	run diff <(grep -v '^0::' "/proc/$pid/cgroup") <(grep -v '^0::' "/proc/$(cat "$TEST_DIR/exec.pid")/cgroup")
	assert_success
}

@test "exec propagates the exit code" {
	start_sleeper
	run moat exec "$CID" sh -c 'exit 42'
	assert_equal "$status" 42
	run moat exec "$CID" sh -c 'kill -9 $$'
	assert_equal "$status" 137
}

@test "exec passes stdin, stdout and stderr through" {
	start_sleeper
	run --separate-stderr moat exec "$CID" sh -c 'cat; echo err >&2' <<<'from stdin'
	assert_success
	assert_output 'from stdin'
	assert_equal "$stderr" err
}

@test "exec uses the container's env, user and cwd, which --env, --user and --cwd change" {
	start_sleeper
	run --separate-stderr moat exec "$CID" sh -c 'echo "$FROM_CONFIG $(id -u):$(id -g) $(pwd)"'
	assert_output 'yes 0:0 /'
	run --separate-stderr moat exec --env FROM_CONFIG=no -e EXTRA=1 --user 1000:1001 --cwd /tmp \
		"$CID" sh -c 'echo "$FROM_CONFIG $EXTRA $(id -u):$(id -g) $(pwd)"'
	assert_success
	assert_output 'no 1 1000:1001 /tmp'
}

@test "exec --additional-gids sets supplementary groups" {
	start_sleeper
	run --separate-stderr moat exec -u 1000:1000 -g 20 -g 30 "$CID" sh -c 'grep ^Groups: /proc/self/status'
	assert_success
	assert_output --regexp '^Groups:[[:space:]]+20 30[[:space:]]*$'
}

@test "exec keeps the container's empty capability sets and no_new_privs" {
	start_sleeper
	run --separate-stderr moat exec "$CID" sh -c 'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status'
	assert_success
	assert_line --regexp '^CapEff:[[:space:]]+0000000000000000$'
	assert_line --regexp '^CapBnd:[[:space:]]+0000000000000000$'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
}

@test "exec --cap adds a capability to the bounding, effective and permitted sets only" {
	start_sleeper
	run --separate-stderr moat exec --cap CAP_NET_RAW "$CID" sh -c 'grep -E "^Cap(Eff|Bnd|Prm|Inh|Amb)" /proc/self/status'
	assert_success
	assert_line --regexp '^CapEff:[[:space:]]+0000000000002000$'
	assert_line --regexp '^CapBnd:[[:space:]]+0000000000002000$'
	assert_line --regexp '^CapInh:[[:space:]]+0000000000000000$'
	assert_line --regexp '^CapAmb:[[:space:]]+0000000000000000$'
}

@test "exec --cap with an unknown capability fails with one line naming it" {
	start_sleeper
	run --separate-stderr moat exec --cap CAP_BOGUS "$CID" true
	assert_moat_error 'CAP_BOGUS'
}

@test "exec --process runs a process described as OCI JSON" {
	start_sleeper
	cat >"$TEST_DIR/process.json" <<'JSON'
{"user": {"uid": 7, "gid": 8}, "cwd": "/tmp", "args": ["sh", "-c", "echo $X $(id -u) $(pwd)"],
 "env": ["X=json", "PATH=/bin"]}
JSON
	run --separate-stderr moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_success
	assert_output 'json 7 /tmp'
}

@test "exec --process with a malformed file names the field" {
	start_sleeper
	echo '{"user": {"uid": "x", "gid": 0}, "cwd": "/", "args": ["true"]}' >"$TEST_DIR/process.json"
	run --separate-stderr moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_moat_error 'user\.uid'
}

@test "exec --detach returns at once and --pid-file names the process" {
	start_sleeper
	moat exec --detach --pid-file "$TEST_DIR/exec.pid" "$CID" sleep 60
	local pid
	pid=$(cat "$TEST_DIR/exec.pid")
	process_alive "$pid"
	[[ $(readlink "/proc/$pid/ns/pid") == "$(readlink "/proc/$(host_pid)/ns/pid")" ]]
}

@test "exec of a missing program fails with one line naming it" {
	start_sleeper
	run --separate-stderr moat exec "$CID" /no/such/program
	assert_moat_error '/no/such/program'
}

@test "exec into a stopped container fails with one line" {
	make_bundle
	cfg_args true
	moat_run_detached
	wait_for_status stopped
	run --separate-stderr moat exec "$CID" true
	assert_moat_error 'stopped'
}

@test "exec into an unknown container fails with one line" {
	run --separate-stderr moat exec no-such-container true
	assert_moat_error "does not exist"
}

@test "exec sees only fds 0, 1 and 2 unless --preserve-fds" {
	start_sleeper
	run --separate-stderr moat exec "$CID" sh -c 'ls /proc/self/fd' 5</dev/null
	assert_success
	refute_line_exact 5
	run --separate-stderr moat exec --preserve-fds 1 "$CID" sh -c 'ls /proc/self/fd' 3</dev/null
	assert_success
	assert_line_exact 3
}

@test "exec --tty gives the process a terminal and relays it" {
	start_sleeper
	# script(1) gives moat a terminal on stdin; the process must see a tty.
	run script -qec "$MOAT_BINARY --root $MOAT_ROOT exec --tty $CID sh -c 'tty; stty size'" /dev/null
	assert_success
	assert_output --regexp '/dev/pts/[0-9]+'
}

@test "exec --tty --detach without --console-socket fails with one line" {
	start_sleeper
	run --separate-stderr moat exec --tty --detach "$CID" true
	assert_moat_error 'console-socket'
}

# exec_process JSON_FIELDS: write $TEST_DIR/process.json, a process running
# sh -c "$SCRIPT" as root in /, with the given extra fields (a jq object).
exec_process() {
	jq -n --arg s "$SCRIPT" "{user: {uid: 0, gid: 0}, cwd: \"/\", args: [\"sh\", \"-c\", \$s],
		env: [\"PATH=/bin\"]} + $1" >"$TEST_DIR/process.json"
}

@test "exec --process applies process.scheduler to the exec'd process" {
	start_sleeper
	# policy and nice: fields 41 and 19 of /proc/self/stat (18 and 38 after the comm)
	SCRIPT='read -r s </proc/self/stat; set -- ${s##*) }; echo "nice=${17} policy=${39}"'
	exec_process '{scheduler: {policy: "SCHED_BATCH", nice: 7}}'
	run --separate-stderr moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_success
	assert_output 'nice=7 policy=3'
}

@test "exec --process applies process.ioPriority to the exec'd process" {
	start_sleeper
	SCRIPT='ionice -p $$'
	exec_process '{ioPriority: {class: "IOPRIO_CLASS_IDLE"}}'
	run --separate-stderr moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_success
	assert_output --regexp '^idle'
}

@test "exec --process applies process.execCPUAffinity.final" {
	start_sleeper
	SCRIPT='grep Cpus_allowed_list: /proc/self/status'
	exec_process '{execCPUAffinity: {initial: "0", final: "0"}}'
	run --separate-stderr moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_success
	assert_output --regexp ':\s+0$'
}

@test "exec runs under the container's linux.personality" {
	make_bundle
	cfg_set '.linux.personality = {domain: "LINUX32"}'
	cfg_args sleep 300
	moat_run_detached
	run --separate-stderr moat exec "$CID" uname -m
	assert_success
	assert_output i686
}

@test "exec --process with an invalid scheduler fails with one line naming the field" {
	start_sleeper
	SCRIPT=true
	exec_process '{scheduler: {policy: "SCHED_OTHER", priority: 5}}'
	run_moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_moat_error '^moat: process\.scheduler\.priority: must be 0 for SCHED_OTHER, got 5'
}

@test "exec --process with an AppArmor profile on a host without AppArmor fails naming the field" {
	if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) == Y ]]; then
		skip "AppArmor is enabled on this host"
	fi
	start_sleeper
	SCRIPT=true
	exec_process '{apparmorProfile: "moat-default"}'
	run_moat exec --process "$TEST_DIR/process.json" "$CID"
	assert_moat_error '^moat: process\.apparmorProfile: AppArmor is not enabled on this host$'
}

# container_cgroup_dirs: the container's cgroup directory in each hierarchy of this host.
container_cgroup_dirs() {
	find /sys/fs/cgroup -maxdepth 4 -type d -path "*/moat/$CID" 2>/dev/null
}

# make_sub_cgroup NAME [DIR...]: the sub-cgroup NAME of the container's cgroup, in the given
# hierarchy directories (default: all). A v1 cpuset one gets its parent's cpus and mems, as
# it takes no process without.
make_sub_cgroup() {
	local name=$1 dir f
	shift
	(($# > 0)) || set -- $(container_cgroup_dirs)
	for dir in "$@"; do
		mkdir "$dir/$name"
		for f in cpuset.cpus cpuset.mems; do
			[[ -f $dir/$f ]] && cat "$dir/$f" >"$dir/$name/$f"
		done
	done
	return 0
}

# cgroup_lines PID: /proc/PID/cgroup, one "hierarchy:path" per line.
cgroup_lines() {
	cut -d: -f2- "/proc/$1/cgroup"
}

@test "exec --cgroup PATH runs the process in that sub-cgroup in every hierarchy" {
	start_sleeper
	make_sub_cgroup sub
	moat exec -d --pid-file "$TEST_DIR/exec.pid" --cgroup sub "$CID" sleep 60
	run cgroup_lines "$(cat "$TEST_DIR/exec.pid")"
	assert_success
	# every line, the unified one (":/...") included
	refute_line --regexp ":/moat/$CID\$"
	assert_equal "$(grep -c ":/moat/$CID/sub\$" <<<"$output")" "${#lines[@]}"
	# a leading / changes nothing: the path is relative to the container's cgroup
	moat exec -d --pid-file "$TEST_DIR/exec2.pid" --cgroup /sub/ "$CID" sleep 60
	assert_equal "$(cgroup_lines "$(cat "$TEST_DIR/exec2.pid")")" "$output"
}

@test "exec --cgroup CONTROLLER:PATH moves only the hierarchies of those controllers" {
	start_sleeper
	[[ -d /sys/fs/cgroup/memory/moat/$CID && -d /sys/fs/cgroup/pids/moat/$CID ]] ||
		skip "no v1 memory and pids hierarchies on this host"
	make_sub_cgroup mem /sys/fs/cgroup/memory/moat/"$CID" /sys/fs/cgroup/pids/moat/"$CID"
	moat exec -d --pid-file "$TEST_DIR/exec.pid" --cgroup memory,pids:mem "$CID" sleep 60
	run cgroup_lines "$(cat "$TEST_DIR/exec.pid")"
	assert_line "memory:/moat/$CID/mem"
	assert_line "pids:/moat/$CID/mem"
	assert_line "freezer:/moat/$CID"
	# the v1 form and a plain path together: the controller's path wins for its hierarchy
	make_sub_cgroup all
	moat exec -d --pid-file "$TEST_DIR/exec2.pid" --cgroup memory:mem --cgroup all "$CID" sleep 60
	run cgroup_lines "$(cat "$TEST_DIR/exec2.pid")"
	assert_line "memory:/moat/$CID/mem"
	assert_line "pids:/moat/$CID/all"
}

@test "exec --cgroup with a controller only cgroup2 holds here (hugetlb) uses the unified hierarchy" {
	start_sleeper
	grep -qw hugetlb /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null &&
		[[ ! -d /sys/fs/cgroup/hugetlb ]] || skip "not the hybrid layout with hugetlb on cgroup2"
	make_sub_cgroup big /sys/fs/cgroup/unified/moat/"$CID"
	moat exec -d --pid-file "$TEST_DIR/exec.pid" --cgroup hugetlb:big "$CID" sleep 60
	run cgroup_lines "$(cat "$TEST_DIR/exec.pid")"
	assert_line ":/moat/$CID/big"
	assert_line "memory:/moat/$CID"
}

@test "exec --cgroup refusals are one line naming the argument, and run nothing" {
	start_sleeper
	run_moat exec --cgroup nope "$CID" touch /tmp/ran
	assert_moat_error "^moat: exec: --cgroup 'nope': no sub-cgroup '/sys/fs/cgroup/[^']*/moat/$CID/nope': No such file or directory\$"
	run_moat exec --cgroup ../escape "$CID" touch /tmp/ran
	assert_moat_error "^moat: exec: --cgroup '\.\./escape': '\.\.' is not allowed"
	run_moat exec --cgroup bogus:sub "$CID" touch /tmp/ran
	assert_moat_error "^moat: exec: --cgroup 'bogus:sub': unknown controller 'bogus'\$"
	run_moat exec --cgroup memory:a --cgroup memory:b "$CID" touch /tmp/ran
	assert_moat_error "controller memory given twice"
	run_moat exec --cgroup a --cgroup b "$CID" touch /tmp/ran
	assert_moat_error "a second path for every hierarchy"
	run_moat exec --cgroup '' "$CID" touch /tmp/ran
	assert_moat_error "no sub-cgroup path"
	run moat exec "$CID" test -e /tmp/ran
	assert_failure
	assert_equal "$(moat ps --format json "$CID")" "[$(host_pid)]"
}

# n_processes_is N: the container's cgroup holds N processes.
n_processes_is() {
	[[ $(moat ps --format json "$CID" | jq length) == "$1" ]]
}

@test "exec into a paused container is refused, naming --ignore-paused" {
	start_sleeper
	wait_for_status running
	moat pause "$CID"
	run_moat exec "$CID" true
	assert_moat_error "^moat: container '$CID' is paused: exec needs a running or created container \(or --ignore-paused, to wait for resume\)\$"
	assert_equal "$(moat ps --format json "$CID")" "[$(host_pid)]"
}

@test "exec --ignore-paused joins a paused container, runs once it is resumed, and holds no lock" {
	start_sleeper
	wait_for_status running
	moat pause "$CID"
	(
		rc=0
		moat exec --ignore-paused "$CID" sh -c 'echo ran; exit 4' >"$TEST_DIR/exec.out" || rc=$?
		echo "status $rc" >>"$TEST_DIR/exec.out"
	) </dev/null 2>"$TEST_DIR/exec.err" 3>&- &
	# the process is in the frozen cgroup (ps answers: exec holds no lock meanwhile), and
	# frozen it has run nothing
	retry n_processes_is 2
	assert_equal "$(status_of)" paused
	[[ ! -s $TEST_DIR/exec.out ]]
	moat resume "$CID"
	retry grep -q '^status ' "$TEST_DIR/exec.out"
	assert_equal "$(cat "$TEST_DIR/exec.out")" "ran
status 4"
	assert_equal "$(cat "$TEST_DIR/exec.err")" ''
}

@test "exec --apparmor on a host without AppArmor fails with one line naming AppArmor" {
	if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) == Y ]]; then
		skip "AppArmor is enabled on this host"
	fi
	start_sleeper
	run_moat exec --apparmor unconfined "$CID" touch /tmp/ran
	assert_moat_error '^moat: exec: --apparmor: AppArmor is not enabled on this host$'
	run moat exec "$CID" test -e /tmp/ran
	assert_failure
}

@test "exec --apparmor runs the process under the profile where AppArmor is enabled" {
	if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) != Y ]]; then
		skip "AppArmor is not enabled on this host"
	fi
	start_sleeper
	run_moat exec --apparmor unconfined "$CID" cat /proc/self/attr/current
	assert_success
	assert_output --partial unconfined
}

@test "exec --process-label on a host without SELinux fails with one line naming SELinux" {
	if [[ -e /sys/fs/selinux/enforce ]]; then
		skip "SELinux is enabled on this host"
	fi
	start_sleeper
	run_moat exec --process-label system_u:system_r:container_t:s0 "$CID" touch /tmp/ran
	assert_moat_error '^moat: exec: --process-label: (SELinux is not enabled on this host|this moat was built without SELinux support)'
	run moat exec "$CID" test -e /tmp/ran
	assert_failure
}
