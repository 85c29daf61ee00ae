/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the options of an OCI mount (mounts[].options), parsed by one table.
 *
 * Every name the runtime-spec and mount(8) define is a row in mount-options.c;
 * anything else is filesystem data ("size=64m", "mode=1777", "newinstance")
 * and goes to the filesystem untouched, even when it looks wrong: the kernel
 * is the judge of data, and its error names the option.
 *
 * One parse gives both views of the same options:
 *   - mount(2): ms_set/ms_clear are MS_* flags, data the comma-joined string;
 *   - the new mount API: attr_set/attr_clr are MOUNT_ATTR_* for the top mount
 *     (fsmount, mount_setattr), rec_attr_* the same applied with AT_RECURSIVE
 *     (the r-prefixed options: rro, rnosuid, ...), sb_flags the names handed to
 *     fsconfig(FSCONFIG_SET_FLAG) for superblock flags (sync, dirsync, ...).
 */
#ifndef MOAT_MOUNT_OPTIONS_H
#define MOAT_MOUNT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct moat_mount_opts {
	unsigned long ms_set;   /* MS_* the options set (mount(2) view) */
	unsigned long ms_clear; /* MS_* the options clear */
	uint64_t attr_set;      /* MOUNT_ATTR_* for the top mount */
	uint64_t attr_clr;      /* MOUNT_ATTR_* to clear (MOUNT_ATTR__ATIME when an atime
				    * option was given: the atime mode is a field, not a bit) */
	uint64_t rec_attr_set;  /* MOUNT_ATTR_* applied recursively (rro, rnosuid, ...) */
	uint64_t rec_attr_clr;
	unsigned long propagation; /* MS_PRIVATE, MS_SLAVE, MS_SHARED, MS_UNBINDABLE; 0 = leave */
	bool propagation_rec;      /* the r-prefixed form (rprivate, ...) */
	bool is_bind;              /* bind or rbind */
	bool is_recursive;         /* rbind */
	bool remount;              /* remount: change an existing mount, make none */
	bool idmap;                /* idmap or ridmap */
	bool idmap_recursive;      /* ridmap */
	bool tmpcopyup;            /* accepted; see mount-options.c */
	bool silent;               /* MS_SILENT (mount(2) only: the new API has no such flag) */
	char **sb_flags;           /* superblock flag names for fsconfig, NULL-terminated */
	size_t sb_flags_len;
	char **data; /* filesystem data, one option per entry, NULL-terminated */
	size_t data_len;
	char *data_str; /* data joined with commas for mount(2); NULL when none */
};

/* Parse opts[0..n). Never fails on an unknown name (that is data); fails with EINVAL only on
 * an empty option. err names the option index as "options[i]". */
int moat_mount_opts_parse(char *const *opts, size_t n, struct moat_mount_opts *ret,
			  moat_error *err);
void moat_mount_opts_release(struct moat_mount_opts *o);

/* Remove every data entry whose key (the part before '=') is key; returns how many. Used to
 * drop an option the environment cannot honour, e.g. devpts gid= for an unmapped group. */
size_t moat_mount_opts_drop_data(struct moat_mount_opts *o, const char *key);

/* Append opt to the filesystem data (an option moat adds, e.g. a tmpfs's mode=). */
void moat_mount_opts_add_data(struct moat_mount_opts *o, const char *opt);

/* data[0..n) joined with commas, as mount(2) takes it; NULL when n is 0. */
char *moat_mount_data_join(char *const *data, size_t n);

/* The data value of key ("size" -> "64m"), or NULL. */
const char *moat_mount_opts_get_data(const struct moat_mount_opts *o, const char *key);

/* Whether name is one of the table's option names (not data). For tests and `features`. */
bool moat_mount_opt_known(const char *name);

/* Every option name in table order, NULL-terminated (for `moat features`, mountOptions). */
const char *const *moat_mount_opt_names(void);

#endif
