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
 * It is built static without a C library (-nostdlib, its system calls in inline assembly from
 * raw-syscall.h), so it is a few kilobytes, needs nothing from the sandbox's root filesystem,
 * and is built into moat (sandbox-init-blob.c) rather than installed beside it. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "raw-syscall.h"

static long sys4(long n, long a, long b, long c, long d)
{
	return raw_syscall(n, a, b, c, d, 0);
}

static _Noreturn void leave(int code)
{
	for (;;)
		sys4(SYS_exit_group, code, 0, 0, 0);
}

void _start(void)
{
	uint64_t all = ~(uint64_t)0;
	struct signalfd_siginfo si;
	long fd;

	/* Block everything, then ask for the parent's death as SIGTERM; a keeper that died
	 * before this call is seen by the parent check below (re-parented: ppid is 0). */
	sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all));
	sys4(SYS_prctl, PR_SET_PDEATHSIG, SIGTERM, 0, 0);
	if (sys4(SYS_getppid, 0, 0, 0, 0) == 0 && sys4(SYS_getpid, 0, 0, 0, 0) != 1)
		leave(1);
	fd = sys4(SYS_signalfd4, -1, (long)&all, sizeof(all), SFD_CLOEXEC);
	if (fd < 0)
		leave(2);
	for (;;) {
		long n = sys4(SYS_read, fd, (long)&si, sizeof(si), 0);

		if (n != (long)sizeof(si))
			continue;
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			leave(0);
		while (sys4(SYS_wait4, -1, 0, WNOHANG | __WALL, 0) > 0)
			;
	}
}
