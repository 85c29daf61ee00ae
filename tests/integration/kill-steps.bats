#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat killed with SIGKILL at every step of create, start, exec and delete (and of run,
# which is create and start in one process), as a caller killing it, an OOM kill or a
# lost machine would. After each kill: `moat list` shows no corrupt entry, `moat delete
# --force` (the ordinary build) leaves no process, cgroup, mount, state directory or
# user-namespace loan, and a new create with the same ID works.
#
# The steps are those of tests/moat-faults, the test build of moat with its fault steps
# on (src/libmoat/base/fault.h), which `make check` builds: MOAT_TEST_STEPS=FILE records the
# steps a command passes, MOAT_TEST_KILL_AT=STEP kills it there. Each kill test takes the
# steps from a recorded run, so a step added to moat is killed at without a change here.

load helpers

FAULTS=${MOAT_FAULTS_BINARY:-$(dirname "$MOAT_BINARY")/tests/moat-faults}

setup_file() {
	microvm_setup_file
}

setup() {
	[[ -x $FAULTS ]] || skip "no fault-injection build at $FAULTS (make check builds tests/moat-faults)"
	if [[ $BATS_TEST_DESCRIPTION == microVM:* ]]; then
		microvm_setup
	else
		moat_setup
		make_bundle
	fi
	cfg_args sleep 100000
}

teardown() {
	moat_teardown
}

# faults ARGS...: the fault-injection build, as the moat wrapper runs the ordinary one
faults() {
	MOAT_BINARY=$FAULTS moat "$@"
}

# steps_of PREFIX CMD...: the steps of faults CMD... whose names start with PREFIX (create:,
# start:...), in the order it passed them, once each
steps_of() {
	local prefix=$1 log=$TEST_DIR/steps
	shift
	rm -f "$log"
	MOAT_TEST_STEPS=$log faults "$@" >/dev/null || return 1
	grep "^$prefix" "$log" | awk '!seen[$0]++'
}

# killed_at STEP CMD...: faults CMD... killed at STEP
killed_at() {
	local step=$1
	shift
	MOAT_TEST_KILL_AT=$step capture faults "$@"
	((status == 128 + 9)) || fail "moat $1 was to be killed at $step: status $status, stderr: $stderr"
}

# no_loan_of ID: no user-namespace loan names ID's state directory
no_loan_of() {
	local loans
	loans=$(grep -lsF "$MOAT_ROOT/$1" /run/moat-userns/* || true)
	[[ -z $loans ]] || fail "user-namespace loans remain for $1: $loans"
}

# list_is_sound: moat list --format json parses and every entry has an ID and a status
list_is_sound() {
	run_moat list --format json
	((status == 0)) || fail "moat list: $stderr"
	jq -e 'all(.[]; (.id | type == "string") and (.status | type == "string"))' <<<"$output" \
		>/dev/null || fail "moat list shows a corrupt entry: $output"
}

# cleaned_up ID STEP: after a kill at STEP, delete --force removes all of ID, which can then
# be created again
cleaned_up() {
	local id=$1 step=$2
	list_is_sound
	run_moat delete --force "$id"
	((status == 0)) || fail "delete --force after a kill at $step: $stderr"
	assert_no_residue "$id"
	no_loan_of "$id"
	run_moat create --bundle "$BUNDLE" "$id"
	((status == 0)) || fail "create again after a kill at $step: $stderr"
	# (a directory a create left unnamed goes with the next create)
	[[ -z $(ls -A "$MOAT_ROOT/.new" 2>/dev/null) ]] || fail "a state directory remains in .new"
	run_moat delete --force "$id"
	((status == 0)) || fail "delete after the second create: $stderr"
	assert_no_residue "$id"
	no_loan_of "$id"
}

@test "the test build names the steps of create, start, exec and delete; the ordinary one has none" {
	local id=$CID-names steps
	steps=$(steps_of create: create --bundle "$BUNDLE" "$id")
	for step in create:new-dir create:state-dir create:userns-loan create:cgroup create:forked \
		create:userns-mapped create:init-pid create:cgroup-joined create:sources-sent \
		create:cgroup-done create:ready create:saved create:committed; do
		grep -qx "$step" <<<"$steps" || fail "create never passed $step: $steps"
	done
	assert_equal "$(steps_of start: start "$id")" $'start:opened\nstart:started\nstart:fifo-removed'
	assert_equal "$(steps_of exec: exec "$id" true)" $'exec:forked\nexec:pid\nexec:cgroup-joined'
	assert_equal "$(steps_of delete: delete --force "$id")" \
		$'delete:stopped\ndelete:cgroup-removed\ndelete:pod-left'
	assert_no_residue "$id"

	run "$FAULTS" --version
	assert_line --partial 'fault injection: on'
	run "$MOAT_BINARY" --version
	refute_line --partial 'fault injection'
	# the ordinary build ignores the variable
	MOAT_TEST_KILL_AT=create:state-dir moat create --bundle "$BUNDLE" "$CID"
	moat delete --force "$CID"
}

@test "killed at any step of create: delete --force leaves nothing, the ID works again" {
	local step steps n=0
	steps=$(steps_of create: create --bundle "$BUNDLE" "$CID-probe")
	moat delete --force "$CID-probe"
	for step in $steps; do
		n=$((n + 1))
		killed_at "$step" create --bundle "$BUNDLE" "$CID-$n"
		# a state saved is a container; before that, one line says what happened
		run_moat state "$CID-$n"
		if ((status != 0)); then
			[[ $stderr == "moat: container '$CID-$n': its create was interrupted"* ]] ||
				[[ $stderr == *"does not exist"* ]] || fail "state after a kill at $step: $stderr"
		fi
		cleaned_up "$CID-$n" "$step"
	done
	((n >= 10)) || fail "only $n steps of create: $steps"
}

@test "killed at any step of create without a cgroup: its processes end with moat" {
	# nothing but moat's own death tells the init to go: no cgroup names it for delete
	local step steps n=0
	cfg_set 'del(.linux.resources)'
	steps=$(steps_of create: --cgroup-manager disabled create --bundle "$BUNDLE" "$CID-probe")
	moat delete --force "$CID-probe"
	for step in $steps; do
		n=$((n + 1))
		killed_at "$step" --cgroup-manager disabled create --bundle "$BUNDLE" "$CID-$n"
		if [[ ! -f $MOAT_ROOT/$CID-$n/state.json ]]; then
			# before the state is saved, whatever the kill interrupted ends by itself
			retry test -z "$(pids_naming "" "$BUNDLE")"
		fi
		cleaned_up "$CID-$n" "$step"
	done
}

@test "killed at any step of run: delete --force leaves nothing, the ID works again" {
	local step steps n=0
	steps=$(steps_of '\(create\|start\):' run --detach --bundle "$BUNDLE" "$CID-probe")
	moat delete --force "$CID-probe"
	for step in $steps; do
		n=$((n + 1))
		killed_at "$step" run --detach --bundle "$BUNDLE" "$CID-$n"
		cleaned_up "$CID-$n" "$step"
	done
	((n >= 13)) || fail "only $n steps of run: $steps"
}

@test "killed at any step of start: the container is created or running, and delete --force ends it" {
	local step steps n=0
	moat create --bundle "$BUNDLE" "$CID-probe"
	steps=$(steps_of start: start "$CID-probe")
	moat delete --force "$CID-probe"
	for step in $steps; do
		n=$((n + 1))
		moat create --bundle "$BUNDLE" "$CID-$n"
		killed_at "$step" start "$CID-$n"
		run_moat state "$CID-$n"
		((status == 0)) || fail "state after a kill at $step: $stderr"
		cleaned_up "$CID-$n" "$step"
	done
}

@test "killed at any step of exec: no exec'd process is left behind, the container runs on" {
	local step steps n=0
	moat run --detach --bundle "$BUNDLE" "$CID"
	steps=$(steps_of exec: exec "$CID" true)
	for step in $steps; do
		n=$((n + 1))
		# a process nobody else runs, to look for afterwards
		killed_at "$step" exec "$CID" sleep "4242$n"
		retry test -z "$(pgrep -f "^sleep 4242$n\$")"
		assert_equal "$(status_of "$CID")" running
	done
	((n >= 3)) || fail "only $n steps of exec: $steps"
	moat delete --force "$CID"
	assert_no_residue "$CID"
	no_loan_of "$CID"
}

@test "killed at any step of delete: delete --force again leaves nothing" {
	local step steps n=0
	moat run --detach --bundle "$BUNDLE" "$CID-probe"
	steps=$(steps_of delete: delete --force "$CID-probe")
	for step in $steps; do
		n=$((n + 1))
		moat run --detach --bundle "$BUNDLE" "$CID-$n"
		killed_at "$step" delete --force "$CID-$n"
		cleaned_up "$CID-$n" "$step"
	done
}

@test "microVM: killed at any step of create: delete --force leaves nothing, the ID works again" {
	local step steps n=0
	steps=$(steps_of create: create --bundle "$BUNDLE" "$CID-probe")
	moat delete --force "$CID-probe"
	grep -qx create:microvm-jail <<<"$steps" || fail "no microVM step in: $steps"
	for step in $steps; do
		n=$((n + 1))
		killed_at "$step" create --bundle "$BUNDLE" "$CID-$n"
		cleaned_up "$CID-$n" "$step"
	done
}

@test "microVM: the supervisor killed at each step of the boot takes QEMU with it" {
	local step n=0 procs
	for step in vm:launched vm:ready; do
		n=$((n + 1))
		MOAT_TEST_KILL_AT=$step faults run --detach --bundle "$BUNDLE" "$CID-$n"
		# the supervisor is the container's init: with a workload that sleeps, a
		# stopped container is one whose supervisor died at the step
		retry status_is "$CID-$n" stopped
		# QEMU is in the container's cgroup, which nobody has emptied yet
		procs=$(cgroup_file pids cgroup.procs cgroup.procs "$CID-$n")
		[[ -f $procs ]] || fail "no cgroup at $procs"
		retry test -z "$(cat "$procs")"
		cleaned_up "$CID-$n" "$step"
	done
}
