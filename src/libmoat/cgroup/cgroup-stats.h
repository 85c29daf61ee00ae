/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a container's resource statistics, read from its cgroup, and notice of OOM kills.
 *
 * moat_cgroup_stats() reads each controller on the side of the host's layout that holds it (the
 * v1 hierarchy when there is one, else the unified one), so hybrid hosts mix the two. The
 * values are those `runc events` reports, in its units (bytes, nanoseconds, counts);
 * moat_event_json() writes them in runc's JSON shape ({"type":"stats","id":...,"data":{...}}),
 * which containerd and monitoring tools parse. A value the host cannot give stays absent; the
 * JSON writer leaves it out, except for the members runc always writes (see there).
 *
 * A struct moat_oom_watch gives a file descriptor that becomes readable when the memory
 * controller reports an OOM (v1: an eventfd registered on memory.oom_control through
 * cgroup.event_control; v2: inotify on memory.events), and counts the OOM kills since the last
 * check from the kernel's oom_kill counter. */
#ifndef MOAT_CGROUP_STATS_H
#define MOAT_CGROUP_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "error.h"
#include "utils.h"

/* One value and whether the host gave it. */
struct moat_stat {
	uint64_t value;
	bool present;
};

/* usage, max usage, limit and failure count of one memory counter (runc's MemoryEntry) */
struct moat_mem_entry {
	struct moat_stat limit;   /* bytes; "max" (no limit) on v2 is UINT64_MAX, as runc has it */
	struct moat_stat usage;   /* bytes */
	struct moat_stat max;     /* bytes: the peak usage */
	struct moat_stat failcnt; /* times the limit was hit (v2: memory.events "max") */
};

struct moat_blkio_entry {
	uint64_t major, minor;
	char op[16]; /* "Read", "Write", "Sync", "Async", "Discard", "Total" */
	uint64_t value;
};

struct moat_blkio_list {
	struct moat_blkio_entry *e;
	size_t n;
};

struct moat_hugetlb_stats {
	char size[16]; /* the page size as the files name it: "2MB", "1GB" */
	struct moat_stat usage, max, failcnt;
};

struct moat_mem_raw {
	char *key; /* a memory.stat key */
	uint64_t value;
};

struct moat_cgroup_stats {
	struct {
		/* nanoseconds: all, kernel and user mode; per CPU likewise */
		struct moat_stat total, kernel, user;
		uint64_t *percpu, *percpu_kernel, *percpu_user;
		size_t n_percpu, n_percpu_kernel, n_percpu_user;
		/* CFS bandwidth: periods, periods throttled, time throttled (ns) */
		struct moat_stat periods, throttled_periods, throttled_time;
	} cpu;
	struct {
		struct moat_stat cache; /* page cache: memory.stat "cache" (v1), "file" (v2) */
		/* swap is memory+swap, as v1's memsw counts it (v2 values are summed) */
		struct moat_mem_entry usage, swap, kernel, kernel_tcp;
		struct moat_mem_raw *raw; /* every key of memory.stat, in file order */
		size_t n_raw;
		struct moat_stat oom_kill; /* OOM kills so far (not part of runc's JSON) */
	} memory;
	struct {
		struct moat_stat current;
		struct moat_stat limit;   /* absent when pids.max is "max" */
		struct moat_stat failcnt; /* forks refused at the limit (pids.events "max") */
		struct moat_stat peak;    /* the most there were (pids.peak, Linux 6.1+) */
	} pids;
	struct {
		struct moat_blkio_list service_bytes; /* bytes per device and operation */
		struct moat_blkio_list serviced;      /* I/O operations per device and operation */
	} blkio;
	struct moat_hugetlb_stats *hugetlb;
	size_t n_hugetlb;
};

/* Read the statistics of an open cgroup. A controller the host lacks, or a file this kernel does
 * not have, leaves its values absent; an unreadable or malformed file is an error that names
 * it. The cgroup must exist (ENOENT otherwise). */
int moat_cgroup_stats(struct moat_cgroup *cg, struct moat_cgroup_stats **ret, moat_error *err);
void moat_cgroup_stats_free(struct moat_cgroup_stats *s);
MOAT_DEFINE_CLEANUP(struct moat_cgroup_stats, moat_cgroup_stats_free)

/* One event as runc prints it, one line without the newline: {"type":TYPE,"id":ID} and, when
 * stats is not NULL, "data" holding the statistics. */
int moat_event_json(const char *type, const char *id, const struct moat_cgroup_stats *stats,
		    char **ret_json, moat_error *err);

struct moat_oom_watch;

/* Watch the cgroup's memory controller for OOM kills. A host or cgroup without a memory
 * controller is EOPNOTSUPP. The kills before this call are not reported. */
int moat_oom_watch_open(struct moat_cgroup *cg, struct moat_oom_watch **ret, moat_error *err);
/* Readable (POLLIN) when the kernel reported an OOM; moat_oom_watch_check() drains it. */
int moat_oom_watch_fd(const struct moat_oom_watch *w);
/* The OOM kills since the last check. Call it whenever the fd is readable, and once more before
 * giving up the watch: the kernel may count a kill a moment after it signalled the OOM. */
int moat_oom_watch_check(struct moat_oom_watch *w, uint64_t *ret_kills, moat_error *err);
void moat_oom_watch_free(struct moat_oom_watch *w);
MOAT_DEFINE_CLEANUP(struct moat_oom_watch, moat_oom_watch_free)

#endif
