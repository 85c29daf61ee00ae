/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SHA-256 as FIPS 180-4 defines it: 64-byte blocks, a message schedule of 64 words, 64
 * rounds, the length in bits appended big-endian after a 0x80 byte and zero padding. */
#include "sha256.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t round_constants[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void compress_block(uint32_t state[8], const uint8_t block[64])
{
	uint32_t w[64];
	uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
	uint32_t e = state[4], f = state[5], g = state[6], h = state[7];

	for (int i = 0; i < 16; i++)
		w[i] = load_be32(block + 4 * i);
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = h + s1 + ch + round_constants[i] + w[i];
		uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + s0 + maj;
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
	state[4] += e;
	state[5] += f;
	state[6] += g;
	state[7] += h;
}

void moat_sha256_init(struct moat_sha256 *ctx)
{
	/* The first 32 bits of the fractional parts of the square roots of the first 8 primes. */
	static const uint32_t initial[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(ctx->state, initial, sizeof(initial));
	ctx->length = 0;
	ctx->used = 0;
}

void moat_sha256_update(struct moat_sha256 *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;

	ctx->length += len;
	if (ctx->used > 0) {
		size_t n = sizeof(ctx->block) - ctx->used;
		if (n > len)
			n = len;
		memcpy(ctx->block + ctx->used, p, n);
		ctx->used += n;
		p += n;
		len -= n;
		if (ctx->used < sizeof(ctx->block))
			return;
		compress_block(ctx->state, ctx->block);
		ctx->used = 0;
	}
	for (; len >= sizeof(ctx->block); p += sizeof(ctx->block), len -= sizeof(ctx->block))
		compress_block(ctx->state, p);
	memcpy(ctx->block, p, len);
	ctx->used = len;
}

void moat_sha256_final(struct moat_sha256 *ctx, uint8_t digest[MOAT_SHA256_SIZE])
{
	uint64_t bits = ctx->length * 8;

	ctx->block[ctx->used++] = 0x80;
	if (ctx->used > 56) {
		memset(ctx->block + ctx->used, 0, sizeof(ctx->block) - ctx->used);
		compress_block(ctx->state, ctx->block);
		ctx->used = 0;
	}
	memset(ctx->block + ctx->used, 0, 56 - ctx->used);
	store_be32(ctx->block + 56, (uint32_t)(bits >> 32));
	store_be32(ctx->block + 60, (uint32_t)bits);
	compress_block(ctx->state, ctx->block);
	for (int i = 0; i < 8; i++)
		store_be32(digest + 4 * i, ctx->state[i]);
	memset(ctx, 0, sizeof(*ctx));
}

void moat_sha256_hex(const uint8_t digest[MOAT_SHA256_SIZE], char hex[MOAT_SHA256_HEX_SIZE])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < MOAT_SHA256_SIZE; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 0xf];
	}
	hex[2 * MOAT_SHA256_SIZE] = '\0';
}

void moat_sha256_data(const void *data, size_t len, char hex[MOAT_SHA256_HEX_SIZE])
{
	struct moat_sha256 ctx;
	uint8_t digest[MOAT_SHA256_SIZE];

	moat_sha256_init(&ctx);
	moat_sha256_update(&ctx, data, len);
	moat_sha256_final(&ctx, digest);
	moat_sha256_hex(digest, hex);
}

int moat_sha256_fd(int fd, uint64_t max_bytes, char hex[MOAT_SHA256_HEX_SIZE])
{
	struct moat_sha256 ctx;
	uint8_t digest[MOAT_SHA256_SIZE];
	uint8_t buf[64 * 1024];
	uint64_t total = 0;

	moat_sha256_init(&ctx);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if ((uint64_t)n > max_bytes - total)
			return -EFBIG;
		total += (uint64_t)n;
		moat_sha256_update(&ctx, buf, (size_t)n);
	}
	moat_sha256_final(&ctx, digest);
	moat_sha256_hex(digest, hex);
	return 0;
}
