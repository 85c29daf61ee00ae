#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, host reach: a workload under moat's default policy looks for the host's files,
# its kernel's secrets, its control files and its devices (a microVM's virtio ports and
# consoles), in a container and in a microVM (TCG).

load ../integration/helpers
load redteam

CASES="proc-roots mountinfo cgroup-procs sys-write core-pattern sysrq kernel-reads interrupts kmsg
	dev-scan"

setup_file() {
	redteam_setup_file
}

teardown_file() {
	redteam_teardown_file
}

@test "host reach: /proc/*/root and /proc/*/cwd lead nowhere outside (container)" { contained container proc-roots; }
@test "host reach: /proc/*/root and /proc/*/cwd lead nowhere outside (microvm)" { contained microvm proc-roots; }
@test "host reach: mountinfo shows no host disk mounted whole (container)" { contained container mountinfo; }
@test "host reach: mountinfo shows no host disk mounted whole (microvm)" { contained microvm mountinfo; }
@test "host reach: no cgroup.procs, own or parent's, opens for writing (container)" { contained container cgroup-procs; }
@test "host reach: no cgroup.procs, own or parent's, opens for writing (microvm)" { contained microvm cgroup-procs; }
@test "host reach: /sys does not open for writing (container)" { contained container sys-write; }
@test "host reach: /sys does not open for writing (microvm)" { contained microvm sys-write; }
@test "host reach: core_pattern does not open for writing (container)" { contained container core-pattern; }
@test "host reach: core_pattern does not open for writing (microvm)" { contained microvm core-pattern; }
@test "host reach: sysrq-trigger does not open for writing (container)" { contained container sysrq; }
@test "host reach: sysrq-trigger does not open for writing (microvm)" { contained microvm sysrq; }
@test "host reach: kcore, keys, timer_list, sched_debug and /sys/firmware read empty (container)" { contained container kernel-reads; }
@test "host reach: kcore, keys, timer_list, sched_debug and /sys/firmware read empty (microvm)" { contained microvm kernel-reads; }
@test "host reach: /proc/interrupts reads empty (container)" { contained container interrupts; }
@test "host reach: /proc/interrupts reads empty (microvm)" { contained microvm interrupts; }
@test "host reach: /dev/kmsg and syslog(2) are refused (container)" { contained container kmsg; }
@test "host reach: /dev/kmsg and syslog(2) are refused (microvm)" { contained microvm kmsg; }
@test "host reach: /dev has no disk, VM port, console, vsock or other device beyond the standard ones (container)" { contained container dev-scan; }
@test "host reach: /dev has no disk, VM port, console, vsock or other device beyond the standard ones (microvm)" { contained microvm dev-scan; }
