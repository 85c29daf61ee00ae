#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat run` in the foreground: stdio passes through, the exit status is the
# container's, and the run flags (--no-pivot, --preserve-fds,
# --no-new-keyring, --pid-file) do what they say.

load helpers

@test "run passes the container's stdout through" {
	make_bundle
	run_sh 'echo hello stdout'
	assert_success
	assert_output 'hello stdout'
	assert_equal "$stderr" ''
}

@test "run passes the container's stderr through, separately from stdout" {
	make_bundle
	run_sh 'echo to-out; echo to-err >&2'
	assert_success
	assert_output to-out
	assert_equal "$stderr" to-err
}

@test "run passes stdin through to the container" {
	make_bundle
	cfg_args cat
	run_moat run --bundle "$BUNDLE" "$CID" <<<'hello stdin'
	assert_success
	assert_output 'hello stdin'
}

@test "run passes binary data through stdin and stdout unchanged" {
	make_bundle
	head -c 65536 /dev/urandom >"$TEST_DIR/blob"
	cfg_args cat
	moat run --bundle "$BUNDLE" "$CID" <"$TEST_DIR/blob" >"$TEST_DIR/blob.out"
	cmp "$TEST_DIR/blob" "$TEST_DIR/blob.out"
}

@test "run sees end of file on stdin when the host side closes it" {
	make_bundle
	cfg_sh 'n=0; while read -r l; do n=$((n+1)); done; echo "lines=$n"'
	run_moat run --bundle "$BUNDLE" "$CID" < <(printf 'a\nb\nc\n')
	assert_success
	assert_output 'lines=3'
}

@test "run exits 0 when the container exits 0" {
	make_bundle
	run_sh 'exit 0'
	assert_success
}

@test "run exits with the container's exit status" {
	make_bundle
	base=$CID
	for code in 1 3 42 125 255; do
		CID=$base-$code
		run_sh "exit $code"
		assert_equal "$status" "$code"
		assert_equal "$stderr" ''
	done
}

@test "run exits 128+9 when the container is killed by SIGKILL" {
	make_bundle
	cfg_sh 'echo ready; while :; do sleep 1; done'
	(
		rc=0
		moat run --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID" \
			</dev/null >"$(out_file "$CID")" 2>"$(err_file "$CID")" || rc=$?
		echo "$rc" >"$TEST_DIR/exit-status"
	) 3>&- &
	wait_for_output '^ready$'
	moat kill "$CID" KILL
	wait_for_file "$TEST_DIR/exit-status"
	assert_equal "$(cat "$TEST_DIR/exit-status")" 137
}

@test "run of an executable that does not exist fails with one line naming it" {
	make_bundle
	cfg_args /no/such/program
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_moat_error '/no/such/program'
	assert_no_residue "$CID"
}

@test "run of a file that is not executable fails with one line naming it" {
	make_bundle
	cfg_args /etc/passwd
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_moat_error '/etc/passwd'
	assert_no_residue "$CID"
}

@test "run finds the program on the config's PATH" {
	make_bundle
	cfg_args echo found-on-path
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_success
	assert_output found-on-path
}

@test "run removes the container when it exits" {
	make_bundle
	run_sh 'true'
	assert_success
	run moat list -q
	assert_success
	refute_line_exact "$CID"
	assert_no_residue "$CID"
}

@test "run --keep leaves the exited container for state and delete" {
	make_bundle
	cfg_set '.hooks.poststop = [{path: "/bin/sh", args: ["sh", "-c", $s]}]' \
		--arg s "echo stopped >>$TEST_DIR/poststop"
	run_sh 'echo kept; exit 3' --keep
	assert_equal "$status" 3
	assert_output kept
	assert_equal "$(status_of)" stopped
	assert_equal "$(state_of | jq -r .pid)" 0
	run moat list -q
	assert_line_exact "$CID"
	# poststop waits for the delete
	[[ ! -e $TEST_DIR/poststop ]]
	run_moat delete "$CID"
	assert_success
	assert_equal "$(cat "$TEST_DIR/poststop")" stopped
	assert_no_residue "$CID"
}

@test "run --keep that fails to start leaves nothing" {
	make_bundle
	cfg_args /bin/no-such-program
	run_moat run --keep --bundle "$BUNDLE" "$CID"
	assert_moat_error 'no-such-program'
	assert_no_residue "$CID"
}

# runc 1.1.5 accepts --keep with --detach too: run -d deletes nothing, so there is nothing
# to keep.
@test "run --keep --detach is accepted and leaves the container as run --detach does" {
	make_bundle
	cfg_sh 'exit 0'
	run moat_run_detached --keep
	assert_success
	wait_for_status stopped
	run_moat delete "$CID"
	assert_success
	assert_no_residue "$CID"
}

@test "create refuses --keep, which only run has" {
	make_bundle
	run_moat create --keep --bundle "$BUNDLE" "$CID"
	assert_moat_error "create: unknown option '--keep'"
	assert_no_residue "$CID"
}

@test "run --pid-file writes the container's host pid" {
	make_bundle
	run_sh 'echo "inside: $$"'
	assert_success
	pid=$(host_pid)
	[[ $pid =~ ^[0-9]+$ ]]
	((pid > 1))
	# inside the container the process is pid 1; the file holds the host pid
	assert_line --index 0 'inside: 1'
}

@test "run --no-pivot runs the container with the bundle rootfs as /" {
	make_bundle
	echo no-pivot-marker >"$BUNDLE/rootfs/marker"
	run_sh 'cat /marker; ls /bin/busybox' --no-pivot
	assert_success
	assert_line --index 0 no-pivot-marker
	assert_line --index 1 /bin/busybox
	assert_no_residue "$CID"
}

@test "run --no-pivot does not leave the host root reachable through /" {
	make_bundle
	run_sh 'ls /work /boot /home 2>/dev/null | head -1; test -e /bin/busybox && echo ok' --no-pivot
	assert_success
	assert_output ok
}

@test "run --no-new-keyring runs the container" {
	make_bundle
	run_sh 'echo keyring-ok' --no-new-keyring
	assert_success
	assert_output keyring-ok
}

@test "run --preserve-fds passes extra fds through to the container" {
	make_bundle
	echo preserved-content >"$TEST_DIR/extra"
	cfg_sh 'cat <&3; cat <&4'
	echo second >"$TEST_DIR/extra2"
	# bats' run, not run_moat: run_moat closes fd 3 (foreground, nothing is left behind)
	run --separate-stderr moat run --bundle "$BUNDLE" --preserve-fds 2 "$CID" \
		3<"$TEST_DIR/extra" 4<"$TEST_DIR/extra2"
	assert_success
	assert_line --index 0 preserved-content
	assert_line --index 1 second
}

@test "the container gets only fds 0, 1 and 2 without --preserve-fds" {
	make_bundle
	# ls inherits the shell's fds and opens one more on the directory it lists
	cfg_sh 'ls /proc/self/fd | grep -vxE "0|1|2" | wc -l'
	run_moat run --bundle "$BUNDLE" "$CID" 5</dev/null 7</dev/null 9</dev/null
	assert_success
	assert_output 1
}

@test "with --preserve-fds 1 the container gets fd 3 and nothing above" {
	make_bundle
	cfg_sh 'ls /proc/self/fd | grep -vxE "0|1|2|3" | wc -l; cat <&3'
	echo three >"$TEST_DIR/three"
	run --separate-stderr moat run --bundle "$BUNDLE" --preserve-fds 1 "$CID" \
		3<"$TEST_DIR/three" 4</dev/null 5</dev/null
	assert_success
	# one fd above 3: the one ls opens on /proc/self/fd
	assert_line --index 0 1
	assert_line --index 1 three
}

@test "LISTEN_FDS: socket-activation fds pass through ahead of --preserve-fds" {
	make_bundle
	cfg_set '.process.env += ["LISTEN_FDS=9", "LISTEN_PID=77"]'
	cfg_sh 'env | grep ^LISTEN_ | sort; cat <&3; cat <&4; cat <&5;
		ls /proc/self/fd | grep -vxE "0|1|2|3|4|5" | wc -l'
	echo first >"$TEST_DIR/l3"
	echo second >"$TEST_DIR/l4"
	echo preserved >"$TEST_DIR/p5"
	# the container's own LISTEN_* values are replaced by moat's
	LISTEN_FDS=2 LISTEN_FDNAMES=web:admin run --separate-stderr moat run --bundle "$BUNDLE" \
		--preserve-fds 1 "$CID" 3<"$TEST_DIR/l3" 4<"$TEST_DIR/l4" 5<"$TEST_DIR/p5" 6</dev/null
	assert_success
	# LISTEN_PID is the program's pid as it sees it: 1 in its PID namespace
	assert_equal "${lines[*]}" "LISTEN_FDNAMES=web:admin LISTEN_FDS=2 LISTEN_PID=1 first second preserved 1"
}

@test "LISTEN_FDS meant for another process (LISTEN_PID) is not passed on" {
	make_bundle
	cfg_sh 'env | grep -c ^LISTEN_; ls /proc/self/fd | grep -vxE "0|1|2" | wc -l'
	LISTEN_FDS=1 LISTEN_PID=1 run --separate-stderr moat run --bundle "$BUNDLE" "$CID" 3</dev/null
	assert_success
	assert_line --index 0 0
	assert_line --index 1 1
}

@test "run with a relative --bundle works" {
	make_bundle
	cd "$TEST_DIR"
	cfg_args echo relative
	run_moat run --bundle bundle "$CID"
	assert_success
	assert_output relative
}

@test "run without --bundle uses the current directory" {
	make_bundle
	cd "$BUNDLE"
	cfg_args echo cwd-bundle
	run_moat run "$CID"
	assert_success
	assert_output cwd-bundle
}
