/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the files of src/libmoat/net/ share. */
#ifndef MOAT_NET_INTERNAL_H
#define MOAT_NET_INTERNAL_H

#include <stddef.h>

#include "error.h"
#include "netlink.h"

/* A link name the kernel can take (1 to 15 bytes, no '/', ':' or white space); what names
 * it for the error. Checked before any system call. */
int net_name_check(const char *what, const char *name, moat_error *err);
/* Prefix err, set by a step on link index, with the link's name and the step:
 * "eth0: add address 10.88.0.5/16: File exists". The name is looked up on nl (closed: not
 * looked up); "link 7" when it cannot be. Returns moat_error_ret(err). */
int net_fail(struct moat_nl *nl, int index, moat_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Open nl for a step on link index; err names the link when it fails. */
int net_open(struct moat_nl *nl, int index, moat_error *err);
/* An address's size for its family: 4, 16, or 0 for any other family. */
size_t net_addr_size(int family);

#endif
