/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the guest's root over virtio-fs, served by Debian's virtiofsd in the VMM's jail.
 *
 * A microVM's rootfs reaches the guest one of two ways:
 *   - virtio-fs: virtiofsd (/usr/lib/qemu/virtiofsd, from qemu-system-common) serves /rootfs
 *     of the jail to QEMU's vhost-user-fs device. About 6.5 times faster than 9p for metadata
 *     (contrib/microvm/README.md). The default where virtiofsd is installed and the VM boots
 *     cold;
 *   - 9p: QEMU serves it itself. Where virtiofsd is missing, and for a VM restored from a
 *     snapshot (vm-snapshot.h): QEMU 7.2 cannot migrate a vhost-user-fs device.
 * annotations.moat.vm.share (virtiofs or 9p) asks for one; asking for virtio-fs where it
 * cannot be is an error naming the annotation, never a silent 9p. `moat state` reports the
 * share in force under the same annotation.
 *
 * virtiofsd's jail: the init forks it inside the VMM's jail (its user namespace, cgroup, PID
 * and network namespaces) before it gives up its capabilities, with no_new_privs and a
 * bounding set of only what virtiofsd uses: the eight it keeps to act as the guest's users
 * (chown, dac_override, fowner, fsetid, setgid, setuid, mknod, setfcap), all in the
 * container's user namespace, and sys_admin and setpcap for its own sandbox, which it then
 * drops with the whole bounding set: a mount namespace holding only the rootfs (pivot_root
 * into it), new PID and network namespaces, and its seccomp filter. It gets the listening
 * socket QEMU connects to and /dev/null as stdio; it dies with the init, and exits when QEMU
 * hangs up. (microvm-virtiofs.bats, virtiofsd-jail, checks all of it on the running daemon.)
 */
#ifndef MOAT_VM_VIRTIOFS_H
#define MOAT_VM_VIRTIOFS_H

#include <stdbool.h>

#include "error.h"
#include "oci-config.h"
#include "vm-snapshot.h"
#include "vm-supervise.h"

#define MOAT_VM_SHARE_ANNOTATION "moat.vm.share"
/* The host's virtiofsd; MOAT_VM_VIRTIOFSD in the environment names another (tests). */
#define MOAT_VM_HOST_VIRTIOFSD "/usr/lib/qemu/virtiofsd"
#define MOAT_VM_VIRTIOFSD_ENV "MOAT_VM_VIRTIOFSD"
/* The socket QEMU connects to, in the jail's /tmp. */
#define MOAT_VM_JAIL_VIRTIOFS_SOCKET "/tmp/virtiofs.sock"

/* For a new VM: annotations.moat.vm.share, and virtiofsd opened (O_PATH) into *ret_fd when
 * the root may go over virtio-fs, else -1. Asking for virtio-fs makes *boot cold where it
 * was unset, and is an error with moat.vm.boot=snapshot or without virtiofsd. */
int moat_vm_virtiofsd_open(const struct oci_config *cfg, enum moat_vm_boot *boot, int *ret_fd,
			   moat_error *err);

/* Whether s's root goes over virtio-fs: virtiofsd was opened for it, and it is neither
 * restored from a snapshot nor a pod member. Create decides with it once it knows how the VM
 * boots, and the init, which learns that from the snapshot it is sent or not, the same. */
bool moat_vm_virtiofs_wanted(const struct moat_vm_session *s);

/* In the init, in the jail, while it still has its capabilities: start virtiofsd for s
 * (s->virtiofsd_fd) serving MOAT_VM_JAIL_ROOTFS on MOAT_VM_JAIL_VIRTIOFS_SOCKET, which only
 * the VMM's user (vmm, the jail's process) may connect to, and set s->virtiofs. */
int moat_vm_virtiofsd_start(struct moat_vm_session *s, const struct oci_process *vmm,
			    moat_error *err);

#endif
