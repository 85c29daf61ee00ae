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
 * Phase 2, moat_rootfs_finish, runs as root of the user namespace and never resolves a host path
 * again. With the same cfg it makes cfg->mounts in order, creates the devices in /dev, enters
 * the root (pivot_root, or MS_MOVE + chroot with no_pivot), applies linux.readonlyPaths and
 * linux.maskedPaths, the rootfs propagation and root.readonly. Afterwards the cwd is "/".
 */
#ifndef MOAT_ROOTFS_H
#define MOAT_ROOTFS_H

#include <stdbool.h>

#include "error.h"
#include "oci-config.h"

struct moat_rootfs_opts {
	bool userns;   /* the container runs in a user namespace (new or joined): no mknod, bind
			* devices from the host */
	bool no_pivot; /* --no-pivot: MS_MOVE + chroot instead of pivot_root */
	int *idmapped; /* per cfg->mounts[i], then one for the rootfs: its idmapped source
			* (mount-idmap.h) or -1; NULL: none. moat_rootfs_prepare takes them
			* over and sets them to -1 */
};

struct moat_rootfs;

/* Phase 1. rootfs_path is the host path of the root filesystem (root.path made absolute or
 * relative to the cwd). *ret is released with moat_rootfs_free. */
int moat_rootfs_prepare(const struct oci_config *cfg, const char *rootfs_path,
			const struct moat_rootfs_opts *opts, struct moat_rootfs **ret,
			moat_error *err);

/* Phase 2. cfg must be the config given to moat_rootfs_prepare. */
int moat_rootfs_finish(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err);

void moat_rootfs_free(struct moat_rootfs *r);

#endif
