/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a shared library loaded when a command first needs it (dlib.h). */
#include "dlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

int moat_dlib_load(struct moat_dlib *lib, moat_error *err)
{
	const struct moat_dlib_sym *s;
	void *handle;

	if (lib->handle != NULL)
		return 0;
	handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
		return moat_error_msg(err, ENOENT, "load %s (Debian package %s): %s", lib->soname,
				      lib->package, dlerror());
	for (s = lib->syms; s->name != NULL; s++) {
		*s->slot = dlsym(handle, s->name);
		if (*s->slot != NULL)
			continue;
		for (const struct moat_dlib_sym *t = lib->syms; t != s; t++)
			*t->slot = NULL;
		dlclose(handle);
		return moat_error_msg(err, ENOENT, "load %s: it has no symbol %s", lib->soname,
				      s->name);
	}
	lib->handle = handle;
	return 0;
}
