#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat sandbox run in a microVM (TCG): the same command, limits and result as in container
# mode, the writable layer on the host, and the timeout tearing down the VM.

load helpers
load sandbox

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
	SANDBOX_ARGS=(--isolation microvm --accel tcg)
}

teardown() {
	sbx_remove_all
	moat_teardown
	assert_no_residue 10
}

@test "sandbox microvm: a valid result from the guest, as an unprivileged user" {
	sandbox_run -- sh -c 'id -u; uname -r; echo made > f; cat f; exit 3'
	assert_equal "$status" 3
	assert_equal "$(r .exit.reason)" exited
	assert_equal "$(r .isolation.mode)" microvm
	assert_equal "$(r .isolation.accelerator)" tcg
	assert_equal "$(r .stdout.text | head -1)" 1000
	[[ $(r .stdout.text | sed -n 2p) != "$(uname -r)" ]]
	assert_equal "$(r .stdout.text | sed -n 3p)" made
	# the writable layer is on the host: the diff sees what the guest wrote
	assert_equal "$(r '[.files.entries[].path] | join(",")')" /work/f
	assert_equal "$(r '.files.entries[0].sha256')" "$(echo made | sha256sum | cut -d' ' -f1)"
	(($(r .resources.memory_peak_bytes) > 0))
}

# The guest has no RTC: its clock starts at the epoch unless the host's time comes in START,
# and a TLS client there would find every certificate "not yet valid".
@test "sandbox microvm: the guest's clock is the host's" {
	local host
	sandbox_run -- date +%s
	host=$(date +%s)
	assert_equal "$status" 0
	(($(r .stdout.text) > host - 600 && $(r .stdout.text) <= host)) ||
		fail "guest $(r .stdout.text), host $host"
}

@test "sandbox microvm: the timeout tears down the VM, with reason timeout" {
	sandbox_run --timeout 3s -- sh -c 'setsid sleep 300 & sleep 300'
	assert_equal "$status" 124
	assert_equal "$(r .exit.reason)" timeout
	run pgrep -f 'qemu-system-x86_64.*moatroot'
	assert_failure
}

@test "sandbox microvm: copies in and out, and capped output" {
	echo input >"$TEST_DIR/in"
	sandbox_run --copy-in "$TEST_DIR/in:in" --copy-out "out:$TEST_DIR/out" \
		--output-limit 100 --on-output-limit truncate -- \
		sh -c 'cat in > out; echo guest >> out; yes | head -c 5000'
	assert_equal "$status" 0
	assert_equal "$(cat "$TEST_DIR/out")" $'input\nguest'
	assert_equal "$(r .stdout.bytes)" 5000
	assert_equal "$(r .stdout.kept)" 100
	assert_equal "$(r .stdout.truncated)" true
}

@test "sandbox microvm: killed with SIGKILL while the VM boots, it leaves nothing" {
	local i pid
	for ((i = 0; i < 3; i++)); do
		"$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" "${SANDBOX_ARGS[@]}" -- sleep 30 \
			>/dev/null 2>&1 &
		pid=$!
		sleep "$((i + 1))"
		kill -KILL "$pid"
		wait "$pid" || true
		assert_no_residue 10
		run pgrep -f 'qemu-system-x86_64.*moatroot'
		assert_failure
	done
}

# sandbox_gone NAME: an exec finds no sandbox NAME.
sandbox_gone() {
	sbx exec "$1" -- true
	[[ $status == 1 && $stderr == "moat: sandbox '$1' not found" ]]
}

@test "sandbox microvm: a session keeps its guest across commands; cp, diff; the timeout ends it" {
	local N=vm-$BATS_TEST_NUMBER info
	echo input >"$TEST_DIR/in"
	sbx_create "$N"
	info=$(sbx_info "$N")
	jq -e '.isolation == "microvm" and .accelerator == "tcg"' <<<"$info"
	sbx_ok cp "$TEST_DIR/in" "$N:in"
	sbx_exec "$N" -- sh -c 'cat in > out; echo guest >> out; id -u'
	assert_equal "$status" 0
	assert_equal "$(r .isolation.mode)" microvm
	assert_equal "$(r .stdout.text)" 1000
	assert_equal "$(r '[.files.entries[].path] | join(",")')" /work/out
	# the same guest: the first command's file is there, and this command's files are its own
	sbx_exec "$N" -- sh -c 'cat out; echo two > two'
	assert_equal "$(r .stdout.text)" $'input\nguest'
	assert_equal "$(r '[.files.entries[].path] | join(",")')" /work/two
	sbx_ok cp "$N:out" "$TEST_DIR/out"
	assert_equal "$(cat "$TEST_DIR/out")" $'input\nguest'
	sbx_diff "$N"
	assert_equal "$(d '[.files.entries[].path] | join(",")')" /work/in,/work/out,/work/two
	# the timeout tears the VM down, and the session with it
	sbx_exec "$N" --timeout 2s -- sleep 300
	assert_equal "$status" 124
	assert_equal "$(r .exit.reason)" timeout
	retry sandbox_gone "$N"
	run pgrep -f 'qemu-system-x86_64.*moatroot'
	assert_failure
}

# sandbox-vm-failure-reason: a VM that ended under a command said only "the microVM's
# supervisor hung up"; why it ended (here QEMU finds no virtiofsd: a stand-in that exits at
# once) was written where nobody read it.
@test "sandbox microvm: sandbox-vm-failure-reason: a VM that fails under a command says why in the result" {
	MOAT_VM_VIRTIOFSD=/bin/true sandbox_run --allow up.test:80 -- true
	assert_equal "$(r .exit.reason)" error
	[[ $(r .exit.message) == *"supervisor hung up: microvm: QEMU exited with status 1"* ]] ||
		fail "the result does not say why: $(r .exit.message)"
	# and QEMU's own line, the one above the supervisor's, with the cause
	[[ $(r .exit.message) == *"(qemu-system-x86_64: "*"virtiofs.sock"*")" ]] ||
		fail "the result lacks QEMU's line: $(r .exit.message)"
}

# sandbox-microvm-guest-counters: a microVM sandbox named its reason from the host's cgroup,
# which holds QEMU, not the program: a fork bomb refused at the guest's pids limit came back
# "exited", and pids_peak counted QEMU's threads.
@test "sandbox microvm: sandbox-microvm-guest-counters: a fork bomb ends at the guest's pids limit, reason pids" {
	sandbox_run --pids 32 -- sh -c 'bomb() { bomb | bomb & }; bomb; sleep 2'
	assert_equal "$(r .exit.reason)" pids
	assert_equal "$(r .resources.pids_peak)" 32
	assert_equal "$(r '.resources.cpu_user_ms + .resources.cpu_system_ms > 0')" true
}

@test "sandbox microvm: sandbox-microvm-guest-counters: a memory bomb the guest's OOM killer ends, reason oom" {
	sandbox_run -- sh -c 'x=a; while :; do x=$x$x; done'
	assert_equal "$(r .exit.reason)" oom
	assert_equal "$(r .exit.signal)" 9
}

# A session's later commands ask the running guest for its counts before and after: each
# command's reason is its own. (The bomb ends with its command: one left churning at the
# limit refuses the next command's own fork, which the test below is about.)
@test "sandbox microvm: sandbox-microvm-guest-counters: in a session, each command's reason is its own" {
	local N=vm-$BATS_TEST_NUMBER
	sbx_create "$N" --pids 32
	sbx_exec "$N" -- true
	assert_equal "$(r .exit.reason)" exited
	sbx_exec "$N" -- sh -c "$BOUNDED_FORK_BOMB"
	assert_equal "$(r .exit.reason)" pids
	sbx_exec "$N" -- true
	assert_equal "$(r .exit.reason)" exited
}

# sandbox-pids-full-start: in a session whose earlier command left processes filling the pids
# limit, the guest refused the next command's own fork, and its result said "error", exit
# 125, as if moat had failed. It is the limit: reason pids, and the message says so.
@test "sandbox microvm: sandbox-pids-full-start: a command the full pids limit keeps from starting ends with reason pids" {
	local N=vm-$BATS_TEST_NUMBER
	sbx_create "$N" --pids 32
	# the command's shell forks sleepers until refused; a refiller it started keeps the
	# limit full after it: a refused fork ends the refiller's shell, whose EXIT trap starts
	# it again in the same process
	sbx_exec "$N" -- sh -c 'printf "%s\n" "trap \"exec sh /tmp/refill\" EXIT" \
		"while :; do sleep 1000 & done" >/tmp/refill
		sh /tmp/refill >/dev/null 2>&1 &
		while :; do sleep 1000 & done'
	assert_equal "$(r .exit.reason)" pids
	sbx_exec "$N" -- true
	assert_equal "$status" 125
	assert_equal "$(r .exit.reason)" pids
	assert_equal "$(r .exit.code)" null
	assert_equal "$(r .exit.signal)" null
	[[ $(r .exit.message) == "the program could not start: "*"fill its pids limit"*"Resource temporarily unavailable)" ]] ||
		fail "the message does not name the limit: $(r .exit.message)"
	[[ $stderr == *"fill its pids limit"* ]] || fail "stderr: $stderr"
	# rm --force still ends it all
	sbx_ok rm --force "$N"
}
