/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: links of a network namespace: their list with addresses and routes (three dumps),
 * lookup by name, changes, and veth pairs. */
#include "net.h"

#include <errno.h>
#include <linux/veth.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "net-internal.h"
#include "utils.h"

int net_name_check(const char *what, const char *name, moat_error *err)
{
	size_t len = strlen(name);

	if (len == 0 || len > MOAT_NET_NAME_MAX)
		return moat_error_msg(err, EINVAL, "%s '%s': a link name has 1 to %d bytes", what,
				      name, MOAT_NET_NAME_MAX);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strpbrk(name, "/: \t\n\r\v\f"))
		return moat_error_msg(err, EINVAL, "%s '%s': not a valid link name", what, name);
	return 0;
}

size_t net_addr_size(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

static int name_cb(const struct nlmsghdr *h, void *data, moat_error *err)
{
	const struct rtattr *tb[IFLA_MAX + 1];

	if (h->nlmsg_type == RTM_NEWLINK &&
	    moat_nl_msg_attrs(h, sizeof(struct ifinfomsg), tb, IFLA_MAX) == 0)
		(void)moat_nl_attr_str(tb[IFLA_IFNAME], data, IFNAMSIZ);
	return 0;
}

/* The name of link index, or "link N" when it has none we can find. */
static void link_label(struct moat_nl *nl, int index, char buf[32])
{
	_cleanup_error_ moat_error e = MOAT_ERROR_INIT;
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = index };
	struct moat_nl_req r;
	char name[IFNAMSIZ] = "";

	if (nl->fd >= 0 && index > 0) {
		moat_nl_req_init(&r, RTM_GETLINK, 0, &ifi, sizeof(ifi));
		(void)moat_nl_request(nl, &r, name_cb, name, &e);
	}
	if (name[0] != '\0')
		snprintf(buf, 32, "%s", name);
	else
		snprintf(buf, 32, "link %d", index);
}

int net_fail(struct moat_nl *nl, int index, moat_error *err, const char *fmt, ...)
{
	char label[32], step[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(step, sizeof(step), fmt, ap);
	va_end(ap);
	link_label(nl, index, label);
	return moat_error_prefix(err, "%s: %s", label, step);
}

int net_open(struct moat_nl *nl, int index, moat_error *err)
{
	int r;

	if (index <= 0)
		return moat_error_msg(err, EINVAL, "link %d: not a link index", index);
	r = moat_nl_open(nl, err);
	if (r < 0)
		return moat_error_prefix(err, "link %d", index);
	return 0;
}

void moat_net_link_clear(struct moat_net_link *l)
{
	free(l->addrs);
	free(l->routes);
	memset(l, 0, sizeof(*l));
}

void moat_net_links_free(struct moat_net_link *l, size_t n)
{
	for (size_t i = 0; l != NULL && i < n; i++)
		moat_net_link_clear(&l[i]);
	free(l);
}

struct links {
	struct moat_net_link *v;
	size_t n;
};

static struct moat_net_link *links_find(struct links *ls, uint32_t index)
{
	for (size_t i = 0; i < ls->n; i++)
		if ((uint32_t)ls->v[i].index == index)
			return &ls->v[i];
	return NULL;
}

static int bad_reply(moat_error *err, const char *what)
{
	return moat_error_msg(err, EBADMSG, "malformed %s message from the kernel", what);
}

static int link_cb(const struct nlmsghdr *h, void *data, moat_error *err)
{
	struct links *ls = data;
	const struct ifinfomsg *ifi = moat_nl_msg_payload(h, sizeof(*ifi));
	const struct rtattr *tb[IFLA_MAX + 1];
	struct moat_net_link l = { 0 };

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	if (ifi == NULL || moat_nl_msg_attrs(h, sizeof(*ifi), tb, IFLA_MAX) < 0 ||
	    ifi->ifi_index <= 0 || !moat_nl_attr_str(tb[IFLA_IFNAME], l.name, sizeof(l.name)))
		return bad_reply(err, "link");
	l.index = ifi->ifi_index;
	l.up = (ifi->ifi_flags & IFF_UP) != 0;
	l.loopback = (ifi->ifi_flags & IFF_LOOPBACK) != 0;
	(void)moat_nl_attr_u32(tb[IFLA_MTU], &l.mtu);
	if (tb[IFLA_ADDRESS] != NULL && moat_nl_attr_len(tb[IFLA_ADDRESS]) == sizeof(l.mac) &&
	    !l.loopback) {
		memcpy(l.mac, moat_nl_attr_data(tb[IFLA_ADDRESS]), sizeof(l.mac));
		l.has_mac = true;
	}
	if (links_find(ls, (uint32_t)l.index) != NULL)
		return 0;
	ls->v = xrealloc(ls->v, (ls->n + 1) * sizeof(*ls->v));
	ls->v[ls->n++] = l;
	return 0;
}

static int addr_cb(const struct nlmsghdr *h, void *data, moat_error *err)
{
	const struct ifaddrmsg *ifa = moat_nl_msg_payload(h, sizeof(*ifa));
	const struct rtattr *tb[IFA_MAX + 1];
	const struct rtattr *a;
	struct moat_net_link *l;
	struct moat_net_addr *out;
	size_t size;

	if (h->nlmsg_type != RTM_NEWADDR)
		return 0;
	if (ifa == NULL || moat_nl_msg_attrs(h, sizeof(*ifa), tb, IFA_MAX) < 0)
		return bad_reply(err, "address");
	size = net_addr_size(ifa->ifa_family);
	l = links_find(data, ifa->ifa_index);
	if (size == 0 || l == NULL || ifa->ifa_scope != RT_SCOPE_UNIVERSE)
		return 0;
	/* IPv4's own address is IFA_LOCAL (IFA_ADDRESS is the peer's on a point-to-point link);
	 * IPv6 has IFA_ADDRESS only. */
	a = tb[IFA_LOCAL] != NULL ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (a == NULL || moat_nl_attr_len(a) != size || ifa->ifa_prefixlen > size * 8)
		return bad_reply(err, "address");
	l->addrs = xrealloc(l->addrs, (l->n_addrs + 1) * sizeof(*l->addrs));
	out = &l->addrs[l->n_addrs++];
	memset(out, 0, sizeof(*out));
	out->family = ifa->ifa_family;
	out->prefix = ifa->ifa_prefixlen;
	memcpy(out->addr, moat_nl_attr_data(a), size);
	return 0;
}

/* A route moat_net_links() keeps: main table, unicast, made by someone else than the kernel
 * for an address, not a cached clone, not to a link-local destination. */
static bool route_wanted(const struct rtmsg *rt, const struct rtattr **tb, const uint8_t *dst)
{
	uint32_t table = rt->rtm_table;

	(void)moat_nl_attr_u32(tb[RTA_TABLE], &table);
	if (table != RT_TABLE_MAIN || rt->rtm_type != RTN_UNICAST ||
	    rt->rtm_protocol == RTPROT_KERNEL || (rt->rtm_flags & RTM_F_CLONED))
		return false;
	if (rt->rtm_family == AF_INET6 && rt->rtm_dst_len >= 10 && dst[0] == 0xfe &&
	    (dst[1] & 0xc0) == 0x80)
		return false;
	return true;
}

static int route_cb(const struct nlmsghdr *h, void *data, moat_error *err)
{
	const struct rtmsg *rt = moat_nl_msg_payload(h, sizeof(*rt));
	const struct rtattr *tb[RTA_MAX + 1];
	struct moat_net_route r = { 0 };
	struct moat_net_link *l;
	uint32_t oif;
	size_t size;

	if (h->nlmsg_type != RTM_NEWROUTE)
		return 0;
	if (rt == NULL || moat_nl_msg_attrs(h, sizeof(*rt), tb, RTA_MAX) < 0)
		return bad_reply(err, "route");
	size = net_addr_size(rt->rtm_family);
	if (size == 0 || !moat_nl_attr_u32(tb[RTA_OIF], &oif) ||
	    (l = links_find(data, oif)) == NULL)
		return 0; /* another family, or a multipath route (no single link) */
	if (rt->rtm_dst_len > size * 8 ||
	    (tb[RTA_DST] != NULL && moat_nl_attr_len(tb[RTA_DST]) != size) ||
	    (tb[RTA_GATEWAY] != NULL && moat_nl_attr_len(tb[RTA_GATEWAY]) != size))
		return bad_reply(err, "route");
	r.family = rt->rtm_family;
	r.dst_len = rt->rtm_dst_len;
	if (tb[RTA_DST] != NULL)
		memcpy(r.dst, moat_nl_attr_data(tb[RTA_DST]), size);
	if (tb[RTA_GATEWAY] != NULL) {
		memcpy(r.gateway, moat_nl_attr_data(tb[RTA_GATEWAY]), size);
		r.has_gateway = true;
	}
	(void)moat_nl_attr_u32(tb[RTA_PRIORITY], &r.priority);
	if (!route_wanted(rt, tb, r.dst))
		return 0;
	l->routes = xrealloc(l->routes, (l->n_routes + 1) * sizeof(*l->routes));
	l->routes[l->n_routes++] = r;
	return 0;
}

/* The three dumps, once. */
static int links_dump(struct moat_nl *nl, struct links *ls, moat_error *err)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct ifaddrmsg ifa = { .ifa_family = AF_UNSPEC };
	static const int families[] = { AF_INET, AF_INET6 };
	struct moat_nl_req r;
	int e;

	moat_nl_req_init(&r, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	e = moat_nl_dump(nl, &r, link_cb, ls, err);
	if (e < 0)
		return moat_error_prefix(err, "list links");
	moat_nl_req_init(&r, RTM_GETADDR, 0, &ifa, sizeof(ifa));
	e = moat_nl_dump(nl, &r, addr_cb, ls, err);
	if (e < 0)
		return moat_error_prefix(err, "list addresses");
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(families); i++) {
		struct rtmsg rt = { .rtm_family = (unsigned char)families[i] };

		moat_nl_req_init(&r, RTM_GETROUTE, 0, &rt, sizeof(rt));
		e = moat_nl_dump(nl, &r, route_cb, ls, err);
		if (e < 0)
			return moat_error_prefix(err, "list IPv%d routes", i == 0 ? 4 : 6);
	}
	return 0;
}

int moat_net_links(struct moat_net_link **ret, size_t *ret_n, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	int e = moat_nl_open(&nl, err);

	if (e < 0)
		return e;
	/* A dump the kernel marks interrupted (a link or address changed meanwhile) is retried. */
	for (int attempt = 0;; attempt++) {
		struct links ls = { 0 };

		e = links_dump(&nl, &ls, err);
		if (e == 0) {
			*ret = ls.v;
			*ret_n = ls.n;
			return 0;
		}
		moat_net_links_free(ls.v, ls.n);
		if (e != -EAGAIN || attempt == 3)
			return e;
		moat_error_drop(err);
	}
}

static int index_cb(const struct nlmsghdr *h, void *data, moat_error *err)
{
	const struct ifinfomsg *ifi = moat_nl_msg_payload(h, sizeof(*ifi));

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	if (ifi == NULL || ifi->ifi_index <= 0)
		return bad_reply(err, "link");
	*(int *)data = ifi->ifi_index;
	return 0;
}

int moat_net_link_index(const char *name, int *ret_index, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct moat_nl_req r;
	int index = 0, e;

	e = net_name_check("link", name, err);
	if (e < 0)
		return e;
	e = moat_nl_open(&nl, err);
	if (e < 0)
		return moat_error_prefix(err, "%s", name);
	moat_nl_req_init(&r, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	moat_nl_put_str(&r, IFLA_IFNAME, name);
	e = moat_nl_request(&nl, &r, index_cb, &index, err);
	if (e == 0 && index == 0)
		e = moat_error_msg(err, ENODEV, "%s", strerror(ENODEV));
	if (e < 0)
		return moat_error_prefix(err, "%s: find link", name);
	*ret_index = index;
	return 0;
}

/* What moat_net_link_set() does, for its error: "set name eth1, MAC 02:00:00:00:00:01, up". */
static void link_set_step(const char *new_name, const uint8_t *mac, uint32_t mtu, bool up,
			  char *buf, size_t size)
{
	int n = snprintf(buf, size, "set");

	if (new_name != NULL && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " name %s,", new_name);
	if (mac != NULL && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " MAC %02x:%02x:%02x:%02x:%02x:%02x,",
			      mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	if (mtu != 0 && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " MTU %u,", mtu);
	if (n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " %s", up ? "up" : "down");
}

int moat_net_link_set(int index, const char *new_name, const uint8_t *mac, uint32_t mtu, bool up,
		      moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = index };
	struct moat_nl_req r;
	char step[96];
	int e;

	if (new_name != NULL && (e = net_name_check("new name", new_name, err)) < 0)
		return moat_error_prefix(err, "link %d", index);
	e = net_open(&nl, index, err);
	if (e < 0)
		return e;
	/* The kernel applies the name, MAC and MTU before the flags: one message renames a down
	 * link and brings it up. */
	ifi.ifi_flags = up ? IFF_UP : 0;
	ifi.ifi_change = IFF_UP;
	moat_nl_req_init(&r, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
	if (new_name != NULL)
		moat_nl_put_str(&r, IFLA_IFNAME, new_name);
	if (mac != NULL)
		moat_nl_put(&r, IFLA_ADDRESS, mac, 6);
	if (mtu != 0)
		moat_nl_put_u32(&r, IFLA_MTU, mtu);
	e = moat_nl_request(&nl, &r, NULL, NULL, err);
	if (e < 0) {
		link_set_step(new_name, mac, mtu, up, step, sizeof(step));
		return net_fail(&nl, index, err, "%s", step);
	}
	return 0;
}

int moat_net_veth_add(const char *a, const char *b, moat_error *err)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct moat_nl_req r;
	size_t info, data, peer;
	int e;

	if ((e = net_name_check("veth", a, err)) < 0 ||
	    (e = net_name_check("veth peer", b, err)) < 0)
		return e;
	e = moat_nl_open(&nl, err);
	if (e < 0)
		return moat_error_prefix(err, "%s: add veth", a);
	moat_nl_req_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	moat_nl_put_str(&r, IFLA_IFNAME, a);
	info = moat_nl_nest_start(&r, IFLA_LINKINFO);
	moat_nl_put_str(&r, IFLA_INFO_KIND, "veth");
	data = moat_nl_nest_start(&r, IFLA_INFO_DATA);
	/* The peer is a whole link request of its own: an ifinfomsg, then its attributes. */
	peer = moat_nl_nest_start(&r, VETH_INFO_PEER);
	moat_nl_put_raw(&r, &ifi, sizeof(ifi));
	moat_nl_put_str(&r, IFLA_IFNAME, b);
	moat_nl_nest_end(&r, peer);
	moat_nl_nest_end(&r, data);
	moat_nl_nest_end(&r, info);
	e = moat_nl_request(&nl, &r, NULL, NULL, err);
	if (e < 0)
		return moat_error_prefix(err, "%s: add veth with peer %s", a, b);
	return 0;
}
