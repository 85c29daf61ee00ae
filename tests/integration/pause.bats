#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# pause and resume: the container's cgroup is frozen and thawed; `state`
# reports "paused" in between; kill, delete and exec behave around it.
#
# On cgroup v1 the freezer controller's freezer.state freezes the cgroup, and a frozen task
# waits in the kernel's refrigerator (state D) where not even SIGKILL reaches it until it is
# thawed. On cgroup v2 moat writes cgroup.freeze and cgroup.events says "frozen 1"; a frozen
# task waits in a signal-delivery trap (state S, /proc/<pid>/wchan do_freezer_trap), from
# which SIGKILL takes it at once. A caught signal waits for the thaw on both.

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

# assert_freezer FROZEN|THAWED: the container's freezer says so: freezer.state on cgroup
# v1; on v2 the frozen key of cgroup.events, "frozen 1" or "frozen 0".
assert_freezer() {
	local events want=0
	if cgroup_v2; then
		[[ $1 == FROZEN ]] && want=1
		events=$(cat "$(cgroup_file freezer - cgroup.events)")
		grep -qx "frozen $want" <<<"$events" ||
			fail "cgroup.events does not say 'frozen $want': $events"
	else
		assert_equal "$(cat "$(cgroup_file freezer freezer.state -)")" "$1"
	fi
}

# signal_pending PID SIGNUM: signal SIGNUM waits, not yet handled, in PID's pending set
# (the process's or its thread's).
signal_pending() {
	local shared own
	shared=$(awk '$1 == "ShdPnd:" { print $2 }' "/proc/$1/status")
	own=$(awk '$1 == "SigPnd:" { print $2 }' "/proc/$1/status")
	(((0x$shared | 0x$own) >> ($2 - 1) & 1))
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
	assert_freezer FROZEN
}

@test "resume thaws it: state says running and the counter moves again" {
	start_counter
	moat pause "$CID"
	run_moat resume "$CID"
	assert_success
	run status_of
	assert_output running
	counter_moves
	assert_freezer THAWED
}

# The children spin, so that each is R and takes CPU time unless it is frozen: on cgroup v2
# a frozen task's S is then told from a running one's R even where the kernel has no
# /proc/<pid>/wchan (no CONFIG_KALLSYMS) to name the freezer's trap.
@test "pause freezes every process of the container, not only the init" {
	make_bundle
	cfg_sh 'while :; do :; done & while :; do :; done & wait'
	moat_run_detached
	retry test "$(moat ps --format json "$CID" | jq length)" -eq 3
	moat pause "$CID"
	local pid state before
	local -a pids
	mapfile -t pids < <(moat ps --format json "$CID" | jq '.[]')
	assert_equal "${#pids[@]}" 3
	for pid in "${pids[@]}"; do
		state=$(awk '{ print $3 }' "/proc/$pid/stat")
		if cgroup_v2; then
			# S rather than R, parked in the v2 freezer's trap
			[[ $state == S ]] || fail "process $pid is in state $state, not frozen"
			if [[ -e /proc/$pid/wchan ]]; then
				assert_equal "$(cat "/proc/$pid/wchan")" do_freezer_trap
			fi
		else
			# D (frozen in the kernel's freezer) rather than R or S
			[[ $state == D ]] || fail "process $pid is in state $state, not frozen"
		fi
	done
	# and not one of them runs: no CPU time in a second (utime and stime)
	before=$(for pid in "${pids[@]}"; do awk '{ print $14, $15 }' "/proc/$pid/stat"; done)
	sleep 1
	assert_equal "$(for pid in "${pids[@]}"; do awk '{ print $14, $15 }' "/proc/$pid/stat"; done)" \
		"$before"
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
	make_bundle
	# an init that catches TERM (one without a handler would not get it at all)
	cfg_sh 'trap "echo caught TERM; exit 0" TERM; echo ready; while :; do sleep 0.1; done'
	moat_run_detached
	wait_for_output '^ready$'
	local pid
	pid=$(host_pid)
	moat pause "$CID"
	moat kill "$CID" TERM
	sleep 0.5
	# pending, and not handled while frozen, on cgroup v1 and v2 alike
	process_alive "$pid"
	signal_pending "$pid" 15 || fail "TERM is not pending for the init $pid"
	if grep -q 'caught TERM' "$(out_file)"; then
		fail "the init handled TERM while paused"
	fi
	moat resume "$CID"
	wait_for_output '^caught TERM$'
	retry process_gone "$pid"
	retry status_is "$CID" stopped
}

@test "SIGKILL while paused: on cgroup v1 the init dies only on resume, on cgroup v2 at once" {
	start_counter
	local pid
	pid=$(host_pid)
	moat pause "$CID"
	moat kill "$CID" KILL
	if cgroup_v2; then
		# the v2 freezer lets a fatal signal through
		retry process_gone "$pid"
	else
		sleep 0.5
		# still there: a task frozen by v1 does not even die of SIGKILL until thawed
		process_alive "$pid"
		run status_of
		assert_output paused
		moat resume "$CID"
		retry process_gone "$pid"
	fi
	retry status_is "$CID" stopped
	moat delete "$CID"
	assert_no_residue "$CID"
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
