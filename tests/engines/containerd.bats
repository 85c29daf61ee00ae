#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# containerd (Debian's containerd 1.6 with its runc v2 shim, driven by ctr)
# with moat and moat-vm as the shim's runtime binary: `ctr run --runc-binary`
# sets the shim's options.BinaryName, the field a runtime handler of
# contrib/engines/containerd/config.toml sets for the CRI plugin. containerd
# runs with contrib's configuration (the paths of this file's wrappers) and
# its root, state and sockets in this file's own directory, as do the shim's
# runtime root (--runc-root) and ctr's FIFOs; the image is the suite's busybox
# rootfs as an OCI image layout (make_oci_archive in engines.bash; no
# registry).

load engines

IMAGE=localhost/moat-busybox:test

ctr_in_dir() {
	timeout -k 10 300 ctr --address "$ENGINE_DIR/containerd.sock" --namespace moat-test "$@"
}

containerd_up() {
	[[ -S $ENGINE_DIR/containerd.sock ]] && ctr_in_dir --connect-timeout 2s version >/dev/null 2>&1
}

# ctr_run RT ARGS...: `ctr run ARGS...` through the runc v2 shim with RT
# (moat, moat-vm or runc itself) as the runtime binary
ctr_run() {
	local binary
	if [[ $1 == runc ]]; then
		binary=$(command -v runc) || return 1
	else
		binary=$(runtime_for "$1")
	fi
	shift
	ctr_in_dir run --runtime io.containerd.runc.v2 --runc-binary "$binary" \
		--runc-root "$ENGINE_DIR/runc-root" --fifo-dir "$ENGINE_DIR/fifo" "$@"
}

# ctr_exec NAME EXEC-ID CMD...: a process in the task NAME
ctr_exec() {
	ctr_in_dir task exec --fifo-dir "$ENGINE_DIR/fifo" --exec-id "$2" "$1" "${@:3}"
}

# on_console CMD: the shell command CMD with script(1) giving it a console on
# its stdin; the output without CR and NUL (the terminal may also echo a NUL
# ctr writes to it as "^@")
on_console() {
	local rc=0
	timeout -k 10 300 script -qec "$1" /dev/null >"$BATS_TEST_TMPDIR/tty.out" || rc=$?
	tr -d '\r\0' <"$BATS_TEST_TMPDIR/tty.out" | sed 's/\^@//g'
	return "$rc"
}

# ctr_exec_tty NAME EXEC-ID CMD...: exec -t, with script(1) giving ctr the
# console it needs on its stdin; the output without CR and NUL
ctr_exec_tty() {
	local cmd
	cmd=$(printf '%q ' ctr --address "$ENGINE_DIR/containerd.sock" --namespace moat-test \
		task exec -t --fifo-dir "$ENGINE_DIR/fifo" --exec-id "$2" "$1" "${@:3}")
	on_console "$cmd"
}

# ctr_run_tty RT NAME CMD...: `ctr run --rm -t` (the container's own terminal,
# through --console-socket), with script(1) as for ctr_exec_tty
ctr_run_tty() {
	local cmd binary
	binary=$(runtime_for "$1")
	cmd=$(printf '%q ' ctr --address "$ENGINE_DIR/containerd.sock" --namespace moat-test \
		run --rm -t --runtime io.containerd.runc.v2 --runc-binary "$binary" \
		--runc-root "$ENGINE_DIR/runc-root" --fifo-dir "$ENGINE_DIR/fifo" "$IMAGE" "$2" "${@:3}")
	on_console "$cmd"
}

# task_pid NAME, task_status NAME: columns of `ctr task ls`
task_pid() {
	ctr_in_dir task ls | awk -v name="$1" '$1 == name { print $2 }'
}

task_status() {
	ctr_in_dir task ls | awk -v name="$1" '$1 == name { print $3 }'
}

task_status_is() {
	[[ $(task_status "$1" 2>/dev/null) == "$2" ]]
}

file_contains() {
	grep -q -- "$2" "$1" 2>/dev/null
}

# remove_ctr_containers PREFIX: every container whose name starts with
# PREFIX, and its task
remove_ctr_containers() {
	local name
	for name in $(ctr_in_dir containers ls -q 2>/dev/null); do
		[[ $name == "$1"* ]] || continue
		# a frozen task does not die of SIGKILL until it is thawed
		ctr_in_dir task resume "$name" >/dev/null 2>&1
		ctr_in_dir task delete --force "$name" >/dev/null 2>&1
		ctr_in_dir containers delete "$name" >/dev/null 2>&1
	done
	return 0
}

setup_file() {
	command -v containerd >/dev/null || return 0
	engine_setup_file || return 1
	[[ -n ${ENGINE_DIR:-} ]] || return 0
	# this directory for containerd's state, sockets and the opt plugin
	# (/opt/containerd by default), then contrib's configuration with the
	# paths of this file's wrappers
	cat >"$ENGINE_DIR/containerd.toml" <<-EOF
		version = 2
		root = "$ENGINE_DIR/containerd/root"
		state = "$ENGINE_DIR/containerd/state"

		[grpc]
		  address = "$ENGINE_DIR/containerd.sock"

		[ttrpc]
		  address = "$ENGINE_DIR/containerd.sock.ttrpc"

		[debug]
		  address = "$ENGINE_DIR/containerd-debug.sock"

		[plugins."io.containerd.internal.v1.opt"]
		  path = "$ENGINE_DIR/containerd/opt"

	EOF
	sed -e '/^version = 2$/d' \
		-e "s|/usr/local/bin/moat-vm\"|$(runtime_for moat-vm)\"|" \
		-e "s|/usr/local/bin/moat\"|$(runtime_for moat)\"|" \
		"$BATS_TEST_DIRNAME/../../contrib/engines/containerd/config.toml" \
		>>"$ENGINE_DIR/containerd.toml"
	containerd --config "$ENGINE_DIR/containerd.toml" \
		>"$ENGINE_DIR/containerd.log" 2>&1 </dev/null 3>&- &
	echo "$!" >"$ENGINE_DIR/containerd.pid"
	if ! retry containerd_up; then
		echo "# containerd did not start:" >&2
		tail -20 "$ENGINE_DIR/containerd.log" >&2
		return 1
	fi
	make_oci_archive "$ENGINE_DIR/busybox.tar" "$ENGINE_DIR/busybox-oci.tar" || return 1
	ctr_in_dir images import --base-name localhost/moat-busybox "$ENGINE_DIR/busybox-oci.tar" >/dev/null
}

teardown_file() {
	if [[ -n ${ENGINE_DIR:-} ]]; then
		remove_ctr_containers ""
		ctr_in_dir images rm "$IMAGE" >/dev/null 2>&1 || true
		stop_pids "$(cat "$ENGINE_DIR/containerd.pid" 2>/dev/null)"
		# shims (their command line names this file's socket) and moat-vm's
		# VM supervisors, if any outlived containerd
		# shellcheck disable=SC2046 # one pid per word
		stop_pids $(pids_of_cmdline "$ENGINE_DIR/")
	fi
	# the shim gives moat its own state root (--runc-root)
	engine_teardown_file "${ENGINE_DIR:+$ENGINE_DIR/runc-root/moat-test}"
	# ctr puts a container's cgroup under its namespace, /moat-test/ID: the parent goes too
	rmdir /sys/fs/cgroup/*/moat-test /sys/fs/cgroup/moat-test 2>/dev/null || true
}

setup() {
	command -v containerd >/dev/null || skip "containerd is not installed (Debian package containerd)"
	engine_setup
}

teardown() {
	[[ -n ${ENGINE_DIR:-} ]] && remove_ctr_containers "moat-e$BATS_SUITE_TEST_NUMBER-"
	return 0
}

# --- checks, each run with moat and with moat-vm (RT) ----------------------

# check_run RT: output on both streams and the exit code, zero and non-zero
check_run() {
	run --separate-stderr ctr_run "$1" --rm "$IMAGE" "$(cname "$1")" \
		sh -c 'echo to-stdout; echo to-stderr >&2; exit 3'
	assert_equal "$status" 3
	assert_output to-stdout
	assert_equal "$stderr" to-stderr
	run ctr_run "$1" --rm "$IMAGE" "$(cname "$1-true")" true
	assert_success
}

# check_defaults RT: containerd's default spec (its capabilities and
# noNewPrivileges, no seccomp profile) applies as runc gets it from the same
# shim, with moat's default seccomp profile added; `ctr run --seccomp`
# (containerd's own profile) applies unchanged; the container's root is a host
# uid from moat's pool
check_defaults() {
	local name want got pid
	name=$(cname "$1")
	command -v runc >/dev/null || skip "runc is not installed (Debian package runc)"
	want=$(ctr_run runc --rm "$IMAGE" "$(cname runc)" \
		grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' /proc/self/status)
	got=$(ctr_run "$1" --rm "$IMAGE" "$(cname "$1-status")" \
		grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' /proc/self/status)
	assert_equal "$(grep -v Seccomp <<<"$got")" "$(grep -v Seccomp <<<"$want")"
	assert_equal "$(awk '/^NoNewPrivs:/ { print $2 }' <<<"$got")" 1
	# runc runs the spec without a filter; moat's hardened policy gives a
	# config that has no seccomp profile its default one (the policy's
	# no_new_privs is there already: containerd's spec asks for it)
	assert_equal "$(awk '/^Seccomp:/ { print $2 }' <<<"$want")" 0
	assert_equal "$(awk '/^Seccomp:/ { print $2 }' <<<"$got")" 2
	want=$(ctr_run runc --rm --seccomp "$IMAGE" "$(cname runc-seccomp)" \
		grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' /proc/self/status)
	got=$(ctr_run "$1" --rm --seccomp "$IMAGE" "$(cname "$1-seccomp")" \
		grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' /proc/self/status)
	assert_equal "$got" "$want"
	grep -q '^Seccomp:[[:space:]]*2$' <<<"$want" || fail "ctr run --seccomp gave runc no seccomp filter: $want"
	ctr_run "$1" -d "$IMAGE" "$name" sleep 600
	pid=$(task_pid "$name")
	# the workload (moat) or its microVM's supervisor (moat-vm)
	assert_pool_uid "$pid"
}

# check_exec RT: exec's output and exit code, exec -t on a pty, and run -t
check_exec() {
	local name
	name=$(cname "$1")
	ctr_run "$1" -d "$IMAGE" "$name" sleep 600
	run ctr_exec "$name" e1 sh -c 'echo exec-ran; exit 7'
	assert_equal "$status" 7
	assert_output exec-ran
	# (ctr may add "resize pty ... cannot resize a stopped container" after
	# the output, with runc too: its resize races the process's exit)
	run ctr_exec_tty "$name" e2 sh -c '[ -t 0 ] && [ -t 1 ] && tty'
	assert_success
	assert_output --regexp '^/dev/pts/[0-9]+'
	run ctr_run_tty "$1" "$(cname "$1-tty")" sh -c '[ -t 0 ] && [ -t 1 ] && tty'
	assert_success
	assert_output --regexp '^/dev/(pts/[0-9]+|console)'
}

# check_pause RT: paused and resumed, and the container works after
check_pause() {
	local name
	name=$(cname "$1")
	ctr_run "$1" -d "$IMAGE" "$name" sleep 600
	ctr_in_dir task pause "$name"
	run task_status "$name"
	assert_output PAUSED
	ctr_in_dir task resume "$name"
	run task_status "$name"
	assert_output RUNNING
	run ctr_exec "$name" e1 echo alive
	assert_success
	assert_output alive
}

# check_ps_metrics RT: --memory-limit reaches the task's cgroup, ps lists the
# task's process, metrics reads that cgroup.
# (ctr 1.6 has no update command. Docker's `update` goes through this same
# shim's Update call to the runtime: tests/engines/docker.bats tests it.)
check_ps_metrics() {
	local name pid
	name=$(cname "$1")
	ctr_run "$1" -d --memory-limit $((300 << 20)) "$IMAGE" "$name" sleep 600
	pid=$(task_pid "$name")
	[[ $pid =~ ^[0-9]+$ ]] || fail "no pid for task $name"
	assert_equal "$(memory_limit_of "$pid")" $((300 << 20))
	run ctr_in_dir task ps "$name"
	assert_success
	assert_line --regexp "^${pid}[[:space:]]"
	run ctr_in_dir task metrics "$name"
	assert_success
	assert_line --regexp '^memory\.usage_in_bytes[[:space:]]+[1-9][0-9]*[[:space:]]*$'
	assert_line --regexp "^memory\.limit_in_bytes[[:space:]]+$((300 << 20))[[:space:]]*\$"
}

# check_stop_kill RT: SIGTERM reaches the workload's trap and the task exits
# 0; SIGKILL ends a task with 137. (`ctr task delete` exits 0 either way and
# warns of a non-zero exit code.)
check_stop_kill() {
	local name log
	name=$(cname "$1")
	log=$ENGINE_DIR/$name.log
	ctr_run "$1" -d --log-uri "file://$log" "$IMAGE" "$name" \
		sh -c 'trap "echo got-TERM; exit 0" TERM; echo started; while :; do sleep 0.1; done'
	retry file_contains "$log" started
	ctr_in_dir task kill -s TERM "$name"
	retry task_status_is "$name" STOPPED
	run cat "$log"
	assert_output --partial got-TERM
	run ctr_in_dir task delete "$name"
	assert_success
	refute_output --partial "non-zero exit code"
	ctr_in_dir containers delete "$name"
	ctr_run "$1" -d "$IMAGE" "$name" sleep 600
	ctr_in_dir task kill -s KILL "$name"
	retry task_status_is "$name" STOPPED
	run ctr_in_dir task delete "$name"
	assert_success
	assert_output --partial "task $name exit with non-zero exit code 137"
}

# check_policy RT: what the hardened policy refuses reaches ctr's user with
# moat's message, and leaves no container behind
check_policy() {
	touch "$ENGINE_DIR/docker.sock"
	run ctr_run "$1" --rm \
		--mount "type=bind,src=$ENGINE_DIR/docker.sock,dst=/var/run/docker.sock,options=rbind:ro" \
		"$IMAGE" "$(cname "$1-socket")" true
	assert_failure
	assert_output --regexp "policy deny-host-mounts: mounts\[[0-9]+\] binds host path $ENGINE_DIR/docker.sock"
	run ctr_run "$1" --rm --privileged "$IMAGE" "$(cname "$1-privileged")" true
	assert_failure
	assert_output --partial "policy capability-ceiling: process.capabilities."
	run ctr_in_dir containers ls -q
	assert_success
	refute_output --partial "moat-e$BATS_SUITE_TEST_NUMBER-"
	run "$MOAT_BINARY" --root "$ENGINE_DIR/runc-root/moat-test" list -q
	assert_success
	assert_output ''
}

# --- tests -----------------------------------------------------------------

# A runtime handler only exists for Kubernetes if the CRI plugin loads
# contrib's tables.
@test "containerd: contrib's configuration loads the CRI plugin with the moat and moat-vm handlers" {
	run grep -F 'failed to load plugin io.containerd.grpc.v1.cri' "$ENGINE_DIR/containerd.log"
	assert_failure
	run ctr_in_dir plugins ls
	assert_success
	assert_line --regexp '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'
	run grep -F 'Start cri plugin with config' "$ENGINE_DIR/containerd.log"
	assert_success
	assert_output --partial "BinaryName:$(runtime_for moat)]"
	assert_output --partial "BinaryName:$(runtime_for moat-vm)]"
	assert_output --partial "PodAnnotations:[moat.vm.*]"
	assert_output --partial "RestrictOOMScoreAdj:true"
}

@test "containerd moat: run prints both streams and returns the workload's exit code" {
	check_run moat
}

@test "containerd moat-vm: run prints both streams and returns the workload's exit code" {
	skip_unless_vm
	check_run moat-vm
}

@test "containerd moat: containerd's default spec applies as with runc, plus moat's seccomp profile; root is a pool uid" {
	check_defaults moat
}

@test "containerd moat-vm: containerd's default spec applies in the guest as with runc, plus moat's seccomp profile; the VM runs as a pool uid" {
	skip_unless_vm
	check_defaults moat-vm
}

@test "containerd moat: task exec, exec -t and run -t" {
	check_exec moat
}

@test "containerd moat-vm: task exec, exec -t and run -t" {
	skip_unless_vm
	check_exec moat-vm
}

@test "containerd moat: task pause and resume" {
	check_pause moat
}

@test "containerd moat-vm: task pause and resume" {
	skip_unless_vm
	check_pause moat-vm
}

@test "containerd moat: --memory-limit, task ps and task metrics" {
	check_ps_metrics moat
}

@test "containerd moat-vm: --memory-limit, task ps and task metrics" {
	skip_unless_vm
	check_ps_metrics moat-vm
}

@test "containerd moat: SIGTERM reaches the workload, SIGKILL ends it with 137" {
	check_stop_kill moat
}

@test "containerd moat-vm: SIGTERM reaches the workload, SIGKILL ends it with 137" {
	skip_unless_vm
	check_stop_kill moat-vm
}

@test "containerd moat: a socket bind and --privileged fail with moat's policy message" {
	check_policy moat
}

@test "containerd moat-vm: a socket bind and --privileged fail with moat's policy message" {
	skip_unless_vm
	check_policy moat-vm
}

@test "containerd moat-vm: the workload runs under the guest's kernel" {
	skip_unless_vm
	run ctr_run moat-vm --rm "$IMAGE" "$(cname moat-vm)" uname -r
	assert_success
	assert_output --regexp '^6\.1\.'
	[[ $output != "$(uname -r)" ]] || fail "the workload ran under the host's kernel"
}
