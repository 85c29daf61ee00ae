/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: the result document, "moat.sandbox.result/v1", as the command layer prints it. */
#ifndef MOAT_SANDBOX_JSON_H
#define MOAT_SANDBOX_JSON_H

#include "sandbox.h"

/* The result as pretty JSON, with a newline-free end (allocated). */
char *moat_sandbox_result_json(const struct moat_sandbox_result *r);

#endif
