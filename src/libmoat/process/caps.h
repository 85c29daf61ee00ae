/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: Linux capabilities: names from the config, and applying the five
 * sets to the process that is about to exec. */
#ifndef MOAT_CAPS_H
#define MOAT_CAPS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct moat_caps {
	uint64_t bounding, effective, inheritable, permitted, ambient;
};

/* Turn a list of names ("CAP_CHOWN", case-insensitive, the CAP_ prefix
 * optional) into a bit mask. An unknown name, or one this kernel lacks, is an
 * error naming field[i]. */
int moat_caps_parse(char *const *names, size_t n, const char *field, uint64_t *ret_mask,
		    moat_error *err);

/* The highest capability this kernel knows (/proc/sys/kernel/cap_last_cap). */
int moat_caps_last_cap(void);

/* Call before changing uid/gid so the permitted set survives the switch. */
int moat_caps_keep(moat_error *err);

/* After the uid/gid switch: shrink the bounding set, set the effective,
 * permitted and inheritable sets, then the ambient set. Ambient and
 * inheritable stay empty unless the config asked for them. */
int moat_caps_apply(const struct moat_caps *caps, moat_error *err);

/* Set the effective, permitted and inheritable sets (capset), nothing else. */
int moat_caps_set(uint64_t effective, uint64_t permitted, uint64_t inheritable, moat_error *err);

/* Make the effective set the permitted one, the others unchanged: changing the fs ids from or
 * to 0 drops or raises the file capabilities in it. */
int moat_caps_raise_effective(moat_error *err);

/* Drop every capability from every set (used for helpers such as hooks). */
int moat_caps_drop_all(moat_error *err);

#endif
