/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the microVM supervisor's socket (vm-socket.h). */
#include "vm-socket.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "utils.h"
#include "vm-relay.h"

static int socket_path(int dirfd, struct sockaddr_un *ret, moat_error *err)
{
	*ret = (struct sockaddr_un){ .sun_family = AF_UNIX };
	/* through the directory's fd: however long the state root's path is */
	if ((size_t)snprintf(ret->sun_path, sizeof(ret->sun_path), "/proc/self/fd/%d/%s", dirfd,
			     MOAT_VM_SOCKET) >= sizeof(ret->sun_path))
		return moat_error_msg(err, ENAMETOOLONG, "microvm: the supervisor's socket path");
	return 0;
}

int moat_vm_socket_listen(int state_dirfd, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;

	if (fd < 0)
		return moat_error_set(err, errno, "microvm: the supervisor's socket");
	if (socket_path(state_dirfd, &sa, err) < 0)
		return moat_error_ret(err);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return moat_error_set(err, errno, "microvm: bind the supervisor's socket");
	/* only root on the host (moat) connects; the supervisor holds the listening fd */
	if (fchmodat(state_dirfd, MOAT_VM_SOCKET, 0600, 0) < 0)
		return moat_error_set(err, errno, "microvm: make the supervisor's socket 0600");
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int moat_vm_socket_connect(int state_dirfd, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;

	if (fd < 0)
		return moat_error_set(err, errno, "microvm: socket");
	if (socket_path(state_dirfd, &sa, err) < 0)
		return moat_error_ret(err);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_set(err, errno, "microvm: connect to the supervisor");
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* ---- the client ------------------------------------------------------------------------------- */

int moat_vm_request_send(int conn, enum moat_vm_request_kind kind, const char *name,
			 const void *body, size_t body_len, uint32_t value, const int *fds,
			 size_t n_fds, moat_error *err)
{
	size_t name_len = name ? strlen(name) : 0;
	struct moat_vm_request h = { MOAT_VM_REQUEST_MAGIC, kind, (uint32_t)name_len,
				     (uint32_t)body_len, value };
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (body_len > MOAT_VM_MAX_REQUEST || name_len > MOAT_VM_MAX_NAME || n_fds > 3)
		return moat_error_msg(err, E2BIG, "microvm: a request larger than %d bytes",
				      MOAT_VM_MAX_REQUEST);
	if (n_fds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
	}
	if (sendmsg(conn, &mh, MSG_NOSIGNAL) != sizeof(h) ||
	    (name_len > 0 && write_all(conn, name, name_len) < 0) ||
	    (body_len > 0 && write_all(conn, body, body_len) < 0))
		return moat_error_set(err, errno, "microvm: send the request to the supervisor");
	return 0;
}

int moat_vm_reply_read(int conn, struct moat_vm_reply *r, moat_error *err)
{
	ssize_t n = read_all(conn, r, sizeof(*r));

	if (n != sizeof(*r))
		return moat_error_msg(err, EPIPE, "the microVM's supervisor hung up");
	r->message[sizeof(r->message) - 1] = '\0';
	for (char *c = r->message; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return 0;
}

int moat_vm_reply_wait(int conn, const sigset_t *forward, struct moat_vm_reply *r, moat_error *err)
{
	sigset_t old;
	_cleanup_close_ int sfd = -1;
	int rc = 0;

	if (sigprocmask(SIG_BLOCK, forward, &old) < 0 ||
	    (sfd = signalfd(-1, forward, SFD_CLOEXEC)) < 0)
		return moat_error_set(err, errno, "microvm: signalfd");
	for (;;) {
		struct pollfd p[2] = { { conn, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = moat_error_set(err, errno, "microvm: poll");
			break;
		}
		if (p[1].revents && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			struct moat_vm_signal m = { MOAT_VM_SIGNAL_MAGIC, (int32_t)si.ssi_signo };

			write_all(conn, &m, sizeof(m)); /* a supervisor gone shows as a hang-up */
		}
		if (!p[0].revents)
			continue;
		if (moat_vm_reply_read(conn, r, err) < 0) {
			rc = -1;
			break;
		}
		if (r->type != MOAT_VM_REPLY_STARTED)
			break;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* One request without fds (FREEZE, UPDATE) to the supervisor at state_dirfd, answered DONE. */
/* One request without fds, and its one reply, which must be of type want. */
static int request_reply(int state_dirfd, enum moat_vm_request_kind kind, const char *name,
			 const void *body, size_t body_len, uint32_t value,
			 enum moat_vm_reply_type want, struct moat_vm_reply *r, moat_error *err)
{
	_cleanup_close_ int conn = -1;

	if (moat_vm_socket_connect(state_dirfd, &conn, err) < 0 ||
	    moat_vm_request_send(conn, kind, name, body, body_len, value, NULL, 0, err) < 0 ||
	    moat_vm_reply_read(conn, r, err) < 0)
		return moat_error_ret(err);
	if (r->type != want)
		return moat_error_msg(err, r->value > 0 ? r->value : EIO, "microvm: %s",
				      r->type == MOAT_VM_REPLY_ERROR ? r->message
								     : "an unexpected reply");
	return 0;
}

static int request_done(int state_dirfd, enum moat_vm_request_kind kind, const char *name,
			const void *body, size_t body_len, uint32_t value, moat_error *err)
{
	struct moat_vm_reply r;

	return request_reply(state_dirfd, kind, name, body, body_len, value, MOAT_VM_REPLY_DONE, &r,
			     err);
}

int moat_vm_freeze(int state_dirfd, const char *member, bool frozen, moat_error *err)
{
	return request_done(state_dirfd, MOAT_VM_REQ_FREEZE, member, NULL, 0, frozen, err);
}

int moat_vm_update(int state_dirfd, const char *member, const struct moat_proto_resources *res,
		   moat_error *err)
{
	struct moat_msg m = { .type = MOAT_MSG_UPDATE, .id = MOAT_VM_WORKLOAD_ID };
	struct moat_buf frame = { 0 };
	int r;

	m.u.update.resources = *res;
	r = moat_proto_encode(MOAT_PEER_HOST, &m, &frame, err);
	if (r == 0)
		r = request_done(state_dirfd, MOAT_VM_REQ_UPDATE, member, frame.data, frame.len, 0,
				 err);
	moat_buf_free(&frame);
	return r;
}

int moat_vm_stats(int state_dirfd, const char *member, struct moat_msg_usage *ret, moat_error *err)
{
	struct moat_vm_reply r;

	if (request_reply(state_dirfd, MOAT_VM_REQ_STATS, member, NULL, 0, 0, MOAT_VM_REPLY_USAGE,
			  &r, err) < 0)
		return moat_error_ret(err);
	*ret = r.usage;
	return 0;
}

/* ---- the supervisor ---------------------------------------------------------------------------- */

static char *read_part(int conn, uint32_t len)
{
	char *s = xmalloc((size_t)len + 1);

	if (len > 0 && read_all(conn, s, len) != (ssize_t)len) {
		free(s);
		return NULL;
	}
	s[len] = '\0';
	return s;
}

static void close_fds(int fds[3])
{
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

int moat_vm_request_recv(int conn, struct moat_vm_request *ret, char **ret_name, char **ret_body,
			 int fds[3])
{
	struct moat_vm_request h;
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	size_t n_fds = 0, want;
	char *name, *body;

	fds[0] = fds[1] = fds[2] = -1;
	if (recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL) != sizeof(h))
		return -EPROTO;
	c = CMSG_FIRSTHDR(&mh);
	if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		memcpy(fds, CMSG_DATA(c), (n_fds > 3 ? 3 : n_fds) * sizeof(int));
	}
	/* FREEZE, UPDATE and STATS pass no fds; FREEZE and STATS have no body */
	want = h.kind == MOAT_VM_REQ_EXEC || h.kind == MOAT_VM_REQ_CONTAINER ? 3 : 0;
	if ((mh.msg_flags & MSG_CTRUNC) || n_fds != want || h.magic != MOAT_VM_REQUEST_MAGIC ||
	    h.kind < MOAT_VM_REQ_EXEC || h.kind > MOAT_VM_REQ_STATS ||
	    h.name_len > MOAT_VM_MAX_NAME || h.body_len > MOAT_VM_MAX_REQUEST ||
	    (h.kind != MOAT_VM_REQ_FREEZE && h.kind != MOAT_VM_REQ_STATS && h.body_len == 0)) {
		close_fds(fds);
		return -EPROTO;
	}
	name = read_part(conn, h.name_len);
	body = name ? read_part(conn, h.body_len) : NULL;
	if (body == NULL) {
		free(name);
		close_fds(fds);
		return -EPROTO;
	}
	*ret = h;
	*ret_name = name;
	*ret_body = body;
	return 0;
}

int moat_vm_reply_send(int conn, enum moat_vm_reply_type type, int32_t value, const char *message)
{
	struct moat_vm_reply r = { .type = type, .value = value };

	if (message != NULL)
		snprintf(r.message, sizeof(r.message), "%s", message);
	return write_all(conn, &r, sizeof(r)) < 0 ? -1 : 0;
}

int moat_vm_reply_usage(int conn, const struct moat_msg_usage *u)
{
	struct moat_vm_reply r = { .type = MOAT_VM_REPLY_USAGE, .usage = *u };

	return write_all(conn, &r, sizeof(r)) < 0 ? -1 : 0;
}
