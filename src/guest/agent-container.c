/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 *
 * The config's resources hold inside the guest too: the workload and every exec'd process
 * are made (clone3 CLONE_INTO_CGROUP, so no fork escapes) in one cgroup of the guest's own
 * cgroup2 hierarchy, AGENT_CGROUP, whose pids.max and cpu.max are START's. The host's cgroup
 * charges QEMU for the whole VM, and the guest kernel cannot see that: without cpu.max here
 * a workload under a 20% quota measured its CPU time as all of its wall time. Memory needs
 * no limit inside: the guest's memory is sized from the config's limit.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "utils.h"

/* The guest's cgroup2 hierarchy, in the agent's own view, and the container's cgroup in it. */
#define AGENT_CGROUP_ROOT "/sys/fs/cgroup"
#define AGENT_CGROUP "container"
/* The controllers START's resources need, for the root's children. */
#define AGENT_CGROUP_CONTROLLERS "+pids +cpu"

/* ---- the container's cgroup ------------------------------------------------------------------ */

/* pids.max. The kernel refuses a positive number only when it is above its PID_MAX_LIMIT
 * (32768 for the guest kernel, built small), more tasks than the guest can ever hold: "max"
 * is then the same limit. */
static int set_pids_max(int dir, uint64_t limit, moat_error *err)
{
	char v[32];
	int n = snprintf(v, sizeof(v), "%llu", (unsigned long long)limit);
	_cleanup_close_ int fd = openat(dir, "pids.max", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "open pids.max");
	if (write(fd, v, (size_t)n) == n)
		return 0;
	if (errno == EINVAL && write(fd, "max", 3) == 3)
		return 0;
	return moat_error_set(err, errno, "write %s to pids.max", v);
}

static int set_limits(int dir, const struct moat_proto_resources *r, moat_error *err)
{
	char v[64];
	int n;

	if (r->has_pids_limit && set_pids_max(dir, r->pids_limit, err) < 0)
		return moat_error_ret(err);
	if (!r->has_cpu_quota)
		return 0;
	n = snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)r->cpu_quota,
		     (unsigned long long)(r->has_cpu_period ? r->cpu_period
							    : MOAT_PROTO_DEFAULT_CPU_PERIOD));
	return write_file_at(dir, "cpu.max", v, (size_t)n, err);
}

int agent_cgroup_make(struct agent *a, const struct moat_msg_start *s, moat_error *err)
{
	_cleanup_close_ int root = -1, dir = -1;
	int r;

	if (mount("cgroup2", AGENT_CGROUP_ROOT, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
	    0)
		return moat_error_set(err, errno, "mount cgroup2 on " AGENT_CGROUP_ROOT);
	root = open(AGENT_CGROUP_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return moat_error_set(err, errno, "open " AGENT_CGROUP_ROOT);
	r = write_file_at(root, "cgroup.subtree_control", AGENT_CGROUP_CONTROLLERS,
			  strlen(AGENT_CGROUP_CONTROLLERS), err);
	if (r < 0)
		return r;
	if (mkdirat(root, AGENT_CGROUP, 0755) < 0)
		return moat_error_set(err, errno, "mkdir " AGENT_CGROUP);
	/* not O_PATH: clone3 takes the cgroup from an opened directory */
	dir = openat(root, AGENT_CGROUP, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return moat_error_set(err, errno, "open " AGENT_CGROUP);
	if (s->has_resources && set_limits(dir, &s->resources, err) < 0)
		return moat_error_ret(err);
	a->cgroup_fd = TAKE_FD(dir);
	return 0;
}

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
	struct clone_args args = { .exit_signal = SIGCHLD,
				   .flags = CLONE_INTO_CGROUP,
				   .cgroup = (uint64_t)a->cgroup_fd };
	int pidfd = -1;
	pid_t pid;

	/* The cgroup namespace is the workload's to make, once in its cgroup: one made here
	 * would be rooted at the agent's. */
	if (workload) {
		args.flags |= CLONE_PIDFD | (a->wl_clone & (CLONE_NEWNS | CLONE_NEWPID));
		args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	}
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return moat_error_set(err, errno,
				      workload ? "fork the workload into its namespaces" : "fork");
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
	unsigned char what =
		(unsigned char)((devpts >= 0 ? HAS_DEVPTS : 0) | (master >= 0 ? HAS_MASTER : 0));
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
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
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
