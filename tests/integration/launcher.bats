#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The launcher (docs/launcher.md): `moat` is a small static program that starts moat's
# runtime. For the commands whose processes enter a container (create, run, exec, sandbox)
# it starts it from a read-only overlay of the runtime's directory, mounted nowhere, so the
# runtime starts once and never from a file a container could write (CVE-2019-5736); for the
# others, from the runtime's file. cve-2019-5736.bats attacks the result.

load helpers

# traced CMD...: CMD with the dynamic loader's trace of the libraries it loads in
# $TEST_DIR/ld.PID (LD_DEBUG=libs), the container's stdio on files, and moat's messages in
# $TEST_DIR/err.
traced() {
	rm -f "$TEST_DIR"/ld.*
	env LD_DEBUG=libs LD_DEBUG_OUTPUT="$TEST_DIR/ld" "$@" </dev/null >"$TEST_DIR/out" \
		2>"$TEST_DIR/err"
}

# runtime_starts: how many times the loader started moat's runtime under `traced`: it names
# each library it initializes, and yajl is one of the runtime's that no other program here
# loads. An exec keeps the pid, so a re-exec of the runtime is a second start in the same
# trace file.
runtime_starts() {
	cat "$TEST_DIR"/ld.* | grep -c 'calling init: .*/libyajl\.so' || true
}

# runtime_exe_while_logging ARGS...: run `moat --log FIFO ARGS...` and, while the runtime
# waits to open its log, note what its /proc/PID/exe names (EXE) and the filesystem it is on
# (EXE_FS).
runtime_exe_while_logging() {
	local pid launcher shell
	launcher=$(readlink -f "$MOAT_BINARY")
	shell=$(readlink "/proc/$$/exe")
	mkfifo "$TEST_DIR/log.fifo"
	"$MOAT_BINARY" --root "$MOAT_ROOT" --log "$TEST_DIR/log.fifo" "$@" </dev/null \
		>/dev/null 2>&1 &
	pid=$!
	# (until the forked shell has run the launcher and the launcher the runtime)
	retry bash -c 'e=$(readlink "/proc/$1/exe") && [[ $e != "$2" && $e != "$3" ]]' _ "$pid" \
		"$launcher" "$shell"
	EXE=$(readlink "/proc/$pid/exe")
	EXE_FS=$(stat -f -L -c %T "/proc/$pid/exe")
	timeout 10 cat "$TEST_DIR/log.fifo" >/dev/null
	wait "$pid" || true
}

@test "the launcher is static: no interpreter, no dynamic section, no executable stack" {
	command -v readelf >/dev/null || skip "readelf (binutils) is not installed"
	run readelf -lW "$MOAT_BINARY"
	assert_success
	refute_output --partial INTERP
	refute_output --partial DYNAMIC
	assert_output --regexp 'GNU_STACK +(0x0+ +){5}RW '
}

@test "a create through the launcher starts the runtime once, from a read-only overlay, however the global options are spelled" {
	make_bundle
	cfg_sh 'exit 0'
	local -a spellings=(
		"--root $MOAT_ROOT"
		"--root=$MOAT_ROOT"
		"--debug --log-format text --root $MOAT_ROOT"
		"--log-form text --root $MOAT_ROOT --"
	)
	local i=0 globals
	for globals in "${spellings[@]}"; do
		CID=launch-$i
		# shellcheck disable=SC2086 # the spelling is split on purpose
		traced "$MOAT_BINARY" $globals create --bundle "$BUNDLE" \
			--pid-file "$(pid_file "$CID")" "$CID" || fail "$(cat "$TEST_DIR/err")"
		[[ $(runtime_starts) == 1 ]] || fail "'$globals create' started the runtime $(runtime_starts) times"
		assert_equal "$(readlink "/proc/$(host_pid)/exe")" "/$(basename "$MOAT_RUNTIME")"
		assert_equal "$(stat -f -L -c %T "/proc/$(host_pid)/exe")" overlayfs
		moat delete --force "$CID"
		i=$((i + 1))
	done
}

@test "run and exec through the launcher start the runtime once" {
	make_bundle
	cfg_sh 'exit 0'
	traced "$MOAT_BINARY" --root "$MOAT_ROOT" run --bundle "$BUNDLE" "$CID" ||
		fail "$(cat "$TEST_DIR/err")"
	assert_equal "$(runtime_starts)" 1
	CID=$CID-2
	cfg_args sleep 60
	moat_run_detached
	traced "$MOAT_BINARY" --root "$MOAT_ROOT" exec "$CID" true || fail "$(cat "$TEST_DIR/err")"
	assert_equal "$(runtime_starts)" 1
}

@test "the runtime started without the launcher still re-executes itself from a read-only overlay" {
	make_bundle
	cfg_sh 'exit 0'
	traced "$MOAT_RUNTIME" --root "$MOAT_ROOT" create --bundle "$BUNDLE" \
		--pid-file "$(pid_file "$CID")" "$CID" || fail "$(cat "$TEST_DIR/err")"
	assert_equal "$(runtime_starts)" 2
	assert_equal "$(readlink "/proc/$(host_pid)/exe")" "/$(basename "$MOAT_RUNTIME")"
	assert_equal "$(stat -f -L -c %T "/proc/$(host_pid)/exe")" overlayfs
}

@test "a command that enters no container runs the runtime's file, with no overlay" {
	runtime_exe_while_logging list
	assert_equal "$EXE" "$(readlink -f "$MOAT_RUNTIME")"
	[[ $EXE_FS != overlayfs ]] || fail "list runs from an overlay"
}

@test "create --help through the launcher runs from the read-only overlay" {
	runtime_exe_while_logging create --help
	assert_equal "$EXE" "/$(basename "$MOAT_RUNTIME")"
	assert_equal "$EXE_FS" overlayfs
}

@test "a user who may not mount an overlay runs moat through the launcher, from the runtime's sealed copy" {
	setpriv --reuid 1000 --regid 1000 --clear-groups test -x "$MOAT_RUNTIME" ||
		skip "uid 1000 cannot run $MOAT_RUNTIME"
	chmod 0777 "$TEST_DIR"
	setpriv --reuid 1000 --regid 1000 --clear-groups env LD_DEBUG=libs \
		LD_DEBUG_OUTPUT="$TEST_DIR/ld" "$MOAT_BINARY" run --help </dev/null \
		>"$TEST_DIR/out" 2>"$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
	grep -q '^Usage: moat run' "$TEST_DIR/out"
	assert_equal "$(runtime_starts)" 2
}

@test "a launcher whose runtime is missing fails with one line naming it, and exit status 127" {
	# (the build tree's launcher starts libexec/moat beside itself; an installed one, a path
	# of its own)
	[[ $MOAT_RUNTIME == "$(dirname "$MOAT_BINARY")/libexec/moat" ]] ||
		skip "an installed launcher starts its runtime by its absolute path"
	mkdir -p "$TEST_DIR/lonely"
	cp "$MOAT_BINARY" "$TEST_DIR/lonely/moat"
	run -127 --separate-stderr "$TEST_DIR/lonely/moat" --root "$MOAT_ROOT" list
	assert_equal "$stderr" "moat: start moat's runtime '$TEST_DIR/lonely/libexec/moat': No such file or directory"
	run -127 --separate-stderr "$TEST_DIR/lonely/moat" --root "$MOAT_ROOT" create --bundle x y
	assert_equal "$stderr" "moat: start moat's runtime '$TEST_DIR/lonely/libexec/moat': No such file or directory"
}
