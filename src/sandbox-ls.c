/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox ls: the calling uid's sessions, each as its keeper tells it.
 *
 * Every directory under <root>/<uid>/ with a listening keeper is asked for its status (a
 * one-shot run's sandbox has no socket, and is not listed). The JSON form is the keepers'
 * status objects in an array; the table shows the same members. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "log.h"
#include "sandbox-cli.h"
#include "sandbox-proto.h"
#include "strv.h"
#include "utils.h"

/* NAME's status object (allocated), or NULL when no keeper answers. */
static char *status_of(const char *user_dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *msg = NULL, *body = NULL;
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sb_request q;
	int status;

	sb_request_init(&q);
	q.op = "status";
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s/sock", user_dir, name) >=
	    sizeof(sa.sun_path))
		return NULL;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return NULL;
	if (sb_request_send(fd, &q, &err) < 0 ||
	    sb_reply_read(fd, "the sandbox's keeper", &status, &msg, &body, &err) < 0 ||
	    status != 0) {
		moat_error_clear(&err);
		return NULL;
	}
	body[strcspn(body, "\n")] = '\0';
	return TAKE_PTR(body);
}

/* A time member as the table shows it: to the second, or "-". */
static const char *when(yajl_val obj, const char *key, char *buf, size_t size)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(obj, path, yajl_t_string);

	if (v == NULL)
		return "-";
	snprintf(buf, size, "%.19sZ", YAJL_GET_STRING(v));
	return buf;
}

static void table_row(const char *json)
{
	yajl_val t = yajl_tree_parse(json, NULL, 0);
	const char *pn[] = { "name", NULL }, *pi[] = { "isolation", NULL };
	const char *pb[] = { "busy", NULL }, *pc[] = { "commands", NULL };
	char c[32], e[32], i[32];
	yajl_val name, iso, cmds;

	if (t == NULL)
		return;
	name = yajl_tree_get(t, pn, yajl_t_string);
	iso = yajl_tree_get(t, pi, yajl_t_string);
	cmds = yajl_tree_get(t, pc, yajl_t_number);
	printf("%-24s %-10s %-5s %-21s %-21s %-21s %lld\n", name ? YAJL_GET_STRING(name) : "?",
	       iso ? YAJL_GET_STRING(iso) : "?",
	       YAJL_IS_TRUE(yajl_tree_get(t, pb, yajl_t_true)) ? "yes" : "no",
	       when(t, "created", c, sizeof(c)), when(t, "expires", e, sizeof(e)),
	       when(t, "idle_expires", i, sizeof(i)),
	       cmds && YAJL_IS_INTEGER(cmds) ? (long long)YAJL_GET_INTEGER(cmds) : -1LL);
	yajl_tree_free(t);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the directories under user_dir, sorted. */
static char **names_in(const char *user_dir, size_t *ret_n)
{
	_cleanup_closedir_ DIR *d = opendir(user_dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;

	while (d != NULL && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && e->d_type == DT_DIR)
			strv_push(&names, &n, e->d_name);
	if (n > 1)
		qsort(names, n, sizeof(char *), name_cmp);
	*ret_n = n;
	return names;
}

int sb_cmd_ls(struct moat_globals *g, int argc, char **argv)
{
	_cleanup_free_ char *user_dir = xasprintf("%s/%u", MOAT_SANDBOX_ROOT, (unsigned)getuid());
	_cleanup_(strv_freep) char **names = NULL;
	bool json = false;
	size_t n, shown = 0;

	(void)g;
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: moat sandbox ls [--format table|json]\n\n"
		       "List the caller's sessions (sandbox create): name, isolation, whether a\n"
		       "command runs, when it was made, when its lifetime and idle timeout end, and\n"
		       "how many commands it ran.\n");
		return EXIT_SUCCESS;
	}
	if (argc == 3 && strcmp(argv[1], "--format") == 0 &&
	    (strcmp(argv[2], "json") == 0 || strcmp(argv[2], "table") == 0))
		json = strcmp(argv[2], "json") == 0;
	else if (argc != 1)
		return moat_usage_error("sandbox ls", "give nothing, or --format table|json");
	moat_sandbox_collect();
	names = names_in(user_dir, &n);
	if (json)
		fputs("[", stdout);
	else
		printf("%-24s %-10s %-5s %-21s %-21s %-21s %s\n", "NAME", "ISOLATION", "BUSY",
		       "CREATED", "EXPIRES", "IDLE-EXPIRES", "COMMANDS");
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *st = status_of(user_dir, names[i]);

		if (st == NULL)
			continue;
		if (json)
			printf("%s\n  %s", shown ? "," : "", st);
		else
			table_row(st);
		shown++;
	}
	if (json)
		puts(shown ? "\n]" : "]");
	return EXIT_SUCCESS;
}
