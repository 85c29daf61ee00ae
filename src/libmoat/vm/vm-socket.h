/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the microVM supervisor's socket, how the rest of moat reaches the guest.
 *
 * A microVM's processes have no host pid and no host namespaces to join, so whatever acts on
 * them asks the container's supervisor: it connects to the unix socket MOAT_VM_SOCKET in the
 * state directory (made by create, mode 0600, root's; the supervisor holds its listening end)
 * and sends one request:
 *
 *   EXEC       run a process in the guest: `moat exec` (vm-exec.h). The body is the OCI
 *              process (JSON, held to the policy like any exec); the name, when not empty,
 *              is the pod member whose container it runs in (the VM's own otherwise).
 *   CONTAINER  make a pod member's container in the guest and run its process: what the
 *              member's init on the host sends at start (vm-member.h). The body is the
 *              CONTAINER frame of proto.h, the name the member's id (the frame's name).
 *   FREEZE     freeze (value 1) or thaw (value 0) a pod member's processes in the guest:
 *              `moat pause` and `resume` of a member. No body.
 *   UPDATE     new limits for the workload's container in the guest: `moat update`. The
 *              body is the UPDATE frame of proto.h.
 *   STATS      what a container's cgroup in the guest has counted (proto.h USAGE): the
 *              name, when not empty, is the pod member whose container (the VM's own
 *              otherwise). No body. Before the VM's own workload has started (the guest
 *              boots for the first exec), nothing has run in it: all 0.
 *
 * EXEC and CONTAINER pass the process's stdin, stdout and stderr in SCM_RIGHTS and read
 * back replies: STARTED (the guest pid), then EXITED with the exit code, or ERROR. The
 * supervisor relays between those fds and the guest for as long as the process lives; a
 * process on a terminal gets the guest's pty, and the size of the terminal its fds are
 * follows it. After STARTED the client may send SIGNAL messages: each signal goes to the
 * guest process. A client that goes away without EXITED (killed) takes its guest process
 * with it (SIGKILL); for a CONTAINER, its whole container. FREEZE and UPDATE read back DONE
 * or ERROR, STATS USAGE or ERROR. A container has one FREEZE, UPDATE or STATS under way at a
 * time: the guest's ERROR names the container, not the request.
 *
 * The supervisor holds each request to bounds (the client is moat, but the socket is the
 * boundary between the host's root and the jail's unprivileged supervisor).
 */
#ifndef MOAT_VM_SOCKET_H
#define MOAT_VM_SOCKET_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "proto.h"

#define MOAT_VM_SOCKET "vm-exec.sock"

/* The largest body (a process's JSON, a CONTAINER frame) and name. */
#define MOAT_VM_MAX_REQUEST (1 << 20)
#define MOAT_VM_MAX_NAME 255
/* Requests the supervisor holds at once (processes running, members waiting for start). */
#define MOAT_VM_MAX_CLIENTS 64

enum moat_vm_request_kind {
	MOAT_VM_REQ_EXEC = 1,
	MOAT_VM_REQ_CONTAINER,
	MOAT_VM_REQ_FREEZE,
	MOAT_VM_REQ_UPDATE,
	MOAT_VM_REQ_STATS,
};

/* A request: this header, then name_len bytes of the name, then body_len bytes of body. */
struct moat_vm_request {
	uint32_t magic;
	uint32_t kind;
	uint32_t name_len;
	uint32_t body_len;
	uint32_t value; /* FREEZE: 1 freeze, 0 thaw */
};
#define MOAT_VM_REQUEST_MAGIC 0x32746f6du /* "mot2" */

enum moat_vm_reply_type {
	MOAT_VM_REPLY_STARTED = 1,
	MOAT_VM_REPLY_EXITED,
	MOAT_VM_REPLY_ERROR,
	MOAT_VM_REPLY_DONE,
	MOAT_VM_REPLY_USAGE,
};

struct moat_vm_reply {
	uint32_t type;
	int32_t value;     /* STARTED: the guest pid; EXITED: the exit code; ERROR: an errno */
	char message[512]; /* ERROR: one line */
	struct moat_msg_usage usage; /* USAGE: as the guest sent it */
};

/* From the client after STARTED: deliver signo to the guest process. */
struct moat_vm_signal {
	uint32_t magic;
	int32_t signo;
};
#define MOAT_VM_SIGNAL_MAGIC 0x7369676eu /* "sign" */

/* The listening socket, bound in the state directory (dirfd). */
int moat_vm_socket_listen(int state_dirfd, int *ret_fd, moat_error *err);
/* A connection to the supervisor of the microVM whose state directory is dirfd. */
int moat_vm_socket_connect(int state_dirfd, int *ret_fd, moat_error *err);

/* The client's side: one request (fds: n_fds of them, 0 or 3). */
int moat_vm_request_send(int conn, enum moat_vm_request_kind kind, const char *name,
			 const void *body, size_t body_len, uint32_t value, const int *fds,
			 size_t n_fds, moat_error *err);
/* The supervisor's next reply; its message (text from a less trusted process) cut and cleaned
 * before anyone prints it. */
int moat_vm_reply_read(int conn, struct moat_vm_reply *r, moat_error *err);
/* After STARTED: until the next reply, each signal of forward this process gets goes to the
 * guest process. *r is that reply. */
int moat_vm_reply_wait(int conn, const sigset_t *forward, struct moat_vm_reply *r, moat_error *err);

/* FREEZE: the pod member's processes in the guest of the microVM whose state directory is
 * dirfd frozen or thawed, once the guest says it is done. */
int moat_vm_freeze(int state_dirfd, const char *member, bool frozen, moat_error *err);
/* UPDATE: the container in the guest of the microVM whose state directory is dirfd, the pod
 * member's (member) or the VM's own (member ""), held to r (absent: no limit), once the guest
 * says it is done. */
int moat_vm_update(int state_dirfd, const char *member, const struct moat_proto_resources *r,
		   moat_error *err);
/* STATS: what the cgroup of the container in the guest of the microVM whose state directory is
 * dirfd has counted: the pod member's (member), or the VM's own (member ""). */
int moat_vm_stats(int state_dirfd, const char *member, struct moat_msg_usage *ret, moat_error *err);

/* The supervisor's side: a request from conn, with its name and body (NUL-terminated, both
 * allocated) and its fds (-1 for those not passed). -EPROTO when it breaks the bounds. */
int moat_vm_request_recv(int conn, struct moat_vm_request *ret, char **ret_name, char **ret_body,
			 int fds[3]);
/* A reply on conn; -1 when the client went away. */
int moat_vm_reply_send(int conn, enum moat_vm_reply_type type, int32_t value, const char *message);
/* USAGE on conn; -1 when the client went away. */
int moat_vm_reply_usage(int conn, const struct moat_msg_usage *u);

#endif
