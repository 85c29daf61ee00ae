/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: where a container's state lives and what status it is in.
 *
 * Each container owns <root>/<id>/ (mode 0700) holding state.json (this
 * struct, written atomically), config.json (the effective config, after
 * policy), and exec.fifo while the container is created but not started.
 * Every operation takes an exclusive flock on the directory. */
#ifndef MOAT_STATE_H
#define MOAT_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "ocijson.h"
#include "utils.h"

/* An ID names the container's state directory: a file name, so NAME_MAX (255) bytes. */
#define MOAT_ID_MAX 255
#define MOAT_STATE_FILE "state.json"
#define MOAT_CONFIG_FILE "config.json"
#define MOAT_EXEC_FIFO "exec.fifo"
#define MOAT_CGROUP_MANAGER_SYSTEMD "systemd"
/* In the state root: where a state directory is made before it is renamed to its ID. */
#define MOAT_STATE_NEW_DIR ".new"

struct moat_state {
	char *oci_version;
	char *id;
	int64_t pid;        /* host pid of the container init */
	uint64_t pid_start; /* its start time (/proc/<pid>/stat field 22): defeats PID reuse */
	char *bundle;
	char *rootfs;
	char *created;                         /* RFC 3339, UTC */
	uint32_t owner;                        /* uid that created the container */
	char *cgroup_path;                     /* as resolved from linux.cgroupsPath */
	char *cgroup_manager; /* MOAT_CGROUP_MANAGER_SYSTEMD: the cgroup is a scope of systemd's
			       * (cgroup-systemd.h); absent: moat's own */
	struct oci_string_map *cgroup_applied; /* what was written for linux.resources, by field
						* (moat_cgroup_applied), kept up to date by update */
	struct oci_string_map *cgroup_ignored; /* what of linux.resources this host has no limit
						* for, by field -> why (moat_cgroup_ignored) */
	char *isolation;                       /* "container" or "microvm" */
	uint32_t vm_memory_mib; /* a microVM's guest memory as booted (absent in the state
				    * of a microVM that a moat before this field created) */
	bool vm_memory_mib_present;
	char *vm_pod; /* a member of a microVM's pod (pod.h): the sandbox's id */
	struct oci_string_map *annotations;
	struct oci_string_map *policy; /* rule -> what the policy changed in the config */
	bool late_hooks; /* the saved config has poststart or poststop hooks: start and delete
			  * read it only then (absent in the state of an older moat: read) */
	bool late_hooks_present;
};

extern const struct ocijson_type moat_state_type;

enum moat_status {
	MOAT_STATUS_CREATING,
	MOAT_STATUS_CREATED,
	MOAT_STATUS_RUNNING,
	MOAT_STATUS_PAUSED,
	MOAT_STATUS_STOPPED,
};

const char *moat_status_name(enum moat_status s);

/* Reject empty, ".", "..", "/", control characters and more than MOAT_ID_MAX bytes. */
int moat_validate_id(const char *id, moat_error *err);
/* The ID of a container about to be made: moat_validate_id, and no leading '.'. Names that
 * start with '.' belong to moat in the state root (MOAT_SECCOMP_CACHE_DIR), and `list`
 * passes them by. */
int moat_validate_new_id(const char *id, moat_error *err);

/* Make <root>/<id>/ for a new ID (moat_validate_new_id; an existing one is "already
 * exists") and lock it. */
int moat_state_dir_create(const char *root, const char *id, int *ret_dirfd, moat_error *err);
/* Remove what creates killed before their directory had its name left in root's
 * MOAT_STATE_NEW_DIR (moat_state_dir_create does it too, before it makes one). */
void moat_state_sweep(const char *root);
/* Open and lock an existing container's directory. */
int moat_state_dir_open(const char *root, const char *id, int *ret_dirfd, moat_error *err);
/* Remove <root>/<id>/ and everything in it. */
int moat_state_dir_remove(const char *root, const char *id, moat_error *err);

int moat_state_write(int dirfd, const struct moat_state *st, moat_error *err);
int moat_state_read(int dirfd, struct moat_state **ret, moat_error *err);
void moat_state_free(struct moat_state *st);
MOAT_DEFINE_CLEANUP(struct moat_state, moat_state_free)

/* The annotation moat state shows for cgroup_ignored: "field: why; field: why". */
#define MOAT_CGROUP_IGNORED_ANNOTATION "moat.cgroup.ignored"
/* Its value for ignored (a cgroup_ignored map), NULL when nothing was ignored. */
char *moat_state_cgroup_ignored_note(const struct oci_string_map *ignored);

/* The effective config saved at create (config.json in the directory). */
struct oci_config;
int moat_state_read_config(int dirfd, struct oci_config **ret, moat_error *err);

/* Start time of pid, 0 if it does not exist or is a zombie. */
uint64_t moat_pid_start_time(pid_t pid);
/* True if pid is alive and is the process the state recorded. */
bool moat_state_pid_alive(const struct moat_state *st);
/* Status from the recorded pid and the files in the directory. */
enum moat_status moat_state_status(int dirfd, const struct moat_state *st);

#endif
