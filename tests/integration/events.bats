#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat events [--stats] [--interval DURATION] ID`: runc's events JSON, one
# object a line: the statistics of the container's cgroup
# ({"type":"stats","id":ID,"data":{...}}), and {"type":"oom","id":ID} for
# each OOM kill, until the container stops.

# shellcheck disable=SC2154 # run_moat sets stderr
load helpers

# start_events ARGS...: `moat events ARGS...` in the background, its output
# in events_out, its exit status in $TEST_DIR/events-status once it ends.
start_events() {
	(
		rc=0
		moat events "$@" >"$(events_out)" 2>"$TEST_DIR/events.err" || rc=$?
		echo "$rc" >"$TEST_DIR/events-status"
	) 3>&- &
}

events_out() {
	echo "$TEST_DIR/events.out"
}

# events_of_type TYPE: how many whole TYPE objects events wrote so far.
events_of_type() {
	grep -c "^{\"type\":\"$1\",\"id\":\"$CID\".*}\$" "$(events_out)" || true
}

# at_least N TYPE
at_least() {
	(($(events_of_type "$2") >= $1))
}

# events_ended: the background events exited; its status is checked with
# assert_events_status.
events_ended() {
	wait_for_file "$TEST_DIR/events-status"
}

assert_events_status() {
	assert_equal "$(cat "$TEST_DIR/events-status")" "$1"
}

# stats_field FILTER: FILTER (jq) applied to the data of one `events --stats`.
stats_field() {
	moat events --stats "$CID" | jq -r ".data | $1"
}

# start_hog_container [TRAP]: a container with a 16 MiB limit (no swap
# beyond it) whose init runs TRAP on SIGUSR1 (default: /bin/hog, then says
# hog-done). /bin/hog doubles a shell variable until the OOM killer ends it:
# memory the process touches itself, so the kernel cannot fail the
# allocation quietly (a read(2) from /dev/zero into too big a buffer can
# come back short instead).
start_hog_container() {
	make_bundle
	cfg_set '.linux.resources.memory = {"limit": 16777216, "swap": 16777216}'
	add_script hog <<-'EOF'
		#!/bin/sh
		x=0123456789abcdef
		while :; do x=$x$x; done
	EOF
	add_script oomer <<-EOF
		#!/bin/sh
		trap '${1:-/bin/hog; echo hog-done}' USR1
		echo ready
		while :; do sleep 1 & wait \$!; done
	EOF
	cfg_args /bin/oomer
	moat_run_detached
	wait_for_output '^ready$'
}

@test "events --stats reports the memory, processes and limits of a running container" {
	make_bundle
	cfg_set '.linux.resources.memory.limit = 67108864 | .linux.resources.pids.limit = 64'
	cfg_sh 'sleep 100000 & sleep 100000 & echo ready; wait'
	moat_run_detached
	wait_for_output '^ready$'
	run_moat events --stats "$CID"
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$stderr" ''
	assert_equal "$(jq -r .type <<<"$output")" stats
	assert_equal "$(jq -r .id <<<"$output")" "$CID"
	# sh and its two sleeps
	assert_equal "$(jq .data.pids.current <<<"$output")" 3
	assert_equal "$(jq .data.pids.limit <<<"$output")" 64
	assert_equal "$(jq .data.memory.usage.limit <<<"$output")" 67108864
	jq -e '.data.memory.usage.usage > 0' <<<"$output"
	jq -e '.data.memory.raw | length > 0' <<<"$output"
	jq -e '.data.memory | has("swap") and has("kernel") and has("kernelTCP")' <<<"$output"
	jq -e '.data.cpu.usage | has("total") and has("kernel") and has("user")' <<<"$output"
	jq -e '.data | has("pids") and has("blkio") and has("hugetlb")' <<<"$output"
}

@test "events --stats: the cpu usage grows after the container works" {
	make_bundle
	add_script busy <<-'EOF'
		#!/bin/sh
		trap 'i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done; echo busy-done' USR1
		echo ready
		while :; do sleep 1 & wait $!; done
	EOF
	cfg_args /bin/busy
	moat_run_detached
	wait_for_output '^ready$'
	local before after
	before=$(stats_field .cpu.usage.total)
	[[ $before =~ ^[0-9]+$ ]]
	moat kill "$CID" USR1
	wait_for_output '^busy-done$'
	after=$(stats_field .cpu.usage.total)
	((after > before))
}

@test "events streams statistics every --interval and exits 0 when the container stops" {
	make_bundle
	cfg_args sleep 100000
	moat_run_detached
	start_events --interval 100ms "$CID"
	retry at_least 2 stats
	moat kill "$CID" KILL
	events_ended
	assert_events_status 0
	# every line is a whole stats object for this container
	run jq -r -s 'map(.type == "stats" and .id == env.CID and (.data.cpu | type) == "object") | all' \
		"$(events_out)"
	assert_output true
	refute [ -s "$TEST_DIR/events.err" ]
}

@test "events reports an OOM kill in a container with a small memory limit" {
	start_hog_container
	start_events --interval 1s "$CID"
	# the first statistics come once the OOM watch is in place
	retry at_least 1 stats
	moat kill "$CID" USR1
	wait_for_output '^hog-done$'
	retry at_least 1 oom
	grep -qxF "{\"type\":\"oom\",\"id\":\"$CID\"}" "$(events_out)"
	assert_equal "$(events_of_type oom)" 1
	assert_equal "$(status_of)" running
	# the peak usage reached the limit
	assert_equal "$(stats_field .memory.usage.max)" 16777216
	moat kill "$CID" KILL
	events_ended
	assert_events_status 0
}

@test "events reports the OOM kill of the container's init, then exits 0" {
	start_hog_container 'exec /bin/hog'
	start_events --interval 10s "$CID"
	retry at_least 1 stats
	moat kill "$CID" USR1
	events_ended
	assert_events_status 0
	assert_equal "$(events_of_type oom)" 1
	assert_equal "$(status_of)" stopped
}

@test "events of a container that does not exist fails with one line" {
	run_moat events --stats no-such-container
	assert_moat_error "container 'no-such-container' does not exist"
	run_moat events no-such-container
	assert_moat_error "container 'no-such-container' does not exist"
}

@test "events of a stopped container fails with one line" {
	make_bundle
	cfg_args true
	moat_run_detached
	wait_for_status stopped
	run_moat events --stats "$CID"
	assert_moat_error "container '$CID' is stopped"
	run_moat events "$CID"
	assert_moat_error "container '$CID' is stopped"
}

@test "events refuses an --interval that is not a duration above zero" {
	make_bundle
	cfg_args sleep 100000
	moat_run_detached
	local bad good
	for bad in 0 5 abc -1s 1x .s '' 5s5; do
		run_moat events --interval "$bad" "$CID"
		assert_moat_error "--interval: '$bad' is not a duration"
	done
	run_moat events --stats --interval
	assert_moat_error '--interval'
	for good in 1m30s 1.5s 250ms 2h; do
		run_moat events --stats --interval "$good" "$CID"
		assert_success
	done
}
