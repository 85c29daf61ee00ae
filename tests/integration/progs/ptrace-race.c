/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ptrace-race [SECONDS]: run in a container with CAP_SYS_PTRACE and ptrace allowed; for
 * SECONDS (default 60), attach to every new process that shows up in /proc and report what
 * it was running when the attach succeeded: "attached PID EXE". moat's exec helper shows as
 * moat's binary (/moat, on moat's read-only overlay); a process after its execve as its program;
 * one that ended before its program could be read as "(ended)". Lines go to stdout, flushed
 * as they come, and "done" at the end. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PIDS 65536

static char seen[MAX_PIDS];

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 60);
	pid_t self = getpid();

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (time(NULL) < end) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d != NULL && (e = readdir(d)) != NULL) {
			int pid = atoi(e->d_name);
			char path[64], exe[256] = "?";
			ssize_t n;
			int status;

			if (pid <= 1 || pid >= MAX_PIDS || pid == self || seen[pid])
				continue;
			/* SEIZE and INTERRUPT, not ATTACH: the SIGSTOP an attach sends could
			 * still be pending after an execve's stop, and stop the process for
			 * good once detached */
			if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0)
				continue; /* tried again next round: it may exec meanwhile */
			seen[pid] = 1;
			/* what it runs, read as soon as the attach succeeded */
			snprintf(path, sizeof(path), "/proc/%d/exe", pid);
			n = readlink(path, exe, sizeof(exe) - 1);
			if (n >= 0)
				exe[n] = '\0';
			ptrace(PTRACE_INTERRUPT, pid, 0, 0);
			if (waitpid(pid, &status, __WALL) == pid && n < 0 &&
			    (WIFEXITED(status) || WIFSIGNALED(status))) {
				/* it ended first (a short exec'd program, on a busy machine):
				 * nothing says what it ran */
				printf("attached %d (ended)\n", pid);
				continue;
			}
			printf("attached %d %s\n", pid, exe);
			ptrace(PTRACE_DETACH, pid, 0, 0);
		}
		if (d != NULL)
			closedir(d);
	}
	printf("done\n");
	return 0;
}
