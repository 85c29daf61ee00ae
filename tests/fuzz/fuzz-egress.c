/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for the egress proxy's request parser (egress-request.c)
 * and its rule matching.
 *
 * The input is what a sandbox's client sends the proxy. Whatever it is, the parser must
 * not read past it, must say 0 only for an incomplete head below the size bound, and what
 * it accepts must be sane: a host of the allowed characters, a port, a consumed length
 * within the input, and for plain HTTP an origin-form head that parses no further than
 * its own end and names the same host. The host then goes through the rules.
 *
 *   make fuzz-egress    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-egress -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

static struct moat_egress_policy policy;

static void setup(void)
{
	moat_error err = MOAT_ERROR_INIT;

	if (policy.n_rules > 0)
		return;
	if (moat_egress_rule_add(&policy, "up.test:80", &err) < 0 ||
	    moat_egress_rule_add(&policy, "*.cdn.test:443+private", &err) < 0 ||
	    moat_egress_rule_add(&policy, "[::1]:8080+loopback", &err) < 0)
		abort();
}

static void check_host(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > 255 || strspn(h, "abcdefghijklmnopqrstuvwxyz0123456789-.:") != n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly the input's size: ASan sees any read past it */
	char *buf = malloc(size ? size : 1);
	struct moat_egress_request req;
	const char *why = NULL;
	int r;

	setup();
	memcpy(buf, data, size);
	r = moat_egress_parse(buf, size, &req, &why);
	if (r == 0 && size >= MOAT_EGRESS_HEAD_MAX)
		abort();
	if (r < 0 && why == NULL)
		abort();
	if (r == 1) {
		check_host(req.host);
		if (req.port == 0 || req.consumed == 0 || req.consumed > size)
			abort();
		if (!req.tunnel) {
			struct moat_egress_request again;

			if (req.head == NULL ||
			    moat_egress_parse(req.head, req.head_len, &again, &why) != -1 ||
			    strcmp(why, "not-absolute-form") != 0)
				abort(); /* the origin-form head is not one the proxy would take */
		}
		moat_egress_match(&policy, req.host, req.port, &why);
		free(req.head);
	}
	free(buf);
	return 0;
}
