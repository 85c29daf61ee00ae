/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a small rtnetlink client: request builder, ack and dump exchanges, checked parsing. */
#include "netlink.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "utils.h"

/* Large enough for the biggest datagram a dump sends (the kernel caps them at 32 KiB). */
#define NL_RECV_SIZE (64 * 1024)

int moat_nl_open(struct moat_nl *nl, moat_error *err)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1;

	nl->seq = 0;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl->fd < 0)
		return moat_error_set(err, errno, "netlink socket");
	/* Both are optional: an older kernel just sends plain acks. */
	(void)setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)setsockopt(nl->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		moat_nl_close(nl);
		return moat_error_set(err, e, "netlink bind");
	}
	return 0;
}

void moat_nl_close(struct moat_nl *nl)
{
	if (nl->fd >= 0) {
		int saved = errno;
		close(nl->fd);
		errno = saved;
	}
	nl->fd = -1;
}

void moat_nl_req_init(struct moat_nl_req *r, uint16_t type, uint16_t flags, const void *payload,
		      size_t len)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = NLMSG_HDRLEN;
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = NLM_F_REQUEST | flags;
	if (NLMSG_HDRLEN + NLMSG_ALIGN(len) > sizeof(r->buf)) {
		r->overflow = true;
		return;
	}
	if (payload != NULL)
		memcpy(r->buf + NLMSG_HDRLEN, payload, len);
	r->h.nlmsg_len += NLMSG_ALIGN(len);
}

/* Room for len more bytes (aligned) at the end, or NULL with the request marked overflowed.
 * The buffer is zeroed at init, so padding is already zeros. */
static uint8_t *req_reserve(struct moat_nl_req *r, size_t len)
{
	size_t at = r->h.nlmsg_len;

	if (r->overflow || len > sizeof(r->buf) || NLMSG_ALIGN(len) > sizeof(r->buf) - at) {
		r->overflow = true;
		return NULL;
	}
	r->h.nlmsg_len += NLMSG_ALIGN(len);
	return r->buf + at;
}

void moat_nl_put(struct moat_nl_req *r, uint16_t type, const void *data, size_t len)
{
	uint8_t *p;
	struct rtattr a;

	if (len > UINT16_MAX - RTA_LENGTH(0)) {
		r->overflow = true;
		return;
	}
	p = req_reserve(r, RTA_LENGTH(len));
	if (p == NULL)
		return;
	a.rta_len = (unsigned short)RTA_LENGTH(len);
	a.rta_type = type;
	memcpy(p, &a, sizeof(a));
	if (len > 0)
		memcpy(p + RTA_LENGTH(0), data, len);
}

void moat_nl_put_u32(struct moat_nl_req *r, uint16_t type, uint32_t v)
{
	moat_nl_put(r, type, &v, sizeof(v));
}

void moat_nl_put_str(struct moat_nl_req *r, uint16_t type, const char *s)
{
	moat_nl_put(r, type, s, strlen(s) + 1);
}

void moat_nl_put_raw(struct moat_nl_req *r, const void *data, size_t len)
{
	uint8_t *p = req_reserve(r, len);

	if (p != NULL)
		memcpy(p, data, len);
}

size_t moat_nl_nest_start(struct moat_nl_req *r, uint16_t type)
{
	size_t at = r->h.nlmsg_len;

	moat_nl_put(r, type, NULL, 0);
	return at;
}

void moat_nl_nest_end(struct moat_nl_req *r, size_t nest)
{
	struct rtattr a;
	size_t len = r->h.nlmsg_len - nest;

	if (r->overflow || len > UINT16_MAX) {
		r->overflow = true;
		return;
	}
	memcpy(&a, r->buf + nest, sizeof(a));
	a.rta_len = (unsigned short)len;
	memcpy(r->buf + nest, &a, sizeof(a));
}

int moat_nl_attrs(const void *buf, size_t len, const struct rtattr **tb, uint16_t max)
{
	const uint8_t *p = buf;

	memset(tb, 0, sizeof(*tb) * ((size_t)max + 1));
	while (len >= sizeof(struct rtattr)) {
		const struct rtattr *a = (const struct rtattr *)p;
		uint16_t type = a->rta_type & NLA_TYPE_MASK;
		size_t step = RTA_ALIGN((size_t)a->rta_len);

		if (a->rta_len < sizeof(struct rtattr) || a->rta_len > len)
			return -EBADMSG;
		if (type <= max)
			tb[type] = a;
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return 0;
}

const void *moat_nl_msg_payload(const struct nlmsghdr *h, size_t len)
{
	if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len - NLMSG_HDRLEN < len)
		return NULL;
	return NLMSG_DATA(h);
}

int moat_nl_msg_attrs(const struct nlmsghdr *h, size_t hdr_len, const struct rtattr **tb,
		      uint16_t max)
{
	size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(hdr_len);

	if (moat_nl_msg_payload(h, hdr_len) == NULL)
		return -EBADMSG;
	if (off >= h->nlmsg_len)
		return moat_nl_attrs(NULL, 0, tb, max);
	return moat_nl_attrs((const uint8_t *)h + off, h->nlmsg_len - off, tb, max);
}

const void *moat_nl_attr_data(const struct rtattr *a)
{
	return (const uint8_t *)a + RTA_LENGTH(0);
}

size_t moat_nl_attr_len(const struct rtattr *a)
{
	return a->rta_len - RTA_LENGTH(0);
}

bool moat_nl_attr_u32(const struct rtattr *a, uint32_t *ret)
{
	if (a == NULL || moat_nl_attr_len(a) != sizeof(*ret))
		return false;
	memcpy(ret, moat_nl_attr_data(a), sizeof(*ret));
	return true;
}

bool moat_nl_attr_str(const struct rtattr *a, char *buf, size_t size)
{
	const char *s;
	const char *nul;

	if (a == NULL)
		return false;
	s = moat_nl_attr_data(a);
	nul = memchr(s, '\0', moat_nl_attr_len(a));
	if (nul == NULL || (size_t)(nul - s) >= size)
		return false;
	memcpy(buf, s, (size_t)(nul - s) + 1);
	return true;
}

/* The extended ack's message of an NLMSG_ERROR or NLMSG_DONE h (whose payload starts with
 * the error), copied into buf; empty when there is none. The TLVs follow the error and, when
 * the kernel did not cap the ack, the echo of our request, aligned. */
static void extack_msg(const struct nlmsghdr *h, char *buf, size_t size)
{
	const struct rtattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = NLMSG_HDRLEN + sizeof(int);

	buf[0] = '\0';
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = moat_nl_msg_payload(h, sizeof(*e));
		uint32_t echo;

		if (e == NULL)
			return;
		echo = (h->nlmsg_flags & NLM_F_CAPPED) ? NLMSG_HDRLEN : e->msg.nlmsg_len;
		if (echo < NLMSG_HDRLEN || echo > h->nlmsg_len)
			return;
		off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(int) + (size_t)echo);
	}
	if (off >= h->nlmsg_len)
		return;
	if (moat_nl_attrs((const uint8_t *)h + off, h->nlmsg_len - off, tb, NLMSGERR_ATTR_MAX) < 0)
		return;
	if (!moat_nl_attr_str(tb[NLMSGERR_ATTR_MSG], buf, size))
		buf[0] = '\0';
}

/* The error of an NLMSG_ERROR or NLMSG_DONE message: 0 (an ack, the end of a dump) or the
 * kernel's negative errno with err filled. A success may still carry a warning. */
static int reply_error(const struct nlmsghdr *h, moat_error *err)
{
	const int *code = moat_nl_msg_payload(h, sizeof(int));
	char msg[256];
	int e;

	if (code == NULL) {
		if (h->nlmsg_type == NLMSG_DONE)
			return 0; /* old kernels end a dump with an empty DONE */
		return moat_error_msg(err, EBADMSG, "netlink: truncated error message");
	}
	memcpy(&e, code, sizeof(e));
	extack_msg(h, msg, sizeof(msg));
	if (e == 0) {
		if (msg[0] != '\0')
			moat_error_warn(err, "netlink: %s", msg);
		return 0;
	}
	e = e < 0 && e > -4096 ? -e : EPROTO;
	if (msg[0] != '\0')
		return moat_error_msg(err, e, "%s (%s)", strerror(e), msg);
	return moat_error_msg(err, e, "%s", strerror(e));
}

struct exchange {
	moat_nl_cb cb;
	void *data;
	uint32_t seq;
	bool dump;
	bool done;
	bool interrupted;
	int ret; /* the first error: a callback's or the kernel's */
};

/* One reply message. The exchange ends with NLMSG_ERROR (an ack, or any error) or, for a
 * dump, NLMSG_DONE. */
static void exchange_msg(struct exchange *x, const struct nlmsghdr *h, moat_error *err)
{
	int r = 0;

	if (h->nlmsg_seq != x->seq)
		return; /* not ours: a late reply to an earlier request */
	if (h->nlmsg_flags & NLM_F_DUMP_INTR)
		x->interrupted = true;
	if (h->nlmsg_type == NLMSG_ERROR || (x->dump && h->nlmsg_type == NLMSG_DONE)) {
		x->done = true;
		if (x->ret == 0)
			x->ret = reply_error(h, err);
		return;
	}
	if (h->nlmsg_type < NLMSG_MIN_TYPE || x->ret < 0 || x->cb == NULL)
		return;
	r = x->cb(h, x->data, err);
	if (r < 0)
		x->ret = r;
}

/* Read one datagram and handle each message in it, checking every length. */
static int exchange_recv(struct moat_nl *nl, struct exchange *x, uint8_t *buf, moat_error *err)
{
	struct sockaddr_nl sa;
	struct iovec iov = { .iov_base = buf, .iov_len = NL_RECV_SIZE };
	struct msghdr m = {
		.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1
	};
	ssize_t n;
	size_t left;

	do
		n = recvmsg(nl->fd, &m, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "netlink receive");
	if (m.msg_flags & MSG_TRUNC)
		return moat_error_msg(err, EMSGSIZE, "netlink: reply larger than %d bytes",
				      NL_RECV_SIZE);
	if (m.msg_namelen < sizeof(sa) || sa.nl_family != AF_NETLINK || sa.nl_pid != 0)
		return 0; /* not from the kernel */
	left = (size_t)n;
	for (uint8_t *p = buf; left >= NLMSG_HDRLEN && !x->done;) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)p;
		size_t step = NLMSG_ALIGN((size_t)h->nlmsg_len);

		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > left)
			return moat_error_msg(err, EBADMSG, "netlink: malformed reply");
		exchange_msg(x, h, err);
		if (step >= left)
			break;
		p += step;
		left -= step;
	}
	return 0;
}

static int exchange(struct moat_nl *nl, struct moat_nl_req *r, struct exchange *x, moat_error *err)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	_cleanup_free_ uint8_t *buf = NULL;
	ssize_t n;

	if (r->overflow)
		return moat_error_msg(err, EMSGSIZE, "netlink: request larger than %d bytes",
				      MOAT_NL_REQ_SIZE);
	r->h.nlmsg_seq = x->seq = ++nl->seq;
	do
		n = sendto(nl->fd, r->buf, r->h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "netlink send");
	buf = xmalloc(NL_RECV_SIZE);
	while (!x->done) {
		int e = exchange_recv(nl, x, buf, err);
		if (e < 0)
			return e;
	}
	if (x->ret == 0 && x->interrupted)
		return moat_error_msg(err, EAGAIN, "netlink: dump interrupted by a change");
	return x->ret;
}

int moat_nl_request(struct moat_nl *nl, struct moat_nl_req *r, moat_nl_cb cb, void *data,
		    moat_error *err)
{
	struct exchange x = { .cb = cb, .data = data };

	r->h.nlmsg_flags |= NLM_F_ACK;
	return exchange(nl, r, &x, err);
}

int moat_nl_dump(struct moat_nl *nl, struct moat_nl_req *r, moat_nl_cb cb, void *data,
		 moat_error *err)
{
	struct exchange x = { .cb = cb, .data = data, .dump = true };

	r->h.nlmsg_flags |= NLM_F_DUMP;
	return exchange(nl, r, &x, err);
}
