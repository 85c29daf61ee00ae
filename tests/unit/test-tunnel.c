/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the egress tunnel (src/proto/tunnel.h): the frame decoder's limits, both
 * ends relaying real loopback connections through a socketpair (bytes both ways, beyond the
 * window, half-close, several at once), and a host end fed hostile frames. Run with
 * CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tunnel.h"
#include "utils.h"

static size_t frame(uint8_t *b, uint32_t len, uint8_t type, uint32_t id)
{
	for (int i = 0; i < 4; i++) {
		b[i] = (uint8_t)(len >> (8 * i));
		b[5 + i] = (uint8_t)(id >> (8 * i));
	}
	b[4] = type;
	return MOAT_TUNNEL_HEADER_SIZE;
}

static void refused(const uint8_t *b, size_t len, const char *needle)
{
	struct moat_tunnel_frame f;
	moat_error err = MOAT_ERROR_INIT;
	size_t used = 0;

	assert_true(moat_tunnel_decode(b, len, &f, &used, &err) < 0);
	assert_non_null(strstr(err.msg, needle));
	moat_error_clear(&err);
}

static void test_decode(void **state)
{
	uint8_t b[MOAT_TUNNEL_HEADER_SIZE + 8] = { 0 };
	struct moat_tunnel_frame f;
	moat_error err = MOAT_ERROR_INIT;
	size_t used = 0;

	(void)state;
	frame(b, 3, MOAT_TUNNEL_DATA, 7);
	memcpy(b + MOAT_TUNNEL_HEADER_SIZE, "abc", 3);
	assert_int_equal(moat_tunnel_decode(b, 5, &f, &used, &err), 0);
	assert_int_equal(moat_tunnel_decode(b, MOAT_TUNNEL_HEADER_SIZE + 2, &f, &used, &err), 0);
	assert_int_equal(moat_tunnel_decode(b, MOAT_TUNNEL_HEADER_SIZE + 3, &f, &used, &err), 1);
	assert_int_equal(used, MOAT_TUNNEL_HEADER_SIZE + 3);
	assert_int_equal(f.id, 7);
	assert_memory_equal(f.payload, "abc", 3);

	frame(b, MOAT_TUNNEL_MAX_DATA + 1, MOAT_TUNNEL_DATA, 1);
	refused(b, MOAT_TUNNEL_HEADER_SIZE, "bytes (at most");
	frame(b, 0, 9, 1);
	refused(b, MOAT_TUNNEL_HEADER_SIZE, "frame type 9");
	frame(b, 0, MOAT_TUNNEL_DATA, 1);
	refused(b, MOAT_TUNNEL_HEADER_SIZE, "type 2 with 0 bytes");
	frame(b, 1, MOAT_TUNNEL_OPEN, 1);
	refused(b, MOAT_TUNNEL_HEADER_SIZE + 1, "type 1 with 1 bytes");
	frame(b, 0, MOAT_TUNNEL_CLOSE, 0);
	refused(b, MOAT_TUNNEL_HEADER_SIZE, "connection id 0");
	frame(b, 4, MOAT_TUNNEL_CREDIT, 1);
	memset(b + MOAT_TUNNEL_HEADER_SIZE, 0, 4);
	refused(b, MOAT_TUNNEL_HEADER_SIZE + 4, "a credit of 0 bytes");
	b[MOAT_TUNNEL_HEADER_SIZE + 2] = 0x10; /* 1 MiB */
	refused(b, MOAT_TUNNEL_HEADER_SIZE + 4, "a credit of 1048576 bytes");
}

/* A listening socket on an ephemeral loopback port; its address in *a. */
static int listener(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*a = (struct sockaddr_in){ .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)a, &len), 0);
	return fd;
}

/* An echo server: each connection in a child, echoing until end of file, then closing. */
static pid_t echo_server(int fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGCHLD, SIG_IGN);
	while (true) {
		int c = accept(fd, NULL, NULL);
		char buf[65536];
		ssize_t n;

		if (c < 0)
			continue;
		if (fork() == 0) {
			while ((n = read(c, buf, sizeof(buf))) > 0)
				if (write_all(c, buf, (size_t)n) < 0)
					_exit(1);
			_exit(0);
		}
		close(c);
	}
}

/* An end in a child; other is the port's other end, which the child must not hold. */
static pid_t run_end(int port, int other, int listen_fd, const struct sockaddr_in *target)
{
	pid_t pid = fork();

	if (pid == 0) {
		close(other);
		struct moat_tunnel_end end = { .port_fd = port,
					       .listen_fd = listen_fd,
					       .target = target };
		moat_error err = MOAT_ERROR_INIT;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(moat_tunnel_run(&end, &err) < 0 ? 1 : 0);
	}
	return pid;
}

struct pair {
	struct sockaddr_in guest; /* connect here */
	pid_t guest_pid, host_pid, echo_pid;
};

static void pair_start(struct pair *p)
{
	struct sockaddr_in upstream;
	int up = listener(&upstream), sp[2];
	int in = listener(&p->guest);

	p->echo_pid = echo_server(up);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	p->host_pid = run_end(sp[0], sp[1], -1, &upstream);
	p->guest_pid = run_end(sp[1], sp[0], in, NULL);
	close(up);
	close(in);
	close(sp[0]);
	close(sp[1]);
}

static void pair_stop(struct pair *p)
{
	pid_t pids[] = { p->guest_pid, p->host_pid, p->echo_pid };

	for (size_t i = 0; i < 3; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

static int dial(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_int_equal(connect(fd, (const struct sockaddr *)a, sizeof(*a)), 0);
	return fd;
}

/* Send size bytes of a pattern and read them all back, interleaved (the echo holds little).
 * half: send all first, shut the write side, wait, then read on to end of file. */
static void echo_check(int fd, size_t size, unsigned seed, bool half)
{
	uint8_t *out = xmalloc(size), *in = xmalloc(size + 1);
	size_t sent = 0, got = 0;
	bool eof = false;

	for (size_t i = 0; i < size; i++)
		out[i] = (uint8_t)(i * 31 + seed);
	while (half ? !eof : got < size) {
		/* half: all is sent before anything is read, so the way back is full */
		short want = half && sent < size ? 0 : POLLIN;
		struct pollfd p = { fd, (short)(want | (sent < size ? POLLOUT : 0)), 0 };
		ssize_t n;

		assert_true(poll(&p, 1, 20000) > 0);
		if ((p.revents & POLLOUT) && sent < size) {
			n = send(fd, out + sent, size - sent < 65536 ? size - sent : 65536,
				 MSG_DONTWAIT);
			if (n > 0)
				sent += (size_t)n;
			if (half && sent == size) {
				assert_int_equal(shutdown(fd, SHUT_WR), 0);
				/* a slow reader: the window fills, and the upstream is done */
				usleep(300000);
			}
		}
		if ((p.revents & (POLLIN | POLLHUP)) && want) {
			n = recv(fd, in + got, size + 1 - got, MSG_DONTWAIT);
			assert_true(n >= 0 || errno == EAGAIN);
			if (n > 0)
				got += (size_t)n;
			eof = n == 0;
		}
	}
	assert_int_equal(got, size);
	assert_memory_equal(in, out, size);
	free(in);
	free(out);
}

static void test_relay(void **state)
{
	struct pair p;
	int fds[8];
	char c;

	(void)state;
	pair_start(&p);
	/* 4 MiB: sixteen windows, so credit must flow */
	fds[0] = dial(&p.guest);
	echo_check(fds[0], 4 << 20, 1, false);
	/* half-close: the client's end of file reaches the echo, whose close comes back */
	assert_int_equal(shutdown(fds[0], SHUT_WR), 0);
	assert_int_equal(read(fds[0], &c, 1), 0);
	close(fds[0]);
	/* half-closed early, with more than a window still to come back: the upstream's end
	 * of file (a hang-up once the write side is shut) must not cut what is unread (the
	 * tunnel once read 0 bytes into a full window and took it for the end) */
	for (size_t k = 0; k < 6; k++) {
		/* sizes around the window plus what the sockets hold: the upstream's FIN has to
		 * arrive while the window is full, which one of them makes likely */
		fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_int_equal(
			setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &(int){ 4096 }, sizeof(int)), 0);
		assert_int_equal(connect(fds[0], (struct sockaddr *)&p.guest, sizeof(p.guest)), 0);
		echo_check(fds[0], (280 + 20 * k) << 10, (unsigned)k, true);
		close(fds[0]);
	}
	/* several at once */
	for (int i = 0; i < 8; i++)
		fds[i] = dial(&p.guest);
	for (int i = 7; i >= 0; i--)
		echo_check(fds[i], 300000 + (size_t)i, (unsigned)i, false);
	for (int i = 0; i < 8; i++)
		close(fds[i]);
	pair_stop(&p);
}

/* A host end fed frames by the test as the guest: *ret_port is the test's side. */
static pid_t hostile_host(int *ret_port, struct sockaddr_in *upstream, bool serve, pid_t *ret_echo)
{
	int up = listener(upstream), sp[2];
	pid_t pid;

	/* not served: a child that holds the listener and never accepts; made before the
	 * port, so that it holds no end of it */
	*ret_echo = serve ? echo_server(up) : fork();
	if (*ret_echo == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pid = run_end(sp[0], sp[1], -1, upstream);
	close(up);
	close(sp[0]);
	*ret_port = sp[1];
	return pid;
}

static int exit_of(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void send_frame(int port, uint8_t type, uint32_t id, const void *p, uint32_t n)
{
	uint8_t h[MOAT_TUNNEL_HEADER_SIZE];

	frame(h, n, type, id);
	assert_int_equal(write_all(port, h, sizeof(h)), sizeof(h));
	if (n > 0)
		assert_int_equal(write_all(port, p, n), n);
}

/* Read frames from the host end until DATA for id comes back. */
static bool echoed(int port, uint32_t id)
{
	for (int i = 0; i < 200; i++) {
		struct pollfd p = { port, POLLIN, 0 };
		uint8_t h[MOAT_TUNNEL_HEADER_SIZE], body[MOAT_TUNNEL_MAX_DATA];
		uint32_t len = 0, got = 0;

		if (poll(&p, 1, 10000) != 1 || read_all(port, h, sizeof(h)) != sizeof(h))
			return false;
		for (int k = 0; k < 4; k++) {
			len |= (uint32_t)h[k] << (8 * k);
			got |= (uint32_t)h[5 + k] << (8 * k);
		}
		if (len > sizeof(body) || read_all(port, body, len) != (ssize_t)len)
			return false;
		if (h[4] == MOAT_TUNNEL_DATA && got == id)
			return len == 1 && body[0] == 'x';
	}
	return false;
}

/* Each case: the frames a hostile guest sends, and whether the host end must give up. */
static void hostile(void (*send)(int port), bool breaks, bool serve)
{
	struct sockaddr_in upstream;
	pid_t echo, host;
	int port;

	host = hostile_host(&port, &upstream, serve, &echo);
	send(port);
	if (!breaks) {
		/* still serving: a fresh connection reaches the echo */
		send_frame(port, MOAT_TUNNEL_OPEN, 1000, NULL, 0);
		send_frame(port, MOAT_TUNNEL_DATA, 1000, "x", 1);
		assert_true(echoed(port, 1000));
		close(port);
		assert_int_equal(exit_of(host), 0);
	} else {
		assert_int_equal(exit_of(host), 1);
		close(port);
	}
	kill(echo, SIGKILL);
	waitpid(echo, NULL, 0);
}

/* The upstream here reads nothing: once the socket buffers are full, what the guest keeps
 * sending is beyond the window, and the host end gives up (the writes then fail). */
static void over_window(int port)
{
	static uint8_t big[MOAT_TUNNEL_HEADER_SIZE + MOAT_TUNNEL_MAX_DATA];

	send_frame(port, MOAT_TUNNEL_OPEN, 1, NULL, 0);
	frame(big, MOAT_TUNNEL_MAX_DATA, MOAT_TUNNEL_DATA, 1);
	for (int i = 0; i < 1024; i++)
		if (write_all(port, big, sizeof(big)) < 0)
			break;
}

static void reused_id(int port)
{
	send_frame(port, MOAT_TUNNEL_OPEN, 5, NULL, 0);
	send_frame(port, MOAT_TUNNEL_OPEN, 5, NULL, 0);
}

static void credit_unsent(int port)
{
	uint8_t v[4] = { 1, 0, 0, 0 };

	send_frame(port, MOAT_TUNNEL_OPEN, 1, NULL, 0);
	send_frame(port, MOAT_TUNNEL_CREDIT, 1, v, 4);
}

static void data_after_eof(int port)
{
	send_frame(port, MOAT_TUNNEL_OPEN, 1, NULL, 0);
	send_frame(port, MOAT_TUNNEL_EOF, 1, NULL, 0);
	send_frame(port, MOAT_TUNNEL_DATA, 1, "y", 1);
}

static void empty_data(int port)
{
	send_frame(port, MOAT_TUNNEL_OPEN, 1, NULL, 0);
	send_frame(port, MOAT_TUNNEL_DATA, 1, NULL, 0); /* header only, length 0: refused */
}

static void oversized(int port)
{
	uint8_t h[MOAT_TUNNEL_HEADER_SIZE];

	frame(h, MOAT_TUNNEL_MAX_DATA + 1, MOAT_TUNNEL_DATA, 1);
	assert_int_equal(write_all(port, h, sizeof(h)), sizeof(h));
}

/* Frames for connections that are gone (or never were) are dropped, not fatal; more
 * OPENs than the bound get CLOSE. */
static void unknown_ids(int port)
{
	send_frame(port, MOAT_TUNNEL_DATA, 77, "z", 1);
	send_frame(port, MOAT_TUNNEL_CLOSE, 78, NULL, 0);
	for (uint32_t id = 1; id <= MOAT_TUNNEL_MAX_CONNECTIONS + 4; id++)
		send_frame(port, MOAT_TUNNEL_OPEN, id, NULL, 0);
	for (uint32_t id = 1; id <= MOAT_TUNNEL_MAX_CONNECTIONS + 4; id++)
		send_frame(port, MOAT_TUNNEL_CLOSE, id, NULL, 0);
}

static void test_hostile_guest(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	hostile(over_window, true, false);
	hostile(reused_id, true, true);
	hostile(credit_unsent, true, true);
	hostile(data_after_eof, true, true);
	hostile(empty_data, true, true);
	hostile(oversized, true, true);
	hostile(unknown_ids, false, true);
}

/* The guest end refuses OPEN: only the guest opens connections. */
static void test_open_from_host(void **state)
{
	struct sockaddr_in a;
	int in = listener(&a), sp[2];
	pid_t guest;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	guest = run_end(sp[0], sp[1], in, NULL);
	close(sp[0]);
	close(in);
	send_frame(sp[1], MOAT_TUNNEL_OPEN, 1, NULL, 0);
	assert_int_equal(exit_of(guest), 1);
	close(sp[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_relay),
		cmocka_unit_test(test_hostile_guest),
		cmocka_unit_test(test_open_from_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
