/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: an engine's overlay rootfs, stacked again on idmapped layers.
 *
 * Podman, containerd and Docker hand the runtime an overlay mount as the rootfs. An overlay
 * cannot be idmapped itself, but its layers can: moat reads the engine's overlay from
 * mountinfo, idmaps each layer's directory through the container's user namespace and makes a
 * new overlay of the same layers and options from those detached mounts (fsconfig "lowerdir+",
 * "upperdir", "workdir" with fds: Linux 6.15; before, with the layers attached by path in a
 * mount namespace of a child's own: Debian 12's 6.1 among them). The new overlay, still
 * detached, is the container's root; the engine's own mount stays where it is and sees the same
 * upper layer. */
#ifndef MOAT_OVERLAY_IDMAP_H
#define MOAT_OVERLAY_IDMAP_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* path (absolute) is the root of an overlay mount. */
bool moat_overlay_is_root(const char *path);

/* A detached overlay of the layers and options of the overlay mounted at path, every layer
 * idmapped through userns, whose root is root_id on the host. Errors start with "overlay
 * '<path>'". */
int moat_overlay_idmap(const char *path, int userns, uid_t root_id, int *ret_fd, moat_error *err);

#endif
