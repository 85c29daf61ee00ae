/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: the commands that talk to a session's keeper: exec, cp, diff, ls, rm.
 *
 * Each connects to <root>/<uid>/<name>/sock, sends one request and prints the reply
 * (sandbox-proto.h). A sandbox is reachable only through its uid's own directory, so a name
 * another uid made is "not found", as is one whose keeper is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "log.h"
#include "sandbox-cli.h"
#include "sandbox-proto.h"
#include "strv.h"
#include "utils.h"

/* Connect to NAME's keeper: 0, or the exit status to return (a message printed). */
static int connect_to(const char *cmd, const char *name, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_close_ int fd = -1;

	if (moat_sandbox_check_name(name, &err) < 0) {
		moat_error_prefix(&err, "%s", cmd);
		return moat_fail(&err);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%u/%s/sock", MOAT_SANDBOX_ROOT,
		 (unsigned)getuid(), name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("moat: sandbox: socket");
		return EXIT_SANDBOX_ERROR;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED || errno == EACCES ||
		    errno == ENOTDIR) {
			fprintf(stderr, "moat: sandbox '%s' not found\n", name);
			return EXIT_FAILURE;
		}
		fprintf(stderr, "moat: sandbox '%s': connect: %s\n", name, strerror(errno));
		return EXIT_SANDBOX_ERROR;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Send q to NAME's keeper, print its reply (the body to result_path or stdout). */
static int ask(const char *cmd, const char *name, const struct sb_request *q,
	       const char *result_path)
{
	_cleanup_free_ char *msg = NULL, *body = NULL;
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_close_ int fd = -1;
	int status = connect_to(cmd, name, &fd);

	if (status != 0)
		return status;
	if (sb_request_send(fd, q, &err) < 0 ||
	    sb_reply_read(fd, "the sandbox's keeper", &status, &msg, &body, &err) < 0) {
		/* connected as the keeper closed its socket: the sandbox is going */
		if (moat_error_ret(&err) == -ECONNRESET || moat_error_ret(&err) == -EPIPE) {
			moat_error_clear(&err);
			fprintf(stderr, "moat: sandbox '%s' not found\n", name);
			return EXIT_FAILURE;
		}
		moat_fail(&err);
		return EXIT_SANDBOX_ERROR;
	}
	return sb_print_reply(status, msg, body, result_path);
}

static void exec_usage(void)
{
	printf("Usage: moat sandbox exec [OPTIONS] NAME -- PROGRAM [ARG...]\n\n"
	       "Run PROGRAM (never through a shell) in the sandbox NAME and print the result as\n"
	       "JSON (moat.sandbox.result/v1); its files are what this command changed. One\n"
	       "command runs at a time. The options default to the sandbox's (create's).\n\n"
	       "  --timeout D             wall clock of the command (0: none); at the timeout\n"
	       "                          every process of the sandbox but its init is killed\n"
	       "                          (a microVM is torn down)\n"
	       "  --output-limit B        bytes kept of each of stdout and stderr\n"
	       "  --on-output-limit WHAT  kill or truncate, past the output limit\n"
	       "  --user UID[:GID]        the user inside\n"
	       "  --cwd DIR               the working directory\n"
	       "  --env K=V               an environment variable, over create's (repeatable)\n"
	       "  --result FILE           write the result there (default: stdout)\n\n"
	       "Exit status: the program's (128+N for signal N), 124 on timeout or at the\n"
	       "sandbox's lifetime, 125 when moat failed or the program could not start (the\n"
	       "result says why), 1 when NAME is not found.\n");
}

enum { X_TIMEOUT = 256, X_OUTPUT_LIMIT, X_ON_OUTPUT_LIMIT, X_USER, X_CWD, X_ENV, X_RESULT };

static const struct option exec_options[] = {
	{ "timeout", required_argument, NULL, X_TIMEOUT },
	{ "output-limit", required_argument, NULL, X_OUTPUT_LIMIT },
	{ "on-output-limit", required_argument, NULL, X_ON_OUTPUT_LIMIT },
	{ "user", required_argument, NULL, X_USER },
	{ "cwd", required_argument, NULL, X_CWD },
	{ "env", required_argument, NULL, X_ENV },
	{ "result", required_argument, NULL, X_RESULT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct exec_args {
	struct sb_request q;
	char **env;
	size_t n_env;
	const char *result;
};

static int exec_value(struct exec_args *a, int c, char *arg)
{
	const char *cmd = "sandbox exec";
	uint64_t v;
	uid_t uid;
	gid_t gid;

	switch (c) {
	case X_TIMEOUT:
	case X_OUTPUT_LIMIT:
		if (c == X_TIMEOUT ? sb_parse_duration(cmd, "--timeout", arg, &v)
				   : sb_parse_bytes(cmd, "--output-limit", arg, 0, &v))
			return EXIT_FAILURE;
		*(c == X_TIMEOUT ? &a->q.timeout_ms : &a->q.output_limit) =
			v > INT64_MAX ? INT64_MAX : (int64_t)v;
		return 0;
	case X_ON_OUTPUT_LIMIT:
		if (strcmp(arg, "kill") != 0 && strcmp(arg, "truncate") != 0)
			return moat_usage_error(
				cmd, "--on-output-limit: '%s' is not kill or truncate", arg);
		a->q.truncate = strcmp(arg, "truncate") == 0;
		return 0;
	case X_USER:
		if (sb_parse_user(cmd, arg, &uid, &gid) != 0)
			return EXIT_FAILURE;
		a->q.uid = uid;
		a->q.gid = gid;
		return 0;
	case X_CWD:
		if (arg[0] != '/' || strstr(arg, "/../") != NULL)
			return moat_usage_error(cmd, "--cwd: '%s' is not an absolute path", arg);
		a->q.cwd = arg;
		return 0;
	case X_ENV: return sb_parse_env(cmd, arg, &a->env, &a->n_env);
	case X_RESULT: a->result = arg; return 0;
	}
	return EXIT_FAILURE;
}

/* The options, anywhere before "--" (or before NAME, without it); *ret_first: NAME's index. */
static int exec_parse(int argc, char **argv, struct exec_args *a, int *ret_first)
{
	int dashes = 0, c;

	for (int i = 1; i < argc && dashes == 0; i++)
		if (strcmp(argv[i], "--") == 0)
			dashes = i;
	optind = 0;
	while ((c = getopt_long(dashes ? dashes : argc, argv, dashes ? "h" : "+h", exec_options,
				NULL)) != -1) {
		if (c == 'h') {
			exec_usage();
			exit(EXIT_SUCCESS);
		}
		if (c == '?')
			return moat_bad_option("sandbox exec", argv);
		if (exec_value(a, c, optarg) != 0)
			return EXIT_FAILURE;
	}
	if (optind >= (dashes ? dashes : argc))
		return moat_usage_error("sandbox exec", "give the sandbox's NAME, then -- PROGRAM");
	if (dashes && optind + 1 != dashes)
		return moat_usage_error("sandbox exec", "'%s': give one NAME before --",
					argv[optind + 1]);
	*ret_first = optind;
	return 0;
}

int sb_cmd_exec(struct moat_globals *g, int argc, char **argv)
{
	struct exec_args a = { .q = { 0 } };
	const char *name;
	int first = 0, status;

	(void)g;
	sb_request_init(&a.q);
	if (exec_parse(argc, argv, &a, &first) != 0) {
		free(a.env);
		return EXIT_FAILURE;
	}
	name = argv[first++];
	if (first < argc && strcmp(argv[first], "--") == 0)
		first++;
	if (first >= argc) {
		free(a.env);
		return moat_usage_error("sandbox exec", "no program: give it after --");
	}
	moat_sandbox_collect();
	a.q.op = "exec";
	a.q.argv = argv + first;
	a.q.env = a.env;
	status = ask("sandbox exec", name, &a.q, a.result);
	free(a.env);
	return status;
}

/* NAME:PATH, when arg is one: the name (allocated) and the path in it. */
static char *sandbox_side(char *arg, const char **ret_path)
{
	char *colon = strchr(arg, ':');
	_cleanup_free_ char *name = NULL;
	moat_error err = MOAT_ERROR_INIT;

	if (colon == NULL || colon == arg || colon[1] == '\0')
		return NULL;
	name = xstrndup(arg, (size_t)(colon - arg));
	if (moat_sandbox_check_name(name, &err) < 0) {
		moat_error_clear(&err);
		return NULL;
	}
	*ret_path = colon + 1;
	return TAKE_PTR(name);
}

/* The last component of a path, trailing slashes aside (allocated). */
static char *base_name(const char *path)
{
	_cleanup_free_ char *copy = xstrdup(path);

	return xstrdup(basename(copy));
}

/* A copy's request: the host side opened here (open_path, with flags), passed along. */
static int ask_copy(const char *op, const char *name, const char *path, const char *host_name,
		    const char *open_path, int flags)
{
	struct sb_request q;
	int status;

	sb_request_init(&q);
	q.fd = open(open_path, flags | O_CLOEXEC);
	if (q.fd < 0) {
		fprintf(stderr, "moat: sandbox cp: '%s': %s\n", open_path, strerror(errno));
		return EXIT_FAILURE;
	}
	q.op = (char *)op;
	q.path = (char *)path;
	q.name = (char *)host_name;
	status = ask("sandbox cp", name, &q, NULL);
	close(q.fd);
	return status;
}

static int cp_in(const char *name, const char *host, const char *path)
{
	_cleanup_free_ char *base = base_name(host);

	return ask_copy("cp-in", name, path, base, host, O_RDONLY | O_NONBLOCK);
}

/* Into HOST_PATH when it is a directory, under the sandbox path's name; else as HOST_PATH. */
static int cp_out(const char *name, const char *path, const char *host)
{
	_cleanup_free_ char *dir = NULL, *dst = NULL, *copy = xstrdup(host);
	struct stat st;

	if (stat(host, &st) == 0 && S_ISDIR(st.st_mode)) {
		dir = xstrdup(host);
		dst = base_name(path);
	} else {
		dir = xstrdup(dirname(copy));
		dst = base_name(host);
	}
	return ask_copy("cp-out", name, path, dst, dir, O_PATH | O_DIRECTORY);
}

int sb_cmd_cp(struct moat_globals *g, int argc, char **argv)
{
	_cleanup_free_ char *from = NULL, *to = NULL;
	const char *from_path = NULL, *to_path = NULL;

	(void)g;
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: moat sandbox cp NAME:PATH HOST_PATH | HOST_PATH NAME:PATH\n\n"
		       "Copy a file or directory out of the sandbox NAME, or into it (owned by its\n"
		       "user). Into an existing directory, the copy keeps the source's name. A\n"
		       "relative PATH is under the sandbox's workdir. Out of the sandbox, only\n"
		       "regular files and directories are copied, symlinks are never followed,\n"
		       "and a copy is at most %llu bytes.\n",
		       (unsigned long long)MOAT_SANDBOX_COPY_OUT_MAX);
		return EXIT_SUCCESS;
	}
	if (argc != 3)
		return moat_usage_error("sandbox cp",
					"give NAME:PATH HOST_PATH or HOST_PATH NAME:PATH");
	from = sandbox_side(argv[1], &from_path);
	to = sandbox_side(argv[2], &to_path);
	if ((from == NULL) == (to == NULL))
		return moat_usage_error("sandbox cp",
					"'%s' '%s': exactly one side is NAME:PATH, in the sandbox",
					argv[1], argv[2]);
	moat_sandbox_collect();
	if (from != NULL)
		return cp_out(from, from_path, argv[2]);
	return cp_in(to, argv[1], to_path);
}

int sb_cmd_diff(struct moat_globals *g, int argc, char **argv)
{
	struct sb_request q;

	(void)g;
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: moat sandbox diff NAME\n\n"
		       "Print every path added, modified or deleted in the sandbox's writable layer\n"
		       "since create, as JSON (moat.sandbox.diff/v1, docs/sandbox.md).\n");
		return EXIT_SUCCESS;
	}
	if (argc != 2 || argv[1][0] == '-')
		return moat_usage_error("sandbox diff", "give the sandbox's NAME");
	moat_sandbox_collect();
	sb_request_init(&q);
	q.op = "diff";
	return ask("sandbox diff", argv[1], &q, NULL);
}

int sb_cmd_rm(struct moat_globals *g, int argc, char **argv)
{
	struct sb_request q;
	int i = 1;

	(void)g;
	sb_request_init(&q);
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: moat sandbox rm [--force] NAME\n\n"
		       "Destroy the sandbox NAME, returning once it is gone. A sandbox running a\n"
		       "command is refused, unless --force (-f): the command is killed first.\n");
		return EXIT_SUCCESS;
	}
	if (i < argc && (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0)) {
		q.force = true;
		i++;
	}
	if (i + 1 != argc || argv[i][0] == '-')
		return moat_usage_error("sandbox rm", "give [--force] NAME");
	moat_sandbox_collect();
	q.op = "rm";
	return ask("sandbox rm", argv[i], &q, NULL);
}
