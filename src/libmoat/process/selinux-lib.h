/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libselinux, loaded when a label is first asked for (base/dlib.h says why).
 *
 * Linked in, libselinux and the libpcre2 it needs were mapped and relocated at every start
 * of every moat process, twice per container (the binary, then its sealed view), and its
 * constructor probed for selinuxfs each time: 0.3-0.4 ms of each start on the development
 * machine, for a label almost no config sets. process-attrs.c calls it as sym_*() after
 * moat_selinux_load(), which a create or an exec does while it validates
 * process.selinuxLabel, before it forks anything that enters the container: the library is
 * looked up in the host's mount namespace, and the children inherit it mapped.
 */
#ifndef MOAT_PROCESS_SELINUX_LIB_H
#define MOAT_PROCESS_SELINUX_LIB_H

#ifdef HAVE_SELINUX
#include <selinux/selinux.h>

#include "dlib.h"

/* clang-format off */
#define PROCESS_SELINUX_SYMS(X) \
	X(is_selinux_enabled) \
	X(security_check_context) \
	X(setexeccon)
/* clang-format on */

PROCESS_SELINUX_SYMS(MOAT_DLIB_DECLARE)

/* libselinux's functions into sym_*, once per process; err names the library and why. */
int moat_selinux_load(moat_error *err);

#endif
#endif
