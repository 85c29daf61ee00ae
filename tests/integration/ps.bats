#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# moat ps: the container's processes, as containerd reads them (--format json)
# and as a ps(1) table.

load helpers

start_three() {
	make_bundle
	cfg_sh 'sleep 301 & sleep 302 & wait'
	moat_run_detached
	retry test "$(moat ps --format json "$CID" | jq length)" -eq 3
}

@test "ps --format json lists the host pids of every process of the container" {
	start_three
	local init expected
	init=$(host_pid)
	# the init and its two children, as the host sees them
	expected=$(printf '%s\n' "$init" $(pgrep -P "$init") | sort -n | jq -sc .)
	run --separate-stderr moat ps --format json "$CID"
	assert_success
	assert_output "$expected"
}

@test "ps (table) keeps ps's header and only the container's lines" {
	start_three
	run --separate-stderr moat ps "$CID"
	assert_success
	assert_line --index 0 --regexp '^UID +PID +PPID'
	assert_equal "${#lines[@]}" 4
	assert_line --regexp 'sleep 301$'
	assert_line --regexp 'sleep 302$'
	refute_line --regexp 'bats'
}

@test "ps passes its arguments to ps(1)" {
	start_three
	run --separate-stderr moat ps "$CID" -- -e -o pid,comm
	assert_success
	assert_line --index 0 --regexp '^ *PID +COMMAND$'
	assert_equal "${#lines[@]}" 4
	assert_line --regexp '^ *[0-9]+ sleep$'
}

@test "ps sees a process exec'd into the container" {
	start_three
	moat exec --detach --pid-file "$TEST_DIR/exec.pid" "$CID" sleep 303
	run --separate-stderr moat ps --format json "$CID"
	assert_success
	run jq --argjson p "$(cat "$TEST_DIR/exec.pid")" 'index($p) != null' <<<"$output"
	assert_output true
}

@test "ps of a stopped container prints an empty list" {
	make_bundle
	cfg_args true
	moat_run_detached
	retry status_is "$CID" stopped
	run --separate-stderr moat ps --format json "$CID"
	assert_success
	assert_output '[]'
}

@test "ps errors are one line: unknown container, bad --format, json with ps args" {
	run_moat ps --format json no-such-container
	assert_moat_error 'no-such-container'
	start_three
	run_moat ps --format yaml "$CID"
	assert_moat_error "--format: 'yaml' is not table or json"
	run_moat ps --format json "$CID" -ef
	assert_moat_error 'ps arguments go with --format table only'
}

@test "ps with ps options that give no PID column fails without printing other processes" {
	start_three
	run_moat ps "$CID" -- -e -o comm
	assert_moat_error 'the output of ps has no PID column'
	# only the header
	assert_equal "${#lines[@]}" 1
}
