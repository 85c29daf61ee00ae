/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the auto-userns pool, host id ranges handed to containers that the policy puts in a
 * user namespace of moat's making (policy rule auto-userns).
 *
 * The pool is a run of equal ranges (policy file: autoUserns.hostStart, idsPerContainer,
 * containers). A range is lent to one container at a time, whatever --root it was created
 * under: the loans are files in MOAT_IDPOOL_DIR, one per range ("<start>-<count>", holding the
 * container's state directory), and the container's state directory holds the same range in
 * MOAT_IDPOOL_MARKER. A loan whose state directory is gone or names another range is stale
 * and is taken back, so a crash cannot leak ranges for good. Everything happens under an
 * flock on the pool directory.
 */
#ifndef MOAT_USERNS_POOL_H
#define MOAT_USERNS_POOL_H

#include <stdint.h>

#include "error.h"

#define MOAT_IDPOOL_DIR "/run/moat-userns"
#define MOAT_IDPOOL_MARKER "userns-range"

/* Defaults: 64 Ki ids each (what images expect: nobody is 65534), 4096 containers, from
 * 0x70000000 up, above the ranges /etc/subuid and systemd-nspawn hand out and below 2^31
 * (ids past it confuse programs that keep them in a signed int). */
#define MOAT_IDPOOL_DEFAULT_START UINT32_C(0x70000000)
#define MOAT_IDPOOL_DEFAULT_IDS UINT32_C(65536)
#define MOAT_IDPOOL_DEFAULT_CONTAINERS UINT32_C(4096)

struct moat_idpool {
	uint32_t host_start;
	uint32_t ids; /* per container */
	uint32_t containers;
};

/* The pool's shape is valid: ids > 0, containers > 0, and the whole pool below 2^32 - 1
 * (the kernel's invalid id). field names it in errors. */
int moat_idpool_check(const struct moat_idpool *pool, const char *field, moat_error *err);

/* Lend a free range to the container whose state directory is state_dir (absolute) and open
 * as state_dirfd: the marker is written there, then the loan. *ret_host is the range's first
 * host id. When every range is lent, the error says so and names pool_source (the policy
 * file) as the place to grow the pool. */
int moat_idpool_lend(const struct moat_idpool *pool, const char *pool_source, const char *state_dir,
		     int state_dirfd, uint32_t *ret_host, moat_error *err);

/* Whether a range lent now (to a live container, from any pool) overlaps host ids
 * [start, start + count): 1 with the loan in *ret_start and *ret_count, 0 when none does. */
int moat_idpool_find_lent(uint64_t start, uint64_t count, uint64_t *ret_start, uint64_t *ret_count,
			  moat_error *err);

/* Take back the range lent to the container at state_dir (open as state_dirfd), if any.
 * Best effort: a loan left behind is found stale by the next lend. */
void moat_idpool_return(const char *state_dir, int state_dirfd);

#endif
