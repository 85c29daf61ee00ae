/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for the seccomp compiler (syscall-filter.c, seccomp-bpf.c).
 *
 * The input is a linux.seccomp object. What libocispec parses goes to moat_seccomp_prepare,
 * which checks it and has libseccomp generate the BPF program (seccomp_export_bpf); the
 * filter is never loaded. A refusal must say why; a program that comes out must be one the
 * kernel could take: 1..MOAT_SECCOMP_MAX_INSNS instructions, every jump landing inside it,
 * the last a return.
 *
 *   make fuzz-seccomp    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-seccomp -max_total_time=60 CORPUS_DIR
 */
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "oci-config.h"
#include "seccomp/syscall-filter-internal.h"

/* A jump from instruction i by off lands on an instruction of the program. */
static bool lands_inside(size_t i, uint32_t off, size_t len)
{
	return off < len - i - 1;
}

static void check_program(const struct sock_filter *prog, size_t len)
{
	if (prog == NULL || len == 0 || len > MOAT_SECCOMP_MAX_INSNS ||
	    BPF_CLASS(prog[len - 1].code) != BPF_RET)
		abort();
	for (size_t i = 0; i < len; i++) {
		const struct sock_filter *f = &prog[i];

		if (BPF_CLASS(f->code) != BPF_JMP)
			continue;
		if (BPF_OP(f->code) == BPF_JA
			    ? !lands_inside(i, f->k, len)
			    : !lands_inside(i, f->jt, len) || !lands_inside(i, f->jf, len))
			abort(); /* a jump out of the program */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc = NULL;
	void *profile = NULL;
	char *msg = NULL;
	uint32_t flags;
	size_t len;

	if (ocijson_parse_data(&oci_seccomp_type, (const char *)data, size, "linux.seccomp",
			       &profile, &msg) < 0) {
		free(msg);
		return 0;
	}
	if (moat_seccomp_prepare(profile, &sc, &err) < 0) {
		if (err.msg == NULL)
			abort(); /* a refusal that does not say why */
	} else {
		const struct sock_filter *prog = moat_seccomp_program(sc, &len, &flags);

		check_program(prog, len);
		moat_seccomp_free(sc);
	}
	moat_error_clear(&err);
	ocijson_free(&oci_seccomp_type, profile);
	return 0;
}
