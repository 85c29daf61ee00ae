/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the parent/child messages used while a container is built. */
#include "sync.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/un.h>

#include "utils.h"

int moat_sync_pair(int ret_fds[2], moat_error *err)
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ret_fds) < 0)
		return moat_error_set(err, errno, "socketpair");
	return 0;
}

void moat_sync_child_attach(pid_t parent, int parent_end)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (parent > 0 && getppid() != parent)
		_exit(EXIT_FAILURE);
	if (parent_end >= 0)
		close(parent_end);
}

static int send_msg(int fd, const struct moat_sync_msg *m, moat_error *err)
{
	ssize_t n;

	do
		n = send(fd, m, sizeof(*m), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "sync: send");
	return 0;
}

int moat_sync_send(int fd, enum moat_sync_type type, int64_t value, moat_error *err)
{
	struct moat_sync_msg m = { .type = type, .value = value };

	return send_msg(fd, &m, err);
}

void moat_sync_send_error(int fd, const moat_error *err)
{
	struct moat_sync_msg m = { .type = MOAT_SYNC_ERROR, .code = err ? err->code : 0 };

	snprintf(m.msg, sizeof(m.msg), "%s", err && err->msg ? err->msg : "unknown error");
	send_msg(fd, &m, NULL);
}

static int send_with_fd(int sock, const void *data, size_t len, int passed_fd, moat_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &passed_fd, sizeof(int));
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "send fd");
	return 0;
}

int moat_sync_send_fd(int fd, enum moat_sync_type type, int64_t value, int passed_fd,
		      moat_error *err)
{
	return moat_sync_send_fd_text(fd, type, value, passed_fd, NULL, err);
}

int moat_sync_send_fd_text(int fd, enum moat_sync_type type, int64_t value, int passed_fd,
			   const char *text, moat_error *err)
{
	struct moat_sync_msg m = { .type = type, .value = value };

	if (text != NULL && strlen(text) >= sizeof(m.msg))
		return moat_error_msg(err, ENAMETOOLONG, "sync: a text of %zu bytes", strlen(text));
	if (text != NULL)
		snprintf(m.msg, sizeof(m.msg), "%s", text);
	return send_with_fd(fd, &m, sizeof(m), passed_fd, err);
}

void moat_sync_wait_closed(int fd)
{
	struct moat_sync_msg m;
	ssize_t n;

	do
		n = recv(fd, &m, sizeof(m), 0);
	while (n > 0 || (n < 0 && errno == EINTR));
}

int moat_sync_recv(int fd, struct moat_sync_msg *m, int *ret_fd, moat_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	ssize_t n;
	int got = -1;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "sync: receive");
	if (n == 0)
		return moat_error_msg(err, EPIPE, "container process exited during setup");
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&got, CMSG_DATA(c), sizeof(int));
	if ((size_t)n != sizeof(*m) || m->type == MOAT_SYNC_ERROR || ret_fd == NULL) {
		if (got >= 0)
			close(got);
		got = -1;
	}
	if ((size_t)n != sizeof(*m))
		return moat_error_msg(err, EPROTO, "sync: short message (%zd bytes)", n);
	if (m->type == MOAT_SYNC_ERROR) {
		m->msg[sizeof(m->msg) - 1] = '\0';
		return moat_error_msg(err, m->code, "%s", m->msg); /* no code: EINVAL */
	}
	if (ret_fd)
		*ret_fd = got;
	return 0;
}

int moat_sync_expect(int fd, enum moat_sync_type type, int64_t *ret_value, moat_error *err)
{
	struct moat_sync_msg m;

	if (moat_sync_recv(fd, &m, NULL, err) < 0)
		return moat_error_ret(err);
	if (m.type != (int32_t)type)
		return moat_error_msg(err, EPROTO, "sync: expected message %d, got %d", type,
				      m.type);
	if (ret_value)
		*ret_value = m.value;
	return 0;
}

int moat_sync_expect_fd(int fd, enum moat_sync_type type, int *ret_fd, moat_error *err)
{
	struct moat_sync_msg m;
	int got = -1;

	if (moat_sync_recv(fd, &m, &got, err) < 0)
		return moat_error_ret(err);
	if (m.type != (int32_t)type || got < 0) {
		if (got >= 0)
			close(got);
		return moat_error_msg(err, EPROTO, "sync: expected an fd with message %d", type);
	}
	*ret_fd = got;
	return 0;
}

int moat_send_fd_to_socket(const char *path, int passed_fd, const char *name, moat_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return moat_error_msg(err, ENAMETOOLONG,
				      "--console-socket '%s': path too long for a unix socket",
				      path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return moat_error_set(err, errno, "--console-socket: socket");
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = moat_error_set(err, errno, "--console-socket: connect '%s'", path);
		close(sock);
		return r;
	}
	r = send_with_fd(sock, name, strlen(name), passed_fd, err);
	close(sock);
	if (r < 0)
		return moat_error_prefix(err, "--console-socket '%s'", path);
	return 0;
}
