/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the supervisor's conversation with the guest agent (src/proto/proto.h).
 *
 * Once QEMU runs, the supervisor (the container's init in microVM mode) relays between the
 * container's side and the guest: the container's stdin goes to the workload as STDIN
 * frames (within the agent's credit window), the workload's output comes back to the
 * container's stdout and stderr, the signals moat kill sends to the supervisor go to the
 * workload, a terminal's size follows SIGWINCH, `moat exec` requests become EXEC frames
 * (vm-exec.h), and when the workload ends the supervisor returns its status (N, or 128 +
 * signal) and shuts the guest down.
 *
 * Everything the guest sends is hostile input: frames are decoded by proto.c with every
 * limit checked; a frame that breaks the stream ends the session with an error.
 */
#ifndef MOAT_VM_RELAY_H
#define MOAT_VM_RELAY_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "proto.h"

/* The workload's id in the protocol. */
#define MOAT_VM_WORKLOAD_ID 1

struct moat_vm_relay {
	int agent_fd;                       /* connected to the guest's moat.0 port (taken over) */
	int in_fd, out_fd, err_fd;          /* the container's stdio */
	bool terminal;                      /* the workload runs on a pty: in_fd is a terminal */
	const struct moat_msg_start *start; /* sent on READY */
	pid_t vmm;                          /* QEMU: its end ends the session */
	pid_t virtiofsd;                    /* its root's virtiofsd, a child: its end too; 0 */
	int exec_fd;                        /* listening socket for moat exec (vm-exec.h), or -1 */
	int boot_timeout_ms;                /* READY must come within this, not counting
					     * the time QEMU waited for a CPU */
	const char *snapshot; /* the guest is restored from this snapshot (vm-snapshot.h), whose
			       * agent sent READY before it was saved: START goes at once */
};

/* Run the session to its end; *ret_code is the workload's exit code. A guest that breaks
 * the protocol, an agent error about the workload (it could not start: the message is the
 * agent's, e.g. "exec /bin/foo: No such file or directory") and a VMM that dies are
 * errors; for the workload that could not start, *ret_code is still set (127 when the
 * program was not found, 126 otherwise), as a shell would. */
int moat_vm_relay_run(struct moat_vm_relay *r, int *ret_code, moat_error *err);

#endif
