/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libFuzzer entry point for a bundle's config.json, through everything create does
 * before it makes anything (moat_container_check): libocispec's parse, root.path, the
 * policy, the checks of every field, linux.seccomp compiled, the isolation chosen.
 *
 * The input is config.json of a bundle in the fuzzing process's directory (fuzz-util.h),
 * whose rootfs is an empty directory, and it is checked twice: under the hardened policy
 * and under compat (which lets through what hardened refuses early). The state root is a
 * directory there too, so compiled seccomp profiles are cached where the next input finds
 * them. Whatever the config says, a check must not crash, and a refusal must say why.
 * What the check reads of the host, it reads here too: namespace paths are opened
 * read-only, bind sources and hook paths resolved, /dev/kvm and QEMU looked up.
 *
 *   make fuzz-config    (clang -fsanitize=fuzzer,address,undefined)
 *   tests/fuzz/fuzz-config -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "container.h"
#include "fuzz-util.h"
#include "utils.h"

static const char *const policies[] = { "hardened", "compat" };

static void setup(char **bundle, char **root)
{
	char *rootfs;

	if (*bundle != NULL)
		return;
	*bundle = fuzz_path("bundle");
	*root = fuzz_path("root");
	rootfs = fuzz_path("bundle/rootfs");
	if (mkdir(*bundle, 0700) < 0 || mkdir(rootfs, 0700) < 0 || mkdir(*root, 0700) < 0)
		abort();
	free(rootfs);
	fuzz_write("hardened.json", "{\"preset\": \"hardened\"}", 22);
	fuzz_write("compat.json", "{\"preset\": \"compat\"}", 20);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *bundle, *root;

	setup(&bundle, &root);
	fuzz_write("bundle/config.json", data, size);
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		char *file = xasprintf("%s/%s.json", fuzz_dir(), policies[i]);
		struct moat_create_opts o = {
			.root = root,
			.id = "fuzz",
			.bundle = bundle,
			.policy = file,
			.foreground = true, /* process.terminal needs no console socket */
		};
		moat_error err = MOAT_ERROR_INIT;

		if (moat_container_check(&o, &err) < 0 && (err.msg == NULL || err.code <= 0))
			abort(); /* a refusal that does not say why */
		moat_error_clear(&err);
		free(file);
	}
	return 0;
}
