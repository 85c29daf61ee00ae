#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# `moat spec`: writes a hardened default config.json, and what that default
# says (the same defaults are checked inside a running container by
# userns.bats, capabilities.bats, mounts.bats, devices.bats, namespaces.bats).

load helpers

# spec_here: run `moat spec` into $TEST_DIR/spec and point CONFIG at it.
spec_here() {
	mkdir -p "$TEST_DIR/spec"
	run --separate-stderr "$MOAT_BINARY" spec --bundle "$TEST_DIR/spec" "$@"
	assert_success
	CONFIG=$TEST_DIR/spec/config.json
}

@test "spec --bundle DIR writes DIR/config.json as valid JSON" {
	spec_here
	[[ -f $CONFIG ]]
	jq -e 'type == "object"' "$CONFIG" >/dev/null
}

@test "spec -b is the short form of --bundle" {
	mkdir "$TEST_DIR/b"
	run --separate-stderr "$MOAT_BINARY" spec -b "$TEST_DIR/b"
	assert_success
	jq -e . "$TEST_DIR/b/config.json" >/dev/null
}

@test "spec without --bundle writes config.json in the current directory" {
	mkdir "$TEST_DIR/cwd"
	cd "$TEST_DIR/cwd"
	run --separate-stderr "$MOAT_BINARY" spec
	assert_success
	jq -e . "$TEST_DIR/cwd/config.json" >/dev/null
}

@test "spec refuses to overwrite an existing config.json" {
	mkdir "$TEST_DIR/b"
	echo '{"keep": "me"}' >"$TEST_DIR/b/config.json"
	run --separate-stderr "$MOAT_BINARY" spec --bundle "$TEST_DIR/b"
	assert_moat_error 'config.json'
	assert_equal "$(jq -r .keep "$TEST_DIR/b/config.json")" me
}

@test "spec into a missing directory fails with one line" {
	run --separate-stderr "$MOAT_BINARY" spec --bundle "$TEST_DIR/does-not-exist"
	assert_moat_error
	[[ ! -e $TEST_DIR/does-not-exist ]]
}

@test "spec writes a 1.x ociVersion, rootfs as root.path and a process" {
	spec_here
	run cfg_get .ociVersion
	assert_output --regexp '^1\.[0-9]+\.[0-9]+'
	assert_equal "$(cfg_get .root.path)" rootfs
	jq -e '.process.args | type == "array" and length > 0' "$CONFIG" >/dev/null
	jq -e '.process.cwd == "/"' "$CONFIG" >/dev/null
	jq -e '.process.env | any(startswith("PATH="))' "$CONFIG" >/dev/null
}

# Issue 14: every container made from moat spec's config mapped its root to host uid 100000.
@test "default spec: no user namespace of its own; under the default policy each container gets its own host ids" {
	local a b
	spec_here
	jq -e '(.linux.namespaces | any(.type == "user") | not) and .linux.uidMappings == null
		and .linux.gidMappings == null' "$CONFIG" >/dev/null ||
		fail "the spec names a user namespace or mappings"
	# two containers from the same config: two ranges, neither host root
	cp -a "$ROOTFS_CACHE" "$TEST_DIR/spec/rootfs"
	rm -f "$TEST_DIR/spec/rootfs/.complete"
	chmod 755 "$TEST_DIR/spec"
	jq '.process.args = ["sleep", "300"] | .process.terminal = false' "$CONFIG" >"$CONFIG.new"
	mv "$CONFIG.new" "$CONFIG"
	moat run --detach --bundle "$TEST_DIR/spec" "$CID-a" </dev/null >/dev/null
	moat run --detach --bundle "$TEST_DIR/spec" "$CID-b" </dev/null >/dev/null
	a=$(awk '{print $2}' "/proc/$(state_of "$CID-a" | jq .pid)/uid_map")
	b=$(awk '{print $2}' "/proc/$(state_of "$CID-b" | jq .pid)/uid_map")
	((a != 0 && b != 0)) || fail "a container runs as host root"
	[[ $a != "$b" ]] || fail "both containers have host ids from $a"
}

@test "default spec: pid, network, ipc, uts, mount and cgroup namespaces" {
	spec_here
	for ns in pid network ipc uts mount cgroup; do
		jq -e --arg ns "$ns" '.linux.namespaces | any(.type == $ns and ((.path // "") == ""))' \
			"$CONFIG" >/dev/null || fail "no new $ns namespace"
	done
}

@test "default spec: no capabilities in any set" {
	spec_here
	jq -e '(.process.capabilities // {}) | [.bounding, .effective, .permitted, .inheritable, .ambient]
		| all((. // []) | length == 0)' "$CONFIG" >/dev/null
}

@test "default spec: noNewPrivileges is true" {
	spec_here
	assert_equal "$(cfg_get .process.noNewPrivileges)" true
}

@test "default spec: the root filesystem is read-only" {
	spec_here
	assert_equal "$(cfg_get .root.readonly)" true
}

@test "default spec: /tmp is a tmpfs" {
	spec_here
	jq -e '.mounts | any(.destination == "/tmp" and .type == "tmpfs")' "$CONFIG" >/dev/null
}

@test "default spec: no bind mounts of host paths" {
	spec_here
	jq -e '.mounts | all(.type != "bind" and ((.options // []) | all(. != "bind" and . != "rbind")))' \
		"$CONFIG" >/dev/null
}

@test "default spec: /proc/kcore and friends are masked, /proc/sys is read-only" {
	spec_here
	for p in /proc/kcore /proc/keys /proc/timer_list /proc/interrupts /sys/firmware; do
		jq -e --arg p "$p" '.linux.maskedPaths | index($p) != null' "$CONFIG" >/dev/null ||
			fail "$p is not in maskedPaths"
	done
	for p in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus; do
		jq -e --arg p "$p" '.linux.readonlyPaths | index($p) != null' "$CONFIG" >/dev/null ||
			fail "$p is not in readonlyPaths"
	done
}

@test "default spec: a hostname is set" {
	spec_here
	run cfg_get '.hostname // ""'
	refute_output ''
}

@test "default spec: the process runs as uid 0 and gid 0 inside the user namespace" {
	spec_here
	assert_equal "$(cfg_get .process.user.uid)" 0
	assert_equal "$(cfg_get .process.user.gid)" 0
}

@test "spec --rootless writes a valid config that keeps the user namespace" {
	spec_here --rootless
	jq -e 'type == "object"' "$CONFIG" >/dev/null
	jq -e '.linux.namespaces | any(.type == "user")' "$CONFIG" >/dev/null
	jq -e '.linux.uidMappings | length > 0' "$CONFIG" >/dev/null
	jq -e '.linux.gidMappings | length > 0' "$CONFIG" >/dev/null
}

@test "the default spec runs unchanged once a rootfs is in place" {
	make_bundle
	# make_bundle only turned terminal off; the rest is moat's default
	run_moat run --bundle "$BUNDLE" "$CID" <<<'echo hello from the default spec'
	assert_success
	assert_output 'hello from the default spec'
}

# Issue 14 (27): a tmpfs with size= alone allows as many inodes as half of RAM has pages, and
# each costs kernel memory size= does not count. Every tmpfs of the default spec has
# nr_inodes= too: one inode per 4 KiB page of its size (MOAT_TMPFS_BYTES_PER_INODE).
@test "default spec: every tmpfs has nr_inodes, one inode per 4 KiB page of its size" {
	spec_here
	run jq -r '.mounts[] | select(.type == "tmpfs") | [.destination,
		(.options | map(select(startswith("size=") or startswith("nr_inodes="))) | sort | join(" "))]
		| join(" ")' "$CONFIG"
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line '/dev nr_inodes=16384 size=65536k'
	assert_line '/dev/shm nr_inodes=16384 size=65536k'
	assert_line '/tmp nr_inodes=16384 size=65536k'
}
