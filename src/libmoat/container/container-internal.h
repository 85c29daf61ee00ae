/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the container*.c files share. Not part of libmoat's interface. */
#ifndef MOAT_CONTAINER_INTERNAL_H
#define MOAT_CONTAINER_INTERNAL_H

#include "error.h"
#include "state.h"
#include "utils.h"

/* A container opened for an operation: its locked directory and state. */
struct moat_opened {
	int dirfd;
	struct moat_state *st;
	enum moat_status status;
};

/* clang-format off */
#define MOAT_OPENED_INIT { .dirfd = -1 }
/* clang-format on */

/* Lock the container's directory and read its state and status. */
int moat_opened_open(const char *root, const char *id, struct moat_opened *c, moat_error *err);
/* Close what open opened; c may be MOAT_OPENED_INIT or closed already. It is its own cleanup
 * helper, for a struct moat_opened held by value:
 *   _cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT; */
void moat_opened_close(struct moat_opened *c);
#define _cleanup_opened_ _cleanup_(moat_opened_close)

#endif
