/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: linux.resources.devices where there is no v1 devices controller. cgroup v2 has no
 * devices files; the kernel asks the BPF_PROG_TYPE_CGROUP_DEVICE programs attached to the
 * cgroup (and to its ancestors: every one must allow) whenever a process in it opens or
 * mknods a device node. This module compiles the device rules into such a program and
 * installs it on the container's cgroup, replacing the one moat installed before.
 *
 * What the program decides, for a request of a type (b or c), a major, a minor and a set of
 * accesses (any of r, w, m; opening O_RDWR asks r and w at once):
 *   - The rules are: deny everything, then the config's rules in order, then the allows
 *     after them (struct cg_allow): each device linux.devices lists, rwm less what a rule
 *     naming that very device denies, then the spec's default devices (cg_default_devices:
 *     allow rwm).
 *   - Each access is decided on its own by the last rule that matches the device (its type,
 *     "a" or absent matching both; its major and minor, absent or -1 matching any) and names
 *     that access. The request is allowed when every access it asks is allowed.
 * That is what the v1 devices.allow/devices.deny sequence does for the common configs (deny
 * all, then allows; an allow undone by a deny of the same device; allow all, then denies). It
 * differs from v1 in two rarer cases, both towards what the config's order says: a deny that
 * is narrower than an earlier allow ("c 1:* rwm" then deny "c 1:3 w") denies here, where v1
 * only removes an identical entry and ignores it; and accesses granted by different rules add
 * up here ("c 1:* r" and "c *:3 w" let c 1:3 be opened read-write), where v1 wants one entry
 * to grant them all. Type "a" with narrower access or with numbers, which v1 cannot express,
 * is honoured as written.
 *
 * The program looks at the rules from the last to the first and stops at the first that
 * settles the request:
 *     r2 = type, r3 = accesses still undecided, r4 = major, r5 = minor   (from the context)
 *     for each rule, last first:
 *         if the type, major or minor differ: next rule
 *         allow: r3 &= ~access; if r3 == 0: return 1 (allowed); next rule
 *         deny:  if r3 & access: return 0 (denied); next rule
 *     return 0   (the leading deny-all: what no rule allowed is denied)
 */
#ifndef MOAT_CGROUP_V2_DEVICES_H
#define MOAT_CGROUP_V2_DEVICES_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "oci-config.h"

/* prog_name of every program moat attaches: how an update tells its own programs from the
 * ones someone else attached to the same cgroup (those are left alone). */
#define CG_DEV_PROG_NAME "moat_dev"

/* The kernel keeps at most this many programs per cgroup and attach type
 * (BPF_CGROUP_MAX_PROGS). */
#define CG_DEV_MAX_ATTACHED 64

struct cg_dev_prog {
	struct bpf_insn *insns;
	size_t n;
};

struct cg_allows; /* cgroup-internal.h */

/* Compile rules (n of them; rules may be NULL when n is 0), then allows (cg_allows_build),
 * into *ret. Errors name the field (linux.resources.devices[i]..., linux.devices[i]). The
 * program fits in BPF_MAXINSNS instructions, the limit every kernel takes, or the config is
 * refused. */
int cg_v2_devices_compile(struct oci_device_cgroup *const *rules, size_t n,
			  const struct cg_allows *allows, struct cg_dev_prog **ret,
			  moat_error *err);
void cg_dev_prog_free(struct cg_dev_prog *p);

/* Load instructions as a device program named CG_DEV_PROG_NAME: its fd, or a negative errno
 * with the verifier's reason in the message. */
int cg_v2_devices_load(const struct bpf_insn *insns, size_t n, moat_error *err);

/* Install p on the cgroup directory cgfd (dir names it in messages): load it, attach it with
 * BPF_F_ALLOW_MULTI, and only then detach the programs named CG_DEV_PROG_NAME that were
 * attached before, so the cgroup is never without a filter. While both are attached a request
 * needs both to allow it. If detaching fails, the new program stays attached next to the old
 * and the error says so. */
int cg_v2_devices_install(int cgfd, const char *dir, const struct cg_dev_prog *p, moat_error *err);

#endif
