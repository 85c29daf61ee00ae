#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Idmapped bind mounts: options idmap/ridmap and mounts[].uidMappings/gidMappings.
# moat makes the mapped clone on the host side (the container's init has no
# privilege over the host filesystem any more) and the init attaches it.

load helpers

# make_bundle's config maps container ids 0..65535 to host 100000..165535.

# host_data: a directory owned by host root with a root-owned file, the kind
# of source an idmapped mount exists for. Sets DATA.
host_data() {
	DATA=$TEST_DIR/data
	mkdir -p "$DATA"
	chmod 0755 "$DATA"
	echo host >"$DATA/file"
}

# bind_data DEST OPTIONS_JSON: add a bind mount of $DATA at DEST (made in the
# rootfs: the container's root may not create it in the host-owned root).
bind_data() {
	mkdir -p "$BUNDLE/rootfs$1"
	# shellcheck disable=SC2016 # jq variables
	cfg_set '.mounts += [{destination: $d, type: "bind", source: $s, options: $o}]' \
		--arg d "$1" --arg s "$DATA" --argjson o "$2"
}

@test "idmap: host root's files appear owned by the container's root" {
	make_bundle
	host_data
	bind_data /data '["bind", "idmap"]'
	bind_data /plain '["bind"]'
	run_sh 'stat -c "%u:%g" /data/file /plain/file'
	assert_success
	assert_line --index 0 0:0
	# the same directory without idmap: host root is unmapped, so overflow ids
	assert_line --index 1 65534:65534
}

@test "idmap: the container's root writes through the mapping as the source's owner" {
	make_bundle
	host_data
	bind_data /data '["bind", "idmap"]'
	run_sh 'echo inside >/data/new && echo wrote'
	assert_success
	assert_output wrote
	[[ $(stat -c %u:%g "$DATA/new") == 0:0 ]]
	[[ $(cat "$DATA/new") == inside ]]
}

@test "idmap: without it the container's root cannot write the host root's directory" {
	make_bundle
	host_data
	bind_data /data '["bind"]'
	run_sh 'echo inside >/data/new 2>/dev/null && echo wrote || echo refused'
	assert_success
	assert_output refused
	[[ ! -e $DATA/new ]]
}

@test "idmap: a mount's own uidMappings and gidMappings are used instead of the container's" {
	make_bundle
	host_data
	bind_data /data '["rbind"]'
	# host uid 0 is seen as host 100007 (container uid 7), gid 0 as 100009 (gid 9)
	cfg_set '.mounts[-1].uidMappings = [{containerID: 0, hostID: 100007, size: 1}] |
		.mounts[-1].gidMappings = [{containerID: 0, hostID: 100009, size: 1}]'
	run_sh 'stat -c "%u:%g" /data/file'
	assert_success
	assert_output 7:9
}

@test "idmap: a relative source is resolved from the bundle" {
	make_bundle
	mkdir -p "$BUNDLE/shared"
	echo x >"$BUNDLE/shared/file"
	mkdir -p "$BUNDLE/rootfs/shared"
	cfg_set '.mounts += [{destination: "/shared", type: "bind", source: "shared",
		options: ["bind", "idmap"]}]'
	run_sh 'stat -c "%u:%g" /shared/file'
	assert_success
	assert_output 0:0
}

@test "ridmap maps the submounts of an rbind too; idmap maps only the top" {
	make_bundle
	host_data
	mkdir -p "$DATA/sub"
	# a submount of the source (the teardown unmounts what is under TEST_DIR)
	mount -t tmpfs -o mode=0755 moat-test-sub "$DATA/sub"
	touch "$DATA/sub/file"
	bind_data /r '["rbind", "ridmap"]'
	bind_data /n '["rbind", "idmap"]'
	run_sh 'stat -c "%u:%g" /r/file /r/sub/file /n/file /n/sub/file'
	assert_success
	assert_line --index 0 0:0
	assert_line --index 1 0:0
	assert_line --index 2 0:0
	assert_line --index 3 65534:65534
}

@test "idmap: the mapped mount does not change the files on the host" {
	make_bundle
	host_data
	bind_data /data '["bind", "idmap"]'
	run_sh 'stat -c %u /data/file'
	assert_success
	assert_output 0
	[[ $(stat -c %u:%g "$DATA/file") == 0:0 ]]
	# and nothing is left mounted on the host side
	run mounts_under "$DATA"
	assert_output ''
}

@test "idmap: uidMappings without gidMappings is refused, with no residue" {
	make_bundle
	host_data
	bind_data /data '["bind", "idmap"]'
	cfg_set '.mounts[-1].uidMappings = [{containerID: 0, hostID: 100007, size: 1}]'
	run_sh true
	assert_moat_error 'mounts\[[0-9]+\] \(/data\): gidMappings: uidMappings and gidMappings must be given together'
	assert_no_residue "$CID"
}

@test "idmap: a mapping of size 0 is refused and named" {
	make_bundle
	host_data
	bind_data /data '["bind"]'
	cfg_set '.mounts[-1].uidMappings = [{containerID: 0, hostID: 100007, size: 0}] |
		.mounts[-1].gidMappings = [{containerID: 0, hostID: 100009, size: 1}]'
	run_sh true
	assert_moat_error 'mounts\[[0-9]+\] \(/data\): uidMappings\[0\]\.size: must be > 0'
	assert_no_residue "$CID"
}

@test "idmap: only bind mounts can be idmapped" {
	make_bundle
	cfg_set '.mounts += [{destination: "/t", type: "tmpfs", source: "tmpfs", options: ["idmap"]}]'
	run_sh true
	assert_moat_error 'mounts\[[0-9]+\] \(/t\): idmap: only bind mounts can be idmapped'
	assert_no_residue "$CID"
}

@test "idmap: a filesystem without idmapped mount support is named" {
	make_bundle
	# /sys/fs is a host path the policy's deny-host-mounts refuses first
	use_policy_without deny-host-mounts
	cfg_set '.mounts += [{destination: "/s", type: "bind", source: "/sys/fs", options: ["rbind", "idmap"]}]'
	run_sh true
	assert_moat_error "mounts\[[0-9]+\] \(/s\): idmap '/sys/fs': the filesystem does not support idmapped mounts"
	assert_no_residue "$CID"
}

@test "idmap: a container without a user namespace needs the mount's own mappings" {
	make_bundle
	use_policy_without auto-userns # the policy refuses a config without a user namespace
	host_data
	cfg_set '.linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)'
	bind_data /data '["bind", "idmap"]'
	run_sh true
	assert_moat_error 'mounts\[[0-9]+\] \(/data\): idmap: the container has no user namespace to map through'
	assert_no_residue "$CID"
	# with mappings of its own it works there too
	cfg_set '.mounts[-1].uidMappings = [{containerID: 0, hostID: 1234, size: 1}] |
		.mounts[-1].gidMappings = [{containerID: 0, hostID: 1234, size: 1}]'
	run_sh 'stat -c "%u:%g" /data/file'
	assert_success
	assert_output 1234:1234
}

@test "idmap: a failure after the mapped source was made leaves nothing behind" {
	make_bundle
	host_data
	bind_data /data '["bind", "idmap"]'
	cfg_set '.process.cwd = "/does-not-exist"'
	run_sh true
	assert_moat_error 'process.cwd'
	assert_no_residue "$CID"
	run mounts_under "$DATA"
	assert_output ''
}
