/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat start: let a created container run its user process. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "container.h"
#include "log.h"
#include "moat.h"

int moat_cmd_start(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	moat_error err = MOAT_ERROR_INIT;
	const char *id;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return moat_bad_option("start", argv);
		printf("Usage: moat start ID\n\nRun the user process of a created container.\n");
		return EXIT_SUCCESS;
	}
	if (moat_want_id("start", argc, argv, optind, &id) != 0)
		return EXIT_FAILURE;
	if (moat_container_start(g->root, id, &err) < 0)
		return moat_fail(&err);
	moat_log_warnings(&err);
	return EXIT_SUCCESS;
}
