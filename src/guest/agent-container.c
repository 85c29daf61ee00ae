/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat agent: the containers inside the guest.
 *
 * START makes the first container, the workload's; each CONTAINER makes one more, a member of
 * the pod the workload holds (docs/microvm-network.md). A container is what its first
 * process made: namespaces of its own, as container mode gives them: always a mount namespace
 * (the rootfs and the config's mounts are made there, by that process before its execve, so
 * the config's /proc is that of its PID namespace and the agent's own view of the guest stays
 * as it was at boot), and a PID, IPC, UTS and cgroup namespace each when the config has one.
 * A member shares each of PID, IPC and UTS it has none of its own with the workload, as a
 * Kubernetes pod's containers share them with the pod's sandbox. Each exec'd process is made
 * in its container's PID namespace and joins the others before anything else; it finds the
 * container's root as the root of the container's mount namespace. The agent holds each
 * container by a pidfd of its first process.
 *
 * The config's resources hold inside the guest too: every process of a container is made
 * (clone3 CLONE_INTO_CGROUP, so no fork escapes) in that container's cgroup of the guest's own
 * cgroup2 hierarchy, whose pids.max, cpu.max and memory.max are its message's. The host's
 * cgroup charges QEMU for the whole VM, and the guest kernel cannot see that: without cpu.max
 * here a workload under a 20% quota measured its CPU time as all of its wall time. The
 * workload needs no memory limit inside (the guest's memory is sized from its limit); a
 * member's memory limit is its cgroup's memory.max, within the pod's VM. FREEZE writes the
 * cgroup's cgroup.freeze; UPDATE rewrites pids.max and cpu.max (`moat update`); a container's
 * end is its cgroup's cgroup.kill.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "utils.h"

/* The guest's cgroup2 hierarchy, in the agent's own view, and the workload's cgroup in it
 * (a member's is "member-<id>"). */
#define AGENT_CGROUP_ROOT "/sys/fs/cgroup"
#define AGENT_CGROUP "container"
/* The controllers the resources need, for the root's children. */
#define AGENT_CGROUP_CONTROLLERS "+pids +cpu +memory"
/* How long FREEZE waits for the kernel to report the cgroup frozen (a task in an
 * uninterruptible sleep freezes when it wakes). */
#define AGENT_FREEZE_WAIT_MS 2000
/* The CLONE_NEW* a container may have of its own, besides the mount namespace. */
#define CTR_OWN_NAMESPACES (CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* ---- the table -------------------------------------------------------------------------------- */

struct ctr *agent_find_ctr(struct agent *a, uint32_t id)
{
	for (size_t i = 0; i < a->n_ctrs; i++)
		if (a->ctrs[i]->id == id)
			return a->ctrs[i];
	return NULL;
}

static void free_ctr(struct agent *a, struct ctr *c)
{
	for (size_t i = 0; i < a->n_ctrs; i++)
		if (a->ctrs[i] == c) {
			a->ctrs[i] = a->ctrs[--a->n_ctrs];
			break;
		}
	agent_close_fd(&c->pidfd);
	agent_close_fd(&c->cgroup_fd);
	agent_close_fd(&c->devpts_fd);
	free(c);
}

/* A container's cgroup goes once nothing runs in it (its processes are gone before their
 * EXITED; a dying task may take a moment more). */
void agent_ctrs_collect(struct agent *a)
{
	for (size_t i = 0; i < a->n_ctrs;) {
		struct ctr *c = a->ctrs[i];
		bool used = false;

		for (size_t k = 0; k < a->n_procs && !used; k++)
			used = a->procs[k]->ctr == c;
		if (!c->over || used || c == a->ctrs[0] ||
		    (unlinkat(a->cgroup_root, c->cgroup, AT_REMOVEDIR) < 0 && errno == EBUSY)) {
			i++;
			continue;
		}
		free_ctr(a, c);
	}
}

/* ---- cgroups ---------------------------------------------------------------------------------- */

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

/* cpu.max: r's quota per its period, or none. */
static int set_cpu_max(int dir, const struct moat_proto_resources *r, moat_error *err)
{
	uint64_t period = r->has_cpu_period ? r->cpu_period : MOAT_PROTO_DEFAULT_CPU_PERIOD;
	char v[64];
	int n = r->has_cpu_quota
			? snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)r->cpu_quota,
				   (unsigned long long)period)
			: snprintf(v, sizeof(v), "max");

	return write_file_at(dir, "cpu.max", v, (size_t)n, err);
}

/* memory.max: r's limit, or none. */
static int set_memory_max(int dir, const struct moat_proto_resources *r, moat_error *err)
{
	char v[32];
	int n = r->has_memory_limit
			? snprintf(v, sizeof(v), "%llu", (unsigned long long)r->memory_limit)
			: snprintf(v, sizeof(v), "max");

	return write_file_at(dir, "memory.max", v, (size_t)n, err);
}

static int set_limits(int dir, const struct moat_proto_resources *r, moat_error *err)
{
	if (r->has_pids_limit && set_pids_max(dir, r->pids_limit, err) < 0)
		return moat_error_ret(err);
	if (r->has_memory_limit && set_memory_max(dir, r, err) < 0)
		return moat_error_ret(err);
	return r->has_cpu_quota ? set_cpu_max(dir, r, err) : 0;
}

int agent_ctr_update(struct ctr *c, const struct moat_proto_resources *r, moat_error *err)
{
	if (r->has_pids_limit ? set_pids_max(c->cgroup_fd, r->pids_limit, err) < 0
			      : write_file_at(c->cgroup_fd, "pids.max", "max", 3, err) < 0)
		return moat_error_ret(err);
	if (set_memory_max(c->cgroup_fd, r, err) < 0)
		return moat_error_ret(err);
	return set_cpu_max(c->cgroup_fd, r, err);
}

static int parse_u64(const char *text, const char *file, uint64_t *ret, moat_error *err)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno != 0 || end == text || *text == '-' || (*end != '\0' && *end != '\n'))
		return moat_error_msg(err, EIO, "%s: not a number", file);
	*ret = v;
	return 0;
}

/* The number after key in a cgroup file of "key value" lines (memory.events, cpu.stat). */
static int read_key(int dir, const char *file, const char *key, uint64_t *ret, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len, klen = strlen(key);
	char *save = NULL;

	if (read_file_at(dir, file, 4096, &text, &len, err) < 0)
		return moat_error_ret(err);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return parse_u64(line + klen + 1, file, ret, err);
	return moat_error_msg(err, ENOENT, "%s has no %s", file, key);
}

/* A cgroup file holding one number; *has false when the kernel has no such file. */
static int read_one(int dir, const char *file, bool *has, uint64_t *ret, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;

	*has = false;
	if (read_file_at(dir, file, 64, &text, &len, err) < 0) {
		if (err->code != ENOENT)
			return moat_error_ret(err);
		moat_error_drop(err);
		return 0;
	}
	*has = true;
	return parse_u64(text, file, ret, err);
}

int agent_ctr_usage(const struct ctr *c, struct moat_msg_usage *u, moat_error *err)
{
	int dir = c->cgroup_fd;

	if (read_key(dir, "memory.events", "oom_kill", &u->oom_kills, err) < 0 ||
	    read_key(dir, "pids.events", "max", &u->pids_max, err) < 0 ||
	    read_one(dir, "pids.peak", &u->has_pids_peak, &u->pids_peak, err) < 0 ||
	    read_one(dir, "memory.peak", &u->has_memory_peak, &u->memory_peak, err) < 0 ||
	    read_key(dir, "cpu.stat", "user_usec", &u->cpu_user_us, err) < 0 ||
	    read_key(dir, "cpu.stat", "system_usec", &u->cpu_system_us, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* The guest's cgroup2 hierarchy, once, with the controllers given to its children. */
static int cgroup_root(struct agent *a, moat_error *err)
{
	_cleanup_close_ int root = -1;
	int r;

	if (a->cgroup_root >= 0)
		return 0;
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
	a->cgroup_root = TAKE_FD(root);
	return 0;
}

/* c's cgroup, named c->cgroup, with s's limits. */
static int cgroup_make(struct agent *a, struct ctr *c, const struct moat_msg_start *s,
		       moat_error *err)
{
	_cleanup_close_ int dir = -1;

	if (cgroup_root(a, err) < 0)
		return moat_error_ret(err);
	if (mkdirat(a->cgroup_root, c->cgroup, 0755) < 0)
		return moat_error_set(err, errno, "mkdir %s", c->cgroup);
	/* not O_PATH: clone3 takes the cgroup from an opened directory */
	dir = openat(a->cgroup_root, c->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return moat_error_set(err, errno, "open %s", c->cgroup);
	if (s->has_resources && set_limits(dir, &s->resources, err) < 0)
		return moat_error_ret(err);
	c->cgroup_fd = TAKE_FD(dir);
	return 0;
}

int agent_ctr_kill(struct ctr *c)
{
	moat_error err = MOAT_ERROR_INIT;
	int r = write_file_at(c->cgroup_fd, "cgroup.kill", "1", 1, &err);

	if (r < 0)
		agent_log("kill container %u: %s", c->id, err.msg);
	moat_error_clear(&err);
	return r;
}

/* Whether cgroup.events says "frozen 1". */
static bool is_frozen(int dir)
{
	char buf[256];
	_cleanup_close_ int fd = openat(dir, "cgroup.events", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "frozen 1") != NULL;
}

int agent_ctr_freeze(struct ctr *c, bool frozen, moat_error *err)
{
	uint64_t deadline = agent_now_ms() + AGENT_FREEZE_WAIT_MS;

	if (write_file_at(c->cgroup_fd, "cgroup.freeze", frozen ? "1" : "0", 1, err) < 0)
		return moat_error_ret(err);
	c->frozen = false;
	while (frozen && !is_frozen(c->cgroup_fd)) {
		if (agent_now_ms() >= deadline)
			return moat_error_msg(err, ETIMEDOUT,
					      "container %u did not freeze within %d ms", c->id,
					      AGENT_FREEZE_WAIT_MS);
		agent_sleep_ms(5);
	}
	c->frozen = frozen;
	return 0;
}

/* ---- making containers ------------------------------------------------------------------------ */

static int clone_flags(uint32_t ns)
{
	int flags = CLONE_NEWNS;

	if (ns & MOAT_PROTO_NS_PID)
		flags |= CLONE_NEWPID;
	if (ns & MOAT_PROTO_NS_IPC)
		flags |= CLONE_NEWIPC;
	if (ns & MOAT_PROTO_NS_UTS)
		flags |= CLONE_NEWUTS;
	if (ns & MOAT_PROTO_NS_CGROUP)
		flags |= CLONE_NEWCGROUP;
	return flags;
}

int agent_ctr_new(struct agent *a, uint32_t id, const struct moat_msg_start *s, struct ctr **ret,
		  moat_error *err)
{
	struct ctr *c;
	const struct ctr *pod = a->n_ctrs > 0 ? a->ctrs[0] : NULL;

	if (a->n_ctrs >= AGENT_MAX_CTRS)
		return moat_error_msg(err, EAGAIN, "%d containers already", AGENT_MAX_CTRS);
	c = xcalloc(1, sizeof(*c));
	c->id = id;
	c->pidfd = c->cgroup_fd = c->devpts_fd = -1;
	c->clone = clone_flags(s->namespaces);
	/* what its exec'd processes join: its own, and the pod's it shares */
	c->joins = c->clone & (CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP);
	if (pod != NULL)
		c->joins |= pod->clone & ~c->clone & (CLONE_NEWIPC | CLONE_NEWUTS);
	if (pod == NULL)
		snprintf(c->cgroup, sizeof(c->cgroup), AGENT_CGROUP);
	else
		snprintf(c->cgroup, sizeof(c->cgroup), "member-%u", id);
	if (cgroup_make(a, c, s, err) < 0) {
		free(c);
		return moat_error_ret(err);
	}
	a->ctrs[a->n_ctrs++] = c;
	*ret = c;
	return 0;
}

/* Where the next child's PID namespace is: c's first process's own (a new one, as a child of
 * the agent's, when c has one of its own), or the pod's it shares (a process never changes
 * its own PID namespace: only its children's). */
static int pid_namespace_for(struct agent *a, const struct ctr *c, bool first, moat_error *err)
{
	int target = !first                                         ? c->pidfd
		     : c == a->ctrs[0] || (c->clone & CLONE_NEWPID) ? a->own_pidns
								    : a->ctrs[0]->pidfd;

	if (setns(target, CLONE_NEWPID) < 0)
		return moat_error_set(err, errno, "enter the container's PID namespace");
	return 0;
}

pid_t agent_clone(struct agent *a, struct ctr *c, bool first, moat_error *err)
{
	struct clone_args args = { .exit_signal = SIGCHLD,
				   .flags = CLONE_INTO_CGROUP,
				   .cgroup = (uint64_t)c->cgroup_fd };
	int pidfd = -1;
	pid_t pid;

	if (pid_namespace_for(a, c, first, err) < 0)
		return moat_error_ret(err);
	/* The cgroup namespace is the first process's to make, once in its cgroup: one made here
	 * would be rooted at the agent's. */
	if (first) {
		args.flags |= CLONE_PIDFD | (c->clone & ~CLONE_NEWCGROUP);
		args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	}
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return moat_error_set(err, errno,
				      first ? "fork the container into its namespaces" : "fork");
	if (pid > 0 && first)
		c->pidfd = pidfd;
	return pid;
}

int agent_container_join(const struct agent *a, const struct ctr *c, moat_error *err)
{
	(void)a;
	if (setns(c->pidfd, c->joins) < 0)
		return moat_error_set(err, errno, "join the container's namespaces");
	return 0;
}

int agent_container_unshare(const struct agent *a, const struct ctr *c, moat_error *err)
{
	const struct ctr *pod = a->ctrs[0];
	int shared = c == pod ? 0 : pod->clone & ~c->clone & (CLONE_NEWIPC | CLONE_NEWUTS);

	if (shared != 0 && setns(pod->pidfd, shared) < 0)
		return moat_error_set(err, errno, "join the pod's IPC and UTS namespaces");
	if ((c->clone & CLONE_NEWCGROUP) && unshare(CLONE_NEWCGROUP) < 0)
		return moat_error_set(err, errno, "make the container's cgroup namespace");
	return 0;
}

/* ---- the pod's share ---------------------------------------------------------------------------- */

int agent_pod_share(struct agent *a, moat_error *err)
{
	if (a->pod_mounted)
		return 0;
	mkdir(AGENT_POD_DIR, 0755);
	/* many filesystems of the host's (each member's rootfs and binds): inode numbers remapped
	 * by QEMU (multidevs=remap), messages as large as the rootfs's */
	if (mount(MOAT_PROTO_POD_TAG, AGENT_POD_DIR, "9p", MS_NOSUID | MS_NODEV,
		  "trans=virtio,version=9p2000.L,msize=262144") < 0)
		return moat_error_set(err, errno,
				      "mount the pod's share (9p, tag " MOAT_PROTO_POD_TAG ")");
	a->pod_mounted = true;
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
