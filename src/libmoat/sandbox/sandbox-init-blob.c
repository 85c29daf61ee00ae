/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the sandbox's idle init (sandbox-init.c), built into the binary as
 * the bytes from moat_sandbox_init_blob to moat_sandbox_init_blob_end (sandbox-layer.c writes
 * them into the sandbox's own read-only layer). The assembler copies the file in, as
 * seccomp-default.c does with the seccomp profile. */
#ifndef MOAT_SANDBOX_INIT_BIN
#error "MOAT_SANDBOX_INIT_BIN must be the path of the built moat-sandbox-init"
#endif

__asm__(".pushsection .rodata, \"a\"\n"
	".globl moat_sandbox_init_blob\n"
	".type moat_sandbox_init_blob, @object\n"
	".balign 16\n"
	"moat_sandbox_init_blob:\n"
	".incbin \"" MOAT_SANDBOX_INIT_BIN "\"\n"
	".size moat_sandbox_init_blob, . - moat_sandbox_init_blob\n"
	".globl moat_sandbox_init_blob_end\n"
	"moat_sandbox_init_blob_end:\n"
	".popsection\n");
