/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the features document: built from the same tables the runtime uses, so it cannot
 * claim what moat does not do. */
#include "supported.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "cgroup-systemd.h"
#include "hooks.h"
#include "mount-options.h"
#include "namespaces.h"
#include "oci-features.h"
#include "policy.h"
#include "vm-select.h"
#include "vm-snapshot.h"
#include "vm-virtiofs.h"
#include "process-attrs.h"
#include "spec.h"
#include "syscall-filter.h"
#include "strv.h"
#include "utils.h"

/* A number macro as a string literal, for the texts below. */
#define STR_(x) #x
#define STR(x) STR_(x)

/* "CAP_CHOWN" .. up to the last capability this kernel knows. */
static char **capability_names(size_t *ret_n)
{
	cap_value_t last = cap_max_bits() - 1, c;
	char **v = xcalloc((size_t)last + 2, sizeof(char *));

	for (c = 0; c <= last; c++) {
		char *name = cap_to_name(c);
		char *p;

		v[c] = xstrdup(name ? name : "");
		cap_free(name);
		for (p = v[c]; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
	}
	*ret_n = (size_t)last + 1;
	return v;
}

static struct oci_features_enabled *enabled(bool on)
{
	struct oci_features_enabled *e = xcalloc(1, sizeof(*e));

	e->enabled = on;
	e->enabled_present = true;
	return e;
}

static char **names_of(enum moat_seccomp_names which, size_t *ret_n)
{
	const char *const *v = moat_seccomp_names(which);
	size_t n = 0;

	while (v[n] != NULL)
		n++;
	*ret_n = n;
	return strv_copy(v, n);
}

static struct oci_features_seccomp *seccomp_features(void)
{
	struct oci_features_seccomp *s = xcalloc(1, sizeof(*s));

	s->enabled = true;
	s->enabled_present = true;
	s->actions = names_of(MOAT_SECCOMP_ACTIONS, &s->actions_len);
	s->operators = names_of(MOAT_SECCOMP_OPERATORS, &s->operators_len);
	s->archs = names_of(MOAT_SECCOMP_ARCHES, &s->archs_len);
	s->known_flags = names_of(MOAT_SECCOMP_KNOWN_FLAGS, &s->known_flags_len);
	s->supported_flags = names_of(MOAT_SECCOMP_SUPPORTED_FLAGS, &s->supported_flags_len);
	return s;
}

static struct oci_features_linux *linux_features(void)
{
	struct oci_features_linux *lx = xcalloc(1, sizeof(*lx));
	const char *ns[MOAT_NS_COUNT];
	size_t i;

	for (i = 0; i < MOAT_NS_COUNT; i++)
		ns[i] = moat_ns_oci_name((enum moat_ns)i);
	lx->namespaces = strv_copy(ns, MOAT_NS_COUNT);
	lx->namespaces_len = MOAT_NS_COUNT;
	lx->capabilities = capability_names(&lx->capabilities_len);
	lx->cgroup = xcalloc(1, sizeof(*lx->cgroup));
	/* systemd: with libsystemd, --systemd-cgroup makes the cgroup a transient scope over
	 * D-Bus where systemd is PID 1 (cgroup-systemd.h), the user's manager's when rootless. */
	*lx->cgroup = (struct oci_features_cgroup){ .v1 = true,
						    .v1_present = true,
						    .v2 = true,
						    .v2_present = true,
						    .systemd = moat_systemd_supported(),
						    .systemd_present = true,
						    .systemd_user = moat_systemd_supported(),
						    .systemd_user_present = true,
						    .rdma = true,
						    .rdma_present = true };
	lx->seccomp = seccomp_features();
	lx->apparmor = enabled(moat_lsm_apparmor_available());
	lx->selinux = enabled(moat_lsm_selinux_available());
	lx->intel_rdt = enabled(false);
	lx->mount_extensions = xcalloc(1, sizeof(*lx->mount_extensions));
	lx->mount_extensions->idmap = enabled(true);
	return lx;
}

/* The config annotations moat reads: name, what it does, whether it can lower protection. */
/* clang-format off */
static const struct {
	const char *name;
	const char *doc;
	bool unsafe;
} config_annotations[] = {
	{ MOAT_POLICY_ALLOW_ANNOTATION,
	  "rule[,rule...]: turn these policy rules off for this container, where the policy file "
	  "lists them in containerMayRelax",
	  true },
	{ MOAT_ISOLATION_ANNOTATION,
	  "container|microvm: run the container under a guest kernel of its own (ignored when "
	  "invoked as moat-vm, which always does)",
	  false },
	{ MOAT_VM_ACCEL_ANNOTATION, "kvm|tcg: the microVM's accelerator (kvm needs vmx or svm)",
	  false },
	{ MOAT_VM_VMM_USER_ANNOTATION,
	  "UID:GID: the container ids the microVM's VMM runs as (default 0:0)", false },
	{ MOAT_VM_CPUS_ANNOTATION, "N: the microVM's vCPUs (default: from the CPU quota, else 1)",
	  false },
	{ MOAT_VM_MEMORY_ANNOTATION,
	  "N: the microVM's memory in MiB (default: the memory limit less " STR(MOAT_VM_OVERHEAD_MIB)
	  ", else " STR(MOAT_VM_DEFAULT_MEMORY_MIB) ")", false },
	{ MOAT_VM_BOOT_ANNOTATION,
	  "cold|snapshot: boot the microVM, or restore it from a snapshot (default: a snapshot "
	  "where the VM has no network interfaces and no egress tunnel)", false },
	{ MOAT_VM_SHARE_ANNOTATION,
	  "virtiofs|9p: how the guest gets the rootfs (default: virtiofs where the VM boots and "
	  "virtiofsd is installed, else 9p)", false },
};
/* clang-format on */

/* "a,b,c" of the rules for which pick(p, rule) holds, or each rule=on|off with all. */
static char *rule_list(const struct moat_policy *p,
		       bool (*pick)(const struct moat_policy *, enum moat_policy_rule), bool all)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (out == NULL)
		abort(); /* as xmalloc */
	for (int r = 0; r < MOAT_RULE_COUNT; r++) {
		bool on = pick(p, (enum moat_policy_rule)r);

		if (all)
			fprintf(out, "%s%s=%s", r ? "," : "", moat_policy_rule_name(r),
				on ? "on" : "off");
		else if (on)
			fprintf(out, "%s%s", len ? "," : "", moat_policy_rule_name(r));
		fflush(out);
	}
	fclose(out);
	return buf;
}

/* moat.policy.*: the policy file, each rule's switch, what containers may relax. */
static void describe_policy(const char *path, struct oci_string_map **ann)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy *p = NULL;
	char *list;

	if (moat_policy_load(path, &p, &err) < 0) {
		oci_string_map_set(ann, "moat.policy.error", err.msg ? err.msg : "cannot load");
		moat_error_clear(&err);
		return;
	}
	oci_string_map_set(ann, "moat.policy.file",
			   moat_policy_from_file(p) ? moat_policy_path(p) : "(built-in hardened)");
	list = rule_list(p, moat_policy_rule_enabled, true);
	oci_string_map_set(ann, "moat.policy.rules", list);
	free(list);
	list = rule_list(p, moat_policy_may_relax, false);
	oci_string_map_set(ann, "moat.policy.containerMayRelax", list);
	free(list);
	moat_policy_free(p);
}

int moat_features_json(const char *policy, char **ret, moat_error *err)
{
	const char *hooks[MOAT_HOOK_KIND_COUNT];
	const char *const *opts = moat_mount_opt_names();
	struct oci_features f = { .oci_version_min = xstrdup(MOAT_OCI_VERSION_MIN),
				  .oci_version_max = xstrdup(MOAT_OCI_VERSION) };
	char *msg = NULL;
	size_t n = 0, i;
	int r;

	for (i = 0; i < MOAT_HOOK_KIND_COUNT; i++)
		hooks[i] = moat_hook_kind_name((enum moat_hook_kind)i);
	f.hooks = strv_copy(hooks, MOAT_HOOK_KIND_COUNT);
	f.hooks_len = MOAT_HOOK_KIND_COUNT;
	while (opts[n] != NULL)
		n++;
	f.mount_options = strv_copy(opts, n);
	f.mount_options_len = n;
	f.linux = linux_features();
	oci_string_map_set(&f.annotations, "org.opencontainers.runtime-spec.features.runtime",
			   "moat");
	oci_string_map_set(&f.annotations, "moat.version", PACKAGE_VERSION);
	describe_policy(policy, &f.annotations);
	f.potentially_unsafe_config_annotations =
		xcalloc(MOAT_ARRAY_SIZE(config_annotations) + 1, sizeof(char *));
	for (i = 0; i < MOAT_ARRAY_SIZE(config_annotations); i++) {
		_cleanup_free_ char *key =
			xasprintf("moat.annotation.%s", config_annotations[i].name);

		oci_string_map_set(&f.annotations, key, config_annotations[i].doc);
		if (config_annotations[i].unsafe)
			f.potentially_unsafe_config_annotations
				[f.potentially_unsafe_config_annotations_len++] =
				xstrdup(config_annotations[i].name);
	}
	r = oci_features_generate(&f, true, ret, NULL, &msg);
	if (r < 0)
		moat_error_msg(err, -r, "features: %s", msg ? msg : "generate");
	free(msg);
	/* f lives on the stack: free its members through a heap copy of it. */
	oci_features_free(memcpy(xmalloc(sizeof(f)), &f, sizeof(f)));
	return r < 0 ? moat_error_ret(err) : 0;
}
