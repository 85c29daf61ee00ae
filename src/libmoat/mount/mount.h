/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: making mounts on file descriptors.
 *
 * The new mount API is the way: fsopen/fsconfig/fsmount for a new filesystem, open_tree
 * (OPEN_TREE_CLONE) for a bind, mount_setattr for attributes and propagation, move_mount
 * (MOVE_MOUNT_T_EMPTY_PATH) onto an O_PATH fd of the target. When the kernel lacks fsopen or
 * mount_setattr (before 5.12), or the environment has MOAT_TEST_FORCE_MOUNT_FALLBACK=1, the
 * same operations use mount(2) on "/proc/self/fd/N" of the target fd, then re-resolve the target
 * inside the root to reach the new mount for MS_REMOUNT and propagation changes. Bind sources
 * are then O_PATH fds of the host path instead of detached clones.
 */
#ifndef MOAT_MOUNT_H
#define MOAT_MOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "mount-options.h"
#include "oci-config.h"

/* Every tmpfs moat itself makes (moat spec's /dev, /dev/shm and /tmp, the masked directories,
 * the cgroup tmpfs, the guest's /dev, the VMM's jail) gets nr_inodes= beside size=: one inode
 * per MOAT_TMPFS_BYTES_PER_INODE (a page) of its size. Without it a tmpfs allows as many
 * inodes as half of RAM has pages, whatever its size, and an inode costs kernel memory that
 * size= does not count (about 1 KiB: a million empty files in /tmp charged 915 MiB). One per
 * page is the kernel's own ratio for a tmpfs without options (size half of RAM, nr_inodes half
 * of RAM's pages), and as many files as size= lets hold data (each takes a page at least), so
 * only empty files, directories and symlinks beyond that are refused (ENOSPC), and inodes
 * cost at most about a quarter of size= again. */
#define MOAT_TMPFS_BYTES_PER_INODE 4096

/* A tmpfs of kib KiB with its inodes, as literal data options ("size=65536k",
 * "nr_inodes=16384"); MOAT_TMPFS_CHECK checks the pair at compile time. */
#define MOAT_TMPFS_STR_(x) #x
#define MOAT_TMPFS_STR(x) MOAT_TMPFS_STR_(x)
#define MOAT_TMPFS_SIZE_OPT(kib) "size=" MOAT_TMPFS_STR(kib) "k"
#define MOAT_TMPFS_INODES_OPT(inodes) "nr_inodes=" MOAT_TMPFS_STR(inodes)
#define MOAT_TMPFS_CHECK(kib, inodes)                                         \
	_Static_assert((inodes) == (kib)*1024LL / MOAT_TMPFS_BYTES_PER_INODE, \
		       "nr_inodes: one inode per MOAT_TMPFS_BYTES_PER_INODE of size=")

/* Whether the new mount API is in use (fsopen and mount_setattr exist, not forced off). */
bool moat_mount_new_api(void);

/* Something taken in phase 1 to be attached in phase 2. */
struct moat_mount_src {
	int fd;         /* detached clone (open_tree), or O_PATH fd without the new API; -1: none */
	bool is_clone;  /* fd is a detached mount: it can be attached once */
	bool recursive; /* the clone holds the submounts too (rbind) */
	mode_t fmt;     /* st_mode & S_IFMT of the source */
};
/* clang-format off */
#define MOAT_MOUNT_SRC_INIT { -1, false, false, 0 }
/* clang-format on */

/* Take path (dirfd-relative, following symlinks: a host path the config names) as a bind
 * source. */
int moat_mount_src_open(int dirfd, const char *path, bool recursive, struct moat_mount_src *ret,
			moat_error *err);
void moat_mount_src_close(struct moat_mount_src *src);

/* Where a mount goes: an O_PATH fd of the mount point, and the path that reached it inside
 * rootfd (the mount(2) fallback re-resolves it to reach the new mount on top). */
struct moat_mount_target {
	int fd;
	int rootfd;
	const char *path;
};

/* Attach src on target with o's attributes (attr_*, rec_attr_*) and propagation. A clone is
 * consumed (src->fd becomes -1). */
int moat_mount_bind(struct moat_mount_src *src, const struct moat_mount_target *t,
		    const struct moat_mount_opts *o, moat_error *err);

/* Mount a new instance of fstype from source with o (sb_flags, data, attributes) on target.
 * When ret_mfd is not NULL it receives an O_PATH fd of the new mount's root. */
int moat_mount_fs(const char *fstype, const char *source, const struct moat_mount_opts *o,
		  const struct moat_mount_target *t, int *ret_mfd, moat_error *err);

/* Set and clear MOUNT_ATTR_* on the mount whose root target->fd is, recursively or not. */
int moat_mount_setattr(const struct moat_mount_target *t, uint64_t set, uint64_t clr,
		       bool recursive, moat_error *err);

/* Change the propagation (MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE) of target's mount. */
int moat_mount_propagation(const struct moat_mount_target *t, unsigned long propagation,
			   bool recursive, moat_error *err);

/* Whether m is a bind mount (type "bind", or a bind/rbind option). */
bool moat_mount_is_bind(const struct oci_mount *m);

/* What phase 1 learned for the config's mounts. */
struct moat_mount_env {
	bool userns;                    /* running in a user namespace */
	struct moat_mount_src host_sys; /* clone of the host /sys (sysfs fallback); fd -1: none */
	uint32_t (*gid_map)[3];         /* /proc/self/gid_map lines: inside, outside, count */
	size_t gid_map_len;
	char **cgroup_v1;      /* v1 hierarchies ("cpu,cpuacct", "name=systemd") */
	char **cgroup_v1_path; /* the init's cgroup in each ("/moat/<id>") */
	char *cgroup_unified;  /* the init's cgroup in the v2 hierarchy (the "0::" line
					* of /proc/self/cgroup); NULL: none */
};

/* Phase 1: read the gid map and the cgroup layout (after the init entered its cgroup and its
 * cgroup namespace), clone the host /sys when a sysfs mount may need the fallback. */
int moat_mount_env_prepare(const struct oci_config *cfg, bool userns, struct moat_mount_env *ret,
			   moat_error *err);
void moat_mount_env_release(struct moat_mount_env *env);

/* Phase 1 for cfg->mounts[idx]: take the bind source (fd -1 when the mount is not a bind).
 * A source made on the host side comes in as host_fd, which this takes over: an idmapped
 * mount's (mount-idmap.h), or one opened with the host's credentials (mount-host.h); pass -1
 * for every other mount, whose source this opens itself. */
int moat_mount_entry_prepare(const struct oci_mount *m, size_t idx, int host_fd,
			     struct moat_mount_src *ret, moat_error *err);

/* Phase 2 for cfg->mounts[idx]: create the destination inside rootfd when missing and mount.
 * Errors read "mounts[3] (/data): bind '/host/x': No such file or directory". ret_point, when
 * not NULL, receives an O_PATH fd of the mount point the mount was made on (where the
 * destination led, under the new mount). */
int moat_mount_entry(int rootfd, const struct oci_mount *m, size_t idx, struct moat_mount_src *src,
		     struct moat_mount_env *env, int *ret_point, moat_error *err);

#endif
