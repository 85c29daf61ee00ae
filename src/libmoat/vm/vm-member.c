/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what a pod member's init becomes (vm-member.h). */
#include "vm-member.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <termios.h>
#include <unistd.h>

#include "utils.h"
#include "vm-socket.h"

/* On a terminal the guest's pty does the line discipline: this side passes bytes through. */
static void raw_terminal(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
}

/* Every signal goes to the container, but those that cannot be caught and those that are
 * this process's own business (a child, a write to a closed socket). */
static void forwarded(sigset_t *set)
{
	sigfillset(set);
	sigdelset(set, SIGKILL);
	sigdelset(set, SIGSTOP);
	sigdelset(set, SIGCHLD);
	sigdelset(set, SIGPIPE);
}

/* The CONTAINER frame: the member's message, its binds where its jail made them. */
static int container_frame(const struct moat_vm_session *s, struct moat_buf *out, moat_error *err)
{
	struct moat_msg m = { .type = MOAT_MSG_CONTAINER, .id = 1 };
	int r;

	/* the supervisor gives it the id of its own choosing */
	m.u.start = moat_vm_start_message(s);
	r = moat_proto_encode(MOAT_PEER_HOST, &m, out, err);
	moat_vm_start_message_free(&m.u.start);
	return r;
}

static int start_container(const struct moat_vm_session *s, int started_fd,
			   struct moat_vm_reply *r, moat_error *err)
{
	static const int stdio[3] = { 0, 1, 2 };
	struct moat_buf frame = { 0 };
	sigset_t set;
	int rc;

	rc = container_frame(s, &frame, err);
	if (rc == 0)
		rc = moat_vm_request_send(s->pod_conn, MOAT_VM_REQ_CONTAINER, s->start.name,
					  frame.data, frame.len, 0, stdio, 3, err);
	moat_buf_free(&frame);
	if (rc < 0 || moat_vm_reply_read(s->pod_conn, r, err) < 0)
		return moat_error_ret(err);
	/* `moat start` returns now: the process runs in the guest (or never will) */
	write_all(started_fd, "0", 1);
	close(started_fd);
	if (r->type != MOAT_VM_REPLY_STARTED)
		return 0;
	forwarded(&set);
	return moat_vm_reply_wait(s->pod_conn, &set, r, err);
}

int moat_vm_member_run(const struct moat_vm_session *s, bool terminal, int started_fd)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_vm_reply r;

	/* QEMU of the pod runs as the same uid: it may not ptrace or read this process, which
	 * speaks for the container */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (terminal)
		raw_terminal(0);
	if (start_container(s, started_fd, &r, &err) < 0) {
		fprintf(stderr, "moat: pod %s: %s\n", s->start.name, err.msg);
		moat_error_clear(&err);
		return 125;
	}
	if (r.type == MOAT_VM_REPLY_EXITED)
		return r.value;
	fprintf(stderr, "moat: %s\n", r.message);
	return r.type == MOAT_VM_REPLY_ERROR && r.value == ENOENT ? 127 : 126;
}
