/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a sandbox from start to end (sandbox.h): make it, run the command, collect, destroy. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container.h"
#include "oci-cleanup.h"
#include "sandbox-internal.h"
#include "strv.h"
#include "utils.h"

static const char *const reason_names[] = {
	[MOAT_SANDBOX_EXITED] = "exited",
	[MOAT_SANDBOX_SIGNALED] = "signaled",
	[MOAT_SANDBOX_TIMEOUT] = "timeout",
	[MOAT_SANDBOX_OOM] = "oom",
	[MOAT_SANDBOX_PIDS_LIMIT] = "pids",
	[MOAT_SANDBOX_DISK_FULL] = "disk",
	[MOAT_SANDBOX_OUTPUT_LIMIT_HIT] = "output-limit",
	[MOAT_SANDBOX_LIFETIME] = "lifetime",
	[MOAT_SANDBOX_ERROR] = "error",
};

const char *moat_sandbox_reason_name(enum moat_sandbox_reason r)
{
	return reason_names[r];
}

int moat_sandbox_check_name(const char *name, moat_error *err)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n ||
	    name[0] == '.' || name[0] == '-' || name[0] == '_')
		return moat_error_msg(
			err, EINVAL,
			"sandbox name '%s': 1 to 63 of a-z 0-9 _ . -, starting with a "
			"letter or digit",
			name);
	return 0;
}

void moat_sandbox_result_free(struct moat_sandbox_result *r)
{
	if (r == NULL)
		return;
	free(r->sandbox);
	strv_free(r->argv);
	free(r->message);
	free(r->isolation);
	free(r->accel);
	free(r->guest_kernel);
	strv_free(r->policy);
	free(r->out.data);
	free(r->err.data);
	for (size_t i = 0; i < r->n_files; i++) {
		free(r->files[i].path);
		free(r->files[i].target);
	}
	free(r->files);
	strv_free(r->allow);
	for (size_t i = 0; i < r->n_conns; i++) {
		free(r->conns[i].host);
		free(r->conns[i].address);
		free(r->conns[i].rule);
		free(r->conns[i].refused);
	}
	free(r->conns);
	free(r);
}

double sb_ms_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static int make_state_dir(struct moat_sandbox *s, moat_error *err)
{
	uid_t uid = getuid();
	_cleanup_free_ char *user_dir = xasprintf("%s/%u", MOAT_SANDBOX_ROOT, (unsigned)uid);

	if (mkdir_p(MOAT_SANDBOX_ROOT, 0711, err) < 0 || mkdir_p(s->runtime, 0700, err) < 0)
		return moat_error_ret(err);
	if (mkdir(user_dir, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "sandbox: mkdir %s", user_dir);
	if (chown(user_dir, uid, getgid()) < 0)
		return moat_error_set(err, errno, "sandbox: chown %s", user_dir);
	s->user_fd = open(user_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->user_fd < 0)
		return moat_error_set(err, errno, "sandbox: open %s", user_dir);
	if (sb_lock_take(s->user_fd, s->name, &s->lock_fd, err) < 0) {
		if (moat_error_ret(err) != -EBUSY)
			return moat_error_ret(err);
		moat_error_drop(err);
		return moat_error_msg(err, EEXIST, "sandbox '%s' already exists", s->name);
	}
	if (mkdir(s->dir, 0700) < 0) {
		if (errno == EEXIST)
			return moat_error_msg(err, EEXIST, "sandbox '%s' already exists", s->name);
		return moat_error_set(err, errno, "sandbox: mkdir %s", s->dir);
	}
	s->state_fd = open(s->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->state_fd < 0)
		return moat_error_set(err, errno, "sandbox: open %s", s->dir);
	return 0;
}

static int write_bundle(struct moat_sandbox *s, moat_error *err)
{
	_cleanup_(oci_config_freep) struct oci_config *cfg = NULL;
	_cleanup_free_ char *rootfs = xasprintf("%s/rootfs", s->dir), *json = NULL, *msg = NULL;
	_cleanup_close_ int fd = -1;
	size_t len;

	if (sb_config(&s->o, rootfs, &cfg, err) < 0)
		return moat_error_ret(err);
	if (oci_config_generate(cfg, true, &json, &len, &msg) < 0)
		return moat_error_msg(err, EINVAL, "sandbox config: %s", msg ? msg : "generate");
	if (mkdirat(s->state_fd, "bundle", 0700) < 0)
		return moat_error_set(err, errno, "sandbox: mkdir bundle");
	fd = openat(s->state_fd, "bundle", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "sandbox: open bundle");
	return write_file_atomic_at(fd, "config.json", json, len, 0600, err);
}

/* What is in force, as the container's state shows it. */
static void note_isolation(struct moat_sandbox *s)
{
	char *isolation = NULL, *accel = NULL;
	struct moat_report *rep = NULL;
	moat_error e = MOAT_ERROR_INIT;
	size_t n = 0;

	if (moat_container_report(s->runtime, s->id, &rep, &e) < 0) {
		moat_error_clear(&e);
		return;
	}
	for (size_t i = 0; rep->annotations != NULL && i < rep->annotations->len; i++) {
		const char *k = rep->annotations->keys[i], *v = rep->annotations->values[i];

		if (strcmp(k, "moat.isolation") == 0 && isolation == NULL)
			isolation = xstrdup(v);
		else if (strcmp(k, "moat.vm.accel") == 0 && accel == NULL)
			accel = xstrdup(v);
		else if (strncmp(k, "moat.policy.", 12) == 0) {
			strv_push(&s->policy, &n, k + 12);
			strv_push(&s->policy, &n, v);
		}
	}
	moat_report_free(rep);
	if (isolation != NULL) {
		free((char *)s->info.isolation);
		s->info.isolation = isolation;
	}
	if (strcmp(s->info.isolation, "microvm") == 0)
		s->info.accel = accel;
	else
		free(accel); /* the config's annotation, of no use to a container */
}

static int setup(struct moat_sandbox *s, moat_error *err)
{
	struct moat_create_opts co = { .root = s->runtime,
				       .id = s->id,
				       .policy = s->o.policy,
				       .egress_tunnel = sb_egress_on(&s->o),
				       /* the keeper holds the sandbox: nothing outlives it */
				       .die_with_parent = true };
	_cleanup_free_ char *rootfs = xasprintf("%s/rootfs", s->dir);
	_cleanup_free_ char *bundle = xasprintf("%s/bundle", s->dir);

	/* the mounts below are the keeper's alone, and end with it; first, as an fd opened in
	 * the namespace before is no place to mount on */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return moat_error_set(err, errno, "sandbox: a mount namespace for the keeper");
	if (make_state_dir(s, err) < 0)
		return moat_error_ret(err);
	if (sb_layer_make(&s->o, s->dir, s->state_fd, &s->layer, err) < 0 ||
	    sb_copy_in(&s->o, &s->layer, err) < 0 || sb_layer_mount(&s->o, &s->layer, err) < 0 ||
	    write_bundle(s, err) < 0)
		return moat_error_ret(err);
	s->root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->root_fd < 0)
		return moat_error_set(err, errno, "sandbox: open %s", rootfs);
	co.bundle = bundle;
	/* the container's stderr, which the keeper's is: nothing of the workload's goes there
	 * (commands have their own), only the init's word when it fails, which a microVM's
	 * supervisor gives (QEMU's exit, a guest that did not answer) */
	s->init_log = openat(s->state_fd, "init.log",
			     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->init_log < 0 || dup2(s->init_log, 2) < 0)
		return moat_error_set(err, errno, "sandbox: %s/init.log", s->dir);
	if (moat_container_create(&co, &s->init, NULL, err) < 0)
		return moat_error_ret(err);
	s->created = true;
	s->info.init = s->init;
	note_isolation(s);
	if (sb_egress_start(s, err) < 0)
		return moat_error_ret(err);
	if (moat_container_start(s->runtime, s->id, err) < 0)
		return moat_error_ret(err);
	/* after create, which made the mount points of /proc, /dev and /sys in the layer */
	return sb_baseline_take(&s->layer, &s->baseline, err);
}

void moat_sandbox_destroy(struct moat_sandbox *s)
{
	moat_error e = MOAT_ERROR_INIT;

	if (s == NULL)
		return;
	sb_egress_stop(s);
	if (s->created) {
		moat_container_kill(s->runtime, s->id, SIGKILL, true, &e);
		moat_error_clear(&e);
		while (s->init > 0 && waitpid(s->init, NULL, 0) < 0 && errno == EINTR)
			;
		moat_container_delete(s->runtime, s->id, true, &e);
		moat_error_clear(&e);
	}
	if (s->root_fd >= 0)
		close(s->root_fd);
	if (s->init_log >= 0)
		close(s->init_log);
	sb_layer_release(&s->layer);
	sb_baseline_free(s->baseline);
	if (s->state_fd >= 0) {
		close(s->state_fd);
		remove_tree_at(s->user_fd, s->name, &e);
		moat_error_clear(&e);
	}
	if (s->user_fd >= 0) {
		sb_lock_release(s->user_fd, s->name, s->lock_fd);
		close(s->user_fd);
	}
	free((char *)s->info.isolation);
	free((char *)s->info.accel);
	strv_free(s->policy);
	free(s->name);
	free(s->dir);
	free(s->runtime);
	free(s->id);
	free(s);
}

void sb_result_fail(struct moat_sandbox_result *r, moat_error *e)
{
	r->reason = MOAT_SANDBOX_ERROR;
	if (r->message == NULL)
		r->message = xstrdup(e->msg ? e->msg : "sandbox: failed");
	moat_error_drop(e);
}

static char *random_name(void)
{
	unsigned char b[6] = { 0 };

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		memset(b, 0, sizeof(b));
	return xasprintf("run-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
}

/* A sandbox for o, not made yet. */
static struct moat_sandbox *sandbox_new(const struct moat_sandbox_opts *o)
{
	struct moat_sandbox *s = xcalloc(1, sizeof(*s));

	*s = (struct moat_sandbox){ .o = *o,
				    .state_fd = -1,
				    .user_fd = -1,
				    .lock_fd = -1,
				    .root_fd = -1,
				    .init_log = -1,
				    .egress_log = -1,
				    .egress_listen = -1,
				    .layer = { .upper_fd = -1, .base_fd = -1 } };
	s->name = o->name ? xstrdup(o->name) : random_name();
	s->dir = xasprintf("%s/%u/%s", MOAT_SANDBOX_ROOT, (unsigned)getuid(), s->name);
	s->runtime = xasprintf("%s/.runtime", MOAT_SANDBOX_ROOT);
	s->id = xasprintf("%u-%s", (unsigned)getuid(), s->name);
	s->info.name = s->name;
	s->info.isolation = xstrdup(o->isolation ? o->isolation : "container");
	clock_gettime(CLOCK_REALTIME, &s->info.created);
	return s;
}

int moat_sandbox_make(const struct moat_sandbox_opts *o, struct moat_sandbox **ret, moat_error *err)
{
	struct moat_sandbox *s;

	if (o->name != NULL && moat_sandbox_check_name(o->name, err) < 0)
		return moat_error_ret(err);
	s = sandbox_new(o);
	if (setup(s, err) < 0) {
		moat_sandbox_destroy(s);
		return moat_error_ret(err);
	}
	*ret = s;
	return 0;
}

const struct moat_sandbox_info *moat_sandbox_info(const struct moat_sandbox *s)
{
	return &s->info;
}

struct sb_target sb_target_of(const struct moat_sandbox *s)
{
	bool vm = strcmp(s->info.isolation, "microvm") == 0;

	return (struct sb_target){ .root = s->runtime,
				   .id = s->id,
				   .policy = s->o.policy,
				   .spare = vm ? 0 : s->init,
				   .init_log = s->init_log,
				   .microvm = vm };
}

struct moat_sandbox_result *sb_result_new(const struct moat_sandbox *s, char *const *argv)
{
	struct moat_sandbox_result *r = xcalloc(1, sizeof(*r));
	size_t n = 0;

	r->sandbox = xstrdup(s->name);
	while (argv != NULL && argv[n] != NULL)
		n++;
	r->argv = strv_copy((const char *const *)argv, n);
	r->code = -1;
	r->usage = (struct moat_sandbox_usage){ -1, -1, -1, -1 };
	r->created = s->info.created;
	r->isolation = xstrdup(s->info.isolation);
	r->accel = s->info.accel ? xstrdup(s->info.accel) : NULL;
	n = 0;
	while (s->policy != NULL && s->policy[n] != NULL)
		n++;
	r->policy = s->policy ? strv_copy((const char *const *)s->policy, n) : NULL;
	return r;
}

/* A run whose sandbox could not be made (s, destroyed after): reason error, and the
 * isolation as far as it was known. */
static struct moat_sandbox_result *failed_run(struct moat_sandbox *s, char *const *argv,
					      moat_error *err)
{
	struct moat_sandbox_result *r;

	/* a microVM's accelerator, for a failure before the container said which: the one
	 * asked for, else the built-in policy's (a policy file this early was not read) */
	if (strcmp(s->info.isolation, "microvm") == 0 && s->info.accel == NULL)
		s->info.accel = xstrdup(s->o.accel ? s->o.accel : "kvm");
	r = sb_result_new(s, argv);
	r->reason = MOAT_SANDBOX_ERROR;
	r->message = xstrdup(err->msg ? err->msg : "sandbox: failed");
	moat_error_drop(err);
	clock_gettime(CLOCK_REALTIME, &r->ended);
	r->setup_ms = sb_ms_between(&s->info.created, &r->ended);
	moat_sandbox_destroy(s);
	return r;
}

int moat_sandbox_run(const struct moat_sandbox_opts *o, int abort_fd,
		     struct moat_sandbox_result **ret, moat_error *err)
{
	struct moat_sandbox_opts named = *o;
	_cleanup_free_ char *name = NULL;
	struct moat_sandbox_result *r = NULL;
	struct moat_sandbox *s = NULL;
	struct timespec t0, ready, gone;
	double setup_ms;

	if (o->argv == NULL || o->argv[0] == NULL)
		return moat_error_msg(err, EINVAL, "sandbox: no program to run (after --)");
	if (o->name != NULL && moat_sandbox_check_name(o->name, err) < 0)
		return moat_error_ret(err);
	if (o->name == NULL)
		named.name = name = random_name();
	o = &named;
	s = sandbox_new(o);
	t0 = s->info.created;
	if (setup(s, err) < 0) {
		*ret = failed_run(s, o->argv, err);
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &ready);
	setup_ms = sb_ms_between(&t0, &ready);
	if (moat_sandbox_exec(s, o, abort_fd, &r, err) < 0) {
		moat_sandbox_destroy(s);
		return moat_error_ret(err);
	}
	if (r->reason != MOAT_SANDBOX_ERROR && sb_copy_out(o, s->root_fd, err) < 0)
		sb_result_fail(r, err);
	moat_sandbox_destroy(s);
	clock_gettime(CLOCK_REALTIME, &gone);
	r->created = t0;
	r->setup_ms += setup_ms;
	r->teardown_ms = sb_ms_between(&r->ended, &gone);
	*ret = r;
	return 0;
}
