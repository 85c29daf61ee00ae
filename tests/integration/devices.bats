#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The default /dev: the standard devices and links, working, and nothing
# else from the host.

load helpers

@test "the default character devices exist with the right numbers" {
	make_bundle
	run_sh 'for d in null zero full random urandom tty; do
		stat -c "%n %F %t:%T" /dev/$d; done'
	assert_success
	assert_line '/dev/null character special file 1:3'
	assert_line '/dev/zero character special file 1:5'
	assert_line '/dev/full character special file 1:7'
	assert_line '/dev/random character special file 1:8'
	assert_line '/dev/urandom character special file 1:9'
	assert_line '/dev/tty character special file 5:0'
}

@test "/dev/ptmx and /dev/pts are there, /dev/pts is a devpts" {
	make_bundle
	run_sh 'test -e /dev/ptmx && echo ptmx-ok;
		awk '"'"'$5 == "/dev/pts" { sub(/.* - /, ""); print $1 }'"'"' /proc/self/mountinfo'
	assert_success
	assert_line --index 0 ptmx-ok
	assert_line --index 1 devpts
}

@test "/dev/shm is a tmpfs and /dev/mqueue an mqueue" {
	make_bundle
	run_sh 'for m in /dev/shm /dev/mqueue; do
		awk -v m="$m" '"'"'$5 == m { sub(/.* - /, ""); print m, $1 }'"'"' /proc/self/mountinfo; done'
	assert_success
	assert_line '/dev/shm tmpfs'
	assert_line '/dev/mqueue mqueue'
}

@test "/dev/fd, stdin, stdout and stderr link into /proc/self/fd" {
	make_bundle
	run_sh 'for l in fd stdin stdout stderr; do echo "$l -> $(readlink /dev/$l)"; done'
	assert_success
	assert_line 'fd -> /proc/self/fd'
	assert_line 'stdin -> /proc/self/fd/0'
	assert_line 'stdout -> /proc/self/fd/1'
	assert_line 'stderr -> /proc/self/fd/2'
}

@test "the default devices work" {
	make_bundle
	run_sh 'echo gone > /dev/null && echo null-ok;
		head -c 16 /dev/zero | od -An -tx1 | tr -d " \n"; echo;
		head -c 16 /dev/urandom | wc -c;
		head -c 16 /dev/random | wc -c;
		echo x > /dev/full 2>/dev/null && echo full-accepted || echo full-refused'
	assert_success
	assert_line --index 0 null-ok
	assert_line --index 1 00000000000000000000000000000000
	assert_line --index 2 16
	assert_line --index 3 16
	assert_line --index 4 full-refused
}

@test "/dev/shm is writable" {
	make_bundle
	run_sh 'echo shared > /dev/shm/x && cat /dev/shm/x'
	assert_success
	assert_output shared
}

@test "no block devices and no other host devices appear in /dev" {
	make_bundle
	run_sh 'find /dev -xdev \( -type b -o -type c \) -exec stat -c "%n %t:%T" {} +;
		find /dev -type b | wc -l'
	assert_success
	# every character device is one of the standard ones (or a pty)
	while IFS= read -r line; do
		case $line in
		'/dev/null 1:3' | '/dev/zero 1:5' | '/dev/full 1:7' | '/dev/random 1:8' | \
			'/dev/urandom 1:9' | '/dev/tty 5:0' | '/dev/ptmx 5:2' | '/dev/console '*) ;;
		0) ;; # the block device count
		*) fail "unexpected device in the container: $line" ;;
		esac
	done <<<"$output"
	assert_line --index "$((${#lines[@]} - 1))" 0
}

@test "host device nodes such as /dev/mem, /dev/kmsg and disks are absent" {
	make_bundle
	run_sh 'for d in mem kmem port kmsg sda vda nvme0 loop0 fuse net/tun; do
		test -e /dev/$d && echo "present: $d"; done; echo checked'
	assert_success
	assert_output checked
}

@test "reading a host device node copied into the rootfs is refused" {
	make_bundle
	# a device node planted in the image itself: the device cgroup and the
	# nodev handling must keep it unusable
	mknod "$BUNDLE/rootfs/root/mem" c 1 1
	chmod 0666 "$BUNDLE/rootfs/root/mem"
	run_sh 'head -c 1 /root/mem > /dev/null 2>&1 && echo readable || echo refused'
	assert_success
	assert_output refused
}

@test "a container with /dev/null as its stdio leaves the host's /dev/null alone" {
	before=$(stat -c '%u:%g %a' /dev/null)
	make_bundle
	cfg_args true
	moat run --bundle "$BUNDLE" "$CID" </dev/null >/dev/null 2>/dev/null
	assert_equal "$(stat -c '%u:%g %a' /dev/null)" "$before"
}

@test "a detached container with /dev/null as its stdio leaves the host's /dev/null alone" {
	before=$(stat -c '%u:%g %a' /dev/null)
	make_bundle
	cfg_args sleep 100000
	moat run --detach --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID" \
		</dev/null >/dev/null 2>/dev/null 3>&-
	wait_for_status running
	assert_equal "$(stat -c '%u:%g %a' /dev/null)" "$before"
}

# docker run --device /dev/null:/dev/mynull: in a user namespace a device is bound from the
# host's node, and the host has none at the renamed path.
@test "a device the config renames is bound, in a user namespace, from the host's node of that number" {
	make_bundle
	cfg_set '.linux.devices = [{"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3}]
		| .linux.resources.devices += [{"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]'
	run_sh 'stat -c "%F %t:%T" /dev/mynull && echo data >/dev/mynull && echo written'
	assert_success
	assert_line --index 0 'character special file 1:3'
	assert_line --index 1 written
	[[ ! -e /dev/mynull ]] || fail "a node appeared on the host"
}

@test "a device of a number the host has no node of is refused in a user namespace, naming it" {
	make_bundle
	cfg_set '.linux.devices = [{"path": "/dev/nowhere", "type": "c", "major": 1, "minor": 250}]'
	cfg_args true
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_moat_error "linux\\.devices\\[0\\] \\(/dev/nowhere\\): the host has no node of the c 1:250 device, at '/dev/nowhere' or in /dev, to bind in a user namespace"
	assert_no_residue "$CID"
}

# Issue 14 (4): in a user namespace the host's nodes are bound, each a mount of its own; it
# carries nosuid and noexec, as crun binds them, with the new mount API and with mount(2).
@test "device nodes bound in a user namespace are mounted nosuid and noexec" {
	local api line
	for api in new-api mount-syscall; do
		unset MOAT_TEST_FORCE_MOUNT_FALLBACK
		[[ $api == mount-syscall ]] && export MOAT_TEST_FORCE_MOUNT_FALLBACK=1
		make_bundle "$TEST_DIR/bundle-$api"
		cfg_set '.linux.devices = [{"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3}]'
		run_sh 'awk '"'"'$5 ~ /^\/dev\/(null|zero|full|random|urandom|tty|mynull)$/ { print $5, $6 }'"'"' /proc/self/mountinfo'
		assert_success
		assert_equal "${#lines[@]}" 7
		for line in "${lines[@]}"; do
			[[ $line =~ ^/dev/[a-z]+\ (.*,)?nosuid(,.*)?$ && $line =~ [\ ,]noexec(,|$) ]] ||
				fail "$api: not nosuid,noexec: $line"
		done
	done
}

# Issue 14 (19): linux.devices[].path "/dev/mynull/" is /dev/mynull, as runc takes it (its
# secure join cleans the path): a device node is never a directory. Repeated slashes go too,
# and the cleaned path is what replaces a default device. In a user namespace (the host's
# node bound) and rootful (mknod).
@test "a linux.devices path with a trailing slash is the device at that path" {
	local mode
	for mode in userns rootful; do
		make_bundle "$TEST_DIR/bundle-$mode"
		if [[ $mode == rootful ]]; then
			cfg_set '.linux.namespaces |= map(select(.type != "user"))
				| del(.linux.uidMappings, .linux.gidMappings)'
			use_policy_without auto-userns
		fi
		cfg_set '.linux.devices = [
			{"path": "/dev/mynull/", "type": "c", "major": 1, "minor": 3},
			{"path": "//dev//zero//", "type": "c", "major": 1, "minor": 5, "fileMode": 384}]
			| .linux.resources.devices += [{"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]'
		run_sh 'stat -c "%n %F %t:%T" /dev/mynull /dev/zero && echo data >/dev/mynull && echo written'
		assert_success
		assert_line --index 0 '/dev/mynull character special file 1:3'
		assert_line --index 1 '/dev/zero character special file 1:5'
		assert_line --index 2 written
		if [[ $mode == rootful ]]; then
			# the config's /dev/zero replaced the default one: its mode, 0600
			run_sh 'stat -c %a /dev/zero'
			assert_output 600
		fi
	done
}

@test "a linux.devices path that names the root is refused, naming the field" {
	make_bundle
	cfg_set '.linux.devices = [{"path": "//", "type": "c", "major": 1, "minor": 3}]'
	cfg_args true
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_moat_error "linux\\.devices\\[0\\]\\.path: '//' names the container root, not a device"
	assert_no_residue "$CID"
}

# --- linux.devices and the device cgroup (issue 14 item 6) ---

# foo_bundle [RULES]: a rootful bundle (no user namespace, so moat makes the node itself)
# listing char 10:666, a misc minor no driver has, as /dev/foo; the device cgroup rules are
# RULES (default: deny every device, as engines send). An open the device cgroup (v1) or the
# eBPF filter (v2) lets through fails in the kernel for want of a driver ("No such device");
# one it refuses fails with EPERM.
foo_bundle() {
	local rules=${1:-'[{"allow": false, "access": "rwm"}]'}
	make_bundle
	use_policy_without auto-userns
	# shellcheck disable=SC2016 # $rules is jq's
	cfg_set '.linux.namespaces |= map(select(.type != "user"))
		| del(.linux.uidMappings, .linux.gidMappings)
		| .linux.devices = [{"path": "/dev/foo", "type": "c", "major": 10, "minor": 666}]
		| .linux.resources.devices = $rules' --argjson rules "$rules"
}

# listed_foo [RULES]: foo_bundle on a host with the v1 devices hierarchy, which is mounted
# at /sys/fs/cgroup, where the container sees its own cgroup's devices.list.
listed_foo() {
	if [[ ! -d /sys/fs/cgroup/devices ]]; then
		skip "no cgroup v1 devices hierarchy (cgroup v2's filter has its own test)"
	fi
	foo_bundle "$@"
	cfg_set '.mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
		options: ["nosuid", "noexec", "nodev", "ro"]}]'
}

# Without the implicit allow, the deny-all refuses moat's own mknod of the node (EPERM) and
# the container is never made. With it, the node is made, devices.list carries the rule, and
# an open passes the device cgroup and fails in the kernel for want of a driver (ENODEV, or
# ENXIO: "No such device..."), not with EPERM.
@test "a device linux.devices lists is allowed rwm by the device cgroup after a deny-all" {
	listed_foo
	# shellcheck disable=SC2016 # expanded by the container's shell
	run_sh 'grep -x "c 10:666 rwm" /sys/fs/cgroup/devices/devices.list
		stat -c "%F %t:%T" /dev/foo
		cat /dev/foo 2>&1; echo "read: $?"
		{ echo x >/dev/foo; } 2>&1; echo "write: $?"
		echo "wider: $(grep -c -E "^(a|c 10:\*|c \*:\*) " /sys/fs/cgroup/devices/devices.list)"'
	assert_success
	assert_line --index 0 'c 10:666 rwm'
	assert_line --index 1 'character special file a:29a'
	assert_line --partial "can't open '/dev/foo': No such device"
	refute_output --partial 'Operation not permitted'
	assert_line 'read: 1'
	assert_line 'write: 1'
	# and nothing wider than the device itself
	assert_line 'wider: 0'
}

# The implicit allow comes after the config's rules; a rule naming this very device (its
# type, major and minor) keeps what it denies. runc adds no rule at all for linux.devices,
# so there every access is refused after a deny-all.
@test "a listed device keeps what a rule naming that very device denies" {
	listed_foo '[{"allow": false, "access": "rwm"},
		{"allow": false, "type": "c", "major": 10, "minor": 666, "access": "w"}]'
	run_sh 'grep "^c 10:666 " /sys/fs/cgroup/devices/devices.list
		cat /dev/foo 2>&1; { echo x >/dev/foo; } 2>&1; echo done'
	assert_success
	assert_line --index 0 'c 10:666 rm'
	assert_line --partial "can't open '/dev/foo': No such device"
	assert_line --regexp "/dev/foo.*Operation not permitted|can't create /dev/foo: Operation not permitted"
	assert_line 'done'
}

# On cgroup v2 the rules are an eBPF program attached to the container's cgroup; nothing in
# the cgroup lists them, so what it does is seen only by trying.
@test "cgroup v2: the eBPF device filter lets a listed device through a deny-all and refuses what a rule denies" {
	cgroup_v2 || skip "the host is not cgroup v2 (the v1 controller's tests are above)"
	foo_bundle '[{"allow": false, "access": "rwm"},
		{"allow": false, "type": "c", "major": 10, "minor": 666, "access": "w"}]'
	run_sh 'cat /dev/foo 2>&1; { echo x >/dev/foo; } 2>&1
		echo gone >/dev/null && echo null-ok; head -c 4 /dev/zero | wc -c'
	assert_success
	assert_line --partial "can't open '/dev/foo': No such device"
	assert_line --regexp "/dev/foo.*Operation not permitted|can't create /dev/foo: Operation not permitted"
	assert_line null-ok
	assert_line 4
}

# moat update replaces the rules: v1 denies everything before it writes them again, v2
# attaches the new program before it detaches the old one (a device passes only what every
# attached program allows). A write the rules deny, tried in a loop while the rules are
# replaced again and again, must never reach the driver.
@test "an update of the device rules never lets a denied write through, not even mid-update" {
	local rules='[{"allow": false, "access": "rwm"},
		{"allow": false, "type": "c", "major": 10, "minor": 666, "access": "w"}]' i
	foo_bundle "$rules"
	# the loop ends on its own (a KILL could cut a message in two): /stop appears in the root
	cfg_sh 'while [ ! -e /stop ]; do { echo x >/dev/foo; } 2>&1; done; echo stopped'
	moat_run_detached
	jq -n --argjson d "$rules" '{devices: $d}' >"$TEST_DIR/resources.json"
	for ((i = 0; i < 40; i++)); do
		moat update --resources "$TEST_DIR/resources.json" "$CID"
	done
	touch "$BUNDLE/rootfs/stop"
	wait_for_status stopped
	run grep -c 'Operation not permitted' "$(out_file)"
	assert_success
	((output > 0)) || fail "the loop made no write"
	run grep -v -e 'Operation not permitted' -e '^stopped$' "$(out_file)"
	assert_output ''
}
