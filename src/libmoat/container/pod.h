/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: which microVM a new container joins as a member of its pod.
 *
 * A pod is one VM (docs/microvm-network.md): a container whose config joins the network
 * namespace of a microVM container that moat runs in the same state root (a Kubernetes pod's
 * sandbox, a Podman pod's infra container) boots no VM of its own. It runs inside that VM, the
 * pod's, as one more container of the guest's (vm-pod.h, vm-member.h). The namespace is
 * compared by its inode with the sandbox's init's, so any path that names it counts
 * (/proc/<pid>/ns/net, a bind-mounted /run/netns/<name>).
 */
#ifndef MOAT_POD_H
#define MOAT_POD_H

#include <stdbool.h>

#include "oci-config.h"
#include "state.h"
#include "vm-pod.h"

/* The network namespace cfg joins by path, or NULL. */
const char *moat_config_joined_netns(const struct oci_config *cfg);

/* Whether cfg joins the pod of a microVM in root, whose sandbox is then *ret (released with
 * moat_vm_pod_clear). A member is never a sandbox itself. */
bool moat_pod_find(const char *root, const struct oci_config *cfg, struct moat_vm_pod *ret);

/* The sandbox a member's state names (its vm_pod), as it is now: pid 0 when it is gone. */
void moat_pod_of(const char *root, const char *sandbox, struct moat_vm_pod *ret);

/* A member's root out of its pod's share (vm-pod.h moat_vm_pod_detach), at delete. */
int moat_pod_leave(const char *root, const struct moat_state *member, moat_error *err);

/* The state directory of the pod's VM that runs a member's processes (its own for any other
 * microVM), opened O_PATH, and the member's name there (NULL for the VM's own container). */
int moat_pod_vm_dir(const char *root, const struct moat_state *st, int own_dirfd, int *ret_dirfd,
		    const char **ret_member, moat_error *err);

#endif
