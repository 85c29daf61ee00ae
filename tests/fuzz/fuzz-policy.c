/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for the policy file's parser (policy.c).
 *
 * The input is a policy file (moat --policy FILE). One that loads must show (the effective
 * policy in the file format, moat_policy_show) as a file that loads again and shows the
 * same: what `moat policy show` prints can be saved and used.
 *
 *   make fuzz-policy    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-policy -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"
#include "policy.h"

/* Load the file name of the fuzzing directory and show it; NULL when it does not load. */
static char *load_and_show(const char *name)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy *p = NULL;
	char *path = fuzz_path(name), *json = NULL;

	if (moat_policy_load(path, &p, &err) < 0) {
		if (err.msg == NULL)
			abort(); /* a refusal that does not say why */
	} else if (moat_policy_show(p, &json, &err) < 0) {
		abort(); /* a policy that loaded and cannot be shown */
	}
	moat_policy_free(p);
	moat_error_clear(&err);
	free(path);
	return json;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *shown, *again;

	fuzz_write("policy.json", data, size);
	shown = load_and_show("policy.json");
	if (shown == NULL)
		return 0;
	fuzz_write("shown.json", shown, strlen(shown));
	again = load_and_show("shown.json");
	if (again == NULL || strcmp(shown, again) != 0)
		abort(); /* what show printed is not the same policy */
	free(shown);
	free(again);
	return 0;
}
