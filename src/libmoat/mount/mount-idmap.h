/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: idmapped bind mounts (mounts[].options idmap/ridmap, mounts[].uidMappings/gidMappings).
 *
 * Making a mount idmapped needs privilege over the source filesystem's owner (the host's user
 * namespace for ext4 or xfs), which the container's init no longer has once it is in its own
 * user namespace. So moat, still on the host side, clones each such source, maps it, and hands
 * the detached clone to the init, which attaches it like any other bind source. */
#ifndef MOAT_MOUNT_IDMAP_H
#define MOAT_MOUNT_IDMAP_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "mount.h"
#include "oci-config.h"

/* m asks for an idmapped mount: idmap or ridmap in its options, or mappings of its own. */
bool moat_mount_wants_idmap(const struct oci_mount *m);

/* For mounts[idx], a detached idmapped clone of its source (resolved from dirfd, the bundle).
 * The ids are mapped through the mount's own uidMappings/gidMappings when it has them, else
 * through container_userns (an fd of the container's user namespace, -1 when it has none).
 * force: idmap every bind mount (the automatic user namespace), an rbind recursively, an
 * overlay mount's root as an overlay of idmapped layers (container_userns's root is root_id
 * on the host). *ret_fd is -1 when m wants no idmap. Errors read "mounts[2] (/data): idmap:
 * ...". */
int moat_mount_idmap_source(int dirfd, const struct oci_mount *m, size_t idx, int container_userns,
			    bool force, uid_t root_id, int *ret_fd, moat_error *err);

/* A detached clone of path (dirfd-relative; recursive: with its submounts), idmapped through
 * userns. Errors name the path. */
int moat_mount_idmap_clone(int dirfd, const char *path, int userns, bool recursive, int *ret_fd,
			   moat_error *err);

/* The root filesystem at path (absolute), cloned with its submounts and idmapped through
 * container_userns (whose root is root_id on the host): the automatic user namespace's root.
 * An overlay, which cannot be idmapped, is made again on idmapped layers (overlay-idmap.h).
 * Errors start with "root.path". */
int moat_mount_idmap_rootfs(const char *path, int container_userns, uid_t root_id, int *ret_fd,
			    moat_error *err);

#endif
