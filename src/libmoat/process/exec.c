/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: running another process in an existing container.
 *
 * Same two-step shape as create: a helper joins the container's namespaces
 * through a pidfd of its init (one setns call, so it cannot join half of
 * one container and half of another), then forks the process with
 * CLONE_PARENT so it is moat's child inside the container's PID namespace.
 * moat puts it in the container's cgroup before it runs anything. */
#include "exec.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cgroup.h"
#include "cgroup-sub.h"
#include "fault.h"
#include "container.h"
#include "init.h"
#include "namespaces.h"
#include "policy.h"
#include "process.h"
#include "process-attrs.h"
#include "state.h"
#include "sync.h"
#include "syscall-filter.h"
#include "terminal.h"
#include "utils.h"
#include "pod.h"
#include "vm-exec.h"

/* What exec learned about the container while holding its lock. */
struct target {
	int dirfd;
	struct moat_state *st;
	struct oci_config *cfg; /* the container's saved config */
	int pidfd;
	int ns_flags;                  /* the namespaces of the init that differ from ours */
	struct moat_cgroup_subs *subs; /* --cgroup, parsed; NULL: none */
	bool paused;                   /* --ignore-paused, and the container is paused */
};

static void target_close(struct target *t)
{
	if (t->dirfd >= 0)
		close(t->dirfd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	moat_state_free(t->st);
	oci_config_free(t->cfg);
	moat_cgroup_subs_free(t->subs);
	*t = (struct target){ .dirfd = -1, .pidfd = -1 };
}

static bool same_ns(pid_t pid, const char *name)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	if (stat(path, &a) < 0 || snprintf(path, sizeof(path), "/proc/self/ns/%s", name) < 0 ||
	    stat(path, &b) < 0)
		return true;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static int open_target(const struct moat_exec_opts *o, struct target *t, moat_error *err)
{
	enum moat_status status;
	int k;

	if (moat_state_dir_open(o->root, o->id, &t->dirfd, err) < 0 ||
	    moat_state_read(t->dirfd, &t->st, err) < 0)
		return moat_error_ret(err);
	if (moat_state_read_config(t->dirfd, &t->cfg, err) < 0)
		return moat_error_prefix(err, "container '%s'", o->id);
	status = moat_state_status(t->dirfd, t->st);
	t->paused = status == MOAT_STATUS_PAUSED;
	if (t->paused && !o->ignore_paused)
		return moat_error_msg(err, EINVAL,
				      "container '%s' is paused: exec needs a running or created "
				      "container (or --ignore-paused, to wait for resume)",
				      o->id);
	/* A created container's init waits before its program: exec may run beside it, as
	 * engines expect of a created task. */
	if (status != MOAT_STATUS_RUNNING && status != MOAT_STATUS_CREATED &&
	    status != MOAT_STATUS_PAUSED)
		return moat_error_msg(
			err, EINVAL,
			"container '%s' is %s: exec needs a running or created container", o->id,
			moat_status_name(status));
	if (o->n_cgroups > 0 && t->st->cgroup_path == NULL)
		return moat_error_msg(err, EINVAL,
				      "exec: --cgroup: container '%s' has no cgroup (rootless "
				      "without linux.resources, or --cgroup-manager disabled)",
				      o->id);
	t->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)t->st->pid, 0);
	if (t->pidfd < 0 || !moat_state_pid_alive(t->st))
		return moat_error_msg(err, ESRCH, "container '%s' is stopped: cannot exec", o->id);
	for (k = 0; k < MOAT_NS_COUNT; k++)
		if (!same_ns((pid_t)t->st->pid, moat_ns_proc_name(k)))
			t->ns_flags |= moat_ns_clone_flag(k);
	return 0;
}

struct child_args {
	const struct moat_exec_opts *o;
	const struct target *t;
	const struct oci_config *view; /* the container's config with the exec'd process */
	struct moat_seccomp *seccomp;  /* the container's linux.seccomp, compiled; or NULL */
	int sync_fd;
	int parent_sync_fd; /* moat's end: closed in the child (sync.h moat_sync_child_attach) */
	pid_t parent;
};

/* The last step before execve (init.h moat_init_confine_last). With SCMP_ACT_NOTIFY, the
 * process waits until moat has handed the listener its fd: if that fails, moat kills it
 * before it runs anything. */
static int confine_last(const struct child_args *c, const struct oci_process *p, moat_error *err)
{
	if (c->seccomp == NULL || !moat_seccomp_uses_notify(c->seccomp))
		return moat_init_confine_last(c->seccomp, p, err);
	if (moat_init_load_seccomp(c->seccomp, c->sync_fd, err) < 0 ||
	    moat_sync_expect(c->sync_fd, MOAT_SYNC_SECCOMP_PASSED, NULL, err) < 0)
		return moat_error_ret(err);
	if (!p->no_new_privileges && moat_process_release_sys_admin(p, err) < 0)
		return moat_error_ret(err);
	return 0;
}

static int run_process(const struct child_args *c, moat_error *err)
{
	const struct oci_process *p = c->view->process;
	struct moat_exec exec = { 0 };
	int master = -1;

	if (moat_sync_expect(c->sync_fd, MOAT_SYNC_CGROUP_DONE, NULL, err) < 0)
		return moat_error_ret(err);
	if (setsid() < 0)
		return moat_error_set(err, errno, "setsid");
	/* Inside a user namespace, act as its root (not as the host's unmapped
	 * root) so what we create, such as the pty, belongs to the container. */
	if ((c->t->ns_flags & CLONE_NEWUSER) && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0))
		return moat_error_set(err, errno, "become root of the container's user namespace");
	if (p->terminal) {
		if (moat_terminal_create(p, &master, err) < 0 ||
		    moat_sync_send_fd(c->sync_fd, MOAT_SYNC_CONSOLE, 0, master, err) < 0)
			return moat_error_ret(err);
		close(master);
	}
	if (moat_process_attrs_apply(c->view, err) < 0 || moat_process_set_limits(p, err) < 0 ||
	    moat_process_prepare_exec(p, 0, &exec, err) < 0 ||
	    moat_process_become_user(p, c->seccomp != NULL && !p->no_new_privileges, err) < 0 ||
	    moat_process_close_fds(c->o->preserve_fds, err) < 0 ||
	    moat_process_attrs_exec(c->view, err) < 0)
		return moat_error_ret(err);
	moat_reset_signal_actions();
	if (confine_last(c, p, err) < 0)
		return moat_error_ret(err);
	/* The sync socket is close-on-exec: moat reads EOF when execve worked. */
	execve(exec.path, exec.argv, exec.envp);
	return moat_error_set(err, errno, "exec '%s'", exec.path);
}

__attribute__((noreturn)) static void exec_child(const struct child_args *c)
{
	moat_error err = MOAT_ERROR_INIT;
	sigset_t none;
	pid_t pid;

	/* Not dumpable from before the setns until the program's execve: a process of the
	 * container with CAP_SYS_PTRACE there could otherwise attach while we still hold every
	 * capability in its user namespace and no filter (CVE-2016-9962); now that takes
	 * CAP_SYS_PTRACE on the host. The clone below inherits it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	moat_sync_child_attach(c->parent, c->parent_sync_fd);
	close(c->t->dirfd); /* the flock belongs to moat */
	if (c->t->ns_flags != 0 && setns(c->t->pidfd, c->t->ns_flags) < 0) {
		moat_error_set(&err, errno, "join the namespaces of container '%s'", c->o->id);
		goto fail;
	}
	pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0) {
		moat_error_set(&err, errno, "clone");
		goto fail;
	}
	if (pid == 0) {
		/* (CLONE_PARENT: moat is our parent, maybe outside our PID namespace) */
		moat_sync_child_attach(0, -1);
		run_process(c, &err);
		goto fail;
	}
	if (moat_sync_send(c->sync_fd, MOAT_SYNC_INIT_PID, pid, &err) < 0)
		_exit(EXIT_FAILURE);
	_exit(EXIT_SUCCESS);
fail:
	moat_sync_send_error(c->sync_fd, &err);
	_exit(EXIT_FAILURE);
}

/* SCMP_ACT_NOTIFY: the exec'd process's listener fd, with its pid and the container's state,
 * to linux.seccomp.listenerPath. */
static int pass_seccomp_listener(const struct target *t, int fd, pid_t pid, moat_error *err)
{
	const struct oci_seccomp *s = t->cfg->linux->seccomp;
	struct oci_string_map *shown = moat_state_shown_annotations(t->st);
	_cleanup_free_ char *json =
		moat_state_json(t->cfg->oci_version, t->st->id, (pid_t)t->st->pid, "running",
				t->st->bundle, t->st->rootfs, shown);
	_cleanup_close_ int notify = -1;

	oci_string_map_free(shown);
	if (moat_sync_expect_fd(fd, MOAT_SYNC_SECCOMP_FD, &notify, err) < 0)
		return moat_error_ret(err);
	if (moat_seccomp_send_to_listener(s->listener_path, s->listener_metadata, notify, pid, json,
					  err) < 0)
		return moat_error_ret(err); /* the message names linux.seccomp.listenerPath */
	return 0;
}

/* The parent's side: cgroup, pid file, terminal, seccomp listener, then EOF (exec worked)
 * or an error from the child. */
static int settle(const struct moat_exec_opts *o, struct target *t, struct moat_seccomp *seccomp,
		  int fd, pid_t pid, int *ret_console, moat_error *err)
{
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;
	int r = 0, master = -1;
	char buf[32];

	if (t->st->cgroup_path != NULL && (moat_cgroup_open(t->st->cgroup_path, &cg, err) < 0 ||
					   moat_cgroup_add_pid_within(cg, pid, t->subs, err) < 0))
		return moat_error_prefix(err, "exec");
	moat_fault_step("exec:cgroup-joined");
	moat_process_raise_hard_limits(pid, o->process);
	if (moat_sync_send(fd, MOAT_SYNC_CGROUP_DONE, 0, err) < 0)
		return moat_error_ret(err);
	/* In a paused container the process is frozen from here until resume: release the
	 * container's lock now, or resume (and everyone else) would wait for us. */
	if (t->paused) {
		close(t->dirfd);
		t->dirfd = -1;
	}
	if (o->process->terminal) {
		if (moat_sync_expect_fd(fd, MOAT_SYNC_CONSOLE, &master, err) < 0)
			return moat_error_ret(err);
		if (o->console_socket) {
			r = moat_send_fd_to_socket(o->console_socket, master, "/dev/ptmx", err);
			close(master);
			master = -1;
			if (r < 0)
				return r;
		}
	}
	*ret_console = master;
	if (seccomp != NULL && moat_seccomp_uses_notify(seccomp) &&
	    (pass_seccomp_listener(t, fd, pid, err) < 0 ||
	     moat_sync_send(fd, MOAT_SYNC_SECCOMP_PASSED, 0, err) < 0))
		return moat_error_ret(err);
	/* EOF: the process has exec'd. A message here is its error. */
	if (moat_sync_expect(fd, MOAT_SYNC_READY, NULL, err) < 0 && err->code != EPIPE)
		return moat_error_ret(err);
	moat_error_drop(err);
	if (o->pid_file) {
		size_t len = (size_t)snprintf(buf, sizeof(buf), "%d", (int)pid);
		if (write_file_atomic_at(AT_FDCWD, o->pid_file, buf, len, 0644, err) < 0)
			return moat_error_prefix(err, "--pid-file");
	}
	return 0;
}

static int spawn_child(const struct moat_exec_opts *o, struct target *t, struct child_args *c,
		       pid_t *ret_pid, int *ret_console, moat_error *err)
{
	int fds[2], status;
	int64_t v;
	pid_t helper;

	if (moat_sync_pair(fds, err) < 0)
		return moat_error_ret(err);
	c->sync_fd = fds[1];
	c->parent_sync_fd = fds[0];
	c->parent = getpid();
	helper = fork();
	if (helper == 0)
		exec_child(c);
	close(fds[1]);
	if (helper < 0) {
		close(fds[0]);
		return moat_error_set(err, errno, "fork");
	}
	moat_fault_step("exec:forked");
	if (moat_sync_expect(fds[0], MOAT_SYNC_INIT_PID, &v, err) < 0) {
		waitpid(helper, &status, 0);
		close(fds[0]);
		return moat_error_ret(err);
	}
	waitpid(helper, &status, 0);
	*ret_pid = (pid_t)v;
	moat_fault_step("exec:pid");
	if (settle(o, t, c->seccomp, fds[0], *ret_pid, ret_console, err) < 0) {
		kill(*ret_pid, SIGKILL);
		waitpid(*ret_pid, &status, 0);
		close(fds[0]);
		return moat_error_ret(err);
	}
	close(fds[0]);
	return 0;
}

/* The exec'd process may not ask for more than the container could have: the policy's
 * process rules, with the container's own relaxations (its annotations). */
static int hold_to_policy(const struct moat_exec_opts *o, struct oci_config *view, moat_error *err)
{
	_cleanup_(moat_policy_freep) struct moat_policy *p = NULL;

	if (moat_policy_load(o->policy, &p, err) < 0 ||
	    moat_policy_apply_rules(p, view, MOAT_POLICY_EXEC_RULES, err) < 0)
		return moat_error_prefix(err, "exec");
	return 0;
}

static bool is_microvm(const struct target *t)
{
	return t->st->isolation != NULL && strcmp(t->st->isolation, "microvm") == 0;
}

/* A microVM's processes live in the guest: its supervisor (a pod member's: its pod's) runs
 * this one (vm-exec.h). The process is held to the policy as any exec'd one; the container's
 * lock is released before the (long) conversation, on a reopened state directory that holds
 * none. */
static int exec_in_vm(const struct moat_exec_opts *o, struct target *t, int *ret_status,
		      moat_error *err)
{
	struct moat_exec_opts vo = *o;
	struct oci_config view = *t->cfg;
	struct oci_process proc = *o->process;
	const char *member = NULL;
	_cleanup_free_ char *name = NULL;
	int dirfd = -1, r;

	view.process = &proc;
	if (o->n_cgroups > 0 || moat_state_status(t->dirfd, t->st) != MOAT_STATUS_RUNNING) {
		enum moat_status status = moat_state_status(t->dirfd, t->st);

		target_close(t);
		if (o->n_cgroups > 0)
			return moat_error_msg(
				err, EINVAL,
				"exec: --cgroup: container '%s' is a "
				"microVM: its processes run in the guest, not in host "
				"cgroups",
				o->id);
		return moat_error_msg(err, EINVAL,
				      "container '%s' is %s: a microVM's guest runs "
				      "a new process only while the container is running",
				      o->id, moat_status_name(status));
	}
	r = hold_to_policy(o, &view, err);
	if (r == 0)
		r = moat_pod_vm_dir(o->root, t->st, t->dirfd, &dirfd, &member, err);
	name = member ? xstrdup(member) : NULL;
	target_close(t);
	if (r < 0)
		return moat_error_prefix(err, "exec");
	vo.process = &proc;
	r = moat_vm_exec(&vo, dirfd, name, ret_status, err);
	close(dirfd);
	if (r == 0 && !o->detach && o->ret_wstatus != NULL)
		*o->ret_wstatus = *ret_status > 128 && *ret_status <= 128 + 64
					  ? *ret_status - 128
					  : (*ret_status & 0xff) << 8;
	return r;
}

static int spawn(const struct moat_exec_opts *o, struct target *t, pid_t *ret_pid, int *ret_console,
		 moat_error *err)
{
	struct oci_config view = *t->cfg;
	struct oci_process proc = *o->process; /* the policy may set its noNewPrivileges */
	struct child_args c = { .o = o, .t = t, .view = &view };
	int r;

	/* Process attributes (scheduler, ioPriority, execCPUAffinity, LSM labels) come from the
	 * exec'd process; personality and memoryPolicy, from the container's linux section. */
	view.process = &proc;
	if (moat_process_attrs_validate(&view, err) < 0 || hold_to_policy(o, &view, err) < 0)
		return moat_error_ret(err);
	if (t->cfg->linux != NULL && t->cfg->linux->seccomp != NULL &&
	    moat_seccomp_prepare_cached(t->cfg->linux->seccomp, o->root, &c.seccomp, err) < 0)
		return moat_error_ret(err);
	r = spawn_child(o, t, &c, ret_pid, ret_console, err);
	moat_seccomp_free(c.seccomp);
	return r;
}

int moat_container_exec(const struct moat_exec_opts *o, int *ret_status, moat_error *err)
{
	struct target t = { .dirfd = -1, .pidfd = -1 };
	int console = -1, wstatus = 0, r;
	sigset_t set, old;
	pid_t pid = 0;

	if (o->process->terminal && o->detach && o->console_socket == NULL)
		return moat_error_msg(err, EINVAL,
				      "process.terminal: a detached exec needs --console-socket");
	if (moat_process_validate_one(o->process, err) < 0)
		return moat_error_ret(err);
	if (moat_cgroup_subs_parse(o->cgroups, o->n_cgroups, &t.subs, err) < 0)
		return moat_error_prefix(err, "exec");
	moat_forwarded_signals(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	r = open_target(o, &t, err);
	if (r == 0 && is_microvm(&t)) {
		r = exec_in_vm(o, &t, ret_status, err);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	if (r == 0)
		r = spawn(o, &t, &pid, &console, err);
	target_close(&t); /* unlock: others may use the container meanwhile */
	if (r == 0 && !o->detach) {
		if (console >= 0)
			r = moat_terminal_relay(console, pid, &set, &wstatus, err);
		else
			r = moat_wait_foreground(pid, &set, &wstatus, err);
		*ret_status = moat_exit_status(wstatus);
		if (o->ret_wstatus != NULL)
			*o->ret_wstatus = wstatus;
	}
	if (console >= 0)
		close(console);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

int moat_exec_default_process(const char *root, const char *id, struct oci_process **ret,
			      moat_error *err)
{
	_cleanup_close_ int dirfd = -1;
	struct oci_config *cfg = NULL;

	if (moat_state_dir_open(root, id, &dirfd, err) < 0)
		return moat_error_ret(err);
	if (moat_state_read_config(dirfd, &cfg, err) < 0)
		return moat_error_prefix(err, "container '%s'", id);
	*ret = cfg->process;
	cfg->process = NULL;
	oci_config_free(cfg);
	return 0;
}
