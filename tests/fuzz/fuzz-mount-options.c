/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for a mount's options (mount-options.c).
 *
 * The input is mounts[].options, one option a line. The parse fails only on an empty
 * option; otherwise the lists come out NULL-terminated, and the data (what is no known
 * option) joined with commas in data_str, each key found by get_data and gone after
 * drop_data.
 *
 *   make fuzz-mount-options    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-mount-options -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"
#include "mount-options.h"
#include "utils.h"

/* The input's lines, NULL-terminated, in *ret_n; whether one is empty in *ret_empty. */
static char **split_lines(const uint8_t *data, size_t size, size_t *ret_n, bool *ret_empty)
{
	char *text = fuzz_strndup(data, size), *line = text, *nl;
	char **opts = xcalloc(size + 2, sizeof(*opts));
	size_t n = 0;

	*ret_empty = false;
	do {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		*ret_empty |= *line == '\0';
		opts[n++] = xstrdup(line);
		if (nl != NULL)
			line = nl + 1;
	} while (nl != NULL);
	free(text);
	*ret_n = n;
	return opts;
}

static void check_data(struct moat_mount_opts *o)
{
	char *joined = moat_mount_data_join(o->data, o->data_len);

	if ((o->data ? o->data[o->data_len] != NULL : o->data_len > 0) ||
	    (o->sb_flags ? o->sb_flags[o->sb_flags_len] != NULL : o->sb_flags_len > 0))
		abort(); /* a list not NULL-terminated */
	if ((joined == NULL) != (o->data_str == NULL) ||
	    (joined != NULL && strcmp(joined, o->data_str) != 0))
		abort(); /* data_str is not the data joined */
	free(joined);
	while (o->data_len > 0) {
		char *key = xstrndup(o->data[0], strcspn(o->data[0], "="));

		if (moat_mount_opts_get_data(o, key) == NULL ||
		    moat_mount_opts_drop_data(o, key) == 0 || moat_mount_opts_get_data(o, key))
			abort(); /* a data key not found, or not dropped */
		free(key);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_mount_opts o;
	bool empty;
	size_t n;
	char **opts = split_lines(data, size, &n, &empty);
	int r = moat_mount_opts_parse(opts, n, &o, &err);

	if ((r < 0) != empty || (r < 0 && err.msg == NULL))
		abort(); /* failed on something else than an empty option, or without a word */
	if (r == 0) {
		check_data(&o);
		moat_mount_opts_release(&o);
	}
	moat_error_clear(&err);
	for (size_t i = 0; i < n; i++)
		free(opts[i]);
	free(opts);
	return 0;
}
