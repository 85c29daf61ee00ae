/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a sandbox's way out, when it has rules (--allow): its egress proxy (egress.h).
 *
 * Container mode: the keeper makes the proxy's listening socket on 127.0.0.1:3128 in the
 * container's network namespace (egress-process.c), and the proxy, a child of the keeper
 * that dies with it, serves it from the host's network namespace. microVM mode: the same, and
 * the guest reaches that socket through the egress tunnel (vm-egress.h). The sandbox's
 * commands get HTTP_PROXY and friends pointing at 127.0.0.1:3128 either way. The
 * proxy's log, <state>/egress.log (one JSON line per attempt), is read back into each
 * result: the lines a command's run added. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "sandbox-internal.h"
#include "strv.h"
#include "utils.h"

bool sb_egress_on(const struct moat_sandbox_opts *o)
{
	return o->egress != NULL && o->egress->n_rules > 0;
}

static _Noreturn void proxy(struct moat_sandbox *s, int listen_fd, int log_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	moat_egress_proxy_main(s->o.egress, listen_fd, log_fd, s->name, -1);
}

static int spawn_proxy(struct moat_sandbox *s, moat_error *err)
{
	s->proxy = fork();
	if (s->proxy < 0) {
		s->proxy = 0;
		return moat_error_set(err, errno, "--allow: fork the proxy");
	}
	if (s->proxy == 0)
		proxy(s, s->egress_listen, s->egress_log);
	return 0;
}

int sb_egress_start(struct moat_sandbox *s, moat_error *err)
{
	if (!sb_egress_on(&s->o))
		return 0;
	if (moat_egress_listen_in(s->init, &s->egress_listen, err) < 0)
		return moat_error_prefix(err, "--allow");
	s->egress_log = openat(s->state_fd, "egress.log",
			       O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->egress_log < 0)
		return moat_error_set(err, errno, "--allow: the egress log");
	return spawn_proxy(s, err);
}

void moat_sandbox_keep_egress(struct moat_sandbox *s)
{
	moat_error e = MOAT_ERROR_INIT;

	if (s->proxy <= 0 || waitpid(s->proxy, NULL, WNOHANG) != s->proxy)
		return;
	/* its socket is the keeper's: what connected meanwhile waits in its backlog */
	s->proxy = 0;
	spawn_proxy(s, &e);
	moat_error_clear(&e); /* no proxy: no way out, which is where a failure must end */
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
	if (s->egress_listen >= 0)
		close(s->egress_listen);
	s->egress_log = s->egress_listen = -1;
}

char **sb_egress_env(const struct moat_sandbox_opts *o)
{
	return sb_egress_on(o) ? moat_egress_env() : NULL;
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
