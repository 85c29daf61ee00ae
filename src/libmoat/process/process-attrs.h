/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the process attributes runtime-spec 1.2 defines beyond identity and
 * limits: process.scheduler, process.ioPriority, process.execCPUAffinity,
 * process.selinuxLabel, process.apparmorProfile, linux.personality and
 * linux.memoryPolicy.
 *
 * Three phases, each naming the config field in its errors:
 *
 *   validate  on the host, before anything exists: everything the config and
 *             the host's sysfs can tell (names, ranges, combinations the
 *             kernel refuses or silently ignores, CPUs and NUMA nodes the
 *             host does not have, an LSM label on a host without that LSM);
 *   apply     in the container init, still root of its user namespace, after
 *             the rlimits are set (RLIMIT_NICE and RLIMIT_RTPRIO count) and
 *             before the identity switch: personality, memory policy, I/O
 *             priority, execCPUAffinity.initial, then the scheduler;
 *   exec      last, after the identity switch, before seccomp and execve:
 *             execCPUAffinity.final and the LSM labels for the exec.
 *
 * What a user namespace cannot grant (real-time and deadline scheduling,
 * the real-time I/O class, a nice value below the current one) fails in
 * apply with the field and the privilege that was missing; nothing is
 * skipped.
 */
#ifndef MOAT_PROCESS_ATTRS_H
#define MOAT_PROCESS_ATTRS_H

#include "error.h"
#include "oci-config.h"

/* The host has the LSM enabled and this moat can use it (SELinux: built with libselinux). */
bool moat_lsm_selinux_available(void);
bool moat_lsm_apparmor_available(void);

int moat_process_attrs_validate(const struct oci_config *cfg, moat_error *err);
int moat_process_attrs_apply(const struct oci_config *cfg, moat_error *err);
int moat_process_attrs_exec(const struct oci_config *cfg, moat_error *err);

#endif
