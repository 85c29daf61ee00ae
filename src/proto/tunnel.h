/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the egress tunnel, a microVM's way to its egress proxy (docs/egress.md).
 *
 * A microVM with egress rules gets a second virtio-serial port, `moat.egress`. In the
 * guest, the agent's tunnel process listens on 127.0.0.1:3128, where the workload's
 * HTTP_PROXY points, and carries each connection accepted there over the port. On the
 * host, the supervisor's tunnel process opens a connection to the proxy's listening
 * socket for each (127.0.0.1:3128 in the container's network namespace, the same socket a
 * container-mode sandbox's processes connect to) and relays. The guest gets no network
 * device: the port carries bytes, the proxy decides where they may go.
 *
 * This file is shared by both sides. Both run moat_tunnel_run, each in a process of its
 * own; everything the peer sends is hostile input and checked against the limits below.
 *
 * FRAMES
 *   offset 0  u32  payload length (little-endian), at most MOAT_TUNNEL_MAX_DATA
 *   offset 4  u8   type (MOAT_TUNNEL_*)
 *   offset 5  u32  id: the connection (non-zero)
 *   offset 9       payload
 *   OPEN   (1, guest -> host, no payload) a connection was accepted; its id is above every
 *          id the guest used before, so an id is never reused.
 *   DATA   (2, payload 1..MOAT_TUNNEL_MAX_DATA bytes) bytes of the connection. A sender
 *          has at most MOAT_TUNNEL_WINDOW bytes of a connection unacknowledged.
 *   CREDIT (3, payload u32 1..MOAT_TUNNEL_WINDOW) the receiver wrote that many of the
 *          connection's bytes to its socket.
 *   EOF    (4, no payload) the sender will send no more DATA (its socket said end of
 *          file); the receiver shuts its socket's write side once what it holds is out.
 *          A connection whose both sides sent EOF and whose bytes are all out is gone.
 *   CLOSE  (5, no payload) the connection is gone (a reset, an error, the host could not
 *          reach the proxy, too many connections): nothing more is sent for it.
 * Frames for a connection that is gone are dropped: they may cross its CLOSE. Anything
 * else out of bounds (a length over the limit, an unknown type, a payload of the wrong
 * size, DATA beyond the window, CREDIT beyond what was sent, an OPEN from the host or with
 * an id not above the last) breaks the stream: the tunnel ends, and every connection with
 * it. The proxy's own limits (connections, bytes, time) apply behind the host's end.
 */
#ifndef MOAT_PROTO_TUNNEL_H
#define MOAT_PROTO_TUNNEL_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The guest's port, by name. */
#define MOAT_TUNNEL_PORT_NAME "moat.egress"

enum {
	MOAT_TUNNEL_HEADER_SIZE = 9,
	/* One pipe buffer, as the agent's port: no connection holds the port for long. */
	MOAT_TUNNEL_MAX_DATA = 64 << 10,
	/* Unacknowledged bytes per connection and direction: what a receiver buffers for a
	 * socket that does not read, and enough to keep a transfer moving under TCG. */
	MOAT_TUNNEL_WINDOW = 256 << 10,
	/* Connections at once: the proxy's own bound (MOAT_EGRESS_MAX_CONNECTIONS); with the
	 * window, at most 8 MiB buffered towards sockets. */
	MOAT_TUNNEL_MAX_CONNECTIONS = 32,
	/* Frames queued for the port above which no socket is read, and above which the port
	 * is not read either (a peer that sends but never reads cannot grow the queue). */
	MOAT_TUNNEL_OUT_HIGH = 256 << 10,
	MOAT_TUNNEL_OUT_LIMIT = 1 << 20,
	/* Bytes written to a socket before a CREDIT goes back (also when its queue empties). */
	MOAT_TUNNEL_CREDIT_BATCH = 16 << 10,
};

enum moat_tunnel_type {
	MOAT_TUNNEL_OPEN = 1,
	MOAT_TUNNEL_DATA = 2,
	MOAT_TUNNEL_CREDIT = 3,
	MOAT_TUNNEL_EOF = 4,
	MOAT_TUNNEL_CLOSE = 5,
};

struct moat_tunnel_frame {
	uint8_t type;
	uint32_t id;
	const uint8_t *payload;
	uint32_t len;
	uint32_t credit; /* CREDIT's value */
};

/* Decode the frame at buf[0..len): 1 with *ret filled (payload points into buf) and
 * *ret_used its size, 0 when it is not complete yet, a negative errno when it breaks the
 * stream (err says how). Checks the frame alone; the window and the ids are moat_tunnel_run's. */
int moat_tunnel_decode(const uint8_t *buf, size_t len, struct moat_tunnel_frame *ret,
		       size_t *ret_used, moat_error *err);

/* One end of the tunnel. The guest's has listen_fd (its accepted connections are sent
 * OPEN); the host's has target, where each OPEN is connected to. */
struct moat_tunnel_end {
	int port_fd;   /* the port (guest) or the socket QEMU's chardev is on (host) */
	int listen_fd; /* guest: listening socket; host: -1 */
	const struct sockaddr_in *target; /* host: the proxy; guest: NULL */
};

/* Relay until the port closes (0) or the peer breaks the stream (-1, err says how). Takes
 * over the fds; ignores SIGPIPE. */
int moat_tunnel_run(const struct moat_tunnel_end *end, moat_error *err);

#endif
