/* moat: the VMM's jail, and what the container init does in microVM mode.
 *
 * In microVM mode the container is still built by moat's own machinery (namespaces,
 * cgroup, user namespace, mounts), but from a config derived from the user's: its root is
 * an empty, read-only directory in the state directory, holding only what QEMU needs read-only
 * (/usr, the loader's cache, the guest kernel and initramfs), the container's rootfs at
 * /rootfs with the config's bind mounts inside it (the guest sees them through the share),
 * and a minimal /dev (plus /dev/kvm with the kvm accelerator). Its process has no
 * capabilities, no_new_privs, and runs as root of the container's user namespace, an
 * unprivileged uid on the host. The init, once started, does not exec the user's program:
 * it becomes the supervisor, starts QEMU inside that jail and relays (vm-relay.h).
 */
#ifndef MOAT_VM_JAIL_H
#define MOAT_VM_JAIL_H

#include "error.h"
#include "oci-config.h"
#include "proto.h"
#include "vm-select.h"

/* Where the jail finds what it needs (paths inside the jail). */
#define MOAT_VM_JAIL_QEMU "/usr/bin/qemu-system-x86_64"
#define MOAT_VM_JAIL_KERNEL "/moat-vm/kernel"
#define MOAT_VM_JAIL_INITRAMFS "/moat-vm/initramfs"
#define MOAT_VM_JAIL_ROOTFS "/rootfs"
/* The jail's root, in the container's state directory. */
#define MOAT_VM_JAIL_DIR "jail"

/* The host's files for the guest: the kernel and the initramfs from MOAT_VM_DIR (the
 * environment) or the directory moat was installed with, and QEMU. Missing ones are errors
 * naming what to install or build. */
struct moat_vm_assets {
	char *kernel;
	char *initramfs;
};
int moat_vm_assets_find(struct moat_vm_assets *ret, moat_error *err);
void moat_vm_assets_free(struct moat_vm_assets *a);

/* Make the jail's root directory (empty mount points, the loader's symlinks) as
 * state_dirfd/MOAT_VM_JAIL_DIR. */
int moat_vm_jail_make_root(int state_dirfd, moat_error *err);

/* The config the jail is built from: user's namespaces, cgroup and resources, root at
 * jail_root, the mounts described above, the supervisor as its process. */
int moat_vm_jail_config(const struct oci_config *user, const char *rootfs,
			const char *jail_root, const struct moat_vm_assets *a,
			const struct moat_vm_choice *vm, struct oci_config **ret, moat_error *err);

/* What the init needs to be the supervisor. */
struct moat_vm_session {
	struct moat_vm_choice vm;
	struct moat_msg_start start; /* for the workload */
	int exec_fd;                 /* the listening socket moat exec connects to */
};

/* The container's network namespace holds nothing but lo: the guest gets no network yet,
 * and a container that expects one must not run without it. Run in the init. */
int moat_vm_check_network(moat_error *err);

/* Be the supervisor: start QEMU in the jail, relay, return the workload's exit code (a
 * failure prints one line to stderr first). Run by the init once the container starts. */
int moat_vm_supervise(const struct moat_vm_session *s, bool terminal);

#endif
