/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a shared library loaded when a command first needs it, not at every start.
 *
 * Every moat process that enters a container starts twice (the binary, then its read-only
 * view, sealed-exe.h), and the dynamic loader maps and relocates every library linked in
 * each time. libarchive (images) and libsystemd (the systemd cgroup driver) bring ICU,
 * libxml2, libstdc++ and the compressors with them, more than half of the loader's work,
 * for commands that most runs never reach; libselinux (an SELinux label) brings libpcre2
 * and a constructor that probes for selinuxfs. Those three are opened with dlopen() by the
 * code that uses them, which calls them through pointers typed from the library's own header
 * (`typeof(archive_read_new) *`), so the compiler still checks every call.
 *
 * Load only in moat's own mount namespace, before any container's root is entered: the
 * library is looked up by its soname in the mount namespace of the caller.
 */
#ifndef MOAT_DLIB_H
#define MOAT_DLIB_H

#include "error.h"

struct moat_dlib_sym {
	const char *name;
	void **slot; /* where the symbol's address goes */
};

struct moat_dlib {
	const char *soname;               /* "libarchive.so.13" */
	const char *package;              /* the Debian package that holds it, for the error */
	const struct moat_dlib_sym *syms; /* ends with { NULL, NULL } */
	void *handle;                     /* NULL until loaded; never closed */
};

/* Load lib and resolve every symbol of its table, once: later calls return 0 at once.
 * On failure nothing is resolved, and err names the library, the package and the cause. */
int moat_dlib_load(struct moat_dlib *lib, moat_error *err);

/* The typed pointer a library's table fills: `MOAT_DLIB_DECLARE(archive_read_new)` in a
 * header, `MOAT_DLIB_DEFINE(...)` in its .c, and `MOAT_DLIB_SYM(...)` in its table. */
#define MOAT_DLIB_DECLARE(f) extern __typeof__(f) *sym_##f;
#define MOAT_DLIB_DEFINE(f) __typeof__(f) *sym_##f;
#define MOAT_DLIB_SYM(f) { #f, (void **)&sym_##f },

#endif
