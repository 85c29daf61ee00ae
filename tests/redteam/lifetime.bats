#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, lifetime: a workload that burns the CPU in loops and leaves setsid daemons that
# ignore SIGTERM and SIGHUP. SIGTERM does nothing to them; KILL stops the container, and
# delete --force then leaves no survivor, no cgroup and no state. The time from KILL to
# stopped, under the load the loops make, is reported (never asserted).

load ../integration/helpers
load redteam

setup_file() { moat_setup_file; }
setup() { redteam_shell_setup; }
teardown() { moat_teardown; }

# procs_of ID: the host pids in the container's cgroup (for a microVM, QEMU's side).
procs_of() {
	cat "$(cgroup_dirs pids)/moat/$1/cgroup.procs" 2>/dev/null
}

# enough_procs ID N: the container's cgroup holds at least N processes.
enough_procs() {
	(($(procs_of "$1" | wc -l) >= $2))
}

# unkillable_then_kill MODE MIN: run the workload in MODE, check SIGTERM leaves it running,
# KILL it, time it, delete it, and check that nothing of it is left. MIN: how many host
# processes its cgroup must hold first (a container's are the workload's own).
unkillable_then_kill() {
	local mode=$1 min=$2 pids pid start ms
	redteam_bundle "$mode"
	# shellcheck disable=SC2016 # the container's shell expands these
	cfg_sh 'trap "" TERM HUP
		for i in 1 2 3; do setsid sh -c "trap \"\" TERM HUP; while :; do :; done" & done
		echo up; while :; do :; done'
	moat_run_detached
	wait_for_output '^up$'
	retry enough_procs "$CID" "$min"
	pids=$(procs_of "$CID")
	moat kill "$CID" TERM
	sleep 1
	assert_equal "$(status_of)" running
	start=$(date +%s%N)
	moat kill "$CID" KILL
	wait_for_status stopped
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "# $mode: KILL to stopped in $ms ms, with 4 busy loops on $(nproc) CPUs" >&3
	moat delete --force "$CID"
	for pid in $pids; do
		process_gone "$pid" || fail "process $pid of the container survived: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
	done
	assert_no_residue "$CID"
}

@test "lifetime: loops and setsid daemons that ignore SIGTERM: KILL and delete --force leave no survivor (container)" {
	# init, its three daemons and their loop
	unkillable_then_kill container 4
}

@test "lifetime: loops and setsid daemons that ignore SIGTERM: KILL and delete --force leave no survivor (microvm)" {
	local why
	why=$(microvm_unavailable)
	[[ -z $why ]] || skip "$why"
	unkillable_then_kill microvm 1
}
