/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: `moat exec` into a microVM.
 *
 * The guest's processes have no host pid and no host namespaces to join, so exec asks the
 * container's supervisor: it connects to the unix socket MOAT_VM_EXEC_SOCKET in the state
 * directory (made by create; the supervisor holds its listening end), sends the process
 * (OCI JSON, held to the policy like any exec) with its stdin, stdout and stderr in
 * SCM_RIGHTS, and reads back replies: STARTED, then EXITED with the exit code, or ERROR.
 * The supervisor runs the process in the guest (an EXEC frame) and relays between those fds
 * and the guest for as long as it lives; a process on a terminal gets the guest's pty, and
 * the size of the terminal its fds are follows it.
 *
 * With --detach, a small host process (a child of `moat exec`, so an engine's subreaper
 * adopts it) waits for the guest process and exits with its code: its pid is what
 * --pid-file records, as engines expect of an exec'd process.
 *
 * Signals sent to the client (the foreground `moat exec`, or that host process) reach the
 * guest process: the client writes a SIGNAL message on its connection after STARTED. A
 * client that goes away without EXITED (killed) takes the guest process with it (SIGKILL).
 */
#ifndef MOAT_VM_EXEC_H
#define MOAT_VM_EXEC_H

#include <stdint.h>

#include "error.h"
#include "exec.h"
#include "oci-config.h"

#define MOAT_VM_EXEC_SOCKET "vm-exec.sock"

/* The bounds the supervisor holds a request to (the client is moat, but the socket is the
 * boundary between the host's root and the jail's unprivileged supervisor). */
#define MOAT_VM_EXEC_MAX_REQUEST (1 << 20)
#define MOAT_VM_EXEC_MAX_CLIENTS 64

/* A request: this header, then json_len bytes of an OCI process, fds in SCM_RIGHTS. */
struct moat_vm_exec_request {
	uint32_t magic;
	uint32_t json_len;
};
#define MOAT_VM_EXEC_MAGIC 0x6d6f6174u /* "moat" */

enum moat_vm_exec_reply_type {
	MOAT_VM_REPLY_STARTED = 1,
	MOAT_VM_REPLY_EXITED,
	MOAT_VM_REPLY_ERROR
};

struct moat_vm_exec_reply {
	uint32_t type;
	int32_t value;     /* EXITED: the exit code */
	char message[512]; /* ERROR: one line */
};

/* From the client after STARTED: deliver signo to the guest process. */
struct moat_vm_exec_signal {
	uint32_t magic;
	int32_t signo;
};
#define MOAT_VM_EXEC_SIGNAL_MAGIC 0x7369676eu /* "sign" */

/* The listening socket, bound in the state directory (dirfd). */
int moat_vm_exec_listen(int state_dirfd, int *ret_fd, moat_error *err);

/* The client: run o->process in the microVM container whose state directory is dirfd. */
int moat_vm_exec(const struct moat_exec_opts *o, int state_dirfd, int *ret_status, moat_error *err);

#endif
