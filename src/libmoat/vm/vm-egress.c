/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the host's end of a microVM's egress tunnel (vm-egress.h). */
#include "vm-egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "egress.h"
#include "tunnel.h"

/* The relay keeps the port alone: no stdio of the container's (an engine waits for those
 * to close), no exec socket. */
static _Noreturn void relay(int port_fd, pid_t parent)
{
	const struct sockaddr_in proxy = { .sin_family = AF_INET,
					   .sin_port = htons(MOAT_EGRESS_PORT),
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct moat_tunnel_end end = { .port_fd = 3, .listen_fd = -1, .target = &proxy };
	moat_error err = MOAT_ERROR_INIT;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent || dup2(port_fd, 3) < 0)
		_exit(1);
	close_range(0, 2, 0);
	close_range(4, ~0U, 0);
	_exit(moat_tunnel_run(&end, &err) < 0 ? 1 : 0);
}

int moat_vm_egress_start(int port_fd, pid_t *ret_pid, moat_error *err)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return moat_error_set(err, errno, "microvm: fork the egress tunnel");
	if (pid == 0)
		relay(port_fd, parent);
	close(port_fd);
	*ret_pid = pid;
	return 0;
}
