/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for the cgroup path mapper (cgroup-path.c).
 *
 * The input's first byte picks the driver (bit 0: systemd, whose cgroupsPath is
 * "slice:prefix:name"); the rest is linux.cgroupsPath, then after a newline the container
 * id. A path that comes out must be normalized: absolute, not the root, no empty, "." or
 * ".." component, no control character, the same when mapped again as an absolute
 * cgroupsPath; with systemd, a scope or a slice.
 *
 *   make fuzz-cgroup-path    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-cgroup-path -max_total_time=60 CORPUS_DIR
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "fuzz-util.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void check_path(const char *path, bool systemd)
{
	moat_error err = MOAT_ERROR_INIT;
	char *again = NULL;

	if (path[0] != '/' || path[1] == '\0' || ends_with(path, "/") || strstr(path, "//") ||
	    strstr(path, "/./") || strstr(path, "/../") || ends_with(path, "/.") ||
	    ends_with(path, "/.."))
		abort(); /* not normalized */
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	if (systemd && !ends_with(path, ".scope") && !ends_with(path, ".slice"))
		abort();
	if (moat_cgroup_resolve_path(path, "id", false, &again, &err) < 0 ||
	    strcmp(path, again) != 0)
		abort(); /* normalizing it again changes it */
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = MOAT_ERROR_INIT;
	char *text, *id, *path = NULL;
	bool systemd;

	if (size == 0)
		return 0;
	systemd = data[0] & 1;
	text = fuzz_strndup(data + 1, size - 1);
	id = strchr(text, '\n');
	if (id != NULL)
		*id++ = '\0';
	if (moat_cgroup_resolve_path(*text ? text : NULL, id, systemd, &path, &err) < 0) {
		if (err.msg == NULL)
			abort(); /* a refusal that does not say why */
	} else {
		check_path(path, systemd);
		free(path);
	}
	moat_error_clear(&err);
	free(text);
	return 0;
}
