/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a pod in one VM, the host's side (vm-pod.h). */
#include "vm-pod.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "state.h"
#include "utils.h"
#include "vm-guest-spec.h"

void moat_vm_pod_clear(struct moat_vm_pod *p)
{
	free(p->sandbox);
	free(p->state_dir);
	free(p->accel);
	*p = (struct moat_vm_pod){ 0 };
}

/* ---- the member's CONTAINER --------------------------------------------------------------- */

static bool same_namespace(const char *path, pid_t pid, const char *type)
{
	char theirs[64];
	struct stat a, b;

	snprintf(theirs, sizeof(theirs), "/proc/%d/ns/%s", (int)pid, type);
	return stat(path, &a) == 0 && stat(theirs, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The namespaces the member has of its own in the guest: one the config makes, or joins
 * anywhere but the sandbox (the guest cannot share one of the host's). One it joins of the
 * sandbox's, or has no entry for, it shares with the pod's workload. */
static uint32_t own_namespaces(const struct moat_vm_pod *p, const struct oci_config *cfg)
{
	static const struct {
		const char *type, *proc;
		uint32_t bit;
	} kinds[] = {
		{ "pid", "pid", MOAT_PROTO_NS_PID },
		{ "ipc", "ipc", MOAT_PROTO_NS_IPC },
		{ "uts", "uts", MOAT_PROTO_NS_UTS },
		{ "cgroup", "cgroup", MOAT_PROTO_NS_CGROUP },
	};
	const struct oci_linux *lx = cfg->linux;
	uint32_t ns = 0;

	for (size_t i = 0; lx != NULL && i < lx->namespaces_len; i++) {
		const struct oci_namespace *n = lx->namespaces[i];

		for (size_t k = 0; k < MOAT_ARRAY_SIZE(kinds); k++) {
			if (n->type == NULL || strcmp(n->type, kinds[k].type) != 0)
				continue;
			if (n->path == NULL || n->path[0] == '\0' ||
			    !same_namespace(n->path, p->pid, kinds[k].proc))
				ns |= kinds[k].bit;
		}
	}
	return ns;
}

int moat_vm_pod_resources(const struct oci_config *cfg, struct moat_proto_resources *ret,
			  moat_error *err)
{
	const struct oci_resources *r = cfg->linux ? cfg->linux->resources : NULL;
	const struct oci_memory *mem = r ? r->memory : NULL;

	if (moat_vm_guest_resources(cfg, ret, err) < 0)
		return moat_error_ret(err);
	if (mem == NULL || !mem->limit_present || mem->limit <= 0)
		return 0; /* -1: no limit */
	if (mem->limit < MOAT_PROTO_MIN_MEMORY_LIMIT)
		return moat_error_msg(err, EINVAL,
				      "linux.resources.memory.limit: %lld bytes is below the "
				      "least a container in a pod's VM takes (%d)",
				      (long long)mem->limit, MOAT_PROTO_MIN_MEMORY_LIMIT);
	ret->has_memory_limit = true;
	ret->memory_limit = (uint64_t)mem->limit;
	return 0;
}

int moat_vm_pod_message(const struct moat_vm_pod *p, const struct oci_config *cfg,
			const struct moat_seccomp *sc, const char *id, struct moat_msg_start *ret,
			moat_error *err)
{
	struct moat_proto_resources res;
	struct moat_msg_start m;

	if (moat_vm_pod_resources(cfg, &res, err) < 0 || moat_vm_start_build(cfg, sc, &m, err) < 0)
		return moat_error_ret(err);
	m.namespaces = own_namespaces(p, cfg);
	m.resources = res;
	m.has_resources = res.has_pids_limit || res.has_cpu_quota || res.has_memory_limit;
	m.name = xstrdup(id);
	*ret = m;
	return 0;
}

/* ---- the pod's share ---------------------------------------------------------------------- */

/* A pidfd of the sandbox's init, when it is still the process p names. */
static int sandbox_pidfd(const struct moat_vm_pod *p)
{
	int fd = p->pid > 0 ? (int)syscall(SYS_pidfd_open, p->pid, 0) : -1;

	if (fd >= 0 && moat_pid_start_time(p->pid) != p->pid_start) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What a helper tells its parent when a step fails. */
struct step_report {
	int errnum;
	char step[96];
};

static _Noreturn void step_failed(int fd, const char *step)
{
	struct step_report r = { .errnum = errno };

	snprintf(r.step, sizeof(r.step), "%s", step);
	write_all(fd, &r, sizeof(r));
	_exit(1);
}

/* Run fn(arg, report_fd) in a child of its own (it changes mount namespaces); its failure
 * becomes err, prefixed with what. */
static int in_helper(void (*fn)(const void *, int), const void *arg, const char *what,
		     moat_error *err)
{
	struct step_report r;
	int e[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe2(e, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "%s: pipe", what);
	pid = fork();
	if (pid == 0) {
		close(e[0]);
		fn(arg, e[1]);
		_exit(0);
	}
	close(e[1]);
	if (pid < 0) {
		close(e[0]);
		return moat_error_set(err, errno, "%s: fork", what);
	}
	n = read_all(e[0], &r, sizeof(r));
	close(e[0]);
	waitpid(pid, &status, 0);
	if (n == sizeof(r))
		return moat_error_set(err, r.errnum, "%s: %.96s", what, r.step);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return moat_error_msg(err, EIO, "%s: the helper failed", what);
	return 0;
}

struct attach_args {
	int member;  /* pidfd of the member's init */
	int root;    /* its root, as /proc/<pid>/root opened it */
	int sandbox; /* pidfd of the sandbox's init */
	const char *id;
};

static void attach_in_child(const void *arg, int report)
{
	const struct attach_args *a = arg;
	_cleanup_close_ int tree = -1, target = -1;
	_cleanup_free_ char *at = xasprintf(MOAT_VM_JAIL_POD "/%s", a->id);

	if (setns(a->member, CLONE_NEWNS) < 0)
		step_failed(report, "enter the member's mount namespace");
	tree = (int)syscall(SYS_open_tree, a->root, "rootfs",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
				    AT_SYMLINK_NOFOLLOW);
	if (tree < 0)
		step_failed(report, "clone the member's root");
	if (setns(a->sandbox, CLONE_NEWNS) < 0)
		step_failed(report, "enter the sandbox VMM's mount namespace");
	target = open(at, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		step_failed(report, "open the pod's share");
	if (syscall(SYS_move_mount, tree, "", target, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		step_failed(report, "mount the member's root in the pod's share");
}

int moat_vm_pod_attach(const struct moat_vm_pod *p, pid_t member_init, const char *id,
		       moat_error *err)
{
	_cleanup_free_ char *dir = xasprintf("%s/" MOAT_VM_POD_DIR "/%s", p->state_dir, id);
	struct attach_args a = { .member = -1, .root = -1, .sandbox = sandbox_pidfd(p), .id = id };
	char root[64];
	int r;

	if (a.sandbox < 0)
		return moat_error_msg(err, ESRCH, "pod: the sandbox %s is not running", p->sandbox);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)member_init);
	a.member = (int)syscall(SYS_pidfd_open, member_init, 0);
	a.root = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.member < 0 || a.root < 0)
		r = moat_error_set(err, errno, "pod: the member's init");
	else if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		r = moat_error_set(err, errno, "pod: make %s", dir);
	else
		r = in_helper(attach_in_child, &a, "pod: the member's root into the sandbox's VM",
			      err);
	if (r < 0)
		rmdir(dir);
	close(a.sandbox);
	if (a.member >= 0)
		close(a.member);
	if (a.root >= 0)
		close(a.root);
	return r;
}

struct detach_args {
	int sandbox;
	const char *id;
};

static void detach_in_child(const void *arg, int report)
{
	const struct detach_args *a = arg;
	_cleanup_free_ char *at = xasprintf(MOAT_VM_JAIL_POD "/%s", a->id);

	if (setns(a->sandbox, CLONE_NEWNS) < 0)
		step_failed(report, "enter the sandbox VMM's mount namespace");
	/* EINVAL: nothing is mounted there (create failed before) */
	if (umount2(at, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
		step_failed(report, "unmount the member's root");
}

int moat_vm_pod_detach(const struct moat_vm_pod *p, const char *id, moat_error *err)
{
	_cleanup_free_ char *dir = xasprintf("%s/" MOAT_VM_POD_DIR "/%s", p->state_dir, id);
	struct detach_args a = { .sandbox = sandbox_pidfd(p), .id = id };
	int r = 0;

	if (a.sandbox >= 0) {
		r = in_helper(detach_in_child, &a, "pod: the member's root out of the sandbox's VM",
			      err);
		close(a.sandbox);
	}
	if (r == 0 && rmdir(dir) < 0 && errno != ENOENT)
		r = moat_error_set(err, errno, "pod: remove %s", dir);
	return r;
}
