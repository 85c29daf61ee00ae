/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat delete: remove a stopped container (any container with --force). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "container.h"
#include "log.h"
#include "moat.h"

int moat_cmd_delete(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	moat_error err = MOAT_ERROR_INIT;
	bool force = false;
	const char *id;
	int c;

	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': force = true; break;
		case 'h':
			printf("Usage: moat delete [--force] ID\n\n"
			       "Delete a stopped or created container (a created one is stopped first):\n"
			       "its processes, cgroup and state. With -f/--force, a running or paused\n"
			       "container is killed first, and a container that does not exist is not\n"
			       "an error.\n");
			return EXIT_SUCCESS;
		default: return moat_bad_option("delete", argv);
		}
	}
	if (moat_want_id("delete", argc, argv, optind, &id) != 0)
		return EXIT_FAILURE;
	if (moat_container_delete(g->root, id, force, &err) < 0)
		return moat_fail(&err);
	moat_log_warnings(&err);
	return EXIT_SUCCESS;
}
