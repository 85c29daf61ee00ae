/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what syscall-filter.c (compiling a profile) and seccomp-bpf.c (the compiled program:
 * loading it, caching it) share. */
#ifndef MOAT_SYSCALL_FILTER_INTERNAL_H
#define MOAT_SYSCALL_FILTER_INTERNAL_H

#include <seccomp.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>

#include "syscall-filter.h"

/* The kernel takes at most this many instructions in one filter (BPF_MAXINSNS). */
#define MOAT_SECCOMP_MAX_INSNS 4096

struct moat_seccomp {
	scmp_filter_ctx ctx;      /* libseccomp's filter; NULL when it came from the cache */
	bool notify;              /* some rule is SCMP_ACT_NOTIFY */
	uint32_t kernel_flags;    /* SECCOMP_FILTER_FLAG_* the profile's flags ask for */
	struct sock_filter *prog; /* the program the kernel loads */
	size_t prog_len;
};

/* Fill sc->prog from sc->ctx: libseccomp generates the program once, here, not in every
 * process that loads it. (seccomp-bpf.c) */
int moat_seccomp_bpf_export(struct moat_seccomp *sc, moat_error *err);

#endif
