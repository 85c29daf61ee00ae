#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, privilege: the workload tries to become more than it is given, as the
# container's root and, for setuid and file capabilities, as uid 1000, in a container and
# in a microVM (TCG).

load ../integration/helpers
load redteam

CASES="mknod-char mknod-block mount fsopen open-tree unshare-user clone3-user setns ptrace
	vm-readv keys module kernel-surfaces clock hostname setuid file-caps"

# setuid and file capabilities: two copies of the attack, owned by root, one setuid, one with
# every capability in its security.capability (a v2 entry: magic, then permitted and
# inheritable, low and high words); the workload runs as uid 1000.
prepare() {
	install -m 4755 "$ATTACK" "$BUNDLE/rootfs/attack-suid"
	install -m 0755 "$ATTACK" "$BUNDLE/rootfs/attack-fcaps"
	python3 -c 'import os, struct, sys
os.setxattr(sys.argv[1], "security.capability", struct.pack("<5I", 0x02000001, 0xffffffff, 0, 0x1ff, 0))' \
		"$BUNDLE/rootfs/attack-fcaps"
	cfg_set '.process.user = {uid: 1000, gid: 1000}'
}

setup_file() {
	redteam_setup_file prepare
}

teardown_file() {
	redteam_teardown_file
}

@test "privilege: mknod of char 1:1 is refused (container)" { contained container mknod-char; }
@test "privilege: mknod of char 1:1 is refused (microvm)" { contained microvm mknod-char; }
@test "privilege: mknod of block 8:0 is refused (container)" { contained container mknod-block; }
@test "privilege: mknod of block 8:0 is refused (microvm)" { contained microvm mknod-block; }
@test "privilege: mount(2) is refused (container)" { contained container mount; }
@test "privilege: mount(2) is refused (microvm)" { contained microvm mount; }
@test "privilege: fsopen is refused (container)" { contained container fsopen; }
@test "privilege: fsopen is refused (microvm)" { contained microvm fsopen; }
@test "privilege: open_tree is refused (container)" { contained container open-tree; }
@test "privilege: open_tree is refused (microvm)" { contained microvm open-tree; }
@test "privilege: unshare(CLONE_NEWUSER) is refused (container)" { contained container unshare-user; }
@test "privilege: unshare(CLONE_NEWUSER) is refused (microvm)" { contained microvm unshare-user; }
@test "privilege: clone3 with CLONE_NEWUSER is refused (container)" { contained container clone3-user; }
@test "privilege: clone3 with CLONE_NEWUSER is refused (microvm)" { contained microvm clone3-user; }
@test "privilege: setns is refused (container)" { contained container setns; }
@test "privilege: setns is refused (microvm)" { contained microvm setns; }
@test "privilege: ptrace of a sibling is refused (container)" { contained container ptrace; }
@test "privilege: ptrace of a sibling is refused (microvm)" { contained microvm ptrace; }
@test "privilege: process_vm_readv of a sibling is refused (container)" { contained container vm-readv; }
@test "privilege: process_vm_readv of a sibling is refused (microvm)" { contained microvm vm-readv; }
@test "privilege: add_key and keyctl are refused (container)" { contained container keys; }
@test "privilege: add_key and keyctl are refused (microvm)" { contained microvm keys; }
@test "privilege: finit_module is refused (container)" { contained container module; }
@test "privilege: finit_module is refused (microvm)" { contained microvm module; }
@test "privilege: bpf, perf_event_open, userfaultfd and io_uring_setup are refused (container)" { contained container kernel-surfaces; }
@test "privilege: bpf, perf_event_open, userfaultfd and io_uring_setup are refused (microvm)" { contained microvm kernel-surfaces; }
@test "privilege: clock_settime and adjtimex are refused (container)" { contained container clock; }
@test "privilege: clock_settime and adjtimex are refused (microvm)" { contained microvm clock; }
@test "privilege: sethostname is refused (container)" { contained container hostname; }
@test "privilege: sethostname is refused (microvm)" { contained microvm hostname; }
@test "privilege: a setuid-root binary gains nothing (container)" { contained container setuid; }
@test "privilege: a setuid-root binary gains nothing (microvm)" { contained microvm setuid; }
@test "privilege: a binary with file capabilities gains nothing (container)" { contained container file-caps; }
@test "privilege: a binary with file capabilities gains nothing (microvm)" { contained microvm file-caps; }
