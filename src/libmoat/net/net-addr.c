/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: addresses and routes of a link. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "net-internal.h"
#include "utils.h"

void moat_net_addr_format(const struct moat_net_addr *a, char *buf, size_t size)
{
	char text[INET6_ADDRSTRLEN];

	if (net_addr_size(a->family) == 0 ||
	    inet_ntop(a->family, a->addr, text, sizeof(text)) == NULL)
		snprintf(text, sizeof(text), "?");
	snprintf(buf, size, "%s/%u", text, a->prefix);
}

static int addr_check(const struct moat_net_addr *a, moat_error *err)
{
	size_t size = net_addr_size(a->family);

	if (size == 0)
		return moat_error_msg(err, EAFNOSUPPORT, "address family %d: not IPv4 or IPv6",
				      a->family);
	if (a->prefix > size * 8)
		return moat_error_msg(err, EINVAL, "prefix /%u: longer than the address",
				      a->prefix);
	return 0;
}

/* RTM_NEWADDR or RTM_DELADDR for a on link index. */
static int addr_change(int index, const struct moat_net_addr *a, bool add, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	struct ifaddrmsg ifa = { .ifa_family = (unsigned char)a->family,
				 .ifa_prefixlen = a->prefix,
				 .ifa_scope = RT_SCOPE_UNIVERSE,
				 .ifa_index = (uint32_t)index };
	size_t size = net_addr_size(a->family);
	struct moat_nl_req r;
	char text[64];
	int e;

	moat_net_addr_format(a, text, sizeof(text));
	if ((e = addr_check(a, err)) < 0)
		return moat_error_prefix(err, "link %d: %s address %s", index,
					 add ? "add" : "delete", text);
	if ((e = net_open(&nl, index, err)) < 0)
		return e;
	if (add && a->family == AF_INET6)
		ifa.ifa_flags = IFA_F_NODAD;
	moat_nl_req_init(&r, add ? RTM_NEWADDR : RTM_DELADDR, add ? NLM_F_CREATE | NLM_F_EXCL : 0,
			 &ifa, sizeof(ifa));
	if (a->family == AF_INET)
		moat_nl_put(&r, IFA_LOCAL, a->addr, size);
	moat_nl_put(&r, IFA_ADDRESS, a->addr, size);
	if (add && a->family == AF_INET && a->prefix < 31) {
		uint32_t host = htonl(UINT32_MAX >> a->prefix), brd;

		memcpy(&brd, a->addr, sizeof(brd));
		brd |= host;
		moat_nl_put(&r, IFA_BROADCAST, &brd, sizeof(brd));
	}
	e = moat_nl_request(&nl, &r, NULL, NULL, err);
	if (e < 0)
		return net_fail(&nl, index, err, "%s address %s", add ? "add" : "delete", text);
	return 0;
}

int moat_net_addr_add(int index, const struct moat_net_addr *a, moat_error *err)
{
	return addr_change(index, a, true, err);
}

int moat_net_addr_del(int index, const struct moat_net_addr *a, moat_error *err)
{
	return addr_change(index, a, false, err);
}

/* "10.201.0.0/16 via 10.200.0.254", "default via fe80::1", for errors. */
static void route_format(const struct moat_net_route *rt, char *buf, size_t size)
{
	struct moat_net_addr dst = { .family = rt->family, .prefix = rt->dst_len };
	char d[64] = "default", gw[INET6_ADDRSTRLEN] = "";

	memcpy(dst.addr, rt->dst, sizeof(dst.addr));
	if (rt->dst_len > 0)
		moat_net_addr_format(&dst, d, sizeof(d));
	if (rt->has_gateway && net_addr_size(rt->family) != 0 &&
	    inet_ntop(rt->family, rt->gateway, gw, sizeof(gw)) == NULL)
		gw[0] = '\0';
	snprintf(buf, size, "%s%s%s", d, gw[0] != '\0' ? " via " : "", gw);
}

int moat_net_route_add(int index, const struct moat_net_route *rt, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	struct rtmsg m = { .rtm_family = (unsigned char)rt->family,
			   .rtm_dst_len = rt->dst_len,
			   .rtm_table = RT_TABLE_MAIN,
			   .rtm_protocol = RTPROT_BOOT,
			   .rtm_type = RTN_UNICAST };
	size_t size = net_addr_size(rt->family);
	struct moat_nl_req r;
	char text[128];
	int e;

	route_format(rt, text, sizeof(text));
	if (size == 0 || rt->dst_len > size * 8)
		return moat_error_msg(err, EINVAL,
				      "link %d: add route %s: not an IPv4 or IPv6 route", index,
				      text);
	if ((e = net_open(&nl, index, err)) < 0)
		return e;
	/* Without a gateway, the destination is on the link itself. */
	m.rtm_scope = rt->has_gateway || rt->family == AF_INET6 ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
	moat_nl_req_init(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &m, sizeof(m));
	if (rt->dst_len > 0)
		moat_nl_put(&r, RTA_DST, rt->dst, size);
	if (rt->has_gateway)
		moat_nl_put(&r, RTA_GATEWAY, rt->gateway, size);
	moat_nl_put_u32(&r, RTA_OIF, (uint32_t)index);
	if (rt->priority != 0)
		moat_nl_put_u32(&r, RTA_PRIORITY, rt->priority);
	e = moat_nl_request(&nl, &r, NULL, NULL, err);
	if (e < 0)
		return net_fail(&nl, index, err, "add route %s", text);
	return 0;
}
