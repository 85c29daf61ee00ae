/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for base/sha256.c against known digests: FIPS 180-4's examples (one block, two
 * blocks, a million "a"), lengths around the padding's edges (55/56 bytes fit the length in
 * one block or not), the same bytes fed in pieces of every size, and moat_sha256_fd with its
 * bound. Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "sha256.h"
#include "utils.h"

struct vector {
	const char *data;
	const char *hex;
};

/* clang-format off */
static const struct vector vectors[] = {
	{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
	{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
};

/* "a" repeated n times */
static const struct { size_t n; const char *hex; } runs[] = {
	{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
	{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
	{ 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
	{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
	{ 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
	{ 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
	{ 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
	{ 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
};
/* clang-format on */

static void test_known_vectors(void **state)
{
	char hex[MOAT_SHA256_HEX_SIZE];

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(vectors); i++) {
		moat_sha256_data(vectors[i].data, strlen(vectors[i].data), hex);
		assert_string_equal(hex, vectors[i].hex);
	}
}

static void test_padding_edges_and_a_million(void **state)
{
	char *a = xmalloc(1000000);
	char hex[MOAT_SHA256_HEX_SIZE];

	memset(a, 'a', 1000000);
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(runs); i++) {
		moat_sha256_data(a, runs[i].n, hex);
		assert_string_equal(hex, runs[i].hex);
	}
	free(a);
}

/* Pieces of 1 to 130 bytes, and a split at every offset: the digest never changes. */
static void test_pieces(void **state)
{
	const char *data = vectors[3].data;
	size_t len = strlen(data);
	char hex[MOAT_SHA256_HEX_SIZE];
	uint8_t digest[MOAT_SHA256_SIZE];
	struct moat_sha256 ctx;

	for (size_t piece = 1; piece <= 130; piece++) {
		moat_sha256_init(&ctx);
		for (size_t off = 0; off < len; off += piece)
			moat_sha256_update(&ctx, data + off, len - off < piece ? len - off : piece);
		moat_sha256_final(&ctx, digest);
		moat_sha256_hex(digest, hex);
		assert_string_equal(hex, vectors[3].hex);
	}
	for (size_t split = 0; split <= len; split++) {
		moat_sha256_init(&ctx);
		moat_sha256_update(&ctx, data, split);
		moat_sha256_update(&ctx, data + split, 0);
		moat_sha256_update(&ctx, data + split, len - split);
		moat_sha256_final(&ctx, digest);
		moat_sha256_hex(digest, hex);
		assert_string_equal(hex, vectors[3].hex);
	}
}

static int memfd_with(const char *data, size_t len)
{
	int fd = memfd_create("sha256-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, data, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void test_fd(void **state)
{
	char hex[MOAT_SHA256_HEX_SIZE] = "untouched";
	int fd = memfd_with("abc", 3);

	assert_int_equal(moat_sha256_fd(fd, UINT64_MAX, hex), 0);
	assert_string_equal(hex, vectors[1].hex);
	/* from the current offset: "bc" */
	assert_int_equal(lseek(fd, 1, SEEK_SET), 1);
	assert_int_equal(moat_sha256_fd(fd, 2, hex), 0);
	assert_string_equal(hex,
			    "1e0bbd6c686ba050b8eb03ffeedc64fdc9d80947fce821abbe5d6dc8d252c5ac");
	close(fd);
}

static void test_fd_bound_and_errors(void **state)
{
	char hex[MOAT_SHA256_HEX_SIZE] = "untouched";
	int fd = memfd_with("abcd", 4);

	assert_int_equal(moat_sha256_fd(fd, 3, hex), -EFBIG);
	assert_string_equal(hex, "untouched");
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(moat_sha256_fd(fd, 4, hex), 0);
	assert_string_equal(hex,
			    "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
	close(fd);
	assert_int_equal(moat_sha256_fd(-1, UINT64_MAX, hex), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_vectors),
		cmocka_unit_test(test_padding_edges_and_a_million),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_fd),
		cmocka_unit_test(test_fd_bound_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
