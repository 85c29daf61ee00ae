/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the namespaces a config asks for: which to create, which to join
 * by path, and in what order. */
#ifndef MOAT_NAMESPACES_H
#define MOAT_NAMESPACES_H

#include <stdbool.h>

#include "error.h"
#include "oci-config.h"

/* One row per namespace kind, in the order they are joined: user first (the
 * others may belong to it), mount last but one so paths still resolve. */
enum moat_ns {
	MOAT_NS_USER,
	MOAT_NS_PID,
	MOAT_NS_NET,
	MOAT_NS_IPC,
	MOAT_NS_UTS,
	MOAT_NS_CGROUP,
	MOAT_NS_TIME,
	MOAT_NS_MNT,
	MOAT_NS_COUNT,
};

struct moat_ns_plan {
	bool create[MOAT_NS_COUNT]; /* unshare a new one */
	int join_fd[MOAT_NS_COUNT]; /* setns into this fd (opened by the parent), or -1 */
};

/* The OCI name ("network"), the clone flag and the /proc/<pid>/ns/ file. */
const char *moat_ns_oci_name(enum moat_ns ns);
int moat_ns_clone_flag(enum moat_ns ns);
const char *moat_ns_proc_name(enum moat_ns ns);

/* Build the plan from linux.namespaces: opens every path (checking it is a
 * namespace of the right kind) so errors name linux.namespaces[i].path. */
int moat_ns_plan_build(const struct oci_linux *lx, struct moat_ns_plan *plan, moat_error *err);
void moat_ns_plan_close(struct moat_ns_plan *plan);

/* Bring the loopback interface of the calling process's network namespace up, as every new
 * one starts with it down (runc does the same): a server on 127.0.0.1 inside must work. */
int moat_ns_loopback_up(moat_error *err);

/* Clone flags of the namespaces to create, minus those in `except`. */
int moat_ns_plan_flags(const struct moat_ns_plan *plan, int except);

/* setns() into every namespace joined by path, user first; `only` picks
 * the user namespace alone (true) or everything but it (false). */
int moat_ns_join(const struct moat_ns_plan *plan, bool only_user, moat_error *err);

bool moat_ns_in_userns(const struct moat_ns_plan *plan);

#endif
