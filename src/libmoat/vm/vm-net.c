/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a microVM on the container's network (vm-net.h). */
#include "vm-net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "strv.h"
#include "vm-launch.h"
#include "utils.h"

/* network.json is ours; a bound on what is read back. */
#define NET_STATE_MAX (1 << 20)

/* ---- in the namespace ------------------------------------------------------------------- */

/* Run fn in the network namespace at path, and come back. */
static int in_netns(const char *path, int (*fn)(void *, moat_error *), void *data, bool gone_ok,
		    moat_error *err)
{
	_cleanup_close_ int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int there = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (there < 0 && gone_ok && errno == ENOENT)
		return 0;
	if (self < 0 || there < 0)
		return moat_error_set(err, errno, "network namespace %s: open", path);
	if (setns(there, CLONE_NEWNET) < 0)
		return moat_error_set(err, errno, "network namespace %s: join", path);
	r = fn(data, err);
	if (setns(self, CLONE_NEWNET) < 0)
		abort(); /* moat would go on in the container's network */
	return r;
}

static void nic_clear(struct moat_vm_nic *n)
{
	moat_net_link_clear(&n->link);
	if (n->tap_fd >= 0)
		close(n->tap_fd);
	n->tap_fd = -1;
}

void moat_vm_net_clear(struct moat_vm_net *net)
{
	for (size_t i = 0; i < net->n; i++)
		nic_clear(&net->nics[i]);
	free(net->nics);
	net->nics = NULL;
	net->n = 0;
}

/* The interface's addresses back, then its routes (those without a gateway first: the
 * gateways must be reachable); what is there already is no error. */
static int restore_link(const struct moat_net_link *l, int index, moat_error *err)
{
	moat_error e = MOAT_ERROR_INIT;
	int r;

	if (moat_net_redirect_remove(index, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < l->n_addrs; i++) {
		r = moat_net_addr_add(index, &l->addrs[i], &e);
		moat_error_clear(&e);
		if (r < 0 && r != -EEXIST)
			return moat_net_addr_add(index, &l->addrs[i], err);
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < l->n_routes; i++) {
			if (l->routes[i].has_gateway != (pass == 1))
				continue;
			r = moat_net_route_add(index, &l->routes[i], &e);
			moat_error_clear(&e);
			if (r < 0 && r != -EEXIST)
				return moat_net_route_add(index, &l->routes[i], err);
		}
	return 0;
}

/* One interface: its tap, the redirects both ways, its addresses off. */
static int take_link(struct moat_vm_nic *n, size_t k, moat_error *err)
{
	int tap_index;

	snprintf(n->tap, sizeof(n->tap), "moat-tap%u", (unsigned)(k % MOAT_VM_MAX_NICS));
	if (moat_net_tap_open(n->tap, &n->tap_fd, &tap_index, err) < 0 ||
	    moat_net_link_set(tap_index, NULL, NULL, n->link.mtu, true, err) < 0 ||
	    moat_net_redirect(n->link.index, tap_index, err) < 0)
		return moat_error_ret(err);
	n->redirected = true;
	if (moat_net_redirect(tap_index, n->link.index, err) < 0)
		return moat_error_ret(err);
	for (; n->addrs_taken < n->link.n_addrs; n->addrs_taken++)
		if (moat_net_addr_del(n->link.index, &n->link.addrs[n->addrs_taken], err) < 0)
			return moat_error_ret(err);
	return 0;
}

struct take {
	struct moat_vm_net *net;
	size_t taken;
};

/* Only Ethernet interfaces, at most MOAT_VM_MAX_NICS of them, reach the guest. */
static int check_links(const struct moat_net_link *links, size_t n, moat_error *err)
{
	size_t carried = 0;

	for (size_t i = 0; i < n; i++) {
		if (links[i].loopback)
			continue;
		if (strncmp(links[i].name, "moat-tap", 8) == 0)
			return moat_error_msg(err, EOPNOTSUPP,
					      "microvm: the network namespace's interfaces are "
					      "carried by another microVM already (%s), not one of "
					      "this --root's: a pod's containers run under the "
					      "--root of its sandbox",
					      links[i].name);
		if (!links[i].has_mac)
			return moat_error_msg(
				err, EOPNOTSUPP,
				"microvm: interface %s has no Ethernet address; only "
				"Ethernet interfaces (veth and the like) reach the guest",
				links[i].name);
		if (++carried > MOAT_VM_MAX_NICS)
			return moat_error_msg(err, EOPNOTSUPP,
					      "microvm: interface %s: at most %d interfaces reach "
					      "the guest",
					      links[i].name, MOAT_VM_MAX_NICS);
	}
	return 0;
}

static int read_links(void *data, moat_error *err)
{
	struct moat_vm_net *net = data;
	struct moat_net_link *links = NULL;
	size_t n = 0;

	if (moat_net_links(&links, &n, err) < 0)
		return moat_error_ret(err);
	if (check_links(links, n, err) < 0) {
		moat_net_links_free(links, n);
		return moat_error_ret(err);
	}
	net->nics = xcalloc(n + 1, sizeof(*net->nics));
	for (size_t i = 0; i < n; i++) {
		if (links[i].loopback) {
			moat_net_link_clear(&links[i]);
			continue;
		}
		net->nics[net->n].link = links[i];
		net->nics[net->n++].tap_fd = -1;
	}
	free(links);
	return 0;
}

static int take_all(void *data, moat_error *err)
{
	struct take *t = data;

	for (; t->taken < t->net->n; t->taken++)
		if (take_link(&t->net->nics[t->taken], t->taken, err) < 0)
			return moat_error_prefix(err, "microvm: interface %s",
						 t->net->nics[t->taken].link.name);
	return 0;
}

/* Undo what take_all did, and only that: an interface it did not redirect may be
 * another's. */
static int undo_all(void *data, moat_error *err)
{
	struct take *t = data;

	(void)err;
	for (size_t i = 0; i <= t->taken && i < t->net->n; i++) {
		struct moat_vm_nic *n = &t->net->nics[i];
		struct moat_net_link done = n->link;
		moat_error e = MOAT_ERROR_INIT;

		if (!n->redirected)
			continue;
		done.n_addrs = n->addrs_taken;
		done.n_routes = n->addrs_taken == n->link.n_addrs ? n->link.n_routes : 0;
		restore_link(&done, n->link.index, &e);
		moat_error_clear(&e);
	}
	return 0;
}

/* ---- network.json ----------------------------------------------------------------------- */

static void gen_str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gen_route(yajl_gen g, const struct moat_net_route *r)
{
	struct moat_net_addr dst = { .family = r->family, .prefix = r->dst_len };
	char text[64];

	memcpy(dst.addr, r->dst, sizeof(dst.addr));
	moat_net_addr_format(&dst, text, sizeof(text));
	yajl_gen_map_open(g);
	gen_str(g, "dst");
	gen_str(g, text);
	if (r->has_gateway) {
		gen_str(g, "gateway");
		inet_ntop(r->family, r->gateway, text, sizeof(text));
		gen_str(g, text);
	}
	gen_str(g, "priority");
	yajl_gen_integer(g, r->priority);
	yajl_gen_map_close(g);
}

static void gen_link(yajl_gen g, const struct moat_net_link *l)
{
	char text[64];

	yajl_gen_map_open(g);
	gen_str(g, "name");
	gen_str(g, l->name);
	gen_str(g, "index");
	yajl_gen_integer(g, l->index);
	gen_str(g, "mac");
	snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", l->mac[0], l->mac[1],
		 l->mac[2], l->mac[3], l->mac[4], l->mac[5]);
	gen_str(g, text);
	gen_str(g, "mtu");
	yajl_gen_integer(g, l->mtu);
	gen_str(g, "addresses");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < l->n_addrs; i++) {
		moat_net_addr_format(&l->addrs[i], text, sizeof(text));
		gen_str(g, text);
	}
	yajl_gen_array_close(g);
	gen_str(g, "routes");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < l->n_routes; i++)
		gen_route(g, &l->routes[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

static int save(int dirfd, const char *netns_path, bool own, const struct moat_vm_net *net,
		moat_error *err)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	const unsigned char *buf;
	size_t len;
	int r;

	yajl_gen_map_open(g);
	gen_str(g, "netns");
	gen_str(g, netns_path);
	gen_str(g, "own");
	yajl_gen_bool(g, own);
	gen_str(g, "interfaces");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < net->n; i++)
		gen_link(g, &net->nics[i].link);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	r = write_file_atomic_at(dirfd, MOAT_VM_NET_STATE, buf, len, 0600, err);
	yajl_gen_free(g);
	return r;
}

int moat_vm_net_take(const char *netns_path, bool own, int dirfd, struct moat_vm_net *ret,
		     moat_error *err)
{
	struct moat_vm_net net = { 0 };
	struct take t = { .net = &net };

	if (in_netns(netns_path, read_links, &net, false, err) < 0)
		goto fail;
	if (net.n == 0) {
		free(net.nics);
		*ret = (struct moat_vm_net){ 0 };
		return 0;
	}
	if (save(dirfd, netns_path, own, &net, err) < 0)
		goto fail;
	if (in_netns(netns_path, take_all, &t, false, err) < 0) {
		moat_error e = MOAT_ERROR_INIT;

		in_netns(netns_path, undo_all, &t, true, &e);
		moat_error_clear(&e);
		unlinkat(dirfd, MOAT_VM_NET_STATE, 0);
		goto fail;
	}
	*ret = net;
	return 0;
fail:
	moat_vm_net_clear(&net);
	return moat_error_ret(err);
}

/* ---- back at delete --------------------------------------------------------------------- */

/* "10.88.0.5/16" (or without a prefix: an address, /32 or /128) into *a. */
static int parse_addr(const char *text, struct moat_net_addr *a)
{
	char buf[64];
	char *slash;

	if (text == NULL || strlen(text) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash != NULL)
		*slash++ = '\0';
	a->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(a->family, buf, a->addr) != 1)
		return -1;
	a->prefix = (uint8_t)(slash ? atoi(slash) : a->family == AF_INET ? 32 : 128);
	return 0;
}

static const char *str_at(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };

	return YAJL_GET_STRING(yajl_tree_get(v, path, yajl_t_string));
}

static int parse_route(yajl_val v, struct moat_net_route *r)
{
	const char *path[] = { "priority", NULL };
	yajl_val prio = yajl_tree_get(v, path, yajl_t_number);
	struct moat_net_addr a;

	if (parse_addr(str_at(v, "dst"), &a) < 0)
		return -1;
	*r = (struct moat_net_route){ .family = a.family,
				      .dst_len = a.prefix,
				      .priority = prio ? (uint32_t)YAJL_GET_INTEGER(prio) : 0 };
	memcpy(r->dst, a.addr, sizeof(r->dst));
	if (str_at(v, "gateway") != NULL) {
		if (parse_addr(str_at(v, "gateway"), &a) < 0)
			return -1;
		r->has_gateway = true;
		memcpy(r->gateway, a.addr, sizeof(r->gateway));
	}
	return 0;
}

static yajl_val array_at(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };

	return yajl_tree_get(v, path, yajl_t_array);
}

static int parse_link(yajl_val v, struct moat_net_link *l)
{
	yajl_val addrs = array_at(v, "addresses"), routes = array_at(v, "routes");
	const char *name = str_at(v, "name"), *mac = str_at(v, "mac");
	const char *mtu_path[] = { "mtu", NULL };
	yajl_val mtu = yajl_tree_get(v, mtu_path, yajl_t_number);

	if (name == NULL || strlen(name) >= sizeof(l->name) || addrs == NULL || routes == NULL)
		return -1;
	snprintf(l->name, sizeof(l->name), "%s", name);
	/* (a network.json from before they were recorded has neither: delete needs neither) */
	if (mac != NULL)
		l->has_mac =
			sscanf(mac, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx", &l->mac[0], &l->mac[1],
			       &l->mac[2], &l->mac[3], &l->mac[4], &l->mac[5]) == 6;
	if (mtu != NULL && YAJL_IS_INTEGER(mtu))
		l->mtu = (uint32_t)YAJL_GET_INTEGER(mtu);
	l->addrs = xcalloc(addrs->u.array.len + 1, sizeof(*l->addrs));
	for (; l->n_addrs < addrs->u.array.len; l->n_addrs++)
		if (parse_addr(YAJL_GET_STRING(addrs->u.array.values[l->n_addrs]),
			       &l->addrs[l->n_addrs]) < 0)
			return -1;
	l->routes = xcalloc(routes->u.array.len + 1, sizeof(*l->routes));
	for (; l->n_routes < routes->u.array.len; l->n_routes++)
		if (parse_route(routes->u.array.values[l->n_routes], &l->routes[l->n_routes]) < 0)
			return -1;
	return 0;
}

static int give_back_all(void *data, moat_error *err)
{
	yajl_val list = array_at(data, "interfaces");

	for (size_t i = 0; list != NULL && i < list->u.array.len; i++) {
		struct moat_net_link l = { 0 };
		moat_error e = MOAT_ERROR_INIT;
		int index, r = -1;

		if (parse_link(list->u.array.values[i], &l) == 0 &&
		    moat_net_link_index(l.name, &index, &e) == 0)
			r = restore_link(&l, index, err);
		else if (l.name[0] == '\0')
			r = moat_error_msg(err, EINVAL, MOAT_VM_NET_STATE ": interface %zu", i);
		else
			r = 0; /* the engine took it away already */
		moat_error_clear(&e);
		moat_net_link_clear(&l);
		if (r < 0)
			return moat_error_prefix(err, "microvm: interface %s back", l.name);
	}
	return 0;
}

static bool is_own(yajl_val tree)
{
	const char *path[] = { "own", NULL };

	return YAJL_IS_TRUE(yajl_tree_get(tree, path, yajl_t_true));
}

int moat_vm_net_load(int fd, struct moat_vm_net *ret, moat_error *err)
{
	struct moat_vm_net net = { 0 };
	char *text = xmalloc(NET_STATE_MAX + 1);
	ssize_t n = read_all(fd, text, NET_STATE_MAX);
	yajl_val tree = NULL, list = NULL;
	int r = 0;

	if (n >= 0) {
		text[n] = '\0';
		tree = yajl_tree_parse(text, NULL, 0);
		list = tree ? array_at(tree, "interfaces") : NULL;
	}
	free(text);
	if (list == NULL || list->u.array.len > MOAT_VM_MAX_NICS)
		r = moat_error_msg(err, EINVAL, "microvm: " MOAT_VM_NET_STATE ": unreadable");
	if (r == 0)
		net.nics = xcalloc(list->u.array.len + 1, sizeof(*net.nics));
	for (size_t i = 0; r == 0 && i < list->u.array.len; i++) {
		struct moat_vm_nic *nic = &net.nics[net.n++];

		nic->tap_fd = -1;
		/* the taps' names are their places (take_link) */
		snprintf(nic->tap, sizeof(nic->tap), "moat-tap%u",
			 (unsigned)(i % MOAT_VM_MAX_NICS));
		if (parse_link(list->u.array.values[i], &nic->link) < 0 || !nic->link.has_mac)
			r = moat_error_msg(err, EINVAL,
					   "microvm: " MOAT_VM_NET_STATE ": interface %zu", i);
	}
	yajl_tree_free(tree);
	if (r < 0) {
		moat_vm_net_clear(&net);
		return r;
	}
	*ret = net;
	return 0;
}

int moat_vm_net_give_back(int dirfd, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	yajl_val tree;
	size_t len;
	int r;

	/* (faccessat first: a failed read would set err, and clearing it would take the
	 * warnings the caller gathered with it) */
	if (faccessat(dirfd, MOAT_VM_NET_STATE, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	r = read_file_at(dirfd, MOAT_VM_NET_STATE, NET_STATE_MAX, &text, &len, err);
	if (r < 0)
		return moat_error_ret(err);
	tree = yajl_tree_parse(text, NULL, 0);
	if (tree == NULL || str_at(tree, "netns") == NULL) {
		yajl_tree_free(tree);
		return moat_error_msg(err, EINVAL, "microvm: " MOAT_VM_NET_STATE ": not ours");
	}
	/* the container's own namespace goes with it; its path names a pid, maybe another's now */
	r = is_own(tree) ? 0 : in_netns(str_at(tree, "netns"), give_back_all, tree, true, err);
	yajl_tree_free(tree);
	if (r == 0)
		unlinkat(dirfd, MOAT_VM_NET_STATE, 0);
	return r;
}

/* ---- for the guest and the state --------------------------------------------------------- */

char **moat_vm_net_names(const struct moat_vm_net *net)
{
	char **v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < net->n; i++) {
		strv_push(&v, &n, net->nics[i].link.name);
		strv_push(&v, &n, net->nics[i].tap);
	}
	if (v == NULL)
		v = xcalloc(1, sizeof(*v));
	return v;
}

static size_t addr_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

static struct moat_proto_interface interface_of(const struct moat_net_link *l)
{
	struct moat_proto_interface p = {
		.name = (char *)l->name, .mac = (uint8_t *)l->mac, .mac_len = 6, .mtu = l->mtu
	};

	p.addresses = xcalloc(l->n_addrs + 1, sizeof(*p.addresses));
	for (size_t i = 0; i < l->n_addrs; i++)
		p.addresses[p.n_addresses++] =
			(struct moat_proto_ifaddr){ (uint8_t *)l->addrs[i].addr,
						    addr_bytes(l->addrs[i].family),
						    l->addrs[i].prefix };
	p.routes = xcalloc(l->n_routes + 1, sizeof(*p.routes));
	for (size_t i = 0; i < l->n_routes; i++) {
		const struct moat_net_route *r = &l->routes[i];

		p.routes[p.n_routes++] = (struct moat_proto_route){
			.dst = (uint8_t *)r->dst,
			.dst_bytes = addr_bytes(r->family),
			.dst_len = r->dst_len,
			.gateway = r->has_gateway ? (uint8_t *)r->gateway : NULL,
			.gateway_len = r->has_gateway ? addr_bytes(r->family) : 0,
			.has_priority = r->priority != 0,
			.priority = r->priority,
		};
	}
	return p;
}

void moat_vm_net_start(const struct moat_vm_net *net, struct moat_msg_start *m)
{
	m->n_interfaces = 0;
	m->interfaces = net->n ? xcalloc(net->n, sizeof(*m->interfaces)) : NULL;
	for (size_t i = 0; i < net->n; i++)
		m->interfaces[m->n_interfaces++] = interface_of(&net->nics[i].link);
}

void moat_vm_net_start_free(struct moat_msg_start *m)
{
	for (size_t i = 0; i < m->n_interfaces; i++) {
		free(m->interfaces[i].addresses);
		free(m->interfaces[i].routes);
	}
	free(m->interfaces);
	m->interfaces = NULL;
	m->n_interfaces = 0;
}

char *moat_vm_net_describe(const struct moat_vm_net *net)
{
	char *s = xstrdup("");

	for (size_t i = 0; i < net->n; i++) {
		const struct moat_net_link *l = &net->nics[i].link;
		char *next = xasprintf("%s%s%s", s, i ? "; " : "", l->name);

		free(s);
		s = next;
		for (size_t k = 0; k < l->n_addrs; k++) {
			char text[64];

			moat_net_addr_format(&l->addrs[k], text, sizeof(text));
			next = xasprintf("%s %s", s, text);
			free(s);
			s = next;
		}
	}
	return s;
}
