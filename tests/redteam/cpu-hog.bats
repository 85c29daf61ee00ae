#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, exhaustion of the CPU: a workload spins on every CPU it can, under a CPU quota
# of a fifth of one CPU (linux.resources.cpu, as an engine sends it), as a container and as
# a microVM (TCG, where the quota holds QEMU). The kernel throttles it (cpu.stat's
# nr_throttled grows) while a neighbour container sleeps 1 ms at a time and says how late
# it woke, alone and beside the hog. The latencies are reported, never asserted.

load ../integration/helpers
load redteam

setup_file() { moat_setup_file; }
setup() { redteam_shell_setup; }
teardown() { moat_teardown; }

# neighbour_probe NAME: the neighbour's 1 ms sleeps (a container), its line of result
neighbour_probe() {
	"$MOAT_BINARY" --root "$MOAT_ROOT" run --bundle "$TEST_DIR/neighbour-container" "$CID-$1" \
		</dev/null | grep '^probe: '
}

# hog_beside_neighbour MODE: the hog in MODE under a quota, the neighbour measured alone and
# beside it; the hog must be throttled, and nothing of either is left.
hog_beside_neighbour() {
	local mode=$1 alone beside throttled hog stat
	redteam_bundle container neighbour
	cfg_args /attack probe 2000
	alone=$(neighbour_probe alone) || fail "the neighbour did not measure: $alone"

	redteam_bundle "$mode" hog
	hog=$CID-hog
	cfg_set '.linux.resources.cpu = {quota: 20000, period: 100000}'
	cfg_sh 'for i in 1 2 3; do while :; do :; done & done; echo up; while :; do :; done'
	CID=$hog moat_run_detached
	wait_for_output "^up$" "$(out_file "$hog")"
	beside=$(neighbour_probe beside) || fail "the neighbour did not measure beside the hog: $beside"
	stat=$(cgroup_file cpu cpu.stat cpu.stat "$hog")
	throttled=$(awk '$1 == "nr_throttled" { print $2 }' "$stat")
	echo "# $mode hog under 20000/100000 on $(nproc) CPUs: throttled $throttled times" >&3
	echo "# the neighbour alone:  ${alone#probe: }" >&3
	echo "# the neighbour beside: ${beside#probe: }" >&3
	((throttled > 0)) || fail "the hog was never throttled: $(cat "$stat")"

	moat kill "$hog" KILL
	wait_for_status stopped "$hog"
	moat delete --force "$hog"
	assert_no_residue "$hog" "$TEST_DIR/hog-$mode"
	assert_no_residue "$CID-beside" "$TEST_DIR/neighbour-container"
}

@test "exhaustion: a CPU hog under a quota is throttled; its neighbour's latency is reported (container)" {
	hog_beside_neighbour container
}

@test "exhaustion: a CPU hog under a quota is throttled; its neighbour's latency is reported (microvm)" {
	local why
	why=$(microvm_unavailable)
	[[ -z $why ]] || skip "$why"
	hog_beside_neighbour microvm
}
