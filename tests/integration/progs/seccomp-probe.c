/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seccomp-probe PID: read the seccomp filters of process PID (PTRACE_SECCOMP_GET_FILTER,
 * as root), load them into a child of our own, oldest first, and try there the calls a VMM
 * must not make. One line per call: "NAME: allowed", "NAME: errno N" or "NAME: killed by
 * signal N". "filters: N" comes first; 0 filters prints nothing else and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FILTERS 16

struct filter {
	struct sock_filter *insns;
	long len;
};

static int read_filters(pid_t pid, struct filter *f)
{
	int n = 0, status;

	if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0 || waitpid(pid, &status, __WALL) < 0) {
		perror("attach");
		exit(2);
	}
	for (; n < MAX_FILTERS; n++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)(long)n, NULL);

		if (len < 0)
			break;
		f[n].len = len;
		f[n].insns = calloc((size_t)len, sizeof(struct sock_filter));
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)(long)n, f[n].insns) != len) {
			perror("get filter");
			exit(2);
		}
	}
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return n;
}

static void try(const char *name, const struct filter *f, int n, long nr, long a0, long a1)
{
	int status;
	pid_t child = fork();

	if (child == 0) {
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		for (int i = n - 1; i >= 0; i--) {
			struct sock_fprog prog = { .len = (unsigned short)f[i].len,
						   .filter = f[i].insns };

			if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
				_exit(255);
		}
		_exit(syscall(nr, a0, a1) < 0 ? errno : 0);
	}
	waitpid(child, &status, 0);
	if (WIFSIGNALED(status))
		printf("%s: killed by signal %d\n", name, WTERMSIG(status));
	else if (WEXITSTATUS(status) == 255)
		printf("%s: could not load the filters\n", name);
	else if (WEXITSTATUS(status) == 0)
		printf("%s: allowed\n", name);
	else
		printf("%s: errno %d\n", name, WEXITSTATUS(status));
}

int main(int argc, char **argv)
{
	struct filter f[MAX_FILTERS];
	char params[120] = { 0 }; /* struct io_uring_params */
	int n;

	if (argc != 2)
		return 2;
	n = read_filters(atoi(argv[1]), f);
	printf("filters: %d\n", n);
	if (n == 0)
		return 1;
	fflush(stdout);
	try("unshare(CLONE_NEWUSER)", f, n, SYS_unshare, CLONE_NEWUSER, 0);
	try("io_uring_setup", f, n, SYS_io_uring_setup, 1, (long)params);
	try("keyctl", f, n, SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -1);
	try("bpf", f, n, SYS_bpf, 0, 0);
	try("perf_event_open", f, n, SYS_perf_event_open, 0, 0);
	try("getppid", f, n, SYS_getppid, 0, 0);
	return 0;
}
