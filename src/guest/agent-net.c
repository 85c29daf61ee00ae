/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the guest on the container's network (docs/microvm-network.md).
 *
 * START's interfaces are the container's, whose traffic the guest's virtio-net devices
 * carry (the host redirects each interface to a tap QEMU holds). Each device is the one
 * with the interface's MAC (QEMU gave it that address); the agent gives it the interface's
 * name and MTU, brings it up, and adds its addresses and then its routes, those without a
 * gateway first, as the gateways must be reachable. Done before the workload starts, in the
 * guest's only network namespace, which the workload shares.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "agent.h"
#include "net.h"

static int find_by_mac(const struct moat_net_link *links, size_t n, const uint8_t *mac)
{
	for (size_t i = 0; i < n; i++)
		if (links[i].has_mac && memcmp(links[i].mac, mac, 6) == 0)
			return links[i].index;
	return -1;
}

static void to_addr(const uint8_t *bytes, size_t len, uint8_t prefix, struct moat_net_addr *a)
{
	*a = (struct moat_net_addr){ .family = len == 4 ? AF_INET : AF_INET6, .prefix = prefix };
	memcpy(a->addr, bytes, len);
}

static int add_routes(int index, const struct moat_proto_interface *p, moat_error *err)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < p->n_routes; i++) {
			const struct moat_proto_route *r = &p->routes[i];
			struct moat_net_route rt = { .family =
							     r->dst_bytes == 4 ? AF_INET : AF_INET6,
						     .dst_len = r->dst_len,
						     .has_gateway = r->gateway != NULL,
						     .priority = r->priority };

			if ((r->gateway != NULL) != (pass == 1))
				continue;
			memcpy(rt.dst, r->dst, r->dst_bytes);
			if (r->gateway != NULL)
				memcpy(rt.gateway, r->gateway, r->gateway_len);
			if (moat_net_route_add(index, &rt, err) < 0)
				return moat_error_ret(err);
		}
	return 0;
}

static int set_up(const struct moat_net_link *links, size_t n, const struct moat_proto_interface *p,
		  moat_error *err)
{
	int index = find_by_mac(links, n, p->mac);

	if (index < 0)
		return moat_error_msg(err, ENODEV,
				      "no virtio-net device with the MAC of the container's %s",
				      p->name);
	if (moat_net_link_set(index, p->name, NULL, p->mtu, true, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < p->n_addresses; i++) {
		struct moat_net_addr a;

		to_addr(p->addresses[i].address, p->addresses[i].address_len,
			p->addresses[i].prefix, &a);
		if (moat_net_addr_add(index, &a, err) < 0)
			return moat_error_ret(err);
	}
	return add_routes(index, p, err);
}

int agent_net_setup(const struct moat_msg_start *s, moat_error *err)
{
	struct moat_net_link *links = NULL;
	size_t n = 0;
	int r = 0;

	if (s->n_interfaces == 0)
		return 0;
	if (moat_net_links(&links, &n, err) < 0)
		return moat_error_prefix(err, "the guest's network devices");
	for (size_t i = 0; i < s->n_interfaces && r == 0; i++) {
		r = set_up(links, n, &s->interfaces[i], err);
		if (r < 0)
			moat_error_prefix(err, "interface %s", s->interfaces[i].name);
	}
	moat_net_links_free(links, n);
	return r;
}
