/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the default seccomp profile, contrib/seccomp/default.json, built into the binary
 * as the NUL-terminated string moat_seccomp_default_profile (syscall-filter.c serves it).
 *
 * The assembler copies the file in (.incbin): no generator, no xxd. Makefile.am defines
 * MOAT_SECCOMP_DEFAULT_JSON as the file's absolute path, so out-of-tree builds find it,
 * and makes this object depend on the file, so editing the profile rebuilds it. */
#ifndef MOAT_SECCOMP_DEFAULT_JSON
#error "MOAT_SECCOMP_DEFAULT_JSON must be the path of contrib/seccomp/default.json"
#endif

__asm__(".pushsection .rodata, \"a\"\n"
	".globl moat_seccomp_default_profile\n"
	".type moat_seccomp_default_profile, @object\n"
	"moat_seccomp_default_profile:\n"
	".incbin \"" MOAT_SECCOMP_DEFAULT_JSON "\"\n"
	".byte 0\n"
	".size moat_seccomp_default_profile, . - moat_seccomp_default_profile\n"
	".popsection\n");
