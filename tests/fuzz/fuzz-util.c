/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the libFuzzer targets share (fuzz-util.h). */
#include "fuzz-util.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "utils.h"

static char *dir;

static void remove_dir(void)
{
	moat_error err = MOAT_ERROR_INIT;

	remove_tree_at(AT_FDCWD, dir, &err);
	moat_error_clear(&err);
}

const char *fuzz_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (dir != NULL)
		return dir;
	dir = xasprintf("%s/moat-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror(dir);
		abort();
	}
	atexit(remove_dir);
	return dir;
}

char *fuzz_path(const char *name)
{
	return xasprintf("%s/%s", fuzz_dir(), name);
}

void fuzz_write(const char *name, const void *data, size_t size)
{
	char *path = fuzz_path(name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write_all(fd, data, size) < 0) {
		perror(path);
		abort();
	}
	close(fd);
	free(path);
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}
