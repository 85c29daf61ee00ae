/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the namespaces a config asks for. */
#include "namespaces.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/nsfs.h>

#include "utils.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const struct {
	const char *oci;  /* linux.namespaces[].type */
	int flag;         /* CLONE_NEW* */
	const char *proc; /* /proc/<pid>/ns/<proc> */
} ns_table[MOAT_NS_COUNT] = {
	[MOAT_NS_USER] = { "user", CLONE_NEWUSER, "user" },
	[MOAT_NS_PID] = { "pid", CLONE_NEWPID, "pid" },
	[MOAT_NS_NET] = { "network", CLONE_NEWNET, "net" },
	[MOAT_NS_IPC] = { "ipc", CLONE_NEWIPC, "ipc" },
	[MOAT_NS_UTS] = { "uts", CLONE_NEWUTS, "uts" },
	[MOAT_NS_CGROUP] = { "cgroup", CLONE_NEWCGROUP, "cgroup" },
	[MOAT_NS_TIME] = { "time", CLONE_NEWTIME, "time" },
	[MOAT_NS_MNT] = { "mount", CLONE_NEWNS, "mnt" },
};

const char *moat_ns_oci_name(enum moat_ns ns)
{
	return ns_table[ns].oci;
}

int moat_ns_clone_flag(enum moat_ns ns)
{
	return ns_table[ns].flag;
}

const char *moat_ns_proc_name(enum moat_ns ns)
{
	return ns_table[ns].proc;
}

static int ns_from_name(const char *name)
{
	int i;

	for (i = 0; i < MOAT_NS_COUNT; i++)
		if (strcmp(ns_table[i].oci, name) == 0)
			return i;
	return -1;
}

static int open_ns_path(enum moat_ns ns, const char *path, size_t idx, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	int type;

	if (fd < 0)
		return moat_error_set(err, errno, "linux.namespaces[%zu].path: open '%s'", idx,
				      path);
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type < 0)
		return moat_error_msg(err, EINVAL,
				      "linux.namespaces[%zu].path: '%s' is not a namespace", idx,
				      path);
	if (type != ns_table[ns].flag)
		return moat_error_msg(err, EINVAL,
				      "linux.namespaces[%zu].path: '%s' is not a %s namespace", idx,
				      path, ns_table[ns].oci);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int moat_ns_plan_build(const struct oci_linux *lx, struct moat_ns_plan *plan, moat_error *err)
{
	size_t i;
	int k;

	memset(plan, 0, sizeof(*plan));
	for (k = 0; k < MOAT_NS_COUNT; k++)
		plan->join_fd[k] = -1;
	for (i = 0; lx != NULL && i < lx->namespaces_len; i++) {
		const struct oci_namespace *n = lx->namespaces[i];

		k = ns_from_name(n->type);
		if (k < 0) {
			moat_ns_plan_close(plan);
			return moat_error_msg(err, EINVAL,
					      "linux.namespaces[%zu].type: unknown '%s'", i,
					      n->type);
		}
		if (n->path == NULL || *n->path == '\0') {
			plan->create[k] = true;
			continue;
		}
		if (open_ns_path(k, n->path, i, &plan->join_fd[k], err) < 0) {
			moat_ns_plan_close(plan);
			return moat_error_ret(err);
		}
	}
	return 0;
}

void moat_ns_plan_close(struct moat_ns_plan *plan)
{
	int k;

	for (k = 0; k < MOAT_NS_COUNT; k++) {
		if (plan->join_fd[k] >= 0)
			close(plan->join_fd[k]);
		plan->join_fd[k] = -1;
	}
}

int moat_ns_plan_flags(const struct moat_ns_plan *plan, int except)
{
	int k, flags = 0;

	for (k = 0; k < MOAT_NS_COUNT; k++)
		if (plan->create[k])
			flags |= ns_table[k].flag;
	return flags & ~except;
}

int moat_ns_join(const struct moat_ns_plan *plan, bool only_user, moat_error *err)
{
	int k;

	for (k = 0; k < MOAT_NS_COUNT; k++) {
		if (plan->join_fd[k] < 0 || (k == MOAT_NS_USER) != only_user)
			continue;
		if (setns(plan->join_fd[k], ns_table[k].flag) < 0)
			return moat_error_set(err, errno, "join the %s namespace", ns_table[k].oci);
	}
	return 0;
}

bool moat_ns_in_userns(const struct moat_ns_plan *plan)
{
	return plan->create[MOAT_NS_USER] || plan->join_fd[MOAT_NS_USER] >= 0;
}

int moat_ns_loopback_up(moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo" };

	if (fd < 0)
		return moat_error_set(err, errno, "bring lo up: socket");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return moat_error_set(err, errno, "bring lo up: read its flags");
	if (ifr.ifr_flags & IFF_UP)
		return 0;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return moat_error_set(err, errno, "bring lo up");
	return 0;
}
