/* moat agent: the container inside the guest.
 *
 * The workload runs in namespaces of its own, as it would in container mode: always a mount
 * namespace (the rootfs and the config's mounts are made there, by the workload's process
 * before its execve, so the config's /proc is that of its PID namespace and the agent's own
 * view of the guest stays as it was at boot), a PID namespace when the config has one (the
 * workload is PID 1 and sees none of the agent or the guest's kernel threads), a cgroup
 * namespace when the config has one. Each exec'd process is made in the workload's PID
 * namespace and joins the others before anything else; it finds the container's root as the
 * root of the workload's mount namespace. The agent holds the workload by a pidfd, and
 * makes every child after it in the workload's PID namespace.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "utils.h"

/* ---- making processes ------------------------------------------------------------------------ */

void agent_container_enter(struct agent *a, const struct moat_msg_start *s)
{
	a->wl_clone = CLONE_NEWNS;
	if (s->namespaces & MOAT_PROTO_NS_PID)
		a->wl_clone |= CLONE_NEWPID;
	if (s->namespaces & MOAT_PROTO_NS_CGROUP)
		a->wl_clone |= CLONE_NEWCGROUP;
}

/* After the workload, the agent makes only processes that belong in its PID namespace: from
 * now on its children are made there (a process never changes its own PID namespace). */
static int children_into(struct agent *a, pid_t pid, moat_error *err)
{
	if (!(a->wl_clone & CLONE_NEWPID) || setns(a->wl_pidfd, CLONE_NEWPID) == 0)
		return 0;
	moat_error_set(err, errno, "join the container's PID namespace");
	kill(pid, SIGKILL);
	return moat_error_ret(err);
}

pid_t agent_clone(struct agent *a, bool workload, moat_error *err)
{
	struct clone_args args = { .exit_signal = SIGCHLD };
	int pidfd = -1;
	pid_t pid;

	/* The cgroup namespace is the workload's to make, once in its cgroup: one made here
	 * would be rooted at the agent's. */
	if (workload) {
		args.flags = CLONE_PIDFD | (a->wl_clone & (CLONE_NEWNS | CLONE_NEWPID));
		args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	}
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return moat_error_set(err, errno, workload ? "fork the workload into its namespaces"
							   : "fork");
	if (pid > 0 && workload) {
		a->wl_pidfd = pidfd;
		if (children_into(a, pid, err) < 0)
			return moat_error_ret(err);
	}
	return pid;
}

int agent_container_join(const struct agent *a, moat_error *err)
{
	if (setns(a->wl_pidfd, a->wl_clone & (CLONE_NEWNS | CLONE_NEWCGROUP)) < 0)
		return moat_error_set(err, errno, "join the container's namespaces");
	return 0;
}

int agent_workload_unshare(const struct agent *a, moat_error *err)
{
	if ((a->wl_clone & CLONE_NEWCGROUP) && unshare(CLONE_NEWCGROUP) < 0)
		return moat_error_set(err, errno, "make the container's cgroup namespace");
	return 0;
}

/* ---- the workload's fds, to the agent -------------------------------------------------------- */

enum { HAS_DEVPTS = 1, HAS_MASTER = 2 };

int agent_send_setup(int sock, int devpts, int master, moat_error *err)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	unsigned char what = (unsigned char)((devpts >= 0 ? HAS_DEVPTS : 0) |
					     (master >= 0 ? HAS_MASTER : 0));
	struct iovec iov = { &what, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[2], n = 0;

	if (devpts >= 0)
		fds[n++] = devpts;
	if (master >= 0)
		fds[n++] = master;
	if (n > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != 1)
		return moat_error_set(err, errno, "send the terminal to the agent");
	return 0;
}

int agent_recv_setup(int sock, int *ret_devpts, int *ret_master)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	unsigned char what = 0;
	struct iovec iov = { &what, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fds[2] = { -1, -1 }, n = 0;
	ssize_t r;

	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -EPIPE; /* the setup failed: its report says why */
	c = CMSG_FIRSTHDR(&mh);
	if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), (size_t)(n > 2 ? 2 : n) * sizeof(int));
	}
	/* Our own child sent it; still, take only what it said it sent. */
	if (n != !!(what & HAS_DEVPTS) + !!(what & HAS_MASTER) || (mh.msg_flags & MSG_CTRUNC)) {
		agent_close_fd(&fds[0]);
		agent_close_fd(&fds[1]);
		return -EPROTO;
	}
	n = 0;
	*ret_devpts = (what & HAS_DEVPTS) ? fds[n++] : -1;
	*ret_master = (what & HAS_MASTER) ? fds[n++] : -1;
	return 0;
}
