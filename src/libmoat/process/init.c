/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the processes that become the container. */
#include "init.h"
#include "vm-jail.h"
#include "vm-member.h"
#include "vm-snapshot.h"
#include "vm-virtiofs.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cgroup.h"
#include "container.h"
#include "hooks.h"
#include "process.h"
#include "process-attrs.h"
#include "rootfs.h"
#include "sync.h"
#include "syscall-filter.h"
#include "terminal.h"
#include "userns.h"
#include "utils.h"

__attribute__((noreturn)) static void die(int sync_fd, moat_error *err)
{
	moat_sync_send_error(sync_fd, err);
	_exit(EXIT_FAILURE);
}

static int write_time_offsets(const struct oci_linux *lx, moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, i;
	FILE *out;

	if (lx == NULL || lx->time_offsets_len == 0)
		return 0;
	out = open_memstream(&buf, &len);
	if (out == NULL)
		return moat_error_set(err, errno, "linux.timeOffsets");
	for (i = 0; i < lx->time_offsets_len; i++) {
		const struct oci_time_offset *t = lx->time_offsets[i];

		fprintf(out, "%s %lld %u\n", t->name, (long long)t->secs, t->nanosecs);
	}
	fclose(out);
	if (write_file_at(AT_FDCWD, "/proc/self/timens_offsets", buf, len, err) < 0)
		return moat_error_prefix(err, "linux.timeOffsets");
	return 0;
}

/* Become root of the user namespace: from here on files are created as the
 * container's root, not as the host's. */
static int become_ns_root(moat_error *err)
{
	if (setresgid(0, 0, 0) < 0)
		return moat_error_set(err, errno, "linux.gidMappings: container gid 0%s",
				      errno == EINVAL ? " is not mapped" : "");
	if (setresuid(0, 0, 0) < 0)
		return moat_error_set(err, errno, "linux.uidMappings: container uid 0%s",
				      errno == EINVAL ? " is not mapped" : "");
	return 0;
}

/* Open the fifo for writing: blocks until `start` opens it for reading; `start` returns once
 * it read the byte written. The fifo is reopened through procfd, moat's own procfs (the
 * container may have no /proc, or one of its own making); -1: through /proc. A pod member's
 * init writes the byte only once its process runs in the pod's guest (vm-member.h), so that
 * an exec right after start finds it there: ret_fd, when not NULL, receives the fifo for
 * that. */
static int wait_for_start(int fifo_fd, int procfd, int *ret_fd, moat_error *err)
{
	char path[64];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%sself/fd/%d", procfd >= 0 ? "" : "/proc/", fifo_fd);
	do
		fd = openat(procfd >= 0 ? procfd : AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return moat_error_set(err, errno, "open exec fifo");
	if (ret_fd != NULL) {
		*ret_fd = TAKE_FD(fd);
		return 0;
	}
	if (write_all(fd, "0", 1) < 0)
		return moat_error_set(err, errno, "write exec fifo");
	return 0;
}

static int run_hooks(const struct moat_init_args *a, enum moat_hook_kind kind, const char *status,
		     const char *cwd, moat_error *err)
{
	_cleanup_free_ char *json = NULL;
	size_t n = 0;

	if (moat_hooks_list(a->cfg->hooks, kind, &n) == NULL || n == 0)
		return 0;
	json = moat_state_json(a->cfg->oci_version, a->id, a->host_pid, status, a->bundle,
			       a->state_rootfs, a->annotations);
	/* a hook without env sees the container process's (hooks.h) */
	return moat_hooks_run_with_env(a->cfg->hooks, kind, json, cwd, a->cfg->process->env,
				       a->cfg->process->env_len, err);
}

static int send_console(const struct moat_init_args *a, moat_error *err)
{
	_cleanup_close_ int master = -1;

	if (moat_terminal_create(a->cfg->process, &master, err) < 0)
		return moat_error_ret(err);
	return moat_sync_send_fd(a->sync_fd, MOAT_SYNC_CONSOLE, 0, master, err);
}

int moat_init_load_seccomp(struct moat_seccomp *sc, int sync_fd, moat_error *err)
{
	int notify = -1, r;

	if (sc == NULL)
		return 0;
	if (moat_seccomp_load(sc, &notify, err) < 0)
		return moat_error_prefix(err, "linux.seccomp");
	if (notify < 0)
		return 0;
	r = moat_sync_send_fd(sync_fd, MOAT_SYNC_SECCOMP_FD, 0, notify, err);
	close(notify);
	return r;
}

int moat_init_confine_last(struct moat_seccomp *sc, const struct oci_process *p, moat_error *err)
{
	int notify = -1;

	if (sc == NULL)
		return 0;
	if (moat_seccomp_load(sc, &notify, err) < 0)
		return moat_error_prefix(err, "linux.seccomp");
	if (notify >= 0)
		close(notify); /* none: a profile with SCMP_ACT_NOTIFY is loaded before */
	if (!p->no_new_privileges && moat_process_release_sys_admin(p, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* With SCMP_ACT_NOTIFY the listener fd must reach moat over the sync socket, which is gone
 * once the init waits for start: such a filter is loaded while it is still open, before the
 * wait (the last thing of the setup), and not by moat_init_confine_last. */
static bool seccomp_early(const struct moat_init_args *a)
{
	return a->seccomp != NULL && moat_seccomp_uses_notify(a->seccomp);
}

/* moat's own procfs for the wait for start, made while the init may still mount one; where
 * it may not (a pid namespace it does not own), the wait goes through /proc. */
static int own_procfs(void)
{
	moat_error ignored = MOAT_ERROR_INIT;
	int fd = -1;

	if (moat_process_private_procfs(&fd, &ignored) < 0)
		moat_error_clear(&ignored);
	return fd;
}

/* The container's root: prepared, mounted, its createContainer hooks run, entered. The
 * rootfs's fds are closed on return, before the init closes every fd it does not pass on. */
static int enter_root(const struct moat_init_args *a, int *idmapped, int *ret_procfd,
		      moat_error *err)
{
	struct moat_rootfs_opts ropts = { .userns = moat_ns_in_userns(a->ns),
					  .no_pivot = a->no_pivot,
					  .idmapped = idmapped,
					  .inner = a->vm ? &a->vm->workload : NULL };
	_cleanup_(moat_rootfs_freep) struct moat_rootfs *rootfs = NULL;
	const struct oci_config *cfg = a->cfg;

	if (moat_rootfs_prepare(cfg, a->rootfs, &ropts, &rootfs, err) < 0 ||
	    moat_process_write_oom_score_adj(cfg->process, err) < 0 ||
	    (moat_ns_in_userns(a->ns) && become_ns_root(err) < 0) ||
	    moat_process_write_sysctl(cfg, err) < 0)
		return moat_error_ret(err);
	*ret_procfd = own_procfs();
	/* createContainer: in the container's namespaces, once its mounts are made and before
	 * its root is entered (so the hook's path still resolves as on the host). */
	if (moat_rootfs_mount(rootfs, cfg, err) < 0 ||
	    run_hooks(a, MOAT_HOOK_CREATE_CONTAINER, "creating", a->bundle, err) < 0 ||
	    moat_rootfs_enter(rootfs, cfg, err) < 0)
		return moat_error_ret(err);
	return 0;
}

static int build_container(const struct moat_init_args *a, int *idmapped, struct moat_exec *exec,
			   int *ret_procfd, moat_error *err)
{
	const struct oci_config *cfg = a->cfg;

	if (a->ns->create[MOAT_NS_CGROUP] && unshare(CLONE_NEWCGROUP) < 0)
		return moat_error_set(err, errno, "create the cgroup namespace");
	if (a->vm != NULL && !a->vm->member && moat_vm_check_network(a->vm, err) < 0)
		return moat_error_ret(err);
	if (setsid() < 0)
		return moat_error_set(err, errno, "setsid");
	if (enter_root(a, idmapped, ret_procfd, err) < 0)
		return moat_error_ret(err);
	if (cfg->process->terminal && send_console(a, err) < 0)
		return moat_error_ret(err);
	if (moat_process_setup_env(cfg, a->ns, a->no_new_keyring, err) < 0 ||
	    moat_process_attrs_apply(cfg, err) < 0 ||
	    (a->vm == NULL &&
	     moat_process_prepare_exec(cfg->process, a->listen_fds, exec, err) < 0))
		return moat_error_ret(err);
	/* virtiofsd gets its capabilities from the ones the init still has (vm-virtiofs.h); QEMU
	 * will run as the process's user */
	if (a->vm != NULL && moat_vm_virtiofs_wanted(a->vm) &&
	    moat_vm_virtiofsd_start(a->vm, cfg->process, err) < 0)
		return moat_error_ret(err);
	/* The filter comes last (moat_init_confine_last), after every syscall of moat's own;
	 * without no_new_privs the kernel takes it only with CAP_SYS_ADMIN, held until then.
	 * One with SCMP_ACT_NOTIFY is loaded here: without no_new_privs, while every
	 * capability is still there. */
	bool nnp = cfg->process->no_new_privileges;

	if (seccomp_early(a) && !nnp && moat_init_load_seccomp(a->seccomp, a->sync_fd, err) < 0)
		return moat_error_ret(err);
	if (moat_process_become_user(cfg->process, a->seccomp != NULL && !seccomp_early(a) && !nnp,
				     err) < 0 ||
	    moat_process_close_fds(a->listen_fds + a->preserve_fds, err) < 0 ||
	    moat_process_attrs_exec(cfg, err) < 0)
		return moat_error_ret(err);
	if (seccomp_early(a) && nnp && moat_init_load_seccomp(a->seccomp, a->sync_fd, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* NET_FD or TAP_FD (sync.h): the interfaces a hook gave a microVM's own namespace, which
 * moat took after the hook, and their taps. */
static int receive_network(const struct moat_init_args *a, const struct moat_sync_msg *m, int fd,
			   moat_error *err)
{
	struct moat_vm_net *net = &a->vm->net;
	int r = 0;

	if (m->type == MOAT_SYNC_NET_FD && net->n == 0) {
		r = moat_vm_net_load(fd, net, err);
		close(fd);
		if (r == 0)
			moat_vm_net_start(net, &a->vm->start);
		return r;
	}
	if (m->type == MOAT_SYNC_TAP_FD && m->value >= 0 && (uint64_t)m->value < net->n &&
	    net->nics[m->value].tap_fd < 0) {
		net->nics[m->value].tap_fd = fd;
		return 0;
	}
	close(fd);
	return moat_error_msg(err, EPROTO, "sync: unexpected message %d", m->type);
}

/* SNAPSHOT_FD (sync.h): the snapshot the VM is restored from, and while it is being made,
 * its writable end. */
static int receive_snapshot(struct moat_vm_session *s, const struct moat_sync_msg *m, int fd,
			    moat_error *err)
{
	if (m->value == 0 && s->snapshot_fd < 0) {
		s->snapshot_fd = fd;
		s->snapshot_path = xstrndup(m->msg, sizeof(m->msg) - 1);
		return 0;
	}
	if (m->value == 1 && s->snapshot_fd >= 0 && s->snapshot_save_fd < 0) {
		s->snapshot_save_fd = fd;
		return 0;
	}
	close(fd);
	return moat_error_msg(err, EPROTO, "sync: unexpected snapshot message");
}

/* Until CGROUP_DONE (whose value is our host pid): the idmapped mount sources moat made for
 * us, one message each, into idmapped[mounts[] index] (one past the last: the rootfs), and a
 * microVM's late interfaces (receive_network). */
static int receive_setup(const struct moat_init_args *a, int *idmapped, pid_t *ret_host_pid,
			 moat_error *err)
{
	struct moat_sync_msg m;
	int fd;

	for (;;) {
		if (moat_sync_recv(a->sync_fd, &m, &fd, err) < 0)
			return moat_error_ret(err);
		if (m.type == MOAT_SYNC_CGROUP_DONE && fd < 0) {
			*ret_host_pid = (pid_t)m.value;
			return 0;
		}
		if ((m.type == MOAT_SYNC_NET_FD || m.type == MOAT_SYNC_TAP_FD) && fd >= 0 &&
		    a->vm != NULL) {
			if (receive_network(a, &m, fd, err) < 0)
				return moat_error_ret(err);
			continue;
		}
		if (m.type == MOAT_SYNC_SNAPSHOT_FD && fd >= 0 && a->vm != NULL) {
			if (receive_snapshot(a->vm, &m, fd, err) < 0)
				return moat_error_ret(err);
			continue;
		}
		if (m.type != MOAT_SYNC_MOUNT_FD || fd < 0 || m.value < 0 ||
		    (uint64_t)m.value > a->cfg->mounts_len || idmapped[m.value] >= 0) {
			if (fd >= 0)
				close(fd);
			return moat_error_msg(err, EPROTO, "sync: unexpected message %d", m.type);
		}
		idmapped[m.value] = fd;
	}
}

/* The VM's snapshot, being made (vm-snapshot.h): saved by a child under the confinement the
 * supervisor will have, which QEMU inherits; the writable end is then closed, before
 * anything of the container's runs. A failure was reported by the child, or is reported. */
static void save_snapshot(const struct moat_init_args *a)
{
	moat_error err = MOAT_ERROR_INIT;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if ((!seccomp_early(a) &&
		     moat_init_confine_last(a->seccomp, a->cfg->process, &err) < 0) ||
		    moat_vm_snapshot_save(a->vm, a->vm->snapshot_save_fd, &err) < 0) {
			moat_error hint = MOAT_ERROR_INIT;

			moat_error_msg(&hint, err.code,
				       "%s (annotations." MOAT_VM_BOOT_ANNOTATION "=cold boots "
				       "without one)",
				       err.msg);
			die(a->sync_fd, &hint);
		}
		_exit(EXIT_SUCCESS);
	}
	if (pid < 0) {
		moat_error_set(&err, errno, "microvm: fork to save a snapshot");
		die(a->sync_fd, &err);
	}
	close(a->vm->snapshot_save_fd);
	a->vm->snapshot_save_fd = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_FAILURE)
		_exit(EXIT_FAILURE); /* the child said why */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		moat_error_msg(&err, EIO, "microvm: saving a snapshot: the saver was killed");
		die(a->sync_fd, &err);
	}
}

__attribute__((noreturn)) static void stage2(const struct moat_init_args *args)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_exec exec = { 0 };
	struct moat_init_args copy = *args, *a = &copy;
	int *idmapped = xcalloc(a->cfg->mounts_len + 1, sizeof(int));
	int procfd = -1, started_fd = -1;
	bool member = a->vm != NULL && a->vm->member;

	/* (moat is our parent, through stage 1's CLONE_PARENT or its own clone, maybe outside
	 * our PID namespace; leave_parent closed moat's end) */
	moat_sync_child_attach(0, -1);
	for (size_t i = 0; i <= a->cfg->mounts_len; i++)
		idmapped[i] = -1;
	if (receive_setup(a, idmapped, &copy.host_pid, &err) < 0)
		_exit(EXIT_FAILURE);
	if (build_container(a, idmapped, &exec, &procfd, &err) < 0)
		die(a->sync_fd, &err);
	free(idmapped); /* every fd in it was taken over */
	/* From COMMIT on the container outlives `moat create`: moat has saved its state, so
	 * delete finds it. If moat dies before, the send fails or COMMIT is EOF, and we exit:
	 * nothing of ours is left that no state names. (Changing credentials cleared the death
	 * signal: it is armed again for that wait, and for good with die_with_parent.) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (a->vm != NULL && a->vm->snapshot_save_fd >= 0)
		save_snapshot(a);
	if (moat_sync_send(a->sync_fd, MOAT_SYNC_READY, 0, &err) < 0 ||
	    moat_sync_expect(a->sync_fd, MOAT_SYNC_COMMIT, NULL, &err) < 0)
		_exit(EXIT_FAILURE);
	if (!a->die_with_parent)
		prctl(PR_SET_PDEATHSIG, 0);
	close(a->sync_fd);
	/* startContainer: inside the container, under its full confinement,
	 * right before the program. Nobody waits for us any more, so a failure
	 * goes to the container's stderr and stops the container. */
	if (wait_for_start(a->fifo_fd, procfd, member ? &started_fd : NULL, &err) < 0 ||
	    run_hooks(a, MOAT_HOOK_START_CONTAINER, "created", NULL, &err) < 0) {
		fprintf(stderr, "moat: %s\n", err.msg);
		_exit(127);
	}
	if (procfd >= 0)
		close(procfd);
	if (a->vm == NULL)
		moat_reset_signal_actions();
	if (!seccomp_early(a) && moat_init_confine_last(a->seccomp, a->cfg->process, &err) < 0) {
		fprintf(stderr, "moat: %s\n", err.msg);
		_exit(127);
	}
	if (member)
		_exit(moat_vm_member_run(a->vm, a->cfg->process->terminal, started_fd));
	if (a->vm != NULL)
		_exit(moat_vm_supervise(a->vm, a->cfg->process->terminal));
	execve(exec.path, exec.argv, exec.envp);
	fprintf(stderr, "moat: exec '%s': %s\n", exec.path, strerror(errno));
	_exit(127);
}

/* What a new time or network namespace needs before anything runs in it: the config's clock
 * offsets, the loopback up. */
static int finish_namespaces(const struct moat_init_args *a, moat_error *err)
{
	if (a->ns->create[MOAT_NS_TIME] && write_time_offsets(a->cfg->linux, err) < 0)
		return moat_error_ret(err);
	if (a->ns->create[MOAT_NS_NET] && moat_ns_loopback_up(err) < 0)
		return moat_error_ret(err);
	return 0;
}

static int enter_namespaces(const struct moat_init_args *a, moat_error *err)
{
	const struct moat_ns_plan *ns = a->ns;
	int flags;

	/* The host's root may join any namespace, but not once it is in another user
	 * namespace: it joins the others first (a pod's container joins the sandbox's network
	 * namespace, which the host owns, and its user namespace). Anyone else needs the rights
	 * a joined user namespace gives over the namespaces it owns: that one first. */
	bool user_first = geteuid() != 0;

	if (user_first && ns->join_fd[MOAT_NS_USER] >= 0 && moat_ns_join(ns, true, err) < 0)
		return moat_error_ret(err);
	if (moat_ns_join(ns, false, err) < 0)
		return moat_error_ret(err);
	if (!user_first && ns->join_fd[MOAT_NS_USER] >= 0 && moat_ns_join(ns, true, err) < 0)
		return moat_error_ret(err);
	if (ns->create[MOAT_NS_USER]) {
		if (unshare(CLONE_NEWUSER) < 0)
			return moat_error_set(err, errno, "create the user namespace");
		if (moat_sync_send(a->sync_fd, MOAT_SYNC_USERNS_READY, getpid(), err) < 0 ||
		    moat_sync_expect(a->sync_fd, MOAT_SYNC_USERNS_MAPPED, NULL, err) < 0)
			return moat_error_ret(err);
	}
	flags = moat_ns_plan_flags(ns, CLONE_NEWUSER | CLONE_NEWCGROUP);
	if (flags != 0 && unshare(flags) < 0)
		return moat_error_set(err, errno, "create namespaces (flags 0x%x)", flags);
	return finish_namespaces(a, err);
}

/* From here until the program's execve, a process in the container with CAP_SYS_PTRACE in
 * its user namespace cannot attach to us, nor read our memory: that takes CAP_SYS_PTRACE on
 * the host (CVE-2016-9962). exec.c's helper does the same. */
static void not_dumpable(void)
{
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* What create's first child, stage 1 or the init cloned into its namespaces, does before
 * anything else: it keeps nothing of moat's but its end of the sync socket, dies with moat
 * (parent: moat's pid, 0 when it is outside our PID namespace), joins the v1 cgroups with the
 * tasks files moat opened, and enters the bundle. */
static void leave_parent(const struct moat_init_args *a, pid_t parent)
{
	moat_error err = MOAT_ERROR_INIT;
	sigset_t none;

	/* A root moat's child is not dumpable from its start (a rootless one's only once the
	 * parent has written its id maps, which needs its /proc files to be the user's). */
	if (a->host_root)
		not_dumpable();
	/* The flock on the state directory belongs to the moat process: a copy
	 * here would keep the container locked until exec. */
	close(a->lock_fd);
	/* The user program starts with no signal blocked, whatever moat blocked. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	moat_sync_child_attach(parent, a->parent_sync_fd);
	/* Into the v1 cgroups, where the init starts (cgroup.h says why the parent does not add
	 * it there, and why the tasks files were opened by the parent). */
	if (a->join_cgroup_v1 && moat_cgroup_join_v1(a->cg, &err) < 0)
		die(a->sync_fd, &err);
	if (a->cg != NULL)
		moat_cgroup_close_fds(a->cg);
	/* Relative paths in the config (bind sources) are relative to the bundle. */
	if (chdir(a->bundle) < 0) {
		moat_error_set(&err, errno, "enter the bundle '%s'", a->bundle);
		die(a->sync_fd, &err);
	}
}

void moat_init_stage1(const struct moat_init_args *a)
{
	moat_error err = MOAT_ERROR_INIT;
	pid_t pid;

	leave_parent(a, a->parent);
	if (enter_namespaces(a, &err) < 0)
		die(a->sync_fd, &err);
	not_dumpable();
	/* CLONE_PARENT: the init becomes moat's child, not ours, so `run` can
	 * wait for it and stage 1 can simply exit. */
	pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0) {
		moat_error_set(&err, errno, "clone the container init");
		die(a->sync_fd, &err);
	}
	if (pid == 0)
		stage2(a);
	if (moat_sync_send(a->sync_fd, MOAT_SYNC_INIT_PID, pid, &err) < 0)
		_exit(EXIT_FAILURE);
	_exit(EXIT_SUCCESS);
}

void moat_init_direct(const struct moat_init_args *a)
{
	moat_error err = MOAT_ERROR_INIT;

	leave_parent(a, a->ns->create[MOAT_NS_PID] ? 0 : a->parent);
	/* In the cgroups now: moat may go on, and run its hooks with us there. Our pid is the
	 * one its clone returned. */
	if (moat_sync_send(a->sync_fd, MOAT_SYNC_INIT_PID, 0, &err) < 0 ||
	    (a->ns->create[MOAT_NS_USER] &&
	     moat_sync_expect(a->sync_fd, MOAT_SYNC_USERNS_MAPPED, NULL, &err) < 0))
		_exit(EXIT_FAILURE);
	if (finish_namespaces(a, &err) < 0)
		die(a->sync_fd, &err);
	not_dumpable();
	stage2(a);
}
