/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what only cgroup v2 needs. The value conversions engines agree on, the
 * linux.resources.unified map, enabling controllers down the tree, cgroup.freeze and
 * cgroup.kill. Used on pure v2 hosts and for the unified hierarchy of hybrid ones. */
#include "cgroup-internal.h"

#include <inttypes.h>
#include <string.h>

#include "utils.h"

/* Core files a config may set through linux.resources.unified. The others (cgroup.procs,
 * cgroup.subtree_control, cgroup.kill, cgroup.freeze, cgroup.type, ...) are moat's to manage:
 * a config that wrote them could move other processes in or undo the setup. */
static const char *const core_keys[] = {
	"cgroup.max.depth",
	"cgroup.max.descendants",
	"cgroup.pressure",
};

/* cpu.shares 2..262144 onto cpu.weight 1..10000, as runc, crun and systemd map them. */
uint64_t cg_v2_cpu_weight(uint64_t shares)
{
	if (shares < 2)
		shares = 2;
	if (shares > 262144)
		shares = 262144;
	return 1 + ((shares - 2) * 9999) / 262142;
}

/* blkio weight 10..1000 onto io.weight 1..10000; the caller checked the range. */
uint64_t cg_v2_io_weight(uint64_t blkio_weight)
{
	return 1 + (blkio_weight - 10) * 9999 / 990;
}

/* OCI's swap is memory+swap (v1 memsw); v2's memory.swap.max is swap alone. */
int cg_v2_swap_max(const struct oci_memory *m, char **ret, moat_error *err)
{
	if (m->swap < 0) {
		*ret = xstrdup("max");
		return 0;
	}
	if (!m->limit_present || m->limit < 0)
		return moat_error_msg(err, EINVAL,
				      "linux.resources.memory.swap: on cgroup v2 it needs a "
				      "memory.limit to subtract (swap counts memory+swap)");
	if (m->swap < m->limit)
		return moat_error_msg(err, EINVAL,
				      "linux.resources.memory.swap: %" PRId64 " is below "
				      "memory.limit %" PRId64 " (swap counts memory+swap)",
				      m->swap, m->limit);
	*ret = xasprintf("%" PRId64, m->swap - m->limit);
	return 0;
}

/* "quota period", "quota", or with only a period the period alone and CG_W_KEEP_QUOTA, since
 * cpu.max wants the quota first. 0 in either means "not set". */
char *cg_v2_cpu_max(const struct oci_cpu *c, unsigned *ret_flags)
{
	bool quota = c->quota_present && c->quota != 0;
	bool period = c->period_present && c->period != 0;
	_cleanup_free_ char *q = NULL;

	if (!quota && !period)
		return NULL;
	if (!quota) {
		*ret_flags |= CG_W_KEEP_QUOTA;
		return xasprintf("%" PRIu64, c->period);
	}
	q = c->quota < 0 ? xstrdup("max") : xasprintf("%" PRId64, c->quota);
	return period ? xasprintf("%s %" PRIu64, q, c->period) : TAKE_PTR(q);
}

/* ---- linux.resources.unified ----------------------------------------------------------- */

static bool key_ok(const char *key)
{
	const char *dot = strchr(key, '.');

	return dot != NULL && dot != key && dot[1] != '\0' && strstr(key, "..") == NULL &&
	       strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
		       strlen(key);
}

static bool core_key_allowed(const char *key)
{
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(core_keys); i++)
		if (strcmp(core_keys[i], key) == 0)
			return true;
	return false;
}

static int unified_ctrl(struct moat_cgroup *cg, const struct cg_hier *u, const char *key,
			const char *field, moat_error *err)
{
	size_t len = strcspn(key, ".");
	int c;

	if (!key_ok(key))
		return moat_error_msg(err, EINVAL, "%s: not a cgroup v2 file name", field);
	if (len == 6 && strncmp(key, "cgroup", 6) == 0) {
		if (!core_key_allowed(key))
			return moat_error_msg(err, EINVAL, "%s: moat manages this file itself",
					      field);
		return CG_CORE;
	}
	c = cg_ctrl_from_v2_name(key, len);
	if (c < 0)
		return moat_error_msg(err, EINVAL, "%s: no cgroup v2 controller is called '%.*s'",
				      field, (int)len, key);
	if (u->ctrls & CG_BIT(c))
		return c;
	if (cg_hier_for(cg, (enum cg_ctrl)c, false) != NULL)
		return moat_error_msg(
			err, EINVAL,
			"%s: the %.*s controller is on cgroup v1 on this host, not on "
			"the unified hierarchy",
			field, (int)len, key);
	return moat_error_msg(err, EINVAL,
			      "%s: not supported on this host (no %.*s controller on "
			      "cgroup v2)",
			      field, (int)len, key);
}

int cg_v2_plan_unified(struct moat_cgroup *cg, const struct oci_string_map *unified,
		       struct cg_plan *p, moat_error *err)
{
	struct cg_hier *u = cg_unified(cg);
	size_t i;

	if (unified == NULL || unified->len == 0)
		return 0;
	if (u == NULL)
		return moat_error_msg(err, EINVAL,
				      "linux.resources.unified: needs cgroup v2, and this "
				      "host has only cgroup v1");
	for (i = 0; i < unified->len; i++) {
		_cleanup_free_ char *field =
			xasprintf("linux.resources.unified[\"%s\"]", unified->keys[i]);
		int c = unified_ctrl(cg, u, unified->keys[i], field, err);

		if (c < 0)
			return c;
		cg_plan_add(p, field, (enum cg_ctrl)c, true, xstrdup(unified->keys[i]),
			    xstrdup(unified->values[i]));
	}
	return 0;
}

/* ---- enabling controllers ------------------------------------------------------------------ */

bool cg_v2_listed(const char *list, const char *name)
{
	size_t len = strlen(name);
	const char *p = list;

	while (*(p += strspn(p, " \n")) != '\0') {
		size_t n = strcspn(p, " \n");

		if (n == len && strncmp(p, name, n) == 0)
			return true;
		p += n;
	}
	return false;
}

static int enable_at(int fd, const char *dir, uint32_t ctrls, moat_error *err)
{
	_cleanup_free_ char *list = NULL;
	int c;

	if (cg_read_at(fd, dir, "cgroup.subtree_control", &list, err) < 0)
		return moat_error_ret(err);
	for (c = CG_CPU; c < CG_CTRL_COUNT; c++) {
		const char *name = cg_ctrl_name((enum cg_ctrl)c, true);
		_cleanup_free_ char *plus = NULL;

		if (!(ctrls & CG_BIT(c)) || cg_v2_listed(list, name))
			continue;
		plus = xasprintf("+%s", name);
		if (cg_write_at(fd, dir, "cgroup.subtree_control", plus, err) < 0)
			return moat_error_prefix(err, "enable the %s controller", name);
	}
	return 0;
}

/* A v2 controller's files appear in a cgroup only when every ancestor has it in
 * cgroup.subtree_control: enable the ones a plan writes, from the root down to the parent. */
int cg_v2_enable(struct moat_cgroup *cg, uint32_t ctrls, moat_error *err)
{
	struct cg_hier *u = cg_unified(cg);
	size_t levels = cg_path_levels(cg->path), i;

	if (u == NULL || ctrls == 0)
		return 0;
	for (i = 0; i < levels; i++) {
		_cleanup_free_ char *dir = NULL;
		_cleanup_close_ int fd = cg_open_level(u, cg->path, i, &dir, err);

		if (fd < 0)
			return fd;
		if (enable_at(fd, dir, ctrls, err) < 0)
			return moat_error_ret(err);
	}
	return 0;
}

/* ---- freezing and killing ------------------------------------------------------------------ */

int cg_v2_is_frozen(struct cg_hier *h, bool *ret, moat_error *err)
{
	_cleanup_free_ char *events = NULL;
	const char *p;

	if (cg_read_at(h->fd, h->dir, "cgroup.events", &events, err) < 0)
		return moat_error_ret(err);
	for (p = events; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, "frozen ", 7) == 0) {
			*ret = p[7] == '1';
			return 0;
		}
	return moat_error_msg(err, EOPNOTSUPP, "cgroup '%s': cgroup.events has no frozen key",
			      h->dir);
}

/* Settled when cgroup.events says so: freezing completes once every task stopped. */
static int v2_settled(struct cg_hier *h, bool frozen, bool *ret, moat_error *err)
{
	bool now = !frozen;

	if (cg_v2_is_frozen(h, &now, err) < 0)
		return moat_error_ret(err);
	*ret = now == frozen;
	return 0;
}

/* Asked once, then waited for. */
const struct cg_freezer cg_v2_freezer = {
	.file = "cgroup.freeze",
	.value = { "0", "1" },
	.ask_again = false,
	.settled = v2_settled,
	.not_settled = { "not thawed", "not frozen" },
};

/* cgroup.kill (Linux 5.14): SIGKILL to the whole subtree at once, forks included. */
int cg_v2_kill(struct cg_hier *h, bool *ret_done, moat_error *err)
{
	*ret_done = false;
	if (!cg_has_file(h, "cgroup.kill"))
		return 0;
	if (cg_write_at(h->fd, h->dir, "cgroup.kill", "1", err) < 0)
		return moat_error_ret(err);
	*ret_done = true;
	return 0;
}
