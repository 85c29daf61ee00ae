/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: named steps where a test build kills itself (fault.h). */
#include "fault.h"

#ifdef MOAT_FAULT_INJECTION
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *fault_role;

void moat_fault_role(const char *role)
{
	fault_role = role;
}

void moat_fault_step(const char *name)
{
	const char *log = getenv("MOAT_TEST_STEPS"), *at = getenv("MOAT_TEST_KILL_AT");
	char line[128];
	int len = fault_role != NULL ? snprintf(line, sizeof(line), "%s/%s\n", fault_role, name)
				     : snprintf(line, sizeof(line), "%s\n", name);

	if (len <= 0 || (size_t)len >= sizeof(line))
		return;
	if (log != NULL && *log != '\0') {
		/* one write per line: several moats may log to one file */
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0) {
			(void)!write(fd, line, (size_t)len);
			close(fd);
		}
	}
	line[len - 1] = '\0';
	if (at == NULL || (strcmp(at, name) != 0 && strcmp(at, line) != 0))
		return;
	/* PID 1 of a PID namespace (a microVM's supervisor) ignores every signal sent from
	 * inside it, its own SIGKILL too: it ends as abruptly, with no handler or cleanup run */
	if (getpid() == 1)
		_exit(128 + SIGKILL);
	kill(getpid(), SIGKILL);
}
#endif
