#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The default user namespace: container root is an unprivileged host uid.

load helpers

# map_line MAPPINGS: "containerID hostID size" of the first entry of
# linux.uidMappings or linux.gidMappings in $CONFIG.
map_line() {
	cfg_get ".linux.$1[0] | \"\(.containerID) \(.hostID) \(.size)\""
}

@test "inside, /proc/self/uid_map and gid_map show the configured mapping" {
	make_bundle
	uidmap=$(map_line uidMappings)
	gidmap=$(map_line gidMappings)
	run_sh 'tr -s " " < /proc/self/uid_map | sed "s/^ //"; tr -s " " < /proc/self/gid_map | sed "s/^ //"'
	assert_success
	assert_line --index 0 "$uidmap"
	assert_line --index 1 "$gidmap"
	# and it is not the identity mapping of the host
	refute_line --index 0 --regexp '^0 0 '
}

@test "inside, the process is root of its own user namespace" {
	make_bundle
	run_sh 'id -u; id -g; readlink /proc/self/ns/user'
	assert_success
	assert_line --index 0 0
	assert_line --index 1 0
	refute_line --index 2 "$(readlink /proc/self/ns/user)"
}

@test "on the host, the container process runs as an unprivileged uid and gid" {
	make_bundle
	host_uid=$(cfg_get '.linux.uidMappings[0].hostID')
	host_gid=$(cfg_get '.linux.gidMappings[0].hostID')
	((host_uid > 0 && host_gid > 0))
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	pid=$(host_pid)
	wait_for_status running
	# real, effective, saved and filesystem ids, as the host sees them
	run awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status"
	assert_output "$host_uid $host_uid $host_uid $host_uid"
	run awk '/^Gid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status"
	assert_output "$host_gid $host_gid $host_gid $host_gid"
	refute [ "$(readlink "/proc/$pid/ns/user")" = "$(readlink /proc/self/ns/user)" ]
}

@test "a created container's process is already unprivileged on the host" {
	make_bundle
	cfg_args sleep 100000
	moat_create
	pid=$(host_pid)
	run awk '/^Uid:/ { print $2, $3 }' "/proc/$pid/status"
	refute_output '0 0'
	refute_output --regexp '(^| )0( |$)'
}

@test "a mapping from the config is honoured" {
	make_bundle
	cfg_set '.linux.uidMappings = [{"containerID": 0, "hostID": 200000, "size": 1000}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 300000, "size": 1000}]'
	run_sh 'tr -s " " < /proc/self/uid_map | sed "s/^ //"; tr -s " " < /proc/self/gid_map | sed "s/^ //"'
	assert_success
	assert_line --index 0 '0 200000 1000'
	assert_line --index 1 '0 300000 1000'
}

@test "a non-root process.user is mapped through the user namespace" {
	make_bundle
	host_uid=$(cfg_get '.linux.uidMappings[0].hostID')
	cfg_set '.process.user = {"uid": 1000, "gid": 1000}'
	cfg_args sleep 100000
	moat_create
	moat start "$CID"
	wait_for_status running
	run awk '/^Uid:/ { print $2 }' "/proc/$(host_pid)/status"
	assert_output "$((host_uid + 1000))"
}

@test "uidMappings the kernel refuses fail with one line naming the field and the mappings" {
	make_bundle
	# two ranges that overlap inside the container: the kernel's uid_map refuses them
	cfg_set '.linux.uidMappings = [{"containerID": 0, "hostID": 200000, "size": 10},
		{"containerID": 5, "hostID": 300000, "size": 10}]'
	cfg_args true
	run_moat run --bundle "$BUNDLE" "$CID"
	assert_moat_error "^moat: linux\.uidMappings: write '0 200000 10, 5 300000 10' to '/proc/[0-9]+/uid_map': Invalid argument\$"
	assert_no_residue "$CID"
}
