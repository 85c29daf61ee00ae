/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat policy: print the effective policy, or explain what it makes of a bundle's config
 * without running anything. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "moat.h"
#include "oci-config.h"
#include "policy.h"
#include "utils.h"

static void usage(void)
{
	printf("Usage: moat [--policy FILE] policy show\n"
	       "       moat [--policy FILE] policy explain [--bundle DIR]\n\n"
	       "show     print the effective policy (every rule, on or off, with its lists) as\n"
	       "         JSON in the policy file format\n"
	       "explain  print each rule's state (on, off, relaxed by annotation) and what it\n"
	       "         would refuse or change in DIR/config.json (default: the current\n"
	       "         directory); exit 0 if the config would be accepted, 1 if not\n\n"
	       "The policy is read from --policy FILE, else " MOAT_POLICY_FILE " when it\n"
	       "exists, else it is the built-in hardened preset.\n");
}

static const char *const state_names[] = {
	[MOAT_RULE_OFF] = "off", [MOAT_RULE_ON] = "on", [MOAT_RULE_RELAXED] = "relaxed"
};

/* One line per finding, the first beside the rule's name and state. */
static void print_rule(const struct moat_policy_explanation *ex, enum moat_policy_rule rule)
{
	const char *name = moat_policy_rule_name(rule), *state = state_names[ex->state[rule]];
	size_t shown = 0;

	for (size_t i = 0; i < ex->n_findings; i++) {
		const struct moat_policy_finding *f = &ex->findings[i];
		const char *kind = f->refusal ? "refuses" : "changes";

		if (f->rule != rule)
			continue;
		if (shown++ == 0)
			printf("%-19s %-8s %s: %s\n", name, state, kind, f->text);
		else
			printf("%-28s %s: %s\n", "", kind, f->text);
	}
	if (shown == 0 && ex->state[rule] == MOAT_RULE_ON)
		printf("%-19s %-8s ok\n", name, state);
	else if (shown == 0)
		printf("%-19s %s\n", name, state);
}

static int explain(const struct moat_policy *p, const char *bundle)
{
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *path = NULL, *msg = NULL;
	struct moat_policy_explanation *ex = NULL;
	struct oci_config *cfg = NULL;
	char dir[PATH_MAX];
	int r;

	if (realpath(bundle, dir) == NULL) {
		moat_error_set(&err, errno, "policy explain: bundle '%s'", bundle);
		return moat_fail(&err);
	}
	path = xasprintf("%s/config.json", dir);
	r = oci_config_parse_file(path, &cfg, &msg);
	if (r < 0) {
		moat_error_msg(&err, -r, "%s", msg ? msg : path);
		return moat_fail(&err);
	}
	r = moat_policy_explain(p, cfg, dir, &ex, &err);
	oci_config_free(cfg);
	if (r < 0)
		return moat_fail(&err);
	printf("policy: %s%s\n", moat_policy_path(p),
	       moat_policy_from_file(p) ? "" : " (absent: the built-in hardened preset)");
	printf("config: %s\n", path);
	for (int i = 0; i < MOAT_RULE_COUNT; i++)
		print_rule(ex, (enum moat_policy_rule)i);
	if (ex->n_refusals == 0)
		printf("accepted\n");
	else
		printf("refused: %zu refusal%s\n", ex->n_refusals, ex->n_refusals == 1 ? "" : "s");
	r = ex->n_refusals == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	moat_policy_explanation_free(ex);
	return r;
}

static int show(const struct moat_policy *p)
{
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *json = NULL;

	if (moat_policy_show(p, &json, &err) < 0)
		return moat_fail(&err);
	fputs(json, stdout);
	return EXIT_SUCCESS;
}

int moat_cmd_policy(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy *p = NULL;
	const char *bundle = NULL, *what;
	int c, r;

	while ((c = getopt_long(argc, argv, "+b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': bundle = optarg; break;
		case 'h': usage(); return EXIT_SUCCESS;
		default: return moat_bad_option("policy", argv);
		}
	}
	if (optind >= argc)
		return moat_usage_error("policy", "missing 'show' or 'explain'");
	what = argv[optind++];
	/* Options may also follow the subcommand: `policy explain --bundle DIR`. */
	while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': bundle = optarg; break;
		case 'h': usage(); return EXIT_SUCCESS;
		default: return moat_bad_option("policy", argv);
		}
	}
	if (optind < argc)
		return moat_usage_error("policy", "unexpected argument '%s'", argv[optind]);
	if (strcmp(what, "show") != 0 && strcmp(what, "explain") != 0)
		return moat_usage_error("policy", "'%s' is not show or explain", what);
	if (bundle != NULL && strcmp(what, "show") == 0)
		return moat_usage_error("policy", "--bundle is for explain");
	if (moat_policy_load(g->policy, &p, &err) < 0)
		return moat_fail(&err);
	r = strcmp(what, "show") == 0 ? show(p) : explain(p, bundle ? bundle : ".");
	moat_policy_free(p);
	return r;
}
