/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the egress tunnel (see tunnel.h for the format): one poll loop over the port, the
 * guest's listening socket and the connections, without blocking anywhere. */
#include "tunnel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "utils.h"

struct conn {
	uint32_t id;
	int fd;
	bool connecting;         /* host: the connect to the proxy is under way */
	struct moat_buf to_sock; /* the peer's DATA, not yet written to fd */
	uint32_t unacked;        /* DATA sent, not yet credited by the peer */
	uint32_t received;       /* DATA received, not yet credited back */
	uint32_t to_credit;      /* of those, written to fd */
	bool sock_eof, peer_eof; /* end of file read from fd / EOF from the peer */
	bool write_shut;         /* fd's write side is shut (after peer_eof, all written) */
};

struct tunnel {
	const struct moat_tunnel_end *end;
	struct moat_buf in, out; /* from and to the port */
	struct conn *conns[MOAT_TUNNEL_MAX_CONNECTIONS];
	size_t n;
	uint32_t last_id;
	bool port_closed;
};

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The payload size each type must have: -1 for DATA's 1..MAX_DATA. */
static int payload_size(uint8_t type)
{
	switch (type) {
	case MOAT_TUNNEL_OPEN:
	case MOAT_TUNNEL_EOF:
	case MOAT_TUNNEL_CLOSE: return 0;
	case MOAT_TUNNEL_CREDIT: return 4;
	case MOAT_TUNNEL_DATA: return -1;
	default: return -2;
	}
}

int moat_tunnel_decode(const uint8_t *buf, size_t len, struct moat_tunnel_frame *ret,
		       size_t *ret_used, moat_error *err)
{
	uint32_t n;
	int want;

	if (len < MOAT_TUNNEL_HEADER_SIZE)
		return 0;
	n = get_u32(buf);
	if (n > MOAT_TUNNEL_MAX_DATA)
		return moat_error_msg(err, EPROTO,
				      "egress tunnel: a frame of %u bytes (at most %d)", n,
				      MOAT_TUNNEL_MAX_DATA);
	want = payload_size(buf[4]);
	if (want == -2)
		return moat_error_msg(err, EPROTO, "egress tunnel: frame type %u", buf[4]);
	if ((want >= 0 && n != (uint32_t)want) || (want == -1 && n == 0))
		return moat_error_msg(err, EPROTO,
				      "egress tunnel: a frame of type %u with %u bytes", buf[4], n);
	if (get_u32(buf + 5) == 0)
		return moat_error_msg(err, EPROTO, "egress tunnel: connection id 0");
	if (len < MOAT_TUNNEL_HEADER_SIZE + (size_t)n)
		return 0;
	*ret = (struct moat_tunnel_frame){ .type = buf[4],
					   .id = get_u32(buf + 5),
					   .payload = buf + MOAT_TUNNEL_HEADER_SIZE,
					   .len = n };
	if (ret->type == MOAT_TUNNEL_CREDIT) {
		ret->credit = get_u32(ret->payload);
		if (ret->credit == 0 || ret->credit > MOAT_TUNNEL_WINDOW)
			return moat_error_msg(err, EPROTO, "egress tunnel: a credit of %u bytes",
					      ret->credit);
	}
	*ret_used = MOAT_TUNNEL_HEADER_SIZE + n;
	return 1;
}

static void send_frame(struct tunnel *t, uint8_t type, uint32_t id, const void *p, uint32_t n)
{
	uint8_t h[MOAT_TUNNEL_HEADER_SIZE];

	put_u32(h, n);
	h[4] = type;
	put_u32(h + 5, id);
	moat_buf_append(&t->out, h, sizeof(h));
	moat_buf_append(&t->out, p, n);
}

static void send_credit(struct tunnel *t, struct conn *c)
{
	uint8_t v[4];

	put_u32(v, c->to_credit);
	send_frame(t, MOAT_TUNNEL_CREDIT, c->id, v, sizeof(v));
	c->received -= c->to_credit;
	c->to_credit = 0;
}

static struct conn *find(struct tunnel *t, uint32_t id, size_t *ret_index)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->conns[i]->id == id) {
			*ret_index = i;
			return t->conns[i];
		}
	return NULL;
}

static void drop(struct tunnel *t, size_t i)
{
	struct conn *c = t->conns[i];

	close(c->fd);
	moat_buf_free(&c->to_sock);
	free(c);
	t->conns[i] = t->conns[--t->n];
}

/* The connection failed on this side: the peer hears CLOSE. */
static void abort_conn(struct tunnel *t, size_t i)
{
	send_frame(t, MOAT_TUNNEL_CLOSE, t->conns[i]->id, NULL, 0);
	drop(t, i);
}

static void add_conn(struct tunnel *t, uint32_t id, int fd, bool connecting)
{
	struct conn *c = xcalloc(1, sizeof(*c));

	c->id = id;
	c->fd = fd;
	c->connecting = connecting;
	t->conns[t->n++] = c;
}

/* Host: OPEN becomes a connection to the proxy, or CLOSE when it cannot. */
static int on_open(struct tunnel *t, uint32_t id, moat_error *err)
{
	int fd;

	if (t->end->target == NULL)
		return moat_error_msg(err, EPROTO, "egress tunnel: OPEN from the host");
	if (id <= t->last_id)
		return moat_error_msg(err, EPROTO,
				      "egress tunnel: OPEN of connection %u, not above %u", id,
				      t->last_id);
	t->last_id = id;
	if (t->n == MOAT_TUNNEL_MAX_CONNECTIONS) {
		send_frame(t, MOAT_TUNNEL_CLOSE, id, NULL, 0);
		return 0;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 &&
	    connect(fd, (const struct sockaddr *)t->end->target, sizeof(*t->end->target)) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		send_frame(t, MOAT_TUNNEL_CLOSE, id, NULL, 0);
		return 0;
	}
	add_conn(t, id, fd, true);
	return 0;
}

static int on_frame(struct tunnel *t, const struct moat_tunnel_frame *f, moat_error *err)
{
	size_t i;
	struct conn *c;

	if (f->type == MOAT_TUNNEL_OPEN)
		return on_open(t, f->id, err);
	c = find(t, f->id, &i);
	if (c == NULL)
		return 0; /* gone: the frame crossed its CLOSE */
	switch (f->type) {
	case MOAT_TUNNEL_DATA:
		if (c->peer_eof || c->received + f->len > MOAT_TUNNEL_WINDOW)
			return moat_error_msg(err, EPROTO, "egress tunnel: connection %u: DATA %s",
					      c->id,
					      c->peer_eof ? "after EOF" : "beyond the window");
		c->received += f->len;
		moat_buf_append(&c->to_sock, f->payload, f->len);
		return 0;
	case MOAT_TUNNEL_CREDIT:
		if (f->credit > c->unacked)
			return moat_error_msg(err, EPROTO,
					      "egress tunnel: connection %u: a credit of %u bytes, "
					      "%u sent",
					      c->id, f->credit, c->unacked);
		c->unacked -= f->credit;
		return 0;
	case MOAT_TUNNEL_EOF: c->peer_eof = true; return 0;
	default: drop(t, i); return 0; /* CLOSE */
	}
}

/* hup: poll said the port hung up, so nothing to read means it is closed. */
static int read_port(struct tunnel *t, bool hup, moat_error *err)
{
	uint8_t buf[MOAT_TUNNEL_MAX_DATA];
	ssize_t n = read(t->end->port_fd, buf, sizeof(buf));
	struct moat_tunnel_frame f;
	size_t used = 0, at = 0;
	int r;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		t->port_closed = true;
		return 0;
	}
	if (n < 0) {
		t->port_closed = hup;
		return 0;
	}
	moat_buf_append(&t->in, buf, (size_t)n);
	while ((r = moat_tunnel_decode(t->in.data + at, t->in.len - at, &f, &used, err)) == 1) {
		if (on_frame(t, &f, err) < 0)
			return -1;
		at += used;
	}
	moat_buf_consume(&t->in, at);
	return r;
}

static void write_port(struct tunnel *t)
{
	ssize_t n = write(t->end->port_fd, t->out.data, t->out.len);

	if (n > 0)
		moat_buf_consume(&t->out, (size_t)n);
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		t->port_closed = true;
}

/* Guest: a new connection from the workload. */
static void accept_conn(struct tunnel *t)
{
	int fd = accept4(t->end->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (t->n == MOAT_TUNNEL_MAX_CONNECTIONS || t->last_id == UINT32_MAX) {
		close(fd);
		return;
	}
	add_conn(t, ++t->last_id, fd, false);
	send_frame(t, MOAT_TUNNEL_OPEN, t->last_id, NULL, 0);
}

/* Bytes from the socket become DATA, within the window; end of file becomes EOF. */
static bool read_sock(struct tunnel *t, struct conn *c)
{
	uint8_t buf[MOAT_TUNNEL_MAX_DATA];
	size_t room = MOAT_TUNNEL_WINDOW - c->unacked;
	ssize_t n;

	/* a hang-up is reported with a full window too: reading 0 bytes is no end of file */
	if (room == 0)
		return true;
	n = read(c->fd, buf, room < sizeof(buf) ? room : sizeof(buf));
	if (n > 0) {
		c->unacked += (uint32_t)n;
		send_frame(t, MOAT_TUNNEL_DATA, c->id, buf, (uint32_t)n);
	} else if (n == 0) {
		c->sock_eof = true;
		send_frame(t, MOAT_TUNNEL_EOF, c->id, NULL, 0);
	} else if (errno != EAGAIN && errno != EINTR) {
		return false;
	}
	return true;
}

/* The peer's bytes go out to the socket and are credited back; after its EOF, the write
 * side is shut. */
static bool write_sock(struct tunnel *t, struct conn *c)
{
	if (c->to_sock.len > 0) {
		ssize_t n = send(c->fd, c->to_sock.data, c->to_sock.len, MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		moat_buf_consume(&c->to_sock, (size_t)n);
		c->to_credit += (uint32_t)n;
	}
	if (c->to_credit >= MOAT_TUNNEL_CREDIT_BATCH || (c->to_credit > 0 && c->to_sock.len == 0))
		send_credit(t, c);
	if (c->peer_eof && c->to_sock.len == 0 && !c->write_shut) {
		shutdown(c->fd, SHUT_WR);
		c->write_shut = true;
	}
	return true;
}

/* Host: the connect to the proxy finished. */
static bool connected(struct conn *c)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e != 0)
		return false;
	c->connecting = false;
	return true;
}

static short conn_events(const struct tunnel *t, const struct conn *c)
{
	short ev = 0;

	if (c->connecting)
		return POLLOUT;
	if (!c->sock_eof && c->unacked < MOAT_TUNNEL_WINDOW && t->out.len < MOAT_TUNNEL_OUT_HIGH)
		ev |= POLLIN;
	if (c->to_sock.len > 0)
		ev |= POLLOUT;
	return ev;
}

/* What one connection's poll result asks for; false when it is to be dropped (aborted,
 * or done: both ends said EOF and everything is out). */
static bool serve_conn(struct tunnel *t, size_t i, short revents)
{
	struct conn *c = t->conns[i];

	if (c->connecting) {
		if (revents == 0)
			return true;
		if (!connected(c)) {
			abort_conn(t, i);
			return false;
		}
	}
	if (((revents & (POLLIN | POLLHUP)) && !c->sock_eof && !read_sock(t, c)) ||
	    !write_sock(t, c) || (revents & POLLERR)) {
		abort_conn(t, i);
		return false;
	}
	if (c->sock_eof && c->write_shut) {
		drop(t, i);
		return false;
	}
	/* hung up both ways before the peer's bytes or EOF could go out */
	if ((revents & POLLHUP) && c->sock_eof) {
		abort_conn(t, i);
		return false;
	}
	return true;
}

static size_t watch(const struct tunnel *t, struct pollfd *p)
{
	size_t n = 0;

	p[n++] =
		(struct pollfd){ .fd = t->end->port_fd,
				 .events =
					 (short)((t->out.len < MOAT_TUNNEL_OUT_LIMIT ? POLLIN : 0) |
						 (t->out.len > 0 ? POLLOUT : 0)) };
	p[n++] = (struct pollfd){ .fd = t->end->listen_fd >= 0 && t->n < MOAT_TUNNEL_MAX_CONNECTIONS
						? t->end->listen_fd
						: -1,
				  .events = POLLIN };
	/* a connection nothing is wanted from is not polled: its hang-up would wake the loop
	 * again and again while its window is full */
	for (size_t i = 0; i < t->n; i++) {
		short ev = conn_events(t, t->conns[i]);

		p[n++] = (struct pollfd){ .fd = ev ? t->conns[i]->fd : -1, .events = ev };
	}
	return n;
}

static int step(struct tunnel *t, moat_error *err)
{
	struct pollfd p[2 + MOAT_TUNNEL_MAX_CONNECTIONS];
	uint32_t ids[MOAT_TUNNEL_MAX_CONNECTIONS];
	size_t n = watch(t, p), before = t->n;

	for (size_t i = 0; i < t->n; i++)
		ids[i] = t->conns[i]->id;
	if (poll(p, n, -1) < 0)
		return errno == EINTR ? 0 : moat_error_set(err, errno, "egress tunnel: poll");
	/* the port first, so what it brought goes out to the sockets in the same round */
	if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
	    read_port(t, (p[0].revents & (POLLHUP | POLLERR)) != 0, err) < 0)
		return -1;
	/* by id: dropping a connection moves another into its slot */
	for (size_t k = 0; k < before; k++) {
		size_t i;

		if (find(t, ids[k], &i) != NULL)
			serve_conn(t, i, p[2 + k].revents);
	}
	if (p[1].revents & POLLIN)
		accept_conn(t);
	if (t->out.len > 0)
		write_port(t);
	return 0;
}

int moat_tunnel_run(const struct moat_tunnel_end *end, moat_error *err)
{
	struct tunnel t = { .end = end };
	int r = 0;

	signal(SIGPIPE, SIG_IGN);
	fcntl(end->port_fd, F_SETFL, fcntl(end->port_fd, F_GETFL) | O_NONBLOCK);
	if (end->listen_fd >= 0)
		fcntl(end->listen_fd, F_SETFL, fcntl(end->listen_fd, F_GETFL) | O_NONBLOCK);
	while (!t.port_closed && (r = step(&t, err)) == 0)
		;
	while (t.n > 0)
		drop(&t, 0);
	moat_buf_free(&t.in);
	moat_buf_free(&t.out);
	close(end->port_fd);
	if (end->listen_fd >= 0)
		close(end->listen_fd);
	return r < 0 ? -1 : 0;
}
