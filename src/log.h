/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat command layer: the one place that prints diagnostics.
 *
 * Errors go to stderr as "moat: message" and, with --log, to the log file as
 * text or as one JSON object per line ({"level","msg","time"}), which is
 * what containerd's runc shim and conmon read after a failure. */
#ifndef MOAT_LOG_H
#define MOAT_LOG_H

#include <stdbool.h>

#include "error.h"

enum moat_log_format { MOAT_LOG_TEXT, MOAT_LOG_JSON };

/* Open the log file (append). A NULL path logs to stderr only. */
int moat_log_open(const char *path, enum moat_log_format format, bool debug, moat_error *err);
void moat_log_close(void);

void moat_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void moat_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void moat_log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print the warnings err gathered (after a successful call). */
void moat_log_warnings(const moat_error *err);

/* Print err's warnings and err (once); return the exit status for a failed
 * command. */
int moat_fail(const moat_error *err);

#endif
