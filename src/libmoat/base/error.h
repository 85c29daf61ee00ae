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
	int code;   /* positive errno, or 0 when the cause is not a system error */
	char *msg;  /* NULL when no error is set */
	char *warn; /* warnings gathered on the way ("; "-separated), error or not */
} moat_error;

#define MOAT_ERROR_INIT { 0, NULL, NULL }

/* Set the error to the formatted message followed by ": strerror(errnum)"
 * when errnum > 0. Returns -errnum (or -EINVAL when errnum is 0) so callers
 * can write `return moat_error_set(err, errno, "open '%s'", path);`.
 * Replaces any message already set. err may be NULL. */
int moat_error_set(moat_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int moat_error_setv(moat_error *err, int errnum, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Like moat_error_set, but the message is complete as it is: no
 * strerror is appended. errnum (> 0) is what the caller returns. */
int moat_error_msg(moat_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix context: "context: previous message". Returns -code (or -EINVAL). */
int moat_error_prefix(moat_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Add a warning (something failed that the operation survives, such as a
 * poststart hook): the command layer prints it whatever the outcome. */
void moat_error_warn(moat_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Release the message and warnings and reset the code. err may be NULL. */
void moat_error_clear(moat_error *err);

/* The negative value a function returns for this error. */
int moat_error_ret(const moat_error *err);

#endif
