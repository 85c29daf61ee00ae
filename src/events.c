/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat events: a container's resource statistics and OOM kills, as `runc events` prints them:
 * one JSON object per line. With --stats one statistics object; without, one right away and one
 * every --interval, and an "oom" object for each OOM kill, until the container stops. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "log.h"
#include "moat.h"
#include "utils.h"

#define NSEC_PER_SEC 1000000000ull
#define DEFAULT_INTERVAL_NS (5 * NSEC_PER_SEC) /* runc's default */

/* ---- --interval: a Go duration such as "5s", "500ms", "1m30s" or "1.5s" --------------------- */

static const struct {
	const char *unit;
	uint64_t ns;
} units[] = {
	/* "ms" before "m": the first unit that matches is taken */
	{ "ns", 1 },
	{ "us", 1000 },
	{ "\xc2\xb5s", 1000 }, /* "µs" */
	{ "ms", 1000000 },
	{ "s", NSEC_PER_SEC },
	{ "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
};

/* One "<digits>[.<digits>]<unit>" term at *p; its value added to *total. */
static bool parse_term(const char **p, uint64_t *total)
{
	uint64_t whole = 0, frac = 0, scale = 1, v;
	size_t digits = 0, i;
	const char *s = *p;

	for (; *s >= '0' && *s <= '9'; s++, digits++)
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, (uint64_t)(*s - '0'), &whole))
			return false;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (scale < NSEC_PER_SEC) { /* finer than 1 ns is dropped */
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
	for (i = 0; i < MOAT_ARRAY_SIZE(units); i++)
		if (strncmp(s, units[i].unit, strlen(units[i].unit)) == 0)
			break;
	if (digits == 0 || i == MOAT_ARRAY_SIZE(units) ||
	    __builtin_mul_overflow(whole, units[i].ns, &v) ||
	    __builtin_add_overflow(v, (uint64_t)((unsigned __int128)frac * units[i].ns / scale),
				   &v) ||
	    __builtin_add_overflow(*total, v, total))
		return false;
	*p = s + strlen(units[i].unit);
	return true;
}

static bool parse_duration(const char *s, uint64_t *ret_ns)
{
	uint64_t total = 0;

	if (*s == '\0')
		return false;
	while (*s != '\0')
		if (!parse_term(&s, &total))
			return false;
	if (total == 0)
		return false;
	*ret_ns = total;
	return true;
}

/* ---- printing ----------------------------------------------------------------------------- */

/* One event: statistics and OOM kills as runc's JSON on stdout, warnings on stderr. */
static int print_event(const struct moat_event *ev, void *data, moat_error *err)
{
	_cleanup_free_ char *json = NULL;

	(void)data;
	if (ev->type == MOAT_EVENT_WARNING) {
		moat_log_warn("events: %s", ev->warning);
		return 0;
	}
	if (moat_event_json(ev->type == MOAT_EVENT_OOM ? "oom" : "stats", ev->id, ev->stats, &json,
			    err) < 0)
		return moat_error_ret(err);
	if (puts(json) < 0 || fflush(stdout) != 0)
		return moat_error_set(err, errno, "events: write to stdout");
	return 0;
}

/* ---- the command ------------------------------------------------------------------------- */

static int usage(void)
{
	printf("Usage: moat events [--stats] [--interval DURATION] ID\n\n"
	       "Print the container's resource statistics and OOM kills as JSON, one object a\n"
	       "line, in the shape `runc events` prints:\n"
	       "  {\"type\":\"stats\",\"id\":ID,\"data\":{...}} and {\"type\":\"oom\",\"id\":ID}\n"
	       "until the container stops.\n\n"
	       "  --stats              print the statistics once and exit\n"
	       "  --interval DURATION  time between statistics, such as 5s (the default), 500ms\n"
	       "                       or 1m\n");
	return EXIT_SUCCESS;
}

int moat_cmd_events(struct moat_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stats", no_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_error_ moat_error err = MOAT_ERROR_INIT;
	struct moat_events_opts o = { .interval_ns = DEFAULT_INTERVAL_NS };
	const char *id;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': o.once = true; break;
		case 'i':
			if (!parse_duration(optarg, &o.interval_ns))
				return moat_usage_error(
					"events",
					"--interval: '%s' is not a duration above zero such as 5s, "
					"500ms or 1m",
					optarg);
			break;
		case 'h': return usage();
		default: return moat_bad_option("events", argv);
		}
	}
	if (moat_want_id("events", argc, argv, optind, &id) != 0)
		return EXIT_FAILURE;
	if (moat_container_events(g->root, id, &o, print_event, NULL, &err) < 0)
		return moat_fail(&err);
	return EXIT_SUCCESS;
}
