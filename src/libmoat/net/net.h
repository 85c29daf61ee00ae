/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the network of a namespace, through rtnetlink (netlink.h): links, addresses,
 * routes, taps and tc redirects.
 *
 * For a microVM, the supervisor puts the guest on the container's network: for each
 * interface of the container's namespace (a veth from CNI, Podman or Docker) it opens a
 * tap beside it, redirects frames both ways between the two with tc (moat_net_redirect),
 * reads the veth's MAC, MTU, addresses and routes (moat_net_links), and moves the addresses
 * to the guest by deleting them from the veth (and restores them at the end). The guest
 * agent configures its virtio-net interface with the same calls. Depends on the C library,
 * error.h and utils.h only: the agent links it statically.
 *
 * Everything works on the calling thread's network namespace and returns 0 or a negative
 * errno with err naming the interface and the step: "eth0: add address 10.88.0.5/16: File
 * exists".
 */
#ifndef MOAT_NET_H
#define MOAT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define MOAT_NET_NAME_MAX 15 /* IFNAMSIZ - 1 */

struct moat_net_addr {
	int family; /* AF_INET, AF_INET6 */
	uint8_t addr[16];
	uint8_t prefix;
};

struct moat_net_route {
	int family;
	uint8_t dst[16];
	uint8_t dst_len; /* 0: the default route */
	bool has_gateway;
	uint8_t gateway[16];
	uint32_t priority; /* 0: none */
};

struct moat_net_link {
	char name[16];
	int index;
	uint8_t mac[6];
	bool has_mac; /* a 6-byte hardware address (not for loopback) */
	uint32_t mtu;
	bool up;
	bool loopback;
	/* global-scope addresses only: no link-local fe80::/10, no host-scope 127.0.0.1 */
	struct moat_net_addr *addrs;
	size_t n_addrs;
	/* the main table's unicast routes through this link, in the kernel's order, without the
	 * prefix routes the kernel makes for an address (proto kernel) and without link-local
	 * destinations: what restoring the addresses does not bring back by itself */
	struct moat_net_route *routes;
	size_t n_routes;
};

void moat_net_link_clear(struct moat_net_link *l);
/* Every link of the namespace, with its addresses and routes. */
int moat_net_links(struct moat_net_link **ret, size_t *ret_n, moat_error *err);
void moat_net_links_free(struct moat_net_link *l, size_t n);
int moat_net_link_index(const char *name, int *ret_index, moat_error *err);
/* Set what is given: the name (new_name, NULL: keep; before Linux 6.2 the link must be
 * down, or be brought up by this very call, which renames first), the MAC (NULL: keep), the MTU (0: keep); and
 * bring the link up (up) or down (!up). */
int moat_net_link_set(int index, const char *new_name, const uint8_t *mac, uint32_t mtu, bool up,
		      moat_error *err);
/* A veth pair a <-> b, both down. */
int moat_net_veth_add(const char *a, const char *b, moat_error *err);

/* An IPv6 address is added without duplicate address detection (IFA_F_NODAD): it is moved,
 * not new, and DAD would keep it tentative for a second after the guest boots. */
int moat_net_addr_add(int index, const struct moat_net_addr *a, moat_error *err);
int moat_net_addr_del(int index, const struct moat_net_addr *a, moat_error *err);
/* Add a route through the link (scope link without a gateway). The gateway must be
 * reachable: add the routes without gateways first. */
int moat_net_route_add(int index, const struct moat_net_route *r, moat_error *err);

/* A tap named name (IFF_TAP | IFF_NO_PI, not persistent: it goes when the fd closes), its
 * fd (O_CLOEXEC) and index. It is down: bring it up before frames are redirected to it. */
int moat_net_tap_open(const char *name, int *ret_fd, int *ret_index, moat_error *err);

/* An ingress qdisc on from (ffff:) and a u32 filter matching every frame, with a mirred
 * action redirecting it to the egress of to. EEXIST when from has an ingress qdisc. */
int moat_net_redirect(int from_index, int to_index, moat_error *err);
/* Delete from's ingress qdisc, and its filters with it. No qdisc is not an error. */
int moat_net_redirect_remove(int from_index, moat_error *err);

/* An address and prefix as text ("10.88.0.5/16", "fd00::5/64"), for state and errors;
 * 64 bytes are always enough. */
void moat_net_addr_format(const struct moat_net_addr *a, char *buf, size_t size);

#endif
