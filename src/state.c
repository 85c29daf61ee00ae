/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat state: print a container's state as JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "log.h"
#include "moat.h"
#include "utils.h"

int moat_cmd_state(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *json = NULL, *msg = NULL;
	struct moat_report *rep = NULL;
	const char *id;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return moat_bad_option("state", argv);
		printf("Usage: moat state ID\n\nPrint the container's OCI state (ociVersion, id, "
		       "status, pid, bundle,\nrootfs, created, owner, annotations) as JSON.\n");
		return EXIT_SUCCESS;
	}
	if (moat_want_id("state", argc, argv, optind, &id) != 0)
		return EXIT_FAILURE;
	if (moat_container_report(g->root, id, &rep, &err) < 0)
		return moat_fail(&err);
	r = ocijson_generate(&moat_report_type, rep, true, &json, NULL, &msg);
	moat_report_free(rep);
	if (r < 0) {
		moat_error_set(&err, -r, "state: %s", msg ? msg : "generate");
		return moat_fail(&err);
	}
	fputs(json, stdout);
	if (json[0] == '\0' || json[strlen(json) - 1] != '\n')
		putchar('\n');
	return EXIT_SUCCESS;
}
