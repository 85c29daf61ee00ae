/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the messages moat and the processes it forks exchange while a
 * container is built. One SOCK_SEQPACKET socket pair; every message is one
 * fixed-size record, so a read never sees half a message. */
#ifndef MOAT_SYNC_H
#define MOAT_SYNC_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

enum moat_sync_type {
	MOAT_SYNC_USERNS_READY = 1, /* stage 1 -> parent: write my id maps */
	MOAT_SYNC_USERNS_MAPPED,    /* parent -> stage 1, or to the direct init */
	MOAT_SYNC_INIT_PID,         /* stage 1 -> parent: value = container init pid; the init
				     * moat cloned itself (init.h moat_init_direct) -> parent,
				     * first: value 0, it is in the cgroups */
	MOAT_SYNC_CGROUP_DONE,      /* parent -> init: you are in the cgroup */
	MOAT_SYNC_READY,            /* init -> parent: set up, waiting for start */
	MOAT_SYNC_ERROR,            /* child -> parent: code + message, then exits */
	MOAT_SYNC_CONSOLE,          /* init -> parent: the pty master, as SCM_RIGHTS */
	MOAT_SYNC_SECCOMP_FD,       /* init -> parent: the seccomp listener fd (SCMP_ACT_NOTIFY) */
	MOAT_SYNC_MOUNT_FD,         /* parent -> init: value = mounts[] index, fd = its
				     * idmapped source, before CGROUP_DONE */
	MOAT_SYNC_SECCOMP_PASSED,   /* parent -> exec'd process: the listener has the fd; only
				     * now may the process exec */
	MOAT_SYNC_NET_FD,           /* parent -> init (microVM): network.json of the interfaces
				     * a hook gave the namespace, before CGROUP_DONE */
	MOAT_SYNC_TAP_FD,           /* parent -> init (microVM): value = its index there, fd =
				     * its tap, after NET_FD */
	MOAT_SYNC_SNAPSHOT_FD,      /* parent -> init (microVM, vm-snapshot.h), before
				     * CGROUP_DONE: value 0, the snapshot to restore (read-only),
				     * msg its path; then, while it is being made, value 1: its
				     * writable end, to save into before READY */
	MOAT_SYNC_COMMIT,           /* parent -> init, after READY: the state is saved, the
				     * container is on its own; EOF instead: moat died first. The
				     * init answers by closing its end, its death signal cleared */
};

/* Long enough for a chained error naming two paths. */
#define MOAT_SYNC_MSG_MAX 2048

struct moat_sync_msg {
	int32_t type;
	int32_t code;
	int64_t value;
	char msg[MOAT_SYNC_MSG_MAX];
};

int moat_sync_pair(int ret_fds[2], moat_error *err);
/* In a child forked (or cloned with CLONE_PARENT) by parent to talk over a sync pair: die
 * with the parent (PR_SET_PDEATHSIG, and at once if parent is already gone, which the death
 * signal would miss; 0: not known, as to PID 1 of a new PID namespace, whose parent is
 * outside it), and close parent_end, the parent's end of the pair, so that the parent's
 * death is EOF on ours, also to a process that no longer has the death signal (changing
 * credentials clears it). parent_end -1: already closed. */
void moat_sync_child_attach(pid_t parent, int parent_end);
int moat_sync_send(int fd, enum moat_sync_type type, int64_t value, moat_error *err);
/* Report an error to the parent; used by a child just before it exits. */
void moat_sync_send_error(int fd, const moat_error *err);
/* Receive the next message, whatever its type; with ret_fd, the fd it carried (-1: none),
 * which the caller owns. A MOAT_SYNC_ERROR becomes err; EOF means the peer died. */
int moat_sync_recv(int fd, struct moat_sync_msg *m, int *ret_fd, moat_error *err);
/* Wait for a message of the given type. A MOAT_SYNC_ERROR from the peer is
 * turned into err (the child's own message); EOF means the peer died. */
int moat_sync_expect(int fd, enum moat_sync_type type, int64_t *ret_value, moat_error *err);

/* Wait until the peer has closed its end (or died): nothing is received but EOF. */
void moat_sync_wait_closed(int fd);

/* Pass an fd with a message (SCM_RIGHTS), and receive it. */
int moat_sync_send_fd(int fd, enum moat_sync_type type, int64_t value, int passed_fd,
		      moat_error *err);
/* And with text (a path: shorter than MOAT_SYNC_MSG_MAX) in the message's msg. */
int moat_sync_send_fd_text(int fd, enum moat_sync_type type, int64_t value, int passed_fd,
			   const char *text, moat_error *err);
int moat_sync_expect_fd(int fd, enum moat_sync_type type, int *ret_fd, moat_error *err);

/* Send fd over a unix socket at path: the --console-socket protocol, which
 * containerd, conmon and runc's recvtty speak: one message whose payload is
 * a name and whose control data carries the fd. */
int moat_send_fd_to_socket(const char *path, int passed_fd, const char *name, moat_error *err);

#endif
