/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the guest's end of the egress tunnel (src/proto/tunnel.h).
 *
 * With moat.egress=1 the agent starts, at boot and before READY, a process of its own that
 * listens on 127.0.0.1:MOAT_EGRESS_PORT, where the workload's HTTP_PROXY points, and
 * carries each connection over the moat.egress port to the host, where the egress proxy
 * decides. It holds nothing but the port and its socket, and runs as nobody: a workload
 * running as root in the guest without CAP_KILL cannot stop it, and one that does only
 * loses its own way out. A failure is reported to the host after READY, and START fails.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "egress.h"
#include "tunnel.h"
#include "utils.h"

#define NOBODY 65534

static int listen_loopback(void)
{
	const struct sockaddr_in a = { .sin_family = AF_INET,
				       .sin_port = htons(MOAT_EGRESS_PORT),
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, MOAT_TUNNEL_MAX_CONNECTIONS) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The tunnel's process: the port at 3, the socket at 4, nothing else (not even the agent's
 * log: a broken stream ends it, and the host sees the tunnel close). */
static _Noreturn void tunnel(int port, int listen_fd)
{
	struct moat_tunnel_end end = { .port_fd = 3, .listen_fd = 4, .target = NULL };
	moat_error err = MOAT_ERROR_INIT;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(port, 10) < 0 || dup2(listen_fd, 11) < 0 || dup2(10, 3) < 0 || dup2(11, 4) < 0)
		_exit(1);
	close_range(0, 2, 0);
	close_range(5, ~0U, 0);
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0)
		_exit(1);
	_exit(moat_tunnel_run(&end, &err) < 0 ? 1 : 0);
}

/* What failed, or NULL once the tunnel's process runs. */
static const char *start(void)
{
	_cleanup_close_ int port = agent_open_named_port(MOAT_TUNNEL_PORT_NAME, "");
	_cleanup_close_ int listen_fd = -1;
	pid_t pid;

	if (port < 0)
		return "no port " MOAT_TUNNEL_PORT_NAME;
	listen_fd = listen_loopback();
	if (listen_fd < 0)
		return "listen on 127.0.0.1";
	pid = fork();
	if (pid == 0)
		tunnel(port, listen_fd);
	return pid < 0 ? "fork" : NULL;
}

void agent_egress_start(struct agent_config *cfg)
{
	const char *what;

	if (!cfg->egress)
		return;
	what = start();
	if (what != NULL && cfg->error[0] == '\0')
		snprintf(cfg->error, sizeof(cfg->error), "egress tunnel: %s: %s", what,
			 strerror(errno));
}
