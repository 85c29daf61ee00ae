/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci-state: field table for the OCI state. "paused" is not in the spec's list but runc
 * and crun report it for frozen containers, and engines expect it. */
#include "oci-state.h"

static const char *const statuses[] = {
	"creating", "created", "running", "stopped", "paused", NULL,
};

static int validate_state(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_state *s = obj;
	bool alive =
		ocijson_in_list(s->status, (const char *const[]){ "created", "running", NULL });

	if (alive && !s->pid_present)
		return ocijson_fail(w, "pid", ret_err, "required when status is %s", s->status);
	if (s->pid_present && s->pid < 0)
		return ocijson_fail(w, "pid", ret_err, "must not be negative, got %d", (int)s->pid);
	return 0;
}

#define T struct oci_state
static const struct ocijson_field state_fields[] = {
	OCIJSON_STR(T, "ociVersion", oci_version, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "id", id, OCIJSON_REQUIRED),
	OCIJSON_ENUM(T, "status", status, statuses, OCIJSON_REQUIRED),
	OCIJSON_I32_OPT(T, "pid", pid),
	OCIJSON_STR(T, "bundle", bundle, OCIJSON_REQUIRED),
	OCIJSON_STR_MAP(T, "annotations", annotations, 0),
};
const struct ocijson_type oci_state_type = OCIJSON_TYPE("state", T, state_fields, validate_state);
#undef T

OCIJSON_DEFINE_API(oci_state, struct oci_state, oci_state_type)
