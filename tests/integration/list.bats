#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat list [--format table|json] [--quiet]`.

load helpers

# create_named ID [ARGS...]: create container ID from its own bundle.
create_named() {
	local id=$1
	shift
	make_bundle "$TEST_DIR/bundle-$id"
	cfg_args "$@"
	CID=$id moat_create
}

@test "list -q of an empty state root prints nothing" {
	run_moat list -q
	assert_success
	assert_output ''
}

@test "list --format json of an empty state root prints an empty array" {
	run_moat list --format json
	assert_success
	jq -e 'type == "array" and length == 0' <<<"$output" >/dev/null
}

@test "list of a state root that does not exist yet succeeds and is empty" {
	run --separate-stderr "$MOAT_BINARY" --root "$TEST_DIR/not-yet" list -q
	assert_success
	assert_output ''
}

@test "list shows a table with a header and one row per container" {
	create_named "$CID-a" sleep 100000
	create_named "$CID-b" sleep 100000
	run_moat list
	assert_success
	assert_line --index 0 --regexp '^ID +PID +STATUS +BUNDLE'
	assert_line --regexp "^$CID-a +[0-9]+ +created +$TEST_DIR/bundle-$CID-a( |$)"
	assert_line --regexp "^$CID-b +[0-9]+ +created +$TEST_DIR/bundle-$CID-b( |$)"
	assert_equal "${#lines[@]}" 3
}

@test "list --format table is the default format" {
	create_named "$CID" sleep 100000
	run_moat list
	table=$output
	run_moat list --format table
	assert_success
	assert_output "$table"
}

@test "list -q prints only the container IDs" {
	create_named "$CID-a" sleep 100000
	create_named "$CID-b" sleep 100000
	run_moat list -q
	assert_success
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' "$CID-a" "$CID-b")"
}

@test "list --quiet is the long form of -q" {
	create_named "$CID" sleep 100000
	run_moat list --quiet
	assert_success
	assert_output "$CID"
}

@test "list --format json gives id, pid, status and bundle for each container" {
	create_named "$CID" sleep 100000
	run_moat list --format json
	assert_success
	jq -e 'type == "array" and length == 1' <<<"$output" >/dev/null
	assert_equal "$(jq -r '.[0].id' <<<"$output")" "$CID"
	assert_equal "$(jq -r '.[0].status' <<<"$output")" created
	assert_equal "$(jq -r '.[0].pid' <<<"$output")" "$(host_pid "$CID")"
	assert_equal "$(jq -r '.[0].bundle' <<<"$output")" "$TEST_DIR/bundle-$CID"
}

@test "list -f json is the short form of --format json" {
	create_named "$CID" sleep 100000
	run_moat list -f json
	assert_success
	assert_equal "$(jq -r '.[0].id' <<<"$output")" "$CID"
}

@test "list reports the status of each container as it changes" {
	create_named "$CID" sleep 100000
	assert_equal "$(moat list -f json | jq -r '.[0].status')" created
	moat start "$CID"
	assert_equal "$(moat list -f json | jq -r '.[0].status')" running
	moat kill "$CID" KILL
	retry eval '[[ $(moat list -f json | jq -r ".[0].status") == stopped ]]'
}

@test "list no longer shows a deleted container" {
	create_named "$CID" true
	moat delete --force "$CID"
	run_moat list -q
	assert_success
	assert_output ''
}

@test "list with an unknown format fails with one line" {
	run_moat list --format yaml
	assert_moat_error 'yaml'
}
