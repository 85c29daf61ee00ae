/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat create: build a container and stop it before the user process. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "log.h"
#include "moat.h"
#include "vm-select.h"

static void usage(const char *cmd)
{
	bool run = strcmp(cmd, "run") == 0;

	printf("Usage: moat %s [OPTIONS] ID\n\n%s\n\n", cmd,
	       run ? "Create and start a container. In the foreground moat passes stdio through,\n"
		     "forwards signals, exits with the container's status (128+N when killed by\n"
		     "signal N) and deletes the container afterwards (unless --keep)."
		   : "Create a container from a bundle. Everything is set up and the container's\n"
		     "init waits just before running process.args until `moat start ID`.");
	printf("  -b, --bundle DIR         bundle directory (default: current directory)\n"
	       "      --pid-file FILE      write the container's host pid to FILE\n"
	       "      --console-socket S   send the pty master of process.terminal to socket S\n"
	       "      --preserve-fds N     pass N more fds (from 3) to the container\n"
	       "      --no-pivot           enter the root with MS_MOVE+chroot, not pivot_root\n"
	       "      --no-new-keyring     keep the caller's session keyring\n");
	if (run)
		printf("  -d, --detach             return once the container is running\n"
		       "      --keep               once the container exits, leave it (stopped)\n"
		       "                           for `moat state` and `moat delete` (which runs\n"
		       "                           poststop); with --detach it changes nothing,\n"
		       "                           as run -d never deletes. A run that fails is\n"
		       "                           undone all the same\n");
	printf("With LISTEN_FDS=N (and LISTEN_PID unset or moat's pid) in the environment, fds\n"
	       "3..3+N-1 are passed on ahead of --preserve-fds, and the container gets\n"
	       "LISTEN_FDS=N and LISTEN_PID set to its process.\n");
}

/* Socket activation (sd_listen_fds(3)): fds 3..3+N-1 meant for this process when LISTEN_FDS=N
 * and LISTEN_PID is unset or ours. They go to the container ahead of --preserve-fds. */
static int listen_fds(void)
{
	const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
	char *end;
	long n;

	if (fds == NULL || *fds == '\0')
		return 0;
	if (pid != NULL && *pid != '\0' && strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	errno = 0;
	n = strtol(fds, &end, 10);
	if (errno || *end || n <= 0 || n > 1024)
		return 0;
	return (int)n;
}

enum { OPT_KEEP = 256 };

int moat_parse_create_args(struct moat_globals *g, const char *cmd, int argc, char **argv,
			   struct moat_create_opts *o, struct moat_run_opts *run)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "no-pivot", no_argument, NULL, 'P' },
		{ "no-new-keyring", no_argument, NULL, 'K' },
		{ "detach", no_argument, NULL, 'd' },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long n;
	int c;

	memset(o, 0, sizeof(*o));
	o->root = g->root;
	o->systemd_cgroup = g->systemd_cgroup;
	o->no_cgroup = g->cgroup_manager != NULL && strcmp(g->cgroup_manager, "disabled") == 0;
	o->rootless = moat_is_rootless(g);
	o->listen_fds = listen_fds();
	o->policy = g->policy;
	o->as_vm = moat_vm_invoked_as_vm(g->argv0);
	while ((c = getopt_long(argc, argv, run ? "b:dh" : "b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': o->bundle = optarg; break;
		case 'p': o->pid_file = optarg; break;
		case 'c': o->console_socket = optarg; break;
		case 'P': o->no_pivot = true; break;
		case 'K': o->no_new_keyring = true; break;
		case 'f':
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 0 || n > INT_MAX - 3)
				return moat_usage_error(cmd, "--preserve-fds: '%s' is not a count",
							optarg);
			o->preserve_fds = (int)n;
			break;
		case 'd':
			if (run == NULL)
				return moat_usage_error(cmd, "unknown option '--detach'");
			run->detach = true;
			break;
		case OPT_KEEP:
			if (run == NULL)
				return moat_usage_error(cmd, "unknown option '--keep'");
			run->keep = true;
			break;
		case 'h': usage(cmd); exit(EXIT_SUCCESS);
		default: return moat_bad_option(cmd, argv);
		}
	}
	return moat_want_id(cmd, argc, argv, optind, &o->id);
}

int moat_cmd_create(struct moat_globals *g, int argc, char **argv)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_create_opts o;

	if (moat_parse_create_args(g, "create", argc, argv, &o, NULL) != 0)
		return EXIT_FAILURE;
	if (moat_container_create(&o, NULL, NULL, &err) < 0)
		return moat_fail(&err);
	moat_log_warnings(&err);
	return EXIT_SUCCESS;
}
