/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the policy's rules, applied to a config.
 *
 * One function per rule, in rule order. Each walks the config and calls refuse() for what
 * it will not have and change() for what it sets (auto-userns, whose changes create acts on,
 * records them as data in the result instead). Applying stops at the first refusal (an
 * error); explaining collects every refusal and change instead, so the same code answers
 * both `create` and `moat policy explain`.
 */
#include "policy-internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/nsfs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mount.h"
#include "utils.h"

struct judge {
	const struct moat_policy *p;
	struct oci_config *cfg;
	const char *bundle;
	enum moat_rule_state state[MOAT_RULE_COUNT];
	struct moat_policy_explanation *ex; /* explaining: collect; NULL: stop at a refusal */
	struct moat_policy_result *res;
	moat_error *err;
};

static void add_finding(struct judge *j, enum moat_policy_rule rule, bool refusal, char *text)
{
	struct moat_policy_explanation *ex = j->ex;

	ex->findings = xrealloc(ex->findings, (ex->n_findings + 1) * sizeof(*ex->findings));
	ex->findings[ex->n_findings++] =
		(struct moat_policy_finding){ .rule = rule, .refusal = refusal, .text = text };
	if (refusal)
		ex->n_refusals++;
}

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		abort(); /* as xasprintf: no memory is not something to clean up after */
	return s;
}

/* The rule will not have it: "policy <rule>: <text>; allow it in <file>[ or annotate ...]". */
static int __attribute__((format(printf, 3, 4)))
refuse(struct judge *j, enum moat_policy_rule rule, const char *fmt, ...)
{
	const char *name = moat_policy_rule_name(rule);
	char *text;
	va_list ap;
	int r;

	va_start(ap, fmt);
	text = vformat(fmt, ap);
	va_end(ap);
	if (j->ex != NULL) {
		add_finding(j, rule, true, text);
		return 0;
	}
	if (j->p->may_relax[rule])
		r = moat_error_msg(
			j->err, EPERM,
			"policy %s: %s; allow it in %s or annotate " MOAT_POLICY_ALLOW_ANNOTATION
			"=%s",
			name, text, moat_policy_path(j->p), name);
	else
		r = moat_error_msg(j->err, EPERM, "policy %s: %s; allow it in %s", name, text,
				   moat_policy_path(j->p));
	free(text);
	return r;
}

static void change(struct judge *j, enum moat_policy_rule rule, const char *text)
{
	struct moat_policy_result *res = j->res;

	res->changes = xrealloc(res->changes, (res->n_changes + 1) * sizeof(*res->changes));
	res->changes[res->n_changes++] = (struct moat_policy_change){ rule, xstrdup(text) };
	if (j->ex != NULL)
		add_finding(j, rule, false, xstrdup(text));
}

static const struct oci_namespace *find_ns(const struct oci_config *cfg, const char *type,
					   size_t *ret_idx)
{
	const struct oci_linux *lx = cfg->linux;

	for (size_t i = 0; lx != NULL && i < lx->namespaces_len; i++) {
		if (strcmp(lx->namespaces[i]->type, type) == 0) {
			*ret_idx = i;
			return lx->namespaces[i];
		}
	}
	return NULL;
}

/* path names the namespace this process is in (same nsfs inode). */
static bool is_own_ns(const char *path, const char *own)
{
	struct stat a, b;

	return stat(path, &a) == 0 && stat(own, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* ---- default-seccomp ---------------------------------------------------------------- */

static int rule_default_seccomp(struct judge *j)
{
	const char *json = moat_policy_default_seccomp_json();
	_cleanup_free_ char *msg = NULL;
	void *profile = NULL;
	int r;

	if (j->cfg->linux != NULL && j->cfg->linux->seccomp != NULL)
		return 0;
	r = ocijson_parse_data(&oci_seccomp_type, json, strlen(json), "default seccomp profile",
			       &profile, &msg);
	if (r < 0)
		return moat_error_msg(j->err, -r, "policy default-seccomp: %s",
				      msg ? msg : "invalid profile");
	if (j->cfg->linux == NULL)
		j->cfg->linux = xcalloc(1, sizeof(*j->cfg->linux));
	j->cfg->linux->seccomp = profile;
	change(j, MOAT_RULE_DEFAULT_SECCOMP, "added moat's default profile");
	return 0;
}

/* ---- deny-host-mounts --------------------------------------------------------------- */

static bool is_device_node(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode));
}

static int check_root_path(struct judge *j, const struct policy_rule_doc *rule)
{
	_cleanup_free_ char *resolved = NULL;

	if (j->cfg->root == NULL || j->cfg->root->path == NULL)
		return 0;
	resolved = policy_resolve_path(j->cfg->root->path, j->bundle);
	if (!policy_root_path_denied(resolved, rule))
		return 0;
	return refuse(j, MOAT_RULE_DENY_HOST_MOUNTS, "root.path is host path %s", resolved);
}

static int check_bind(struct judge *j, const struct policy_rule_doc *rule, size_t i)
{
	const struct oci_mount *m = j->cfg->mounts[i];
	_cleanup_free_ char *resolved = NULL, *lexical = NULL;

	if (m->source == NULL || !moat_mount_is_bind(m))
		return 0;
	resolved = policy_resolve_path(m->source, j->bundle);
	/* A device node is deny-devices' to judge. */
	if (is_device_node(resolved) || !policy_bind_source_denied(resolved, m->source, rule))
		return 0;
	lexical = policy_lexical_path(m->source, j->bundle);
	if (policy_bind_source_denied(lexical, m->source, rule))
		return refuse(j, MOAT_RULE_DENY_HOST_MOUNTS, "mounts[%zu] binds host path %s", i,
			      m->source);
	return refuse(j, MOAT_RULE_DENY_HOST_MOUNTS,
		      "mounts[%zu] binds host path %s (resolves to %s)", i, m->source, resolved);
}

static int rule_deny_host_mounts(struct judge *j)
{
	const struct policy_rule_doc *rule = j->p->rule[MOAT_RULE_DENY_HOST_MOUNTS];
	size_t i;
	int r;

	if (find_ns(j->cfg, "mount", &i) == NULL)
		return refuse(j, MOAT_RULE_DENY_HOST_MOUNTS,
			      "linux.namespaces has no mount namespace: the container would share "
			      "the host's mounts");
	r = check_root_path(j, rule);

	for (i = 0; r == 0 && i < j->cfg->mounts_len; i++)
		r = check_bind(j, rule, i);
	return r;
}

/* ---- no-new-privileges -------------------------------------------------------------- */

static int rule_no_new_privileges(struct judge *j)
{
	struct oci_process *proc = j->cfg->process;

	if (proc == NULL || (proc->no_new_privileges_present && proc->no_new_privileges))
		return 0;
	proc->no_new_privileges = true;
	proc->no_new_privileges_present = true;
	change(j, MOAT_RULE_NO_NEW_PRIVILEGES, "set process.noNewPrivileges to true");
	return 0;
}

/* ---- capability-ceiling ------------------------------------------------------------- */

static int check_cap_set(struct judge *j, const char *set, char *const *names, size_t n)
{
	int v, r = 0;

	for (size_t i = 0; r == 0 && i < n; i++) {
		/* An unknown name is not the policy's to judge: the config check refuses it. */
		if (policy_cap_value(names[i], &v) < 0 || !(j->p->cap_denied & (UINT64_C(1) << v)))
			continue;
		r = refuse(j, MOAT_RULE_CAPABILITY_CEILING,
			   "process.capabilities.%s[%zu] asks for %s", set, i, names[i]);
	}
	return r;
}

static int rule_capability_ceiling(struct judge *j)
{
	const struct oci_capabilities *c = j->cfg->process ? j->cfg->process->capabilities : NULL;

	if (c == NULL)
		return 0;
	const struct {
		const char *name;
		char *const *caps;
		size_t n;
	} sets[] = {
		{ "bounding", c->bounding, c->bounding_len },
		{ "effective", c->effective, c->effective_len },
		{ "inheritable", c->inheritable, c->inheritable_len },
		{ "permitted", c->permitted, c->permitted_len },
		{ "ambient", c->ambient, c->ambient_len },
	};

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(sets); i++) {
		int r = check_cap_set(j, sets[i].name, sets[i].caps, sets[i].n);

		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- deny-devices ------------------------------------------------------------------- */

/* Character devices that hand out the host, by path and by number. */
static const struct {
	const char *path;
	unsigned major, minor;
	const char *what;
} host_devices[] = {
	{ "/dev/mem", 1, 1, "physical memory" },
	{ "/dev/kmem", 1, 2, "kernel memory" },
	{ "/dev/port", 1, 4, "I/O ports" },
	{ "/dev/kvm", 10, 232, "KVM, allowed only with " MOAT_ISOLATION_ANNOTATION "=microvm" },
};
#define HOST_DEVICE_KVM 3

static bool in_list(const char *s, char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static bool is_microvm(const struct judge *j)
{
	const char *v = oci_string_map_get(j->cfg->annotations, MOAT_ISOLATION_ANNOTATION);

	return v != NULL && strcmp(v, "microvm") == 0;
}

/* Why the device at path (type 'b', 'c', ...; numbers when known) is refused, or NULL. */
static const char *device_refusal(const struct judge *j, const char *path, char type, bool numbered,
				  unsigned major, unsigned minor)
{
	const struct policy_rule_doc *rule = j->p->rule[MOAT_RULE_DENY_DEVICES];

	if (in_list(path, rule->allow, rule->allow_len))
		return NULL;
	if (in_list(path, rule->deny, rule->deny_len))
		return "in the policy's deny list";
	if (type == 'b')
		return "a block device";
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(host_devices); i++) {
		if (strcmp(path, host_devices[i].path) != 0 &&
		    !(numbered && type != 'p' && major == host_devices[i].major &&
		      minor == host_devices[i].minor))
			continue;
		if (i == HOST_DEVICE_KVM && is_microvm(j))
			return NULL;
		return host_devices[i].what;
	}
	return NULL;
}

static int check_config_devices(struct judge *j)
{
	const struct oci_linux *lx = j->cfg->linux;
	int r = 0;

	for (size_t i = 0; r == 0 && lx != NULL && i < lx->devices_len; i++) {
		const struct oci_device *d = lx->devices[i];
		const char *why =
			device_refusal(j, d->path, d->type[0], d->major_present && d->minor_present,
				       (unsigned)d->major, (unsigned)d->minor);

		if (why != NULL)
			r = refuse(j, MOAT_RULE_DENY_DEVICES,
				   "linux.devices[%zu] is host device %s (%s)", i, d->path, why);
	}
	return r;
}

static int check_bound_devices(struct judge *j)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < j->cfg->mounts_len; i++) {
		const struct oci_mount *m = j->cfg->mounts[i];
		_cleanup_free_ char *resolved = NULL;
		const char *why;
		struct stat sb;

		if (m->source == NULL || !moat_mount_is_bind(m))
			continue;
		resolved = policy_resolve_path(m->source, j->bundle);
		if (stat(resolved, &sb) < 0 || !(S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)))
			continue;
		why = device_refusal(j, resolved, S_ISBLK(sb.st_mode) ? 'b' : 'c', true,
				     major(sb.st_rdev), minor(sb.st_rdev));
		if (why != NULL)
			r = refuse(j, MOAT_RULE_DENY_DEVICES,
				   "mounts[%zu] binds host device %s (%s)", i, m->source, why);
	}
	return r;
}

/* A device cgroup rule that lets the container open every device (or every block device):
 * no type or type a (or b), no numbers, and read or write access. */
static int check_device_rules(struct judge *j)
{
	const struct oci_resources *res = j->cfg->linux ? j->cfg->linux->resources : NULL;
	int r = 0;

	for (size_t i = 0; r == 0 && res != NULL && i < res->devices_len; i++) {
		const struct oci_device_cgroup *d = res->devices[i];
		bool any = d->type == NULL || strcmp(d->type, "a") == 0;

		if (!d->allow || d->major_present || d->minor_present ||
		    (!any && strcmp(d->type, "b") != 0) ||
		    (d->access != NULL && strpbrk(d->access, "rw") == NULL))
			continue;
		r = refuse(j, MOAT_RULE_DENY_DEVICES,
			   "linux.resources.devices[%zu] allows every %sdevice", i,
			   any ? "" : "block ");
	}
	return r;
}

static int rule_deny_devices(struct judge *j)
{
	int r = check_config_devices(j);

	if (r < 0)
		return r;
	r = check_bound_devices(j);
	if (r < 0)
		return r;
	return check_device_rules(j);
}

/* ---- network ------------------------------------------------------------------------ */

static int rule_network(struct judge *j)
{
	size_t i;
	const struct oci_namespace *ns = find_ns(j->cfg, "network", &i);

	if (ns == NULL)
		return refuse(
			j, MOAT_RULE_NETWORK,
			"linux.namespaces has no network namespace (the container would share "
			"the host's network)");
	if (ns->path != NULL && is_own_ns(ns->path, "/proc/self/ns/net"))
		return refuse(j, MOAT_RULE_NETWORK,
			      "linux.namespaces[%zu].path %s is the network namespace moat runs in",
			      i, ns->path);
	return 0;
}

/* ---- auto-userns -------------------------------------------------------------------- */

/* The container's ids (process.user) must fall inside what the namespace will map. */
static int check_user_in_range(struct judge *j, uint32_t ids)
{
	const struct oci_process *pr = j->cfg->process;
	const struct oci_user *u = pr ? pr->user : NULL;

	if (u == NULL)
		return 0;
	if (u->uid >= ids || u->gid >= ids)
		return refuse(j, MOAT_RULE_AUTO_USERNS,
			      "process.user %s %u is outside the %u ids the automatic user "
			      "namespace maps (autoUserns.idsPerContainer)",
			      u->uid >= ids ? "uid" : "gid", u->uid >= ids ? u->uid : u->gid, ids);
	for (size_t i = 0; i < u->additional_gids_len; i++)
		if (u->additional_gids[i] >= ids)
			return refuse(j, MOAT_RULE_AUTO_USERNS,
				      "process.user.additionalGids[%zu] %u is outside the %u ids "
				      "the automatic user namespace maps "
				      "(autoUserns.idsPerContainer)",
				      i, u->additional_gids[i], ids);
	return 0;
}

#define CGROUPNS_ADDED "cgroup namespace added (a cgroup mount in a user namespace needs one)"

static bool mounts_cgroup(const struct oci_config *cfg)
{
	for (size_t i = 0; i < cfg->mounts_len; i++) {
		const char *t = cfg->mounts[i]->type;

		if (t != NULL && (strcmp(t, "cgroup") == 0 || strcmp(t, "cgroup2") == 0))
			return true;
	}
	return false;
}

static void add_ns(struct oci_linux *lx, const char *type)
{
	lx->namespaces =
		xrealloc(lx->namespaces, (lx->namespaces_len + 2) * sizeof(*lx->namespaces));
	lx->namespaces[lx->namespaces_len] = xcalloc(1, sizeof(struct oci_namespace));
	lx->namespaces[lx->namespaces_len]->type = xstrdup(type);
	lx->namespaces[++lx->namespaces_len] = NULL;
}

/* Engines ask that every group may open ICMP sockets ("0 2147483647", Docker's default); the
 * kernel takes only groups the namespace maps, so under the automatic one "every group" is
 * its ids. Returns the new value, or NULL when the config's fits. */
static const char *clamp_ping_groups(struct oci_config *cfg, uint32_t ids, char *buf, size_t size)
{
	struct oci_string_map *sysctl = cfg->linux ? cfg->linux->sysctl : NULL;
	const char *key = "net.ipv4.ping_group_range";
	const char *v = sysctl ? oci_string_map_get(sysctl, key) : NULL;
	unsigned long lo, hi;
	char end;

	if (v == NULL || sscanf(v, "%lu %lu%c", &lo, &hi, &end) != 2 || hi < ids)
		return NULL; /* a malformed value is the kernel's to refuse */
	if (lo >= ids)
		snprintf(buf, size, "1 0"); /* no group: the kernel's default */
	else
		snprintf(buf, size, "%lu %u", lo, ids - 1);
	oci_string_map_set(&cfg->linux->sysctl, key, buf);
	return buf;
}

static struct oci_id_mapping **one_mapping(uint32_t host, uint32_t size)
{
	struct oci_id_mapping **v = xcalloc(2, sizeof(*v));

	v[0] = xcalloc(1, sizeof(**v));
	*v[0] = (struct oci_id_mapping){ .container_id = 0, .host_id = host, .size = size };
	return v;
}

/* The user namespace a joined namespace at path belongs to, when it is not moat's own: a
 * pod's sandbox (its pause or infra container) made by moat with an automatic one. It is
 * named through the sandbox's process, /proc/<pid>/ns/user, which must be that namespace.
 * 0: none; 1: ret holds its path; -1: refused. */
static int sandbox_userns(struct judge *j, size_t i, const char *path, char *ret, size_t size)
{
	_cleanup_close_ int nsfd = open(path, O_RDONLY | O_CLOEXEC), ufd = -1;
	struct stat owner, own, named;
	int pid, end = 0;

	if (nsfd < 0)
		return 0; /* namespaces.c names a path that cannot be opened */
	ufd = ioctl(nsfd, NS_GET_USERNS);
	if (ufd < 0 || fstat(ufd, &owner) < 0 || stat("/proc/self/ns/user", &own) < 0 ||
	    (owner.st_dev == own.st_dev && owner.st_ino == own.st_ino))
		return 0;
	if (sscanf(path, "/proc/%d/ns/%*[a-z_]%n", &pid, &end) != 1 || path[end] != '\0')
		return refuse(j, MOAT_RULE_AUTO_USERNS,
			      "linux.namespaces[%zu].path %s belongs to another user namespace, "
			      "which moat joins only when the path is /proc/<pid>/ns/<type>",
			      i, path);
	snprintf(ret, size, "/proc/%d/ns/user", pid);
	if (stat(ret, &named) < 0 || named.st_dev != owner.st_dev || named.st_ino != owner.st_ino)
		return refuse(j, MOAT_RULE_AUTO_USERNS,
			      "linux.namespaces[%zu].path %s belongs to a user namespace that is "
			      "not %s",
			      i, path, ret);
	return 1;
}

/* The first joined namespace that belongs to a sandbox's user namespace (see above). */
static int find_sandbox_userns(struct judge *j, char *ret, size_t size)
{
	const struct oci_linux *lx = j->cfg->linux;

	for (size_t i = 0; lx != NULL && i < lx->namespaces_len; i++) {
		const struct oci_namespace *ns = lx->namespaces[i];
		int r;

		if (ns->path == NULL || strcmp(ns->type, "user") == 0)
			continue;
		r = sandbox_userns(j, i, ns->path, ret, size);
		if (r != 0)
			return r;
	}
	return 0;
}

/* The user namespace: the sandbox's at sandbox (a path), or a new one mapping container ids
 * 0..ids-1 to the pool's start until create lends it a range. */
static void add_userns(struct oci_linux *lx, const struct moat_idpool *pool, const char *sandbox)
{
	add_ns(lx, "user");
	if (sandbox != NULL) {
		/* the pod's: its ids, no range of the container's own */
		lx->namespaces[lx->namespaces_len - 1]->path = xstrdup(sandbox);
		return;
	}
	lx->uid_mappings = one_mapping(pool->host_start, pool->ids);
	lx->uid_mappings_len = 1;
	lx->gid_mappings = one_mapping(pool->host_start, pool->ids);
	lx->gid_mappings_len = 1;
}

/* What auto-userns did, as the state and `moat policy explain` put it: "user namespace added:
 * ..., rootfs and bind mounts idmapped", then "; " and each other change it made. */
static char *describe_userns(const struct moat_policy_result *res)
{
	_cleanup_free_ char *how = NULL;
	const char *cgroupns = (res->ns_added & (1U << MOAT_NS_CGROUP)) ? CGROUPNS_ADDED : NULL;
	const char *ping = res->ping_group_range;

	if (!(res->ns_added & (1U << MOAT_NS_USER)))
		return xstrdup(cgroupns ? cgroupns : "");
	if (res->userns_joined != NULL)
		how = xasprintf("joined: the sandbox's, %s", res->userns_joined);
	else if (res->lent)
		how = xasprintf("added: container ids 0-%u are host ids %u-%u (lent from the pool)",
				res->userns_ids - 1, res->lent_start,
				res->lent_start + (res->lent_count - 1));
	else
		how = xasprintf("added: container ids 0-%u map to a host range lent from the pool",
				res->userns_ids - 1);
	return xasprintf("user namespace %s, rootfs and bind mounts idmapped%s%s%s%s%s", how,
			 cgroupns ? "; " : "", cgroupns ? cgroupns : "",
			 ping ? "; linux.sysctl net.ipv4.ping_group_range set to " : "",
			 ping ? ping : "", ping ? " (the groups the namespace maps)" : "");
}

/* auto-userns changed the config: explaining lists it as the other rules' changes. */
static void userns_changed(struct judge *j)
{
	if (j->ex != NULL)
		add_finding(j, MOAT_RULE_AUTO_USERNS, false, describe_userns(j->res));
}

/* A config without a user namespace gets one: container ids 0..ids-1, mapped for now to the
 * start of the pool; create lends the container its own range (userns-pool.h) and rewrites
 * the host side. Its rootfs and bind mounts are then idmapped, so the image's files keep
 * their owners. A config that joins namespaces of a pod's sandbox owned by a user namespace
 * joins that one instead. A config that joins moat's own user namespace is refused. */
/* One of the config's own id mappings (field: "linux.uidMappings[2]"): it must not reach host
 * root, nor ids the pool has lent to another container now. */
static int check_own_mapping(struct judge *j, const char *field, size_t i,
			     const struct oci_id_mapping *m)
{
	uint64_t first = m->host_id, end = (uint64_t)m->host_id + m->size, lent = 0, lent_n = 0;
	int r;

	if (m->size == 0)
		return 0;
	if (first == 0)
		return refuse(j, MOAT_RULE_AUTO_USERNS,
			      "%s[%zu] maps container id %u to host root (host id 0), which a "
			      "user namespace must not reach; map to other host ids",
			      field, i, m->container_id);
	if (geteuid() != 0)
		return 0; /* the kernel holds an unprivileged user to its own ids */
	r = moat_idpool_find_lent(first, end - first, &lent, &lent_n, j->err);
	if (r < 0)
		return r;
	if (r > 0)
		return refuse(j, MOAT_RULE_AUTO_USERNS,
			      "%s[%zu] maps host ids %" PRIu64 "-%" PRIu64 ", which overlap the "
			      "range %" PRIu64 "-%" PRIu64 " the pool has lent to another "
			      "container",
			      field, i, first, end - 1, lent, lent + lent_n - 1);
	return 0;
}

/* A config's own new user namespace isolates only if its mappings keep off host root and off
 * the ranges lent to other containers. */
static int check_own_mappings(struct judge *j)
{
	const struct oci_linux *lx = j->cfg->linux;
	int r = 0;

	for (size_t i = 0; lx != NULL && r == 0 && i < lx->uid_mappings_len; i++)
		r = check_own_mapping(j, "linux.uidMappings", i, lx->uid_mappings[i]);
	for (size_t i = 0; lx != NULL && r == 0 && i < lx->gid_mappings_len; i++)
		r = check_own_mapping(j, "linux.gidMappings", i, lx->gid_mappings[i]);
	return r;
}

static int rule_auto_userns(struct judge *j)
{
	const struct moat_idpool *pool = &j->p->pool;
	struct oci_linux *lx;
	size_t i;
	const struct oci_namespace *ns = find_ns(j->cfg, "user", &i);
	char ping_buf[32], sandbox_path[64];
	const char *ping;
	int r, sandbox;

	if (ns != NULL) {
		if (ns->path != NULL && is_own_ns(ns->path, "/proc/self/ns/user"))
			return refuse(j, MOAT_RULE_AUTO_USERNS,
				      "linux.namespaces[%zu].path %s is the user namespace moat "
				      "runs in",
				      i, ns->path);
		/* a config's own new user namespace (podman --uidmap on cgroup v1) cannot mount
		 * cgroups without a cgroup namespace either */
		if (ns->path == NULL && (r = check_own_mappings(j)) < 0)
			return r;
		if (ns->path == NULL && mounts_cgroup(j->cfg) &&
		    find_ns(j->cfg, "cgroup", &i) == NULL) {
			add_ns(j->cfg->linux, "cgroup");
			j->res->ns_added |= 1U << MOAT_NS_CGROUP;
			userns_changed(j);
		}
		return 0;
	}
	if (geteuid() != 0)
		return refuse(j, MOAT_RULE_AUTO_USERNS,
			      "linux.namespaces has no user namespace, and only root can give the "
			      "container host ids of its own; add one with uidMappings and "
			      "gidMappings");
	lx = j->cfg->linux;
	if (lx != NULL && (lx->uid_mappings_len > 0 || lx->gid_mappings_len > 0))
		return 0; /* mappings without a namespace: validation names the fault */
	r = check_user_in_range(j, pool->ids);
	if (r < 0)
		return r;
	sandbox = find_sandbox_userns(j, sandbox_path, sizeof(sandbox_path));
	if (sandbox < 0)
		return sandbox;
	if (lx == NULL)
		lx = j->cfg->linux = xcalloc(1, sizeof(*lx));
	add_userns(lx, pool, sandbox ? sandbox_path : NULL);
	j->res->ns_added |= 1U << MOAT_NS_USER;
	if (sandbox)
		j->res->userns_joined = xstrdup(sandbox_path);
	else
		j->res->userns_ids = pool->ids;
	/* Engines on cgroup v1 share the host's cgroup namespace, and a user namespace may mount
	 * cgroups only in a cgroup namespace of its own. */
	if (mounts_cgroup(j->cfg) && find_ns(j->cfg, "cgroup", &i) == NULL) {
		add_ns(lx, "cgroup");
		j->res->ns_added |= 1U << MOAT_NS_CGROUP;
	}
	ping = clamp_ping_groups(j->cfg, pool->ids, ping_buf, sizeof(ping_buf));
	if (ping != NULL)
		j->res->ping_group_range = xstrdup(ping);
	userns_changed(j);
	return 0;
}

/* ---- the driver --------------------------------------------------------------------- */

static int (*const rule_fns[MOAT_RULE_COUNT])(struct judge *) = {
	[MOAT_RULE_DEFAULT_SECCOMP] = rule_default_seccomp,
	[MOAT_RULE_DENY_HOST_MOUNTS] = rule_deny_host_mounts,
	[MOAT_RULE_NO_NEW_PRIVILEGES] = rule_no_new_privileges,
	[MOAT_RULE_CAPABILITY_CEILING] = rule_capability_ceiling,
	[MOAT_RULE_DENY_DEVICES] = rule_deny_devices,
	[MOAT_RULE_NETWORK] = rule_network,
	[MOAT_RULE_AUTO_USERNS] = rule_auto_userns,
};

/* The annotation names a rule the file does not let a container relax. */
static int refuse_relaxing(struct judge *j, enum moat_policy_rule rule)
{
	const char *name = moat_policy_rule_name(rule);
	char *text =
		xasprintf("annotation " MOAT_POLICY_ALLOW_ANNOTATION " relaxes this rule, but %s "
			  "does not list it in containerMayRelax",
			  moat_policy_path(j->p));
	int r;

	if (j->ex != NULL) {
		add_finding(j, rule, true, text);
		return 0;
	}
	r = moat_error_msg(j->err, EPERM, "policy %s: %s", name, text);
	free(text);
	return r;
}

/* moat.policy.allow=<rule>[,<rule>...]: relax what the file lets a container relax. */
static int read_relaxations(struct judge *j)
{
	const char *v = oci_string_map_get(j->cfg->annotations, MOAT_POLICY_ALLOW_ANNOTATION);
	_cleanup_free_ char *copy = v ? xstrdup(v) : NULL;
	char *save = NULL, *tok;
	int rule, r;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		tok += strspn(tok, " \t");
		tok[strcspn(tok, " \t")] = '\0';
		if (*tok == '\0')
			continue;
		rule = policy_rule_by_name(tok);
		if (rule < 0)
			return moat_error_msg(j->err, EINVAL,
					      "policy: annotations." MOAT_POLICY_ALLOW_ANNOTATION
					      ": unknown rule '%s'",
					      tok);
		if (j->state[rule] != MOAT_RULE_ON)
			continue;
		if (!j->p->may_relax[rule]) {
			if ((r = refuse_relaxing(j, rule)) < 0)
				return r;
			continue;
		}
		j->state[rule] = MOAT_RULE_RELAXED;
		change(j, rule, "relaxed by annotation " MOAT_POLICY_ALLOW_ANNOTATION);
	}
	return 0;
}

/* `moat state` shows the policy's record as annotations moat.policy.<rule>: a config may not
 * bring its own (moat.policy.allow aside). */
static int check_reserved_annotations(struct judge *j)
{
	const struct oci_string_map *ann = j->cfg->annotations;

	for (size_t i = 0; ann != NULL && i < ann->len; i++) {
		if (strncmp(ann->keys[i], "moat.policy.", 12) == 0 &&
		    strcmp(ann->keys[i], MOAT_POLICY_ALLOW_ANNOTATION) != 0)
			return moat_error_msg(
				j->err, EINVAL,
				"policy: annotations.%s: moat.policy.* is reserved for "
				"what the policy records (a config may set only " MOAT_POLICY_ALLOW_ANNOTATION
				")",
				ann->keys[i]);
	}
	return 0;
}

/* Judge j->cfg by the rules in mask (1 << MOAT_RULE_*). */
static int judge_config(struct judge *j, unsigned mask)
{
	int r;

	for (int i = 0; i < MOAT_RULE_COUNT; i++)
		j->state[i] = j->p->rule[i]->enabled ? MOAT_RULE_ON : MOAT_RULE_OFF;
	r = check_reserved_annotations(j);
	if (r < 0)
		return r;
	r = read_relaxations(j);
	if (r < 0)
		return r;
	for (int i = 0; i < MOAT_RULE_COUNT; i++) {
		if (j->state[i] != MOAT_RULE_ON || !(mask & (1U << i)))
			continue;
		r = rule_fns[i](j);
		if (r < 0)
			return r;
	}
	return 0;
}

#define ALL_RULES ((1U << MOAT_RULE_COUNT) - 1)

int moat_policy_apply_rules(const struct moat_policy *p, struct oci_config *cfg, unsigned rules,
			    moat_error *err)
{
	struct judge j = { .p = p, .cfg = cfg, .err = err, .res = xcalloc(1, sizeof(*j.res)) };
	int r = judge_config(&j, rules);

	moat_policy_result_free(j.res);
	return r < 0 ? moat_error_ret(err) : 0;
}

int moat_policy_apply(const struct moat_policy *p, struct oci_config *cfg, const char *bundle,
		      struct moat_policy_result **ret, moat_error *err)
{
	struct judge j = { .p = p, .cfg = cfg, .bundle = bundle, .err = err };

	j.res = xcalloc(1, sizeof(*j.res));
	if (judge_config(&j, ALL_RULES) < 0) {
		moat_policy_result_free(j.res);
		return moat_error_ret(err);
	}
	*ret = j.res;
	return 0;
}

void moat_policy_result_free(struct moat_policy_result *res)
{
	if (res == NULL)
		return;
	for (size_t i = 0; i < res->n_changes; i++)
		free(res->changes[i].text);
	free(res->changes);
	free(res->userns_joined);
	free(res->ping_group_range);
	free(res);
}

struct oci_string_map *moat_policy_result_changes(const struct moat_policy_result *res)
{
	struct oci_string_map *m = NULL;

	for (size_t i = 0; res != NULL && i < res->n_changes; i++)
		oci_string_map_set(&m, moat_policy_rule_name(res->changes[i].rule),
				   res->changes[i].text);
	if (res != NULL && res->ns_added != 0) {
		_cleanup_free_ char *text = describe_userns(res);

		oci_string_map_set(&m, moat_policy_rule_name(MOAT_RULE_AUTO_USERNS), text);
	}
	return m;
}

int moat_policy_explain(const struct moat_policy *p, struct oci_config *cfg, const char *bundle,
			struct moat_policy_explanation **ret, moat_error *err)
{
	struct judge j = { .p = p, .cfg = cfg, .bundle = bundle, .err = err };
	int r;

	j.ex = xcalloc(1, sizeof(*j.ex));
	j.res = xcalloc(1, sizeof(*j.res));
	r = judge_config(&j, ALL_RULES);
	moat_policy_result_free(j.res);
	if (r < 0) {
		moat_policy_explanation_free(j.ex);
		return moat_error_ret(err);
	}
	memcpy(j.ex->state, j.state, sizeof(j.state));
	*ret = j.ex;
	return 0;
}

void moat_policy_explanation_free(struct moat_policy_explanation *ex)
{
	if (ex == NULL)
		return;
	for (size_t i = 0; i < ex->n_findings; i++)
		free(ex->findings[i].text);
	free(ex->findings);
	free(ex);
}
