/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the policy, the one place that decides what a config may do.
 *
 * A policy is a set of rules, each on or off (contrib/policy/README.md documents them and
 * the file format). It comes from a JSON file (MOAT_POLICY_FILE, or --policy) or, when
 * the default file does not exist, from the built-in `hardened` preset (every rule on).
 * The `compat` preset turns every rule off and behaves like crun.
 *
 * Applying the policy to a config either refuses it, with one line that names the rule,
 * the offending field and the way to allow it:
 *   policy deny-host-mounts: mounts[3] binds host path /var/run/docker.sock; allow it in
 *   /etc/moat/policy.json or annotate moat.policy.allow=deny-host-mounts
 * or accepts it, possibly after changing it (a default seccomp profile, noNewPrivileges, a
 * user namespace); what it changed is returned as data (struct moat_policy_result), from
 * which the text kept in the state is made.
 *
 * A container relaxes a rule with the annotation moat.policy.allow=<rule>[,<rule>...],
 * and only when the policy file lists that rule in containerMayRelax; otherwise the
 * annotation itself is refused.
 */
#ifndef MOAT_POLICY_H
#define MOAT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "namespaces.h"
#include "oci-config.h"
#include "utils.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define MOAT_POLICY_FILE SYSCONFDIR "/moat/policy.json"
#define MOAT_POLICY_ALLOW_ANNOTATION "moat.policy.allow"
/* Set by the microVM isolation; the deny-devices rule then lets /dev/kvm through. */
#define MOAT_ISOLATION_ANNOTATION "moat.isolation"

enum moat_policy_rule {
	MOAT_RULE_DEFAULT_SECCOMP,
	MOAT_RULE_DENY_HOST_MOUNTS,
	MOAT_RULE_NO_NEW_PRIVILEGES,
	MOAT_RULE_CAPABILITY_CEILING,
	MOAT_RULE_DENY_DEVICES,
	MOAT_RULE_NETWORK,
	MOAT_RULE_AUTO_USERNS,
	MOAT_RULE_COUNT,
};

struct moat_policy;

/* "deny-host-mounts", ... */
const char *moat_policy_rule_name(enum moat_policy_rule rule);

/* Read the policy from path; with path NULL, from MOAT_POLICY_FILE when it exists and the
 * built-in hardened preset when it does not. A file that exists but cannot be read or
 * parsed is an error naming the JSON path of the fault. */
int moat_policy_load(const char *path, struct moat_policy **ret, moat_error *err);
void moat_policy_free(struct moat_policy *p);
MOAT_DEFINE_CLEANUP(struct moat_policy, moat_policy_free)

/* The rule's switch, and whether containers may relax it (containerMayRelax). */
bool moat_policy_rule_enabled(const struct moat_policy *p, enum moat_policy_rule rule);
bool moat_policy_may_relax(const struct moat_policy *p, enum moat_policy_rule rule);

/* The file the policy came from, or where the default one would be. */
const char *moat_policy_path(const struct moat_policy *p);
/* The policy file's "microvm": {"default": bool, "accel": "kvm"|"tcg"}: whether containers
 * are microVMs unless they ask otherwise, and the accelerator they get (vm-select.h). */
void moat_policy_vm_defaults(const struct moat_policy *p, bool *ret_microvm, bool *ret_tcg);

/* The pool auto-userns lends host ids from (policy file: autoUserns). */
struct moat_idpool;
const struct moat_idpool *moat_policy_idpool(const struct moat_policy *p);
/* False for the built-in default (no file was found). */
bool moat_policy_from_file(const struct moat_policy *p);

/* The effective policy (every rule, its switch and its lists) in the file format, so that
 * it can be saved and edited. */
int moat_policy_show(const struct moat_policy *p, char **ret_json, moat_error *err);

/* One change a rule made, for display: "set process.noNewPrivileges to true". */
struct moat_policy_change {
	enum moat_policy_rule rule;
	char *text;
};

/* What applying the policy did to a config. auto-userns' changes are data, for create to act
 * on; every other rule's is a line of text in changes. */
struct moat_policy_result {
	unsigned ns_added;      /* 1U << MOAT_NS_*: the namespaces auto-userns added */
	char *userns_joined;    /* the added user namespace is a sandbox's (a pod's), at this
				 * path: the container has no ids of its own; NULL: a new one */
	uint32_t userns_ids;    /* a new one maps container ids 0..userns_ids-1 */
	char *ping_group_range; /* linux.sysctl net.ipv4.ping_group_range set to this (the
				 * groups the namespace maps), or NULL */
	/* Set by the caller once the pool has lent the new user namespace its host ids (which
	 * the policy maps to the pool's start until then): lent_count ids from lent_start. */
	bool lent;
	uint32_t lent_start, lent_count;
	struct moat_policy_change *changes; /* the other rules', in the order they were made */
	size_t n_changes;
};

void moat_policy_result_free(struct moat_policy_result *res);
MOAT_DEFINE_CLEANUP(struct moat_policy_result, moat_policy_result_free)
/* rule -> what it changed, as the state keeps it and `moat state` shows it
 * (moat.policy.<rule>); NULL when the policy changed nothing. */
struct oci_string_map *moat_policy_result_changes(const struct moat_policy_result *res);

/* Check cfg against p and make the policy's changes to cfg. bundle (absolute) anchors
 * relative bind sources. A refusal is an error (EPERM); on success *ret holds what was
 * changed. */
int moat_policy_apply(const struct moat_policy *p, struct oci_config *cfg, const char *bundle,
		      struct moat_policy_result **ret, moat_error *err);

/* Only the rules in the mask rules (1U << MOAT_RULE_...), with the relaxations cfg's
 * annotations make: what a process added by exec (cfg: the container's config holding that
 * process) and the resources given to update are held to. Changes go into cfg unrecorded. */
#define MOAT_POLICY_EXEC_RULES \
	((1U << MOAT_RULE_NO_NEW_PRIVILEGES) | (1U << MOAT_RULE_CAPABILITY_CEILING))
#define MOAT_POLICY_UPDATE_RULES (1U << MOAT_RULE_DENY_DEVICES)
int moat_policy_apply_rules(const struct moat_policy *p, struct oci_config *cfg, unsigned rules,
			    moat_error *err);

/* What apply would do, rule by rule, without stopping at the first refusal. */
enum moat_rule_state { MOAT_RULE_OFF, MOAT_RULE_ON, MOAT_RULE_RELAXED };

struct moat_policy_finding {
	enum moat_policy_rule rule;
	bool refusal; /* else a change */
	char *text;   /* "mounts[3] binds host path /etc" */
};

struct moat_policy_explanation {
	enum moat_rule_state state[MOAT_RULE_COUNT];
	struct moat_policy_finding *findings;
	size_t n_findings;
	size_t n_refusals;
};

/* Fills *ret for cfg (which it changes as apply would). Fails only on errors that are not
 * refusals (an unknown rule in the annotation, ...). */
int moat_policy_explain(const struct moat_policy *p, struct oci_config *cfg, const char *bundle,
			struct moat_policy_explanation **ret, moat_error *err);
void moat_policy_explanation_free(struct moat_policy_explanation *ex);
MOAT_DEFINE_CLEANUP(struct moat_policy_explanation, moat_policy_explanation_free)

/* The JSON text of moat's default seccomp profile (an OCI LinuxSeccomp object). */
const char *moat_policy_default_seccomp_json(void);

#endif
