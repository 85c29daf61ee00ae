#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Container ID rules: empty, ".", "..", anything with "/", control
# characters and IDs longer than 255 bytes (a file name) are refused, and a
# new container's ID may not start with "."; a duplicate ID is an error that
# leaves the first container alone.

load helpers

# assert_id_refused ID: create and run with ID both fail with one line and
# leave nothing behind, in the state root or next to it.
assert_id_refused() {
	local id=$1 cmd
	for cmd in create run; do
		run_moat "$cmd" --bundle "$BUNDLE" --pid-file "$TEST_DIR/refused.pid" "$id"
		assert_moat_error
		[[ ! -e $TEST_DIR/refused.pid ]] || fail "$cmd wrote a pid file for a refused ID"
		run find "$MOAT_ROOT" -mindepth 1 -type d
		assert_output ''
		assert_no_residue "$id"
	done
}

setup() {
	moat_setup
	make_bundle
	cfg_args true
}

@test "an empty container ID is refused" {
	assert_id_refused ''
}

@test "the container ID '.' is refused" {
	assert_id_refused .
}

@test "the container ID '..' is refused" {
	assert_id_refused ..
}

@test "the container ID '.seccomp-cache' is refused: the state root keeps compiled filters there" {
	run_moat create --bundle "$BUNDLE" .seccomp-cache
	assert_moat_error "^moat: container ID '\.seccomp-cache': reserved \(moat's cache of compiled seccomp filters\)\$"
	assert_id_refused .seccomp-cache
}

@test "a container ID containing '/' is refused" {
	assert_id_refused a/b
	assert_id_refused "../escape-$CID"
	[[ ! -e $(dirname "$MOAT_ROOT")/escape-$CID ]]
	assert_id_refused "/absolute-$CID"
	[[ ! -e /absolute-$CID ]]
	assert_id_refused "trailing-$CID/"
	[[ ! -e $MOAT_ROOT/trailing-$CID ]]
}

@test "a container ID containing a newline is refused" {
	assert_id_refused "bad"$'\n'"id"
}

@test "a container ID containing a tab or another control character is refused" {
	assert_id_refused "bad"$'\t'"id"
	assert_id_refused "bad"$'\x01'"id"
	assert_id_refused "bad"$'\x1b'"id"
	assert_id_refused "bad"$'\x7f'"id"
}

@test "a container ID longer than 255 bytes is refused up front, naming the limit" {
	for n in 256 1024 1025; do
		id=$(printf 'a%.0s' $(seq "$n"))
		run_moat create --bundle "$BUNDLE" "$id"
		assert_moat_error "^moat: container ID: $n bytes, longer than the limit of 255 \(it names a directory\)\$"
		assert_id_refused "$id"
	done
}

@test "a container ID of 255 bytes works" {
	id=$(printf 'b%.0s' $(seq 255))
	run_moat create --bundle "$BUNDLE" "$id"
	assert_success
	assert_equal "$(moat state "$id" | jq -r .id)" "$id"
	run_moat list -q
	assert_line_exact "$id"
	moat delete --force "$id"
	assert_no_residue "$id"
}

# `list` passes by the names moat keeps in the state root (.seccomp-cache): a container
# there would run unlisted, so its ID is refused.
@test "a container ID starting with '.' is refused at create and run, naming the rule" {
	for id in .hidden ".$CID" ...x; do
		run_moat create --bundle "$BUNDLE" "$id"
		# a moat that made it: delete it here, as teardown finds containers by listing
		((status != 0)) || moat delete --force "$id"
		assert_moat_error "^moat: container ID '${id//./\\.}': must not start with '\.'"
		assert_id_refused "$id"
	done
}

@test "state, start, kill and delete refuse invalid IDs too" {
	for id in '' . .. a/b "../$CID" "bad"$'\n'"id"; do
		for cmd in state start kill delete; do
			run_moat "$cmd" "$id"
			assert_moat_error
		done
	done
}

@test "ordinary IDs with letters, digits, dashes, underscores and dots work" {
	for id in a "$CID" "x_y.z-1" "UPPER.lower_123"; do
		run_moat create --bundle "$BUNDLE" "$id"
		assert_success
		assert_equal "$(moat state "$id" | jq -r .id)" "$id"
		moat delete --force "$id"
	done
}

@test "creating a container with an ID already in use fails and leaves the first one alone" {
	cfg_args sleep 100000
	moat_create
	first_pid=$(host_pid)
	make_bundle "$TEST_DIR/second"
	cfg_args sleep 100000
	run_moat create --bundle "$TEST_DIR/second" --pid-file "$TEST_DIR/second.pid" "$CID"
	assert_moat_error "$CID"
	[[ ! -s $TEST_DIR/second.pid ]]
	assert_equal "$(status_of)" created
	assert_equal "$(state_of | jq -r .pid)" "$first_pid"
	assert_equal "$(state_of | jq -r .bundle)" "$TEST_DIR/bundle"
	process_alive "$first_pid"
	assert_equal "$(mounts_under "$TEST_DIR/second")" ''
}

@test "run with an ID already in use fails and leaves the first one alone" {
	cfg_args sleep 100000
	moat_run_detached
	first_pid=$(host_pid)
	make_bundle "$TEST_DIR/second"
	cfg_args echo must-not-run
	run_moat run --bundle "$TEST_DIR/second" "$CID"
	assert_moat_error "$CID"
	refute_output --partial must-not-run
	assert_equal "$(status_of)" running
	assert_equal "$(state_of | jq -r .pid)" "$first_pid"
}
