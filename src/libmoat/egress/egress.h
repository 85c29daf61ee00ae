/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: egress by name (docs/egress.md). A sandbox has no route out; the only way out is a
 * proxy moat runs on the host side, which lets through the host names and ports its rules
 * list, resolves them itself, refuses what resolves to a loopback, link-local or private
 * address unless the rule says so, and logs every attempt as one JSON line.
 *
 * egress-rules.c: the rules (--allow) and which one lets host:port through.
 * egress-request.c: a client's request head (CONNECT, or an absolute-form HTTP request).
 * egress-proxy.c: the proxy itself, a process serving one listening socket. */
#ifndef MOAT_EGRESS_H
#define MOAT_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "error.h"

/* What a rule lets through beyond public addresses. */
enum {
	MOAT_EGRESS_PRIVATE = 1 << 0,    /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 */
	MOAT_EGRESS_LOOPBACK = 1 << 1,   /* 127/8, ::1 */
	MOAT_EGRESS_LINK_LOCAL = 1 << 2, /* 169.254/16 (cloud metadata), fe80::/10 */
	MOAT_EGRESS_OTHER = 1 << 3,      /* never let through: 0/8, multicast, reserved */
};

/* One --allow: HOST[:PORT][+private][+loopback][+link-local]. HOST is a name, "*.NAME"
 * (any name below NAME, not NAME itself) or an IP literal ([v6] with a port); PORT
 * defaults to 443. */
struct moat_egress_rule {
	char *text; /* as given, for the log */
	char *host; /* lowercase, no trailing dot */
	bool wildcard, literal;
	uint16_t port;
	unsigned allow; /* MOAT_EGRESS_* beyond public addresses */
};

/* --resolve HOST=ADDRESS: the proxy's answer for HOST, instead of DNS (tests, pinning). */
struct moat_egress_pin {
	char *host;
	struct sockaddr_storage addr;
	socklen_t len;
};

/* --proxy-header HOST=Name: value: a header the proxy puts into plain-HTTP requests to
 * HOST (in place of the client's of that name), so the sandbox never holds the secret. */
struct moat_egress_header {
	char *host;
	char *line; /* "Name: value" */
	size_t name_len;
};

struct moat_egress_policy {
	struct moat_egress_rule *rules;
	size_t n_rules;
	struct moat_egress_pin *pins;
	size_t n_pins;
	struct moat_egress_header *headers;
	size_t n_headers;
	unsigned max_connections; /* at once, per sandbox */
	uint64_t max_bytes;       /* each way, per connection */
	unsigned connect_timeout_ms, idle_timeout_ms;
};

#define MOAT_EGRESS_MAX_CONNECTIONS 32
#define MOAT_EGRESS_MAX_BYTES (1ull << 30)
#define MOAT_EGRESS_CONNECT_TIMEOUT_MS 10000
#define MOAT_EGRESS_IDLE_TIMEOUT_MS 60000
#define MOAT_EGRESS_PORT 3128 /* where the proxy listens, on 127.0.0.1 inside the sandbox */

int moat_egress_rule_add(struct moat_egress_policy *p, const char *text, moat_error *err);
int moat_egress_pin_add(struct moat_egress_policy *p, const char *text, moat_error *err);
int moat_egress_header_add(struct moat_egress_policy *p, const char *text, moat_error *err);
void moat_egress_policy_clear(struct moat_egress_policy *p);
/* The head of a plain-HTTP request to host with the policy's headers for host put in
 * (allocated; *len its length), or NULL when there are none. */
char *moat_egress_add_headers(const struct moat_egress_policy *p, const char *host,
			      const char *head, size_t *len);

/* The rule that lets host:port through, or NULL with *why ("not-allowed", "port",
 * "ip-literal"). host is as the client asked (case and a trailing dot ignored). */
const struct moat_egress_rule *moat_egress_match(const struct moat_egress_policy *p,
						 const char *host, uint16_t port, const char **why);
/* 0 for a public address, else the MOAT_EGRESS_* class it falls in. */
unsigned moat_egress_class(const struct sockaddr *sa);

/* A client's request head. */
struct moat_egress_request {
	bool tunnel; /* CONNECT: a byte tunnel after "200" */
	char host[256];
	uint16_t port;
	char *head;      /* plain HTTP: the head to send upstream (origin form), allocated */
	size_t head_len; /* its length */
	size_t consumed; /* bytes of the buffer the client's head took */
};
#define MOAT_EGRESS_HEAD_MAX 16384

/* Parse buf[0..len): 1 with *req filled (free req->head), 0 when the head is not complete
 * yet (and len < MOAT_EGRESS_HEAD_MAX), -1 when it is refused (*why says why). */
int moat_egress_parse(const char *buf, size_t len, struct moat_egress_request *req,
		      const char **why);

/* Serve listen_fd (accepted connections are the sandbox's) until killed, or until stop_fd
 * (>= 0: a pidfd of the container's init) is readable: each connection in a child of its
 * own; a log line per attempt to log_fd (O_APPEND). */
int moat_egress_serve(const struct moat_egress_policy *p, int listen_fd, int log_fd,
		      const char *sandbox, int stop_fd);

/* egress-process.c: the listening socket on 127.0.0.1:MOAT_EGRESS_PORT in the network
 * namespace of pid, and the proxy's process, as nobody (never returns). */
int moat_egress_listen_in(pid_t pid, int *ret_fd, moat_error *err);
/* What a process behind the proxy gets: HTTP_PROXY and friends, NO_PROXY (NULL-terminated,
 * allocated). */
char **moat_egress_env(void);
_Noreturn void moat_egress_proxy_main(const struct moat_egress_policy *p, int listen_fd, int log_fd,
				      const char *name, int stop_fd);

/* egress-container.c: egress for a container an engine runs, by its annotations
 * moat.egress.allow (rules, comma-separated), moat.egress.resolve and
 * moat.egress.proxy-header (';'-separated). */
struct oci_config;
/* Read the annotations into *p (false in *ret_on when there are none); the container must
 * have a network namespace of its own, and its process gets the proxy's variables. */
int moat_egress_from_config(struct oci_config *cfg, struct moat_egress_policy *p, bool *ret_on,
			    moat_error *err);
/* Start the proxy for the container whose init is pid, logging to dirfd/egress.log; it
 * ends with the init. */
int moat_egress_start_for(const struct moat_egress_policy *p, pid_t pid, int dirfd, const char *id,
			  moat_error *err);

#endif
