/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for src/libmoat/net/ against the real kernel: each test forks a child that
 * unshares a fresh network namespace (the host's interfaces, routes and tc are never
 * touched) and checks there, reporting by its exit status; the child prints what failed.
 * Links, addresses and routes read back, renames, extended acks, and real Ethernet frames
 * through a tap and tc redirects. Needs root (skipped otherwise). Run with
 * CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "net.h"
#include "netlink.h"
#include "utils.h"

#define SKIP_STATUS 77
#define ETHERTYPE_TEST 0x88b5 /* IEEE local experimental: nothing else answers it */

/* The child's checks: print the failure and exit 1 (cmocka's asserts would longjmp into the
 * parent's runner, copied into the child). */
static moat_error err = MOAT_ERROR_INIT;
#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                                             \
		}                                                                             \
	} while (0)
#define OK(call)                                                                      \
	do {                                                                          \
		if ((call) < 0) {                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				err.msg ? err.msg : "(no message)");                  \
			_exit(1);                                                     \
		}                                                                     \
		moat_error_clear(&err);                                               \
	} while (0)
/* call fails with code and a message that contains each of the strings. */
#define FAILS(call, code, ...)                                                                  \
	do {                                                                                    \
		const char *want_[] = { __VA_ARGS__ };                                          \
		CHECK((call) == -(code));                                                       \
		for (size_t i_ = 0; i_ < MOAT_ARRAY_SIZE(want_); i_++)                          \
			if (err.msg == NULL || strstr(err.msg, want_[i_]) == NULL) {            \
				fprintf(stderr, "%s:%d: '%s' lacks '%s'\n", __FILE__, __LINE__, \
					err.msg ? err.msg : "", want_[i_]);                     \
				_exit(1);                                                       \
			}                                                                       \
		moat_error_clear(&err);                                                         \
	} while (0)

static void in_netns(void (*fn)(void))
{
	int status = 0;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(20);
		if (unshare(CLONE_NEWNET) < 0) {
			fprintf(stderr, "unshare(CLONE_NEWNET): %s\n", strerror(errno));
			_exit(errno == EPERM ? SKIP_STATUS : 1);
		}
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS)
		skip();
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static struct moat_net_addr addr(int family, const char *text, uint8_t prefix)
{
	struct moat_net_addr a = { .family = family, .prefix = prefix };

	CHECK(inet_pton(family, text, a.addr) == 1);
	return a;
}

static struct moat_net_route route4(const char *dst, uint8_t len, const char *gw)
{
	struct moat_net_route r = { .family = AF_INET, .dst_len = len, .has_gateway = true };

	CHECK(inet_pton(AF_INET, dst, r.dst) == 1 && inet_pton(AF_INET, gw, r.gateway) == 1);
	return r;
}

/* The namespace's links; *ret the one named name (NULL: none). */
static struct moat_net_link *links_find(const char *name, struct moat_net_link **ret, size_t *ret_n)
{
	OK(moat_net_links(ret, ret_n, &err));
	for (size_t i = 0; i < *ret_n; i++)
		if (strcmp((*ret)[i].name, name) == 0)
			return &(*ret)[i];
	return NULL;
}

static int up(const char *name)
{
	int index = 0;

	OK(moat_net_link_index(name, &index, &err));
	OK(moat_net_link_set(index, NULL, NULL, 0, true, &err));
	return index;
}

static void loopback(void)
{
	struct moat_net_link *ls, *lo;
	size_t n;

	lo = links_find("lo", &ls, &n);
	CHECK(n == 1 && lo != NULL && lo->loopback && !lo->up && !lo->has_mac);
	moat_net_links_free(ls, n);
	up("lo");
	lo = links_find("lo", &ls, &n);
	/* 127.0.0.1 and ::1 are host scope, their routes in the local table */
	CHECK(lo != NULL && lo->up && lo->n_addrs == 0 && lo->n_routes == 0 && lo->mtu > 0);
	moat_net_links_free(ls, n);
}

static void test_loopback(void **state)
{
	in_netns(loopback);
}

static bool has_addr(const struct moat_net_link *l, const struct moat_net_addr *a)
{
	for (size_t i = 0; i < l->n_addrs; i++)
		if (l->addrs[i].family == a->family && l->addrs[i].prefix == a->prefix &&
		    memcmp(l->addrs[i].addr, a->addr, a->family == AF_INET ? 4 : 16) == 0)
			return true;
	return false;
}

static bool has_route(const struct moat_net_link *l, const struct moat_net_route *r)
{
	for (size_t i = 0; i < l->n_routes; i++) {
		const struct moat_net_route *x = &l->routes[i];

		if (x->family == r->family && x->dst_len == r->dst_len &&
		    memcmp(x->dst, r->dst, 4) == 0 && x->has_gateway == r->has_gateway &&
		    memcmp(x->gateway, r->gateway, 4) == 0 && x->priority == r->priority)
			return true;
	}
	return false;
}

static void veth_config(void)
{
	struct moat_net_addr a4 = addr(AF_INET, "10.200.0.1", 24);
	struct moat_net_addr a6 = addr(AF_INET6, "fd00:200::1", 64);
	struct moat_net_route sub = route4("10.201.0.0", 16, "10.200.0.254");
	struct moat_net_route def = route4("0.0.0.0", 0, "10.200.0.254");
	struct moat_net_link *ls, *va, *vb;
	size_t n;
	int ia;

	OK(moat_net_veth_add("va", "vb", &err));
	FAILS(moat_net_veth_add("va", "vc", &err), EEXIST,
	      "va: add veth with peer vc: File exists");
	ia = up("va");
	up("vb");
	OK(moat_net_addr_add(ia, &a4, &err));
	OK(moat_net_addr_add(ia, &a6, &err));
	FAILS(moat_net_addr_add(ia, &a4, &err), EEXIST,
	      "va: add address 10.200.0.1/24: File exists");
	OK(moat_net_route_add(ia, &sub, &err));
	OK(moat_net_route_add(ia, &def, &err));
	FAILS(moat_net_route_add(ia, &def, &err), EEXIST, "va: add route default via 10.200.0.254");
	va = links_find("va", &ls, &n);
	CHECK(n == 3 && va != NULL && va->index == ia && va->has_mac && va->mtu == 1500 && va->up);
	CHECK(!va->loopback && (va->mac[0] & 1) == 0);
	CHECK(va->n_addrs == 2 && has_addr(va, &a4) && has_addr(va, &a6));
	CHECK(va->n_routes == 2 && has_route(va, &sub) && has_route(va, &def));
	moat_net_links_free(ls, n);
	vb = links_find("vb", &ls, &n);
	CHECK(vb != NULL && vb->has_mac && vb->n_addrs == 0 && vb->n_routes == 0);
	moat_net_links_free(ls, n);
}

static void test_veth_config(void **state)
{
	in_netns(veth_config);
}

static void link_set(void)
{
	static const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0xaa, 0xbb, 0xcc };
	struct moat_net_link *ls, *l;
	size_t n;
	int ix = 0;

	OK(moat_net_veth_add("vx", "vy", &err));
	OK(moat_net_link_index("vx", &ix, &err));
	OK(moat_net_link_set(ix, "renamed0", mac, 1400, true, &err));
	FAILS(moat_net_link_index("vx", &ix, &err), ENODEV, "vx: find link: No such device");
	l = links_find("renamed0", &ls, &n);
	CHECK(l != NULL && l->index == ix && l->has_mac && memcmp(l->mac, mac, 6) == 0);
	CHECK(l->mtu == 1400 && l->up);
	moat_net_links_free(ls, n);
	/* Renaming an up link: refused before Linux 6.2, allowed since. */
	if (moat_net_link_set(ix, "again0", NULL, 0, true, &err) < 0) {
		CHECK(err.code == EBUSY &&
		      strstr(err.msg, "renamed0: set name again0, up: ") != NULL);
		moat_error_clear(&err);
	} else {
		OK(moat_net_link_set(ix, "renamed0", NULL, 0, true, &err));
	}
	OK(moat_net_link_set(ix, NULL, NULL, 0, false, &err));
	l = links_find("renamed0", &ls, &n);
	CHECK(l != NULL && !l->up && l->mtu == 1400);
	moat_net_links_free(ls, n);
}

static void test_link_set(void **state)
{
	in_netns(link_set);
}

static void addr_del(void)
{
	struct moat_net_addr a4 = addr(AF_INET, "10.200.0.1", 24);
	struct moat_net_addr a6 = addr(AF_INET6, "fd00:200::1", 64);
	struct moat_net_link *ls, *l;
	size_t n;
	int ix;

	OK(moat_net_veth_add("vd0", "vd1", &err));
	ix = up("vd0");
	OK(moat_net_addr_add(ix, &a4, &err));
	OK(moat_net_addr_add(ix, &a6, &err));
	OK(moat_net_addr_del(ix, &a4, &err));
	l = links_find("vd0", &ls, &n);
	CHECK(l != NULL && l->n_addrs == 1 && has_addr(l, &a6));
	moat_net_links_free(ls, n);
	FAILS(moat_net_addr_del(ix, &a4, &err), EADDRNOTAVAIL,
	      "vd0: delete address 10.200.0.1/24: ");
	OK(moat_net_addr_del(ix, &a6, &err));
	FAILS(moat_net_addr_del(ix, &a6, &err), EADDRNOTAVAIL,
	      "vd0: delete address fd00:200::1/64");
	l = links_find("vd0", &ls, &n);
	CHECK(l != NULL && l->n_addrs == 0);
	moat_net_links_free(ls, n);
}

static void test_addr_del(void **state)
{
	in_netns(addr_del);
}

/* A packet socket on link index for the test's ethertype. */
static int packet_socket(int index)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETHERTYPE_TEST),
				   .sll_ifindex = index };
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETHERTYPE_TEST));

	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sll, sizeof(sll)) == 0);
	return fd;
}

static size_t make_frame(uint8_t *f, const char *text)
{
	memset(f, 0, 64);
	memset(f, 0xff, 6);
	memcpy(f + 6, "\x02\x00\x00\x00\x00\x42", 6);
	f[12] = ETHERTYPE_TEST >> 8;
	f[13] = ETHERTYPE_TEST & 0xff;
	snprintf((char *)f + 14, 64 - 14, "%s", text);
	return 64;
}

/* Whether frame f arrives on fd within ms milliseconds; other frames are skipped (the
 * veths' IPv6 neighbour discovery goes through the redirect too). */
static bool receive(int fd, const uint8_t *f, size_t len, int ms)
{
	uint64_t end = moat_monotonic_ms() + (uint64_t)ms;
	uint8_t buf[2048];

	for (uint64_t now; (now = moat_monotonic_ms()) < end;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, (int)(end - now)) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		CHECK(n >= 0);
		if ((size_t)n == len && memcmp(buf, f, len) == 0)
			return true;
	}
	return false;
}

static void tap_redirect(void)
{
	_cleanup_close_ int tap = -1, pkt = -1;
	uint8_t f1[64], f2[64];
	int ia, ib, it = 0;

	OK(moat_net_veth_add("ta", "tb", &err));
	ia = up("ta");
	ib = up("tb");
	OK(moat_net_tap_open("tap0", &tap, &it, &err));
	CHECK(tap >= 0 && it > 0 && (fcntl(tap, F_GETFD) & FD_CLOEXEC));
	OK(moat_net_link_set(it, NULL, NULL, 0, true, &err));
	OK(moat_net_redirect(ia, it, &err));
	OK(moat_net_redirect(it, ia, &err));
	FAILS(moat_net_redirect(ia, it, &err), EEXIST, "ta: add ingress qdisc: File exists");
	pkt = packet_socket(ib);

	CHECK(write(pkt, f1, make_frame(f1, "from tb to the tap")) == 64);
	CHECK(receive(tap, f1, 64, 2000));
	CHECK(write(tap, f2, make_frame(f2, "from the tap to tb")) == 64);
	CHECK(receive(pkt, f2, 64, 2000));

	OK(moat_net_redirect_remove(ia, &err));
	OK(moat_net_redirect_remove(it, &err));
	OK(moat_net_redirect_remove(ia, &err)); /* none left: not an error */
	CHECK(write(pkt, f1, 64) == 64);
	CHECK(!receive(tap, f1, 64, 300));
	/* redirecting again works: the first filter went with its qdisc */
	OK(moat_net_redirect(ia, it, &err));
	CHECK(write(pkt, f1, 64) == 64);
	CHECK(receive(tap, f1, 64, 2000));

	close(TAKE_FD(tap));
	FAILS(moat_net_link_index("tap0", &it, &err), ENODEV, "tap0: find link");
}

static void test_tap_redirect(void **state)
{
	in_netns(tap_redirect);
}

static void bad_input(void)
{
	struct moat_net_addr a4 = addr(AF_INET, "10.200.0.1", 24);
	struct moat_net_route onlink = { .family = AF_INET, .dst_len = 16, .dst = { 10, 201 } };
	struct rlimit none = { 0, 0 };
	int ix = 0, fd = -1;

	FAILS(moat_net_link_set(9999, NULL, NULL, 1400, true, &err), ENODEV,
	      "link 9999: set MTU 1400");
	FAILS(moat_net_addr_add(9999, &a4, &err), ENODEV, "link 9999: add address 10.200.0.1/24");
	FAILS(moat_net_route_add(9999, &onlink, &err), ENODEV,
	      "link 9999: add route 10.201.0.0/16: ");
	FAILS(moat_net_redirect(9999, 1, &err), ENODEV, "link 9999: add ingress qdisc");
	FAILS(moat_net_redirect_remove(9999, &err), ENODEV, "link 9999: delete ingress qdisc");
	FAILS(moat_net_link_index("nosuch0", &ix, &err), ENODEV, "nosuch0: find link");
	FAILS(moat_net_link_set(0, NULL, NULL, 0, true, &err), EINVAL, "link 0: not a link index");
	a4.prefix = 33;
	FAILS(moat_net_addr_add(1, &a4, &err), EINVAL, "link 1: add address", "longer");

	/* No descriptor can be opened from here: a refusal must come before any system call. */
	CHECK(setrlimit(RLIMIT_NOFILE, &none) == 0);
	FAILS(moat_net_link_index("abcdefghijklmnop", &ix, &err), EINVAL, "abcdefghijklmnop",
	      "1 to 15");
	FAILS(moat_net_tap_open("abcdefghijklmnop", &fd, &ix, &err), EINVAL, "abcdefghijklmnop");
	FAILS(moat_net_veth_add("ok0", "abcdefghijklmnop", &err), EINVAL, "veth peer");
	FAILS(moat_net_link_set(1, "abcdefghijklmnop", NULL, 0, false, &err), EINVAL, "new name");
	FAILS(moat_net_link_set(1, "a/b", NULL, 0, false, &err), EINVAL, "not a valid link name");
	FAILS(moat_net_link_index("", &ix, &err), EINVAL, "1 to 15");
	/* and this one did need a socket */
	FAILS(moat_net_link_index("lo", &ix, &err), EMFILE, "netlink socket");
}

static void test_bad_input(void **state)
{
	in_netns(bad_input);
}

/* The extended ack's text reaches the error: a link of a kind no kernel has. */
static void extack(void)
{
	_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT;
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct moat_nl_req r;
	size_t info;

	OK(moat_nl_open(&nl, &err));
	moat_nl_req_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	moat_nl_put_str(&r, IFLA_IFNAME, "odd0");
	info = moat_nl_nest_start(&r, IFLA_LINKINFO);
	moat_nl_put_str(&r, IFLA_INFO_KIND, "no-such-kind");
	moat_nl_nest_end(&r, info);
	CHECK(moat_nl_request(&nl, &r, NULL, NULL, &err) < 0);
	fprintf(stderr, "# unknown link kind: %s\n", err.msg);
	CHECK(strstr(err.msg, " (") != NULL); /* "Operation not supported (Unknown device type)" */
	moat_error_clear(&err);
	/* an overflowing request is refused whole */
	moat_nl_req_init(&r, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	for (int i = 0; i < 200; i++)
		moat_nl_put_str(&r, IFLA_IFNAME, "lo");
	FAILS(moat_nl_request(&nl, &r, NULL, NULL, &err), EMSGSIZE, "request larger");
}

static void test_extack(void **state)
{
	in_netns(extack);
}

/* The attribute parser on hostile input, no kernel needed. */
static void test_attrs(void **state)
{
	const struct rtattr *tb[4];
	uint32_t buf[8] = { 0 };
	struct rtattr a = { .rta_len = 8, .rta_type = 2 };
	uint32_t v = 0;

	memcpy(buf, &a, sizeof(a));
	buf[1] = 42;
	assert_int_equal(moat_nl_attrs(buf, 8, tb, 3), 0);
	assert_true(moat_nl_attr_u32(tb[2], &v) && v == 42 && tb[1] == NULL);
	assert_int_equal(moat_nl_attrs(buf, 6, tb, 3), -EBADMSG); /* overruns the buffer */
	a.rta_len = 2;
	memcpy(buf, &a, sizeof(a));
	assert_int_equal(moat_nl_attrs(buf, 8, tb, 3), -EBADMSG); /* shorter than its header */
	a.rta_len = 7;
	a.rta_type = 9; /* beyond max: ignored */
	memcpy(buf, &a, sizeof(a));
	assert_int_equal(moat_nl_attrs(buf, 8, tb, 3), 0);
	assert_null(tb[2]);
	a.rta_len = 6;
	a.rta_type = 1; /* a string without its NUL */
	memcpy(buf, &a, sizeof(a));
	memcpy(&buf[1], "ab", 2);
	assert_int_equal(moat_nl_attrs(buf, 8, tb, 3), 0);
	{
		char s[8];

		assert_false(moat_nl_attr_str(tb[1], s, sizeof(s)));
		assert_false(moat_nl_attr_u32(tb[1], &v));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attrs),       cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_veth_config), cmocka_unit_test(test_link_set),
		cmocka_unit_test(test_addr_del),    cmocka_unit_test(test_tap_redirect),
		cmocka_unit_test(test_bad_input),   cmocka_unit_test(test_extack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
