#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# process.terminal with --console-socket: moat sends the pty master over the
# socket (SCM_RIGHTS) and the container's stdio is the pty.

load helpers

# $RECEIVER: tests/integration/progs/console-receiver.c. `console-receiver
# SOCKET READY` listens on SOCKET, creates READY, takes the fd sent with
# SCM_RIGHTS, prints "received a-terminal" (or "not-a-terminal") and copies
# what the pty says to stdout until it closes.
setup_file() {
	moat_setup_file
	RECEIVER=$(build_prog console-receiver) || RECEIVER=
	export RECEIVER
}

setup() {
	moat_setup
	[[ -x ${RECEIVER:-} ]] || skip "cc -static is not available: cannot build the console-socket receiver"
}

# start_receiver: listen on $TEST_DIR/console.sock; its output goes to
# $TEST_DIR/console.out and its pid to a pid file teardown will use.
start_receiver() {
	"$RECEIVER" "$TEST_DIR/console.sock" "$TEST_DIR/console.ready" \
		>"$TEST_DIR/console.out" 2>"$TEST_DIR/console.err" </dev/null 3>&- &
	echo "$!" >"$TEST_DIR/receiver.pid"
	wait_for_file_exists "$TEST_DIR/console.ready"
}

wait_for_file_exists() {
	retry test -e "$1"
}

@test "create --console-socket hands the container's pty to the socket" {
	make_bundle
	cfg_set '.process.terminal = true'
	cfg_sh 'test -t 0 && test -t 1 && test -t 2 && echo all-stdio-is-a-tty; tty; echo finished'
	start_receiver
	moat_create --console-socket "$TEST_DIR/console.sock"
	moat start "$CID"
	wait_for_output '^finished' "$TEST_DIR/console.out"
	run tr -d '\r' <"$TEST_DIR/console.out"
	assert_line --index 0 'received a-terminal'
	assert_line all-stdio-is-a-tty
	assert_line --regexp '^/dev/(pts/[0-9]+|console)$'
}

@test "run --detach --console-socket works the same way" {
	make_bundle
	cfg_set '.process.terminal = true'
	cfg_sh 'test -t 0 && echo stdin-is-a-tty; echo finished'
	start_receiver
	moat_run_detached --console-socket "$TEST_DIR/console.sock"
	wait_for_output '^finished' "$TEST_DIR/console.out"
	run tr -d '\r' <"$TEST_DIR/console.out"
	assert_line stdin-is-a-tty
}

@test "the pty belongs to the container user" {
	make_bundle
	cfg_set '.process.terminal = true | .process.user = {"uid": 1000, "gid": 1000}'
	cfg_sh 'stat -c "owner=%u" "$(tty)"; echo finished'
	start_receiver
	moat_create --console-socket "$TEST_DIR/console.sock"
	moat start "$CID"
	wait_for_output '^finished' "$TEST_DIR/console.out"
	run tr -d '\r' <"$TEST_DIR/console.out"
	assert_line owner=1000
}

@test "create with process.terminal and no --console-socket fails with one line" {
	make_bundle
	cfg_set '.process.terminal = true'
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'console-socket|terminal'
	assert_no_residue "$CID"
}

@test "a --console-socket nobody listens on fails with one line" {
	make_bundle
	cfg_set '.process.terminal = true'
	run_moat create --bundle "$BUNDLE" --console-socket "$TEST_DIR/nobody.sock" \
		--pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'nobody\.sock'
	assert_no_residue "$CID"
}
