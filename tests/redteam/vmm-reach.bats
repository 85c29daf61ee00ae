#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, the VMM's side: the workload looks for a way to the agent's ports and to the
# host's sockets. It opens (and tries to make) every virtio-serial port and hvc console,
# scans vsock ports of the host, and connects to the supervisor's socket by its host path,
# to every socket file it can see and to every abstract socket of its network namespace.
# The microVM is what this is about (a guest beside QEMU and the supervisor); the container
# runs the same cases, where they must fail too.

load ../integration/helpers
load redteam

CASES="vport-scan vsock-scan host-sockets"

# the supervisor's socket on the host, by the path a guest would have to name
prepare() {
	cfg_set '.process.env += ["REDTEAM_SOCKETS=" + $s]' --arg s "$MOAT_ROOT/$CID/vm-exec.sock"
}

setup_file() {
	redteam_setup_file prepare
}

teardown_file() {
	redteam_teardown_file
}

@test "vmm: no virtio port or hvc console opens, none can be made (container)" { contained container vport-scan; }
@test "vmm: no virtio port or hvc console opens, none can be made (microvm)" { contained microvm vport-scan; }
@test "vmm: no vsock port of the host answers (container)" { contained container vsock-scan; }
@test "vmm: no vsock port of the host answers (microvm)" { contained microvm vsock-scan; }
@test "vmm: the supervisor's socket, and every socket the workload can see, refuse it (container)" { contained container host-sockets; }
@test "vmm: the supervisor's socket, and every socket the workload can see, refuse it (microvm)" { contained microvm host-sockets; }
