#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# pause and resume: the container's cgroup is frozen and thawed; `state`
# reports "paused" in between; kill, delete and exec behave around it.

load helpers

# A container that counts up in a file on its tmpfs, so progress can be seen
# from the host through the container's /proc/<pid>/root.
start_counter() {
	make_bundle
	cfg_sh 'i=0; while :; do i=$((i+1)); echo $i >/tmp/count; done'
	moat_run_detached
	COUNT=/proc/$(host_pid)/root/tmp/count
	wait_for_file "$COUNT"
}

# count: the counter's value (the loop truncates the file before writing it,
# so read again when it is caught empty).
count() {
	local v='' i
	for ((i = 0; i < 1000 && ${#v} == 0; i++)); do
		v=$(cat "$COUNT")
	done
	echo "$v"
}

count_is_not() {
	[[ $(count) != "$1" ]]
}

# counter_moves: the counter changes (bounded wait).
counter_moves() {
	retry count_is_not "$(count)"
}

@test "pause freezes the container: state says paused and the counter stops" {
	start_counter
	run_moat pause "$CID"
	assert_success
	run status_of
	assert_output paused
	local a b
	# the file as it is (the freeze may have caught the loop between truncating it and
	# writing it: then it stays empty)
	a=$(cat "$COUNT")
	sleep 1
	b=$(cat "$COUNT")
	# frozen: not one more iteration in a second (a running loop makes thousands)
	assert_equal "$b" "$a"
	# the freezer says so too
	[[ $(cat "/sys/fs/cgroup/freezer/moat/$CID/freezer.state") == FROZEN ]]
}

@test "resume thaws it: state says running and the counter moves again" {
	start_counter
	moat pause "$CID"
	run_moat resume "$CID"
	assert_success
	run status_of
	assert_output running
	counter_moves
	[[ $(cat "/sys/fs/cgroup/freezer/moat/$CID/freezer.state") == THAWED ]]
}

@test "pause freezes every process of the container, not only the init" {
	make_bundle
	cfg_sh 'sleep 300 & sleep 300 & wait'
	moat_run_detached
	retry test "$(moat ps --format json "$CID" | jq length)" -eq 3
	moat pause "$CID"
	local pid state
	for pid in $(moat ps --format json "$CID" | jq '.[]'); do
		# D (frozen in the kernel's freezer) rather than S
		state=$(awk '{ print $3 }' "/proc/$pid/stat")
		[[ $state == D ]] || fail "process $pid is in state $state, not frozen"
	done
}

@test "pause a created container: it is paused and resumes to created" {
	make_bundle
	cfg_args true
	moat_create
	moat pause "$CID"
	run status_of
	assert_output paused
	moat resume "$CID"
	run status_of
	assert_output created
}

@test "pause twice, and resume of a running container, fail with one line" {
	start_counter
	moat pause "$CID"
	run_moat pause "$CID"
	assert_moat_error "pause: container '$CID' is paused"
	moat resume "$CID"
	run_moat resume "$CID"
	assert_moat_error "resume: container '$CID' is running, not paused"
}

@test "pause of a stopped container and of an unknown one fail with one line" {
	make_bundle
	cfg_args true
	moat_run_detached
	retry status_is "$CID" stopped
	run_moat pause "$CID"
	assert_moat_error "container '$CID' is stopped"
	run_moat pause no-such-container
	assert_moat_error "no-such-container"
}

@test "delete --force removes a paused container and its cgroups" {
	start_counter
	local pid
	pid=$(host_pid)
	moat pause "$CID"
	run_moat delete "$CID"
	assert_moat_error "container '$CID' is paused"
	run_moat delete --force "$CID"
	assert_success
	process_gone "$pid"
	assert_no_residue "$CID"
}

@test "a signal sent while paused is delivered on resume" {
	start_counter
	local pid
	pid=$(host_pid)
	moat pause "$CID"
	moat kill "$CID" KILL
	sleep 0.5
	# still there: a frozen process does not even die of SIGKILL until thawed
	process_alive "$pid"
	moat resume "$CID"
	retry process_gone "$pid"
	retry status_is "$CID" stopped
}

@test "exec into a paused container is refused with one line" {
	start_counter
	moat pause "$CID"
	run_moat exec "$CID" true
	assert_moat_error "container '$CID' is paused"
}

@test "pause of a rootless-style container without a cgroup names the reason" {
	make_bundle
	cfg_args sleep 300
	cfg_set 'del(.linux.resources)'
	# a container run with --cgroup-manager=disabled has no cgroup at all
	with_container_stdio moat --cgroup-manager=disabled run --detach --bundle "$BUNDLE" \
		--pid-file "$(pid_file)" "$CID"
	run_moat pause "$CID"
	assert_moat_error "pause: container '$CID' has no cgroup"
}
