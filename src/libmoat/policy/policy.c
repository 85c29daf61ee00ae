/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the policy file, its presets and the effective policy.
 *
 * The file (contrib/policy/README.md has the full description):
 *   {
 *     "preset": "hardened",                  hardened (every rule on) or compat (all off)
 *     "rules": {                             only the rules to change from the preset
 *       "deny-host-mounts": {"enabled": true, "allow": ["/srv/data"], "deny": ["/opt/keys"]},
 *       "capability-ceiling": {"deny": ["CAP_SYS_ADMIN"], "allow": []},
 *       "deny-devices": {"allow": ["/dev/sdb"], "deny": ["/dev/nvidia0"]},
 *       "network": {"enabled": false}
 *     },
 *     "containerMayRelax": ["deny-host-mounts"]
 *   }
 * Parsing is strict: wrong types, unknown rule names, unknown members and lists a rule does
 * not take are errors naming the JSON path.
 */
#include "policy-internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <yajl/yajl_tree.h>

#include "syscall-filter.h"
#include "strv.h"
#include "utils.h"

/* What a rule's "allow" and "deny" lists hold, if it takes them. */
enum rule_lists { LISTS_NONE, LISTS_PATHS, LISTS_CAPS };

static const struct {
	const char *name;
	enum rule_lists lists;
} rule_table[MOAT_RULE_COUNT] = {
	[MOAT_RULE_DEFAULT_SECCOMP] = { "default-seccomp", LISTS_NONE },
	[MOAT_RULE_DENY_HOST_MOUNTS] = { "deny-host-mounts", LISTS_PATHS },
	[MOAT_RULE_NO_NEW_PRIVILEGES] = { "no-new-privileges", LISTS_NONE },
	[MOAT_RULE_CAPABILITY_CEILING] = { "capability-ceiling", LISTS_CAPS },
	[MOAT_RULE_DENY_DEVICES] = { "deny-devices", LISTS_PATHS },
	[MOAT_RULE_NETWORK] = { "network", LISTS_NONE },
	[MOAT_RULE_AUTO_USERNS] = { "auto-userns", LISTS_NONE },
};

/* The same names, NULL-terminated, for the parser's key and value checks. */
static const char *const rule_names[MOAT_RULE_COUNT + 1] = {
	"default-seccomp", "deny-host-mounts", "no-new-privileges", "capability-ceiling",
	"deny-devices",    "network",          "auto-userns",       NULL,
};

/* Preset name -> whether every rule starts on. */
static const struct {
	const char *name;
	bool rules_on;
} presets[] = {
	{ "hardened", true },
	{ "compat", false },
};
static const char *const preset_names[] = { "hardened", "compat", NULL };

/* capability-ceiling's refusals unless the file says otherwise: each one undoes the
 * container's isolation by itself. */
static const char *const default_cap_ceiling[] = {
	"CAP_SYS_ADMIN",       /* mount, namespaces, bpf, half the kernel */
	"CAP_SYS_MODULE",      /* load kernel code */
	"CAP_SYS_RAWIO",       /* raw I/O, /dev/mem */
	"CAP_SYS_PTRACE",      /* trace and inject into processes */
	"CAP_SYS_BOOT",        /* reboot, kexec */
	"CAP_SYS_TIME",        /* the host's clock: no namespace for CLOCK_REALTIME */
	"CAP_NET_ADMIN",       /* interfaces, routes, firewall of the namespace's network */
	"CAP_BPF",             /* BPF programs and maps */
	"CAP_PERFMON",         /* perf events: a side channel on the host */
	"CAP_DAC_READ_SEARCH", /* open_by_handle_at: the "shocker" escape */
	"CAP_LINUX_IMMUTABLE", /* immutable and append-only flags */
	"CAP_MAC_ADMIN",       /* change the LSM policy */
	"CAP_SYSLOG",          /* the kernel log and kernel addresses */
};

const char *moat_policy_rule_name(enum moat_policy_rule rule)
{
	return rule_table[rule].name;
}

int policy_rule_by_name(const char *name)
{
	for (int i = 0; i < MOAT_RULE_COUNT; i++)
		if (strcmp(rule_table[i].name, name) == 0)
			return i;
	return -1;
}

int policy_cap_value(const char *name, int *ret)
{
	_cleanup_free_ char *full = NULL;
	cap_value_t v;

	if (strncasecmp(name, "CAP_", 4) != 0)
		name = full = xasprintf("CAP_%s", name);
	if (cap_from_name(name, &v) < 0 || v < 0 || v > 63)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

static int validate_list(const struct ocijson_where *w, const char *key, enum rule_lists kind,
			 char *const *list, size_t n, char **ret_err)
{
	char sub[64];
	int v;

	for (size_t i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s[%zu]", key, i);
		if (kind == LISTS_PATHS && list[i][0] != '/')
			return ocijson_fail(w, sub, ret_err, "'%s' is not an absolute path",
					    list[i]);
		if (kind == LISTS_CAPS && policy_cap_value(list[i], &v) < 0)
			return ocijson_fail(w, sub, ret_err, "unknown capability '%s'", list[i]);
	}
	return 0;
}

static int validate_rule(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct policy_rule_doc *d = obj;
	int r = policy_rule_by_name(d->name);
	enum rule_lists kind = r < 0 ? LISTS_NONE : rule_table[r].lists;

	if (kind == LISTS_NONE && (d->allow != NULL || d->deny != NULL))
		return ocijson_fail(w, d->allow ? "allow" : "deny", ret_err,
				    "the %s rule takes no list", d->name);
	r = validate_list(w, "allow", kind, d->allow, d->allow_len, ret_err);
	if (r == 0)
		r = validate_list(w, "deny", kind, d->deny, d->deny_len, ret_err);
	return r;
}

#define RD struct policy_rule_doc
static const struct ocijson_field rule_fields[] = {
	OCIJSON_KEY(RD, name, rule_names),
	OCIJSON_BOOL_OPT(RD, "enabled", enabled),
	OCIJSON_STR_ARRAY(RD, "allow", allow, 0),
	OCIJSON_STR_ARRAY(RD, "deny", deny, 0),
};
#undef RD
static const struct ocijson_type rule_doc_type =
	OCIJSON_TYPE("policy rule", struct policy_rule_doc, rule_fields, validate_rule);

#define PP struct policy_pool_doc
static const struct ocijson_field pool_fields[] = {
	OCIJSON_U32_OPT(PP, "hostStart", host_start),
	OCIJSON_U32_OPT(PP, "idsPerContainer", ids_per_container),
	OCIJSON_U32_OPT(PP, "containers", containers),
};
#undef PP
static const struct ocijson_type pool_doc_type =
	OCIJSON_TYPE("autoUserns", struct policy_pool_doc, pool_fields, NULL);

static const char *const accel_names[] = { "kvm", "tcg", NULL };
#define PV struct policy_vm_doc
static const struct ocijson_field vm_fields[] = {
	OCIJSON_BOOL_OPT(PV, "default", by_default),
	OCIJSON_ENUM(PV, "accel", accel, accel_names, 0),
};
#undef PV
static const struct ocijson_type vm_doc_type =
	OCIJSON_TYPE("microvm", struct policy_vm_doc, vm_fields, NULL);

#define PD struct policy_doc
static const struct ocijson_field doc_fields[] = {
	OCIJSON_ENUM(PD, "preset", preset, preset_names, 0),
	OCIJSON_OBJ_MAP(PD, "rules", rules, struct policy_rule_doc, &rule_doc_type, 0),
	OCIJSON_ENUM_ARRAY(PD, "containerMayRelax", container_may_relax, rule_names, 0),
	OCIJSON_OBJ(PD, "autoUserns", auto_userns, struct policy_pool_doc, &pool_doc_type, 0),
	OCIJSON_OBJ(PD, "microvm", microvm, struct policy_vm_doc, &vm_doc_type, 0),
};
#undef PD
static const struct ocijson_type doc_type =
	OCIJSON_TYPE("policy", struct policy_doc, doc_fields, NULL);

/* The engine ignores unknown members; in a policy they are mistakes (a misspelt "deny"
 * would silently deny nothing), so they are refused here. */
static int unknown_member(const char *source, const char *path, const char *key, char **ret_err)
{
	*ret_err = xasprintf("%s: %s%s%s: unknown member", source, path, path[0] ? "." : "", key);
	return -EINVAL;
}

static int check_members(yajl_val top, const char *source, char **ret_err)
{
	static const char *const top_keys[] = { "preset",     "rules",   "containerMayRelax",
						"autoUserns", "microvm", NULL };
	static const char *const vm_keys[] = { "default", "accel", NULL };
	static const char *const rule_keys[] = { "enabled", "allow", "deny", NULL };
	static const char *const pool_keys[] = { "hostStart", "idsPerContainer", "containers",
						 NULL };
	yajl_val rules = NULL, pool = NULL, vm = NULL;

	for (size_t i = 0; i < top->u.object.len; i++) {
		if (!ocijson_in_list(top->u.object.keys[i], top_keys))
			return unknown_member(source, "", top->u.object.keys[i], ret_err);
		if (strcmp(top->u.object.keys[i], "rules") == 0)
			rules = top->u.object.values[i];
		if (strcmp(top->u.object.keys[i], "autoUserns") == 0)
			pool = top->u.object.values[i];
		if (strcmp(top->u.object.keys[i], "microvm") == 0)
			vm = top->u.object.values[i];
	}
	for (size_t i = 0; vm != NULL && i < vm->u.object.len; i++)
		if (!ocijson_in_list(vm->u.object.keys[i], vm_keys))
			return unknown_member(source, "microvm", vm->u.object.keys[i], ret_err);
	for (size_t i = 0; pool != NULL && i < pool->u.object.len; i++)
		if (!ocijson_in_list(pool->u.object.keys[i], pool_keys))
			return unknown_member(source, "autoUserns", pool->u.object.keys[i],
					      ret_err);
	for (size_t i = 0; rules != NULL && i < rules->u.object.len; i++) {
		yajl_val rule = rules->u.object.values[i];
		_cleanup_free_ char *path = xasprintf("rules.%s", rules->u.object.keys[i]);

		for (size_t j = 0; j < rule->u.object.len; j++)
			if (!ocijson_in_list(rule->u.object.keys[j], rule_keys))
				return unknown_member(source, path, rule->u.object.keys[j],
						      ret_err);
	}
	return 0;
}

static int parse_doc(const char *data, size_t len, const char *source, struct policy_doc **ret,
		     moat_error *err)
{
	_cleanup_free_ char *msg = NULL, *copy = NULL;
	void *doc = NULL;
	yajl_val tree;
	int r;

	r = ocijson_parse_data(&doc_type, data, len, source, &doc, &msg);
	if (r < 0)
		return moat_error_msg(err, -r, "policy: %s", msg ? msg : source);
	/* Valid JSON within the engine's depth limit by now: the tree is safe to build. */
	copy = strndup(data, len);
	tree = copy ? yajl_tree_parse(copy, NULL, 0) : NULL;
	if (tree == NULL) {
		ocijson_free(&doc_type, doc);
		return moat_error_msg(err, ENOMEM, "policy: %s: cannot parse", source);
	}
	r = check_members(tree, source, &msg);
	yajl_tree_free(tree);
	if (r < 0) {
		ocijson_free(&doc_type, doc);
		return moat_error_msg(err, -r, "policy: %s", msg);
	}
	*ret = doc;
	return 0;
}

static char *cap_canonical_name(int v)
{
	char *name = cap_to_name((cap_value_t)v), *r;

	r = xstrdup(name ? name : "");
	cap_free(name);
	for (char *c = r; *c != '\0'; c++)
		*c = (char)toupper((unsigned char)*c);
	return r;
}

static uint64_t caps_mask(const char *const *names, size_t n)
{
	uint64_t mask = 0;
	int v;

	for (size_t i = 0; i < n; i++)
		if (policy_cap_value(names[i], &v) == 0)
			mask |= UINT64_C(1) << v;
	return mask;
}

/* capability-ceiling: "deny" (or the default list) less "allow", kept as one canonical
 * "deny" list so that `policy show` prints what is in force. */
static void complete_ceiling(struct moat_policy *p, struct policy_rule_doc *e)
{
	uint64_t deny =
		e->deny ? caps_mask((const char *const *)e->deny, e->deny_len)
			: caps_mask(default_cap_ceiling, MOAT_ARRAY_SIZE(default_cap_ceiling));

	deny &= ~caps_mask((const char *const *)e->allow, e->allow_len);
	p->cap_denied = deny;
	strv_free_n(e->deny, e->deny_len);
	strv_free_n(e->allow, e->allow_len);
	e->allow = strv_copy(NULL, 0);
	e->allow_len = 0;
	e->deny = xcalloc(65, sizeof(char *));
	e->deny_len = 0;
	for (int v = 0; v < 64; v++)
		if (deny & (UINT64_C(1) << v))
			e->deny[e->deny_len++] = cap_canonical_name(v);
}

static struct policy_rule_doc *take_entry(struct policy_doc *d, const char *name)
{
	for (size_t i = 0; i < d->rules_len; i++) {
		if (d->rules[i] != NULL && strcmp(d->rules[i]->name, name) == 0)
			return TAKE_PTR(d->rules[i]);
	}
	return NULL;
}

/* autoUserns: the file's values over the defaults, all three written out for `policy show`. */
static void complete_pool(struct moat_policy *p)
{
	struct policy_pool_doc *a = p->doc->auto_userns;

	if (a == NULL)
		a = p->doc->auto_userns = xcalloc(1, sizeof(*a));
	if (!a->host_start_present)
		a->host_start = MOAT_IDPOOL_DEFAULT_START;
	if (!a->ids_per_container_present)
		a->ids_per_container = MOAT_IDPOOL_DEFAULT_IDS;
	if (!a->containers_present)
		a->containers = MOAT_IDPOOL_DEFAULT_CONTAINERS;
	a->host_start_present = a->ids_per_container_present = a->containers_present = true;
	p->pool = (struct moat_idpool){ a->host_start, a->ids_per_container, a->containers };
}

/* microvm: containers by default, the kvm accelerator; written out for `policy show`. */
static void complete_vm(struct moat_policy *p)
{
	struct policy_vm_doc *v = p->doc->microvm;

	if (v == NULL)
		v = p->doc->microvm = xcalloc(1, sizeof(*v));
	v->by_default_present = true;
	if (v->accel == NULL)
		v->accel = xstrdup("kvm");
}

/* Fill in what the file left to the preset: every rule gets an entry, in rule order, with
 * its switch and (for the rules that take them) its lists. */
static void complete(struct moat_policy *p)
{
	struct policy_doc *d = p->doc;
	struct policy_rule_doc **ordered = xcalloc(MOAT_RULE_COUNT, sizeof(*ordered));
	bool on = true;

	if (d->preset == NULL)
		d->preset = xstrdup("hardened");
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(presets); i++)
		if (strcmp(presets[i].name, d->preset) == 0)
			on = presets[i].rules_on;
	for (int r = 0; r < MOAT_RULE_COUNT; r++) {
		struct policy_rule_doc *e = take_entry(d, rule_table[r].name);

		if (e == NULL) {
			e = xcalloc(1, sizeof(*e));
			e->name = xstrdup(rule_table[r].name);
		}
		if (!e->enabled_present)
			e->enabled = on;
		e->enabled_present = true;
		if (rule_table[r].lists != LISTS_NONE && e->allow == NULL)
			e->allow = strv_copy(NULL, 0);
		if (rule_table[r].lists != LISTS_NONE && e->deny == NULL &&
		    r != MOAT_RULE_CAPABILITY_CEILING)
			e->deny = strv_copy(NULL, 0);
		if (r == MOAT_RULE_CAPABILITY_CEILING)
			complete_ceiling(p, e);
		ordered[r] = e;
		p->rule[r] = e;
	}
	for (size_t i = 0; i < d->rules_len; i++)
		ocijson_free(&rule_doc_type,
			     d->rules[i]); /* none left: keys are rule names, once */
	free(d->rules);
	d->rules = ordered;
	d->rules_len = MOAT_RULE_COUNT;
	if (d->container_may_relax == NULL)
		d->container_may_relax = strv_copy(NULL, 0);
	complete_pool(p);
	complete_vm(p);
	for (size_t i = 0; i < d->container_may_relax_len; i++)
		p->may_relax[policy_rule_by_name(d->container_may_relax[i])] = true;
}

/* The default file decides for everyone who runs moat: one that someone other than root (or
 * the caller) may rewrite is refused, as sudo refuses such a sudoers. A file named with
 * --policy is the caller's choice. */
static int check_owner(int fd, const char *path, moat_error *err)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return moat_error_set(err, errno, "policy: stat '%s'", path);
	if (sb.st_uid != 0 && sb.st_uid != geteuid())
		return moat_error_msg(err, EPERM, "policy: %s is owned by uid %u, not root", path,
				      (unsigned)sb.st_uid);
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		return moat_error_msg(err, EPERM, "policy: %s is writable by group or others",
				      path);
	return 0;
}

static int read_doc(const char *path, bool is_default, struct policy_doc **ret, moat_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *data = NULL;
	size_t len;

	if (fd < 0)
		return moat_error_set(err, errno, "policy: open '%s'", path);
	if (is_default && check_owner(fd, path, err) < 0)
		return moat_error_ret(err);
	if (read_fd_all(fd, path, OCIJSON_MAX_FILE_SIZE, &data, &len, err) < 0)
		return moat_error_prefix(err, "policy");
	return parse_doc(data, len, path, ret, err);
}

int moat_policy_load(const char *path, struct moat_policy **ret, moat_error *err)
{
	return policy_load_at(path ? path : MOAT_POLICY_FILE, path == NULL, ret, err);
}

int policy_load_at(const char *path, bool is_default, struct moat_policy **ret, moat_error *err)
{
	struct moat_policy *p = xcalloc(1, sizeof(*p));
	struct stat sb;

	p->path = xstrdup(path);
	if (is_default && stat(p->path, &sb) < 0 && errno == ENOENT) {
		p->doc = xcalloc(1, sizeof(*p->doc));
	} else if (read_doc(p->path, is_default, &p->doc, err) < 0) {
		moat_policy_free(p);
		return moat_error_ret(err);
	} else {
		p->from_file = true;
	}
	complete(p);
	if (moat_idpool_check(&p->pool, "autoUserns", err) < 0) {
		moat_error_prefix(err, "policy: %s", p->path);
		moat_policy_free(p);
		return moat_error_ret(err);
	}
	*ret = p;
	return 0;
}

void moat_policy_free(struct moat_policy *p)
{
	if (p == NULL)
		return;
	ocijson_free(&doc_type, p->doc);
	free(p->path);
	free(p);
}

bool moat_policy_rule_enabled(const struct moat_policy *p, enum moat_policy_rule rule)
{
	return p->rule[rule]->enabled;
}

bool moat_policy_may_relax(const struct moat_policy *p, enum moat_policy_rule rule)
{
	return p->may_relax[rule];
}

void moat_policy_vm_defaults(const struct moat_policy *p, bool *ret_microvm, bool *ret_tcg)
{
	*ret_microvm = p->doc->microvm->by_default;
	*ret_tcg = strcmp(p->doc->microvm->accel, "tcg") == 0;
}

const struct moat_idpool *moat_policy_idpool(const struct moat_policy *p)
{
	return &p->pool;
}

const char *moat_policy_path(const struct moat_policy *p)
{
	return p->path;
}

bool moat_policy_from_file(const struct moat_policy *p)
{
	return p->from_file;
}

int moat_policy_show(const struct moat_policy *p, char **ret_json, moat_error *err)
{
	_cleanup_free_ char *msg = NULL;
	int r = ocijson_generate(&doc_type, p->doc, true, ret_json, NULL, &msg);

	if (r < 0)
		return moat_error_msg(err, -r, "policy: %s", msg ? msg : "generate");
	return 0;
}

/* ---- the default seccomp profile ---------------------------------------------------- */

/* The one place the policy takes the profile from: seccomp-default.c builds
 * contrib/seccomp/default.json into the binary. */
const char *moat_policy_default_seccomp_json(void)
{
	return moat_seccomp_default_json();
}
