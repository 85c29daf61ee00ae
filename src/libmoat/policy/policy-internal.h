/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what policy.c (the file and its presets), policy-rules.c (the rules) and
 * policy-paths.c (which host paths a bind may use) share. */
#ifndef MOAT_POLICY_INTERNAL_H
#define MOAT_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "userns-pool.h"

/* One entry of "rules" in the policy file. Which lists a rule takes is in policy.c's rule
 * table; a list a rule does not take is an error. */
struct policy_rule_doc {
	char *name; /* the map key */
	bool enabled;
	bool enabled_present;
	char **allow;
	size_t allow_len;
	char **deny;
	size_t deny_len;
};

/* "autoUserns": the pool auto-userns lends host ids from (userns-pool.h). */
struct policy_pool_doc {
	uint32_t host_start;
	bool host_start_present;
	uint32_t ids_per_container;
	bool ids_per_container_present;
	uint32_t containers;
	bool containers_present;
};

/* "microvm": isolation defaults (vm-select.h). */
struct policy_vm_doc {
	bool by_default;
	bool by_default_present;
	char *accel;
};

/* The policy file. */
struct policy_doc {
	char *preset; /* "hardened" (default) or "compat" */
	struct policy_rule_doc **rules;
	size_t rules_len;
	char **container_may_relax;
	size_t container_may_relax_len;
	struct policy_pool_doc *auto_userns;
	struct policy_vm_doc *microvm;
};

struct moat_policy {
	char *path; /* the file read, or where the default one would be */
	bool from_file;
	struct policy_doc *doc; /* complete after load: one entry per rule, in rule order */
	const struct policy_rule_doc *rule[MOAT_RULE_COUNT]; /* into doc */
	bool may_relax[MOAT_RULE_COUNT];
	uint64_t cap_denied;     /* capability-ceiling: the capabilities refused */
	struct moat_idpool pool; /* auto-userns: where host ids come from */
};

/* A capability name ("CAP_SYS_ADMIN", case-insensitive, the CAP_ prefix optional) to its
 * number, whatever this kernel knows; -EINVAL for an unknown name. (policy.c) */
int policy_cap_value(const char *name, int *ret);
/* moat_policy_load of path; is_default: path is the default file, which may be absent (the
 * built-in preset) and must belong to root or the caller and be writable by no one else. */
int policy_load_at(const char *path, bool is_default, struct moat_policy **ret, moat_error *err);
/* The rule of that name, or -1. (policy.c) */
int policy_rule_by_name(const char *name);

/* ---- policy-paths.c ---------------------------------------------------------------- */

/* path (relative ones against bundle) with every symlink resolved. The part of the path
 * that does not exist yet is kept as written, normalized ("." and ".." and "//" folded). */
char *policy_resolve_path(const char *path, const char *bundle);
/* The same path, absolute and normalized, but no symlink followed. */
char *policy_lexical_path(const char *path, const char *bundle);

/* Whether a bind source, resolved, is refused by deny-host-mounts, given the rule's allow
 * and deny lists (host paths) from the policy file. written is the source as the config
 * spelled it (its basename also counts for engine sockets). */
bool policy_bind_source_denied(const char *resolved, const char *written,
			       const struct policy_rule_doc *rule);

/* Whether root.path, resolved, is refused: the host's / , a sensitive path itself or an
 * ancestor of one (a root below a sensitive path is an engine's rootfs, which is fine). */
bool policy_root_path_denied(const char *resolved, const struct policy_rule_doc *rule);

/* Whether path is path prefix or below it ("/a/b" is under "/a", "/ab" is not). */
bool policy_path_under(const char *path, const char *prefix);

#endif
