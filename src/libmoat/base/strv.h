/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: lists of strings: arrays of char * that own their strings.
 *
 * strv_copy() and strv_push() keep a list NULL-terminated, so it can go to execve() or to
 * strv_free(); a list libocispec parsed is counted, not terminated: strv_free_n() frees it. */
#ifndef MOAT_STRV_H
#define MOAT_STRV_H

#include <stddef.h>

#include "utils.h"

/* A NULL-terminated copy of the n strings of v (v may be NULL when n is 0: an empty list). */
char **strv_copy(const char *const *v, size_t n);
/* Append a copy of s to the n strings of *v and keep the list NULL-terminated. *v may be NULL
 * (with *n 0). */
void strv_push(char ***v, size_t *n, const char *s);
/* Free a NULL-terminated list and its strings; v may be NULL. */
void strv_free(char **v);
MOAT_DEFINE_CLEANUP(char *, strv_free)
/* Free the first n strings of v and v itself; v may be NULL. */
void strv_free_n(char **v, size_t n);

#endif
