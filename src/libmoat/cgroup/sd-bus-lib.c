/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libsystemd's sd-bus, loaded when first needed (sd-bus-lib.h). */
#ifdef HAVE_SYSTEMD
#include "sd-bus-lib.h"

CGROUP_SD_BUS_SYMS(MOAT_DLIB_DEFINE)

/* clang-format off */
static const struct moat_dlib_sym sd_bus_syms[] = {
	CGROUP_SD_BUS_SYMS(MOAT_DLIB_SYM)
	{ NULL, NULL },
};
/* clang-format on */

/* libsystemd's soname has been libsystemd.so.0 since it was made (systemd 209). */
static struct moat_dlib sd_bus_lib = { "libsystemd.so.0", "libsystemd0", sd_bus_syms, NULL };

int cgroup_sd_bus_load(moat_error *err)
{
	return moat_dlib_load(&sd_bus_lib, err);
}
#endif
