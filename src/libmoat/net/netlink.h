/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a small rtnetlink client (NETLINK_ROUTE), for net.h and for the guest agent.
 *
 * A request is built in a bounded buffer: a header, a fixed payload (ifinfomsg, rtmsg...)
 * and attributes, nested ones too. moat_nl_request() sends it with NLM_F_ACK and waits for
 * the kernel's answer; moat_nl_dump() sends it with NLM_F_DUMP and hands every message of
 * the dump to a callback. Replies are untrusted input: every length is checked before it is
 * used. Depends on the C library, error.h and utils.h only (the agent links it statically).
 *
 * A kernel error is the kernel's errno with its message, and the extended ack's text when
 * there is one: "File exists", "Invalid argument (Unknown device type)". Callers prefix what
 * they were doing.
 */
#ifndef MOAT_NETLINK_H
#define MOAT_NETLINK_H

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct moat_nl {
	int fd; /* -1: closed */
	uint32_t seq;
};

/* A NETLINK_ROUTE socket (SOCK_CLOEXEC) asking for extended acks where the kernel has them. */
int moat_nl_open(struct moat_nl *nl, moat_error *err);
/* Close it; nl->fd < 0 is a no-op, so `_cleanup_(moat_nl_close) struct moat_nl nl = MOAT_NL_INIT`. */
void moat_nl_close(struct moat_nl *nl);
/* clang-format off */
#define MOAT_NL_INIT { -1, 0 }
/* clang-format on */

#define MOAT_NL_REQ_SIZE 1024

/* A request being built. Every put is bounded: one that does not fit marks the request as
 * overflowed, and sending it fails with EMSGSIZE, so builders need not check each put. */
struct moat_nl_req {
	union {
		struct nlmsghdr h;
		uint8_t buf[MOAT_NL_REQ_SIZE];
	};
	bool overflow;
};

/* Start a request of this type and flags (NLM_F_REQUEST is added) with a fixed payload of
 * len bytes copied from payload (NULL: zeros). */
void moat_nl_req_init(struct moat_nl_req *r, uint16_t type, uint16_t flags, const void *payload,
		      size_t len);
/* Append an attribute, padded to alignment. */
void moat_nl_put(struct moat_nl_req *r, uint16_t type, const void *data, size_t len);
void moat_nl_put_u32(struct moat_nl_req *r, uint16_t type, uint32_t v);
void moat_nl_put_str(struct moat_nl_req *r, uint16_t type, const char *s); /* with its NUL */
/* Append bytes without an attribute header (the ifinfomsg inside VETH_INFO_PEER). */
void moat_nl_put_raw(struct moat_nl_req *r, const void *data, size_t len);
/* Open a nested attribute; returns the offset that moat_nl_nest_end() closes. */
size_t moat_nl_nest_start(struct moat_nl_req *r, uint16_t type);
void moat_nl_nest_end(struct moat_nl_req *r, size_t nest);

/* Called for each reply message; a negative return stops the exchange with that error (err
 * filled), and the rest of the replies are read and dropped. */
typedef int (*moat_nl_cb)(const struct nlmsghdr *h, void *data, moat_error *err);

/* Send r with NLM_F_ACK and wait for the ack. Replies before it (the answer of a GET) go to
 * cb (NULL: ignored). Returns 0 or the kernel's negative errno. */
int moat_nl_request(struct moat_nl *nl, struct moat_nl_req *r, moat_nl_cb cb, void *data,
		    moat_error *err);
/* Send r with NLM_F_DUMP and call cb for each message until NLMSG_DONE. A dump the kernel
 * marks as interrupted (NLM_F_DUMP_INTR: the table changed meanwhile) fails with EAGAIN. */
int moat_nl_dump(struct moat_nl *nl, struct moat_nl_req *r, moat_nl_cb cb, void *data,
		 moat_error *err);

/* Index the attributes of [buf, buf + len) by type (NLA_F_NESTED and NLA_F_NET_BYTEORDER
 * masked off): tb[type] for type <= max, NULL for those absent; the last of a type wins.
 * Returns -EBADMSG when an attribute's length is impossible. */
int moat_nl_attrs(const void *buf, size_t len, const struct rtattr **tb, uint16_t max);
/* The same for the attributes of message h after its fixed payload of hdr_len bytes;
 * -EBADMSG when the message is shorter than that payload. */
int moat_nl_msg_attrs(const struct nlmsghdr *h, size_t hdr_len, const struct rtattr **tb,
		      uint16_t max);
/* The fixed payload of h when it holds at least len bytes, else NULL. */
const void *moat_nl_msg_payload(const struct nlmsghdr *h, size_t len);
const void *moat_nl_attr_data(const struct rtattr *a);
size_t moat_nl_attr_len(const struct rtattr *a);
/* An attribute's value when it has exactly that size; false when absent or of another size. */
bool moat_nl_attr_u32(const struct rtattr *a, uint32_t *ret);
/* A string attribute copied into buf (size bytes); false when absent, unterminated within
 * the attribute or too long for buf. */
bool moat_nl_attr_str(const struct rtattr *a, char *buf, size_t size);

#endif
