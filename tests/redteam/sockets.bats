#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Red team, sockets and network: odd address families, interfaces, and routes out, asked of
# the routing table with a UDP connect (nothing is sent), in a container and in a microVM
# (TCG).

load ../integration/helpers
load redteam

CASES="families only-lo metadata dns"

setup_file() {
	redteam_setup_file
}

teardown_file() {
	redteam_teardown_file
}

@test "sockets: AF_ALG, AF_PACKET, AF_VSOCK, NETLINK_XFRM and other odd families are refused (container)" { contained container families; }
@test "sockets: AF_ALG, AF_PACKET, AF_VSOCK, NETLINK_XFRM and other odd families are refused (microvm)" { contained microvm families; }
@test "sockets: lo is the only interface (container)" { contained container only-lo; }
@test "sockets: lo is the only interface (microvm)" { contained microvm only-lo; }
@test "sockets: no route to 169.254.169.254 (container)" { contained container metadata; }
@test "sockets: no route to 169.254.169.254 (microvm)" { contained microvm metadata; }
@test "sockets: no route to a DNS server (container)" { contained container dns; }
@test "sockets: no route to a DNS server (microvm)" { contained microvm dns; }
