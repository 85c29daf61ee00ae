#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The systemd cgroup driver (src/libmoat/cgroup/cgroup-systemd.h), against a real systemd:
# the cgroup v2 test host (tests/testhost/README.md) runs this file as root. With
# --systemd-cgroup, the container's cgroup is a transient scope systemd starts over D-Bus,
# delegated, in the slice linux.cgroupsPath names, with the resources systemd knows as its
# properties and every resource in the cgroup's files; delete stops it. Anywhere systemd is
# not PID 1 this file skips.

load ../integration/helpers
load testhost

setup() {
	[[ $(readlink /proc/1/exe) == */systemd ]] || skip "systemd is not PID 1 here (the test host runs this file)"
	moat_setup
	make_bundle
	cfg_args sleep 100000
	UNIT=moat-$CID.scope
}

teardown() {
	moat_teardown
	systemctl stop "$UNIT" >/dev/null 2>&1 || true
	systemctl stop moat-test.slice >/dev/null 2>&1 || true
}

# prop NAME [UNIT]: a property of the unit, as systemctl shows it
prop() {
	systemctl show -P "$1" "${2:-$UNIT}"
}

@test "systemd: --systemd-cgroup makes the container's cgroup a delegated transient scope in system.slice" {
	moat_ok --systemd-cgroup run --detach --bundle "$BUNDLE" "$CID"
	assert_equal "$(prop ActiveState)" active
	assert_equal "$(prop Transient)" yes
	assert_equal "$(prop Delegate)" yes
	assert_equal "$(prop Slice)" system.slice
	assert_equal "$(prop ControlGroup)" "/system.slice/$UNIT"
	# the init is in it, and the state says who made it
	grep -qx "$(state_of | jq -r .pid)" "/sys/fs/cgroup/system.slice/$UNIT/cgroup.procs"
	assert_equal "$(jq -r .cgroupManager "$MOAT_ROOT/$CID/state.json")" systemd
	assert_equal "$(jq -r .cgroupPath "$MOAT_ROOT/$CID/state.json")" "/system.slice/$UNIT"
}

@test "systemd: the resources are the scope's properties and its cgroup's files" {
	cfg_set '.linux.resources = {memory: {limit: 67108864, reservation: 16777216, swap: 100663296},
		cpu: {shares: 512, quota: 25000, period: 100000, cpus: "0"}, pids: {limit: 42},
		blockIO: {weight: 500}}'
	moat_ok --systemd-cgroup run --detach --bundle "$BUNDLE" "$CID"
	assert_equal "$(prop MemoryMax)" 67108864
	assert_equal "$(prop MemoryLow)" 16777216
	assert_equal "$(prop MemorySwapMax)" 33554432
	assert_equal "$(prop TasksMax)" 42
	assert_equal "$(prop CPUQuotaPerSecUSec)" 250ms
	assert_equal "$(prop CPUWeight)" 20
	assert_equal "$(prop IOWeight)" 4950
	assert_equal "$(prop AllowedCPUs)" 0
	local cg=/sys/fs/cgroup/system.slice/$UNIT
	assert_equal "$(cat "$cg/memory.max")" 67108864
	assert_equal "$(cat "$cg/memory.swap.max")" 33554432
	assert_equal "$(cat "$cg/pids.max")" 42
	assert_equal "$(cat "$cg/cpu.max")" "25000 100000"
	assert_equal "$(cat "$cg/cpuset.cpus")" 0
}

@test "systemd: slice:prefix:name names the scope and its slice; delete stops it and nothing is left" {
	cfg_set '.linux.cgroupsPath = $p' --arg p "moat-test.slice:moattest:$CID"
	moat_ok --systemd-cgroup run --detach --bundle "$BUNDLE" "$CID"
	UNIT=moattest-$CID.scope
	assert_equal "$(prop Slice)" moat-test.slice
	assert_equal "$(prop ControlGroup)" "/moat.slice/moat-test.slice/$UNIT"
	moat_ok delete --force "$CID"
	run systemctl is-active "$UNIT"
	assert_output inactive
	[[ ! -e /sys/fs/cgroup/moat.slice/moat-test.slice/$UNIT ]] || fail "the scope's cgroup remains"
	assert_no_residue "$CID"
}

@test "systemd: pause, kill --all and ps work on the scope" {
	cfg_sh 'sleep 100000 & sleep 100000 & wait'
	scope_pause_kill_delete "/sys/fs/cgroup/system.slice/$UNIT"
}

@test "systemd: a create that fails after the scope started stops it again" {
	# a CPU quota below the kernel's 1 ms: systemd takes the property, the cgroup file not
	cfg_set '.linux.resources = {cpu: {quota: 500, period: 100000}}'
	run_moat --systemd-cgroup create --bundle "$BUNDLE" "$CID"
	assert_moat_error 'cpu.quota'
	run systemctl is-active "$UNIT"
	assert_output inactive
	assert_no_residue "$CID"
}

@test "systemd: without --systemd-cgroup, moat makes its own cgroup, outside systemd's scopes" {
	moat_ok run --detach --bundle "$BUNDLE" "$CID"
	grep -qx "$(state_of | jq -r .pid)" "/sys/fs/cgroup/moat/$CID/cgroup.procs"
	run systemctl is-active "$UNIT"
	assert_output inactive
	assert_equal "$(jq -r '.cgroupManager // "none"' "$MOAT_ROOT/$CID/state.json")" none
}

@test "systemd: a bus that cannot be reached fails create with one line naming it; nothing is left" {
	DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/bus run_moat --systemd-cgroup create --bundle "$BUNDLE" "$CID"
	assert_moat_error 'systemd is PID 1, but its system bus cannot be reached'
	run systemctl is-active "$UNIT"
	assert_output inactive
	assert_no_residue "$CID"
}
