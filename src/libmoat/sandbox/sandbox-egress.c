/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a sandbox's way out, when it has rules (--allow): its egress proxy (egress.h).
 *
 * Container mode: the keeper joins the container's network namespace for as long as it
 * takes to make the proxy's listening socket on 127.0.0.1:3128 there, and goes back; the
 * proxy, a child of the keeper running as nobody, serves that socket from the host's
 * network namespace, so the sandbox reaches the proxy and nothing else, and the proxy
 * reaches the world. The sandbox's commands get HTTP_PROXY and friends pointing at it. The
 * proxy's log, <state>/egress.log (one JSON line per attempt), is read back into each
 * result: the lines a command's run added. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "sandbox-internal.h"
#include "strv.h"
#include "utils.h"

#define NOBODY 65534

bool sb_egress_on(const struct moat_sandbox_opts *o)
{
	return o->egress != NULL && o->egress->n_rules > 0;
}

/* The listening socket, made in the network namespace of pid. */
static int listen_inside(pid_t pid, moat_error *err)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/ns/net", (int)pid);
	_cleanup_close_ int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(MOAT_EGRESS_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd, e = 0;

	if (host < 0 || ns < 0)
		return moat_error_set(err, errno, "--allow: the sandbox's network namespace");
	if (setns(ns, CLONE_NEWNET) < 0)
		return moat_error_set(err, errno, "--allow: join the sandbox's network namespace");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
		e = errno;
	/* back to the host's, whatever happened: the keeper must not stay inside */
	if (setns(host, CLONE_NEWNET) < 0)
		abort();
	if (e != 0) {
		if (fd >= 0)
			close(fd);
		return moat_error_set(err, e, "--allow: the proxy's socket on 127.0.0.1:%d",
				      MOAT_EGRESS_PORT);
	}
	return fd;
}

static _Noreturn void proxy(struct moat_sandbox *s, int listen_fd, int log_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	/* the proxy needs no privilege: its sockets are made, its log is open */
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(1);
	moat_egress_serve(s->o.egress, listen_fd, log_fd, s->name);
	_exit(1);
}

int sb_egress_start(struct moat_sandbox *s, moat_error *err)
{
	_cleanup_close_ int listen_fd = -1;

	if (!sb_egress_on(&s->o))
		return 0;
	if (strcmp(s->info.isolation, "microvm") == 0)
		return moat_error_msg(err, ENOTSUP,
				      "--allow: egress rules are for container mode so far; "
				      "a microVM sandbox has no network (give no --allow)");
	listen_fd = listen_inside(s->init, err);
	if (listen_fd < 0)
		return moat_error_ret(err);
	s->egress_log = openat(s->state_fd, "egress.log",
			       O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->egress_log < 0)
		return moat_error_set(err, errno, "--allow: the egress log");
	s->proxy = fork();
	if (s->proxy < 0)
		return moat_error_set(err, errno, "--allow: fork the proxy");
	if (s->proxy == 0)
		proxy(s, listen_fd, s->egress_log);
	return 0;
}

void sb_egress_stop(struct moat_sandbox *s)
{
	if (s->proxy > 0) {
		kill(s->proxy, SIGKILL);
		while (waitpid(s->proxy, NULL, 0) < 0 && errno == EINTR)
			;
		s->proxy = 0;
	}
	if (s->egress_log >= 0)
		close(s->egress_log);
	s->egress_log = -1;
}

char **sb_egress_env(const struct moat_sandbox_opts *o)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					     "https_proxy" };
	char **env = NULL;
	size_t n = 0;

	if (!sb_egress_on(o))
		return NULL;
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(names); i++) {
		_cleanup_free_ char *kv =
			xasprintf("%s=http://127.0.0.1:%d", names[i], MOAT_EGRESS_PORT);

		strv_push(&env, &n, kv);
	}
	strv_push(&env, &n, "NO_PROXY=localhost,127.0.0.1");
	strv_push(&env, &n, "no_proxy=localhost,127.0.0.1");
	return env;
}

off_t sb_egress_mark(const struct moat_sandbox *s)
{
	struct stat st;

	return s->egress_log >= 0 && fstat(s->egress_log, &st) == 0 ? st.st_size : 0;
}

static char *member_str(yajl_val t, const char *k)
{
	const char *path[] = { k, NULL };
	yajl_val v = yajl_tree_get(t, path, yajl_t_string);

	return v ? xstrdup(YAJL_GET_STRING(v)) : NULL;
}

static uint64_t member_num(yajl_val t, const char *k)
{
	const char *path[] = { k, NULL };
	yajl_val v = yajl_tree_get(t, path, yajl_t_number);

	return v && YAJL_IS_INTEGER(v) && YAJL_GET_INTEGER(v) > 0 ? (uint64_t)YAJL_GET_INTEGER(v)
								  : 0;
}

/* One line of the proxy's own log (the proxy is moat's; a line it could not have written
 * is skipped). */
static void take_line(struct moat_sandbox_result *r, const char *line)
{
	yajl_val t = yajl_tree_parse(line, NULL, 0);
	const char *pa[] = { "allowed", NULL };
	struct moat_sandbox_connection c = { 0 };

	if (!YAJL_IS_OBJECT(t)) {
		yajl_tree_free(t);
		return;
	}
	c.host = member_str(t, "host");
	c.address = member_str(t, "address");
	c.rule = member_str(t, "rule");
	c.refused = member_str(t, "refused");
	c.port = (unsigned)member_num(t, "port");
	c.allowed = YAJL_IS_TRUE(yajl_tree_get(t, pa, yajl_t_true));
	c.bytes_out = member_num(t, "bytes_out");
	c.bytes_in = member_num(t, "bytes_in");
	c.duration_ms = member_num(t, "duration_ms");
	yajl_tree_free(t);
	if (!c.allowed)
		r->refused++;
	r->conns = xrealloc(r->conns, (r->n_conns + 1) * sizeof(c));
	r->conns[r->n_conns++] = c;
}

/* Wait a little for the proxy's connections to end (each logs as it ends): its children
 * gone, or IDLE_WAIT_MS. A connection still open then is in a later command's result. */
#define IDLE_WAIT_MS 500
static void wait_idle(const struct moat_sandbox *s)
{
	_cleanup_free_ char *path =
		xasprintf("/proc/%d/task/%d/children", (int)s->proxy, (int)s->proxy);

	for (int waited = 0; waited < IDLE_WAIT_MS; waited += 5) {
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		char c;

		if (fd < 0 || read(fd, &c, 1) <= 0)
			return;
		usleep(5000);
	}
}

void sb_egress_collect(const struct moat_sandbox *s, off_t from, struct moat_sandbox_result *r)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	off_t to;

	if (!sb_egress_on(&s->o))
		return;
	if (s->proxy > 0)
		wait_idle(s);
	r->allow = xcalloc(1, sizeof(char *));
	for (size_t i = 0; i < s->o.egress->n_rules; i++)
		strv_push(&r->allow, &n, s->o.egress->rules[i].text);
	to = sb_egress_mark(s);
	if (to <= from || to - from > (16 << 20))
		return;
	buf = xmalloc((size_t)(to - from) + 1);
	if (pread(s->egress_log, buf, (size_t)(to - from), from) != to - from)
		return;
	buf[to - from] = '\0';
	for (char *line = buf, *nl; line != NULL && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		take_line(r, line);
	}
}
