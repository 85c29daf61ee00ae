#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Rootless moat on a cgroup v2 host with systemd: the cgroup v2 test host
# (tests/testhost/README.md) runs this file as the user moattest, in a scope of that user's
# systemd manager, to which user@.service delegates the memory, pids and cpu controllers.
# With --systemd-cgroup a container's cgroup is a scope of the user's own manager
# (cgroup-systemd.h); it gets the controllers the user was delegated, and a limit that needs
# another is refused with one line naming it. Anywhere else this file skips.

load ../integration/helpers
load testhost

MANAGER_CG=/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service

# (helpers' root-only set-up builds a shared rootfs owned by root: each test makes its own)
setup_file() {
	:
}

teardown_file() {
	:
}

setup() {
	((EUID != 0)) || skip "these tests are for an unprivileged user"
	[[ -d $MANAGER_CG && -n ${XDG_RUNTIME_DIR:-} ]] ||
		skip "no systemd user manager with a delegated cgroup here (the test host runs this file)"
	TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-rootless.XXXXXX")
	MOAT_ROOT=$TEST_DIR/state
	CID=moat-rootless-$BATS_TEST_NUMBER-$RANDOM
	BUNDLE=$TEST_DIR/bundle
	CONFIG=$BUNDLE/config.json
	export TEST_DIR MOAT_ROOT CID BUNDLE CONFIG
	mkdir -p "$BUNDLE/rootfs"/{bin,dev,proc,sys,tmp,etc}
	cp /bin/busybox "$BUNDLE/rootfs/bin/"
	for applet in sh sleep id cat echo; do
		ln -s busybox "$BUNDLE/rootfs/bin/$applet"
	done
	"$MOAT_BINARY" spec --rootless --bundle "$BUNDLE"
	cfg_set '.process.terminal = false'
	UNIT=moat-$CID.scope
	SCOPE_CG=$MANAGER_CG/user.slice/$UNIT
}

teardown() {
	"$MOAT_BINARY" --root "$MOAT_ROOT" delete --force "$CID" >/dev/null 2>&1 || true
	systemctl --user stop "$UNIT" >/dev/null 2>&1 || true
	rm -rf "$TEST_DIR"
}

moat() {
	timeout -k 10 "$MOAT_CMD_TIMEOUT" "$MOAT_BINARY" --root "$MOAT_ROOT" "$@"
}

@test "rootless: a container runs as the user's uid on the host and as root inside" {
	cfg_args sh -c 'id -u; cat /proc/self/uid_map'
	moat_ok run --bundle "$BUNDLE" "$CID"
	assert_equal "${lines[0]}" 0
	[[ ${lines[1]} =~ ^\ +0\ +1000\ +1$ ]] || fail "uid_map: ${lines[1]}"
}

@test "rootless --systemd-cgroup: the cgroup is a delegated scope of the user's manager, with memory, pids and cpu limits in its files" {
	cfg_set '.linux.resources = {memory: {limit: 67108864}, pids: {limit: 40},
		cpu: {quota: 20000, period: 100000}}'
	cfg_args sleep 100000
	moat_ok --systemd-cgroup run --detach --bundle "$BUNDLE" "$CID"
	assert_equal "$(systemctl --user show -P ActiveState "$UNIT")" active
	assert_equal "$(systemctl --user show -P Delegate "$UNIT")" yes
	assert_equal "$(systemctl --user show -P Slice "$UNIT")" user.slice
	grep -qx "$(moat state "$CID" | jq -r .pid)" "$SCOPE_CG/cgroup.procs"
	assert_equal "$(cat "$SCOPE_CG/memory.max")" 67108864
	assert_equal "$(cat "$SCOPE_CG/pids.max")" 40
	assert_equal "$(cat "$SCOPE_CG/cpu.max")" "20000 100000"
	assert_equal "$(jq -r .cgroupPath "$MOAT_ROOT/$CID/state.json")" "${SCOPE_CG#/sys/fs/cgroup}"
	# no device filter without CAP_BPF, and the state says so
	moat state "$CID" | jq -e '.annotations["moat.cgroup.ignored"] | test("linux.resources.devices: a rootless container.s cgroup gets no device filter")'
	moat_ok delete --force "$CID"
	run systemctl --user is-active "$UNIT"
	assert_output inactive
	[[ ! -e $SCOPE_CG ]] || fail "the scope's cgroup remains"
}

@test "rootless --systemd-cgroup: a limit on a controller the user was not delegated is refused with one line naming it" {
	cfg_args true
	cfg_set '.linux.resources = {blockIO: {weight: 500}}'
	run_moat --systemd-cgroup create --bundle "$BUNDLE" "$CID"
	assert_moat_error 'linux.resources.blockIO.weight: the io controller is not delegated to the container.s cgroup'
	cfg_set '.linux.resources = {cpu: {cpus: "0"}}'
	run_moat --systemd-cgroup create --bundle "$BUNDLE" "$CID"
	assert_moat_error 'linux.resources.cpu.cpus: the cpuset controller is not delegated'
	run systemctl --user is-active "$UNIT"
	assert_output inactive
	[[ ! -e $MOAT_ROOT/$CID ]] || fail "the state remains"
	[[ ! -e $SCOPE_CG ]] || fail "the scope's cgroup remains"
}

@test "rootless: pause, kill --all and delete in the user's scope" {
	cfg_set '.linux.resources = {pids: {limit: 40}}'
	cfg_sh 'sleep 100000 & sleep 100000 & wait'
	scope_pause_kill_delete "$SCOPE_CG" --user
}
