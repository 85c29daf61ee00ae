/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: exec --cgroup: a process placed in sub-cgroups of its container's cgroup, with
 * runc's syntax. Each argument is
 *   PATH                        the sub-cgroup PATH in every hierarchy, or
 *   CONTROLLER[,CONTROLLER]:PATH  PATH in the hierarchies that hold those controllers (v1
 *                               names, or v2 ones such as io); the other hierarchies keep
 *                               the container's own cgroup.
 * At most one PATH for every hierarchy, and a controller once; a CONTROLLER:PATH wins over a
 * plain PATH for its hierarchy. PATH is relative to the container's cgroup (a leading '/'
 * changes nothing), may have several levels, and must already exist: moat makes nothing.
 * "." and ".." components and control characters are refused. Errors name the argument:
 *   "--cgroup 'memory:a/b': no sub-cgroup '/sys/fs/cgroup/memory/moat/c1/a/b': No such file
 *    or directory"
 * Nothing here prints. */
#ifndef MOAT_CGROUP_SUB_H
#define MOAT_CGROUP_SUB_H

#include <stddef.h>
#include <sys/types.h>

#include "cgroup.h"
#include "error.h"

struct moat_cgroup_subs;

/* Check and keep n arguments (n may be 0: *ret is then NULL, no sub-cgroup). */
int moat_cgroup_subs_parse(char *const *args, size_t n, struct moat_cgroup_subs **ret,
			   moat_error *err);
/* Put pid into cg, in each hierarchy into the sub-cgroup subs names for it (subs NULL: the
 * cgroup itself, as moat_cgroup_add_pid). Every controller named must be held by a hierarchy
 * the cgroup is in, and each hierarchy may get one path. */
int moat_cgroup_add_pid_within(struct moat_cgroup *cg, pid_t pid,
			       const struct moat_cgroup_subs *subs, moat_error *err);
void moat_cgroup_subs_free(struct moat_cgroup_subs *subs);

#endif
