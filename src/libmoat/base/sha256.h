/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: SHA-256 (FIPS 180-4), for content digests: image blobs and layers are named by
 * "sha256:<hex>", and a file's digest tells whether it changed.
 *
 * Incremental: init, update with any number of pieces of any size, final. The digest of the
 * same bytes is the same however they are split. final leaves the context spent: init it
 * again before reuse. No allocation, no I/O except moat_sha256_fd.
 *
 * Hex digests are 64 lowercase hex digits and a NUL (MOAT_SHA256_HEX_SIZE bytes).
 */
#ifndef MOAT_SHA256_H
#define MOAT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define MOAT_SHA256_SIZE 32                             /* bytes of a digest */
#define MOAT_SHA256_HEX_SIZE (2 * MOAT_SHA256_SIZE + 1) /* 64 hex digits and a NUL */

struct moat_sha256 {
	uint32_t state[8];
	uint64_t length; /* bytes hashed so far */
	uint8_t block[64];
	size_t used; /* bytes of block filled */
};

void moat_sha256_init(struct moat_sha256 *ctx);
void moat_sha256_update(struct moat_sha256 *ctx, const void *data, size_t len);
void moat_sha256_final(struct moat_sha256 *ctx, uint8_t digest[MOAT_SHA256_SIZE]);

/* The 64 lowercase hex digits of digest, NUL-terminated. */
void moat_sha256_hex(const uint8_t digest[MOAT_SHA256_SIZE], char hex[MOAT_SHA256_HEX_SIZE]);

/* The hex digest of len bytes at data. */
void moat_sha256_data(const void *data, size_t len, char hex[MOAT_SHA256_HEX_SIZE]);

/* The hex digest of what fd holds from its current offset to its end, read with read(2)
 * (retrying on EINTR), at most max_bytes of it (UINT64_MAX: no bound). Returns 0, -EFBIG when
 * there is more than max_bytes, or the -errno of a failed read; hex is written on success
 * only. */
int moat_sha256_fd(int fd, uint64_t max_bytes, char hex[MOAT_SHA256_HEX_SIZE]);

#endif
