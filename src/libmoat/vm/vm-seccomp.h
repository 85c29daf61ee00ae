/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the seccomp filter of the VMM's side of a microVM: the supervisor and QEMU.
 *
 * The init loads it as the jail's linux.seccomp before it becomes the supervisor, so QEMU
 * inherits it and cannot drop it: it holds whatever binary runs as the VMM, and whatever
 * QEMU's own -sandbox (a second filter on top, applied by QEMU itself) does or does not do.
 * It is moat's default profile (contrib/seccomp/default.json: no namespaces, keyrings, bpf,
 * perf, io_uring, userfaultfd, ptrace, mount API, modules), plus the few calls QEMU makes
 * that ordinary programs do not, each with the reason (vm-seccomp.c). QEMU's calls were
 * read off `strace -f` of microVM runs under TCG; what it probes and can do without
 * (clone3, io_uring_setup) stays denied, and it falls back.
 */
#ifndef MOAT_VM_SECCOMP_H
#define MOAT_VM_SECCOMP_H

#include "error.h"
#include "oci-config.h"

/* The profile, as a linux.seccomp section (the caller frees it with oci_seccomp_type). */
int moat_vm_seccomp_profile(struct oci_seccomp **ret, moat_error *err);

#endif
