/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat features: what this moat supports, as the runtime-spec features document. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "supported.h"
#include "log.h"
#include "moat.h"

int moat_cmd_features(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	moat_error err = MOAT_ERROR_INIT;
	char *json = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return moat_bad_option("features", argv);
		printf("Usage: moat features\n\nPrint what this moat supports (namespaces, "
		       "capabilities, mount options,\nhooks, cgroup, seccomp and LSM support) as the "
		       "OCI runtime-spec features JSON.\nIts annotations also name the policy in force "
		       "(moat.policy.file, each rule\non or off in moat.policy.rules, "
		       "moat.policy.containerMayRelax) and the moat.*\nconfig annotations moat reads "
		       "(moat.annotation.<name>: what it does).\n");
		return EXIT_SUCCESS;
	}
	if (optind < argc)
		return moat_usage_error("features", "unexpected argument '%s'", argv[optind]);
	if (moat_features_json(g->policy, &json, &err) < 0)
		return moat_fail(&err);
	fputs(json, stdout);
	free(json);
	return EXIT_SUCCESS;
}
