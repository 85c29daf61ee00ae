/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat list: the containers under --root, as a table, JSON or IDs. */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "log.h"
#include "moat.h"
#include "utils.h"

static void usage(void)
{
	printf("Usage: moat list [--format table|json] [--quiet]\n\n"
	       "  -f, --format F  table (default) or json (an array of `moat state` objects)\n"
	       "  -q, --quiet     print only the container IDs\n");
}

static void print_table(struct moat_report **list, size_t n)
{
	size_t i;

	printf("%-20s %-8s %-10s %-40s %-31s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED",
	       "OWNER");
	for (i = 0; i < n; i++) {
		struct passwd *pw = getpwuid(list[i]->owner);

		printf("%-20s %-8lld %-10s %-40s %-31s %s\n", list[i]->id, (long long)list[i]->pid,
		       list[i]->status, list[i]->bundle, list[i]->created ? list[i]->created : "",
		       pw ? pw->pw_name : "?");
	}
}

static int print_json(struct moat_report **list, size_t n, moat_error *err)
{
	size_t i;

	printf("[");
	for (i = 0; i < n; i++) {
		_cleanup_free_ char *json = NULL, *msg = NULL;
		int r = ocijson_generate(&moat_report_type, list[i], false, &json, NULL, &msg);

		if (r < 0)
			return moat_error_set(err, -r, "list: %s", msg ? msg : "generate");
		printf("%s%s", i ? "," : "", json);
	}
	printf("]\n");
	return 0;
}

int moat_cmd_list(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	moat_error err = MOAT_ERROR_INIT;
	struct moat_report **list = NULL;
	bool quiet = false, json = false;
	size_t n = 0, i;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "f:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") && strcmp(optarg, "table"))
				return moat_usage_error(
					"list", "--format: '%s' is not table or json", optarg);
			json = strcmp(optarg, "json") == 0;
			break;
		case 'q': quiet = true; break;
		case 'h': usage(); return EXIT_SUCCESS;
		default: return moat_bad_option("list", argv);
		}
	}
	if (optind < argc)
		return moat_usage_error("list", "unexpected argument '%s'", argv[optind]);
	if (moat_container_list(g->root, &list, &n, &err) < 0)
		return moat_fail(&err);
	if (quiet) {
		for (i = 0; i < n; i++)
			printf("%s\n", list[i]->id);
	} else if (json) {
		r = print_json(list, n, &err);
	} else {
		print_table(list, n);
	}
	for (i = 0; i < n; i++)
		moat_report_free(list[i]);
	free(list);
	return r < 0 ? moat_fail(&err) : EXIT_SUCCESS;
}
