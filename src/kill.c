/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat kill: signal a container's init, or every process with --all. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "log.h"
#include "moat.h"
#include "signals.h"

int moat_cmd_kill(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	moat_error err = MOAT_ERROR_INIT;
	bool all = false;
	int c, sig = SIGTERM;

	while ((c = getopt_long(argc, argv, "ah", opts, NULL)) != -1) {
		switch (c) {
		case 'a': all = true; break;
		case 'h':
			printf("Usage: moat kill [--all] ID [SIGNAL]\n\n"
			       "Send SIGNAL (default SIGTERM; a name with or without SIG, or a number;\n"
			       "0 only checks that the process exists)\n"
			       "to the container's init, or with -a/--all to every process in its cgroup.\n");
			return EXIT_SUCCESS;
		default: return moat_bad_option("kill", argv);
		}
	}
	if (argc - optind < 1)
		return moat_usage_error("kill", "missing container ID");
	if (argc - optind > 2)
		return moat_usage_error("kill", "unexpected argument '%s'", argv[optind + 2]);
	/* Signal 0 only checks that the container's process is there, as kill(1) does. */
	if (argc - optind == 2 && strcmp(argv[optind + 1], "0") == 0)
		sig = 0;
	else if (argc - optind == 2 && moat_signal_parse(argv[optind + 1], &sig) < 0)
		return moat_usage_error("kill", "unknown signal '%s'", argv[optind + 1]);
	if (moat_container_kill(g->root, argv[optind], sig, all, &err) < 0)
		return moat_fail(&err);
	return EXIT_SUCCESS;
}
