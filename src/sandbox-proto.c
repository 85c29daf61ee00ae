/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: requests and replies between the commands and a keeper (sandbox-proto.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "sandbox-json.h"
#include "sandbox-proto.h"
#include "strv.h"

#define G_STR(g, s) yajl_gen_string((g), (const unsigned char *)(s), strlen(s))

void sb_request_init(struct sb_request *q)
{
	*q = (struct sb_request){
		.timeout_ms = -1, .output_limit = -1, .uid = -1, .gid = -1, .truncate = -1, .fd = -1
	};
}

void sb_request_clear(struct sb_request *q)
{
	free(q->op);
	strv_free(q->argv);
	strv_free(q->env);
	free(q->cwd);
	free(q->path);
	free(q->name);
	if (q->fd >= 0)
		close(q->fd);
	sb_request_init(q);
}

static void g_strv(yajl_gen g, const char *k, char *const *v)
{
	if (v == NULL)
		return;
	G_STR(g, k);
	yajl_gen_array_open(g);
	for (size_t i = 0; v[i] != NULL; i++)
		G_STR(g, v[i]);
	yajl_gen_array_close(g);
}

static void g_opt_int(yajl_gen g, const char *k, int64_t v)
{
	if (v >= 0)
		sbj_key_int(g, k, v, false);
}

static void g_opt_str(yajl_gen g, const char *k, const char *v)
{
	if (v != NULL)
		sbj_key_str(g, k, v);
}

static char *request_line(const struct sb_request *q)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	char *json, *line;

	yajl_gen_map_open(g);
	sbj_key_str(g, "op", q->op);
	g_strv(g, "argv", q->argv);
	g_strv(g, "env", q->env);
	g_opt_int(g, "timeout_ms", q->timeout_ms);
	g_opt_int(g, "output_limit", q->output_limit);
	g_opt_int(g, "uid", q->uid);
	g_opt_int(g, "gid", q->gid);
	g_opt_int(g, "truncate", q->truncate);
	g_opt_str(g, "cwd", q->cwd);
	g_opt_str(g, "path", q->path);
	g_opt_str(g, "name", q->name);
	if (q->force) {
		G_STR(g, "force");
		yajl_gen_bool(g, 1);
	}
	yajl_gen_map_close(g);
	json = sbj_finish(g);
	line = xasprintf("%s\n", json);
	free(json);
	return line;
}

int sb_request_send(int sock, const struct sb_request *q, moat_error *err)
{
	_cleanup_free_ char *line = request_line(q);
	size_t len = strlen(line);
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 };
	struct iovec iov = { line, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (len > SB_REQUEST_MAX)
		return moat_error_msg(err, E2BIG, "sandbox: the request is over %u bytes",
				      SB_REQUEST_MAX);
	if (q->fd >= 0) {
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), &q->fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "sandbox: send the request");
	if ((size_t)n < len && write_all(sock, line + n, len - (size_t)n) < 0)
		return moat_error_set(err, errno, "sandbox: send the request");
	return 0;
}

/* The first bytes and the fd passed with them. */
static ssize_t recv_first(int sock, char *buf, size_t len, int *ret_fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[4];

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || k > 4)
			continue;
		memcpy(fds, CMSG_DATA(c), k * sizeof(int));
		for (size_t i = 0; i < k; i++) {
			if (*ret_fd < 0)
				*ret_fd = fds[i];
			else
				close(fds[i]); /* one fd is all a request passes */
		}
	}
	return n;
}

/* The request's line, up to its newline. */
static int recv_line(int sock, struct sb_request *q, char **ret, moat_error *err)
{
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = xmalloc(cap);
	ssize_t n = recv_first(sock, buf, cap - 1, &q->fd);

	for (;;) {
		if (n < 0)
			return moat_error_set(err, errno, "sandbox: read the request");
		len += (size_t)n;
		buf[len] = '\0';
		if (memchr(buf, '\n', len) != NULL)
			break;
		if (n == 0)
			return moat_error_msg(err, EINVAL, "sandbox: a request cut short");
		if (len + 1 >= cap) {
			if (cap >= SB_REQUEST_MAX)
				return moat_error_msg(err, E2BIG,
						      "sandbox: a request over %u bytes",
						      SB_REQUEST_MAX);
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		do
			n = read(sock, buf + len, cap - 1 - len);
		while (n < 0 && errno == EINTR);
	}
	*strchr(buf, '\n') = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

static char **tree_strv(yajl_val v)
{
	char **out = NULL;
	size_t n = 0;

	if (!YAJL_IS_ARRAY(v))
		return NULL;
	out = xcalloc(1, sizeof(char *));
	for (size_t i = 0; i < v->u.array.len; i++) {
		if (!YAJL_IS_STRING(v->u.array.values[i])) {
			strv_free(out);
			return NULL;
		}
		strv_push(&out, &n, YAJL_GET_STRING(v->u.array.values[i]));
	}
	return out;
}

static bool take_member(struct sb_request *q, const char *k, yajl_val v)
{
	static const char *const ints[] = { "timeout_ms", "output_limit", "uid", "gid",
					    "truncate" };
	int64_t *slots[] = { &q->timeout_ms, &q->output_limit, &q->uid, &q->gid, NULL };
	char **strs[] = { &q->op, &q->cwd, &q->path, &q->name };
	static const char *const str_names[] = { "op", "cwd", "path", "name" };

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(ints); i++)
		if (strcmp(k, ints[i]) == 0) {
			if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0)
				return false;
			if (slots[i] == NULL)
				q->truncate = YAJL_GET_INTEGER(v) != 0;
			else
				*slots[i] = YAJL_GET_INTEGER(v);
			return true;
		}
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(str_names); i++)
		if (strcmp(k, str_names[i]) == 0) {
			if (!YAJL_IS_STRING(v) || *strs[i] != NULL)
				return false;
			*strs[i] = xstrdup(YAJL_GET_STRING(v));
			return true;
		}
	if (strcmp(k, "argv") == 0 || strcmp(k, "env") == 0) {
		char ***slot = k[0] == 'a' ? &q->argv : &q->env;

		return *slot == NULL && (*slot = tree_strv(v)) != NULL;
	}
	if (strcmp(k, "force") == 0) {
		q->force = YAJL_IS_TRUE(v);
		return YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v);
	}
	return false;
}

int sb_request_recv(int sock, struct sb_request *q, moat_error *err)
{
	_cleanup_free_ char *line = NULL;
	char why[128] = "";
	yajl_val tree;
	bool ok;

	sb_request_init(q);
	if (recv_line(sock, q, &line, err) < 0)
		return moat_error_ret(err);
	tree = yajl_tree_parse(line, why, sizeof(why));
	ok = YAJL_IS_OBJECT(tree);
	for (size_t i = 0; ok && i < tree->u.object.len; i++)
		ok = take_member(q, tree->u.object.keys[i], tree->u.object.values[i]);
	yajl_tree_free(tree);
	if (!ok || q->op == NULL) {
		sb_request_clear(q);
		return moat_error_msg(err, EINVAL, "sandbox: a malformed request");
	}
	return 0;
}

void sb_reply(int sock, int status, const char *msg, const char *body)
{
	_cleanup_free_ char *head = xasprintf("%d\t%s\n", status, msg ? msg : "");

	if (write_all(sock, head, strlen(head)) < 0 || body == NULL || body[0] == '\0')
		return;
	/* one line end after the document, whether its generator gave it one or not */
	if (write_all(sock, body, strlen(body)) >= 0 && body[strlen(body) - 1] != '\n')
		write_all(sock, "\n", 1);
}

int sb_reply_read(int sock, const char *who, int *ret_status, char **ret_msg, char **ret_body,
		  moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	char *msg, *body;
	size_t len;
	int status;

	if (read_fd_all(sock, who, SB_REPLY_MAX, &buf, &len, err) < 0)
		return moat_error_ret(err);
	if (len == 0 || sscanf(buf, "%d", &status) != 1 || (msg = strchr(buf, '\t')) == NULL ||
	    (body = strchr(msg, '\n')) == NULL)
		return moat_error_msg(err, EIO, "sandbox: %s ended without a reply", who);
	*body++ = '\0';
	*ret_status = status;
	*ret_msg = xstrdup(msg + 1);
	*ret_body = xstrdup(body);
	return 0;
}
