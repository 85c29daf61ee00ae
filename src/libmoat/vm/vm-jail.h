/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the VMM's jail: where QEMU runs in microVM mode.
 *
 * In microVM mode the container is still built by moat's own machinery (namespaces,
 * cgroup, user namespace, mounts), but from a config derived from the user's: its root is
 * an empty, read-only directory in the state directory, holding only what QEMU needs read-only
 * (/usr, the loader's cache, the guest kernel and initramfs), the container's rootfs at
 * /rootfs with the config's bind mounts inside it (the guest sees them through the share),
 * and a minimal /dev (plus /dev/kvm with the kvm accelerator). Its process has no
 * capabilities, no_new_privs, and runs as root of the container's user namespace, an
 * unprivileged uid on the host. The init, once started, does not exec the user's program:
 * it becomes the supervisor (vm-supervise.h), starts QEMU inside that jail and relays.
 *
 * The workload controls the rootfs and its volumes, so nothing it holds may reach the jail:
 *   - the jail's own mounts come first and are resolved in the jail's root, which moat made;
 *     the workload's bind mounts follow, each resolved inside /rootfs exactly as container
 *     mode resolves it inside the root (a symlink or ".." in a destination stays inside);
 *   - QEMU is executed from an fd of the host's binary opened before the jail exists, with
 *     an environment of its own, never by a path inside the jail;
 *   - the supervisor, and QEMU after it, run under a seccomp filter (vm-seccomp.h) that the
 *     VMM cannot drop, whatever QEMU's own -sandbox does;
 *   - root.readonly and ro binds hold on the host side: /rootfs is made read-only once the
 *     binds are in, and QEMU exports the share read-only when nothing in it is writable, so
 *     a guest kernel that ignores its own mount flags still cannot write.
 */
#ifndef MOAT_VM_JAIL_H
#define MOAT_VM_JAIL_H

#include "error.h"
#include "oci-config.h"
#include "proto.h"
#include "rootfs.h"
#include "vm-select.h"
#include "vm-supervise.h"

/* The host's QEMU, opened by moat before the jail is built. */
#define MOAT_VM_HOST_QEMU "/usr/bin/qemu-system-x86_64"
/* Where the jail finds what it needs (paths inside the jail). */
#define MOAT_VM_JAIL_QEMU "/usr/bin/qemu-system-x86_64"
#define MOAT_VM_JAIL_KERNEL "/moat-vm/kernel"
#define MOAT_VM_JAIL_INITRAMFS "/moat-vm/initramfs"
#define MOAT_VM_JAIL_ROOTFS "/rootfs"
/* The jail's root, in the container's state directory. */
#define MOAT_VM_JAIL_DIR "jail"

/* The host's files for the guest: the kernel and the initramfs from MOAT_VM_DIR (the
 * environment) or the directory moat was installed with, and QEMU (an O_PATH fd of the
 * host's binary, which the supervisor executes). Missing ones are errors naming what to
 * install or build. */
struct moat_vm_assets {
	char *kernel;
	char *initramfs;
	int qemu_fd;
};
int moat_vm_assets_find(struct moat_vm_assets *ret, moat_error *err);
void moat_vm_assets_free(struct moat_vm_assets *a);

/* An executable regular file of the host's, opened O_PATH for execveat: -errno when it is
 * not one. */
int moat_vm_open_host_program(const char *path, int *ret_fd);

/* Make the jail's root directory (empty mount points, the loader's symlinks) as
 * state_dirfd/MOAT_VM_JAIL_DIR. */
int moat_vm_jail_make_root(int state_dirfd, moat_error *err);

/* The tasks the VMM brings into the container's cgroup on the host beside the workload's
 * limit, which the guest enforces itself (vm-guest-spec.h): the supervisor; QEMU's main,
 * vCPU, RCU and I/O worker threads (its pool goes to 64); virtiofsd's two processes and its
 * thread pool. An idle cold VM has 10; a limit of 8 left virtiofsd none to start. */
#define MOAT_VM_VMM_TASKS 160

/* The host's pids limit for a workload limit of limit: the VMM's tasks beside it (0 and
 * negative, no limit, stay as they are). */
int64_t moat_vm_host_pids_limit(int64_t limit);

/* The one device a microVM's jail lists, so that its host cgroup allows it after any device
 * rule: /dev/kvm, for a KVM VM of its own (a pod member's VMM is the pod's). The user's
 * linux.devices are the guest's, never the host's. */
const struct oci_device *moat_vm_jail_device(bool member, bool kvm);

/* The config the jail is built from: user's namespaces, cgroup and resources, root at
 * jail_root, the mounts described above (their layout in s->workload and
 * s->share_readonly), the supervisor as its process under the VMM's seccomp filter. A pod
 * member's jail (s->member: vm-pod.h) is the same without QEMU's files (a is not used, and
 * may be NULL): its rootfs is cloned into the pod's share, and its process is the member's
 * relay (vm-member.h). */
int moat_vm_jail_config(const struct oci_config *user, const char *rootfs, const char *jail_root,
			const struct moat_vm_assets *a, struct moat_vm_session *s,
			struct oci_config **ret, moat_error *err);

#endif
