/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci-state: the OCI runtime-spec state (runtime.md "State"), as printed by `moat state`.
 * Storage rules as in ocijson.h. */
#ifndef OCI_STATE_H
#define OCI_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ocijson.h"

struct oci_state {
	char *oci_version; /* required */
	char *id;          /* required */
	char *status;      /* required: creating created running stopped paused */
	int32_t pid;       /* required when status is created or running */
	bool pid_present;
	char *bundle; /* required: absolute path */
	struct oci_string_map *annotations;
};

extern const struct ocijson_type oci_state_type;

int oci_state_parse_file(const char *path, struct oci_state **ret, char **ret_err);
int oci_state_parse_data(const char *data, size_t len, const char *source_name,
			 struct oci_state **ret, char **ret_err);
int oci_state_generate(const struct oci_state *state, bool pretty, char **ret_json, size_t *ret_len,
		       char **ret_err);
void oci_state_free(struct oci_state *state);

#endif
