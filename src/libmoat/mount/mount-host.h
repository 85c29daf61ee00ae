/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: bind sources opened with the host's credentials.
 *
 * Phase 1 (rootfs.h) runs in the container's user namespace: the init's capabilities are the
 * namespace's and do not reach host files, so a bind source under a directory only the host's
 * root may traverse (0700 of another owner, 0000) cannot be opened there. moat, still root on
 * the host, opens those sources for the init, as runc does: a helper process joins the init's
 * mount namespace (so that paths resolve as the init would resolve them, and an O_PATH fd names
 * a mount there, which mount(2) needs) and opens each bind source with the host's credentials,
 * as moat_mount_entry_prepare would (a detached clone, or an O_PATH fd without the new mount
 * API). The fds go to the init before it enters phase 1 (MOAT_SYNC_MOUNT_FD), which takes them
 * over instead of opening the paths itself.
 */
#ifndef MOAT_MOUNT_HOST_H
#define MOAT_MOUNT_HOST_H

#include <sys/types.h>

#include "error.h"
#include "oci-config.h"

/* For every bind mount of cfg whose fds[i] is -1 and that wants no idmap (mount-idmap.h makes
 * those), fds[i] receives its source, opened by a helper in the mount namespace of init with
 * relative sources resolved against bundle (absolute). On failure every fd this made is closed
 * and fds[i] is -1 again; the error names the mount: "mounts[3] (/data): bind '/x': ...". */
int moat_mount_host_sources(pid_t init, const char *bundle, const struct oci_config *cfg, int *fds,
			    moat_error *err);

#endif
