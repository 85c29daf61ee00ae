/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a container's events, as `moat events` reports them: its resource statistics (once, or
 * every interval) and each OOM kill in its cgroup, until the container stops. The library
 * watches and waits; the caller is handed one struct moat_event at a time and prints it. */
#ifndef MOAT_EVENTS_H
#define MOAT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "cgroup-stats.h"
#include "error.h"

enum moat_event_type {
	MOAT_EVENT_STATS,   /* stats holds the container's statistics */
	MOAT_EVENT_OOM,     /* one OOM kill in the container's cgroup */
	MOAT_EVENT_WARNING, /* the stream goes on without something; warning says what (one line) */
};

struct moat_event {
	enum moat_event_type type;
	const char *id;                        /* the container */
	const struct moat_cgroup_stats *stats; /* MOAT_EVENT_STATS only */
	const char *warning;                   /* MOAT_EVENT_WARNING only */
};

/* Called for each event; what it is given lives only for the call. A negative return (err
 * filled) ends the stream with that error. */
typedef int (*moat_event_fn)(const struct moat_event *ev, void *data, moat_error *err);

struct moat_events_opts {
	bool once;            /* one MOAT_EVENT_STATS, then return */
	uint64_t interval_ns; /* between two MOAT_EVENT_STATS of the stream (above zero) */
};

/* Report the events of a running, created or paused container to fn: with o->once its
 * statistics, else statistics right away and every o->interval_ns and each OOM kill, until the
 * container's init exits (then 0). A statistics read that fails while the container runs is a
 * MOAT_EVENT_WARNING and the stream goes on; a cgroup without a memory controller is one
 * warning at the start, and no OOM events. The state directory is locked only while the
 * state is read, so the stream does not hold other commands up. */
int moat_container_events(const char *root, const char *id, const struct moat_events_opts *o,
			  moat_event_fn fn, void *data, moat_error *err);

#endif
