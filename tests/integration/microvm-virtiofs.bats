#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# A microVM's root over virtio-fs (src/libmoat/vm/vm-virtiofs.h): Debian's virtiofsd serves
# the rootfs from inside the VMM's jail when the VM boots cold, confined to what it needs;
# 9p where it cannot be (a snapshot's guest, no virtiofsd), and never silently when asked
# for.

load helpers

setup_file() {
	microvm_setup_file
}

setup() {
	microvm_setup
	MOAT_VM_SNAPSHOT_DIR=$TEST_DIR/snapshots
	export MOAT_VM_SNAPSHOT_DIR
	[[ -x /usr/lib/qemu/virtiofsd ]] || skip "no /usr/lib/qemu/virtiofsd (qemu-system-common)"
}

# The guest's filesystem type at /, from the workload's /proc/mounts.
ROOT_TYPE='awk '\''$2 == "/" { t = $3 } END { print t }'\'' /proc/mounts'

share_of() {
	state_of | jq -r '.annotations["moat.vm.share"]'
}

@test "microvm virtiofs: a cold boot's root is virtio-fs; the guest's writes reach the rootfs; the state says moat.vm.share=virtiofs" {
	cfg_set '.annotations["moat.vm.boot"] = "cold"'
	echo 'host file' >"$BUNDLE/rootfs/etc/marker"
	run_sh "$ROOT_TYPE; echo written > /from-guest; cat /etc/marker"
	assert_success
	assert_equal "${lines[0]}" virtiofs
	assert_equal "${lines[1]}" 'host file'
	assert_equal "$(cat "$BUNDLE/rootfs/from-guest")" written

	CID=$CID-2
	cfg_sh 'sleep 600'
	moat_create_started
	assert_equal "$(share_of)" virtiofs
}

@test "microvm virtiofs: a guest restored from a snapshot has 9p, and the state says so" {
	run_sh "$ROOT_TYPE"
	assert_success
	assert_output 9p
	CID=$CID-2
	cfg_sh 'sleep 600'
	moat_create_started
	assert_equal "$(state_of | jq -r '.annotations["moat.vm.boot"]')" snapshot
	assert_equal "$(share_of)" 9p
}

@test "microvm virtiofs: moat.vm.share=9p boots cold on 9p; =virtiofs boots cold without the snapshot cache" {
	cfg_set '.annotations["moat.vm.boot"] = "cold" | .annotations["moat.vm.share"] = "9p"'
	run_sh "$ROOT_TYPE"
	assert_success
	assert_output 9p
	cfg_set 'del(.annotations["moat.vm.boot"]) | .annotations["moat.vm.share"] = "virtiofs"'
	CID=$CID-2
	run_sh "$ROOT_TYPE"
	assert_success
	assert_output virtiofs
	[[ ! -e $MOAT_VM_SNAPSHOT_DIR ]] || fail "moat.vm.share=virtiofs made $MOAT_VM_SNAPSHOT_DIR"
}

@test "microvm virtiofs: without virtiofsd a cold boot is 9p, and asking for virtio-fs is refused naming the annotation" {
	export MOAT_VM_VIRTIOFSD=$TEST_DIR/no-such-virtiofsd
	cfg_set '.annotations["moat.vm.boot"] = "cold"'
	run_sh "$ROOT_TYPE"
	assert_success
	assert_output 9p
	cfg_set '.annotations["moat.vm.share"] = "virtiofs"'
	CID=$CID-2
	run_sh true
	assert_moat_error "annotations.moat.vm.share=virtiofs: $MOAT_VM_VIRTIOFSD \\(install .*\\): No such file"
	assert_no_residue "$CID"
}

@test "microvm virtiofs: a bad moat.vm.share, or virtiofs with moat.vm.boot=snapshot, is refused naming the annotation" {
	cfg_set '.annotations["moat.vm.share"] = "nfs"'
	run_sh true
	assert_moat_error "annotations.moat.vm.share: 'nfs' is not virtiofs or 9p"
	assert_no_residue "$CID"
	cfg_set '.annotations["moat.vm.share"] = "virtiofs" | .annotations["moat.vm.boot"] = "snapshot"'
	run_sh true
	assert_moat_error "annotations.moat.vm.share=virtiofs: a snapshot's root is 9p"
	assert_no_residue "$CID"
}

# virtiofsd-jail: the daemon that acts on the host's files for the guest holds no more than
# it needs, where the guest's requests cannot take it further than the rootfs.
@test "microvm virtiofs: virtiofsd-jail: no_new_privs, no bounding set, the 8 file capabilities at most, its seccomp filter, a mount namespace of only the rootfs" {
	cfg_set '.annotations["moat.vm.boot"] = "cold"'
	cfg_sh 'sleep 600'
	touch "$BUNDLE/rootfs/only-in-the-rootfs"
	moat_create_started
	local init pids p st allowed=$((0x880000db)) serving=0
	init=$(state_of | jq -r .pid)
	pids=$(pgrep -x virtiofsd --parent "$init") || fail "no virtiofsd under the init $init"
	pids="$pids $(pgrep -x virtiofsd --parent "${pids// /,}" || true)"
	for p in $pids; do
		st=$(cat "/proc/$p/status")
		grep -qx $'NoNewPrivs:\t1' <<<"$st" || fail "virtiofsd $p lacks no_new_privs"
		grep -qx $'CapBnd:\t0000000000000000' <<<"$st" || fail "virtiofsd $p: $(grep CapBnd <<<"$st")"
		eff=$((16#$(awk '$1 == "CapEff:" { print $2 }' <<<"$st")))
		((eff & ~allowed)) && fail "virtiofsd $p has capabilities beyond the 8: $eff"
		[[ $(readlink "/proc/$p/ns/user") == "$(readlink "/proc/$init/ns/user")" ]] ||
			fail "virtiofsd $p is not in the container's user namespace"
		[[ $(readlink "/proc/$p/ns/mnt") != "$(readlink "/proc/$init/ns/mnt")" ]] ||
			fail "virtiofsd $p shares the jail's mount namespace"
		[[ -e /proc/$p/root/only-in-the-rootfs && ! -e /proc/$p/root/moat-vm ]] ||
			fail "virtiofsd $p's root is not the rootfs: $(ls "/proc/$p/root")"
		if grep -q $'^Seccomp:\t2' <<<"$st"; then
			serving=$((serving + 1))
			((eff != 0)) || fail "the serving virtiofsd $p has no capability to act as the guest's users"
		fi
	done
	((serving == 1)) || fail "$serving virtiofsd processes under a seccomp filter, not 1 ($pids)"
	[[ $(cat "/proc/${pids%% *}/cgroup") == "$(cat "/proc/$init/cgroup")" ]] ||
		fail "virtiofsd is not in the container's cgroup"
	moat kill "$CID" KILL
	wait_for_status stopped
	for p in $pids; do
		retry process_gone "$p" || fail "virtiofsd $p outlived its container"
	done
}

# virtiofsd-death: a virtiofsd that died (here under a pids limit too low for its threads)
# left the guest's processes waiting on their root forever, and the run with them: even a
# SIGTERM did not end it.
@test "microvm virtiofs: virtiofsd-death: a cold VM whose virtiofsd dies ends with one line naming it, not a hang" {
	cfg_set '.annotations["moat.vm.boot"] = "cold"'
	cfg_sh 'echo ready; exec sleep 600'
	moat_run_detached
	wait_for_output ready
	local init pid
	init=$(host_pid)
	pid=$(pgrep -x virtiofsd --parent "$init") || fail "no virtiofsd under the init $init"
	kill -KILL $pid
	wait_for_status stopped
	run cat "$(err_file)"
	assert_output --partial "moat: microvm: virtiofsd, which serves the root, was killed by signal 9 before the workload ended"
}

@test "microvm virtiofs: a read-only root and a read-only bind hold on the host side" {
	use_policy_without deny-host-mounts
	mkdir -p "$TEST_DIR/vol" "$BUNDLE/rootfs/data"
	echo volume >"$TEST_DIR/vol/file"
	cfg_set '.annotations["moat.vm.boot"] = "cold" | .root.readonly = true
		| .mounts += [{destination: "/data", type: "bind", source: $s, options: ["rbind", "ro"]}]' \
		--arg s "$TEST_DIR/vol"
	run_sh "$ROOT_TYPE; cat /data/file; echo x > /new || echo root-ro; echo x > /data/new || echo bind-ro"
	assert_success
	assert_equal "${lines[0]}" virtiofs
	assert_equal "${lines[1]}" volume
	assert_line root-ro
	assert_line bind-ro
	[[ ! -e $BUNDLE/rootfs/new && ! -e $TEST_DIR/vol/new ]] || fail "the guest wrote through"
}

# virtiofs-vmm-user: QEMU running as another user of the container (moat.vm.vmm-user, as
# moat sandbox sets it) could not connect to the socket the init made, and every cold boot of
# a sandbox failed.
@test "microvm virtiofs: virtiofs-vmm-user: a VMM that runs as another user reaches virtiofsd" {
	cfg_set '.annotations["moat.vm.boot"] = "cold" | .annotations["moat.vm.vmm-user"] = "1000:1000"'
	run_sh "$ROOT_TYPE"
	assert_success
	assert_output virtiofs
}
