/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat spec: write the hardened default config.json. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "moat.h"
#include "spec.h"
#include "utils.h"

static void usage(void)
{
	printf("Usage: moat spec [--bundle DIR] [--rootless]\n\n"
	       "Write DIR/config.json (default: the current directory) with moat's hardened\n"
	       "defaults: a user namespace mapping container root to host uid 100000, no\n"
	       "capabilities, noNewPrivileges, read-only root with a tmpfs /tmp, a network\n"
	       "namespace with loopback only, a pids limit and no host bind mounts.\n\n"
	       "  -b, --bundle DIR  where to write config.json\n"
	       "      --rootless    a config for a non-root user (maps root to your uid)\n");
}

int moat_cmd_spec(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "rootless", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *json = NULL, *msg = NULL, *path = NULL;
	struct oci_config *cfg = NULL;
	const char *bundle = ".";
	bool rootless = false;
	size_t len;
	int c, fd, r;

	(void)g;
	while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': bundle = optarg; break;
		case 'r': rootless = true; break;
		case 'h': usage(); return EXIT_SUCCESS;
		default: return moat_bad_option("spec", argv);
		}
	}
	if (optind < argc)
		return moat_usage_error("spec", "unexpected argument '%s'", argv[optind]);
	if (moat_spec_default(rootless, getuid(), getgid(), &cfg, &err) < 0)
		return moat_fail(&err);
	r = oci_config_generate(cfg, true, &json, &len, &msg);
	oci_config_free(cfg);
	if (r < 0) {
		moat_error_set(&err, -r, "spec: %s", msg ? msg : "generate");
		return moat_fail(&err);
	}
	path = xasprintf("%s/config.json", bundle);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (errno == EEXIST)
			moat_error_msg(&err, EEXIST, "spec: '%s' exists; remove it first", path);
		else
			moat_error_set(&err, errno, "spec: create '%s'", path);
		return moat_fail(&err);
	}
	if (write_all(fd, json, len) < 0 || write_all(fd, "\n", 1) < 0 || close(fd) < 0) {
		moat_error_set(&err, errno, "spec: write '%s'", path);
		return moat_fail(&err);
	}
	return EXIT_SUCCESS;
}
