/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the parts of a sandbox hand each other (sandbox/ only).
 *
 * A sandbox's state directory <root>/<uid>/<name>/ holds:
 *   layer/          a tmpfs of the disk size: upper/ and work/ of the overlay, and init/,
 *                   the sandbox's own read-only layer (/.moat/init, the idle init)
 *   rootfs/         the overlay: init/ and the base below, upper/ on top
 *   bundle/         config.json of the sandbox's container (root.path is rootfs/)
 *   egress.log      the egress proxy's log, with --allow (sandbox-egress.c)
 *   sock            a session's keeper's socket (src/sandbox-keeper.c)
 * The mounts are made in the keeper's mount namespace, so they end with it. */
#ifndef MOAT_SANDBOX_INTERNAL_H
#define MOAT_SANDBOX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"
#include "sandbox.h"

/* the idle init's path inside the sandbox */
#define SB_INIT_PATH "/.moat/init"

/* ---- sandbox-collect.c: who holds a sandbox ---- */

/* Take <user_fd>/.<name>.lock, the keeper's hold on the sandbox, for good (*ret_fd). */
int sb_lock_take(int user_fd, const char *name, int *ret_fd, moat_error *err);
/* Give it up, once the state directory is gone. */
void sb_lock_release(int user_fd, const char *name, int fd);

/* ---- sandbox-layer.c: the writable layer and the overlay ---- */

struct sb_layer {
	const char *dir; /* the sandbox's state directory, by path */
	int state_fd;    /* the sandbox's state directory */
	int upper_fd;    /* layer/upper */
	int base_fd;     /* the base, O_PATH */
	bool layer_mounted, rootfs_mounted;
};

/* Mount the tmpfs of o->disk bytes, make upper/, work/, init/ (with the idle init) and the
 * workdir (owned by the sandbox's user), open the base. */
int sb_layer_make(const struct moat_sandbox_opts *o, const char *dir, int state_fd,
		  struct sb_layer *l, moat_error *err);
/* The overlay at rootfs/. */
int sb_layer_mount(const struct moat_sandbox_opts *o, struct sb_layer *l, moat_error *err);
/* Whether the writable layer is full (no block or no inode left). */
bool sb_layer_full(const struct sb_layer *l);
/* Unmount what was mounted and close the fds (the directories stay for the caller). */
void sb_layer_release(struct sb_layer *l);

/* ---- sandbox-files.c: files between the host and the sandbox ---- */

/* Copy each host path (a file or a directory tree, symlinks inside copied as symlinks) into
 * the upper layer, owned by uid:gid, before the sandbox starts. */
int sb_copy_in(const struct moat_sandbox_opts *o, const struct sb_layer *l, moat_error *err);
/* Copy each sandbox path out of the merged root (rootfd): regular files and directories
 * only, symlinks never followed (skipped, with a warning), each file and the whole at most
 * MOAT_SANDBOX_COPY_OUT_MAX bytes. */
int sb_copy_out(const struct moat_sandbox_opts *o, int rootfd, moat_error *err);
/* The sandbox path of a copy: absolute as given, else under the workdir. */
char *sb_sandbox_path(const struct moat_sandbox_opts *o, const char *path);

/* One copy of a session's (`moat sandbox cp`): the sandbox's options (owner, workdir,
 * disk), and the flag and argument its messages name. */
struct sb_copy {
	const struct moat_sandbox_opts *o;
	const char *flag;
	const char *arg;
};
/* Copy the open host file or directory src_fd (named src_name on the host) to path in the
 * sandbox's root root_fd, owned by the sandbox's user; into path/src_name when path is an
 * existing directory, as cp does. */
int sb_copy_in_fd(const struct sb_copy *c, int root_fd, int src_fd, const char *src_name,
		  const char *path, moat_error *err);
/* Copy path out of the sandbox's root, as sb_copy_out does, to dst_name in dst_dir. */
int sb_copy_out_fd(const struct sb_copy *c, int root_fd, const char *path, int dst_dir,
		   const char *dst_name, moat_error *err);

/* ---- sandbox-diff.c: what the command changed ---- */

struct sb_baseline;
/* What the upper layer holds before the command runs (the workdir, the files copied in). */
int sb_baseline_take(const struct sb_layer *l, struct sb_baseline **ret, moat_error *err);
void sb_baseline_free(struct sb_baseline *b);
MOAT_DEFINE_CLEANUP(struct sb_baseline, sb_baseline_free)
/* Every path added, modified or deleted in the upper layer since the baseline, sorted. */
int sb_diff(const struct sb_layer *l, const struct sb_baseline *b, struct moat_sandbox_result *r,
	    moat_error *err);

/* ---- sandbox-config.c: the sandbox's container ---- */

/* The container's config: moat's hardened default with the sandbox's root, limits and idle
 * init. */
int sb_config(const struct moat_sandbox_opts *o, const char *rootfs, struct oci_config **ret,
	      moat_error *err);
/* The process of a command. */
int sb_command_process(const struct moat_sandbox_opts *o, struct oci_process **ret,
		       moat_error *err);

/* ---- sandbox-command.c: one command, run, watched and collected ---- */

struct sb_target {
	const char *root; /* the containers' state root */
	const char *id;
	const char *policy;
	pid_t spare;  /* a session's init: a kill spares it (0: kill the whole sandbox) */
	int init_log; /* the init's stderr, where a microVM's supervisor says why it ended; -1 */
	bool microvm; /* its counters come from the guest (moat_container_guest_usage) */
	bool fresh;   /* ... whose guest boots for this command: it has counted nothing yet */
};

/* Kill every process of the sandbox but t->spare (frozen meanwhile, so none forks past
 * the kill), or all of them when there is none to spare. */
void sb_kill(const struct sb_target *t);

/* Run process in the sandbox's container with o's timeout and output limit, and fill r's
 * exit (code, signal and reason: timeout, output-limit, oom, pids, disk from the cgroup's
 * counters and the layer l, else exited or signaled), time.started and .ended, resources,
 * stdout and stderr. A kill goes to every process of the container. A hang-up on abort_fd
 * kills the command and returns -ECANCELED. o->lifetime_left_ms bounds the command as the
 * timeout does, with reason lifetime. */
int sb_command_run(const struct sb_target *t, const struct moat_sandbox_opts *o,
		   const struct oci_process *process, const struct sb_layer *l, int abort_fd,
		   struct moat_sandbox_result *r, moat_error *err);

/* ---- sandbox.c: one sandbox, made and destroyed ---- */

struct moat_sandbox {
	struct moat_sandbox_opts o; /* the caller's, whose strings outlive the sandbox */
	struct moat_sandbox_info info;
	char *name, *dir, *runtime, *id;
	char **policy; /* the policy's changes, pairs (rule, what), as the result has them */
	int state_fd, user_fd, lock_fd, root_fd;
	int init_log; /* init.log in the state directory: the container's stderr (sb_target) */
	struct sb_layer layer;
	bool created;
	pid_t init;
	struct sb_baseline *baseline; /* the upper layer once made: what diff compares with */
	pid_t proxy;                  /* the egress proxy (sandbox-egress.c), 0: none */
	int egress_log;               /* its log, <state>/egress.log */
	int egress_listen;            /* its socket, in the container's network namespace */
};

/* ---- sandbox-egress.c: the way out, when the sandbox has rules ---- */

bool sb_egress_on(const struct moat_sandbox_opts *o);
/* Start the proxy on 127.0.0.1:3128 inside the made (not started) container. */
int sb_egress_start(struct moat_sandbox *s, moat_error *err);
void sb_egress_stop(struct moat_sandbox *s);
/* The proxy variables a command gets (NULL-terminated, allocated), or NULL. */
char **sb_egress_env(const struct moat_sandbox_opts *o);
/* Where the log ends now; after a command, the lines from there into r. */
off_t sb_egress_mark(const struct moat_sandbox *s);
void sb_egress_collect(const struct moat_sandbox *s, off_t from, struct moat_sandbox_result *r);

/* Milliseconds from a to b. */
double sb_ms_between(const struct timespec *a, const struct timespec *b);
/* The sandbox's container, for sb_command_run. */
struct sb_target sb_target_of(const struct moat_sandbox *s);
/* A result for a command of s, its sandbox and isolation filled in. */
struct moat_sandbox_result *sb_result_new(const struct moat_sandbox *s, char *const *argv);
/* The result's reason becomes error, with e's message unless it has one; e is dropped. */
void sb_result_fail(struct moat_sandbox_result *r, moat_error *e);

#endif
