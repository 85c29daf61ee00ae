/* moat events: a container's resource statistics and OOM kills, as `runc events` prints them:
 * one JSON object per line. With --stats one statistics object; without, one right away and one
 * every --interval, and an "oom" object for each OOM kill, until the container stops. */
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "cgroup-stats.h"
#include "cgroup.h"
#include "log.h"
#include "moat.h"
#include "state.h"
#include "utils.h"

#define NSEC_PER_SEC 1000000000ull
#define DEFAULT_INTERVAL_NS (5 * NSEC_PER_SEC) /* runc's default */
#define POLL_STEP_MS 60000 /* a long interval is waited for in steps of at most this */
/* v1 signals an OOM before the OOM killer has counted its kill: after a signal that showed no
 * new kill, look again every OOM_RECHECK_MS, OOM_RECHECKS times, rather than at the next tick */
#define OOM_RECHECK_MS 20
#define OOM_RECHECKS 10

/* A container being watched: its init (readable once it has exited) and its cgroup. */
struct target {
	const char *id;
	int pidfd;
	struct moat_cgroup *cg;
};

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

/* ---- the container ----------------------------------------------------------------------- */

/* Check the container can be watched and hold on to its init and cgroup. */
static int attach(const struct moat_state *st, enum moat_status status, struct target *t,
		  moat_error *err)
{
	if (status == MOAT_STATUS_STOPPED)
		return moat_error_msg(err, ESRCH, "container '%s' is stopped: no events to report",
				      st->id);
	if (st->cgroup_path == NULL)
		return moat_error_msg(err, EOPNOTSUPP,
				      "container '%s' has no cgroup (a rootless container gets one "
				      "only when its config sets linux.resources): no statistics",
				      st->id);
	t->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)st->pid, 0);
	/* checked again once the pidfd pins the process: the pid may have been reused */
	if (t->pidfd < 0 || !moat_state_pid_alive(st))
		return moat_error_msg(err, ESRCH, "container '%s' is stopped: no events to report",
				      st->id);
	if (moat_cgroup_open(st->cgroup_path, &t->cg, err) < 0)
		return moat_error_prefix(err, "container '%s'", st->id);
	if (!moat_cgroup_exists(t->cg))
		return moat_error_msg(err, ENOENT, "container '%s': its cgroup '%s' is gone",
				      st->id, st->cgroup_path);
	return 0;
}

/* The state directory is locked only while its state is read: events may run for long. */
static int open_target(const char *root, const char *id, struct target *t, moat_error *err)
{
	_cleanup_close_ int dirfd = -1;
	struct moat_state *st = NULL;
	int r;

	t->id = id;
	t->pidfd = -1;
	t->cg = NULL;
	if (moat_state_dir_open(root, id, &dirfd, err) < 0)
		return moat_error_ret(err);
	if (moat_state_read(dirfd, &st, err) < 0) {
		if (err->code == ENOENT)
			moat_error_msg(err, EBUSY, "container '%s' is still being created", id);
		return moat_error_ret(err);
	}
	r = attach(st, moat_state_status(dirfd, st), t, err);
	moat_state_free(st);
	return r;
}

static void close_target(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	moat_cgroup_free(t->cg);
}

/* ---- printing ----------------------------------------------------------------------------- */

static int print_event(const char *type, const char *id, const struct moat_cgroup_stats *s,
		       moat_error *err)
{
	_cleanup_free_ char *json = NULL;

	if (moat_event_json(type, id, s, &json, err) < 0)
		return moat_error_ret(err);
	if (puts(json) < 0 || fflush(stdout) != 0)
		return moat_error_set(err, errno, "events: write to stdout");
	return 0;
}

static int print_stats(struct target *t, moat_error *err)
{
	struct moat_cgroup_stats *s = NULL;
	int r;

	if (moat_cgroup_stats(t->cg, &s, err) < 0)
		return moat_error_prefix(err, "container '%s'", t->id);
	r = print_event("stats", t->id, s, err);
	moat_cgroup_stats_free(s);
	return r;
}

static int print_ooms(struct target *t, struct moat_oom_watch *w, uint64_t *ret_kills,
		      moat_error *err)
{
	uint64_t kills = 0, i;

	*ret_kills = 0;
	if (w == NULL)
		return 0;
	if (moat_oom_watch_check(w, &kills, err) < 0)
		return moat_error_prefix(err, "container '%s'", t->id);
	for (i = 0; i < kills; i++)
		if (print_event("oom", t->id, NULL, err) < 0)
			return moat_error_ret(err);
	*ret_kills = kills;
	return 0;
}

/* ---- streaming ---------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* No memory controller: the statistics still come, the OOM kills cannot; say so once. */
static struct moat_oom_watch *open_oom_watch(struct target *t, moat_error *err)
{
	struct moat_oom_watch *w = NULL;
	moat_error e = MOAT_ERROR_INIT;

	if (moat_oom_watch_open(t->cg, &w, &e) < 0) {
		if (e.code != EOPNOTSUPP) {
			moat_error_msg(err, e.code, "container '%s': %s", t->id, e.msg);
			moat_error_clear(&e);
			return NULL;
		}
		moat_log_warn("events: container '%s': %s: no OOM events will be reported", t->id,
			      e.msg);
	}
	moat_error_clear(&e);
	return w;
}

/* A failed statistics read while the container runs is reported and the stream goes on (the
 * next one may work); once the init has exited, the stream ends. */
static int tick(struct target *t, moat_error *err)
{
	moat_error e = MOAT_ERROR_INIT;
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

	if (print_stats(t, &e) < 0 && poll(&p, 1, 0) == 0)
		moat_log_warn("events: %s", e.msg);
	moat_error_clear(&e);
	return ferror(stdout) ? moat_error_set(err, EIO, "events: write to stdout") : 0;
}

static int poll_timeout(uint64_t until_next_ns, unsigned rechecks)
{
	uint64_t ms = (until_next_ns + 999999) / 1000000;

	if (rechecks > 0 && ms > OOM_RECHECK_MS)
		return OOM_RECHECK_MS;
	return (int)(ms < POLL_STEP_MS ? ms : POLL_STEP_MS);
}

static int stream(struct target *t, uint64_t interval_ns, moat_error *err)
{
	struct moat_oom_watch *w = open_oom_watch(t, err);
	struct pollfd p[2] = { { .fd = t->pidfd, .events = POLLIN },
			       { .fd = w ? moat_oom_watch_fd(w) : -1, .events = POLLIN } };
	uint64_t next = now_ns(), kills;
	unsigned rechecks = 0;
	int r = err->msg != NULL ? moat_error_ret(err) : 0;

	while (r == 0) {
		uint64_t now = now_ns();

		if (now >= next) {
			if ((r = tick(t, err)) < 0)
				break;
			next = now + interval_ns;
		}
		p[0].revents = p[1].revents = 0;
		if (poll(p, 2, poll_timeout(next - now, rechecks)) < 0 && errno != EINTR) {
			r = moat_error_set(err, errno, "events: poll");
			break;
		}
		rechecks = (p[1].revents & POLLIN) ? OOM_RECHECKS : rechecks ? rechecks - 1 : 0;
		/* checked on every wakeup, the last one (the init has exited) included */
		if ((r = print_ooms(t, w, &kills, err)) < 0 || (p[0].revents & (POLLIN | POLLHUP)))
			break;
		if (kills > 0)
			rechecks = 0;
	}
	moat_oom_watch_free(w);
	return r;
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
	uint64_t interval = DEFAULT_INTERVAL_NS;
	bool once = false;
	struct target t;
	const char *id;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': once = true; break;
		case 'i':
			if (!parse_duration(optarg, &interval))
				return moat_usage_error(
					"events",
					"--interval: '%s' is not a duration above zero such as 5s, "
					"500ms or 1m", optarg);
			break;
		case 'h': return usage();
		default: return moat_bad_option("events", argv);
		}
	}
	if (moat_want_id("events", argc, argv, optind, &id) != 0)
		return EXIT_FAILURE;
	r = open_target(g->root, id, &t, &err);
	if (r == 0)
		r = once ? print_stats(&t, &err) : stream(&t, interval, &err);
	close_target(&t);
	return r < 0 ? moat_fail(&err) : EXIT_SUCCESS;
}
