/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat pause / moat resume: freeze and thaw every process of a container. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "log.h"
#include "moat.h"

static int pause_or_resume(struct moat_globals *g, int argc, char **argv, bool pause)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	const char *cmd = pause ? "pause" : "resume";
	moat_error err = MOAT_ERROR_INIT;
	const char *id;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return moat_bad_option(cmd, argv);
		if (pause)
			printf("Usage: moat pause ID\n\nFreeze every process of the container (its "
			       "cgroup's freezer);\n`moat state` then reports \"paused\".\n");
		else
			printf("Usage: moat resume ID\n\nThaw the processes of a paused "
			       "container.\n");
		return EXIT_SUCCESS;
	}
	if (moat_want_id(cmd, argc, argv, optind, &id) != 0)
		return EXIT_FAILURE;
	if ((pause ? moat_container_pause(g->root, id, &err)
		   : moat_container_resume(g->root, id, &err)) < 0)
		return moat_fail(&err);
	return EXIT_SUCCESS;
}

int moat_cmd_pause(struct moat_globals *g, int argc, char **argv)
{
	return pause_or_resume(g, argc, argv, true);
}

int moat_cmd_resume(struct moat_globals *g, int argc, char **argv)
{
	return pause_or_resume(g, argc, argv, false);
}
