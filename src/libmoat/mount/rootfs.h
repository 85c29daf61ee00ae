/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container's filesystem view, built in two phases.
 *
 * The caller (container init) runs in the container's new mount namespace, usually inside a
 * new user namespace whose id maps are already written.
 *
 * Phase 1, moat_rootfs_prepare, runs while the process still has the host's credentials: its
 * fsuid is host root, so it can walk 0700 root-owned bundle directories, but it creates nothing
 * (a file created in a filesystem owned by the new user namespace fails with EOVERFLOW). It
 * makes the inherited mount tree rslave (rprivate when linux.rootfsPropagation asks for private)
 * so nothing the container mounts reaches the host, bind-mounts the rootfs onto itself and
 * keeps an O_PATH fd of it, and takes every host object phase 2 needs (bind sources, host
 * device nodes under a user namespace, the host /sys for the sysfs fallback) as detached clones
 * (open_tree OPEN_TREE_CLONE). Relative bind sources are resolved against the caller's working
 * directory, which should be the bundle.
 *
 * Phase 2 runs as root of the user namespace and never resolves a host path again, in two
 * steps with the same cfg, between which the createContainer hooks run (the spec puts them
 * after the mounts, before pivot_root). moat_rootfs_mount makes cfg->mounts in order, creates
 * the devices in /dev and a missing process.cwd; moat_rootfs_enter enters the root
 * (pivot_root, or MS_MOVE + chroot with no_pivot), applies linux.readonlyPaths and
 * linux.maskedPaths, the rootfs propagation and root.readonly. Afterwards the cwd is "/".
 */
#ifndef MOAT_ROOTFS_H
#define MOAT_ROOTFS_H

#include <stdbool.h>

#include "error.h"
#include "oci-config.h"
#include "utils.h"

/* A root inside the root, for the VMM's jail (vm-jail.h): cfg->mounts[first..] are the
 * workload's, made inside the mount at path (which the mounts before them make) and each
 * resolved inside it, as container mode resolves mounts inside the rootfs, so that none can
 * land on the jail's own files; index[i - first] is the mount's index in the workload's
 * config, for errors; landed[i - first] receives where it was made, as a path inside that
 * mount (after symlinks). Then the directories dirs[] (where the guest mounts filesystems of
 * its own, and may not be allowed to make them) are made inside it, as container mode makes
 * its mount points; readonly: that mount becomes read-only last, as root.readonly does. */
struct moat_rootfs_inner {
	const char *path;
	size_t first;
	const size_t *index;
	char **landed;
	bool readonly;
	char **dirs; /* NULL-terminated; NULL: none */
};

struct moat_rootfs_opts {
	bool userns;   /* the container runs in a user namespace (new or joined): no mknod, bind
			* devices from the host */
	bool no_pivot; /* --no-pivot: MS_MOVE + chroot instead of pivot_root */
	int *idmapped; /* per cfg->mounts[i], then one for the rootfs: its idmapped source
			* (mount-idmap.h) or -1; NULL: none. moat_rootfs_prepare takes them
			* over and sets them to -1 */
	const struct moat_rootfs_inner *inner; /* NULL: every mount is resolved in the root */
};

struct moat_rootfs;

/* Phase 1. rootfs_path is the host path of the root filesystem (root.path made absolute or
 * relative to the cwd). *ret is released with moat_rootfs_free. */
int moat_rootfs_prepare(const struct oci_config *cfg, const char *rootfs_path,
			const struct moat_rootfs_opts *opts, struct moat_rootfs **ret,
			moat_error *err);

/* Phase 2. cfg must be the config given to moat_rootfs_prepare. */
int moat_rootfs_mount(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err);
int moat_rootfs_enter(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err);

void moat_rootfs_free(struct moat_rootfs *r);
MOAT_DEFINE_CLEANUP(struct moat_rootfs, moat_rootfs_free)

#endif
