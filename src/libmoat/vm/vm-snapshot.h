/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a microVM restored from a snapshot instead of booted (docs/microvm-snapshot.md).
 *
 * A snapshot is a guest migrated to a file once its agent sent READY, before anything of a
 * container reached it. Its key is a digest of what the saved guest depends on (QEMU's
 * command line without the per-boot fds, and the identity of the QEMU binary, the kernel and
 * the initramfs), its file <cache>/<key>, read-only, named only once complete: the guest's
 * RAM at [0, RAM), sparse, then QEMU's migration stream of everything else (vm-snapshot-ram.c
 * says why the RAM is apart). The first
 * create that finds none makes it: under <key>.lock, an unnamed file whose writable end the
 * init gets, and saves into from its jail before READY (moat_vm_snapshot_save); create names
 * it after READY. Every create gets the read-only end; the supervisor copies the RAM into a
 * memfd of the VM's own and hands QEMU the stream (moat_vm_ram_load,
 * moat_vm_snapshot_incoming). A VM with network interfaces or the egress tunnel boots cold: the guest's
 * devices are fixed when it is saved.
 *
 * annotations.moat.vm.boot: cold (always boot), snapshot (restore, an error where it cannot
 * be), absent: a snapshot where it can be. The state's moat.vm.boot says which was done.
 * The cache is MOAT_VM_SNAPSHOT_DIR, else /var/cache/moat/vm-snapshots for root and
 * $XDG_CACHE_HOME (~/.cache)/moat/vm-snapshots for anyone else; it keeps the newest
 * MOAT_VM_SNAPSHOT_KEEP files.
 */
#ifndef MOAT_VM_SNAPSHOT_H
#define MOAT_VM_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "oci-config.h"
#include "vm-jail.h"
#include "vm-supervise.h"

#define MOAT_VM_BOOT_ANNOTATION "moat.vm.boot"
#define MOAT_VM_SNAPSHOT_DIR_ENV "MOAT_VM_SNAPSHOT_DIR"
#define MOAT_VM_SNAPSHOT_KEEP 8

enum moat_vm_boot { MOAT_VM_BOOT_AUTO, MOAT_VM_BOOT_COLD, MOAT_VM_BOOT_SNAPSHOT };

/* annotations.moat.vm.boot of cfg; an error names it. */
int moat_vm_boot_wanted(const struct oci_config *cfg, enum moat_vm_boot *ret, moat_error *err);

/* A snapshot create restores from, or makes. */
struct moat_vm_snapshot {
	int dirfd;   /* the cache */
	int lock_fd; /* <key>.lock, held while the file is made; -1 */
	int made_fd; /* the unnamed file being made (O_TMPFILE); -1 */
	char key[65];
};
#define MOAT_VM_SNAPSHOT_INIT                             \
	{                                                 \
		.dirfd = -1, .lock_fd = -1, .made_fd = -1 \
	}

/* How s boots, by want (AUTO, COLD or SNAPSHOT). For a snapshot: *ret_restore is true, and
 * s->snapshot_fd and s->snapshot_path are the file, and s->snapshot_save_fd its writable end
 * when it is being made (snap holds what moat_vm_snapshot_commit needs). a: QEMU's, the
 * kernel's and the initramfs's files. */
int moat_vm_snapshot_open(enum moat_vm_boot want, const struct moat_vm_assets *a,
			  struct moat_vm_session *s, struct moat_vm_snapshot *snap,
			  bool *ret_restore, moat_error *err);
/* After READY: a snapshot made is named (synced first), the oldest beyond
 * MOAT_VM_SNAPSHOT_KEEP deleted, the lock dropped. Nothing to do for one that existed. */
int moat_vm_snapshot_commit(struct moat_vm_snapshot *snap, moat_error *err);
void moat_vm_snapshot_release(struct moat_vm_snapshot *snap);

/* The cache at dirfd cut to its newest MOAT_VM_SNAPSHOT_KEEP snapshots (by mtime), keep among
 * them whatever its age; an evicted snapshot's lock goes with it. */
void moat_vm_snapshot_evict(int dirfd, const char *keep);

/* In the jail, the init's child: boot s's VM to READY and save it into fd. */
int moat_vm_snapshot_save(const struct moat_vm_session *s, int fd, moat_error *err);

/* A snapshot's guest memory (vm-snapshot-ram.c). A new memfd of size bytes, for QEMU to map
 * as the guest's RAM (moat_vm_launch.ram_fd). */
int moat_vm_ram_memfd(uint64_t size, moat_error *err);
/* Save: ram_fd's pages that are not all zeros, written into file_fd at their offsets. */
int moat_vm_ram_store(int ram_fd, int file_fd, uint64_t size, moat_error *err);
/* Restore: a new memfd holding file_fd's [0, size), and file_fd's offset at the stream. */
int moat_vm_ram_load(int file_fd, uint64_t size, moat_error *err);
struct moat_qmp;
/* QEMU leaves the shared RAM out of the migration (x-ignore-shared), on either end. */
int moat_vm_snapshot_ignore_shared(struct moat_qmp *q, moat_error *err);
/* Restore, QEMU started with -incoming defer: over the monitor at qmp_fd (closed after), the
 * capability and the stream at MOAT_VM_QEMU_INCOMING_FD. QEMU runs the guest once loaded. */
int moat_vm_snapshot_incoming(int qmp_fd, uint64_t deadline_ms, moat_error *err);

#endif
