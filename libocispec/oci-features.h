/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci-features: the runtime-spec features document (features.md, `moat features`).
 * Storage rules as in ocijson.h. Every `enabled` is tri-state: absent means unknown.
 * Lists are not checked against the spec's enumerations: a runtime may report values
 * newer than this library. */
#ifndef OCI_FEATURES_H
#define OCI_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ocijson.h"

/* GNU C predefines `linux` as 1; see oci-config.h. */
#undef linux

struct oci_features_cgroup {
	bool v1;
	bool v1_present;
	bool v2;
	bool v2_present;
	bool systemd;
	bool systemd_present;
	bool systemd_user; /* systemdUser */
	bool systemd_user_present;
	bool rdma;
	bool rdma_present;
};

struct oci_features_seccomp {
	bool enabled;
	bool enabled_present;
	char **actions;
	size_t actions_len;
	char **operators;
	size_t operators_len;
	char **archs;
	size_t archs_len;
	char **known_flags;
	size_t known_flags_len;
	char **supported_flags;
	size_t supported_flags_len;
};

/* apparmor, selinux, intelRdt, mountExtensions.idmap: {"enabled": bool} */
struct oci_features_enabled {
	bool enabled;
	bool enabled_present;
};

struct oci_features_mount_extensions {
	struct oci_features_enabled *idmap;
};

struct oci_features_linux {
	char **namespaces;
	size_t namespaces_len;
	char **capabilities;
	size_t capabilities_len;
	struct oci_features_cgroup *cgroup;
	struct oci_features_seccomp *seccomp;
	struct oci_features_enabled *apparmor;
	struct oci_features_enabled *selinux;
	struct oci_features_enabled *intel_rdt;
	struct oci_features_mount_extensions *mount_extensions;
};

struct oci_features {
	char *oci_version_min; /* required */
	char *oci_version_max; /* required */
	char **hooks;
	size_t hooks_len;
	char **mount_options;
	size_t mount_options_len;
	struct oci_features_linux *linux;
	struct oci_string_map *annotations;
	char **potentially_unsafe_config_annotations;
	size_t potentially_unsafe_config_annotations_len;
};

extern const struct ocijson_type oci_features_type, oci_features_linux_type,
	oci_features_cgroup_type, oci_features_seccomp_type, oci_features_enabled_type,
	oci_features_mount_extensions_type;

int oci_features_parse_file(const char *path, struct oci_features **ret, char **ret_err);
int oci_features_parse_data(const char *data, size_t len, const char *source_name,
			    struct oci_features **ret, char **ret_err);
int oci_features_generate(const struct oci_features *features, bool pretty, char **ret_json,
			  size_t *ret_len, char **ret_err);
void oci_features_free(struct oci_features *features);

#endif
