#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat sandbox run, container mode: the contract (timeout, limits, capped output, the
# result, copies, the diff) and zero residue.

load helpers
load sandbox

teardown() {
	moat_teardown
	assert_no_residue 10
}

@test "sandbox run: a valid result with the program's output, exit code and user" {
	sandbox_run -- sh -c 'echo out; echo err >&2; id -u; pwd; exit 7'
	assert_equal "$status" 7
	assert_equal "$(r .exit.code)" 7
	assert_equal "$(r .exit.reason)" exited
	assert_equal "$(r .exit.signal)" null
	assert_equal "$(r .stdout.text)" $'out\n1000\n/work'
	assert_equal "$(r .stderr.text)" err
	assert_equal "$(r .stdout.truncated)" false
	assert_equal "$(r .isolation.mode)" container
	assert_equal "$(r '.isolation.policy["auto-userns"] | type')" string
	assert_equal "$(r .command[0])" sh
	[[ $(r .time.started) != null ]]
}

@test "sandbox run: the program is an argument array, never a shell line" {
	sandbox_run -- echo '$HOME;id' '`id`'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" '$HOME;id `id`'
}

@test "sandbox run: a program killed by a signal is reason signaled" {
	sandbox_run -- sh -c 'kill -9 $$'
	assert_equal "$status" 137
	assert_equal "$(r .exit.reason)" signaled
	assert_equal "$(r .exit.signal)" 9
	assert_equal "$(r .exit.code)" null
}

@test "sandbox run: the timeout kills the whole tree, a setsid daemon ignoring TERM too" {
	local marker=$((400000 + RANDOM))
	# (busybox finds its applet by argv[0]: the marker is sleep's argument, not exec -a's)
	sandbox_run --timeout 1s -- sh -c "setsid sh -c 'trap \"\" TERM; echo up >daemon-up; exec sleep $marker' & sleep 300"
	assert_equal "$status" 124
	assert_equal "$(r .exit.reason)" timeout
	assert_equal "$(r .exit.signal)" 9
	# the daemon ran, and is gone
	assert_equal "$(r '.files.entries | map(.path) | index("/work/daemon-up") != null')" true
	run pgrep -fx "sleep $marker"
	assert_failure
}

@test "sandbox run: output past the limit is dropped, counted, flagged, and the program killed" {
	sandbox_run --output-limit 1k -- yes
	assert_equal "$(r .exit.reason)" output-limit
	assert_equal "$(r .stdout.kept)" 1024
	assert_equal "$(r .stdout.truncated)" true
	(($(r .stdout.bytes) > 1024))
	assert_equal "$(r '.stdout.text | length')" 1024
}

@test "sandbox run: --on-output-limit truncate keeps the program running, on both streams" {
	sandbox_run --output-limit 1000 --on-output-limit truncate -- \
		sh -c 'yes | head -c 100000; yes e | head -c 50000 >&2; exit 3'
	assert_equal "$status" 3
	assert_equal "$(r .exit.reason)" exited
	assert_equal "$(r .stdout.bytes)" 100000
	assert_equal "$(r .stdout.kept)" 1000
	assert_equal "$(r .stderr.bytes)" 50000
	assert_equal "$(r .stderr.kept)" 1000
	assert_equal "$(r .stderr.truncated)" true
}

@test "sandbox run: a fork bomb ends at the pids limit with reason pids" {
	sandbox_run --pids 32 -- sh -c 'bomb() { bomb | bomb & }; bomb; sleep 2'
	assert_equal "$(r .exit.reason)" pids
	assert_equal "$(r .resources.pids_peak)" 32
}

@test "sandbox run: a memory bomb is OOM-killed in its own cgroup, reason oom" {
	sandbox_run --memory 32m -- sh -c 'x=a; while :; do x=$x$x; done'
	assert_equal "$(r .exit.reason)" oom
	assert_equal "$(r .exit.signal)" 9
	(($(r .resources.memory_peak_bytes) > 16 * 1024 * 1024))
}

@test "sandbox run: a disk filler stops at --disk with reason disk, and so does an inode bomb" {
	sandbox_run --disk 4m -- dd if=/dev/zero of=/tmp/fill bs=1M count=64
	assert_equal "$(r .exit.reason)" disk
	assert_equal "$(r .exit.code)" 1
	sandbox_run --disk 1m -- sh -c 'i=0; while touch /work/f$i; do i=$((i+1)); done; exit 1'
	assert_equal "$(r .exit.reason)" disk
}

@test "sandbox run: the program sees its --env and nothing of moat's environment" {
	SANDBOX_SECRET=hunter2-$RANDOM sandbox_run --env GREETING=hi -- \
		sh -c 'echo "$GREETING"; cat /proc/*/environ 2>/dev/null | tr "\0" "\n"'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text | head -1)" hi
	run r .stdout.text
	refute_output --partial hunter2
	refute_output --partial SANDBOX_SECRET
}

@test "sandbox run: binary output comes back as base64" {
	sandbox_run -- printf '\377\376\000x'
	assert_equal "$(r .stdout.base64)" "//4AeA=="
	assert_equal "$(r '.stdout | has("text")')" false
}

@test "sandbox run: files added, modified and deleted are listed with sha256" {
	sandbox_run --user 0 -- sh -c 'echo new > /work/new; echo more >> /etc/passwd; rm /bin/vi; mkdir /work/d; ln -s /etc /work/d/l'
	assert_equal "$status" 0
	assert_equal "$(r '.files.entries[] | select(.path == "/work/new") | .change')" added
	assert_equal "$(r '.files.entries[] | select(.path == "/work/new") | .sha256')" \
		"$(echo new | sha256sum | cut -d' ' -f1)"
	assert_equal "$(r '.files.entries[] | select(.path == "/etc/passwd") | .change')" modified
	assert_equal "$(r '.files.entries[] | select(.path == "/bin/vi") | .change')" deleted
	assert_equal "$(r '.files.entries[] | select(.path == "/bin/vi") | .type')" symlink
	assert_equal "$(r '.files.entries[] | select(.path == "/work/d/l") | .target')" /etc
	assert_equal "$(r '.files.entries[] | select(.path == "/work/d") | .type')" dir
	# what moat made itself is not a change of the program's
	assert_equal "$(r '[.files.entries[] | select(.path == "/work" or .path == "/proc")] | length')" 0
	assert_equal "$(r .files.truncated)" false
}

@test "sandbox run: --copy-in copies files and trees in, unchanged copies are not changes" {
	mkdir -p "$TEST_DIR/in/sub"
	echo one >"$TEST_DIR/in/a"
	echo two >"$TEST_DIR/in/sub/b"
	ln -s /etc/shadow "$TEST_DIR/in/sub/link"
	echo solo >"$TEST_DIR/solo"
	sandbox_run --copy-in "$TEST_DIR/in:input" --copy-in "$TEST_DIR/solo:/opt/solo" -- \
		sh -c 'cat input/a input/sub/b /opt/solo; readlink input/sub/link; stat -c %u input/sub/b; echo x >> input/a'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" $'one\ntwo\nsolo\n/etc/shadow\n1000'
	assert_equal "$(r '[.files.entries[].path] | join(",")')" /work/input/a
	assert_equal "$(r '.files.entries[0].change')" modified
}

@test "sandbox run: --copy-out copies files and directories out, never following a symlink" {
	sandbox_run --copy-out "out:$TEST_DIR/out" --copy-out "/work/one:$TEST_DIR/one" -- \
		sh -c 'mkdir out; echo r > out/r; ln -s /etc/passwd out/evil; echo 1 > one'
	assert_equal "$status" 0
	assert_equal "$(cat "$TEST_DIR/out/r")" r
	assert_equal "$(cat "$TEST_DIR/one")" 1
	[[ ! -e $TEST_DIR/out/evil && ! -L $TEST_DIR/out/evil ]]
}

@test "sandbox run: --copy-out of a symlink pointing out of the sandbox is refused, not followed" {
	sandbox_run --copy-out "link:$TEST_DIR/got" -- ln -s /etc/hostname link
	assert_equal "$status" 125
	assert_equal "$(r .exit.reason)" error
	assert_output --partial ""
	[[ $(r .exit.message) == *"symlinks are not followed"* ]]
	[[ ! -e $TEST_DIR/got ]]
	sandbox_run --copy-out "d/f:$TEST_DIR/got" -- sh -c 'ln -s /etc d'
	[[ $(r .exit.message) == *"symlinks are not followed"* ]]
	[[ ! -e $TEST_DIR/got ]]
}

@test "sandbox run: an oversized file is refused with a clear error, in and out" {
	sandbox_run --disk 200m --copy-out "big:$TEST_DIR/big" -- \
		dd if=/dev/zero of=big bs=1M count=65
	assert_equal "$status" 125
	[[ $(r .exit.message) == *"'/work/big' is larger than 67108864 bytes, the copy-out limit"* ]]
	[[ ! -s $TEST_DIR/big ]]
	truncate -s 3M "$TEST_DIR/in-big"
	sandbox_run --disk 2m --copy-in "$TEST_DIR/in-big:big" -- true
	assert_equal "$status" 125
	[[ $(r .exit.message) == *"the sandbox's disk is full (--disk 2097152 bytes)"* ]]
}

@test "sandbox run: --result absent prints the result on stdout" {
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" -- echo hi
	assert_success
	jq -e '.stdout.text == "hi\n"' <<<"$output"
	echo "$output" >"$TEST_DIR/r.json"
	validate_result "$TEST_DIR/r.json"
	# the document ends with one line end, not a blank line after it
	"$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" -- true >"$TEST_DIR/raw"
	assert_equal "$(tail -c 2 "$TEST_DIR/raw" | od -An -c | tr -d ' ')" '}\n'
}

@test "sandbox run: bad arguments are one-line errors naming the option, with no residue" {
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs /nonexistent -- true
	assert_failure
	[[ $stderr == "moat: sandbox run: --rootfs '/nonexistent': No such file or directory"* ]]
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" --timeout 5x -- true
	assert_failure
	[[ $stderr == *"--timeout: '5x' is not a duration"* ]]
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" --user root -- true
	[[ $stderr == *"--user: 'root' is not UID[:GID]"* ]]
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" --memory lots -- true
	[[ $stderr == *"--memory: 'lots' is not a size"* ]]
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE"
	[[ $stderr == *"no program: give it after --"* ]]
	run --separate-stderr "$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" --isolation vm -- true
	[[ $stderr == *"--isolation: 'vm' is not container or microvm"* ]]
	sandbox_run -- /no/such/program
	assert_equal "$status" 125
	assert_equal "$(r .exit.reason)" error
	[[ $stderr == "moat: process.args[0] '/no/such/program': No such file or directory" ]]
}

@test "sandbox run: killed with SIGKILL at random points 50 times, it leaves nothing" {
	local i pid
	for ((i = 0; i < 50; i++)); do
		"$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" -- sleep 30 >/dev/null 2>&1 &
		pid=$!
		sleep "0.$((RANDOM % 60))"
		kill -KILL "$pid"
		wait "$pid" || true
		assert_no_residue 5
	done
}

@test "sandbox run --image: an OCI layout and its archive, layers and whiteouts honoured" {
	make_oci_image "$TEST_DIR/img"
	export MOAT_SANDBOX_IMAGE_CACHE=$TEST_DIR/cache
	run --separate-stderr "$MOAT_BINARY" sandbox run --image "$TEST_DIR/img" -- \
		sh -c 'cat /etc/motd; ls /bin/vi 2>&1; echo x > /work/f'
	assert_success
	jq -e '.stdout.text | startswith("hello from layer 2\nls: /bin/vi: No such file")' <<<"$output"
	# the archive of the same layout: the same root, from the cache
	tar -C "$TEST_DIR/img" -cf "$TEST_DIR/img.tar" .
	run --separate-stderr "$MOAT_BINARY" sandbox run --image "$TEST_DIR/img.tar" -- cat /etc/motd
	assert_success
	jq -e '.stdout.text == "hello from layer 2\n"' <<<"$output"
	run --separate-stderr "$MOAT_BINARY" sandbox run --image "$TEST_DIR/nothing" -- true
	assert_failure
	[[ $stderr == "moat: --image '$TEST_DIR/nothing'"* ]]
}

@test "sandbox run: a keeper killed takes its processes along, and its state is collected" {
	local client keeper
	"$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" -- sleep 300 >/dev/null 2>"$TEST_DIR/err" &
	client=$!
	retry pgrep -f '/\.moat/[i]nit'
	keeper=$(pgrep -o -P "$client")
	kill -KILL "$keeper"
	# the idle init dies with its parent, and the command with the init's PID namespace
	retry bash -c '! pgrep -f "/\.moat/[i]nit|sleep 30[0]"'
	wait "$client" || true
	assert_equal "$(cat "$TEST_DIR/err")" "moat: sandbox: the sandbox's keeper ended without a reply"
	assert_no_residue 5
	# keeper and caller both killed: the next command of the uid collects what they left
	"$MOAT_BINARY" sandbox run --rootfs "$ROOTFS_CACHE" -- sleep 300 >/dev/null 2>&1 &
	client=$!
	retry pgrep -f '/\.moat/[i]nit'
	keeper=$(pgrep -o -P "$client")
	kill -KILL "$keeper" "$client"
	wait "$client" || true
	retry bash -c '! pgrep -f "/\.moat/[i]nit"'
	[[ -n $(sandbox_residue) ]]
	sandbox_run -- true
	assert_equal "$status" 0
	assert_no_residue 5
}
