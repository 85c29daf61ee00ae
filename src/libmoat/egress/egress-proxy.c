/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the egress proxy (egress.h), a process of its own on the host side.
 *
 * It serves one listening socket, made inside the sandbox's network namespace, so only the
 * sandbox can connect to it, while every socket the proxy opens is the host's. Each
 * connection is handled in a child (a malformed request takes down one child, never the
 * proxy): read the head, match a rule, resolve the name here (a --resolve pin, else DNS),
 * drop each address whose class the rule does not allow, connect, and relay, bounded in
 * bytes each way and in idle time. One JSON line per attempt goes to the log. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "egress.h"
#include "utils.h"

#define G_STR(g, s) yajl_gen_string((g), (const unsigned char *)(s), strlen(s))

/* One attempt, as its log line says it. */
struct attempt {
	const char *sandbox;
	struct timespec start;
	char host[256];
	unsigned port;
	char address[INET6_ADDRSTRLEN + 8];
	const char *rule, *refused; /* refused: the reason, or NULL when let through */
	uint64_t out, in;           /* bytes: to the upstream, back to the sandbox */
};

static uint64_t ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)((now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000);
}

static void g_key(yajl_gen g, const char *k, const char *v)
{
	G_STR(g, k);
	if (v == NULL)
		yajl_gen_null(g);
	else
		G_STR(g, v);
}

static void g_num(yajl_gen g, const char *k, long long v)
{
	G_STR(g, k);
	yajl_gen_integer(g, v);
}

static void log_attempt(int log_fd, const struct attempt *a)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	char when[40];
	struct timespec now;
	struct tm tm;
	const unsigned char *buf;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	yajl_gen_map_open(g);
	g_key(g, "time", when);
	g_key(g, "sandbox", a->sandbox);
	g_key(g, "host", a->host[0] ? a->host : NULL);
	g_num(g, "port", a->port);
	g_key(g, "address", a->address[0] ? a->address : NULL);
	G_STR(g, "allowed");
	yajl_gen_bool(g, a->refused == NULL);
	g_key(g, "rule", a->rule);
	g_key(g, "refused", a->refused);
	g_num(g, "bytes_out", (long long)a->out);
	g_num(g, "bytes_in", (long long)a->in);
	g_num(g, "duration_ms", (long long)ms_since(&a->start));
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	{
		_cleanup_free_ char *line = xasprintf("%.*s\n", (int)len, (const char *)buf);

		write_all(log_fd, line, strlen(line)); /* one write: lines never interleave */
	}
	yajl_gen_free(g);
}

/* Tell the client no, in HTTP, with the reason. */
static void deny(int client, int code, const char *reason)
{
	_cleanup_free_ char *msg = xasprintf(
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
		"X-Moat-Egress: refused %s\r\nContent-Length: %zu\r\n\r\nmoat egress: %s\n",
		code,
		code == 403   ? "Forbidden"
		: code == 400 ? "Bad Request"
			      : "Bad Gateway",
		reason, strlen("moat egress: \n") + strlen(reason), reason);

	write_all(client, msg, strlen(msg));
}

/* Read the head within the idle timeout: 1 parsed, -1 refused or gone (*why). */
static int read_head(int client, const struct moat_egress_policy *p, char *buf, size_t *len,
		     struct moat_egress_request *req, const char **why)
{
	for (;;) {
		struct pollfd pf = { client, POLLIN, 0 };
		ssize_t n;
		int r = moat_egress_parse(buf, *len, req, why);

		if (r != 0)
			return r;
		if (poll(&pf, 1, (int)p->idle_timeout_ms) <= 0) {
			*why = "timeout";
			return -1;
		}
		n = read(client, buf + *len, MOAT_EGRESS_HEAD_MAX - *len);
		if (n <= 0) {
			*why = "closed";
			return -1;
		}
		*len += (size_t)n;
	}
}

/* The addresses of host: its pin, else DNS. */
static struct addrinfo *resolve(const struct moat_egress_policy *p, const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;

	for (size_t i = 0; i < p->n_pins; i++)
		if (strcmp(p->pins[i].host, host) == 0) {
			res = xcalloc(1, sizeof(*res) + sizeof(struct sockaddr_storage));
			res->ai_family = p->pins[i].addr.ss_family;
			res->ai_socktype = SOCK_STREAM;
			res->ai_addr = (struct sockaddr *)(res + 1);
			res->ai_addrlen = p->pins[i].len;
			memcpy(res->ai_addr, &p->pins[i].addr, p->pins[i].len);
			return res;
		}
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return NULL;
	return res;
}

static void free_addrs(const struct moat_egress_policy *p, const char *host, struct addrinfo *a)
{
	for (size_t i = 0; i < p->n_pins; i++)
		if (strcmp(p->pins[i].host, host) == 0) {
			free(a);
			return;
		}
	if (a != NULL)
		freeaddrinfo(a);
}

static int connect_within(const struct sockaddr *sa, socklen_t len, unsigned timeout_ms)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), e = 0;
	socklen_t el = sizeof(e);
	struct pollfd pf;

	if (fd < 0)
		return -1;
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS)
		goto fail;
	pf = (struct pollfd){ fd, POLLOUT, 0 };
	if (poll(&pf, 1, (int)timeout_ms) <= 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0)
		goto fail;
	fcntl(fd, F_SETFL, 0);
	return fd;
fail:
	close(fd);
	return -1;
}

/* Connect to the first address of host the rule lets through (its class, the port). */
static int open_upstream(const struct moat_egress_policy *p, const struct moat_egress_rule *r,
			 struct attempt *a)
{
	struct addrinfo *addrs = resolve(p, a->host);
	int fd = -1;

	a->refused = addrs == NULL ? "unresolved" : "address-class";
	for (struct addrinfo *ai = addrs; ai != NULL && fd < 0; ai = ai->ai_next) {
		unsigned cls = moat_egress_class(ai->ai_addr);
		void *in = ai->ai_family == AF_INET
				   ? (void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
				   : (void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;

		inet_ntop(ai->ai_family, in, a->address, sizeof(a->address));
		if (cls != 0 && (cls == MOAT_EGRESS_OTHER || !(r->allow & cls)))
			continue;
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)ai->ai_addr)->sin_port = htons(a->port);
		else
			((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons(a->port);
		fd = connect_within(ai->ai_addr, ai->ai_addrlen, p->connect_timeout_ms);
		a->refused = fd < 0 ? "connect-failed" : NULL;
	}
	free_addrs(p, a->host, addrs);
	return fd;
}

/* Copy from to to: false at the end, an error, or the byte bound. */
static bool pump(int from, int to, uint64_t *count, uint64_t max)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n <= 0 || *count + (uint64_t)n > max)
		return false;
	*count += (uint64_t)n;
	return write_all(to, buf, (size_t)n) >= 0;
}

static void relay(const struct moat_egress_policy *p, int client, int up, struct attempt *a)
{
	bool open_[2] = { true, true };

	while (open_[0] || open_[1]) {
		struct pollfd pf[2] = { { open_[0] ? client : -1, POLLIN, 0 },
					{ open_[1] ? up : -1, POLLIN, 0 } };
		int r = poll(pf, 2, (int)p->idle_timeout_ms);

		if (r <= 0)
			return; /* idle too long */
		if (pf[0].revents && !(open_[0] = pump(client, up, &a->out, p->max_bytes)))
			shutdown(up, SHUT_WR);
		if (pf[1].revents && !(open_[1] = pump(up, client, &a->in, p->max_bytes)))
			shutdown(client, SHUT_WR);
	}
}

/* One connection, in its own child. */
static _Noreturn void serve_one(const struct moat_egress_policy *p, int client, int log_fd,
				const char *sandbox)
{
	static char buf[MOAT_EGRESS_HEAD_MAX];
	struct attempt a = { .sandbox = sandbox };
	struct moat_egress_request req;
	const struct moat_egress_rule *r;
	const char *why = NULL;
	size_t len = 0;
	int up;

	clock_gettime(CLOCK_MONOTONIC, &a.start);
	if (read_head(client, p, buf, &len, &req, &why) < 0) {
		if (len == 0 && strcmp(why, "closed") == 0)
			_exit(0); /* connected and said nothing: no attempt to log */
		a.refused = why;
		if (strcmp(why, "closed") != 0 && strcmp(why, "timeout") != 0)
			deny(client, 400, why);
		log_attempt(log_fd, &a);
		_exit(0);
	}
	snprintf(a.host, sizeof(a.host), "%s", req.host);
	a.port = req.port;
	r = moat_egress_match(p, req.host, req.port, &why);
	if (r == NULL) {
		a.refused = why;
		deny(client, 403, why);
		log_attempt(log_fd, &a);
		_exit(0);
	}
	a.rule = r->text;
	up = open_upstream(p, r, &a);
	if (up < 0) {
		deny(client, a.refused && strcmp(a.refused, "address-class") == 0 ? 403 : 502,
		     a.refused);
		log_attempt(log_fd, &a);
		_exit(0);
	}
	if (req.tunnel)
		write_all(client, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
	else {
		size_t n = req.head_len;
		_cleanup_free_ char *with = moat_egress_add_headers(p, req.host, req.head, &n);

		write_all(up, with ? with : req.head, n);
		a.out += n;
	}
	if (len > req.consumed) {
		write_all(up, buf + req.consumed, len - req.consumed);
		a.out += len - req.consumed;
	}
	relay(p, client, up, &a);
	log_attempt(log_fd, &a);
	_exit(0);
}

int moat_egress_serve(const struct moat_egress_policy *p, int listen_fd, int log_fd,
		      const char *sandbox, int stop_fd)
{
	unsigned running = 0;

	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		struct pollfd pf[2] = { { listen_fd, POLLIN, 0 }, { stop_fd, POLLIN, 0 } };
		pid_t pid;
		int client;

		while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
		if (poll(pf, 2, 200) < 0 && errno != EINTR)
			return -errno;
		if (pf[1].revents != 0)
			return 0; /* the container is gone; its connections go with their children */
		if (!(pf[0].revents & POLLIN))
			continue;
		client = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (client < 0)
			continue;
		if (running >= p->max_connections) {
			struct attempt a = { .sandbox = sandbox,
					     .refused = "too-many-connections" };

			clock_gettime(CLOCK_MONOTONIC, &a.start);
			deny(client, 503, a.refused);
			log_attempt(log_fd, &a);
			close(client);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			close(listen_fd);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			serve_one(p, client, log_fd, sandbox);
		}
		if (pid > 0)
			running++;
		close(client);
	}
}
