#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, isolation between sandboxes: a neighbour holds a process, a SysV shared memory
# segment and message queue, a file in /dev/shm and an abstract unix socket; the workload,
# in another container (or microVM) under the same policy, looks for each.

load ../integration/helpers
load redteam

CASES="peer-procs peer-sysv peer-shm peer-abstract"

# The neighbour: the attack's "hold", detached, in a bundle of its own, in the same mode.
prepare() {
	local bundle=$BUNDLE config=$CONFIG cid=redteam-peer-$MODE-$$
	redteam_bundle "$MODE" neighbour || return 1
	cfg_args /attack hold redteam-peer-holder
	"$MOAT_BINARY" --root "$MOAT_ROOT" run --detach --bundle "$BUNDLE" "$cid" </dev/null \
		>"$TEST_DIR/$cid.out" 2>"$TEST_DIR/$cid.err" || return 1
	BUNDLE=$bundle CONFIG=$config
	retry grep -q holding "$TEST_DIR/$cid.out" ||
		{ cat "$TEST_DIR/$cid.out" "$TEST_DIR/$cid.err" >&2; return 1; }
}

setup_file() {
	redteam_setup_file prepare
}

teardown_file() {
	redteam_teardown_file
}

@test "isolation: the neighbour's processes are invisible (container)" { contained container peer-procs; }
@test "isolation: the neighbour's processes are invisible (microvm)" { contained microvm peer-procs; }
@test "isolation: the neighbour's SysV IPC is out of reach (container)" { contained container peer-sysv; }
@test "isolation: the neighbour's SysV IPC is out of reach (microvm)" { contained microvm peer-sysv; }
@test "isolation: the neighbour's /dev/shm is out of reach (container)" { contained container peer-shm; }
@test "isolation: the neighbour's /dev/shm is out of reach (microvm)" { contained microvm peer-shm; }
@test "isolation: the neighbour's abstract unix socket is out of reach (container)" { contained container peer-abstract; }
@test "isolation: the neighbour's abstract unix socket is out of reach (microvm)" { contained microvm peer-abstract; }
