/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for the host/guest protocol decoder.
 *
 * The input's first byte picks the receiving side; the rest is a byte stream
 * read as a peer would: frame after frame, skipping bad frames, stopping at a
 * broken one. Every message that decodes must encode again, and that encoding
 * must decode and encode to the same bytes (the encoding is canonical).
 *
 *   make fuzz-proto     (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-proto -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static void check_canonical(enum moat_proto_peer from, const struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_buf a = { 0 }, b = { 0 };
	struct moat_msg again;
	size_t used;

	if (moat_proto_encode(from, m, &a, &err) < 0)
		abort(); /* the decoder accepted what the encoder refuses */
	if (moat_proto_decode(from, a.data, a.len, &used, &again, &err) != 1 || used != a.len)
		abort();
	if (moat_proto_encode(from, &again, &b, &err) < 0)
		abort();
	if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
		abort();
	moat_msg_clear(&again);
	moat_buf_free(&a);
	moat_buf_free(&b);
	moat_error_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum moat_proto_peer from;

	if (size < 1)
		return 0;
	from = (data[0] & 1) ? MOAT_PEER_GUEST : MOAT_PEER_HOST;
	data++;
	size--;
	while (size > 0) {
		moat_error err = MOAT_ERROR_INIT;
		struct moat_msg m;
		size_t used = 0;
		int r = moat_proto_decode(from, data, size, &used, &m, &err);

		if (used > size)
			abort();
		if (r == 1) {
			if (err.msg != NULL)
				abort();
			check_canonical(from, &m);
			moat_msg_clear(&m);
		} else if (r < 0 && err.msg == NULL) {
			abort();
		}
		moat_error_clear(&err);
		if (used == 0)
			break; /* incomplete, or a broken stream */
		data += used;
		size -= used;
	}
	return 0;
}
