/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the VMM's seccomp filter (vm-seccomp.h). */
#include "vm-seccomp.h"

#include <stdlib.h>

#include "syscall-filter.h"
#include "utils.h"

/* What the VMM needs beyond moat's default profile. One row per reason. */
static const struct {
	const char *const *names;
	const char *why;
} vmm_allows[] = {
	{ (const char *const[]){ "set_mempolicy", "mbind", NULL },
	  "QEMU sets the NUMA policy of the guest's RAM (its host memory backend)" },
};

static struct oci_syscall *allow_rule(const char *const *names)
{
	struct oci_syscall *sc = xcalloc(1, sizeof(*sc));
	size_t n = 0;

	while (names[n] != NULL)
		n++;
	sc->names = xcalloc(n + 1, sizeof(*sc->names));
	for (size_t i = 0; i < n; i++)
		sc->names[i] = xstrdup(names[i]);
	sc->names_len = n;
	sc->action = xstrdup("SCMP_ACT_ALLOW");
	return sc;
}

int moat_vm_seccomp_profile(struct oci_seccomp **ret, moat_error *err)
{
	struct oci_seccomp *s = NULL;
	size_t n;

	if (moat_seccomp_default(&s, err) < 0)
		return moat_error_prefix(err, "microvm: the VMM's seccomp filter");
	n = s->syscalls_len + MOAT_ARRAY_SIZE(vmm_allows);
	s->syscalls = xrealloc(s->syscalls, (n + 1) * sizeof(*s->syscalls));
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(vmm_allows); i++)
		s->syscalls[s->syscalls_len++] = allow_rule(vmm_allows[i].names);
	s->syscalls[s->syscalls_len] = NULL;
	*ret = s;
	return 0;
}
