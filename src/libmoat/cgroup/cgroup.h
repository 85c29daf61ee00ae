/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container's cgroup, on cgroup v1, v2 and hybrid hosts, through one interface.
 *
 * A struct moat_cgroup is the container's cgroup in every hierarchy of the host's layout: each
 * mounted v1 hierarchy (named ones such as name=systemd included) and, on hybrid hosts, the
 * unified one next to them. Resources from linux.resources go to the v1 file when a v1
 * hierarchy holds the controller and to the v2 file otherwise; the table in cgroup-resources.c says which
 * file each OCI field becomes. Nothing requested is dropped silently: a field this host cannot
 * honour is an error that names the field, except memory.kernel and kernelTCP (NOT
 * RECOMMENDED in the runtime spec, ignored by runc and crun), which are a warning and a note
 * (moat_cgroup_ignored) where the kernel has no such limit.
 *
 * Device rules (linux.resources.devices) are written to the v1 devices controller. Where there
 * is none (pure v2, or hybrid without it) they become a BPF_PROG_TYPE_CGROUP_DEVICE program
 * attached to the cgroup in the unified hierarchy (cgroup-v2-devices.h says what it decides).
 */
#ifndef MOAT_CGROUP_H
#define MOAT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"
#include "utils.h"

enum moat_cgroup_layout {
	MOAT_CGROUP_V1,     /* v1 hierarchies only */
	MOAT_CGROUP_V2,     /* cgroup2 mounted at the fs root */
	MOAT_CGROUP_HYBRID, /* v1 hierarchies plus a cgroup2 one (usually <root>/unified) */
};

struct moat_cgroup;

/* Where cgroupfs lives: "/sys/fs/cgroup" unless a test points it at a fake tree. NULL restores
 * the default. The string is copied. */
void moat_cgroup_set_fsroot(const char *fsroot);
/* The mount table detection reads: "/proc/self/mountinfo" unless a test gives a fake one.
 * Only cgroup and cgroup2 mounts at or below the fs root count. NULL restores the default. */
void moat_cgroup_set_mountinfo(const char *path);

int moat_cgroup_detect(enum moat_cgroup_layout *ret, moat_error *err);
const char *moat_cgroup_layout_name(enum moat_cgroup_layout layout);

/* The container's cgroup path from linux.cgroupsPath: NULL or "" -> "/moat/<id>"; relative ->
 * under "/moat"; absolute as is. With systemd, "slice:prefix:name" becomes the path systemd
 * would use ("system.slice:moat:abc" -> "/system.slice/moat-abc.scope", "a-b.slice:p:n" ->
 * "/a.slice/a-b.slice/p-n.scope"); NULL or "" -> "system.slice:moat:<id>". "." and ".."
 * components, control characters and the root cgroup itself are refused. Errors name
 * linux.cgroupsPath. */
int moat_cgroup_resolve_path(const char *cgroups_path, const char *id, bool systemd,
			     char **ret_path, moat_error *err);

/* Make the cgroup (every missing level) in every hierarchy and apply res (may be NULL). An
 * existing empty cgroup is reused; one that already holds processes is refused (EBUSY), since
 * destroy would kill them. On failure everything this call created is removed again.
 * On a v1 devices hierarchy, and on a pure v2 host, the cgroup denies every device, then
 * follows res->devices in order (res->devices NULL: none), then allows each device of
 * devices (linux.devices, n of them; may be NULL) rwm, less the accesses the last rule naming
 * that very device (its own type, major and minor) denies, then allows the runtime spec's
 * default devices (null, zero, full, random, urandom, tty, console, ptmx, pts). On a hybrid
 * host without a v1 devices hierarchy that happens only when res->devices is non-NULL.
 * memory.kernel and kernelTCP where the host has no such limit are not applied: each is
 * a warning in err and an entry of moat_cgroup_ignored(). */
int moat_cgroup_create(const char *path, const struct oci_resources *res,
		       struct oci_device *const *devices, size_t n, struct moat_cgroup **ret,
		       moat_error *err);
/* As create, for a cgroup someone else made with the container's init in it (systemd's scope,
 * cgroup-systemd.h): res and the devices applied to it; nothing is removed on failure. */
int moat_cgroup_adopt(const char *path, const struct oci_resources *res,
		      struct oci_device *const *devices, size_t n, struct moat_cgroup **ret,
		      moat_error *err);
/* The existing cgroup of a container. A hierarchy where it is missing is skipped, so an absent
 * cgroup opens fine (pids: none; destroy: nothing to do); moat_cgroup_exists() tells. */
int moat_cgroup_open(const char *path, struct moat_cgroup **ret, moat_error *err);
bool moat_cgroup_exists(const struct moat_cgroup *cg);
/* As moat_cgroup_open, in the one hierarchy moat_cgroup_is_frozen reads (the v1 freezer, else
 * the unified one) and no other: a status check on a v1 host opens one cgroup, not nine. Only
 * for moat_cgroup_is_frozen and moat_cgroup_free. */
int moat_cgroup_open_freezer(const char *path, struct moat_cgroup **ret, moat_error *err);

int moat_cgroup_add_pid(struct moat_cgroup *cg, pid_t pid, moat_error *err);
/* Join the cgroup of every v1 hierarchy with the calling thread (0 into its `tasks`), for
 * create's first child, before it makes or becomes the container's init, which then starts
 * in them. The kernel moves a thread that moves itself without write-locking
 * cgroup_threadgroup_rwsem, which costs an RCU grace period: writing a pid to cgroup.procs
 * kept the parent waiting 7-15 ms here. For a single-threaded process the thread is the
 * process. The v2 hierarchy's cgroup has no such path: moat_cgroup_add_pid_v2 adds the init
 * there.
 *
 * The child writes into the `tasks` files moat_cgroup_open_tasks opened in the parent, as the
 * host's root: the kernel checks the credentials of a v1 `tasks` file's opener, not the
 * writer's, so the child may already be in a user namespace of its own, which gives it no
 * right over the host's files. The parent closes its copies once the child is started
 * (moat_cgroup_close_tasks; moat_cgroup_free closes them too). */
int moat_cgroup_open_tasks(struct moat_cgroup *cg, moat_error *err);
void moat_cgroup_close_tasks(struct moat_cgroup *cg);
int moat_cgroup_join_v1(const struct moat_cgroup *cg, moat_error *err);
int moat_cgroup_add_pid_v2(struct moat_cgroup *cg, pid_t pid, moat_error *err);
/* The container's cgroup directory in the v2 hierarchy, for clone3's CLONE_INTO_CGROUP,
 * which starts a process there without that lock; -1 when it has none. */
int moat_cgroup_v2_fd(const struct moat_cgroup *cg);
/* Apply the fields present in res. Absent fields are left as they are; devices are reprogrammed
 * only when res->devices is non-NULL, with devices (linux.devices) allowed as create does.
 * A failure part way leaves the earlier writes in place. */
int moat_cgroup_update(struct moat_cgroup *cg, const struct oci_resources *res,
		       struct oci_device *const *devices, size_t n, moat_error *err);

/* Every process in the cgroup and its sub-cgroups, in any hierarchy: sorted, no duplicates. */
int moat_cgroup_pids(struct moat_cgroup *cg, pid_t **ret_pids, size_t *ret_n, moat_error *err);
/* Signal every process. SIGKILL goes through v2 cgroup.kill where there is one; otherwise (and
 * on hybrid hosts, after it) the cgroup is frozen, each process signalled, and thawed again
 * (a cgroup the user paused stays paused unless sig is SIGKILL). */
int moat_cgroup_kill_all(struct moat_cgroup *cg, int sig, moat_error *err);
/* v1 freezer.state where the freezer hierarchy exists, else v2 cgroup.freeze; waits (about 5 s
 * at most) until the kernel reports the new state, and on timeout thaws and fails. */
int moat_cgroup_freeze(struct moat_cgroup *cg, bool frozen, moat_error *err);
int moat_cgroup_is_frozen(struct moat_cgroup *cg, bool *ret, moat_error *err);
/* SIGKILL what remains, wait (about 5 s at most) until no process is left, and remove the
 * cgroup and its sub-cgroups in every hierarchy. Parent levels such as /moat are left, but
 * /moat's real-time budget goes down to what its remaining children hold (a failure there is
 * a warning in err). An absent cgroup is fine. */
int moat_cgroup_destroy(struct moat_cgroup *cg, moat_error *err);

/* The cgroup's path relative to each hierarchy root, as /proc/<pid>/cgroup shows it. */
const char *moat_cgroup_path(const struct moat_cgroup *cg);
enum moat_cgroup_layout moat_cgroup_layout(const struct moat_cgroup *cg);
/* What create and update wrote, for the state: OCI field ("linux.resources.memory.limit")
 * -> "<hierarchy dir>/<file>=<value>" as written (the last write of a field wins). NULL:
 * nothing written yet. */
const struct oci_string_map *moat_cgroup_applied(const struct moat_cgroup *cg);
/* What create and update did not apply because this host has no such limit: OCI field
 * ("linux.resources.memory.kernel") -> why ("the kernel has no kernel-memory limit ..."). NULL:
 * nothing. */
const struct oci_string_map *moat_cgroup_ignored(const struct moat_cgroup *cg);
void moat_cgroup_free(struct moat_cgroup *cg);
/* Close every fd cg holds (its directories, its tasks files) and free nothing: for create's
 * child, whose copy of moat's memory goes at its execve, and which would only fault in a
 * private copy of each page a free() writes to. cg stays usable for moat_cgroup_free. */
void moat_cgroup_close_fds(struct moat_cgroup *cg);
MOAT_DEFINE_CLEANUP(struct moat_cgroup, moat_cgroup_free)

#endif
