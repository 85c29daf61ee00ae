/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat agent: the port and the processes' stdio.
 *
 * Frames for the host queue in a->out and are written as the port takes
 * them; nothing here blocks. Output is read from a process only while the
 * queue is short (the event loop's decision), one DATA frame per read, so a
 * host that stops reading stops the process. Stdin is queued per process up
 * to MOAT_PROTO_STDIN_WINDOW and acknowledged with CREDIT as the process
 * reads it.
 *
 * A process's output goes to the port without a copy when nothing is queued:
 * its pipe's buffers are spliced to a staging pipe of the agent's, the
 * frame's prefix is written, and the staged bytes are spliced to the port,
 * whose driver (virtio_console) hands the pages to the host. Under TCG each
 * copy in the guest is emulated, and reading, framing, checking and writing
 * made four (contrib/bench/relay-bench.sh). Staged bytes the port cannot
 * take yet go before anything else is written.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "utils.h"

/* virtio_console takes at most this much per write. */
#define PORT_WRITE_MAX (32 << 10)
#define PORT_READ_MAX (64 << 10)

void agent_close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

void agent_send(struct agent *a, const struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;

	if (moat_proto_encode(MOAT_PEER_GUEST, m, &a->out, &err) < 0)
		agent_log("not sent: %s", err.msg);
	moat_error_clear(&err);
}

void agent_send_error(struct agent *a, uint32_t id, int errnum, const char *fmt, ...)
{
	struct moat_msg m = { .type = MOAT_MSG_ERROR, .id = id };
	char *text = NULL, clean[MOAT_PROTO_MAX_MESSAGE + 1];
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	moat_proto_sanitize_text(clean, sizeof(clean), text ? text : "out of memory");
	free(text);
	if (clean[0] == '\0')
		snprintf(clean, sizeof(clean), "error");
	agent_log("process %u: %s", id, clean);
	m.u.error.message = clean;
	if (errnum > 0 && errnum <= MOAT_PROTO_MAX_ERRNO) {
		m.u.error.has_errno = true;
		m.u.error.errnum = (uint32_t)errnum;
	}
	agent_send(a, &m);
}

bool agent_queued(const struct agent *a)
{
	return a->out.len > 0 || a->staged > 0;
}

void agent_drop_queued(struct agent *a)
{
	a->out.len = 0;
	a->staged = 0;
	a->no_splice = true; /* the staging pipe may still hold bytes: never used again */
}

/* The staging pipe's bytes, read into buf (what a splice could not take). */
static void read_stage(struct agent *a, struct moat_buf *buf)
{
	while (a->staged > 0) {
		uint8_t chunk[4096];
		size_t want = a->staged < sizeof(chunk) ? a->staged : sizeof(chunk);
		ssize_t n = read(a->stage[0], chunk, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* only the agent writes it, and it holds them */
			agent_log("the staged output lost %zu bytes: the host's stream breaks",
				  a->staged);
			break;
		}
		moat_buf_append(buf, chunk, (size_t)n);
		a->staged -= (size_t)n;
	}
	a->staged = 0;
}

/* The port refused a splice: the staged bytes go in front of the queue, and output is
 * copied from now on. */
static void splice_failed(struct agent *a)
{
	struct moat_buf rest = { 0 };

	agent_log("splice to the port: %m; output is copied from now on");
	a->no_splice = true;
	read_stage(a, &rest);
	moat_buf_append(&rest, a->out.data, a->out.len);
	moat_buf_free(&a->out);
	a->out = rest;
}

/* The staged bytes the port takes now; false while some are left. Each splice asks for all
 * the staging pipe holds: virtio_console's splice sizes its list by the pipe's buffers, and
 * one that took fewer than all of them would overrun it (Linux 6.1's virtqueue walks the
 * list to its end). */
static bool splice_more(struct agent *a)
{
	while (a->staged > 0) {
		ssize_t n = splice(a->stage[0], NULL, a->port, NULL, a->staged,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n > 0) {
			a->staged -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return false;
		splice_failed(a);
	}
	return true;
}

void agent_flush(struct agent *a)
{
	size_t done = 0;

	if (!splice_more(a))
		return;

	/* Consumed once at the end: one move of what is left, not one a write. */
	while (done < a->out.len) {
		size_t n = a->out.len - done < PORT_WRITE_MAX ? a->out.len - done : PORT_WRITE_MAX;
		ssize_t w = write(a->port, a->out.data + done, n);

		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			agent_log("write to the port: %m");
		break;
	}
	moat_buf_consume(&a->out, done);
}

int agent_read_port(struct agent *a)
{
	static uint8_t buf[PORT_READ_MAX];
	ssize_t n = read(a->port, buf, sizeof(buf));

	if (n > 0) {
		moat_buf_append(&a->inb, buf, (size_t)n);
		return 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* virtio_console reads 0 when nobody holds the host's end. */
	if (n < 0)
		agent_log("read from the port: %m");
	return -EPIPE;
}

static void send_output(struct agent *a, struct proc *p, int which, const uint8_t *data, size_t len)
{
	struct moat_msg m = { .type = MOAT_MSG_OUTPUT, .id = p->id };

	m.u.data.stream = (uint8_t)(which + 1);
	m.u.data.data = (uint8_t *)data;
	m.u.data.len = len;
	agent_send(a, &m);
}

/* Up to MOAT_PROTO_MAX_DATA of p's output as one frame without a copy, when nothing is
 * queued: its pipe's buffers move to the staging pipe (the workload may add to its own pipe
 * meanwhile, never to that one), the prefix says how many bytes they hold, and they go on
 * to the port. true: done so (the port may still owe some: a->splice). */
static bool relay_spliced(struct agent *a, struct proc *p, int which)
{
	uint8_t prefix[MOAT_PROTO_OUTPUT_PREFIX];
	ssize_t n;

	if (p->terminal || a->no_splice || agent_queued(a))
		return false;
	n = splice(p->out_fd[which], NULL, a->stage[1], NULL, MOAT_PROTO_MAX_DATA,
		   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		a->no_splice = true;
	if (n <= 0)
		return false; /* the end, nothing yet, or an error: read() tells which */
	a->staged = (size_t)n;
	p->pending[which] -= (size_t)n < p->pending[which] ? (size_t)n : p->pending[which];
	moat_proto_output_prefix(prefix, p->id, (uint8_t)(which + 1), (uint32_t)n);
	/* virtio_console takes a write whole or not at all; not now: the frame is queued */
	if (write(a->port, prefix, sizeof(prefix)) != (ssize_t)sizeof(prefix)) {
		moat_buf_append(&a->out, prefix, sizeof(prefix));
		read_stage(a, &a->out);
		return true;
	}
	splice_more(a);
	return true;
}

void agent_relay_output(struct agent *a, struct proc *p, int which)
{
	static uint8_t buf[MOAT_PROTO_MAX_DATA];
	ssize_t n;

	if (relay_spliced(a, p, which))
		return;
	n = read(p->out_fd[which], buf, sizeof(buf));

	if (n > 0) {
		send_output(a, p, which, buf, (size_t)n);
		p->pending[which] -= (size_t)n < p->pending[which] ? (size_t)n : p->pending[which];
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* 0 for a pipe, EIO for a pty whose slave is closed: the end. */
	if (n < 0 && errno != EIO)
		agent_log("process %u: read output: %m", p->id);
	send_output(a, p, which, NULL, 0);
	agent_close_fd(&p->out_fd[which]);
	p->pending[which] = 0;
}

static void send_credit(struct agent *a, struct proc *p)
{
	while (p->credit > 0) {
		uint32_t n =
			p->credit < MOAT_PROTO_STDIN_WINDOW ? p->credit : MOAT_PROTO_STDIN_WINDOW;
		struct moat_msg m = { .type = MOAT_MSG_CREDIT, .id = p->id, .u.credit.bytes = n };

		agent_send(a, &m);
		p->credit -= n;
	}
}

void agent_queue_stdin(struct agent *a, struct proc *p, const uint8_t *data, size_t len)
{
	if (p->in_fd < 0 || p->in_close) {
		/* Stdin is closed: the bytes go nowhere, but the host gets its
		 * window back. */
		p->credit += (uint32_t)len;
		if (len > 0)
			agent_send_error(a, p->id, EPIPE, "stdin of process %u is closed", p->id);
		send_credit(a, p);
		return;
	}
	if (len == 0) {
		p->in_close = true;
	} else if (p->in.len + len > MOAT_PROTO_STDIN_WINDOW) {
		p->credit += (uint32_t)len;
		agent_send_error(a, p->id, ENOBUFS,
				 "stdin of process %u: %zu bytes over the window of %d, dropped",
				 p->id, len, MOAT_PROTO_STDIN_WINDOW);
		send_credit(a, p);
		return;
	} else {
		moat_buf_append(&p->in, data, len);
	}
	agent_write_stdin(a, p);
}

/* End of input: close the pipe; on a terminal, send its end-of-file
 * character instead (closing would hang the session up). */
static void close_stdin(struct proc *p)
{
	if (p->terminal && p->in_fd >= 0) {
		struct termios t;
		char eof = 4;

		if (tcgetattr(p->in_fd, &t) == 0 && t.c_cc[VEOF] != 0)
			eof = (char)t.c_cc[VEOF];
		if (write(p->in_fd, &eof, 1) < 0)
			agent_log("process %u: write end-of-file: %m", p->id);
	}
	agent_close_fd(&p->in_fd);
}

void agent_write_stdin(struct agent *a, struct proc *p)
{
	while (p->in.len > 0 && p->in_fd >= 0) {
		ssize_t n = write(p->in_fd, p->in.data, p->in.len);

		if (n > 0) {
			moat_buf_consume(&p->in, (size_t)n);
			p->credit += (uint32_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		/* The reader is gone (EPIPE): what is left is dropped. */
		p->credit += (uint32_t)p->in.len;
		p->in.len = 0;
		agent_close_fd(&p->in_fd);
	}
	if (p->in.len == 0 && p->in_close && p->in_fd >= 0)
		close_stdin(p);
	if (p->credit >= AGENT_CREDIT_BATCH || (p->in.len == 0 && p->credit > 0))
		send_credit(a, p);
}
