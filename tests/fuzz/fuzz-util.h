/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the libFuzzer targets under tests/fuzz/ share. Some of moat's parsers read
 * files only (a policy, state.json, a bundle): their input goes into a directory of the
 * fuzzing process's own under $TMPDIR, made at the first input and removed at exit. */
#ifndef MOAT_FUZZ_UTIL_H
#define MOAT_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The process's directory (absolute); aborts when it cannot be made. */
const char *fuzz_dir(void);
/* fuzz_dir()/name, malloc'd. */
char *fuzz_path(const char *name);
/* Write data to fuzz_dir()/name, replacing what it held; aborts on failure. */
void fuzz_write(const char *name, const void *data, size_t size);
/* A NUL-terminated malloc'd copy of data. */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif
