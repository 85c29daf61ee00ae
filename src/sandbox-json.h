/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: the documents the command layer prints: a command's result
 * ("moat.sandbox.result/v1"), a session's diff ("moat.sandbox.diff/v1") and its status (an
 * element of `moat sandbox ls --format json`). */
#ifndef MOAT_SANDBOX_JSON_H
#define MOAT_SANDBOX_JSON_H

#include <stdbool.h>
#include <time.h>
#include <yajl/yajl_gen.h>

#include "sandbox.h"

/* The result as pretty JSON, with a newline-free end (allocated). */
char *moat_sandbox_result_json(const struct moat_sandbox_result *r);
/* The files of r (a diff's) as pretty JSON, newline-free (allocated). */
char *moat_sandbox_diff_json(const struct moat_sandbox_result *r);

/* What a session's keeper says of it. */
struct moat_sandbox_status {
	const char *name, *isolation, *accel;
	struct timespec created, expires, idle_expires; /* idle_expires 0: none (or busy) */
	bool busy;
	unsigned long commands;
	long keeper_pid;
};
/* One line of JSON (allocated). */
char *moat_sandbox_status_json(const struct moat_sandbox_status *s);

/* Members, for the documents above and the keeper's protocol. A NULL string and a negative
 * integer (when null_if_negative) are null; a zero time is null. */
void sbj_key_str(yajl_gen g, const char *k, const char *v);
void sbj_key_int(yajl_gen g, const char *k, long long v, bool null_if_negative);
void sbj_key_time(yajl_gen g, const char *k, const struct timespec *ts);
/* What g holds, as a string (allocated); g is freed. */
char *sbj_finish(yajl_gen g);

#endif
