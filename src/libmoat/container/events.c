/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a container's events: its statistics every interval and its OOM kills, until it stops.
 * The caller prints them (src/events.c prints runc's JSON). */
#include "events.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "container-internal.h"
#include "utils.h"

#define NSEC_PER_SEC 1000000000ull
#define POLL_STEP_MS 60000 /* a long interval is waited for in steps of at most this */
/* v1 signals an OOM before the OOM killer has counted its kill: after a signal that showed no
 * new kill, look again every OOM_RECHECK_MS, OOM_RECHECKS times, rather than at the next tick */
#define OOM_RECHECK_MS 20
#define OOM_RECHECKS 10

/* A container being watched: its init (readable once it has exited) and its cgroup, and who
 * is told. */
struct target {
	const char *id;
	int pidfd;
	struct moat_cgroup *cg;
	moat_event_fn fn;
	void *data;
};

/* ---- the container ----------------------------------------------------------------------- */

/* Check the container can be watched and hold on to its init and cgroup. */
static int attach(const struct moat_opened *c, struct target *t, moat_error *err)
{
	const struct moat_state *st = c->st;

	if (c->status == MOAT_STATUS_STOPPED)
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
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	return attach(&c, t, err);
}

static void close_target(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	moat_cgroup_free(t->cg);
}

/* ---- the events --------------------------------------------------------------------------- */

static int tell(struct target *t, enum moat_event_type type, const struct moat_cgroup_stats *stats,
		const char *warning, moat_error *err)
{
	struct moat_event ev = { .type = type, .id = t->id, .stats = stats, .warning = warning };

	return t->fn(&ev, t->data, err);
}

/* One statistics event for what the cgroup shows now. */
static int tell_stats(struct target *t, moat_error *err)
{
	struct moat_cgroup_stats *s = NULL;
	int r;

	if (moat_cgroup_stats(t->cg, &s, err) < 0)
		return moat_error_prefix(err, "container '%s'", t->id);
	r = tell(t, MOAT_EVENT_STATS, s, NULL, err);
	moat_cgroup_stats_free(s);
	return r;
}

static int tell_ooms(struct target *t, struct moat_oom_watch *w, uint64_t *ret_kills,
		     moat_error *err)
{
	uint64_t kills = 0, i;

	*ret_kills = 0;
	if (w == NULL)
		return 0;
	if (moat_oom_watch_check(w, &kills, err) < 0)
		return moat_error_prefix(err, "container '%s'", t->id);
	for (i = 0; i < kills; i++)
		if (tell(t, MOAT_EVENT_OOM, NULL, NULL, err) < 0)
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
static int open_oom_watch(struct target *t, struct moat_oom_watch **ret, moat_error *err)
{
	moat_error e = MOAT_ERROR_INIT;
	int r = 0;

	*ret = NULL;
	if (moat_oom_watch_open(t->cg, ret, &e) < 0) {
		if (e.code != EOPNOTSUPP) {
			r = moat_error_msg(err, e.code, "container '%s': %s", t->id, e.msg);
		} else {
			_cleanup_free_ char *w = xasprintf("container '%s': %s: no OOM events will "
							   "be reported",
							   t->id, e.msg);

			r = tell(t, MOAT_EVENT_WARNING, NULL, w, err);
		}
	}
	moat_error_clear(&e);
	return r;
}

/* A failed statistics read while the container runs is a warning and the stream goes on (the
 * next one may work); once the init has exited, the stream ends. */
static int tick(struct target *t, moat_error *err)
{
	struct moat_cgroup_stats *s = NULL;
	moat_error e = MOAT_ERROR_INIT;
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
	int r = 0;

	if (moat_cgroup_stats(t->cg, &s, &e) == 0)
		r = tell(t, MOAT_EVENT_STATS, s, NULL, err);
	else if (poll(&p, 1, 0) == 0) {
		_cleanup_free_ char *w = xasprintf("container '%s': %s", t->id, e.msg);

		r = tell(t, MOAT_EVENT_WARNING, NULL, w, err);
	}
	moat_cgroup_stats_free(s);
	moat_error_clear(&e);
	return r;
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
	struct moat_oom_watch *w = NULL;
	int r = open_oom_watch(t, &w, err);
	struct pollfd p[2] = { { .fd = t->pidfd, .events = POLLIN },
			       { .fd = w ? moat_oom_watch_fd(w) : -1, .events = POLLIN } };
	uint64_t next = now_ns(), kills;
	unsigned rechecks = 0;

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
		if ((r = tell_ooms(t, w, &kills, err)) < 0 || (p[0].revents & (POLLIN | POLLHUP)))
			break;
		if (kills > 0)
			rechecks = 0;
	}
	moat_oom_watch_free(w);
	return r;
}

int moat_container_events(const char *root, const char *id, const struct moat_events_opts *o,
			  moat_event_fn fn, void *data, moat_error *err)
{
	struct target t = { .id = id, .pidfd = -1, .fn = fn, .data = data };
	int r = open_target(root, id, &t, err);

	if (r == 0)
		r = o->once ? tell_stats(&t, err) : stream(&t, o->interval_ns, err);
	close_target(&t);
	return r;
}
