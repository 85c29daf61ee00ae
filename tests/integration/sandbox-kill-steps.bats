#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat sandbox run` with its keeper killed (SIGKILL) at every step it passes: creating the
# sandbox's container, starting it, running the command, destroying it. A sandbox leaves
# nothing, whoever dies: no state, container state, cgroup, loan, process or mount remains,
# with no command to clean up. The steps are those of tests/moat-faults (kill-steps.bats
# says how), the keeper's named keeper/STEP.

load helpers
load sandbox

FAULTS=${MOAT_FAULTS_BINARY:-$(dirname "$MOAT_BINARY")/tests/moat-faults}

setup() {
	[[ -x $FAULTS ]] || skip "no fault-injection build at $FAULTS (make check builds tests/moat-faults)"
	moat_setup
}

teardown() {
	"$MOAT_BINARY" sandbox ls >/dev/null 2>&1 # its collector, should a test have failed
	moat_teardown
}

# faults_run ARGS...: `moat sandbox run` of the fault-injection build, stdout discarded
faults_run() {
	capture timeout -k 10 "$MOAT_CMD_TIMEOUT" "$FAULTS" sandbox run --rootfs "$ROOTFS_CACHE" "$@"
}

@test "moat sandbox run: its keeper killed at any step leaves nothing, with no command after" {
	local log=$TEST_DIR/steps step steps n=0
	MOAT_TEST_STEPS=$log faults_run -- /bin/echo hello
	((status == 0)) || fail "sandbox run: $stderr"
	steps=$(grep '^keeper/' "$log" | awk '!seen[$0]++')
	for step in keeper/create:cgroup keeper/create:ready keeper/create:committed \
		keeper/start:started keeper/exec:pid keeper/delete:cgroup-removed; do
		grep -qx "$step" <<<"$steps" || fail "the keeper never passed $step: $steps"
	done
	for step in $steps; do
		n=$((n + 1))
		MOAT_TEST_KILL_AT=$step faults_run -- /bin/echo hello
		# the caller says what happened, and ends
		((status == 125)) || fail "keeper killed at $step: status $status, stderr: $stderr"
		[[ $stderr == *"keeper ended without a reply"* || $stderr == *"runner's report"* ]] ||
			fail "keeper killed at $step: $stderr"
		assert_no_residue
	done
	((n >= 15)) || fail "only $n steps: $steps"
}
