/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: reading /proc/<pid>/mountinfo, one line at a time. */
#ifndef MOAT_MOUNTINFO_H
#define MOAT_MOUNTINFO_H

#include <stdbool.h>

/* One line of mountinfo: "id parent maj:min root mountpoint options [optional...] - fstype
 * source super". The strings point into the line, which parsing changes; root and mnt are
 * unescaped, super is left as the kernel wrote it (its options escape commas). */
struct moat_mountinfo {
	const char *dev;  /* major:minor: one per superblock, shared by its bind mounts */
	char *root;       /* the directory of the filesystem mounted here */
	char *mnt;        /* where it is mounted */
	const char *opts; /* the mount's own flags: rw,nosuid,nodev,... */
	const char *fstype;
	const char *source;
	const char *super; /* the superblock's options */
};

/* Split line into e; false when it is not a mountinfo line. */
bool moat_mountinfo_parse(char *line, struct moat_mountinfo *e);

/* Undo mountinfo's \ooo escapes (space, tab, newline, backslash, and in super options the
 * comma and '='), in place. */
void moat_mountinfo_unescape(char *s);

#endif
