/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci-features: field tables for the runtime-spec features document. */
#include "oci-features.h"

#define T struct oci_features_cgroup
static const struct ocijson_field cgroup_fields[] = {
	OCIJSON_BOOL_OPT(T, "v1", v1),           OCIJSON_BOOL_OPT(T, "v2", v2),
	OCIJSON_BOOL_OPT(T, "systemd", systemd), OCIJSON_BOOL_OPT(T, "systemdUser", systemd_user),
	OCIJSON_BOOL_OPT(T, "rdma", rdma),
};
const struct ocijson_type oci_features_cgroup_type =
	OCIJSON_TYPE("features.cgroup", T, cgroup_fields, NULL);
#undef T

#define T struct oci_features_seccomp
static const struct ocijson_field seccomp_fields[] = {
	OCIJSON_BOOL_OPT(T, "enabled", enabled),
	OCIJSON_STR_ARRAY(T, "actions", actions, 0),
	OCIJSON_STR_ARRAY(T, "operators", operators, 0),
	OCIJSON_STR_ARRAY(T, "archs", archs, 0),
	OCIJSON_STR_ARRAY(T, "knownFlags", known_flags, 0),
	OCIJSON_STR_ARRAY(T, "supportedFlags", supported_flags, 0),
};
const struct ocijson_type oci_features_seccomp_type =
	OCIJSON_TYPE("features.seccomp", T, seccomp_fields, NULL);
#undef T

#define T struct oci_features_enabled
static const struct ocijson_field enabled_fields[] = {
	OCIJSON_BOOL_OPT(T, "enabled", enabled),
};
const struct ocijson_type oci_features_enabled_type =
	OCIJSON_TYPE("features.enabled", T, enabled_fields, NULL);
#undef T

#define T struct oci_features_mount_extensions
static const struct ocijson_field mount_extensions_fields[] = {
	OCIJSON_OBJ(T, "idmap", idmap, struct oci_features_enabled, &oci_features_enabled_type, 0),
};
const struct ocijson_type oci_features_mount_extensions_type =
	OCIJSON_TYPE("features.mountExtensions", T, mount_extensions_fields, NULL);
#undef T

#define T struct oci_features_linux
#define ENABLED(K, M) \
	OCIJSON_OBJ(T, K, M, struct oci_features_enabled, &oci_features_enabled_type, 0)
static const struct ocijson_field linux_fields[] = {
	OCIJSON_STR_ARRAY(T, "namespaces", namespaces, 0),
	OCIJSON_STR_ARRAY(T, "capabilities", capabilities, 0),
	OCIJSON_OBJ(T, "cgroup", cgroup, struct oci_features_cgroup, &oci_features_cgroup_type, 0),
	OCIJSON_OBJ(T, "seccomp", seccomp, struct oci_features_seccomp, &oci_features_seccomp_type,
		    0),
	ENABLED("apparmor", apparmor),
	ENABLED("selinux", selinux),
	ENABLED("intelRdt", intel_rdt),
	OCIJSON_OBJ(T, "mountExtensions", mount_extensions, struct oci_features_mount_extensions,
		    &oci_features_mount_extensions_type, 0),
};
#undef ENABLED
const struct ocijson_type oci_features_linux_type =
	OCIJSON_TYPE("features.linux", T, linux_fields, NULL);
#undef T

#define T struct oci_features
static const struct ocijson_field features_fields[] = {
	OCIJSON_STR(T, "ociVersionMin", oci_version_min, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "ociVersionMax", oci_version_max, OCIJSON_REQUIRED),
	OCIJSON_STR_ARRAY(T, "hooks", hooks, 0),
	OCIJSON_STR_ARRAY(T, "mountOptions", mount_options, 0),
	OCIJSON_OBJ(T, "linux", linux, struct oci_features_linux, &oci_features_linux_type, 0),
	OCIJSON_STR_MAP(T, "annotations", annotations, 0),
	OCIJSON_STR_ARRAY(T, "potentiallyUnsafeConfigAnnotations",
			  potentially_unsafe_config_annotations, 0),
};
const struct ocijson_type oci_features_type = OCIJSON_TYPE("features", T, features_fields, NULL);
#undef T

OCIJSON_DEFINE_API(oci_features, struct oci_features, oci_features_type)
