#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# OCI hooks (config.json "hooks"): each kind runs once at its point in the
# lifecycle with the container's state on stdin; args, env, cwd, fds and
# timeouts are as the spec and hooks.h say; failures of the hooks before the
# user program abort, failures of poststart and poststop are warnings.

load helpers

setup() {
	moat_setup
	# What the hooks on the host side record. World-writable: createContainer
	# runs inside the container's user namespace.
	HOOK_LOG=$TEST_DIR/hooklog
	mkdir -m 0777 "$HOOK_LOG"
	RECORD=$TEST_DIR/record.sh
	# record.sh KIND: count one call of KIND, keep the state it read.
	write_hook "$RECORD" <<-EOF
		kind=\$1
		cat >"$HOOK_LOG/\$kind.json"
		echo call >>"$HOOK_LOG/\$kind.calls"
	EOF
	export HOOK_LOG RECORD
}

# write_hook PATH: stdin, after a #!/bin/sh line, as an executable script.
write_hook() {
	{
		echo '#!/bin/sh'
		cat
	} >"$1"
	chmod 0755 "$1"
}

# add_hook KIND PATH [ARG...]: append a hook to hooks.KIND; with ARGs its
# args are exactly those (the first is argv[0]), without, it has none.
add_hook() {
	local kind=$1 path=$2 a list='' i=0
	local -a jqargs=(--arg k "$kind" --arg p "$path")
	shift 2
	if (($# == 0)); then
		# shellcheck disable=SC2016 # jq variables
		cfg_set '.hooks[$k] += [{path: $p}]' "${jqargs[@]}"
		return
	fi
	for a in "$@"; do
		jqargs+=(--arg "a$i" "$a")
		list+="${list:+,}\$a$i"
		i=$((i + 1))
	done
	cfg_set ".hooks[\$k] += [{path: \$p, args: [$list]}]" "${jqargs[@]}"
}

# add_recorder KIND: a hook of KIND on the host that records its calls.
add_recorder() {
	add_hook "$1" "$RECORD" record.sh "$1"
}

# add_start_recorder: a startContainer hook, inside the container's rootfs
# (its path resolves there), printing "startContainer <state>" as one line
# on the container's stdout.
add_start_recorder() {
	add_script start-hook <<-'EOF'
		#!/bin/sh
		printf 'startContainer %s\n' "$(tr -d '\n')"
	EOF
	add_hook startContainer /bin/start-hook start-hook
	cfg_set '.hooks.startContainer[-1].env = ["PATH=/bin"]'
}

# calls KIND: how many times the recorder of KIND ran.
calls() {
	local f=$HOOK_LOG/$1.calls
	if [[ -f $f ]]; then
		wc -l <"$f" | tr -d ' '
	else
		echo 0
	fi
}

# seen KIND FILTER: FILTER (jq -r) applied to the state the recorder of KIND read.
seen() {
	jq -r "$2" "$HOOK_LOG/$1.json"
}

# start_lines: the lines the startContainer recorder printed.
start_lines() {
	grep '^startContainer ' "$(out_file "$CID")" || true
}

# A container whose process waits for one line on a FIFO (its stdin).
make_waiting_container() {
	make_bundle
	mkfifo "$TEST_DIR/go"
	CONTAINER_STDIN=$TEST_DIR/go
	# shellcheck disable=SC2016 # expanded in the container
	cfg_sh 'echo started; read line; echo "exiting on $line"'
}

release_waiting() {
	echo go >"$TEST_DIR/go"
}

# assert_state KIND STATUS: the recorder of KIND read a state for this
# container with that status (and, unless stopped, the init's host pid).
assert_state() {
	local kind=$1 want=$2
	assert_equal "$(seen "$kind" .status)" "$want"
	assert_equal "$(seen "$kind" .id)" "$CID"
	assert_equal "$(seen "$kind" .bundle)" "$BUNDLE"
	assert_equal "$(seen "$kind" .ociVersion | cut -d. -f1)" 1
	if [[ $want != stopped ]]; then
		assert_equal "$(seen "$kind" .pid)" "$(host_pid)"
	fi
}

# create_fails: `moat create` under bats' run, expected to fail. The
# container's stdout goes to its out_file, so a create that wrongly succeeds
# fails the test rather than holding run's pipe open.
create_fails() {
	run --separate-stderr create_to_files
}

create_to_files() {
	moat create --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID" >"$(out_file "$CID")"
}

@test "prestart, createRuntime and createContainer run once during create, seeing creating" {
	make_waiting_container
	cfg_set '.annotations = {"org.example.hooks": "yes"}'
	add_recorder prestart
	add_recorder createRuntime
	add_recorder createContainer
	moat_create
	for kind in prestart createRuntime createContainer; do
		assert_equal "$(calls "$kind")" 1
		assert_state "$kind" creating
		assert_equal "$(seen "$kind" '.annotations["org.example.hooks"]')" yes
	done
	assert_equal "$(status_of)" created
}

# The runtime hooks run once the init is in its cgroups and namespaces, with its id maps: moat
# clones it straight into namespaces it makes (issue 21), and where one is joined a stage 1
# joins, makes them and clones the init. Both paths are checked: each joins the v1 cgroups
# from the child itself, and a hook that ran before that would see moat's own cgroups.
# probe_init MODE: create $CID, its prestart and createRuntime hooks noting the init's
# cgroups, uid map and pid-namespace pids; check them.
probe_init() {
	local kind line
	write_hook "$TEST_DIR/probe.sh" <<-EOF
		pid=\$(jq -r .pid)
		cat /proc/\$pid/cgroup >"$HOOK_LOG/\$1.cgroup"
		cat /proc/\$pid/uid_map >"$HOOK_LOG/\$1.uid_map"
		grep '^NSpid:' /proc/\$pid/status >"$HOOK_LOG/\$1.nspid"
	EOF
	add_hook prestart "$TEST_DIR/probe.sh" probe.sh prestart
	add_hook createRuntime "$TEST_DIR/probe.sh" probe.sh createRuntime
	moat_create
	for kind in prestart createRuntime; do
		[[ -s $HOOK_LOG/$kind.cgroup ]] || fail "$1: the $kind hook read no cgroups"
		while read -r line; do
			[[ $line == *":/moat/$CID" ]] ||
				fail "$1: in the $kind hook the init is not in the container's cgroup: $line"
		done <"$HOOK_LOG/$kind.cgroup"
		read -r -a map <"$HOOK_LOG/$kind.uid_map"
		assert_equal "${map[*]}" "0 100000 65536"
		[[ $(cat "$HOOK_LOG/$kind.nspid") =~ ^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$ ]] ||
			fail "$1: the init is not pid 1 of its own namespace: $(cat "$HOOK_LOG/$kind.nspid")"
	done
	assert_equal "$(status_of)" created
}

@test "the runtime hooks find the init in its cgroups, id maps and PID namespace: cloned into them" {
	make_waiting_container
	probe_init direct
}

@test "the runtime hooks find the init in its cgroups, id maps and PID namespace: made by stage 1" {
	make_waiting_container
	touch "$TEST_DIR/netns"
	unshare --net="$TEST_DIR/netns" true
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "$TEST_DIR/netns"
	probe_init "joined network namespace"
}

# Issue 14: the spec runs createContainer after the config's mounts, before pivot_root.
@test "createContainer runs once the config's mounts are made, before the root is entered" {
	make_waiting_container
	write_hook "$TEST_DIR/mounted.sh" <<-EOF
		ls "$BUNDLE/rootfs/proc" | grep -c '^[0-9]' >"$HOOK_LOG/proc-pids"
		mountpoint -q "$BUNDLE/rootfs/tmp" && echo tmp-mounted >"$HOOK_LOG/tmp"
		true
	EOF
	cfg_set '.hooks.createContainer = [{path: $p}]' --arg p "$TEST_DIR/mounted.sh"
	moat_create
	[[ $(cat "$HOOK_LOG/proc-pids") -ge 1 ]] || fail "the container's /proc was not mounted yet"
	assert_equal "$(cat "$HOOK_LOG/tmp")" tmp-mounted
}

# The state is the same in every hook and in `moat state`: the config's annotations, what is
# in force (moat.isolation) and what the policy changed (moat.policy.<rule>).
@test "every hook kind sees the annotations moat state shows, the policy's and moat.isolation included" {
	make_waiting_container
	# no seccomp section: the policy's default-seccomp rule adds one, and says so
	cfg_set '.annotations = {"org.example.hooks": "yes"} | del(.linux.seccomp)'
	for kind in prestart createRuntime createContainer poststart poststop; do
		add_recorder "$kind"
	done
	add_start_recorder
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	shown=$(state_of | jq -S .annotations)
	assert_equal "$(jq -r '.["org.example.hooks"]' <<<"$shown")" yes
	assert_equal "$(jq -r '.["moat.isolation"]' <<<"$shown")" container
	jq -e 'keys | any(startswith("moat.policy."))' <<<"$shown"
	release_waiting
	wait_for_status stopped
	moat delete "$CID"
	for kind in prestart createRuntime createContainer poststart poststop; do
		assert_equal "$kind: $(seen "$kind" .annotations | jq -S .)" "$kind: $shown"
	done
	state=$(start_lines | sed 's/^startContainer //')
	assert_equal "startContainer: $(jq -S .annotations <<<"$state")" "startContainer: $shown"
}

@test "startContainer runs once inside the container at start, before the program, seeing created" {
	make_waiting_container
	add_start_recorder
	moat_create
	assert_equal "$(start_lines)" ''
	moat start "$CID"
	wait_for_output '^started$'
	assert_equal "$(start_lines | wc -l)" 1
	state=$(start_lines | sed 's/^startContainer //')
	assert_equal "$(jq -r .status <<<"$state")" created
	assert_equal "$(jq -r .id <<<"$state")" "$CID"
	assert_equal "$(jq -r .pid <<<"$state")" "$(host_pid)"
	# before the user program: its line comes first
	first=$(grep -nE '^(startContainer |started$)' "$(out_file "$CID")" | head -n1)
	[[ $first == *:startContainer* ]]
}

@test "poststart runs once when start returns, seeing running" {
	make_waiting_container
	add_recorder poststart
	moat_create
	assert_equal "$(calls poststart)" 0
	moat start "$CID"
	assert_equal "$(calls poststart)" 1
	assert_state poststart running
	wait_for_output '^started$'
}

@test "poststop runs once on delete, not before, seeing stopped" {
	make_waiting_container
	add_recorder poststop
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	release_waiting
	wait_for_status stopped
	assert_equal "$(calls poststop)" 0
	run moat delete "$CID"
	assert_success
	assert_equal "$(calls poststop)" 1
	assert_state poststop stopped
	assert_no_residue "$CID"
}

@test "poststop runs when a created container is deleted" {
	make_waiting_container
	add_recorder poststop
	moat_create
	run moat delete --force "$CID"
	assert_success
	assert_equal "$(calls poststop)" 1
	assert_equal "$(seen poststop .id)" "$CID"
	assert_no_residue "$CID"
}

@test "the state says whether start and delete have hooks to run, and a state without it still runs them" {
	make_waiting_container
	add_recorder poststart
	add_recorder poststop
	moat_create
	assert_equal "$(jq .lateHooks "$MOAT_ROOT/$CID/state.json")" true
	# a state that a moat before the field wrote: start and delete read the config
	jq 'del(.lateHooks)' "$MOAT_ROOT/$CID/state.json" >"$BATS_TEST_TMPDIR/state.json"
	cp "$BATS_TEST_TMPDIR/state.json" "$MOAT_ROOT/$CID/state.json"
	moat start "$CID"
	assert_equal "$(calls poststart)" 1
	run moat delete --force "$CID"
	assert_success
	assert_equal "$(calls poststop)" 1
	assert_no_residue "$CID"
}

@test "a container without poststart or poststop hooks records none" {
	make_waiting_container
	moat_create
	assert_equal "$(jq .lateHooks "$MOAT_ROOT/$CID/state.json")" false
	run moat delete --force "$CID"
	assert_success
	assert_no_residue "$CID"
}

@test "every hook kind runs exactly once over create, start and delete" {
	make_waiting_container
	for kind in prestart createRuntime createContainer poststart poststop; do
		add_recorder "$kind"
	done
	add_start_recorder
	moat_create
	moat start "$CID"
	wait_for_output '^started$'
	release_waiting
	wait_for_status stopped
	moat delete "$CID"
	for kind in prestart createRuntime createContainer poststart poststop; do
		assert_equal "$(calls "$kind")" 1
	done
	assert_equal "$(start_lines | wc -l)" 1
}

@test "moat run runs every hook kind exactly once" {
	make_bundle
	for kind in prestart createRuntime createContainer poststart poststop; do
		add_recorder "$kind"
	done
	add_start_recorder
	run_sh 'echo main'
	assert_success
	assert_line_exact main
	assert_equal "$(grep -c '^startContainer ' <<<"$output")" 1
	for kind in prestart createRuntime createContainer poststart poststop; do
		assert_equal "$(calls "$kind")" 1
	done
	assert_no_residue "$CID"
}

@test "hooks of one kind run in config order" {
	make_bundle
	cfg_args true
	for i in 0 1 2; do
		write_hook "$TEST_DIR/order$i.sh" <<-EOF
			echo $i >>"$HOOK_LOG/order"
		EOF
		add_hook createRuntime "$TEST_DIR/order$i.sh"
	done
	moat_create
	assert_equal "$(tr '\n' ' ' <"$HOOK_LOG/order")" '0 1 2 '
}

@test "args are passed as argv (args[0] is argv[0]) and env is exactly hook.env" {
	make_bundle
	cfg_args true
	# shellcheck disable=SC2016 # expanded by the hook's shell
	add_hook createRuntime /bin/sh hook-argv0 -c \
		'tr "\0" "\n" </proc/$$/cmdline >"$1/argv"; tr "\0" "\n" </proc/$$/environ >"$1/env"' \
		dollar0 "$HOOK_LOG"
	cfg_set '.hooks.createRuntime[0].env = ["FOO=bar baz", "HOOK_TEST=1"]'
	export LEAK_CHECK=from-the-test-env
	moat_create
	run cat "$HOOK_LOG/argv"
	assert_equal "${lines[0]}" hook-argv0
	assert_equal "${lines[1]}" -c
	assert_equal "${lines[3]}" dollar0
	assert_equal "${lines[4]}" "$HOOK_LOG"
	assert_equal "${#lines[@]}" 5
	run cat "$HOOK_LOG/env"
	assert_output "FOO=bar baz
HOOK_TEST=1"
}

@test "a hook without args runs its path, and with \"env\": [] an empty environment" {
	make_bundle
	cfg_args true
	write_hook "$TEST_DIR/bare.sh" <<-EOF
		tr '\0' '\n' </proc/\$\$/environ >"$HOOK_LOG/env"
		echo ran >"$HOOK_LOG/bare"
	EOF
	add_hook poststart "$TEST_DIR/bare.sh"
	cfg_set '.hooks.poststart[0].env = []'
	moat_create
	moat start "$CID"
	assert_equal "$(cat "$HOOK_LOG/bare")" ran
	refute [ -s "$HOOK_LOG/env" ]
}

# As runc and crun do: the hooks moat runs on its own side get moat's environment when they
# have no env; the two the container's init runs (createContainer, startContainer) get the
# container process's, as under runc.
@test "a hook without env gets moat's environment, or in the container's namespaces process.env" {
	make_bundle
	cfg_set '.process.env = ["PATH=/bin", "PROC_ENV=from-process"]'
	write_hook "$TEST_DIR/env.sh" <<-EOF
		env >"$HOOK_LOG/env-\$1"
	EOF
	for kind in prestart createRuntime createContainer poststart poststop; do
		add_hook "$kind" "$TEST_DIR/env.sh" env.sh "$kind"
	done
	add_script start-env <<-'EOF'
		#!/bin/sh
		env | sed 's/^/startenv /'
	EOF
	add_hook startContainer /bin/start-env
	export MOAT_HOOK_ENV_TEST=from-the-caller
	run_sh 'echo main'
	assert_success
	assert_line_exact main
	assert_line_exact 'startenv PROC_ENV=from-process'
	refute_line_exact 'startenv MOAT_HOOK_ENV_TEST=from-the-caller'
	for kind in prestart createRuntime poststart poststop; do
		run grep -x MOAT_HOOK_ENV_TEST=from-the-caller "$HOOK_LOG/env-$kind"
		assert_success
		run grep -c '^PROC_ENV=' "$HOOK_LOG/env-$kind"
		assert_output 0
	done
	run grep -x -e PROC_ENV=from-process -e MOAT_HOOK_ENV_TEST=from-the-caller \
		"$HOOK_LOG/env-createContainer"
	assert_output PROC_ENV=from-process
}

@test "host-side hooks run in the bundle directory" {
	make_waiting_container
	for kind in createRuntime poststop; do
		write_hook "$TEST_DIR/cwd-$kind.sh" <<-EOF
			readlink /proc/\$\$/cwd >"$HOOK_LOG/cwd-$kind"
		EOF
		add_hook "$kind" "$TEST_DIR/cwd-$kind.sh"
	done
	cd /
	moat_create
	moat delete --force "$CID"
	assert_equal "$(cat "$HOOK_LOG/cwd-createRuntime")" "$BUNDLE"
	assert_equal "$(cat "$HOOK_LOG/cwd-poststop")" "$BUNDLE"
}

@test "a hook has only fds 0-2 and no blocked or ignored signal, even under run" {
	make_waiting_container
	# ls lists its own fds: 0-2 and the one it reads /proc/self/fd with,
	# which is 3 only if nothing else is open. grep takes the shell's
	# place and reads its own mask: the shell's mask, read from outside,
	# can be caught mid-fork, when dash blocks every signal for a moment.
	add_hook createRuntime /bin/sh sh -c \
		'ls /proc/self/fd >"$0/fds"; exec grep -E "^Sig(Blk|Ign):" /proc/self/status >"$0/sigs"' \
		"$HOOK_LOG"
	run moat_run_detached
	assert_success
	assert_equal "$(sort -n "$HOOK_LOG/fds" | tr '\n' ' ')" '0 1 2 3 '
	run cat "$HOOK_LOG/sigs"
	assert_line --regexp '^SigBlk:[[:space:]]+0+$'
	assert_line --regexp '^SigIgn:[[:space:]]+0+$'
}

@test "a failing createRuntime aborts create, names the hook and leaves nothing" {
	make_waiting_container
	write_hook "$TEST_DIR/fail.sh" <<-'EOF'
		exit 3
	EOF
	add_hook createRuntime "$TEST_DIR/fail.sh"
	add_recorder createRuntime
	create_fails
	assert_moat_error "hooks\.createRuntime\[0\] '$TEST_DIR/fail\.sh': exited with status 3"
	# the hooks after the failed one do not run
	assert_equal "$(calls createRuntime)" 0
	assert_no_residue "$CID"
}

# runtime.md "Lifecycle": a failed createRuntime continues the lifecycle at
# the destroy step, which the poststop hooks follow.
@test "poststop hooks run when a createRuntime hook fails create" {
	make_waiting_container
	add_hook createRuntime /bin/false
	add_recorder poststop
	create_fails
	assert_moat_error "hooks\.createRuntime\[0\] '/bin/false': exited with status 1"
	assert_equal "$(calls poststop)" 1
	assert_equal "$(seen poststop .status)" stopped
	assert_equal "$(seen poststop .id)" "$CID"
	assert_no_residue "$CID"
}

@test "a failing prestart aborts create and leaves nothing" {
	make_waiting_container
	add_hook prestart /bin/false
	create_fails
	assert_moat_error "hooks\.prestart\[0\] '/bin/false': exited with status 1"
	assert_no_residue "$CID"
}

@test "a failing createContainer aborts create and leaves nothing" {
	make_waiting_container
	write_hook "$TEST_DIR/fail.sh" <<-'EOF'
		exit 4
	EOF
	add_hook createContainer "$TEST_DIR/fail.sh"
	create_fails
	assert_moat_error "hooks\.createContainer\[0\] '$TEST_DIR/fail\.sh': exited with status 4"
	assert_no_residue "$CID"
}

@test "a hook killed by a signal is reported with the signal" {
	make_waiting_container
	# shellcheck disable=SC2016 # expanded by the hook's shell
	add_hook createRuntime /bin/sh sh -c 'kill -KILL $$'
	create_fails
	assert_moat_error "hooks\.createRuntime\[0\] '/bin/sh': killed by signal 9 \(SIGKILL\)"
	assert_no_residue "$CID"
}

@test "a hook that cannot be executed fails create with the cause" {
	make_waiting_container
	add_hook createRuntime "$TEST_DIR/no-such-hook"
	create_fails
	assert_moat_error \
		"hooks\.createRuntime\[0\] '$TEST_DIR/no-such-hook': exec: No such file or directory"
	assert_no_residue "$CID"
}

@test "a relative hook path is refused before anything runs" {
	make_waiting_container
	add_recorder prestart
	add_hook poststop relative/hook
	create_fails
	assert_moat_error "hooks\.poststop\[0\] 'relative/hook': path: must be absolute"
	assert_equal "$(calls prestart)" 0
	assert_no_residue "$CID"
}

@test "a failing startContainer stops the container before the program runs" {
	make_bundle
	cfg_sh 'echo started'
	add_script start-fail <<-'EOF'
		#!/bin/sh
		exit 5
	EOF
	add_hook startContainer /bin/start-fail
	moat_create
	run --separate-stderr moat start "$CID"
	wait_for_status stopped
	refute grep -q '^started$' "$(out_file "$CID")"
	# reported by start, or by the container's init on its stderr
	if ! grep -qF 'hooks.startContainer[0]' <<<"$stderr"; then
		run cat "$(err_file "$CID")"
		assert_output --partial "hooks.startContainer[0] '/bin/start-fail': exited with status 5"
	fi
}

@test "a failing poststart is a warning: start succeeds and later poststart hooks run" {
	make_waiting_container
	write_hook "$TEST_DIR/fail.sh" <<-'EOF'
		exit 6
	EOF
	add_hook poststart "$TEST_DIR/fail.sh"
	add_recorder poststart
	moat_create
	run --separate-stderr moat start "$CID"
	assert_success
	assert_regex "$stderr" "hooks\.poststart\[0\] '$TEST_DIR/fail\.sh': exited with status 6"
	assert_equal "$(calls poststart)" 1
	wait_for_output '^started$'
	assert_equal "$(status_of)" running
}

@test "a failing poststop is a warning: delete succeeds and later poststop hooks run" {
	make_waiting_container
	add_hook poststop /bin/false
	add_recorder poststop
	moat_create
	run --separate-stderr moat delete --force "$CID"
	assert_success
	assert_regex "$stderr" "hooks\.poststop\[0\] '/bin/false': exited with status 1"
	assert_equal "$(calls poststop)" 1
	assert_no_residue "$CID"
}

@test "a hook over its timeout is killed with what it started, and create fails" {
	make_waiting_container
	write_hook "$TEST_DIR/slow.sh" <<-EOF
		sleep 60 &
		echo \$! >"$TEST_DIR/slow-child.pid"
		wait
	EOF
	add_hook createRuntime "$TEST_DIR/slow.sh"
	cfg_set '.hooks.createRuntime[0].timeout = 1'
	SECONDS=0
	create_fails
	elapsed=$SECONDS
	assert_moat_error "hooks\.createRuntime\[0\] '$TEST_DIR/slow\.sh': timed out after 1 s"
	((elapsed < 30))
	retry process_gone "$(tr -cd '0-9' <"$TEST_DIR/slow-child.pid")"
	assert_no_residue "$CID"
}

@test "a poststart hook over its timeout is killed and only warned about" {
	make_waiting_container
	add_hook poststart /bin/sleep sleep 60
	cfg_set '.hooks.poststart[0].timeout = 1'
	moat_create
	SECONDS=0
	run --separate-stderr moat start "$CID"
	elapsed=$SECONDS
	assert_success
	assert_regex "$stderr" "hooks\.poststart\[0\] '/bin/sleep': timed out after 1 s"
	((elapsed < 30))
	wait_for_output '^started$'
}

@test "a hook that leaves a daemon running does not hold up create" {
	make_waiting_container
	for i in 0 1; do
		write_hook "$TEST_DIR/daemon$i.sh" <<-EOF
			sleep 300 </dev/null >/dev/null 2>&1 &
			echo \$! >"$TEST_DIR/daemon$i.pid"
		EOF
		add_hook createRuntime "$TEST_DIR/daemon$i.sh"
	done
	# one waited for with a timeout, one without
	cfg_set '.hooks.createRuntime[0].timeout = 100'
	SECONDS=0
	run moat_create
	assert_success
	((SECONDS < 30))
	# a hook's daemons are its own business: left alone (teardown kills them)
	process_alive "$(tr -cd '0-9' <"$TEST_DIR/daemon0.pid")"
	process_alive "$(tr -cd '0-9' <"$TEST_DIR/daemon1.pid")"
	assert_equal "$(status_of)" created
}
