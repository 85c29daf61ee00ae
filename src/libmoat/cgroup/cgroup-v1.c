/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what only cgroup v1 needs. New levels of cpuset and memory hierarchies made usable,
 * device rules for the devices controller, the order of memory and memory+swap limits, and
 * the freezer. */
#include "cgroup-internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "utils.h"

static bool has_file_at(int fd, const char *file)
{
	struct stat st;

	return fstatat(fd, file, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool blank(const char *s)
{
	return s[strspn(s, " \t\n")] == '\0';
}

/* A new cpuset cgroup starts with no CPUs and no memory nodes, and no process can join it:
 * give it its parent's. */
static int copy_from_parent(int parentfd, const char *parent_dir, int fd, const char *dir,
			    const char *file, moat_error *err)
{
	_cleanup_free_ char *own = NULL, *parent = NULL;

	if (!has_file_at(fd, file))
		return 0;
	if (cg_read_at(fd, dir, file, &own, err) < 0)
		return moat_error_ret(err);
	if (!blank(own))
		return 0;
	if (cg_read_at(parentfd, parent_dir, file, &parent, err) < 0)
		return moat_error_ret(err);
	parent[strcspn(parent, "\n")] = '\0';
	if (blank(parent))
		return 0;
	return cg_write_at(fd, dir, file, parent, err);
}

int cg_v1_init_level(const struct cg_hier *h, int parentfd, const char *parent_dir, int fd,
		     const char *dir, moat_error *err)
{
	_cleanup_free_ char *hier = NULL;

	if ((h->ctrls & CG_BIT(CG_CPUSET)) &&
	    (copy_from_parent(parentfd, parent_dir, fd, dir, "cpuset.cpus", err) < 0 ||
	     copy_from_parent(parentfd, parent_dir, fd, dir, "cpuset.mems", err) < 0))
		return moat_error_ret(err);
	if (!(h->ctrls & CG_BIT(CG_MEMORY)) || !has_file_at(fd, "memory.use_hierarchy"))
		return 0;
	/* Always 1 on kernels since 6.1; older ones let a parent turn it off. */
	if (cg_read_at(fd, dir, "memory.use_hierarchy", &hier, err) < 0)
		return moat_error_ret(err);
	if (hier[0] == '1')
		return 0;
	return cg_write_at(fd, dir, "memory.use_hierarchy", "1", err);
}

/* ---- devices ------------------------------------------------------------------------------ */

static void dev_number(char *buf, size_t size, bool present, int64_t v)
{
	if (!present || v < 0)
		snprintf(buf, size, "*");
	else
		snprintf(buf, size, "%" PRId64, v);
}

static bool access_ok(const char *a)
{
	return *a != '\0' && strspn(a, "rwm") == strlen(a);
}

/* "c 1:3 rwm" from a linux.resources.devices entry; the kernel reads type "a" alone as "every
 * device, every access", so anything narrower is refused rather than widened. */
static int device_rule(const struct oci_device_cgroup *d, const char *field, char **ret,
		       moat_error *err)
{
	const char *type = d->type ? d->type : "a";
	const char *access = d->access ? d->access : "rwm";
	char major[24], minor[24];

	if ((d->major_present && d->major < -1) || (d->minor_present && d->minor < -1))
		return moat_error_msg(err, EINVAL, "%s: major and minor must be -1 (any) or more",
				      field);
	if (strcmp(type, "a") != 0 && strcmp(type, "b") != 0 && strcmp(type, "c") != 0)
		return moat_error_msg(err, EINVAL, "%s.type: '%s' is not a, b or c", field, type);
	if (!access_ok(access))
		return moat_error_msg(err, EINVAL, "%s.access: '%s' is not made of r, w and m",
				      field, access);
	if (strcmp(type, "a") == 0) {
		/* v1 reads "a" as every device whatever follows: numbers would be dropped and
		 * the rule widened. */
		if ((d->major_present && d->major != -1) || (d->minor_present && d->minor != -1))
			return moat_error_msg(
				err, EINVAL,
				"%s: type \"a\" with a major or minor number cannot be "
				"written on cgroup v1; give one rule for \"b\" and one "
				"for \"c\"",
				field);
		if (!strchr(access, 'r') || !strchr(access, 'w') || !strchr(access, 'm'))
			return moat_error_msg(err, EINVAL,
					      "%s: a rule for all devices must have access \"rwm\" "
					      "on cgroup v1, not \"%s\"",
					      field, access);
		*ret = xstrdup("a");
		return 0;
	}
	dev_number(major, sizeof(major), d->major_present, d->major);
	dev_number(minor, sizeof(minor), d->minor_present, d->minor);
	*ret = xasprintf("%s %s:%s %s", type, major, minor, access);
	return 0;
}

/* Deny everything, then the config's rules in order, then what they allow after them
 * (allows: the listed devices and the spec's defaults). On update without a devices list the
 * rules stay as they are. */
int cg_v1_plan_devices(const struct oci_resources *res, const struct cg_allows *allows,
		       bool creating, struct cg_plan *p, moat_error *err)
{
	size_t n = res != NULL && res->devices != NULL ? res->devices_len : 0, i;

	if (!creating && (res == NULL || res->devices == NULL))
		return 0;
	cg_plan_add(p, "linux.resources.devices", CG_DEVICES, false, xstrdup("devices.deny"),
		    xstrdup("a"));
	for (i = 0; i < n; i++) {
		const struct oci_device_cgroup *d = res->devices[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.devices[%zu]", i);
		char *rule = NULL;

		if (device_rule(d, field, &rule, err) < 0)
			return moat_error_ret(err);
		cg_plan_add(p, field, CG_DEVICES, false,
			    xstrdup(d->allow ? "devices.allow" : "devices.deny"), rule);
	}
	for (i = 0; i < allows->n; i++) {
		const struct cg_allow *a = &allows->a[i];
		char major[24], minor[24];

		dev_number(major, sizeof(major), true, a->major);
		dev_number(minor, sizeof(minor), true, a->minor);
		cg_plan_add(p, a->field, CG_DEVICES, false, xstrdup("devices.allow"),
			    xasprintf("%c %s:%s %s", a->type, major, minor, a->access));
	}
	return 0;
}

/* ---- memory ------------------------------------------------------------------------------- */

static int64_t limit_value(const char *text)
{
	int64_t v = strtoll(text, NULL, 10);

	return v < 0 ? INT64_MAX : v;
}

static struct cg_write *find_write(struct cg_plan *p, const char *file)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!p->w[i].v2 && strcmp(p->w[i].file[0], file) == 0)
			return &p->w[i];
	return NULL;
}

/* The kernel keeps memory.limit_in_bytes <= memory.memsw.limit_in_bytes at every moment. A
 * limit above the present memsw limit can only go in after the new memsw limit. */
int cg_v1_order_memory(struct moat_cgroup *cg, struct cg_plan *p, moat_error *err)
{
	struct cg_write *limit = find_write(p, "memory.limit_in_bytes");
	struct cg_write *memsw = find_write(p, "memory.memsw.limit_in_bytes");
	struct cg_hier *h = cg_hier_for(cg, CG_MEMORY, false);
	_cleanup_free_ char *cur = NULL;
	struct cg_write tmp;

	if (limit == NULL || memsw == NULL || h == NULL || h->fd < 0)
		return 0;
	if (cg_read_at(h->fd, h->dir, "memory.memsw.limit_in_bytes", &cur, err) < 0)
		return moat_error_ret(err);
	if (limit_value(limit->value[0]) <= limit_value(cur) || memsw < limit)
		return 0;
	tmp = *limit;
	*limit = *memsw;
	*memsw = tmp;
	return 0;
}

/* ---- freezer ------------------------------------------------------------------------------ */

static int read_state(struct cg_hier *h, char **ret, moat_error *err)
{
	if (cg_read_at(h->fd, h->dir, "freezer.state", ret, err) < 0)
		return moat_error_ret(err);
	(*ret)[strcspn(*ret, "\n")] = '\0';
	return 0;
}

int cg_v1_is_frozen(struct cg_hier *h, bool *ret, moat_error *err)
{
	_cleanup_free_ char *state = NULL;

	if (read_state(h, &state, err) < 0)
		return moat_error_ret(err);
	*ret = strcmp(state, "FROZEN") == 0;
	return 0;
}

/* Settled when freezer.state reads what was written: FREEZING turns into FROZEN once every
 * task stopped, and is not THAWED either. */
static int v1_settled(struct cg_hier *h, bool frozen, bool *ret, moat_error *err)
{
	_cleanup_free_ char *state = NULL;

	if (read_state(h, &state, err) < 0)
		return moat_error_ret(err);
	*ret = strcmp(state, cg_v1_freezer.value[frozen]) == 0;
	return 0;
}

/* The state is written again on every look: asking again helps a freeze that raced with a
 * fork. */
const struct cg_freezer cg_v1_freezer = {
	.file = "freezer.state",
	.value = { "THAWED", "FROZEN" },
	.ask_again = true,
	.settled = v1_settled,
	.not_settled = { "freezer.state not THAWED", "freezer.state not FROZEN" },
};
