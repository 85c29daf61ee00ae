#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The policy's auto-userns rule: a config without a user namespace runs in one that moat
# makes, mapping container ids 0..65535 to a range of host ids lent from a pool (no two live
# containers share ids), with the rootfs and bind mounts idmapped so that the image's files
# keep their owners. Where that cannot be done, create fails; it never runs without the
# user namespace.

load helpers

POOL_DIR=/run/moat-userns

setup() {
	moat_setup
	make_bundle
	# the config engines write: no user namespace, a writable root
	cfg_set '.linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings) | .root.readonly = false'
}

# pool_policy START CONTAINERS: a policy file whose pool is CONTAINERS ranges of 65536 ids
# from host id START; prints its path.
pool_policy() {
	local f=$TEST_DIR/pool-$1-$2.json
	printf '{"autoUserns": {"hostStart": %s, "containers": %s}}\n' "$1" "$2" >"$f"
	echo "$f"
}

# a pool start of this test's own, so that no other container's loan is in the way
private_start() {
	echo $((0x60000000 + (BATS_SUITE_TEST_NUMBER % 256) * 0x100000 + (RANDOM % 16) * 0x10000))
}

# uid_map_of ID: the first line of the container init's uid_map, as "inside host count".
uid_map_of() {
	local pid
	pid=$(host_pid "$1") || return 1
	awk 'NR == 1 { print $1, $2, $3 }' "/proc/$pid/uid_map"
}

# loans_of ID: the pool's loan files that name ID's state directory.
loans_of() {
	grep -lx "$(realpath "$MOAT_ROOT")/$1" "$POOL_DIR"/* 2>/dev/null || true
}

@test "auto-userns: container root is an unprivileged host uid from the pool, recorded in the state" {
	cfg_args sleep 60
	moat_create
	local map host
	map=$(uid_map_of "$CID")
	read -r _ host _ <<<"$map"
	assert_equal "${map% *}" "0 $host"
	assert_equal "${map##* }" 65536
	((host >= 0x70000000 && host < 0x70000000 + 4096 * 65536)) || fail "host id $host is outside the default pool"
	# the init's real and effective uids, as the host sees them
	assert_equal "$(awk '/^Uid:/ { print $2, $3 }' "/proc/$(host_pid "$CID")/status")" "$host $host"
	run state_of
	assert_success
	assert_equal "$(jq -r '.annotations["moat.policy.auto-userns"]' <<<"$output")" \
		"user namespace added: container ids 0-65535 are host ids $host-$((host + 65535)) (lent from the pool), rootfs and bind mounts idmapped"
	# the loan names this container; delete returns it
	assert_equal "$(wc -l <<<"$(loans_of "$CID")")" 1
	assert_equal "$(basename "$(loans_of "$CID")")" "$host-65536"
	moat delete --force "$CID"
	assert_equal "$(loans_of "$CID")" ""
}

@test "auto-userns: the rootfs keeps its owners inside, and what the container writes lands as the image's ids" {
	local r=$BUNDLE/rootfs
	mkdir -p "$r/owned/root" "$r/owned/user" "$r/owned/nobody" "$r/owned/odd"
	chown 0:0 "$r/owned/root"
	chown 1000:1000 "$r/owned/user"
	chown 65534:65534 "$r/owned/nobody"
	chown 12345:54321 "$r/owned/odd"
	chmod 0700 "$r/owned/user"
	cfg_set '.process.user = {uid: 1000, gid: 1000}'
	run_sh 'cd /owned && stat -c "%u:%g %n" root user nobody odd && echo hi >user/file && id -u'
	assert_success
	assert_line --index 0 '0:0 root'
	assert_line --index 1 '1000:1000 user'
	assert_line --index 2 '65534:65534 nobody'
	assert_line --index 3 '12345:54321 odd'
	assert_line --index 4 1000
	# the file belongs to uid 1000 on disk, as it would in the image
	assert_equal "$(stat -c '%u:%g' "$r/owned/user/file")" 1000:1000
}

@test "auto-userns: container root writes the image's root-owned files, which stay root-owned on disk" {
	cfg_set '.process.user = {uid: 0, gid: 0}'
	run_sh 'echo x >/etc/written && stat -c "%u:%g" /etc/written'
	assert_success
	assert_output 0:0
	assert_equal "$(stat -c '%u:%g' "$BUNDLE/rootfs/etc/written")" 0:0
}

@test "auto-userns: bind mounts are idmapped too, rbind ones with their submounts" {
	mkdir -p "$TEST_DIR/vol/sub" "$BUNDLE/rootfs/vol"
	chown 2000:2000 "$TEST_DIR/vol"
	mount -t tmpfs -o mode=0755,uid=3000,gid=3000 tmpfs "$TEST_DIR/vol/sub"
	cfg_set '.mounts += [{destination: "/vol", type: "bind", source: $s, options: ["rbind"]}]
		| .process.user = {uid: 2000, gid: 2000}' --arg s "$TEST_DIR/vol"
	run_sh 'stat -c "%u:%g %n" /vol /vol/sub && touch /vol/new && stat -c "%u:%g" /vol/new'
	umount "$TEST_DIR/vol/sub"
	assert_success
	assert_line --index 0 '2000:2000 /vol'
	assert_line --index 1 '3000:3000 /vol/sub'
	assert_line --index 2 '2000:2000'
	assert_equal "$(stat -c '%u:%g' "$TEST_DIR/vol/new")" 2000:2000
}

@test "auto-userns: two live containers get ranges that do not overlap; a returned range is lent again" {
	local policy start a b c
	start=$(private_start)
	policy=$(pool_policy "$start" 2)
	MOAT_TEST_POLICY=$policy
	cfg_args sleep 60
	moat_create
	a=$(uid_map_of "$CID")
	local first=$CID
	CID=$first-b
	moat_create
	b=$(uid_map_of "$CID")
	assert_equal "$a" "0 $start 65536"
	assert_equal "$b" "0 $((start + 65536)) 65536"
	moat delete --force "$first"
	CID=$first-c
	moat_create
	c=$(uid_map_of "$CID")
	assert_equal "$c" "0 $start 65536"
}

@test "auto-userns: when every range is lent, create fails naming the pool setting and leaves nothing" {
	local policy start
	start=$(private_start)
	policy=$(pool_policy "$start" 1)
	MOAT_TEST_POLICY=$policy
	cfg_args sleep 60
	moat_create
	local first=$CID
	CID=$first-full
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_moat_error "^moat: auto-userns: every range of the pool is in use \\(1 containers of 65536 ids from host id $start\\); raise autoUserns\\.containers in $policy\$"
	assert_no_residue "$CID"
	assert_equal "$(loans_of "$CID")" ""
	# the first one still holds its range
	assert_equal "$(uid_map_of "$first")" "0 $start 65536"
}

@test "auto-userns: a loan whose container is gone (a crash) is taken back" {
	local policy start
	start=$(private_start)
	policy=$(pool_policy "$start" 1)
	MOAT_TEST_POLICY=$policy
	mkdir -p "$POOL_DIR"
	echo "$TEST_DIR/no-such-state-dir" >"$POOL_DIR/$start-65536"
	cfg_args sleep 60
	moat_create
	assert_equal "$(uid_map_of "$CID")" "0 $start 65536"
	assert_equal "$(cat "$POOL_DIR/$start-65536")" "$(realpath "$MOAT_ROOT")/$CID"
}

@test "auto-userns: a loan is not taken from a container created under another --root" {
	local policy start other
	start=$(private_start)
	policy=$(pool_policy "$start" 2)
	MOAT_TEST_POLICY=$policy
	cfg_args sleep 60
	moat_create
	other=$TEST_DIR/other-root
	"$MOAT_BINARY" --root "$other" --policy "$policy" run -d --bundle "$BUNDLE" --pid-file "$(pid_file "$CID-other")" "$CID-other" \
		</dev/null >"$TEST_DIR/other.out" 2>&1 || fail "$(cat "$TEST_DIR/other.out")"
	local pid
	pid=$("$MOAT_BINARY" --root "$other" state "$CID-other" | jq .pid)
	assert_equal "$(awk 'NR == 1 { print $1, $2, $3 }' "/proc/$pid/uid_map")" "0 $((start + 65536)) 65536"
	"$MOAT_BINARY" --root "$other" delete --force "$CID-other"
}

# What auto-userns would idmap but cannot (ramfs; tmpfs before Linux 6.3, where engines keep
# /dev/shm and their run files) is bound as it is, with a warning: the container keeps its user
# namespace, and the files' owners show as nobody inside.
@test "auto-userns: a bind source that cannot be idmapped is bound as it is, with a warning; the user namespace stays" {
	mkdir -p "$TEST_DIR/ram" "$BUNDLE/rootfs/ram"
	mount -t ramfs ramfs "$TEST_DIR/ram"
	echo hello >"$TEST_DIR/ram/file"
	cfg_set '.mounts += [{destination: "/ram", type: "bind", source: $s, options: ["bind"]}]' --arg s "$TEST_DIR/ram"
	run_sh 'stat -c "%u %n" /ram/file; cat /ram/file; awk "NR == 1 { print \$1, \$3 }" /proc/self/uid_map'
	umount "$TEST_DIR/ram"
	assert_success
	assert_line --index 0 '65534 /ram/file'
	assert_line --index 1 hello
	assert_line --index 2 '0 65536'
	assert_equal "$stderr" "moat: warning: auto-userns: '$TEST_DIR/ram' is bound without an idmap: its filesystem does not support idmapped mounts, so its owners show as nobody inside"
}

@test "auto-userns: a bind mount that asks for an idmap the filesystem cannot give fails create" {
	mkdir -p "$TEST_DIR/ram" "$BUNDLE/rootfs/ram"
	mount -t ramfs ramfs "$TEST_DIR/ram"
	cfg_set '.mounts += [{destination: "/ram", type: "bind", source: $s, options: ["bind", "idmap"]}]' --arg s "$TEST_DIR/ram"
	cfg_args true
	run_moat --policy "$(pool_policy "$(private_start)" 1)" create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	umount "$TEST_DIR/ram"
	assert_moat_error "^moat: auto-userns: mounts\\[7\\] \\(/ram\\): idmap '$TEST_DIR/ram': the filesystem does not support idmapped mounts; moat does not run the container without its user namespace"
	assert_no_residue "$CID"
	assert_equal "$(loans_of "$CID")" ""
}

@test "auto-userns: a rootfs that cannot be idmapped fails create the same way" {
	local ram=$TEST_DIR/ramroot
	mkdir -p "$ram"
	mount -t ramfs ramfs "$ram"
	cp -a "$BUNDLE/rootfs/." "$ram/"
	cfg_set '.root.path = $r' --arg r "$ram"
	cfg_args true
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	umount "$ram"
	assert_moat_error "^moat: auto-userns: root\\.path: idmap '$ram': the filesystem does not support idmapped mounts \\(nor may any submount\\); moat does not run the container without its user namespace"
	assert_no_residue "$CID"
}

@test "auto-userns: a process.user outside the mapped ids is refused before anything is made" {
	cfg_set '.process.user = {uid: 70000, gid: 0}'
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_moat_error "^moat: policy auto-userns: process\\.user uid 70000 is outside the 65536 ids the automatic user namespace maps \\(autoUserns\\.idsPerContainer\\); allow it in "
	assert_no_residue "$CID"
}

@test "auto-userns: an engine-made network namespace is joined and sysfs still appears" {
	touch "$TEST_DIR/netns"
	unshare --net="$TEST_DIR/netns" true
	cfg_set '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$TEST_DIR/netns"
	run_sh 'test -d /sys/class && echo sysfs; cat /proc/self/uid_map'
	umount "$TEST_DIR/netns"
	assert_success
	assert_line --index 0 sysfs
	assert_line --index 1 --regexp '^ +0 +[0-9]+ +65536$'
	refute_line --index 1 --regexp '^ +0 +0 '
}

@test "auto-userns: a config with a user namespace of its own is left alone" {
	make_bundle "$TEST_DIR/own"
	cfg_args sleep 60
	moat_create
	assert_equal "$(uid_map_of "$CID")" "0 100000 65536"
	run state_of
	assert_equal "$(jq -r '.annotations["moat.policy.auto-userns"] // "none"' <<<"$output")" none
	assert_equal "$(loans_of "$CID")" ""
}

@test "auto-userns: exec joins the container's user namespace" {
	cfg_args sleep 60
	moat_create
	moat start "$CID"
	run_moat exec "$CID" cat /proc/self/uid_map
	assert_success
	assert_output --regexp "^ +0 +$(uid_map_of "$CID" | awk '{ print $2 }') +65536$"
}

@test "auto-userns: a config shaped as Docker writes it runs unchanged, root unprivileged on the host" {
	# what dockerd hands runc: no user namespace, its default capabilities, a joined network
	# namespace, sysfs/mqueue/devpts/shm mounts, /etc/hosts and resolv.conf bound from the
	# engine's per-container directory, device cgroup rules
	local caps='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FSETID","CAP_FOWNER","CAP_MKNOD","CAP_NET_RAW","CAP_SETGID","CAP_SETUID","CAP_SETFCAP","CAP_SETPCAP","CAP_NET_BIND_SERVICE","CAP_SYS_CHROOT","CAP_KILL","CAP_AUDIT_WRITE"]'
	local engine=$TEST_DIR/var/lib/docker/containers/abc
	mkdir -p "$engine"
	printf '127.0.0.1 localhost\n' >"$engine/hosts"
	printf 'nameserver 127.0.0.53\n' >"$engine/resolv.conf"
	touch "$BUNDLE/rootfs/etc/hosts" "$BUNDLE/rootfs/etc/resolv.conf"
	touch "$TEST_DIR/netns"
	unshare --net="$TEST_DIR/netns" true
	cfg_set '
		.process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
		| .process.noNewPrivileges = false | del(.linux.seccomp)
		| .linux.namespaces = [{type: "mount"}, {type: "network", path: $n}, {type: "uts"}, {type: "pid"}, {type: "ipc"}, {type: "cgroup"}]
		| .mounts = [
			{destination: "/proc", type: "proc", source: "proc", options: ["nosuid", "noexec", "nodev"]},
			{destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "strictatime", "mode=755", "size=65536k"]},
			{destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
			{destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"]},
			{destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"]},
			{destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "noexec", "nodev", "mode=1777", "size=67108864"]},
			{destination: "/etc/hosts", type: "bind", source: ($e + "/hosts"), options: ["rbind", "rprivate"]},
			{destination: "/etc/resolv.conf", type: "bind", source: ($e + "/resolv.conf"), options: ["rbind", "rprivate"]}]
		| .linux.resources.devices = [{allow: false, access: "rwm"}, {allow: true, type: "c", major: 1, minor: 3, access: "rwm"}]' \
		--argjson caps "$caps" --arg e "$engine" --arg n "$TEST_DIR/netns"
	cfg_args sh -c 'cat /etc/hosts; stat -c "%u:%g" /etc/hosts; grep CapEff /proc/self/status; chown 1000 /tmp && echo chowned; sleep 60'
	moat_run_detached
	retry grep -q chowned "$(out_file)"
	run cat "$(out_file)"
	assert_line --index 0 '127.0.0.1 localhost'
	assert_line --index 1 '0:0'
	assert_line --index 2 "$(printf 'CapEff:\t00000000a80425fb')"
	assert_line --index 3 chowned
	# on the host, the container's root is an unprivileged uid from the pool
	local host
	host=$(awk '/^Uid:/ { print $2 }' "/proc/$(host_pid)/status")
	((host >= 0x70000000)) || fail "container root is host uid $host"
	run state_of
	assert_equal "$(jq -r '.annotations["moat.policy.default-seccomp"]' <<<"$output")" "added moat's default profile"
	assert_equal "$(jq -r '.annotations["moat.policy.no-new-privileges"]' <<<"$output")" "set process.noNewPrivileges to true"
	umount "$TEST_DIR/netns"
}

# Podman, containerd and Docker hand the runtime an overlay mount as the rootfs, and an overlay
# cannot be idmapped. moat makes a new overlay of the same layers, each one idmapped.
# check_overlay_remade: the container's root is an overlay remade from the engine's.
check_overlay_remade() {
	local ov=$TEST_DIR/overlay
	mkdir -p "$ov/lower" "$ov/layer/diff" "$ov/layer/work" "$ov/merged"
	cp -a "$BUNDLE/rootfs/." "$ov/lower/"
	mkdir "$ov/lower/owned"
	chown 1000:1000 "$ov/lower/owned"
	mount -t overlay overlay -o "lowerdir=$ov/lower,upperdir=$ov/layer/diff,workdir=$ov/layer/work" "$ov/merged"
	cfg_set '.root.path = $r' --arg r "$ov/merged"
	run_sh 'stat -c "%u:%g %n" /bin/busybox /owned; echo x >/etc/written; mkdir /made; stat -c "%u:%g" /etc/written; cat /proc/self/uid_map'
	local merged_after
	merged_after=$(findmnt -n -o FSTYPE "$ov/merged")
	umount "$ov/merged"
	assert_success
	assert_line --index 0 '0:0 /bin/busybox'
	assert_line --index 1 '1000:1000 /owned'
	assert_line --index 2 0:0
	assert_line --index 3 --regexp '^ +0 +[1-9][0-9]+ +65536$'
	# the writes went to the engine's upper layer with the image's ids
	assert_equal "$(stat -c '%u:%g' "$ov/layer/diff/etc/written")" 0:0
	assert_equal "$(stat -c '%u:%g' "$ov/layer/diff/made")" 0:0
	# the lower layer is untouched, the engine's overlay still mounted; moat's workdir
	# is inside the engine's
	[[ ! -e $ov/lower/etc/written ]] || fail "the write reached the lower layer"
	assert_equal "$merged_after" overlay
	[[ -d $ov/layer/work/moat ]] || fail "no moat workdir in the engine's workdir"
}

@test "auto-userns: an engine's overlay rootfs is made again on idmapped layers; the engine's mount is left as it was" {
	check_overlay_remade
}

# Before Linux 6.15 overlayfs takes its layers only by path: a child of moat's attaches the
# idmapped layers in a mount namespace of its own (the test host's 6.1 takes this path for real).
@test "auto-userns: an engine's overlay is made again with its layers attached by path, as on kernels before 6.15" {
	export MOAT_TEST_FORCE_OVERLAY_PATHS=1
	check_overlay_remade
	# the child's namespace and its layer mounts are gone with it
	run findmnt -rn -o TARGET
	refute_line --regexp '^/tmp/(l[0-9]+|up)$'
}

# With many layers Podman and Docker mount from their driver's directory with relative paths
# (lowerdir=l/<short id>:..., upperdir=<id>/diff), and mountinfo shows them so.
@test "auto-userns: an overlay mounted with relative layer paths, as Podman and Docker do for many layers" {
	local home=$TEST_DIR/storage/overlay
	mkdir -p "$home/layer1/diff" "$home/l" "$home/cid/diff" "$home/cid/work" "$home/cid/merged"
	cp -a "$BUNDLE/rootfs/." "$home/layer1/diff/"
	ln -s ../layer1/diff "$home/l/SHORTID"
	(cd "$home" && mount -t overlay overlay -o lowerdir=l/SHORTID,upperdir=cid/diff,workdir=cid/work cid/merged)
	local shown
	shown=$(grep -F " $home/cid/merged " /proc/self/mountinfo)
	cfg_set '.root.path = $r' --arg r "$home/cid/merged"
	run_sh 'stat -c "%u:%g" /bin/busybox; echo x >/written'
	umount "$home/cid/merged"
	[[ $shown == *lowerdir=l/SHORTID* ]] || fail "mountinfo shows the paths otherwise: $shown"
	assert_success
	assert_output 0:0
	assert_equal "$(stat -c '%u:%g' "$home/cid/diff/written")" 0:0
}

@test "auto-userns: an overlay rootfs with a mount inside it is refused, naming the mount" {
	local ov=$TEST_DIR/overlay
	mkdir -p "$ov/lower" "$ov/layer/diff" "$ov/layer/work" "$ov/merged"
	cp -a "$BUNDLE/rootfs/." "$ov/lower/"
	mount -t overlay overlay -o "lowerdir=$ov/lower,upperdir=$ov/layer/diff,workdir=$ov/layer/work" "$ov/merged"
	mount -t tmpfs tmpfs "$ov/merged/tmp"
	cfg_set '.root.path = $r' --arg r "$ov/merged"
	cfg_args true
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	umount "$ov/merged/tmp" "$ov/merged"
	assert_moat_error "^moat: auto-userns: root\\.path: overlay '$ov/merged': '$ov/merged/tmp' is mounted inside it: an overlay rootfs with submounts is not supported; moat does not run the container without its user namespace"
	assert_no_residue "$CID"
}

# Engines on cgroup v1 keep the host's cgroup namespace and mount /sys/fs/cgroup; in a user
# namespace cgroups can be mounted only in a cgroup namespace of the container's own.
@test "auto-userns: a cgroup mount without a cgroup namespace gets one, and the state says so" {
	cfg_set '.linux.namespaces |= map(select(.type != "cgroup"))
		| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["ro", "nosuid", "noexec", "nodev"]}]'
	cfg_args sleep 60
	moat_create
	moat start "$CID"
	run_moat exec "$CID" sh -c 'grep -c ":/$" /proc/self/cgroup; ls /sys/fs/cgroup | grep -c .'
	assert_success
	assert_line --index 0 "$(grep -c . /proc/self/cgroup)"
	refute_line --index 1 0
	[[ $(readlink "/proc/$(host_pid "$CID")/ns/cgroup") != "$(readlink /proc/self/ns/cgroup)" ]] || fail "the container is in the host's cgroup namespace"
	run state_of
	assert_output --partial 'rootfs and bind mounts idmapped; cgroup namespace added (a cgroup mount in a user namespace needs one)'
}

# Docker asks that every group may open ICMP sockets: "0 2147483647". The kernel takes only
# the groups a user namespace maps.
@test "auto-userns: net.ipv4.ping_group_range over every group becomes the ids the namespace maps" {
	cfg_set '.linux.sysctl = {"net.ipv4.ping_group_range": "0 2147483647"}'
	cfg_args sleep 60
	moat_create
	moat start "$CID"
	run_moat exec "$CID" cat /proc/sys/net/ipv4/ping_group_range
	assert_success
	assert_output --regexp '^0[[:space:]]+65535$'
	run state_of
	assert_output --partial 'rootfs and bind mounts idmapped; linux.sysctl net.ipv4.ping_group_range set to 0 65535 (the groups the namespace maps)'
}

# A pod: its sandbox (pause, infra) container has moat's automatic user namespace, and the
# other containers join its IPC, UTS and network namespaces. They join its user namespace
# too, with its ids: one made for each would not be allowed into namespaces the sandbox's
# owns (mqueue, sysctls), and a pod shares its IPC objects.
@test "auto-userns: a container joining a sandbox's namespaces joins its user namespace too" {
	cfg_args sh -c 'echo sandbox >/dev/shm/from-sandbox 2>/dev/null; sleep 60'
	moat_create
	moat start "$CID"
	local sandbox=$CID sandbox_pid
	sandbox_pid=$(host_pid "$sandbox")
	make_bundle "$TEST_DIR/member"
	cfg_set '.linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings, .hostname) | .root.readonly = false
		| .linux.namespaces |= map(if .type == "ipc" or .type == "uts" or .type == "network" then .path = "/proc/\($p)/ns/" + (if .type == "network" then "net" else .type end) else . end)
		| .mounts += [{destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"]}]' \
		--arg p "$sandbox_pid"
	cfg_args sleep 60
	CID=$sandbox-member
	moat_create
	local member_pid
	member_pid=$(host_pid "$CID")
	assert_equal "$(readlink "/proc/$member_pid/ns/user")" "$(readlink "/proc/$sandbox_pid/ns/user")"
	assert_equal "$(readlink "/proc/$member_pid/ns/ipc")" "$(readlink "/proc/$sandbox_pid/ns/ipc")"
	run state_of
	assert_output --partial "user namespace joined: the sandbox's, /proc/$sandbox_pid/ns/user, rootfs and bind mounts idmapped"
	# no range of its own: only the sandbox's loan names a state directory
	assert_equal "$(loans_of "$CID")" ""
	moat delete --force "$CID"
	CID=$sandbox
}

# podman run --uidmap on cgroup v1: the config's own user namespace, a cgroup mount, no cgroup
# namespace. It keeps its mappings and gets the cgroup namespace it needs.
@test "auto-userns: a config with its own user namespace and a cgroup mount gets a cgroup namespace, nothing else" {
	make_bundle "$TEST_DIR/own"
	cfg_set '.linux.namespaces |= map(select(.type != "cgroup"))
		| .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["ro", "nosuid", "noexec", "nodev"]}]'
	cfg_args sleep 60
	moat_create
	assert_equal "$(uid_map_of "$CID")" "0 100000 65536"
	[[ $(readlink "/proc/$(host_pid "$CID")/ns/cgroup") != "$(readlink /proc/self/ns/cgroup)" ]] || fail "the container is in the host's cgroup namespace"
	run state_of
	assert_equal "$(jq -r '.annotations["moat.policy.auto-userns"]' <<<"$output")" \
		"cgroup namespace added (a cgroup mount in a user namespace needs one)"
	assert_equal "$(loans_of "$CID")" ""
}
