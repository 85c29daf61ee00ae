/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the host's end of a microVM's egress tunnel (src/proto/tunnel.h).
 *
 * The supervisor gives QEMU one end of a socketpair as the moat.egress port and hands the
 * other to a child of its own, which relays each connection the guest opens to the egress
 * proxy's listening socket, 127.0.0.1:MOAT_EGRESS_PORT in the container's network
 * namespace: the socket a container-mode sandbox's processes reach. The proxy is the same
 * in both modes; nothing here decides what may go out.
 */
#ifndef MOAT_VM_EGRESS_H
#define MOAT_VM_EGRESS_H

#include <sys/types.h>

#include "error.h"

/* Fork the relay, which takes over port_fd and dies with the caller; *ret_pid is its pid. */
int moat_vm_egress_start(int port_fd, pid_t *ret_pid, moat_error *err);

#endif
