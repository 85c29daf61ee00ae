# SPDX-License-Identifier: GPL-2.0-or-later
# What the test host's own files (systemd.bats, rootless.bats) share: they load it after
# ../integration/helpers.

# moat_ok ARGS...: moat succeeds (its stderr is the failure's message)
moat_ok() {
	run_moat "$@"
	((status == 0)) || fail "moat $*: $stderr"
}

# scope_pause_kill_delete CGROUP_DIR [SYSTEMCTL_FLAG]: the container $CID, run detached with
# --systemd-cgroup from $BUNDLE as a shell with two children, is frozen and thawed through
# the scope's cgroup.freeze, killed whole through cgroup.kill, and deleted, and its scope
# $UNIT is then inactive in the manager SYSTEMCTL_FLAG (--user, or none for the system's).
scope_pause_kill_delete() {
	local cgroup_dir=$1 manager=("${@:2}")
	moat_ok --systemd-cgroup run --detach --bundle "$BUNDLE" "$CID"
	retry test "$(moat ps --format json "$CID" | jq length)" -eq 3
	moat_ok pause "$CID"
	grep -qx 'frozen 1' "$cgroup_dir/cgroup.events"
	moat_ok resume "$CID"
	moat_ok kill --all "$CID" KILL
	retry status_is "$CID" stopped
	moat_ok delete "$CID"
	run systemctl "${manager[@]}" is-active "$UNIT"
	assert_output inactive
}
