/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the hardened default config that `moat spec` writes. */
#ifndef MOAT_SPEC_H
#define MOAT_SPEC_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"

/* The runtime-spec version moat implements: what `moat spec` writes, `moat features` reports
 * as ociVersionMax and `moat --version` prints. The oldest it reads is MOAT_OCI_VERSION_MIN. */
#define MOAT_OCI_VERSION "1.2.0"
#define MOAT_OCI_VERSION_MIN "1.0.0"

/* The default config. Container ids 0..65535 map to host 100000..165535,
 * none of which is a host account. rootless: map container root to uid/gid (the caller)
 * with a range of one, bind /sys instead of mounting it, no gid= for devpts,
 * no cgroup resources. */
int moat_spec_default(bool rootless, uid_t uid, gid_t gid, struct oci_config **ret,
		      moat_error *err);

#endif
