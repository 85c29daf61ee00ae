/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: which isolation a container gets, and whether this host can give it.
 *
 * Isolation is "container" (namespaces, the default) or "microvm" (the container's process
 * runs under a guest kernel of its own, src/libmoat/vm/). It is chosen, strongest first:
 *   - by the runtime's name: invoked as moat-vm, every container is a microVM and no
 *     annotation can lower that;
 *   - by the annotation moat.isolation=container|microvm;
 *   - by the policy file's "microvm": {"default": true}.
 * The accelerator is moat.vm.accel=kvm|tcg (the policy's microvm.accel by default, kvm when
 * it says nothing). kvm is used only where the CPU virtualizes in hardware (vmx or svm) and
 * /dev/kvm opens; a nested software KVM (KVM-PVM) does not count. When what was asked
 * cannot be given, the choice fails with one line saying what is missing: never a fallback
 * to a weaker mode or a slower accelerator.
 */
#ifndef MOAT_VM_SELECT_H
#define MOAT_VM_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "oci-config.h"

#define MOAT_VM_RUNTIME_NAME "moat-vm"
#define MOAT_VM_ACCEL_ANNOTATION "moat.vm.accel"
#define MOAT_VM_MEMORY_ANNOTATION "moat.vm.memory_mib"
#define MOAT_VM_CPUS_ANNOTATION "moat.vm.cpus"
/* UID:GID (ids of the container) the VMM runs as, default 0:0: with the 9p share, the files
 * the guest makes are the VMM's, so `moat sandbox` runs it as the sandbox's user */
#define MOAT_VM_VMM_USER_ANNOTATION "moat.vm.vmm-user"

/* Guest memory in MiB when nothing sets it, and the least a guest kernel plus agent boots in. */
#define MOAT_VM_DEFAULT_MEMORY_MIB 256
#define MOAT_VM_MIN_MEMORY_MIB 64
/* What the VMM itself needs besides guest memory, in MiB (measured: QEMU microvm ~37 MB
 * resident). It is charged to the container's cgroup: a memory limit holds the guest's memory
 * and this, at create and at every update. */
#define MOAT_VM_OVERHEAD_MIB 64

enum moat_isolation { MOAT_ISOLATION_CONTAINER, MOAT_ISOLATION_MICROVM };
enum moat_vm_accel { MOAT_VM_ACCEL_KVM, MOAT_VM_ACCEL_TCG };

struct moat_vm_choice {
	enum moat_isolation isolation;
	enum moat_vm_accel accel;
	uint32_t memory_mib; /* guest memory */
	uint32_t cpus;       /* guest vCPUs */
};

/* What the policy file says (policy.h reads it). */
struct moat_vm_defaults {
	bool microvm; /* microVM unless the config asks for a container */
	enum moat_vm_accel accel;
};

/* The isolation and VM settings for cfg. as_vm: moat was invoked as moat-vm. Errors name
 * the annotation or field ("annotations.moat.isolation: ..."). */
int moat_vm_choose(const struct oci_config *cfg, bool as_vm, const struct moat_vm_defaults *d,
		   struct moat_vm_choice *ret, moat_error *err);

/* The guest memory moat_vm_choose() gives a microVM of cfg, in MiB. */
int moat_vm_memory_of(const struct oci_config *cfg, uint32_t *ret_mib, moat_error *err);
/* A new linux.resources.memory.limit in res (`moat update`) for a microVM whose guest has
 * guest_mib: refused below the guest's memory and the VMM's beside it, where the kernel would
 * OOM-kill QEMU rather than the workload. The error names both numbers and their sum. */
int moat_vm_check_memory_update(uint32_t guest_mib, const struct oci_resources *res,
				moat_error *err);

/* Whether the accelerator can run a guest here; the error says why not and names tcg. */
int moat_vm_accel_check(enum moat_vm_accel accel, moat_error *err);

const char *moat_isolation_name(enum moat_isolation i);
const char *moat_vm_accel_name(enum moat_vm_accel a);

/* argv0 names the microVM runtime (its basename is moat-vm). */
bool moat_vm_invoked_as_vm(const char *argv0);

#endif
