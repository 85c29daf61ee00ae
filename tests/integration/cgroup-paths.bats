#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# linux.cgroupsPath: the default /moat/<id>, absolute and relative paths, and
# the systemd slice:prefix:name form under --systemd-cgroup (mapped to the
# path systemd would use where systemd is not PID 1, as here; where it is,
# the scope is systemd's, made over D-Bus: tests/testhost/systemd.bats).
# And what a container with a cgroup namespace sees of the tree.
#
# A path is looked for in the hierarchies of $HIERS on cgroup v1 (and hybrid) hosts, and in
# the one unified hierarchy on cgroup v2 (cgroup_dirs).

load helpers

HIERS="memory pids cpu freezer"

setup() {
	moat_setup
	PARENTS=()
}

# Parent levels moat leaves in place (as it leaves /moat): the test made
# them, so it removes them, deepest first, if they are empty.
teardown() {
	moat_teardown
	local d h
	for d in "${PARENTS[@]}"; do
		for h in $(cgroup_dirs); do
			[[ -d $h$d ]] && rmdir "$h$d" 2>/dev/null
		done
	done
	true
}

# in_every_hierarchy PATH: the container's init is in cgroup PATH of each of $HIERS (of
# the unified hierarchy on cgroup v2).
in_every_hierarchy() {
	local pid h
	pid=$(host_pid)
	# shellcheck disable=SC2086 # HIERS is a list
	for h in $(cgroup_dirs $HIERS); do
		[[ -d $h$1 ]] || fail "$h$1 does not exist"
		grep -qx "$pid" "$h$1/cgroup.procs" ||
			fail "init $pid is not in $h$1"
	done
}

start_with_path() {
	make_bundle
	cfg_set '.linux.cgroupsPath = $p' --arg p "$1"
	cfg_args sleep 300
	shift
	with_container_stdio moat "$@" run --detach --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
}

@test "an absolute cgroupsPath is used as is, and removed by delete" {
	local top=/moat-paths-$BATS_SUITE_TEST_NUMBER-$RANDOM
	PARENTS=("$top")
	start_with_path "$top/c-$CID"
	in_every_hierarchy "$top/c-$CID"
	moat delete --force "$CID"
	# shellcheck disable=SC2086 # HIERS is a list
	for h in $(cgroup_dirs $HIERS); do
		[[ ! -e $h$top/c-$CID ]] || fail "$h$top/c-$CID remains"
	done
}

@test "a relative cgroupsPath goes under /moat" {
	start_with_path "rel-$CID/inner"
	PARENTS=("/moat/rel-$CID")
	in_every_hierarchy "/moat/rel-$CID/inner"
}

@test "--systemd-cgroup maps slice:prefix:name to the path systemd would use" {
	local slice=moatt-$BATS_SUITE_TEST_NUMBER$RANDOM
	PARENTS=("/moatt.slice/$slice.slice" "/moatt.slice")
	start_with_path "$slice.slice:pfx:$CID" --systemd-cgroup
	in_every_hierarchy "/moatt.slice/$slice.slice/pfx-$CID.scope"
}

@test "--systemd-cgroup with no cgroupsPath uses system.slice:moat:<id>" {
	make_bundle
	cfg_set 'del(.linux.cgroupsPath)'
	cfg_args sleep 300
	with_container_stdio moat --systemd-cgroup run --detach --bundle "$BUNDLE" \
		--pid-file "$(pid_file)" "$CID"
	PARENTS=("/system.slice")
	in_every_hierarchy "/system.slice/moat-$CID.scope"
}

@test "cgroupsPath values that could leave the container's place are refused with one line" {
	make_bundle
	cfg_args true
	local p
	for p in "../escape" "/moat/../x" "/" "a/./b"; do
		cfg_set '.linux.cgroupsPath = $p' --arg p "$p"
		run_moat run --bundle "$BUNDLE" "$CID"
		assert_moat_error 'linux.cgroupsPath'
		assert_no_residue "$CID"
	done
}

@test "a systemd-looking cgroupsPath without --systemd-cgroup is a plain path under /moat" {
	start_with_path "x-$CID.slice:pfx:name"
	in_every_hierarchy "/moat/x-$CID.slice:pfx:name"
}

# The cgroup namespace is in moat's default spec. With the host's layout mounted at
# /sys/fs/cgroup, the container's own cgroup is the root of every hierarchy it sees: not
# /moat, not a sibling container, not the host's.
@test "a container with a cgroup namespace sees only its own tree" {
	local other=$CID-other
	make_bundle
	cfg_args sleep 300
	CID=$other with_container_stdio moat run --detach --bundle "$BUNDLE" \
		--pid-file "$(pid_file "$other")" "$other"
	[[ -d $(cgroup_dirs pids)/moat/$other ]] || fail "the neighbour has no cgroup /moat/$other"
	cfg_set '.mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
		options: ["nosuid", "noexec", "nodev", "ro"]}]'
	# shellcheck disable=SC2016 # expanded by the container's shell
	run_sh 'echo "not-root: $(grep -cv ":/$" /proc/self/cgroup)"
		echo "found: $(find /sys/fs/cgroup -name moat -o -name "*-other" -o -name "*.slice" | wc -l)"
		for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/pids/cgroup.procs; do
			[ -e "$f" ] && echo "root-procs-has-1: $(grep -cx 1 "$f")"
		done; true'
	assert_success
	assert_line 'not-root: 0'
	assert_line 'found: 0'
	assert_line 'root-procs-has-1: 1'
	moat delete --force "$other"
}
