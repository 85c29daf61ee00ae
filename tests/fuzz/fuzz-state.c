/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for reading a container's state.json (state.c).
 *
 * The input is <root>/<id>/state.json, which every command after create reads. A state
 * that reads must give the annotations `moat state` shows, and written again and read
 * back, the same JSON: what moat writes, it reads as it was.
 *
 *   make fuzz-state    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-state -max_total_time=60 CORPUS_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"
#include "fuzz-util.h"
#include "state.h"

/* The directory name of the fuzzing directory, made at the first call. */
static int open_dir(const char *name)
{
	char *path = fuzz_path(name);
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		abort();
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	free(path);
	return fd;
}

static char *json_of(const struct moat_state *st)
{
	char *json = NULL, *msg = NULL;
	size_t len;

	if (ocijson_generate(&moat_state_type, st, false, &json, &len, &msg) < 0)
		abort(); /* a state that reads and cannot be written */
	return json;
}

/* Write st to the directory again, read it back: the same state. */
static void check_round_trip(int againfd, const struct moat_state *st)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_state *back = NULL;
	char *a = json_of(st), *b;

	if (moat_state_write(againfd, st, &err) < 0 || moat_state_read(againfd, &back, &err) < 0)
		abort();
	b = json_of(back);
	if (strcmp(a, b) != 0)
		abort();
	free(a);
	free(b);
	moat_state_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int dirfd = -1, againfd = -1;
	moat_error err = MOAT_ERROR_INIT;
	struct moat_state *st = NULL;

	if (dirfd < 0) {
		dirfd = open_dir("state");
		againfd = open_dir("again");
	}
	fuzz_write("state/" MOAT_STATE_FILE, data, size);
	if (moat_state_read(dirfd, &st, &err) < 0) {
		if (err.msg == NULL)
			abort(); /* a refusal that does not say why */
	} else {
		oci_string_map_free(moat_state_shown_annotations(st));
		check_round_trip(againfd, st);
		moat_state_free(st);
	}
	moat_error_clear(&err);
	return 0;
}
