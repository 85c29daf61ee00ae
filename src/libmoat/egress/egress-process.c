/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the egress proxy as a process of its own (egress.h), for a sandbox's keeper and for
 * a container an engine runs.
 *
 * Its listening socket is made in the container's network namespace by a caller that
 * joins it for as long as that takes and goes back, so the sandbox reaches the proxy and
 * nothing else, while every socket the proxy opens is the host's. The proxy then drops to
 * nobody with no_new_privs: it needs no privilege, its socket made and its log open. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress.h"
#include "strv.h"
#include "utils.h"

#define NOBODY 65534

int moat_egress_listen_in(pid_t pid, int *ret_fd, moat_error *err)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/ns/net", (int)pid);
	_cleanup_close_ int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(MOAT_EGRESS_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd, e = 0;

	if (host < 0 || ns < 0)
		return moat_error_set(err, errno, "egress: the container's network namespace");
	if (setns(ns, CLONE_NEWNET) < 0)
		return moat_error_set(err, errno, "egress: join the container's network namespace");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
		e = errno;
	/* back to the host's, whatever happened: the caller must not stay inside */
	if (setns(host, CLONE_NEWNET) < 0)
		abort();
	if (e != 0) {
		if (fd >= 0)
			close(fd);
		return moat_error_set(err, e, "egress: the proxy's socket on 127.0.0.1:%d",
				      MOAT_EGRESS_PORT);
	}
	*ret_fd = fd;
	return 0;
}

char **moat_egress_env(void)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					     "https_proxy" };
	char **env = NULL;
	size_t n = 0;

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(names); i++) {
		_cleanup_free_ char *kv =
			xasprintf("%s=http://127.0.0.1:%d", names[i], MOAT_EGRESS_PORT);

		strv_push(&env, &n, kv);
	}
	strv_push(&env, &n, "NO_PROXY=localhost,127.0.0.1");
	strv_push(&env, &n, "no_proxy=localhost,127.0.0.1");
	return env;
}

/* Keep only fds (moved to 3, 4, ...; -1 stays -1), closing every other the caller had open
 * (a client's connection, a lock, a pipe an engine waits on): the proxy holds nothing of
 * theirs. */
static void keep_only(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		int want = 3 + i;

		if (fds[i] < 0 || fds[i] == want)
			continue;
		for (int j = i + 1; j < n; j++) /* out of the way first */
			if (fds[j] == want && (fds[j] = fcntl(want, F_DUPFD_CLOEXEC, 3 + n)) < 0)
				_exit(1);
		if (dup3(fds[i], want, O_CLOEXEC) < 0)
			_exit(1);
		fds[i] = want;
	}
	for (int i = 0; i < n; i++)
		if (fds[i] < 0)
			close(3 + i); /* an empty slot holds none of the caller's */
	if (close_range(3 + (unsigned)n, ~0U, 0) < 0)
		_exit(1);
}

_Noreturn void moat_egress_proxy_main(const struct moat_egress_policy *p, int listen_fd, int log_fd,
				      const char *name, int stop_fd)
{
	int fds[3] = { listen_fd, log_fd, stop_fd };

	keep_only(fds, 3);
	listen_fd = fds[0];
	log_fd = fds[1];
	stop_fd = fds[2];
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(1);
	moat_egress_serve(p, listen_fd, log_fd, name, stop_fd);
	_exit(0);
}
