/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: starting the VMM, QEMU's microvm machine, for one container.
 *
 * The guest boots moat's kernel with moat's agent as PID 1 in the initramfs. The container's
 * rootfs is shared with virtio-9p (QEMU serves it itself: no second daemon to jail, and
 * with TCG the boot dominates either way; contrib/microvm/README.md has the measurements).
 * The agent's port, moat.0, is a virtio-serial port on a socket QEMU inherits; the guest
 * kernel's console goes to a file for diagnosis. QEMU runs with -sandbox on (its own
 * seccomp filter: no spawning, no privilege changes, no obsolete syscalls) and -nodefaults,
 * so the guest sees nothing but what is listed here.
 *
 * This is QEMU's only command line in moat: the guest agent's developer check
 * (tests/guest/agent-smoke.c) boots its VMs from it too, with the last three fields.
 */
#ifndef MOAT_VM_LAUNCH_H
#define MOAT_VM_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "vm-select.h"

struct moat_vm_launch {
	const char *qemu;        /* the qemu-system-x86_64 binary: its name in argv[0] */
	int qemu_fd;             /* the binary executed (execveat); -1: qemu, by path */
	const char *kernel;      /* the guest kernel image */
	const char *initramfs;   /* the agent's initramfs */
	const char *rootfs;      /* the directory shared as the guest's root */
	bool rootfs_readonly;    /* share it read-only */
	const char *pod_share;   /* the directory shared as the pod's (vm-pod.h); NULL: none */
	const char *console_log; /* where the guest kernel's console goes; NULL: nowhere */
	const struct moat_vm_choice *vm;
	uint32_t tsc_khz; /* TCG: the host's TSC rate (vm-tsc.h), the guest's tsc_early_khz; 0:
			   * the guest calibrates */
	int agent_fd;     /* QEMU's end of the agent's socket */
	bool egress;      /* a second port, moat.egress (src/proto/tunnel.h), on egress_fd */
	int egress_fd;    /* QEMU's end of the egress tunnel's socket */
	/* virtio-net devices (docs/microvm-network.md): a tap fd and its MAC each */
	size_t n_nics;
	const int *nic_fds;
	const uint8_t (*nic_macs)[6];
	/* A snapshot (vm-snapshot.h): the guest's RAM is the memfd ram_fd, shared (a save's and a
	 * restore's alike); restore the guest from incoming_fd instead of booting it, once the
	 * QMP monitor on qmp_fd says so (-incoming defer); or give QEMU the monitor to save one. */
	bool snapshot_ram;
	int ram_fd;
	bool incoming;
	int incoming_fd;
	bool qmp;
	int qmp_fd;
	/* For the agent's developer check; moat's own VMs leave them zero. */
	const char *virtiofs_socket; /* share the root through virtio-fs, served by the
				      * virtiofsd listening on this socket, instead of rootfs
				      * over 9p (rootfs and rootfs_readonly are then unused) */
	bool debug_exit;             /* an isa-debug-exit device at port 0xf4 and moat.debugexit=1:
				  * QEMU exits with the workload's status ((code << 1) | 1) */
	bool kernel_messages;        /* the kernel's own messages on the console too (no quiet) */
};

/* The fd number at which QEMU finds the agent's socket: moat_vm_launch puts agent_fd there,
 * and whoever else executes moat_vm_qemu_argv's vector must too. */
#define MOAT_VM_QEMU_AGENT_FD 3
/* And the egress tunnel's, when the VM has one. */
#define MOAT_VM_QEMU_EGRESS_FD 4
/* And tap i's. */
#define MOAT_VM_QEMU_NIC_FD(i) (5 + (int)(i))
#define MOAT_VM_MAX_NICS 8
/* And the snapshot it restores, its QMP monitor's socket, and a snapshot VM's RAM. */
#define MOAT_VM_QEMU_INCOMING_FD MOAT_VM_QEMU_NIC_FD(MOAT_VM_MAX_NICS)
#define MOAT_VM_QEMU_QMP_FD (MOAT_VM_QEMU_INCOMING_FD + 1)
#define MOAT_VM_QEMU_RAM_FD (MOAT_VM_QEMU_QMP_FD + 1)

/* The argument vector (NULL-terminated, each string allocated) for l. */
char **moat_vm_qemu_argv(const struct moat_vm_launch *l);
void moat_vm_argv_free(char **argv);

/* Fork and exec QEMU; *ret_pid is its pid. Only agent_fd (egress_fd, the taps, incoming_fd,
 * qmp_fd, ram_fd) and stdio cross into it, with an environment of its own (PATH alone:
 * nothing of the caller's); QEMU dies with its parent. */
int moat_vm_launch(const struct moat_vm_launch *l, pid_t *ret_pid, moat_error *err);

#endif
