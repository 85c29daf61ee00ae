/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libsystemd's sd-bus, loaded when the systemd cgroup driver first talks to systemd
 * (base/dlib.h says why).
 *
 * cgroup-systemd.c calls sd-bus as sym_sd_bus_*(), after cgroup_sd_bus_load().
 */
#ifndef MOAT_CGROUP_SD_BUS_LIB_H
#define MOAT_CGROUP_SD_BUS_LIB_H

#include <systemd/sd-bus.h>

#include "dlib.h"

/* clang-format off */
#define CGROUP_SD_BUS_SYMS(X) \
	X(sd_bus_call) \
	X(sd_bus_call_method) \
	X(sd_bus_error_free) \
	X(sd_bus_flush_close_unref) \
	X(sd_bus_get_property_string) \
	X(sd_bus_match_signal) \
	X(sd_bus_message_append) \
	X(sd_bus_message_append_array) \
	X(sd_bus_message_close_container) \
	X(sd_bus_message_new_method_call) \
	X(sd_bus_message_open_container) \
	X(sd_bus_message_read) \
	X(sd_bus_message_unref) \
	X(sd_bus_open_system) \
	X(sd_bus_open_user) \
	X(sd_bus_process) \
	X(sd_bus_slot_unref) \
	X(sd_bus_wait)
/* clang-format on */

CGROUP_SD_BUS_SYMS(MOAT_DLIB_DECLARE)

/* sd-bus's functions into sym_sd_bus_*, once per process. */
int cgroup_sd_bus_load(moat_error *err);

#endif
