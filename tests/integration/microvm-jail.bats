#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The VMM's jail against a hostile workload (src/libmoat/vm/vm-jail.h). The workload controls
# its rootfs and its volumes; nothing it puts there may reach the jail's own files (QEMU, its
# libraries, the guest kernel and initramfs, /dev, the state directory). The VMM is always
# the host's QEMU, the supervisor and QEMU run under a seccomp filter the VMM cannot drop, and
# a read-only root or bind holds on the host side, against a guest kernel that ignores its
# own mount flags too.
#
# Class: a mount destination resolved in the wrong root (the jail's instead of the
# container's), which let a symlink in the image or a volume replace the VMM with a program
# of the workload's, run on the host kernel with no seccomp filter.

load helpers

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
	use_policy_without deny-host-mounts
	local fake
	fake=$(build_prog fake-vmm) || skip "cc -static is not available: cannot build the probes"
	# what an attacker binds where the jail would look for QEMU
	VOL=$TEST_DIR/vol
	mkdir -p "$VOL" "$BUNDLE/rootfs/srv"
	cp "$fake" "$VOL/qemu-system-x86_64"
	chmod 755 "$VOL"
}

# add_bind SRC DEST [OPTION...]: an rbind of host directory SRC at DEST.
add_bind() {
	local src=$1 dest=$2 opts
	shift 2
	opts=$(jq -cn '["rbind"] + $ARGS.positional' --args "$@")
	cfg_set '.mounts += [{destination: $d, type: "bind", source: $s, options: $o}]' \
		--arg d "$dest" --arg s "$src" --argjson o "$opts"
}

# fs_root PATH: PATH as a mountinfo root field names it (relative to its filesystem's mount).
fs_root() {
	local target
	target=$(findmnt -n -o TARGET -T "$1")
	if [[ $target == / ]]; then
		echo "$1"
	else
		echo "${1#"$target"}"
	fi
}

# bound_at SRC: where the container's init (the supervisor, in its jail) has mounts of host
# directory SRC, as it sees them.
bound_at() {
	local pid
	pid=$(state_of | jq -r .pid)
	awk -v src="$(fs_root "$1")" '$4 == src { print $5 }' "/proc/$pid/mountinfo"
}

# assert_bound_inside SRC: SRC is mounted in the jail, and only under /rootfs.
assert_bound_inside() {
	local points p
	points=$(bound_at "$1")
	[[ -n $points ]] || fail "$1 is mounted nowhere in the jail"
	for p in $points; do
		[[ $p == /rootfs || $p == /rootfs/* ]] ||
			fail "$1 is mounted on the jail's $p, outside the container's rootfs"
	done
}

# try_create: create $CID from $BUNDLE. Made, its bind of $VOL must be inside the rootfs, and
# MADE counts it; refused, the refusal is one line, kept in REFUSAL. Then the container is
# deleted, leaving nothing behind.
try_create() {
	REFUSAL=
	run_moat create --bundle "$BUNDLE" "$CID"
	if ((status == 0)); then
		assert_bound_inside "$VOL"
		MADE=$((MADE + 1))
	else
		assert_equal "${#stderr_lines[@]}" 1
		REFUSAL=$stderr
	fi
	moat delete --force "$CID" 2>/dev/null || true
	assert_no_residue "$CID"
}

# start_guest SCRIPT: run SCRIPT in a detached microVM, then wait until the guest wrote
# /srv/up (it then sleeps until the teardown deletes it).
start_guest() {
	cfg_sh "$1; echo up >/srv/up; exec sleep 600"
	moat_run_detached
	wait_for_file "$BUNDLE/rootfs/srv/up"
}

# vmm_pid: QEMU, the supervisor's only child while nothing is exec'd.
vmm_pid() {
	local sup
	sup=$(state_of | jq -r .pid)
	tr -d ' ' <"/proc/$sup/task/$sup/children"
}

# assert_vmm_is_hosts_qemu: the running VMM executes the host's QEMU (same file), and
# nothing the workload planted ran.
assert_vmm_is_hosts_qemu() {
	local pid
	pid=$(vmm_pid)
	[[ -n $pid ]] || fail "no VMM process under the supervisor"
	assert_equal "$(stat -L -c %d:%i "/proc/$pid/exe")" \
		"$(stat -L -c %d:%i /usr/bin/qemu-system-x86_64)"
	[[ ! -e $BUNDLE/rootfs/fake-vmm-ran ]] ||
		fail "the workload's VMM ran: $(cat "$BUNDLE/rootfs/fake-vmm-ran")"
}

@test "microvm jail: an image symlink over a bind destination keeps the bind in the rootfs; the VMM is the host's QEMU" {
	ln -s /usr/bin "$BUNDLE/rootfs/data"
	add_bind "$VOL" /data ro
	start_guest 'ls /data'
	assert_bound_inside "$VOL"
	assert_equal "$(bound_at "$VOL")" /rootfs/usr/bin
	assert_vmm_is_hosts_qemu
	# the guest sees the bind where the symlink leads, as a container would
	run cat "$(out_file)"
	assert_line qemu-system-x86_64
}

@test "microvm jail: a symlink a volume holds, under a nested bind, stays in the rootfs" {
	# written by the workload into its volume in an earlier run
	mkdir "$TEST_DIR/vol1"
	ln -s /usr/bin "$TEST_DIR/vol1/x"
	add_bind "$TEST_DIR/vol1" /vol
	add_bind "$VOL" /vol/x ro
	start_guest 'ls /vol/x'
	assert_bound_inside "$VOL"
	assert_equal "$(bound_at "$VOL")" /rootfs/usr/bin
	assert_vmm_is_hosts_qemu
	run cat "$(out_file)"
	assert_line qemu-system-x86_64
}

@test "microvm jail: '..' in a bind destination stays in the rootfs" {
	mkdir "$TEST_DIR/vol2"
	add_bind "$VOL" /../usr/bin ro
	add_bind "$TEST_DIR/vol2" /rootfs/../../usr/lib ro
	moat_create
	assert_bound_inside "$VOL"
	assert_bound_inside "$TEST_DIR/vol2"
	assert_equal "$(bound_at "$VOL")" /rootfs/usr/bin
	assert_equal "$(bound_at "$TEST_DIR/vol2")" /rootfs/usr/lib
}

@test "microvm jail: a symlinked destination aimed at each of the jail's own paths stays in the rootfs or fails create" {
	local targets=(/usr /usr/bin /usr/lib /usr/lib/x86_64-linux-gnu /lib64 /etc
		/etc/ld.so.cache /moat-vm /moat-vm/kernel /moat-vm/initramfs /dev /dev/pts /proc
		/tmp /rootfs /.. "$MOAT_ROOT/$CID" "$MOAT_ROOT/$CID/jail")
	local i base
	MADE=0
	base=$(cat "$CONFIG")
	for i in "${!targets[@]}"; do
		echo "$base" >"$CONFIG"
		ln -s "${targets[$i]}" "$BUNDLE/rootfs/l$i"
		add_bind "$VOL" "/l$i" ro
		try_create
		# refused as container mode refuses it (a bind over /proc)
		[[ $REFUSAL == '' || $REFUSAL == *"(/l$i)"* ]] ||
			fail "the refusal does not name the mount: $REFUSAL"
	done
	((MADE >= ${#targets[@]} - 1)) || fail "only $MADE of ${#targets[@]} creates made the bind"
	# and a guest boots, its VMM the host's QEMU, with the jail's /usr and /lib64 aimed at
	echo "$base" >"$CONFIG"
	add_bind "$VOL" /l0 ro
	add_bind "$VOL" /l4 ro
	start_guest true
	assert_vmm_is_hosts_qemu
}

@test "microvm jail: the supervisor and QEMU run under a filter that denies user namespaces and io_uring" {
	local probe sup vmm
	probe=$(build_prog seccomp-probe)
	start_guest true
	sup=$(state_of | jq -r .pid)
	vmm=$(vmm_pid)
	[[ -n $vmm ]] || fail "no VMM process under the supervisor"
	for pid in "$sup" "$vmm"; do
		run grep -x 'Seccomp:[[:space:]]*2' "/proc/$pid/status"
		assert_success
		grep -qx 'NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" || fail "$pid can gain privileges"
		run "$probe" "$pid"
		echo "$output" >&3
		assert_success
		refute_line --regexp '^(unshare|io_uring_setup|keyctl|bpf|perf_event_open).*: allowed$'
		refute_line --partial 'could not load'
		assert_line 'getppid: allowed'
	done
	# the supervisor's filter is moat's alone (QEMU stacks its -sandbox filter on top of it)
	run grep -x 'Seccomp_filters:[[:space:]]*1' "/proc/$sup/status"
	assert_success
}

@test "microvm jail: the supervisor is not dumpable" {
	local sup
	start_guest true
	sup=$(state_of | jq -r .pid)
	# a non-dumpable process's /proc files belong to root, whatever its uid
	[[ $(stat -c %u "/proc/$sup/environ") == 0 ]] || fail "the supervisor is dumpable"
	[[ $(awk '/^Uid:/ { print $2 }' "/proc/$sup/status") != 0 ]] ||
		fail "the supervisor runs as host root"
}

@test "microvm jail: root.readonly and ro binds hold on the host against a guest that remounts them" {
	# CAP_SYS_ADMIN in the guest and no filter stand in for a compromised guest kernel: it
	# lifts its own read-only flags, and the host's must still refuse the writes.
	use_policy_without deny-host-mounts capability-ceiling default-seccomp
	mkdir "$TEST_DIR/ro"
	chmod 777 "$TEST_DIR/ro"
	add_bind "$TEST_DIR/ro" /ro ro
	cfg_set '.root.readonly = true | del(.linux.seccomp)
		| .process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	# (the ro bind is the host's mount, a plain directory of the share in the guest)
	run_sh 'mount -o remount,rw / && echo remounted-root
		echo x >/written && echo wrote-root
		echo y >/ro/written && echo wrote-ro
		true'
	assert_success
	assert_line remounted-root
	refute_line wrote-root
	refute_line wrote-ro
	[[ ! -e $BUNDLE/rootfs/written ]] || fail "the guest wrote into the read-only rootfs"
	[[ ! -e $TEST_DIR/ro/written ]] || fail "the guest wrote into the read-only bind"
}

@test "microvm jail: the share of a read-only root is exported read-only" {
	cfg_set '.root.readonly = true'
	cfg_sh 'exec sleep 600'
	moat_create_started
	retry test -n "$(vmm_pid)"
	run tr '\0' ' ' <"/proc/$(vmm_pid)/cmdline"
	assert_output --partial ',readonly=on'
}

@test "microvm jail: a bind under a mount the guest makes is seen on top of it, as in a container" {
	# the config's tmpfs on /tmp, then a bind inside it; a bind under the agent's /dev (as
	# Docker binds /dev/shm); one that a symlink leads into /tmp
	echo marker >"$VOL/marker"
	ln -s /tmp/via-link "$BUNDLE/rootfs/link"
	mkdir "$TEST_DIR/shm"
	echo shm >"$TEST_DIR/shm/marker"
	chmod -R a+rX "$TEST_DIR/shm"
	cfg_set '.mounts |= map(select(.destination != "/dev/shm"))'
	add_bind "$VOL" /tmp/x ro
	add_bind "$TEST_DIR/shm" /dev/shm
	add_bind "$VOL" /link ro
	run_sh 'cat /tmp/x/marker /dev/shm/marker /tmp/via-link/marker'
	assert_success
	assert_output "$(printf 'marker\nshm\nmarker')"
}

@test "microvm jail: a bind destination swapped with a symlink during create is made in the rootfs or fails create" {
	local swap swapper i
	MADE=0
	swap=$(build_prog rename-swap)
	# the symlink leads to a path the jail has too (/tmp), and where the guest mounts a tmpfs
	mkdir -p "$BUNDLE/rootfs/d"
	ln -s /tmp "$BUNDLE/rootfs/l"
	echo marker >"$VOL/marker"
	add_bind "$VOL" /d ro
	"$swap" "$BUNDLE/rootfs" d l &
	swapper=$!
	echo "$swapper" >"$TEST_DIR/swapper.pid" # the teardown stops it if this test fails
	for ((i = 0; i < 60; i++)); do
		try_create
	done
	kill "$swapper"
	wait "$swapper" || true
	echo "# $MADE of 60 creates made the bind" >&3
	((MADE > 0)) || fail "no create succeeded"
	# and where it was made, the guest sees it: at /d, or where /d led (/tmp, over the
	# guest's tmpfs), or under the name the directory was swapped to
	run_sh 'cat /d/marker /tmp/marker /l/marker 2>/dev/null; true'
	assert_success
	assert_line marker
}

@test "microvm jail: moat.vm.vmm-user runs the VMM as those container ids, and a bad one is refused" {
	cfg_set '.annotations["moat.vm.vmm-user"] = "root"'
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_equal "$status" 1
	assert_equal "$stderr" "moat: annotations.moat.vm.vmm-user: 'root' is not UID:GID (numbers)"
	[[ ! -e $MOAT_ROOT/$CID ]]
	cfg_set '.annotations["moat.vm.vmm-user"] = "1000:1000" | .process.args = ["true"]'
	run_moat create --bundle "$BUNDLE" "$CID"
	assert_equal "$status" 0
	# the supervisor (the container's init) is container uid 1000: host id base + 1000
	local pid base
	pid=$(state_of "$CID" | jq .pid)
	base=$(awk '$1 == 0 { print $2 }' "/proc/$pid/uid_map")
	assert_equal "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" $((base + 1000))
	moat delete --force "$CID"
}
