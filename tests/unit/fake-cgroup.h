/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fake cgroupfs the cgroup unit tests run on (test-cgroup, test-cgroup-stats,
 * test-cgroup-devices): a temp directory holding a root that moat takes for /sys/fs/cgroup
 * (moat_cgroup_set_fsroot) and a mountinfo that mounts hierarchies in it, with the parts of
 * the test hooks the tests share: a log of every write, and a directory emptied of its files
 * before moat removes it, as cgroupfs lets rmdir do. What the kernel would put in a new
 * directory, and how it answers a write, each test says with its own hooks. */
#ifndef MOAT_TEST_FAKE_CGROUP_H
#define MOAT_TEST_FAKE_CGROUP_H

#include <stdbool.h>
#include <stdio.h>

#include "cgroup/cgroup-internal.h"

struct fake_cgroup {
	char base[64];  /* the temp dir */
	char root[128]; /* the fake fs root, in base */
	char mountinfo[128];
	FILE *mi;  /* the mountinfo being written, until fake_cg_done() */
	char *log; /* "path=value\n" per write, path relative to root, and any lines
			      * a test adds with fake_cg_log() */
};
extern struct fake_cgroup fake;

/* A new fake in /tmp/moat-<tag>-XXXXXX, its root named root_name there, the mountinfo begun
 * with the host's "/" and the log empty. */
void fake_cg_begin(const char *tag, const char *root_name);
/* A mountinfo line: mount id, device 0:dev, mount point mnt (escaped as the kernel escapes
 * it), fstype and superblock options super ("" for none). */
void fake_cg_mount(int id, int dev, const char *mnt, const char *fstype, const char *super);
/* The mountinfo finished; moat's cgroup code pointed at the fake, with hooks (may be NULL). */
void fake_cg_done(const struct moat_cgroup_test_hooks *hooks);
/* moat back on the host's cgroups, the temp dir removed, fake emptied. A cmocka teardown. */
int fake_cg_teardown(void **state);

/* dirfd/name with content (made or replaced). */
void fake_cg_put(int dirfd, const char *name, const char *content);
/* The content of root/rel (the caller frees it), and whether root/rel exists. */
char *fake_cg_get(const char *rel);
bool fake_cg_exists(const char *rel);
/* path (below root) relative to root; "." for root itself. */
const char *fake_cg_rel(const char *path);

/* One line added to fake.log, and the log emptied. */
void fake_cg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fake_cg_log_reset(void);

/* Hook parts: log "rel=value" for a write; empty a directory of its files (removing_dir). */
void fake_cg_log_write(const char *path, const char *value);
void fake_cg_removing_dir(int dirfd, void *data);

#endif
