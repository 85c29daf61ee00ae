/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the rest of the lifecycle: start, run, kill, delete, state, list. */
#include "container.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cgroup.h"
#include "cgroup-systemd.h"
#include "container-internal.h"
#include "creating.h"
#include "fault.h"
#include "hooks.h"
#include "oci-config.h"
#include "pod.h"
#include "policy.h"
#include "terminal.h"
#include "utils.h"
#include "vm-select.h"

#define R struct moat_report
static const struct ocijson_field report_fields[] = {
	OCIJSON_STR(R, "ociVersion", oci_version, OCIJSON_REQUIRED),
	OCIJSON_STR(R, "id", id, OCIJSON_REQUIRED),
	OCIJSON_I64_REQ(R, "pid", pid),
	OCIJSON_STR(R, "status", status, OCIJSON_REQUIRED),
	OCIJSON_STR(R, "bundle", bundle, OCIJSON_REQUIRED),
	OCIJSON_STR(R, "rootfs", rootfs, 0),
	OCIJSON_STR(R, "created", created, 0),
	OCIJSON_U32_REQ(R, "owner", owner),
	OCIJSON_STR_MAP(R, "annotations", annotations, 0),
};
#undef R
const struct ocijson_type moat_report_type =
	OCIJSON_TYPE("state", struct moat_report, report_fields, NULL);

char *moat_state_json(const char *oci_version, const char *id, pid_t pid, const char *status,
		      const char *bundle, const char *rootfs, const struct oci_string_map *ann)
{
	struct moat_report r = { .oci_version = (char *)oci_version,
				 .id = (char *)id,
				 .pid = pid,
				 .status = (char *)status,
				 .bundle = (char *)bundle,
				 .rootfs = (char *)rootfs,
				 .owner = getuid(),
				 .annotations = (struct oci_string_map *)ann };
	char *json = NULL, *msg = NULL;

	if (ocijson_generate(&moat_report_type, &r, false, &json, NULL, &msg) < 0)
		json = xstrdup("{}");
	free(msg);
	return json;
}

struct oci_string_map *moat_state_annotations(const struct oci_string_map *annotations,
					      const char *isolation, const char *accel,
					      const struct oci_string_map *policy)
{
	struct oci_string_map *m = NULL;

	for (size_t i = 0; annotations != NULL && i < annotations->len; i++)
		oci_string_map_set(&m, annotations->keys[i], annotations->values[i]);
	if (isolation != NULL)
		oci_string_map_set(&m, MOAT_ISOLATION_ANNOTATION, isolation);
	if (accel != NULL)
		oci_string_map_set(&m, MOAT_VM_ACCEL_ANNOTATION, accel);
	for (size_t i = 0; policy != NULL && i < policy->len; i++) {
		_cleanup_free_ char *key = xasprintf("moat.policy.%s", policy->keys[i]);

		oci_string_map_set(&m, key, policy->values[i]);
	}
	return m;
}

struct oci_string_map *moat_state_shown_annotations(const struct moat_state *st)
{
	struct oci_string_map *m =
		moat_state_annotations(st->annotations, st->isolation, NULL, st->policy);
	_cleanup_free_ char *note = moat_state_cgroup_ignored_note(st->cgroup_ignored);

	if (note != NULL)
		oci_string_map_set(&m, MOAT_CGROUP_IGNORED_ANNOTATION, note);
	return m;
}

/* How long delete --force and kill wait for a process to be gone. */
#define MOAT_EXIT_WAIT_MS 10000
/* How often `start` checks that the init is still alive while it waits. */
#define MOAT_START_POLL_MS 100

int moat_opened_open(const char *root, const char *id, struct moat_opened *c, moat_error *err)
{
	c->dirfd = -1;
	c->st = NULL;
	if (moat_state_dir_open(root, id, &c->dirfd, err) < 0)
		return moat_error_ret(err);
	if (moat_state_read(c->dirfd, &c->st, err) < 0) {
		struct stat sb;

		if (err->code == ENOENT && fstat(c->dirfd, &sb) == 0 && sb.st_nlink > 0) {
			/* Locked, yet no state: the create holding the lock until it saved the
			 * state is gone (creating.h). The directory stays open, for delete. */
			moat_error_drop(err);
			return moat_error_msg(err, EBUSY,
					      "container '%s': its create was interrupted (moat died "
					      "before it saved the state); `moat delete %s` removes "
					      "what it left",
					      id, id);
		}
		if (err->code == ENOENT) /* removed by the create or delete we waited for */
			moat_error_msg(err, ENOENT, "container '%s' does not exist", id);
		close(c->dirfd);
		c->dirfd = -1;
		return moat_error_ret(err);
	}
	c->status = moat_state_status(c->dirfd, c->st);
	return 0;
}

/* Run the hooks of kind from the container's saved config; a failure is a
 * warning (poststart, poststop). */
static void run_late_hooks(const struct moat_opened *c, enum moat_hook_kind kind,
			   const char *status, moat_error *err)
{
	_cleanup_free_ char *json = NULL;
	moat_error e = MOAT_ERROR_INIT;
	struct oci_config *cfg = NULL;
	size_t len;

	/* The state says when there are none: no need to read the config (it is big when it
	 * carries a seccomp profile, and a `run` would read it twice). */
	if (c->st->late_hooks_present && !c->st->late_hooks)
		return;
	if (moat_state_read_config(c->dirfd, &cfg, &e) < 0) {
		moat_error_warn(err, "%s hooks: %s", moat_hook_kind_name(kind), e.msg);
		moat_error_clear(&e);
		return;
	}
	if (moat_hooks_list(cfg->hooks, kind, &len) != NULL && len > 0) {
		struct oci_string_map *shown = moat_state_shown_annotations(c->st);

		json = moat_state_json(c->st->oci_version, c->st->id,
				       strcmp(status, "stopped") == 0 ? 0 : (pid_t)c->st->pid,
				       status, c->st->bundle, c->st->rootfs, shown);
		oci_string_map_free(shown);
		if (moat_hooks_run(cfg->hooks, kind, json, c->st->bundle, &e) < 0)
			moat_error_warn(err, "%s", e.msg);
	}
	moat_error_clear(&e);
	oci_config_free(cfg);
}

void moat_opened_close(struct moat_opened *c)
{
	if (c->dirfd >= 0)
		close(c->dirfd);
	moat_state_free(c->st);
	c->dirfd = -1;
	c->st = NULL;
}

/* A pidfd for the recorded init, checked against its start time so a
 * recycled PID is never signalled. */
static int open_init_pidfd(const struct moat_state *st, int *ret_fd, moat_error *err)
{
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)st->pid, 0);

	if (fd < 0)
		return moat_error_set(err, errno == ESRCH ? ESRCH : errno,
				      "container '%s': pidfd_open", st->id);
	if (!moat_state_pid_alive(st)) {
		close(fd);
		return moat_error_msg(err, ESRCH,
				      "container '%s' has exited: container not running", st->id);
	}
	*ret_fd = fd;
	return 0;
}

static int wait_pidfd(int pidfd, int timeout_ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : -ETIMEDOUT;
}

static int read_start_byte(int fd, const struct moat_state *st, moat_error *err)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	for (;;) {
		int r = poll(&p, 1, MOAT_START_POLL_MS);

		if (r < 0 && errno != EINTR)
			return moat_error_set(err, errno, "poll the exec fifo");
		if (r > 0) {
			ssize_t n = read(fd, &c, 1);
			if (n == 1)
				return 0;
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return moat_error_set(err, errno, "read the exec fifo");
		}
		if (!moat_state_pid_alive(st))
			return moat_error_msg(
				err, ESRCH, "container '%s': its init exited before start", st->id);
	}
}

static int start_opened(struct moat_opened *c, moat_error *err)
{
	_cleanup_close_ int fd = -1;

	if (c->status != MOAT_STATUS_CREATED)
		return moat_error_msg(err, EINVAL,
				      "container '%s' is %s, not created: cannot start", c->st->id,
				      moat_status_name(c->status));
	moat_fault_step("start:opened");
	fd = openat(c->dirfd, MOAT_EXEC_FIFO, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "open the exec fifo");
	if (read_start_byte(fd, c->st, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("start:started");
	if (unlinkat(c->dirfd, MOAT_EXEC_FIFO, 0) < 0)
		return moat_error_set(err, errno, "remove the exec fifo");
	moat_fault_step("start:fifo-removed");
	run_late_hooks(c, MOAT_HOOK_POSTSTART, "running", err);
	return 0;
}

int moat_container_start(const char *root, const char *id, moat_error *err)
{
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	return start_opened(&c, err);
}

static int kill_opened(struct moat_opened *c, int sig, bool all, moat_error *err)
{
	_cleanup_close_ int pidfd = -1;

	if (all && c->st->cgroup_path != NULL) {
		_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;

		if (moat_cgroup_open(c->st->cgroup_path, &cg, err) < 0 ||
		    moat_cgroup_kill_all(cg, sig, err) < 0)
			return moat_error_prefix(err, "kill --all");
		return 0;
	}
	if (all)
		return moat_error_msg(
			err, EINVAL,
			"kill --all: container '%s' has no cgroup to find its processes",
			c->st->id);
	/* "container not running" is what engines (go-runc) look for to tell a finished
	 * container from a failure. */
	if (c->status == MOAT_STATUS_STOPPED)
		return moat_error_msg(
			err, ESRCH, "container '%s' has exited: container not running", c->st->id);
	if (open_init_pidfd(c->st, &pidfd, err) < 0)
		return moat_error_ret(err);
	if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0)
		return moat_error_set(err, errno, "signal %d to container '%s'", sig, c->st->id);
	return 0;
}

int moat_container_kill(const char *root, const char *id, int sig, bool all, moat_error *err)
{
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	return kill_opened(&c, sig, all, err);
}

static int thaw(const struct moat_opened *c, moat_error *err)
{
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;

	if (moat_cgroup_open(c->st->cgroup_path, &cg, err) < 0 ||
	    moat_cgroup_freeze(cg, false, err) < 0)
		return moat_error_prefix(err, "delete '%s': thaw", c->st->id);
	return 0;
}

/* SIGKILL the init (and the cgroup), then wait until it is gone. */
static int force_stop(struct moat_opened *c, moat_error *err)
{
	_cleanup_close_ int pidfd = -1;

	if (open_init_pidfd(c->st, &pidfd, err) < 0) {
		moat_error_drop(err);
		return 0; /* already gone */
	}
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return moat_error_set(err, errno, "kill container '%s'", c->st->id);
	/* A frozen (v1) process does not die until it is thawed. */
	if (c->status == MOAT_STATUS_PAUSED && thaw(c, err) < 0)
		return moat_error_ret(err);
	if (wait_pidfd(pidfd, MOAT_EXIT_WAIT_MS) < 0)
		return moat_error_msg(err, ETIMEDOUT, "container '%s' did not exit after SIGKILL",
				      c->st->id);
	return 0;
}

static int delete_opened(const char *root, struct moat_opened *c, bool force, moat_error *err)
{
	/* A created container never ran the user's program: delete stops it
	 * without --force, as runc and crun do and containerd's shim expects. */
	if (c->status != MOAT_STATUS_STOPPED) {
		if (!force && c->status != MOAT_STATUS_CREATED)
			return moat_error_msg(
				err, EBUSY,
				"container '%s' is %s: stop it first, or use delete --force",
				c->st->id, moat_status_name(c->status));
		if (force_stop(c, err) < 0)
			return moat_error_ret(err);
		moat_fault_step("delete:stopped");
	}
	if (c->st->cgroup_path != NULL) {
		_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;

		/* systemd's scope goes first: stopping it ends what runs in it */
		if (c->st->cgroup_manager != NULL &&
		    strcmp(c->st->cgroup_manager, MOAT_CGROUP_MANAGER_SYSTEMD) == 0 &&
		    moat_systemd_scope_stop(c->st->cgroup_path, c->st->owner != 0, err) < 0)
			return moat_error_prefix(err, "delete '%s'", c->st->id);
		if (moat_cgroup_open(c->st->cgroup_path, &cg, err) < 0 ||
		    moat_cgroup_destroy(cg, err) < 0)
			return moat_error_prefix(err, "delete '%s': cgroup", c->st->id);
		moat_fault_step("delete:cgroup-removed");
	}
	if (moat_pod_leave(root, c->st, err) < 0)
		return moat_error_prefix(err, "delete '%s'", c->st->id);
	moat_fault_step("delete:pod-left");
	/* poststop runs once the container is gone, but needs the saved config. */
	run_late_hooks(c, MOAT_HOOK_POSTSTOP, "stopped", err);
	return moat_state_dir_remove(root, c->st->id, err);
}

int moat_container_delete(const char *root, const char *id, bool force, moat_error *err)
{
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;
	int r = moat_opened_open(root, id, &c, err);

	/* Nothing to delete is what --force asks for: engines repeat it while cleaning up. */
	if (r == -ENOENT && force) {
		moat_error_drop(err);
		return 0;
	}
	if (r == -EBUSY) {
		/* A create that died half-way left a directory without state: whatever it
		 * made, it never ran the user's program, so plain delete removes it too. */
		moat_error_drop(err);
		return moat_creating_undo(root, id, c.dirfd, err);
	}
	if (r < 0)
		return r;
	return delete_opened(root, &c, force, err);
}

/* Signals `run` and `exec` pass on to the container rather than act on. */
void moat_forwarded_signals(sigset_t *set)
{
	static const int skip[] = { SIGKILL, SIGSTOP, SIGSEGV, SIGBUS,
				    SIGFPE,  SIGILL,  SIGTRAP, SIGSYS };
	size_t i;

	sigfillset(set);
	for (i = 0; i < MOAT_ARRAY_SIZE(skip); i++)
		sigdelset(set, skip[i]);
}

int moat_exit_status(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return WEXITSTATUS(wstatus);
}

int moat_wait_foreground(pid_t init, const sigset_t *set, int *ret_wstatus, moat_error *err)
{
	_cleanup_close_ int sfd = signalfd(-1, set, SFD_CLOEXEC);
	struct signalfd_siginfo si;
	int wstatus;

	if (sfd < 0)
		return moat_error_set(err, errno, "signalfd");
	for (;;) {
		pid_t p = waitpid(init, &wstatus, WNOHANG);

		if (p == init) {
			*ret_wstatus = wstatus;
			return 0;
		}
		if (p < 0 && errno != EINTR)
			return moat_error_set(err, errno, "wait for the container");
		if (read(sfd, &si, sizeof(si)) != sizeof(si)) {
			if (errno == EINTR)
				continue;
			return moat_error_set(err, errno, "read signalfd");
		}
		if (si.ssi_signo != SIGCHLD)
			kill(init, (int)si.ssi_signo);
	}
}

int moat_container_run(const struct moat_create_opts *o, const struct moat_run_opts *ro,
		       int *ret_status, moat_error *err)
{
	moat_error ignored = MOAT_ERROR_INIT;
	struct moat_create_opts fg = *o;
	bool detach = ro->detach;
	int console = -1, wstatus = 0, r;
	sigset_t set, old;
	pid_t init;

	fg.foreground = !detach;
	moat_forwarded_signals(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	r = moat_container_create(&fg, &init, &console, err);
	if (r == 0 && (r = moat_container_start(o->root, o->id, err)) < 0)
		moat_container_delete(o->root, o->id, true, &ignored);
	if (r == 0 && !detach) {
		if (console >= 0)
			r = moat_terminal_relay(console, init, &set, &wstatus, err);
		else
			r = moat_wait_foreground(init, &set, &wstatus, err);
		*ret_status = moat_exit_status(wstatus);
		if (!ro->keep)
			moat_container_delete(o->root, o->id, true, r < 0 ? &ignored : err);
		if (err->msg != NULL && r == 0)
			r = moat_error_ret(err);
	}
	if (console >= 0)
		close(console);
	sigprocmask(SIG_SETMASK, &old, NULL);
	moat_error_clear(&ignored);
	return r;
}

static struct moat_report *make_report(const struct moat_opened *c)
{
	struct moat_report *r = xcalloc(1, sizeof(*r));
	const struct moat_state *st = c->st;

	r->oci_version = xstrdup(st->oci_version);
	r->id = xstrdup(st->id);
	r->pid = c->status == MOAT_STATUS_STOPPED ? 0 : st->pid;
	r->status = xstrdup(moat_status_name(c->status));
	r->bundle = xstrdup(st->bundle);
	r->rootfs = xstrdup(st->rootfs);
	r->created = xstrdup(st->created);
	r->owner = st->owner;
	r->annotations = moat_state_shown_annotations(st);
	return r;
}

int moat_container_report(const char *root, const char *id, struct moat_report **ret,
			  moat_error *err)
{
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	*ret = make_report(&c);
	return 0;
}

void moat_report_free(struct moat_report *r)
{
	ocijson_free(&moat_report_type, r);
}

static int cmp_reports(const void *a, const void *b)
{
	const struct moat_report *const *x = a, *const *y = b;

	return strcmp((*x)->id, (*y)->id);
}

int moat_container_list(const char *root, struct moat_report ***ret, size_t *ret_n, moat_error *err)
{
	struct moat_report **list = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(root);

	if (d == NULL) {
		if (errno != ENOENT)
			return moat_error_set(err, errno, "--root: open '%s'", root);
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		_cleanup_error_ moat_error skip = MOAT_ERROR_INIT;
		_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		/* A container being created or deleted meanwhile is not listed. */
		if (moat_opened_open(root, de->d_name, &c, &skip) < 0)
			continue;
		list = xrealloc(list, (n + 1) * sizeof(*list));
		list[n++] = make_report(&c);
	}
	closedir(d);
	if (n > 1)
		qsort(list, n, sizeof(*list), cmp_reports);
	*ret = list;
	*ret_n = n;
	return 0;
}
