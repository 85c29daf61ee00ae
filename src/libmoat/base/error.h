/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: error values that carry a message chain.
 *
 * Library functions return 0 or a negative errno and, on failure, fill a
 * moat_error. Each layer that passes an error up may prefix context, so the
 * command layer prints one line such as
 *   "mount /proc: open_tree '/x': Permission denied".
 * Only the command layer prints; the library never does.
 */
#ifndef MOAT_ERROR_H
#define MOAT_ERROR_H

#include <stdarg.h>

typedef struct moat_error {
	int code;   /* positive errno (EINVAL when the cause is not a system error), 0: none */
	char *msg;  /* NULL when no error is set */
	char *warn; /* warnings gathered on the way ("; "-separated), error or not */
} moat_error;

/* clang-format off */
#define MOAT_ERROR_INIT { 0, NULL, NULL }
/* clang-format on */

/* Set the error to the formatted message followed by ": strerror(errnum)"
 * (errnum > 0, a system call's errno). Returns -errnum so callers can write
 * `return moat_error_set(err, errno, "open '%s'", path);`.
 * Replaces any message already set. err may be NULL. */
int moat_error_set(moat_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Set the error to the formatted message, complete as it is: no strerror is
 * appended. errnum (> 0; EINVAL when it is not) is the code, and -errnum what
 * it returns: `return moat_error_msg(err, EINVAL, "root.path: required");`. */
int moat_error_msg(moat_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix context: "context: previous message". Returns -code (or -EINVAL). */
int moat_error_prefix(moat_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Add a warning (something failed that the operation survives, such as a
 * poststart hook): the command layer prints it whatever the outcome. */
void moat_error_warn(moat_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Recover from the error: release the message and reset the code, keeping the
 * warnings gathered so far for the command layer to print. err may be NULL. */
void moat_error_drop(moat_error *err);

/* Release everything, the message and the warnings, and reset the code: for an
 * error value that goes out of use. err may be NULL. */
void moat_error_clear(moat_error *err);

/* The negative value a function returns for this error. */
int moat_error_ret(const moat_error *err);

#endif
