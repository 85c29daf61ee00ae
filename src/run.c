/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat run: create and start a container, by default in the foreground. */
#include <stdlib.h>

#include "container.h"
#include "log.h"
#include "moat.h"

int moat_cmd_run(struct moat_globals *g, int argc, char **argv)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_create_opts o;
	struct moat_run_opts r = { 0 };
	int status = 0;

	if (moat_parse_create_args(g, "run", argc, argv, &o, &r) != 0)
		return EXIT_FAILURE;
	if (moat_container_run(&o, &r, &status, &err) < 0)
		return moat_fail(&err);
	moat_log_warnings(&err);
	return r.detach ? EXIT_SUCCESS : status;
}
