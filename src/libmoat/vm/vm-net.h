/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a microVM on the container's network (docs/microvm-network.md).
 *
 * At create, in the network namespace the config joins (an engine's, with a veth from CNI,
 * netavark or Docker), each interface but lo gets a tap beside it and a tc redirect both
 * ways between the two (src/libmoat/net/); its addresses are taken off it, for the guest
 * holds them now, and kept in the state's network.json to be put back at delete. QEMU gets
 * each tap as an inherited fd, and START an interface object for each (the name, MAC, MTU,
 * addresses and routes the agent gives the guest's virtio-net device).
 */
#ifndef MOAT_VM_NET_H
#define MOAT_VM_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "net.h"
#include "proto.h"

/* One interface of the container's carried into the guest. */
struct moat_vm_nic {
	struct moat_net_link link; /* as it was before: what the guest gets and delete restores */
	char tap[16];              /* the tap's name, beside it */
	int tap_fd;                /* QEMU's end */
	bool redirected;           /* the interface's redirect is in place */
	size_t addrs_taken;        /* of link.addrs, those taken off the interface */
};

struct moat_vm_net {
	struct moat_vm_nic *nics;
	size_t n;
};

#define MOAT_VM_NET_STATE "network.json"
#define MOAT_VM_NETWORK_ANNOTATION "moat.vm.network" /* what the guest holds, in the state */

/* Take the interfaces of the network namespace at netns_path into *ret, recording them in
 * dirfd/network.json first; on failure what was done is undone. own: the namespace is the
 * container's own (its init made it, and a hook gave it its interfaces, as Docker's
 * libnetwork does from prestart): it goes with the container, and nothing is put back. */
int moat_vm_net_take(const char *netns_path, bool own, int dirfd, struct moat_vm_net *ret,
		     moat_error *err);
/* The interfaces recorded in network.json, read from fd, with their taps' names but not their
 * fds (-1): what an init forked before the interfaces were taken learns of them. */
int moat_vm_net_load(int fd, struct moat_vm_net *ret, moat_error *err);
/* Put back what network.json in dirfd records (addresses, routes; the redirects removed) in
 * the namespace it names; an interface or namespace that is gone is no error. No file:
 * nothing to do. */
int moat_vm_net_give_back(int dirfd, moat_error *err);
/* The taps' names and the interfaces': what moat_vm_check_network lets be in the
 * namespace (NULL-terminated, allocated). */
char **moat_vm_net_names(const struct moat_vm_net *net);
/* START's interfaces for net, borrowing its storage; free with moat_vm_net_start_free. */
void moat_vm_net_start(const struct moat_vm_net *net, struct moat_msg_start *m);
void moat_vm_net_start_free(struct moat_msg_start *m);
/* "eth0 10.88.0.5/16 fd00::5/64" per interface, "; "-separated, for the state. */
char *moat_vm_net_describe(const struct moat_vm_net *net);
/* Closes the taps. */
void moat_vm_net_clear(struct moat_vm_net *net);

#endif
