/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the QMP client (vm-qmp.h). */
#include "vm-qmp.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "utils.h"

/* A greeting or a reply is a few hundred bytes; query-migrate's a few more. */
#define QMP_MAX_LINE (64 << 10)

void moat_qmp_freep(yajl_val *v)
{
	if (*v != NULL)
		yajl_tree_free(*v);
}

int moat_vm_wait_fd(int fd, short events, uint64_t deadline_ms, moat_error *err)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		uint64_t now = moat_monotonic_ms();
		int r;

		if (now >= deadline_ms)
			return moat_error_msg(err, ETIMEDOUT, "QEMU did not answer in time");
		r = poll(&p, 1, (int)(deadline_ms - now));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return moat_error_set(err, errno, "poll");
	}
}

static int wait_fd(struct moat_qmp *q, short events, moat_error *err)
{
	if (moat_vm_wait_fd(q->fd, events, q->deadline_ms, err) < 0)
		return moat_error_prefix(err, "QMP");
	return 0;
}

/* The next JSON object QEMU sent (a line), parsed. */
static int read_object(struct moat_qmp *q, yajl_val *ret, moat_error *err)
{
	for (;;) {
		uint8_t *nl = q->in.len ? memchr(q->in.data, '\n', q->in.len) : NULL;
		char chunk[4096], errbuf[128];
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - q->in.data);
			_cleanup_free_ char *line = xstrndup((const char *)q->in.data, len);

			moat_buf_consume(&q->in, len + 1);
			*ret = yajl_tree_parse(line, errbuf, sizeof(errbuf));
			if (*ret == NULL || !YAJL_IS_OBJECT(*ret))
				return moat_error_msg(err, EPROTO,
						      "QMP: QEMU sent what is not a "
						      "JSON object");
			return 0;
		}
		if (q->in.len > QMP_MAX_LINE)
			return moat_error_msg(err, EPROTO, "QMP: a line of more than %d bytes",
					      QMP_MAX_LINE);
		if (wait_fd(q, POLLIN, err) < 0)
			return moat_error_ret(err);
		n = read(q->fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "QMP: read");
		if (n == 0)
			return moat_error_msg(err, EPIPE, "QMP: QEMU closed the monitor");
		moat_buf_append(&q->in, chunk, (size_t)n);
	}
}

static int send_command(struct moat_qmp *q, const char *command, int pass_fd, moat_error *err)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 };
	size_t len = strlen(command), sent = 0;

	while (sent < len) {
		struct iovec iov = { .iov_base = (char *)command + sent, .iov_len = len - sent };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		/* the fd goes with the command's first byte: QEMU takes it as it reads that */
		if (pass_fd >= 0 && sent == 0) {
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof(ctl.buf);
			ctl.h.cmsg_level = SOL_SOCKET;
			ctl.h.cmsg_type = SCM_RIGHTS;
			ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(&ctl.h), &pass_fd, sizeof(int));
		}
		if (wait_fd(q, POLLOUT, err) < 0)
			return moat_error_ret(err);
		n = sendmsg(q->fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "QMP: send");
		sent += (size_t)n;
	}
	return 0;
}

/* The reply to the command just sent: events (QEMU sends them when it likes) skipped. */
static int read_reply(struct moat_qmp *q, yajl_val *ret, moat_error *err)
{
	for (;;) {
		const char *ret_path[] = { "return", NULL }, *error_path[] = { "error", NULL };
		const char *desc_path[] = { "error", "desc", NULL };
		__attribute__((cleanup(moat_qmp_freep))) yajl_val v = NULL;
		yajl_val r, desc;

		if (read_object(q, &v, err) < 0)
			return moat_error_ret(err);
		r = yajl_tree_get(v, ret_path, yajl_t_any);
		if (r != NULL) {
			/* detach the value from the reply: the rest is freed */
			for (size_t i = 0; i < v->u.object.len; i++)
				if (v->u.object.values[i] == r)
					v->u.object.values[i] = NULL;
			*ret = r;
			return 0;
		}
		if (yajl_tree_get(v, error_path, yajl_t_any) != NULL) {
			desc = yajl_tree_get(v, desc_path, yajl_t_string);
			return moat_error_msg(err, EIO, "QMP: %s",
					      desc != NULL ? YAJL_GET_STRING(desc) : "an error");
		}
	}
}

int moat_qmp_execute(struct moat_qmp *q, const char *command, int pass_fd, yajl_val *ret,
		     moat_error *err)
{
	if (send_command(q, command, pass_fd, err) < 0 || read_reply(q, ret, err) < 0)
		return moat_error_ret(err);
	return 0;
}

int moat_qmp_open(struct moat_qmp *q, int fd, uint64_t deadline_ms, moat_error *err)
{
	const char *greeting_path[] = { "QMP", NULL };
	__attribute__((cleanup(moat_qmp_freep))) yajl_val greeting = NULL, r = NULL;

	*q = (struct moat_qmp){ .fd = fd, .deadline_ms = deadline_ms };
	if (read_object(q, &greeting, err) < 0)
		return moat_error_ret(err);
	if (yajl_tree_get(greeting, greeting_path, yajl_t_object) == NULL)
		return moat_error_msg(err, EPROTO, "QMP: QEMU's greeting has no \"QMP\"");
	return moat_qmp_execute(q, "{\"execute\":\"qmp_capabilities\"}", -1, &r, err);
}

void moat_qmp_close(struct moat_qmp *q)
{
	moat_buf_free(&q->in);
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}
