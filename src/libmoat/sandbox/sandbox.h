/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: sandboxes, `moat sandbox`: run a program nobody reviewed under a contract moat
 * enforces, and hand back what happened as data.
 *
 * A sandbox is an ordinary moat container, in either isolation mode, made from a read-only
 * base (--rootfs) under an overlay whose upper layer lives on a tmpfs of the sandbox's disk
 * size. Its container's process is moat's idle init (sandbox-init.c), and every command is
 * an exec into it, so a session and a one-shot run are the same thing.
 *
 * moat_sandbox_run() is one task from start to end: it makes the sandbox, copies files in,
 * runs the command with its limits, collects the output (capped), the exit reason, the
 * resources used and the files the command changed, copies files out and destroys
 * everything. It runs in the calling process, which it moves into a mount namespace of its
 * own (the sandbox's mounts vanish with it), so call it in a process made for it: the keeper
 * of `moat sandbox run`. The keeper is the parent of the sandbox's init, which dies with it
 * (PR_SET_PDEATHSIG), so killing the keeper at any point leaves no process; abort_fd is the
 * keeper's link to its caller: when it hangs up, the command is killed and the sandbox
 * destroyed at once.
 *
 * The result is data (struct moat_sandbox_result); the command layer prints it as JSON, the
 * schema docs/sandbox-result.schema.json describes ("moat.sandbox.result/v1"). */
#ifndef MOAT_SANDBOX_H
#define MOAT_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "egress.h"
#include "error.h"
#include "oci-config.h"
#include "utils.h"

/* Where sandboxes live: MOAT_SANDBOX_ROOT/<uid>/<name>/ (mode 0700, owned by the uid), and
 * their containers under MOAT_SANDBOX_ROOT/.runtime, as container "<uid>-<name>". */
#define MOAT_SANDBOX_ROOT "/run/moat-sandbox"
/* --image: where images are unpacked (image.h), shared by the sandboxes of every run */
#define MOAT_SANDBOX_IMAGE_CACHE "/var/cache/moat/images"

/* The defaults of the contract, also printed by --help. */
#define MOAT_SANDBOX_TIMEOUT_MS (60 * 1000)
#define MOAT_SANDBOX_LIFETIME_MS (10 * 60 * 1000)
#define MOAT_SANDBOX_IDLE_MS (2 * 60 * 1000)
#define MOAT_SANDBOX_PIDS 256
#define MOAT_SANDBOX_DISK (256ull << 20)
#define MOAT_SANDBOX_MEMORY (512ull << 20)
#define MOAT_SANDBOX_OUTPUT_LIMIT (1ull << 20)
#define MOAT_SANDBOX_UID 1000
#define MOAT_SANDBOX_WORKDIR "/work"
/* copy-out: the largest file, and all of them together */
#define MOAT_SANDBOX_COPY_OUT_MAX (64ull << 20)
/* files: entries listed, and the largest file given a sha256 */
#define MOAT_SANDBOX_FILES_MAX 1000
#define MOAT_SANDBOX_SHA256_MAX (16ull << 20)

/* A copy between the host and the sandbox: --copy-in HOST:PATH, --copy-out PATH:HOST. The
 * sandbox's path is absolute, or relative to the workdir. */
struct moat_sandbox_copy {
	const char *host;
	const char *path;
};

struct moat_sandbox_opts {
	const char *name;      /* NULL: "run-" and random hex */
	const char *rootfs;    /* the read-only base */
	const char *isolation; /* "container", "microvm", or NULL for the policy's default */
	const char *accel;     /* a microVM's accelerator: "kvm", "tcg", or NULL (the policy's) */
	const char *policy;    /* --policy, or NULL */
	uint64_t timeout_ms;   /* wall clock of the command (0: none) */
	uint64_t memory;       /* bytes */
	uint64_t pids;
	uint64_t disk; /* bytes of the writable layer */
	double cpus;   /* 0: no quota */
	uint64_t output_limit;
	bool truncate_output; /* --on-output-limit truncate: keep running, drop the rest */
	uid_t uid;            /* the user inside the sandbox */
	gid_t gid;
	const char *workdir;
	char *const *env; /* K=V, NULL-terminated; nothing else reaches the program but PATH */
	const struct moat_sandbox_copy *copy_in;
	size_t n_copy_in;
	const struct moat_sandbox_copy *copy_out;
	size_t n_copy_out;
	char *const *argv;                       /* NULL-terminated; never through a shell */
	const struct moat_egress_policy *egress; /* --allow, --resolve: NULL or no rule: none */
	/* a session's command (moat_sandbox_exec): */
	bool session;              /* a timeout kills the command's processes, not the sandbox */
	bool first_command;        /* none ran before it: a microVM's guest boots for it */
	uint64_t lifetime_left_ms; /* what is left of the lifetime (0: no bound) */
};

/* What a sandbox is, once made. */
struct moat_sandbox_info {
	const char *name;
	const char *isolation; /* "container" or "microvm": what is in force */
	const char *accel;     /* a microVM's accelerator, else NULL */
	struct timespec created;
	pid_t init; /* the sandbox's init (a child of the caller): the sandbox ends with it */
};

enum moat_sandbox_reason {
	MOAT_SANDBOX_EXITED,
	MOAT_SANDBOX_SIGNALED,
	MOAT_SANDBOX_TIMEOUT,
	MOAT_SANDBOX_OOM,
	MOAT_SANDBOX_PIDS_LIMIT,
	MOAT_SANDBOX_DISK_FULL,
	MOAT_SANDBOX_OUTPUT_LIMIT_HIT,
	MOAT_SANDBOX_LIFETIME,
	MOAT_SANDBOX_ERROR,
};
/* "exited", "signaled", "timeout", "oom", "pids", "disk", "output-limit", "lifetime", "error" */
const char *moat_sandbox_reason_name(enum moat_sandbox_reason r);

/* What one stream produced: bytes in all, and the first `kept` of them in data. */
struct moat_sandbox_stream {
	uint64_t bytes;
	bool truncated;
	char *data;
	size_t kept;
};

enum moat_sandbox_change { MOAT_FILE_ADDED, MOAT_FILE_MODIFIED, MOAT_FILE_DELETED };

struct moat_sandbox_file {
	char *path; /* absolute, inside the sandbox */
	enum moat_sandbox_change change;
	char type; /* 'f' file, 'd' directory, 'l' symlink, 'o' other */
	uint64_t size;
	mode_t mode;     /* permission bits (and setuid...), not for a deletion */
	char sha256[65]; /* "" when not computed (not a file, or above the bound) */
	char *target;    /* a symlink's */
};

/* A figure the host could not give is -1. */
struct moat_sandbox_usage {
	int64_t cpu_user_us, cpu_system_us;
	int64_t memory_peak, pids_peak;
};

/* One attempt to leave the sandbox, through its egress proxy. */
struct moat_sandbox_connection {
	char *host, *address, *rule, *refused; /* address, rule, refused: NULL when none */
	unsigned port;
	bool allowed;
	uint64_t bytes_out, bytes_in, duration_ms;
};

struct moat_sandbox_result {
	char *sandbox;
	char **argv;
	enum moat_sandbox_reason reason;
	int code;      /* -1: none (signaled, or not started) */
	int signo;     /* 0: none */
	char *message; /* reason error: the one line */
	char *isolation, *accel, *guest_kernel;
	char **policy;                           /* pairs: rule, what it changed; NULL-terminated */
	struct timespec created, started, ended; /* started: 0 when the command never ran */
	double setup_ms, run_ms, teardown_ms;
	struct moat_sandbox_usage usage;
	struct moat_sandbox_stream out, err;
	struct moat_sandbox_file *files;
	size_t n_files;
	bool files_truncated;
	char **allow; /* the egress rules, NULL-terminated; NULL: no network at all */
	struct moat_sandbox_connection *conns;
	size_t n_conns, refused;
};

void moat_sandbox_result_free(struct moat_sandbox_result *r);
MOAT_DEFINE_CLEANUP(struct moat_sandbox_result, moat_sandbox_result_free)

/* A sandbox name: 1 to 63 of [a-z0-9_.-], starting with a letter or digit. */
int moat_sandbox_check_name(const char *name, moat_error *err);

/* Remove what the calling uid's sandboxes whose keeper is gone left behind (state, their
 * containers' state, cgroups and loans; see sandbox-collect.c). Every command calls it. */
void moat_sandbox_collect(void);

/* A sandbox that lives across several commands, a session's (`moat sandbox create`). Each
 * call runs in the calling process, as moat_sandbox_run does: the keeper's. */
struct moat_sandbox;

/* Make the sandbox o describes (o->argv unused; o's strings must outlive it), copies in
 * made, its init running. On failure nothing is left. */
int moat_sandbox_make(const struct moat_sandbox_opts *o, struct moat_sandbox **ret,
		      moat_error *err);
const struct moat_sandbox_info *moat_sandbox_info(const struct moat_sandbox *s);
/* Run one command, cmd (the sandbox's options with the command's own: argv, timeout,
 * output limit, user, workdir, env; session, lifetime_left_ms), as moat_sandbox_run does;
 * files are what this command changed. Safe to call in a child of the keeper. */
int moat_sandbox_exec(struct moat_sandbox *s, const struct moat_sandbox_opts *cmd, int abort_fd,
		      struct moat_sandbox_result **ret, moat_error *err);
/* A session's keeper, before each command: an egress proxy that died is started again on
 * the same socket (what connected meanwhile waited in its backlog). */
void moat_sandbox_keep_egress(struct moat_sandbox *s);
/* Kill what runs in the sandbox but its init (container mode); a microVM is torn down. */
void moat_sandbox_stop(struct moat_sandbox *s);
/* Copy the open host file or directory src_fd, named src_name, to path in the sandbox
 * (into path/src_name when path is a directory there). */
int moat_sandbox_copy_in(struct moat_sandbox *s, int src_fd, const char *src_name, const char *path,
			 moat_error *err);
/* Copy path out of the sandbox to dst_name in the host directory dst_dir: regular files
 * and directories only, symlinks never followed, sizes bounded. */
int moat_sandbox_copy_out(struct moat_sandbox *s, const char *path, int dst_dir,
			  const char *dst_name, moat_error *err);
/* Every change in the writable layer since the sandbox was made (the result's files). */
int moat_sandbox_diff(struct moat_sandbox *s, struct moat_sandbox_result **ret, moat_error *err);
/* Kill everything, remove everything; s is freed. */
void moat_sandbox_destroy(struct moat_sandbox *s);

/* One task, as described above. The result is always filled (a failure is reason "error"
 * with its message) unless the options themselves are refused (a negative return, err). */
int moat_sandbox_run(const struct moat_sandbox_opts *o, int abort_fd,
		     struct moat_sandbox_result **ret, moat_error *err);

#endif
