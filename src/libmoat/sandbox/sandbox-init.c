/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat-sandbox-init: the process a sandbox's container runs while it waits for commands.
 *
 * It is PID 1 of the sandbox's PID namespace and does two things: it reaps the orphans that
 * the commands leave (a daemon whose parent exited is re-parented to it), and it exits on
 * SIGTERM or SIGINT, or when the sandbox's keeper dies (PR_SET_PDEATHSIG: its parent outside
 * the namespace is the keeper, so a keeper killed at any point takes every process of the
 * sandbox with it). Every signal is blocked and read from a signalfd, so it never wakes
 * unless a child exits or it is told to stop.
 *
 * It is built static without a C library (-nostdlib, four system calls in inline assembly),
 * so it is a few kilobytes, needs nothing from the sandbox's root filesystem, and is built
 * into moat (sandbox-init-blob.c) rather than installed beside it. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#if defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d)
{
	long ret;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
}
#else
#error "moat-sandbox-init: add this architecture's system call instruction"
#endif

static _Noreturn void leave(int code)
{
	for (;;)
		sys6(SYS_exit_group, code, 0, 0, 0);
}

void _start(void)
{
	uint64_t all = ~(uint64_t)0;
	struct signalfd_siginfo si;
	long fd;

	/* Block everything, then ask for the parent's death as SIGTERM; a keeper that died
	 * before this call is seen by the parent check below (re-parented: ppid is 0). */
	sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all));
	sys6(SYS_prctl, PR_SET_PDEATHSIG, SIGTERM, 0, 0);
	if (sys6(SYS_getppid, 0, 0, 0, 0) == 0 && sys6(SYS_getpid, 0, 0, 0, 0) != 1)
		leave(1);
	fd = sys6(SYS_signalfd4, -1, (long)&all, sizeof(all), SFD_CLOEXEC);
	if (fd < 0)
		leave(2);
	for (;;) {
		long n = sys6(SYS_read, fd, (long)&si, sizeof(si), 0);

		if (n != (long)sizeof(si))
			continue;
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			leave(0);
		while (sys6(SYS_wait4, -1, 0, WNOHANG | __WALL, 0) > 0)
			;
	}
}
