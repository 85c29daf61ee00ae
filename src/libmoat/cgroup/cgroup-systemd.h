/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the systemd cgroup driver: a container's cgroup as a transient scope systemd makes.
 *
 * With --systemd-cgroup (or --cgroup-manager systemd) on a host where systemd is PID 1, the
 * container's cgroup is not made by moat with mkdir: it is a transient scope that moat asks
 * systemd for over D-Bus (sd-bus, libsystemd), as runc and crun do, so that systemd knows the
 * cgroup, accounts it under its slice, and leaves it alone. linux.cgroupsPath's
 * "slice:prefix:name" names the scope "<prefix>-<name>.scope" in <slice>
 * (moat_cgroup_resolve_path gives its path). moat starts it with the container's init in it
 * (a scope is made with its first processes), Delegate=yes (the container may manage its own
 * sub-cgroups) and the resources systemd knows as unit properties, converted as runc converts
 * them (MemoryMax, MemoryLow, MemorySwapMax, CPUWeight, CPUQuotaPerSecUSec and
 * CPUQuotaPeriodUSec, AllowedCPUs, AllowedMemoryNodes, TasksMax, IOWeight), waits until
 * systemd's job is done, and then writes every resource to the cgroup's files as it does
 * without systemd (what systemd has no property for, and the same values again, so that the
 * files say what the config says). delete stops the scope.
 *
 * Where systemd is not PID 1, --systemd-cgroup only maps the path: moat makes the cgroup at
 * the path systemd would use, as before. Where it is PID 1 and its bus cannot be reached, or
 * moat was built without libsystemd, that is an error naming it: moat never writes into
 * systemd's tree behind its back. A rootless moat talks to the user's own manager.
 */
#ifndef MOAT_CGROUP_SYSTEMD_H
#define MOAT_CGROUP_SYSTEMD_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"

/* Whether systemd is PID 1 here (its /run/systemd/system is there, as sd_booted says). */
bool moat_systemd_booted(void);
/* Whether moat was built with libsystemd's sd-bus: `moat features` says so. */
bool moat_systemd_supported(void);

/* Start the transient scope whose cgroup is path ("/system.slice/moat-abc.scope", as
 * moat_cgroup_resolve_path makes it) with pid in it and res's properties, and wait until it
 * is started. user: the calling user's manager, not the system's. Errors name the unit and
 * systemd's answer. */
int moat_systemd_scope_start(const char *path, pid_t pid, const struct oci_resources *res,
			     bool user, moat_error *err);
/* The calling user's systemd manager's own cgroup ("/user.slice/user-1000.slice/
 * user@1000.service"): a rootless container's slice:prefix:name is below it. */
int moat_systemd_user_cgroup(char **ret, moat_error *err);
/* Stop that scope and wait; a scope systemd no longer knows is fine. */
int moat_systemd_scope_stop(const char *path, bool user, moat_error *err);

#endif
