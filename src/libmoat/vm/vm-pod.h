/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a pod in one VM, the host's side (docs/microvm-network.md).
 *
 * A member of a microVM's pod (pod.h says which containers are) boots no VM: its container
 * runs in the pod's guest, beside the sandbox's workload. Everything a VM will ever have
 * exists at its boot (microvm hot-plugs nothing), so every microVM has a second 9p share
 * from boot, the pod's: MOAT_VM_POD_DIR in its state directory, bound read-only at
 * MOAT_VM_JAIL_POD in its VMM's jail and shared with the guest under MOAT_PROTO_POD_TAG.
 * A member's own jail (a VMM's, without a VMM: vm-jail.h) builds its rootfs and bind mounts
 * at /rootfs as a VM's jail would, idmapped for the pod's user namespace; create then clones
 * that tree into the pod VM's jail at MOAT_VM_JAIL_POD/<id>, where QEMU serves it, and the
 * agent binds it as the member's root (the CONTAINER message). Nothing of it is mounted in
 * the host's own mount namespace; delete takes it out of the pod's jail again.
 */
#ifndef MOAT_VM_POD_H
#define MOAT_VM_POD_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"
#include "proto.h"
#include "syscall-filter.h"

/* The pod's share: in a microVM's state directory, and in its VMM's jail. */
#define MOAT_VM_POD_DIR "pod"
#define MOAT_VM_JAIL_POD "/pod"
/* The annotation `moat state` shows on a member: its pod's sandbox. */
#define MOAT_VM_POD_ANNOTATION "moat.vm.pod"

/* A pod's sandbox, the microVM its members run in. */
struct moat_vm_pod {
	char *sandbox;      /* its id */
	pid_t pid;          /* its init, the supervisor; 0: it is gone */
	uint64_t pid_start; /* the init's start time (state.h), against PID reuse */
	char *state_dir;    /* its state directory, absolute */
	char *accel;        /* its accelerator, as its state shows it */
};

void moat_vm_pod_clear(struct moat_vm_pod *p);

/* A member's limits in the pod's guest: the pids limit and CPU quota any microVM's workload
 * has there (moat_vm_guest_resources), and its memory limit, which its cgroup in the guest
 * holds (a VM's own workload has the guest's memory). */
int moat_vm_pod_resources(const struct oci_config *cfg, struct moat_proto_resources *ret,
			  moat_error *err);

/* The member's CONTAINER message: the START moat_vm_start_build makes of cfg, with the
 * namespaces the member has of its own (those it does not share with the sandbox), its
 * limits (moat_vm_pod_resources), and its name, id. Release it with moat_vm_start_free. */
int moat_vm_pod_message(const struct moat_vm_pod *p, const struct oci_config *cfg,
			const struct moat_seccomp *sc, const char *id, struct moat_msg_start *ret,
			moat_error *err);

/* The member's root, which its init (member_init) made at MOAT_VM_JAIL_ROOTFS, into the pod's
 * share as <id>: its directory made in the sandbox's MOAT_VM_POD_DIR, the tree cloned into
 * the sandbox's jail there. Errors name the step. */
int moat_vm_pod_attach(const struct moat_vm_pod *p, pid_t member_init, const char *id,
		       moat_error *err);
/* The member's root out of the pod's share: unmounted in the sandbox's jail (while the
 * sandbox lives), its directory removed. What is gone already is no error. */
int moat_vm_pod_detach(const struct moat_vm_pod *p, const char *id, moat_error *err);

#endif
