/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat ps: the processes of a container, as a JSON list of host pids (what containerd's shim
 * reads) or as the table of ps(1) restricted to them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container.h"
#include "log.h"
#include "moat.h"
#include "utils.h"

static void usage(void)
{
	printf("Usage: moat ps [--format table|json] ID [-- PS_ARGS...]\n\n"
	       "List the processes of a container. json prints the host pids as a JSON array;\n"
	       "table (the default) runs ps(1) with PS_ARGS (default -ef) and keeps its header\n"
	       "and the lines of the container's processes.\n"
	       "  -f, --format FORMAT   table or json\n");
}

static bool has_pid(const pid_t *pids, size_t n, long pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* The 0-based column of the header word "PID", or -1. */
static int pid_column(const char *header)
{
	_cleanup_free_ char *copy = xstrdup(header);
	char *save = NULL, *w;
	int col = 0;

	for (w = strtok_r(copy, " \t\n", &save); w != NULL;
	     w = strtok_r(NULL, " \t\n", &save), col++)
		if (strcmp(w, "PID") == 0)
			return col;
	return -1;
}

static long field_at(const char *line, int col)
{
	_cleanup_free_ char *copy = xstrdup(line);
	char *save = NULL, *w = strtok_r(copy, " \t\n", &save);

	while (w != NULL && col-- > 0)
		w = strtok_r(NULL, " \t\n", &save);
	return w == NULL ? -1 : strtol(w, NULL, 10);
}

/* Run ps with args and print its header and the lines whose PID is the container's. */
static int ps_table(char **args, int nargs, const pid_t *pids, size_t n, moat_error *err)
{
	_cleanup_free_ char **argv = xcalloc((size_t)nargs + 3, sizeof(char *));
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int fds[2], status, col = -1, i;
	bool header = false;
	FILE *in;
	pid_t child;

	argv[0] = (char *)"ps";
	for (i = 0; i < nargs; i++)
		argv[i + 1] = args[i];
	if (nargs == 0)
		argv[1] = (char *)"-ef";
	if (pipe2(fds, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "ps: pipe");
	child = fork();
	if (child == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execvp("ps", argv);
		fprintf(stderr, "moat: ps: cannot run ps: %s\n", strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (in != NULL && getline(&line, &cap, in) > 0) {
		if (!header) {
			header = true;
			col = pid_column(line);
			fputs(line, stdout);
		} else if (col >= 0 && has_pid(pids, n, field_at(line, col))) {
			fputs(line, stdout);
		}
	}
	if (in != NULL)
		fclose(in);
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return moat_error_msg(err, EINVAL, "ps: ps %s failed (exit status %d)",
				      nargs > 0 ? "with these arguments" : "-ef",
				      WIFEXITED(status) ? WEXITSTATUS(status)
							: 128 + WTERMSIG(status));
	if (col < 0)
		return moat_error_msg(err, EINVAL, "ps: the output of ps has no PID column");
	return 0;
}

int moat_cmd_ps(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = { { "format", required_argument, NULL, 'f' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ pid_t *pids = NULL;
	const char *format = "table", *id;
	size_t n = 0, i;
	int c;

	while ((c = getopt_long(argc, argv, "+f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'h': usage(); return EXIT_SUCCESS;
		default: return moat_bad_option("ps", argv);
		}
	}
	if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
		return moat_usage_error("ps", "--format: '%s' is not table or json", format);
	if (argc - optind < 1)
		return moat_usage_error("ps", "missing container ID");
	if (strcmp(format, "json") == 0 && argc - optind > 1)
		return moat_usage_error("ps", "ps arguments go with --format table only");
	if (moat_validate_id(argv[optind], &err) < 0)
		return moat_fail(&err);
	id = argv[optind++];
	/* `moat ps ID -- -o pid,comm`: the -- only separates ps's options from ours. */
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (moat_container_pids(g->root, id, &pids, &n, &err) < 0)
		return moat_fail(&err);
	if (strcmp(format, "table") == 0) {
		fflush(stdout);
		if (ps_table(argv + optind, argc - optind, pids, n, &err) < 0)
			return moat_fail(&err);
		return EXIT_SUCCESS;
	}
	putchar('[');
	for (i = 0; i < n; i++)
		printf("%s%d", i > 0 ? "," : "", (int)pids[i]);
	printf("]\n");
	return EXIT_SUCCESS;
}
