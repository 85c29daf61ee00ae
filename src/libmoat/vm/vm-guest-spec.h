/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the guest agent is told to do, made from the OCI config on the host.
 *
 * The agent has no JSON parser and no libseccomp: moat resolves everything first. The
 * process becomes flat fields (capability sets as bit masks, rlimits as numbers, the
 * seccomp profile as the BPF program moat compiled), and the config's mounts split in two:
 * bind mounts are host paths, so moat makes them on the host inside the shared rootfs
 * (they reach the guest through the share), and every other mount (proc, sysfs, tmpfs,
 * devpts, mqueue, cgroup) is the agent's to make inside the guest.
 *
 * START lists every config mount, in the config's order: a bind as an entry of type
 * MOAT_PROTO_SHARE_MOUNT whose dest is where the host made it (the init fills that in once it
 * is made: a symlink in the destination may have led elsewhere inside the rootfs). A guest
 * mount made before it over that place would hide it; the agent then binds it again from the
 * share, as it saw it before mounting anything, so the guest has every mount the config asks
 * for, stacked in the config's order, as container mode has them.
 *
 * START also carries what the guest applies to the workload itself: the config's PID, cgroup,
 * IPC and UTS namespaces (the guest makes its own; a pod's members share the IPC and UTS ones,
 * vm-pod.h), and its pids limit and CPU quota (the host's
 * cgroup charges QEMU for the whole VM, which the guest kernel cannot see; the guest's
 * memory is sized from the memory limit, vm-select.h).
 */
#ifndef MOAT_VM_GUEST_SPEC_H
#define MOAT_VM_GUEST_SPEC_H

#include "error.h"
#include "oci-config.h"
#include "proto.h"
#include "syscall-filter.h"

/* The START message for cfg; sc: its compiled linux.seccomp, or NULL. Fields the guest
 * cannot honour are errors naming them. Release with moat_vm_start_free. */
int moat_vm_start_build(const struct oci_config *cfg, const struct moat_seccomp *sc,
			struct moat_msg_start *ret, moat_error *err);
void moat_vm_start_free(struct moat_msg_start *m);

/* The limits the agent applies to the workload inside the guest (proto.h RESOURCES: START's,
 * and UPDATE's after `moat update`), as container mode reads them: a pids limit above 0, a
 * CPU quota above 0 (its period, or the kernel's default); absent, none. Values no kernel
 * takes are errors naming the field. */
int moat_vm_guest_resources(const struct oci_config *cfg, struct moat_proto_resources *ret,
			    moat_error *err);

/* The process fields of p (as START and EXEC carry them); borrowed strings stay cfg's. */
int moat_vm_process_build(const struct oci_process *p, const struct moat_seccomp *sc,
			  struct moat_proto_process *ret, moat_error *err);
void moat_vm_process_free(struct moat_proto_process *p);

#endif
