/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what this moat supports, as the runtime-spec's features document (`moat features`). */
#ifndef MOAT_SUPPORTED_H
#define MOAT_SUPPORTED_H

#include "error.h"

/* The document, pretty-printed JSON; the caller frees it. Its annotations also describe the
 * policy in force (policy: the --policy file, or NULL for the default; a policy that cannot
 * be loaded is reported there, not as an error) and the moat.* config annotations moat
 * reads, which potentiallyUnsafeConfigAnnotations lists when they can lower protection. */
int moat_features_json(const char *policy, char **ret, moat_error *err);

#endif
