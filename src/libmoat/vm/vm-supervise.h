/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the supervisor, what the container init becomes in microVM mode.
 *
 * Built inside the VMM's jail (vm-jail.h), the init starts QEMU there with moat's guest kernel
 * and agent (vm-launch.h), sends the agent the workload (START, with each bind mount where
 * the jail made it), and relays stdio, signals, resizes and exec requests until the workload
 * exits (vm-relay.h); its exit status is the workload's.
 */
#ifndef MOAT_VM_SUPERVISE_H
#define MOAT_VM_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "proto.h"
#include "rootfs.h"
#include "vm-launch.h"
#include "vm-net.h"
#include "vm-select.h"

/* What the init needs to be the supervisor, or a pod member's relay (vm-member.h). */
struct moat_vm_session {
	struct moat_vm_choice vm;
	uint32_t tsc_khz;            /* TCG: the host's TSC rate (vm-tsc.h); 0: unknown */
	struct moat_msg_start start; /* for the workload (a member: its CONTAINER) */
	int exec_fd;                 /* the listening socket moat connects to (vm-socket.h) */
	int qemu_fd;                 /* the host's QEMU (moat_vm_assets.qemu_fd, not owned) */
	int virtiofsd_fd; /* the host's virtiofsd when the root may go over virtio-fs; -1 */
	bool virtiofs;    /* it does: virtiofsd serves it (vm-virtiofs.h); else 9p */
	pid_t virtiofsd;  /* the virtiofsd the init started, its child; 0: none */
	struct moat_rootfs_inner workload; /* the workload's mounts inside /rootfs */
	size_t *workload_index;            /* workload.index's storage */
	char **workload_landed;            /* workload.landed's storage (filled in by the init) */
	size_t n_workload;                 /* how many mounts of the jail are the workload's */
	char **guest_dirs;                 /* workload.dirs's storage */
	bool share_readonly;               /* nothing in /rootfs is writable: export it read-only */
	bool egress; /* the guest reaches the egress proxy through a tunnel (vm-egress.h) */
	struct moat_vm_net net; /* the container's interfaces, and their taps (vm-net.h) */
	char *pod_share;        /* the pod's share on the host (vm-pod.h); NULL for a member */
	bool member;            /* a member of another microVM's pod: no VM of its own */
	int pod_conn;           /* a member: connected to its pod's supervisor; -1 */
	/* moat.vm.boot=snapshot (vm-snapshot.h), sent by create before CGROUP_DONE: the file the
	 * guest is restored from (its path on the host, for errors), and while create makes it,
	 * its writable end for the init to save into before READY; -1 otherwise */
	int snapshot_fd;
	char *snapshot_path;
	int snapshot_save_fd;
};

/* QEMU's settings for s's VM, as the supervisor starts it, without the fds of the moment:
 * agent_fd, egress_fd, the taps and a snapshot's. */
void moat_vm_session_launch(const struct moat_vm_session *s, struct moat_vm_launch *ret);

/* START as the guest gets it: each bind of the workload's at the place in the rootfs the init
 * made it, and the host's clock. The copy borrows everything but its mounts array, which
 * moat_vm_start_message_free releases. */
struct moat_msg_start moat_vm_start_message(const struct moat_vm_session *s);
void moat_vm_start_message_free(struct moat_msg_start *m);

/* Closes exec_fd and pod_conn (the init holds its own copies); accepts NULL. */
void moat_vm_session_free(struct moat_vm_session *s);

/* The container's network namespace holds nothing but lo and what s->net carries into the
 * guest: an interface that came later (a prestart hook's) would be left behind, and a
 * container that expects it must not run without it. Run in the init, after the hooks. */
int moat_vm_check_network(const struct moat_vm_session *s, moat_error *err);

/* Be the supervisor: start QEMU in the jail, relay, return the workload's exit code (a
 * failure prints one line to stderr first). Run by the init once the container starts. */
int moat_vm_supervise(const struct moat_vm_session *s, bool terminal);

#endif
