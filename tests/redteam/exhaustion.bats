#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, exhaustion: the workload tries to use up processes, threads, memory, disk,
# inodes, file descriptors and file size, under moat's default policy (pids 1024, NOFILE
# 1024, a 64 MiB /tmp with 16384 inodes, a read-only root) and, as an engine would send
# them, a 512 MiB memory limit (in a microVM: the guest's memory, less the VMM's) and a
# 1 MiB RLIMIT_FSIZE; in a container and in a microVM (TCG). An output flood is capped by
# moat sandbox (tests/integration/sandbox.bats).

load ../integration/helpers
load redteam

CASES="fork-bomb thread-bomb memory-bomb disk-bomb inode-bomb root-readonly nofile fsize"

prepare() {
	cfg_set '.linux.resources.memory = {limit: 536870912}
		| .process.rlimits += [{type: "RLIMIT_FSIZE", hard: 1048576, soft: 1048576}]'
}

setup_file() {
	redteam_setup_file prepare
}

teardown_file() {
	redteam_teardown_file
}

@test "exhaustion: a fork bomb ends at pids.max (container)" { contained container fork-bomb; }
@test "exhaustion: a fork bomb ends at pids.max (microvm)" { contained microvm fork-bomb; }
@test "exhaustion: a thread bomb ends at pids.max (container)" { contained container thread-bomb; }
@test "exhaustion: a thread bomb ends at pids.max (microvm)" { contained microvm thread-bomb; }
@test "exhaustion: a memory bomb is killed in its own cgroup, its neighbour lives (container)" { contained container memory-bomb; }
@test "exhaustion: a memory bomb is killed in its own cgroup, its neighbour lives (microvm)" { contained microvm memory-bomb; }
@test "exhaustion: a disk bomb in /tmp hits the tmpfs limit (container)" { contained container disk-bomb; }
@test "exhaustion: a disk bomb in /tmp hits the tmpfs limit (microvm)" { contained microvm disk-bomb; }
@test "exhaustion: an inode bomb in /tmp hits the tmpfs limit (container)" { contained container inode-bomb; }
@test "exhaustion: an inode bomb in /tmp hits the tmpfs limit (microvm)" { contained microvm inode-bomb; }
@test "exhaustion: the root stays read-only (container)" { contained container root-readonly; }
@test "exhaustion: the root stays read-only (microvm)" { contained microvm root-readonly; }
@test "exhaustion: RLIMIT_NOFILE stops a descriptor bomb (container)" { contained container nofile; }
@test "exhaustion: RLIMIT_NOFILE stops a descriptor bomb (microvm)" { contained microvm nofile; }
@test "exhaustion: RLIMIT_FSIZE stops a big file with EFBIG (container)" { contained container fsize; }
@test "exhaustion: RLIMIT_FSIZE stops a big file with EFBIG (microvm)" { contained microvm fsize; }
