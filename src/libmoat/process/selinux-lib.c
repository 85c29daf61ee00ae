/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libselinux, loaded when a label is first asked for (selinux-lib.h). */
#include "selinux-lib.h"

#include <stddef.h>

#ifdef HAVE_SELINUX
PROCESS_SELINUX_SYMS(MOAT_DLIB_DEFINE)

/* clang-format off */
static const struct moat_dlib_sym selinux_syms[] = {
	PROCESS_SELINUX_SYMS(MOAT_DLIB_SYM)
	{ NULL, NULL },
};
/* clang-format on */

/* libselinux's soname has been libselinux.so.1 since its first release. */
static struct moat_dlib selinux_lib = { "libselinux.so.1", "libselinux1", selinux_syms, NULL };

int moat_selinux_load(moat_error *err)
{
	return moat_dlib_load(&selinux_lib, err);
}
#endif
