/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a system call without a C library, for the programs moat builds with -nostdlib
 * (moat-sandbox-init, the launcher). Returns the kernel's value: -errno on failure. */
#ifndef MOAT_RAW_SYSCALL_H
#define MOAT_RAW_SYSCALL_H

#if defined(__x86_64__)
static inline long raw_syscall(long n, long a, long b, long c, long d, long e)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long raw_syscall(long n, long a, long b, long c, long d, long e)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory");
	return x0;
}
#else
#error "add this architecture's system call instruction to raw-syscall.h"
#endif

#endif
