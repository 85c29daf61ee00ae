#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat sandbox sessions, container mode: create, exec, cp, diff, ls and rm; each command's
# limits in a sandbox that outlives it; the lifetime and the idle timeout; one command at a
# time; sandboxes per uid; zero residue when a client or a keeper is killed.
# shellcheck disable=SC2016,SC2154 # $ meant literally (jq, sh -c); bats sets status, output

load helpers
load sandbox

setup() {
	moat_setup
	N=s-$BATS_TEST_NUMBER
}

teardown() {
	sbx_remove_all
	moat_teardown
	assert_no_residue 10
}

# as_1000 ARGS...: `moat sandbox ARGS...` as uid 1000, through bats' run.
as_1000() {
	run --separate-stderr timeout -k 10 "$MOAT_CMD_TIMEOUT" \
		setpriv --reuid 1000 --regid 1000 --clear-groups "$MOAT_BINARY" sandbox "$@"
}

# settled NAME: a killed create's keeper, if it got one, has made NAME or is gone (no
# process names NAME any more).
settled() {
	sbx_info "$1" >/dev/null || ! pgrep -f -- "$1" >/dev/null
}

@test "sandbox create: prints the name once ready; ls shows it; rm destroys it, what runs in it too" {
	local info keeper secs marker=$((400000 + RANDOM))
	sbx_create "$N" --lifetime 5m --idle-timeout 1m
	info=$(sbx_info "$N")
	jq -e '.isolation == "container" and .busy == false and .commands == 0
		and .accelerator == null and (.idle_expires | type) == "string"' <<<"$info"
	secs=$(seconds_between "$info" created expires)
	((secs >= 299 && secs <= 301)) || fail "lifetime of ${secs}s, not 5m: $info"
	keeper=$(jq -r .keeper_pid <<<"$info")
	process_alive "$keeper"
	# what a command leaves in the background runs on, and the sandbox is not busy
	sbx_exec "$N" -- sh -c "exec sleep $marker </dev/null >/dev/null 2>&1 &"
	assert_equal "$status" 0
	retry pgrep -fx "sleep $marker"
	sbx_exec "$N" -- echo next
	assert_equal "$status" 0
	pgrep -fx "sleep $marker"
	sbx_is "$N" '.busy == false and .commands == 2'
	sbx_ok ls
	assert_equal "$(awk 'NR == 1 { $1 = $1; print }' <<<"$output")" \
		"NAME ISOLATION BUSY CREATED EXPIRES IDLE-EXPIRES COMMANDS"
	assert_equal "$(awk -v n="$N" '$1 == n { print $2, $NF }' <<<"$output")" "container 2"
	sbx_ok rm "$N"
	no_process "sleep $marker"
	assert_no_residue 2
	retry process_gone "$keeper"
	assert_not_listed "$N"
}

@test "sandbox create: --copy-out, --result, a bad name and a taken name are refused" {
	sbx create --rootfs "$ROOTFS_CACHE" --copy-out "out:$TEST_DIR/out" "$N"
	assert_equal "$status" 1
	assert_moat_error '--copy-out'
	sbx create --rootfs "$ROOTFS_CACHE" --result "$TEST_DIR/r.json" "$N"
	assert_equal "$status" 1
	assert_moat_error '--result'
	[[ ! -e $TEST_DIR/r.json ]]
	sbx create --rootfs "$ROOTFS_CACHE" Bad/Name
	assert_equal "$status" 1
	assert_moat_error 'Bad/Name'
	sbx_ok ls --format json
	output_is 'length == 0'
	sbx_create "$N"
	sbx create --rootfs "$ROOTFS_CACHE" "$N"
	assert_equal "$status" 125
	assert_equal "$stderr" "moat: sandbox '$N' already exists"
	sbx_exec "$N" -- echo still
	assert_equal "$(r .stdout.text)" still
	sbx_ok ls --format json
	output_is 'map(select(.name == $n)) | length == 1' --arg n "$N"
}

@test "sandbox exec: a valid result per command, the program's status, argv never a shell" {
	sbx_create "$N"
	sbx_exec "$N" -- sh -c 'echo out; echo err >&2; exit 7'
	assert_equal "$status" 7
	assert_equal "$(r .sandbox)" "$N"
	assert_equal "$(r '.command | join(" ")')" 'sh -c echo out; echo err >&2; exit 7'
	assert_equal "$(r .exit.reason)" exited
	assert_equal "$(r .stdout.text)" out
	assert_equal "$(r .stderr.text)" err
	assert_equal "$(r .isolation.mode)" container
	assert_equal "$(r '.files.entries | length')" 0
	sbx_exec "$N" -- echo '$HOME;id' '`id`'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" '$HOME;id `id`'
	sbx_is "$N" '.commands == 2'
	sbx_exec "$N" -- sh -c 'kill -9 $$'
	assert_equal "$status" 137
	assert_equal "$(r .exit.reason)" signaled
	assert_equal "$(r .exit.signal)" 9
	sbx_exec "$N" -- /no/such/program
	assert_equal "$status" 125
	assert_equal "$(r .exit.reason)" error
	# without --result, the result is on stdout
	sbx_ok exec "$N" -- echo hi
	printf '%s\n' "$output" >"$TEST_DIR/stdout.json"
	validate_result "$TEST_DIR/stdout.json"
	output_is '.stdout.text == "hi\n" and .exit.code == 0'
}

@test "sandbox exec: create's user, workdir, env and copies are the defaults; exec overrides them" {
	echo one >"$TEST_DIR/one"
	sbx_create "$N" --user 1234:2345 --workdir /srv --env A=1 --env B=2 --copy-in "$TEST_DIR/one:copied"
	sbx_exec "$N" --env B=3 --env C=4 -- \
		sh -c 'echo $A $B $C; pwd; id -u; id -g; cat copied; stat -c %u /srv/copied'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" $'1 3 4\n/srv\n1234\n2345\none\n1234'
	sbx_exec "$N" --user 0 --cwd /tmp -- sh -c 'echo $A $B; pwd; id -u'
	assert_equal "$(r .stdout.text)" $'1 2\n/tmp\n0'
}

@test "sandbox exec: files is what this command changed, diff every change since create" {
	sbx_create "$N" --user 0
	sbx_exec "$N" -- sh -c 'echo a > f1; echo more >> /etc/passwd; rm /bin/vi'
	assert_equal "$(r '[.files.entries[].path] | sort | join(",")')" /bin/vi,/etc/passwd,/work/f1
	sbx_exec "$N" -- sh -c 'echo b > f2'
	assert_equal "$(r '[.files.entries[] | "\(.path) \(.change)"] | join(",")')" "/work/f2 added"
	sbx_exec "$N" -- sh -c 'echo c >> f1'
	assert_equal "$(r '[.files.entries[] | "\(.path) \(.change)"] | join(",")')" "/work/f1 modified"
	sbx_exec "$N" -- cat f1 f2
	assert_equal "$(r .stdout.text)" $'a\nc\nb'
	assert_equal "$(r '.files.entries | length')" 0
	sbx_diff "$N"
	assert_success
	assert_equal "$(d .sandbox)" "$N"
	assert_equal "$(d .files.truncated)" false
	assert_equal "$(d '[.files.entries[] | "\(.path) \(.change)"] | sort | join(",")')" \
		"/bin/vi deleted,/etc/passwd modified,/work/f1 added,/work/f2 added"
	assert_equal "$(d '.files.entries[] | select(.path == "/work/f1") | .sha256')" \
		"$(printf 'a\nc\n' | sha256sum | cut -d' ' -f1)"
}

@test "sandbox cp: into the sandbox, named as docker cp names it, owned by the sandbox's user" {
	mkdir -p "$TEST_DIR/tree/sub"
	echo a >"$TEST_DIR/tree/a"
	echo b >"$TEST_DIR/tree/sub/b"
	sbx_create "$N"
	sbx_ok cp "$TEST_DIR/tree/a" "$N:/tmp"
	assert_equal "$output$stderr" ''
	sbx_ok cp "$TEST_DIR/tree/a" "$N:copy"
	sbx_ok cp "$TEST_DIR/tree" "$N:."
	sbx_ok cp "$TEST_DIR/tree" "$N:/tmp/t2"
	sbx_exec "$N" -- sh -c 'cat /tmp/a copy tree/sub/b /tmp/t2/a; stat -c %u:%g /tmp/a copy tree tree/sub/b /tmp/t2/sub/b'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" $'a\na\nb\na\n1000:1000\n1000:1000\n1000:1000\n1000:1000\n1000:1000'
	# a copy is no change of the command that follows it, but a change since create
	assert_equal "$(r '.files.entries | length')" 0
	sbx_diff "$N"
	assert_equal "$(d '.files.entries[] | select(.path == "/work/copy") | .change')" added
}

@test "sandbox cp: out of the sandbox, files and trees, a symlink in a tree never followed" {
	sbx_create "$N"
	sbx_exec "$N" -- sh -c 'mkdir -p out/sub; echo r > out/r; echo s > out/sub/s; ln -s /etc/passwd out/evil; echo 1 > one'
	mkdir "$TEST_DIR/dir"
	sbx_ok cp "$N:one" "$TEST_DIR/dir"
	assert_equal "$output$stderr" ''
	assert_equal "$(cat "$TEST_DIR/dir/one")" 1
	sbx_ok cp "$N:/work/one" "$TEST_DIR/renamed"
	assert_equal "$(cat "$TEST_DIR/renamed")" 1
	sbx_ok cp "$N:out" "$TEST_DIR/got"
	assert_equal "$(cat "$TEST_DIR/got/r" "$TEST_DIR/got/sub/s")" $'r\ns'
	[[ -L $TEST_DIR/got/evil || ! -e $TEST_DIR/got/evil ]]
	sbx_ok cp "$N:out" "$TEST_DIR/dir"
	assert_equal "$(cat "$TEST_DIR/dir/out/r")" r
}

@test "sandbox cp: copying out a symlink, or through one, is refused, as is a file over 64 MiB" {
	local p
	sbx_create "$N" --disk 200m
	sbx_exec "$N" -- sh -c 'ln -s /etc/shadow shadow; ln -s ../../../../../../etc/passwd up; ln -s /etc etc
		dd if=/dev/zero of=big bs=1M count=65 2>/dev/null'
	assert_equal "$status" 0
	for p in shadow up /work/up; do
		sbx cp "$N:$p" "$TEST_DIR/got"
		assert_equal "$status" 125
		assert_moat_error symlink
		[[ ! -e $TEST_DIR/got && ! -L $TEST_DIR/got ]]
	done
	sbx cp "$N:etc/passwd" "$TEST_DIR/got"
	assert_equal "$status" 125
	[[ ! -e $TEST_DIR/got ]]
	sbx cp "$N:big" "$TEST_DIR/got"
	assert_equal "$status" 125
	assert_moat_error 'larger than'
	[[ ! -s $TEST_DIR/got ]]
}

@test "sandbox cp: a symlink planted in the sandbox never sends a copy onto the host" {
	local dest
	mkdir "$TEST_DIR/host"
	echo a >"$TEST_DIR/a"
	sbx_create "$N"
	sbx_exec "$N" -- sh -c "ln -s $TEST_DIR/host link; ln -s $TEST_DIR/host/x file; ln -s ../../../../..$TEST_DIR/host up"
	assert_equal "$status" 0
	for dest in link link/ link/a file up up/a; do
		sbx cp "$TEST_DIR/a" "$N:$dest"
		[[ -z $(ls -A "$TEST_DIR/host") ]] || fail "cp to $dest wrote on the host: $(ls -A "$TEST_DIR/host")"
	done
}

@test "sandbox exec: the timeout kills every process of the sandbox, the session lives on" {
	local marker=$((400000 + RANDOM))
	sbx_create "$N" --timeout 2s
	sbx_exec "$N" -- sh -c "setsid sh -c 'trap \"\" TERM; exec sleep $marker' & sleep 300"
	assert_equal "$status" 124
	assert_equal "$(r .exit.reason)" timeout
	no_process "sleep $marker"
	sbx_exec "$N" -- echo alive
	assert_equal "$status" 0
	sbx_exec "$N" --timeout 1s -- sleep 30
	assert_equal "$status" 124
	# exec's --timeout overrides create's
	sbx_exec "$N" --timeout 30s -- sh -c 'sleep 3; echo slept'
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" slept
}

@test "sandbox exec: one command at a time; rm refuses a busy sandbox, rm --force kills its command" {
	local rc=0
	sbx_create "$N"
	sbx_exec_bg "$N" -- sleep 50
	retry sbx_busy "$N"
	sbx_is "$N" '.idle_expires == null'
	sbx_exec "$N" -- true
	assert_equal "$status" 125
	[[ $stderr == *"is running a command"* ]] || fail "stderr: $stderr"
	sbx rm "$N"
	assert_equal "$status" 125
	[[ $stderr == *"is running a command"* ]] || fail "stderr: $stderr"
	sbx_busy "$N"
	sbx_ok rm --force "$N"
	wait "$(cat "$TEST_DIR/bg.pid")" || rc=$?
	((rc != 0 && rc != 124)) || fail "the exec whose command rm --force killed exited $rc"
	sbx exec "$N" -- true
	assert_not_found "$N"
}

@test "sandbox exec: a client killed mid-command takes its command along, not the session" {
	local marker=$((400000 + RANDOM)) wrapper
	sbx_create "$N"
	timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" sandbox exec "$N" -- sh -c "exec sleep $marker" \
		</dev/null >/dev/null 2>&1 3>&- &
	wrapper=$!
	echo "$wrapper" >"$TEST_DIR/client.pid"
	retry pgrep -fx "sleep $marker"
	kill -KILL "$(pgrep -P "$wrapper")"
	wait "$wrapper" || true
	retry no_process "sleep $marker"
	retry sbx_idle "$N"
	sbx_exec "$N" -- echo alive
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" alive
}

@test "sandbox exec: the sandbox's limits end a command with their reason, the session lives" {
	sbx_create "$N" --memory 32m --disk 4m --output-limit 1k --pids 32
	sbx_exec "$N" -- sh -c 'x=a; while :; do x=$x$x; done'
	assert_equal "$(r .exit.reason)" oom
	sbx_exec "$N" -- sh -c "$BOUNDED_FORK_BOMB"
	assert_equal "$(r .exit.reason)" pids
	sbx_exec "$N" -- true
	assert_equal "$(r .exit.reason)" exited
	sbx_exec "$N" -- dd if=/dev/zero of=fill bs=1M count=64
	assert_equal "$(r .exit.reason)" disk
	sbx_exec "$N" -- rm fill
	assert_equal "$status" 0
	sbx_exec "$N" -- yes
	assert_equal "$(r .exit.reason)" output-limit
	assert_equal "$(r .stdout.kept)" 1024
	sbx_exec "$N" --output-limit 100 --on-output-limit truncate -- sh -c 'yes | head -c 5000; exit 3'
	assert_equal "$status" 3
	assert_equal "$(r .stdout.bytes)" 5000
	assert_equal "$(r .stdout.kept)" 100
	sbx_exec "$N" -- echo fine
	assert_equal "$status" 0
}

@test "sandbox lifetime: a command running at its end ends with reason lifetime, the sandbox goes" {
	sbx_create "$N" --lifetime 5s --timeout 50s
	sbx_exec "$N" -- sleep 50
	assert_equal "$status" 124
	assert_equal "$(r .exit.reason)" lifetime
	sbx exec "$N" -- true
	assert_not_found "$N"
	assert_no_residue 10
}

@test "sandbox lifetime: an idle sandbox is destroyed at its end by its keeper alone" {
	local info secs start=$SECONDS
	sbx_create "$N" --lifetime 4s --idle-timeout 0
	info=$(sbx_info "$N")
	jq -e '.idle_expires == null' <<<"$info"
	secs=$(seconds_between "$info" created expires)
	((secs >= 3 && secs <= 5)) || fail "lifetime of ${secs}s, not 4s: $info"
	# no moat command from here on: nobody else collects it; and 0 is no idle timeout, not 0 s
	assert_no_residue 30
	((SECONDS - start >= 3)) || fail "gone after $((SECONDS - start)) s, before its lifetime of 4 s"
	assert_not_listed "$N"
}

@test "sandbox idle timeout: exec, cp and diff are activity, ls is not, a long command is not idle" {
	local i start
	echo x >"$TEST_DIR/x"
	sbx_create "$N" --idle-timeout 4s
	sbx_is "$N" '.idle_expires | type == "string"'
	sbx_exec "$N" -- sleep 6
	assert_equal "$status" 0
	assert_equal "$(r .exit.reason)" exited
	# 2.2 s apart, each finds the sandbox alive only if the one before restarted the timer
	sleep 2.2
	sbx_ok cp "$TEST_DIR/x" "$N:x"
	sleep 2.2
	sbx_diff "$N"
	assert_success
	sleep 2.2
	sbx_exec "$N" -- cat x
	assert_equal "$status" 0
	start=$SECONDS
	for ((i = 0; i < 120; i++)); do
		sbx_info "$N" >/dev/null || break
		sleep 0.5
	done
	((i < 120)) || fail "still there after 60 s of ls alone"
	((SECONDS - start >= 3)) || fail "gone after $((SECONDS - start)) s, not the idle timeout of 4 s"
	assert_no_residue 10
	assert_not_listed "$N"
}

@test "sandbox sessions are per uid: another uid finds none of root's" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	setpriv --reuid 1000 --regid 1000 --clear-groups test -x "$MOAT_BINARY" ||
		skip "uid 1000 cannot run $MOAT_BINARY"
	mkdir "$TEST_DIR/u"
	chown 1000:1000 "$TEST_DIR/u"
	sbx_create "$N"
	as_1000 exec "$N" -- true
	assert_not_found "$N"
	as_1000 cp "$N:/etc/passwd" "$TEST_DIR/u/p"
	assert_not_found "$N"
	[[ ! -e $TEST_DIR/u/p ]]
	as_1000 diff "$N"
	assert_not_found "$N"
	as_1000 rm --force "$N"
	assert_not_found "$N"
	as_1000 ls --format json
	assert_success
	output_is 'all(.[]; .name != $n)' --arg n "$N"
	sbx_exec "$N" -- echo mine
	assert_equal "$status" 0
}

@test "sandbox create: killed with SIGKILL at random points, it leaves a sandbox or nothing" {
	local i name
	for ((i = 0; i < 10; i++)); do
		name=$N-kill-$i
		# SIGKILL to moat alone (--foreground), after 0.01 to 0.6 s (0 would be no timeout)
		timeout --foreground -s KILL "$(printf '0.%02d' $((RANDOM % 60 + 1)))" \
			"$MOAT_BINARY" sandbox create --rootfs "$ROOTFS_CACHE" "$name" </dev/null >/dev/null 2>&1 3>&- ||
			true
		retry settled "$name"
		if sbx_info "$name" >/dev/null; then
			sbx rm --force "$name"
			((status == 0)) || assert_not_found "$name"
		fi
		assert_not_listed "$name"
	done
	# a keeper may have finished a sandbox after all: it is a sandbox, rm it
	sbx_remove_all
	sbx ls
	assert_no_residue 10
}

@test "sandbox: a keeper killed takes its processes along, the next command collects the rest" {
	local marker=$((400000 + RANDOM)) keeper
	sbx_create "$N"
	sbx_exec "$N" -- sh -c "exec sleep $marker </dev/null >/dev/null 2>&1 &"
	retry pgrep -fx "sleep $marker"
	keeper=$(sbx_info "$N" | jq -r .keeper_pid)
	[[ $keeper =~ ^[0-9]+$ ]] || fail "keeper_pid: $keeper"
	kill -KILL "$keeper"
	retry process_gone "$keeper"
	retry no_process "sleep $marker"
	assert_not_listed "$N"
	assert_no_residue 10
	sbx exec "$N" -- true
	assert_not_found "$N"
}

@test "sandbox exec, cp, diff and rm of an unknown or removed sandbox: not found, exit 1" {
	local name cmd
	echo x >"$TEST_DIR/x"
	sbx_create "$N"
	sbx_ok rm "$N"
	for name in "$N" nosuch-$RANDOM; do
		for cmd in "exec $name -- true" "cp $TEST_DIR/x $name:/x" "cp $name:/etc/passwd $TEST_DIR/y" \
			"diff $name" "rm $name"; do
			# shellcheck disable=SC2086 # the words of the command ($TEST_DIR has no blank)
			sbx $cmd
			assert_not_found "$name"
		done
		[[ ! -e $TEST_DIR/y ]]
	done
}

@test "sandbox: a keeper's TERM destroys its sandbox at once; its commands' signals are their own" {
	local keeper
	sbx_create "$N"
	# the keeper blocks TERM, INT and HUP for its signalfd and ignores PIPE; a command must
	# inherit neither (grep itself: busybox sh ignores QUIT in what it runs)
	sbx_exec "$N" -- grep -E '^Sig(Blk|Ign)' /proc/self/status
	assert_equal "$status" 0
	assert_equal "$(r .stdout.text)" $'SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000'
	keeper=$(sbx_info "$N" | jq -r .keeper_pid)
	[[ $keeper =~ ^[0-9]+$ ]] || fail "keeper_pid: $keeper"
	kill -TERM "$keeper"
	retry process_gone "$keeper"
	# no collector needed: the keeper removed everything itself
	[[ -z $(sandbox_residue) ]] || fail "left behind: $(sandbox_residue)"
	sbx exec "$N" -- true
	assert_not_found "$N"
}
