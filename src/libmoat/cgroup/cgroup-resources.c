/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: linux.resources onto the container's cgroup. Answers "which writes does this
 * linux.resources make on this host, and are they all possible here?": the table of OCI fields
 * and their v1 and v2 files, the value conversions, the per-device lists (blockIO, hugepages,
 * network priorities, rdma, device rules, the devices linux.devices lists and the spec's
 * default devices), the "not supported on this host" checks, and running the resulting plan.
 * Device rules go to the v1 devices controller or, where there is none, into the eBPF filter
 * that cgroup-v2-devices.c compiles and installs on the unified hierarchy. Finding and walking
 * the hierarchies is cgroup.c's; what differs between v1 and v2 lives in cgroup-v1.c and
 * cgroup-v2.c. */
#include "cgroup-internal.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-v2-devices.h"
#include "utils.h"

/* ---- the resource table ------------------------------------------------------------------- */

enum cg_kind { K_I64, K_U64, K_U32, K_U16, K_BOOL, K_STR };

enum cg_conv {
	CV_NONE,           /* no file on this side: the field is an error here */
	CV_NUM,            /* the number as it is */
	CV_NUM_SET,        /* the number; 0 means "not set" (as runc and crun read shares,
			    * quota, period and weights), so nothing is written */
	CV_MAX_NEG,        /* negative -> "max" */
	CV_PIDS,           /* 0 or negative -> "max" */
	CV_BOOL,           /* "1" or "0" */
	CV_STR,            /* the string as it is */
	CV_CPU_WEIGHT,     /* cpu.shares -> cpu.weight */
	CV_IO_WEIGHT,      /* blkio weight 10..1000 -> "default <io.weight 1..10000>" */
	CV_SWAP_V2,        /* memory+swap -> memory.swap.max (swap alone) */
	CV_CPU_MAX,        /* quota (and period) -> cpu.max */
	CV_CPU_MAX_PERIOD, /* period without quota -> cpu.max keeping the quota */
	CV_NOOP_TRUE,      /* no file: true is what this side always does; false is an error */
	CV_NOOP_FALSE,     /* no file: false is what this side always does; true is an error */
};

struct cg_target {
	const char *file;
	enum cg_conv conv;
};

struct cg_row {
	const char *field; /* below linux.resources */
	enum cg_ctrl ctrl;
	size_t object;  /* offsetof(struct oci_resources, <object pointer>) */
	size_t member;  /* offsetof(<object>, <member>) */
	size_t present; /* offsetof(<object>, <member>_present), or NO_FLAG */
	enum cg_kind kind;
	struct cg_target v1[2]; /* the first file that exists in the cgroup is written */
	struct cg_target v2[2];
	unsigned flags;     /* CG_W_* */
	const char *absent; /* what a host without the file lacks, for messages; NULL */
};

#define NO_FLAG SIZE_MAX
#define FIELD(obj, type, m)                                            \
	offsetof(struct oci_resources, obj), offsetof(struct type, m), \
		offsetof(struct type, m##_present)
#define FIELD_ALWAYS(obj, type, m) \
	offsetof(struct oci_resources, obj), offsetof(struct type, m), NO_FLAG
/* clang-format off */
#define NO_FILE { { NULL, CV_NONE } }
#define NO_RT_SCHED "the kernel has no real-time group scheduling"

/* One row per OCI field: which controller, which v1 file, which v2 file, how the value is
 * written. Order matters within a controller (period before quota, rt period before rt
 * runtime); cg_v1_order_memory() orders memory limit and swap. */
static const struct cg_row rows[] = {
	{ "memory.limit", CG_MEMORY, FIELD(memory, oci_memory, limit), K_I64,
	  { { "memory.limit_in_bytes", CV_NUM } }, { { "memory.max", CV_MAX_NEG } } },
	{ "memory.reservation", CG_MEMORY, FIELD(memory, oci_memory, reservation), K_I64,
	  { { "memory.soft_limit_in_bytes", CV_NUM } }, { { "memory.low", CV_MAX_NEG } } },
	{ "memory.swap", CG_MEMORY, FIELD(memory, oci_memory, swap), K_I64,
	  { { "memory.memsw.limit_in_bytes", CV_NUM } }, { { "memory.swap.max", CV_SWAP_V2 } } },
	/* written where the kernel still honours it (cgroup v1 before Linux 6.1) */
	{ "memory.kernel", CG_MEMORY, FIELD(memory, oci_memory, kernel), K_I64,
	  { { "memory.kmem.limit_in_bytes", CV_NUM } }, NO_FILE,
	  CG_W_CHECK_EFFECT | CG_W_IGNORABLE, "the kernel has no kernel-memory limit" },
	/* cgroup v2 counts TCP buffers in memory.max */
	{ "memory.kernelTCP", CG_MEMORY, FIELD(memory, oci_memory, kernel_tcp), K_I64,
	  { { "memory.kmem.tcp.limit_in_bytes", CV_NUM } }, NO_FILE,
	  CG_W_CHECK_EFFECT | CG_W_IGNORABLE, "the kernel has no limit of its own for TCP buffers" },
	{ "memory.swappiness", CG_MEMORY, FIELD(memory, oci_memory, swappiness), K_U64,
	  { { "memory.swappiness", CV_NUM } }, NO_FILE },
	{ "memory.disableOOMKiller", CG_MEMORY, FIELD(memory, oci_memory, disable_oom_killer),
	  K_BOOL,
	  { { "memory.oom_control", CV_BOOL } }, { { NULL, CV_NOOP_FALSE } } },
	{ "memory.useHierarchy", CG_MEMORY, FIELD(memory, oci_memory, use_hierarchy), K_BOOL,
	  { { "memory.use_hierarchy", CV_BOOL } }, { { NULL, CV_NOOP_TRUE } } },
	{ "cpu.shares", CG_CPU, FIELD(cpu, oci_cpu, shares), K_U64,
	  { { "cpu.shares", CV_NUM_SET } }, { { "cpu.weight", CV_CPU_WEIGHT } } },
	{ "cpu.period", CG_CPU, FIELD(cpu, oci_cpu, period), K_U64,
	  { { "cpu.cfs_period_us", CV_NUM_SET } }, { { "cpu.max", CV_CPU_MAX_PERIOD } } },
	{ "cpu.quota", CG_CPU, FIELD(cpu, oci_cpu, quota), K_I64,
	  { { "cpu.cfs_quota_us", CV_NUM_SET } }, { { "cpu.max", CV_CPU_MAX } } },
	{ "cpu.burst", CG_CPU, FIELD(cpu, oci_cpu, burst), K_U64,
	  { { "cpu.cfs_burst_us", CV_NUM } }, { { "cpu.max.burst", CV_NUM } } },
	{ "cpu.realtimePeriod", CG_CPU, FIELD(cpu, oci_cpu, realtime_period), K_U64,
	  { { "cpu.rt_period_us", CV_NUM } }, NO_FILE, 0, NO_RT_SCHED },
	{ "cpu.realtimeRuntime", CG_CPU, FIELD(cpu, oci_cpu, realtime_runtime), K_I64,
	  { { "cpu.rt_runtime_us", CV_NUM } }, NO_FILE, CG_W_RT_BUDGET, NO_RT_SCHED },
	{ "cpu.idle", CG_CPU, FIELD(cpu, oci_cpu, idle), K_I64,
	  { { "cpu.idle", CV_NUM } }, { { "cpu.idle", CV_NUM } } },
	{ "cpu.cpus", CG_CPUSET, FIELD_ALWAYS(cpu, oci_cpu, cpus), K_STR,
	  { { "cpuset.cpus", CV_STR } }, { { "cpuset.cpus", CV_STR } } },
	{ "cpu.mems", CG_CPUSET, FIELD_ALWAYS(cpu, oci_cpu, mems), K_STR,
	  { { "cpuset.mems", CV_STR } }, { { "cpuset.mems", CV_STR } } },
	{ "pids.limit", CG_PIDS, FIELD_ALWAYS(pids, oci_pids, limit), K_I64,
	  { { "pids.max", CV_PIDS } }, { { "pids.max", CV_PIDS } } },
	{ "blockIO.weight", CG_BLKIO, FIELD(block_io, oci_block_io, weight), K_U16,
	  { { "blkio.weight", CV_NUM_SET }, { "blkio.bfq.weight", CV_NUM_SET } },
	  { { "io.bfq.weight", CV_NUM_SET }, { "io.weight", CV_IO_WEIGHT } } },
	{ "blockIO.leafWeight", CG_BLKIO, FIELD(block_io, oci_block_io, leaf_weight), K_U16,
	  { { "blkio.leaf_weight", CV_NUM_SET } }, NO_FILE },
	{ "network.classID", CG_NET_CLS, FIELD(network, oci_network, class_id), K_U32,
	  { { "net_cls.classid", CV_NUM } }, NO_FILE },
};
/* clang-format on */

/* blockIO.throttle*: one "major:minor rate" line each, to its v1 file or v2 io.max key. */
/* clang-format off */
static const struct {
	const char *field;
	size_t list, len; /* offsetof(struct oci_block_io, ...) */
	const char *v1;
	const char *v2_key;
} throttle_rows[] = {
#define T(name, m, file, key) \
	{ name, offsetof(struct oci_block_io, m), offsetof(struct oci_block_io, m##_len), file, key }
	T("throttleReadBpsDevice", throttle_read_bps_device, "blkio.throttle.read_bps_device",
	  "rbps"),
	T("throttleWriteBpsDevice", throttle_write_bps_device, "blkio.throttle.write_bps_device",
	  "wbps"),
	T("throttleReadIOPSDevice", throttle_read_iops_device, "blkio.throttle.read_iops_device",
	  "riops"),
	T("throttleWriteIOPSDevice", throttle_write_iops_device, "blkio.throttle.write_iops_device",
	  "wiops"),
#undef T
};
/* clang-format on */

struct cg_value {
	int64_t i;  /* K_I64 */
	uint64_t u; /* unsigned kinds */
	bool b;
	const char *s;
};

/* The row's object, or NULL when the field is absent. */
static const char *row_get(const struct oci_resources *res, const struct cg_row *row,
			   struct cg_value *v)
{
	const char *obj = *(const char *const *)((const char *)res + row->object);
	const char *m;

	if (obj == NULL || (row->present != NO_FLAG && !*(const bool *)(obj + row->present)))
		return NULL;
	m = obj + row->member;
	memset(v, 0, sizeof(*v));
	switch (row->kind) {
	case K_I64: v->i = *(const int64_t *)m; break;
	case K_U64: v->u = *(const uint64_t *)m; break;
	case K_U32: v->u = *(const uint32_t *)m; break;
	case K_U16: v->u = *(const uint16_t *)m; break;
	case K_BOOL: v->b = *(const bool *)m; break;
	case K_STR: v->s = *(const char *const *)m; break;
	}
	if (row->kind == K_STR && v->s == NULL)
		return NULL;
	return obj;
}

static char *num_text(const struct cg_row *row, const struct cg_value *v)
{
	return row->kind == K_I64 ? xasprintf("%" PRId64, v->i) : xasprintf("%" PRIu64, v->u);
}

static bool is_zero(const struct cg_row *row, const struct cg_value *v)
{
	return row->kind == K_I64 ? v->i == 0 : v->u == 0;
}

/* The text for one target, NULL (with 0) when nothing is to be written. */
static int convert(const struct cg_row *row, const struct cg_target *t, const char *obj,
		   const struct cg_value *v, const char *field, char **ret, unsigned *flags,
		   moat_error *err)
{
	*ret = NULL;
	switch (t->conv) {
	case CV_NONE:
	case CV_NOOP_TRUE:
	case CV_NOOP_FALSE: return 0;
	case CV_NUM_SET:
		if (is_zero(row, v))
			return 0;
		/* fall through */
	case CV_NUM: *ret = num_text(row, v); return 0;
	case CV_MAX_NEG: *ret = v->i < 0 ? xstrdup("max") : num_text(row, v); return 0;
	case CV_PIDS: *ret = v->i <= 0 ? xstrdup("max") : num_text(row, v); return 0;
	case CV_BOOL: *ret = xstrdup(v->b ? "1" : "0"); return 0;
	case CV_STR: *ret = xstrdup(v->s); return 0;
	case CV_CPU_WEIGHT:
		if (v->u != 0)
			*ret = xasprintf("%" PRIu64, cg_v2_cpu_weight(v->u));
		return 0;
	case CV_IO_WEIGHT:
		if (v->u == 0)
			return 0;
		if (v->u < 10 || v->u > 1000)
			return moat_error_msg(err, EINVAL, "%s: %" PRIu64 " is outside 10..1000",
					      field, v->u);
		*ret = xasprintf("default %" PRIu64, cg_v2_io_weight(v->u));
		return 0;
	case CV_SWAP_V2: return cg_v2_swap_max((const struct oci_memory *)obj, ret, err);
	case CV_CPU_MAX: {
		const struct oci_cpu *c = (const struct oci_cpu *)obj;

		if (c->quota != 0)
			*ret = cg_v2_cpu_max(c, flags);
		return 0;
	}
	case CV_CPU_MAX_PERIOD: {
		const struct oci_cpu *c = (const struct oci_cpu *)obj;

		if (!c->quota_present || c->quota == 0)
			*ret = cg_v2_cpu_max(c, flags);
		return 0;
	}
	}
	return 0;
}

void cg_plan_add(struct cg_plan *p, const char *field, enum cg_ctrl c, bool v2, char *file,
		 char *value)
{
	struct cg_write *w;

	p->w = xrealloc(p->w, (p->n + 1) * sizeof(*p->w));
	w = &p->w[p->n++];
	memset(w, 0, sizeof(*w));
	w->field = xstrdup(field);
	w->ctrl = c;
	w->v2 = v2;
	w->file[0] = file;
	w->value[0] = value;
}

void cg_plan_clear(struct cg_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->w[i].field);
		free(p->w[i].file[0]);
		free(p->w[i].file[1]);
		free(p->w[i].value[0]);
		free(p->w[i].value[1]);
	}
	free(p->w);
	p->w = NULL;
	p->n = 0;
	cg_dev_prog_free(p->devices);
	p->devices = NULL;
	oci_string_map_free(p->ignored);
	p->ignored = NULL;
}

/* A CG_W_IGNORABLE field this host cannot honour: noted (why is taken), and warned about once
 * the plan ran. */
static void plan_ignore(struct cg_plan *p, const char *field, char *why)
{
	oci_string_map_set(&p->ignored, field, why);
	free(why);
}

/* Which side takes the controller: the v1 hierarchy holding it, else the unified one. */
int cg_plan_side(struct moat_cgroup *cg, enum cg_ctrl c, const char *field, bool *ret_v2,
		 moat_error *err)
{
	struct cg_hier *u = cg_unified(cg);

	if (c != CG_CORE && cg_hier_for(cg, c, false) != NULL) {
		*ret_v2 = false;
		return 0;
	}
	if (u != NULL && cg_ctrl_has_v2(c) && (c == CG_CORE || (u->ctrls & CG_BIT(c)))) {
		*ret_v2 = true;
		return 0;
	}
	if (cg->layout == MOAT_CGROUP_V2 && !cg_ctrl_has_v2(c))
		return moat_error_msg(err, EOPNOTSUPP, "%s: not supported on cgroup v2", field);
	return moat_error_msg(err, EOPNOTSUPP, "%s: not supported on this host (no %s controller)",
			      field, cg_ctrl_name(c, cg->layout == MOAT_CGROUP_V2));
}

static int plan_no_file(const struct cg_row *row, const struct cg_target *t,
			const struct cg_value *v, const char *field, bool v2, moat_error *err)
{
	if ((t->conv == CV_NOOP_TRUE && v->b) || (t->conv == CV_NOOP_FALSE && !v->b))
		return 0;
	if (t->conv == CV_NOOP_TRUE || t->conv == CV_NOOP_FALSE)
		return moat_error_msg(err, EOPNOTSUPP, "%s: %s is not supported on cgroup v%d",
				      field, v->b ? "true" : "false", v2 ? 2 : 1);
	return moat_error_msg(err, EOPNOTSUPP, "%s: not supported on cgroup v%d", field,
			      v2 ? 2 : 1);
}

static int plan_row(struct moat_cgroup *cg, const struct oci_resources *res,
		    const struct cg_row *row, struct cg_plan *p, moat_error *err)
{
	_cleanup_free_ char *field = NULL, *val0 = NULL, *val1 = NULL;
	const struct cg_target *t;
	struct cg_value v;
	unsigned flags = row->flags;
	const char *obj = row_get(res, row, &v);
	bool v2;

	if (obj == NULL)
		return 0;
	field = xasprintf("linux.resources.%s", row->field);
	if (cg_plan_side(cg, row->ctrl, field, &v2, err) < 0)
		return moat_error_ret(err);
	t = v2 ? row->v2 : row->v1;
	if (t[0].file == NULL && (row->flags & CG_W_IGNORABLE)) {
		/* -1 asks for no limit, which is what a side without one has */
		if (v.i >= 0)
			plan_ignore(p, field,
				    xasprintf("%s on cgroup v%d", row->absent, v2 ? 2 : 1));
		return 0;
	}
	if (t[0].file == NULL)
		return plan_no_file(row, &t[0], &v, field, v2, err);
	if (convert(row, &t[0], obj, &v, field, &val0, &flags, err) < 0)
		return moat_error_ret(err);
	if (val0 == NULL)
		return 0;
	if (t[1].file != NULL && convert(row, &t[1], obj, &v, field, &val1, &flags, err) < 0)
		return moat_error_ret(err);
	cg_plan_add(p, field, row->ctrl, v2, xstrdup(t[0].file), TAKE_PTR(val0));
	p->w[p->n - 1].flags = flags;
	p->w[p->n - 1].absent = row->absent;
	if (t[1].file != NULL && val1 != NULL) {
		p->w[p->n - 1].file[1] = xstrdup(t[1].file);
		p->w[p->n - 1].value[1] = TAKE_PTR(val1);
	}
	return 0;
}

static int check_dev(const char *field, int64_t major, int64_t minor, moat_error *err)
{
	if (major < 0 || minor < 0)
		return moat_error_msg(err, EINVAL, "%s: major and minor must not be negative",
				      field);
	return 0;
}

/* The runtime-spec's range for block IO weights, whatever the kernel would take (BFQ takes
 * 1..1000 on v1, so the file alone would let 5 through). */
static int check_weight(const char *field, unsigned w, moat_error *err)
{
	if (w < 10 || w > 1000)
		return moat_error_msg(err, EINVAL, "%s: %u is outside 10..1000", field, w);
	return 0;
}

static int plan_weight_device(struct moat_cgroup *cg, const struct oci_weight_device *d, size_t i,
			      struct cg_plan *p, moat_error *err)
{
	_cleanup_free_ char *field = xasprintf("linux.resources.blockIO.weightDevice[%zu]", i);
	_cleanup_free_ char *wfield = xasprintf("%s.weight", field);
	_cleanup_free_ char *lfield = xasprintf("%s.leafWeight", field);
	bool v2;

	if (check_dev(field, d->major, d->minor, err) < 0 ||
	    cg_plan_side(cg, CG_BLKIO, field, &v2, err) < 0 ||
	    (d->weight_present && check_weight(wfield, d->weight, err) < 0) ||
	    (d->leaf_weight_present && check_weight(lfield, d->leaf_weight, err) < 0))
		return moat_error_ret(err);
	if (d->weight_present && !v2) {
		cg_plan_add(p, wfield, CG_BLKIO, false, xstrdup("blkio.weight_device"),
			    xasprintf("%" PRId64 ":%" PRId64 " %u", d->major, d->minor, d->weight));
		p->w[p->n - 1].file[1] = xstrdup("blkio.bfq.weight_device");
		p->w[p->n - 1].value[1] = xstrdup(p->w[p->n - 1].value[0]);
	} else if (d->weight_present) {
		cg_plan_add(p, wfield, CG_BLKIO, true, xstrdup("io.bfq.weight"),
			    xasprintf("%" PRId64 ":%" PRId64 " %u", d->major, d->minor, d->weight));
		p->w[p->n - 1].file[1] = xstrdup("io.weight");
		p->w[p->n - 1].value[1] = xasprintf("%" PRId64 ":%" PRId64 " %" PRIu64, d->major,
						    d->minor, cg_v2_io_weight(d->weight));
	}
	if (d->leaf_weight_present && v2)
		return moat_error_msg(err, EOPNOTSUPP, "%s: not supported on cgroup v2", lfield);
	if (d->leaf_weight_present)
		cg_plan_add(p, lfield, CG_BLKIO, false, xstrdup("blkio.leaf_weight_device"),
			    xasprintf("%" PRId64 ":%" PRId64 " %u", d->major, d->minor,
				      d->leaf_weight));
	return 0;
}

static int plan_throttle(struct moat_cgroup *cg, const struct oci_block_io *bio, size_t row,
			 struct cg_plan *p, moat_error *err)
{
	const struct oci_throttle_device *const *list =
		*(const struct oci_throttle_device *const *const *)((const char *)bio +
								    throttle_rows[row].list);
	size_t n = *(const size_t *)((const char *)bio + throttle_rows[row].len), i;

	for (i = 0; i < n; i++) {
		const struct oci_throttle_device *d = list[i];
		_cleanup_free_ char *field =
			xasprintf("linux.resources.blockIO.%s[%zu]", throttle_rows[row].field, i);
		bool v2;

		if (check_dev(field, d->major, d->minor, err) < 0 ||
		    cg_plan_side(cg, CG_BLKIO, field, &v2, err) < 0)
			return moat_error_ret(err);
		if (v2)
			cg_plan_add(p, field, CG_BLKIO, true, xstrdup("io.max"),
				    xasprintf("%" PRId64 ":%" PRId64 " %s=%" PRIu64, d->major,
					      d->minor, throttle_rows[row].v2_key, d->rate));
		else
			cg_plan_add(p, field, CG_BLKIO, false, xstrdup(throttle_rows[row].v1),
				    xasprintf("%" PRId64 ":%" PRId64 " %" PRIu64, d->major,
					      d->minor, d->rate));
	}
	return 0;
}

static int plan_block_io(struct moat_cgroup *cg, const struct oci_block_io *bio, struct cg_plan *p,
			 moat_error *err)
{
	size_t i;

	if (bio == NULL)
		return 0;
	/* 0 reads as "not set", as engines send it */
	if ((bio->weight_present && bio->weight != 0 &&
	     check_weight("linux.resources.blockIO.weight", bio->weight, err) < 0) ||
	    (bio->leaf_weight_present && bio->leaf_weight != 0 &&
	     check_weight("linux.resources.blockIO.leafWeight", bio->leaf_weight, err) < 0))
		return moat_error_ret(err);
	for (i = 0; i < bio->weight_device_len; i++)
		if (plan_weight_device(cg, bio->weight_device[i], i, p, err) < 0)
			return moat_error_ret(err);
	for (i = 0; i < MOAT_ARRAY_SIZE(throttle_rows); i++)
		if (plan_throttle(cg, bio, i, p, err) < 0)
			return moat_error_ret(err);
	return 0;
}

/* A word that goes into a file name or a line: letters, digits and a few marks only. */
static bool plain_word(const char *s, size_t max, const char *extra)
{
	size_t len = strlen(s), i;

	if (len == 0 || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr(extra, s[i]) != NULL))
			return false;
	return true;
}

static int plan_hugepages(struct moat_cgroup *cg, const struct oci_resources *res,
			  struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < res->hugepage_limits_len; i++) {
		const struct oci_hugepage_limit *h = res->hugepage_limits[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.hugepageLimits[%zu]", i);
		bool v2;

		if (!plain_word(h->page_size, 16, ""))
			return moat_error_msg(err, EINVAL,
					      "%s.pageSize: '%s' is not a page size such as 2MB",
					      field, h->page_size);
		if (cg_plan_side(cg, CG_HUGETLB, field, &v2, err) < 0)
			return moat_error_ret(err);
		cg_plan_add(p, field, CG_HUGETLB, v2,
			    v2 ? xasprintf("hugetlb.%s.max", h->page_size)
			       : xasprintf("hugetlb.%s.limit_in_bytes", h->page_size),
			    xasprintf("%" PRIu64, h->limit));
	}
	return 0;
}

static int plan_net_prio(struct moat_cgroup *cg, const struct oci_network *net, struct cg_plan *p,
			 moat_error *err)
{
	size_t i;

	for (i = 0; net != NULL && i < net->priorities_len; i++) {
		const struct oci_net_priority *np = net->priorities[i];
		_cleanup_free_ char *field =
			xasprintf("linux.resources.network.priorities[%zu]", i);
		bool v2;

		if (!plain_word(np->name, 15, "-_.@:"))
			return moat_error_msg(err, EINVAL, "%s.name: '%s' is not an interface name",
					      field, np->name);
		if (cg_plan_side(cg, CG_NET_PRIO, field, &v2, err) < 0)
			return moat_error_ret(err);
		cg_plan_add(p, field, CG_NET_PRIO, false, xstrdup("net_prio.ifpriomap"),
			    xasprintf("%s %" PRIu32, np->name, np->priority));
	}
	return 0;
}

static int plan_rdma(struct moat_cgroup *cg, const struct oci_resources *res, struct cg_plan *p,
		     moat_error *err)
{
	size_t i;

	for (i = 0; i < res->rdma_len; i++) {
		const struct oci_rdma *d = res->rdma[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.rdma.%s", d->name);
		_cleanup_free_ char *handles = NULL, *objects = NULL;
		bool v2;

		if (!plain_word(d->name, 64, "-_.:"))
			return moat_error_msg(err, EINVAL, "%s: '%s' is not a device name", field,
					      d->name);
		if (!d->hca_handles_present && !d->hca_objects_present)
			continue;
		if (cg_plan_side(cg, CG_RDMA, field, &v2, err) < 0)
			return moat_error_ret(err);
		handles = d->hca_handles_present ? xasprintf(" hca_handle=%" PRIu32, d->hca_handles)
						 : xstrdup("");
		objects = d->hca_objects_present ? xasprintf(" hca_object=%" PRIu32, d->hca_objects)
						 : xstrdup("");
		cg_plan_add(p, field, CG_RDMA, v2, xstrdup("rdma.max"),
			    xasprintf("%s%s%s", d->name, handles, objects));
	}
	return 0;
}

/* ---- device rules ------------------------------------------------------------------------ */

/* The runtime spec's default devices (config-linux.md, "Default Devices"). */
const struct cg_default_device cg_default_devices[] = {
	{ 'c', 1, 3, "rwm", "/dev/null" },
	{ 'c', 1, 5, "rwm", "/dev/zero" },
	{ 'c', 1, 7, "rwm", "/dev/full" },
	{ 'c', 1, 8, "rwm", "/dev/random" },
	{ 'c', 1, 9, "rwm", "/dev/urandom" },
	{ 'c', 5, 0, "rwm", "/dev/tty" },
	{ 'c', 5, 1, "rwm", "/dev/console" },
	{ 'c', 5, 2, "rwm", "/dev/ptmx" },
	{ 'c', 136, CG_DEV_ANY, "rwm", "/dev/pts/*" },
};
const size_t cg_default_devices_n = MOAT_ARRAY_SIZE(cg_default_devices);

static void allow_add(struct cg_allows *a, char type, int64_t major, int64_t minor,
		      const char *access, char *field)
{
	struct cg_allow *x;

	a->a = xrealloc(a->a, (a->n + 1) * sizeof(*a->a));
	x = &a->a[a->n++];
	x->type = type;
	x->major = major;
	x->minor = minor;
	snprintf(x->access, sizeof(x->access), "%s", access);
	x->field = field;
}

void cg_allows_clear(struct cg_allows *a)
{
	while (a->n > 0)
		free(a->a[--a->n].field);
	free(a->a);
	a->a = NULL;
}

/* A rule that names this very device: its type (or "a"), and its own major and minor. */
static bool names_device(const struct oci_device_cgroup *d, char type, int64_t major, int64_t minor)
{
	const char *t = d->type ? d->type : "a";

	return (strcmp(t, "a") == 0 || (t[0] == type && t[1] == '\0')) && d->major_present &&
	       d->major == major && d->minor_present && d->minor == minor;
}

/* rwm, less each access that the last rule naming the device itself and that access denies. */
static void listed_access(const struct oci_resources *res, char type, int64_t major, int64_t minor,
			  char ret[4])
{
	size_t nrules = res != NULL && res->devices != NULL ? res->devices_len : 0, n = 0, i;
	const char *a;

	for (a = "rwm"; *a != '\0'; a++) {
		bool allowed = true;

		for (i = nrules; i-- > 0;) {
			const struct oci_device_cgroup *d = res->devices[i];

			if (names_device(d, type, major, minor) &&
			    strchr(d->access ? d->access : "rwm", *a) != NULL) {
				allowed = d->allow;
				break;
			}
		}
		if (allowed)
			ret[n++] = *a;
	}
	ret[n] = '\0';
}

static int allow_listed(const struct oci_resources *res, const struct oci_device *d, size_t i,
			struct cg_allows *a, moat_error *err)
{
	char type = d->type != NULL && d->type[0] == 'u' ? 'c' : d->type ? d->type[0] : '\0';
	char access[4];

	if (type != 'b' && type != 'c') /* a fifo: no device number for the cgroup to judge */
		return 0;
	if (!d->major_present || !d->minor_present || d->major < 0 || d->major > UINT32_MAX ||
	    d->minor < 0 || d->minor > UINT32_MAX)
		return moat_error_msg(err, EINVAL,
				      "linux.devices[%zu] (%s): a %s device needs a major and "
				      "a minor of 0..%" PRIu32,
				      i, d->path, d->type, UINT32_MAX);
	listed_access(res, type, d->major, d->minor, access);
	if (access[0] != '\0')
		allow_add(a, type, d->major, d->minor, access,
			  xasprintf("linux.devices[%zu] (%s)", i, d->path));
	return 0;
}

int cg_allows_build(const struct oci_resources *res, const struct cg_listed *listed,
		    struct cg_allows *ret, moat_error *err)
{
	struct cg_allows a = { NULL, 0 };
	size_t i;

	for (i = 0; listed != NULL && i < listed->n; i++)
		if (allow_listed(res, listed->dev[i], i, &a, err) < 0) {
			cg_allows_clear(&a);
			return moat_error_ret(err);
		}
	for (i = 0; i < cg_default_devices_n; i++) {
		const struct cg_default_device *dd = &cg_default_devices[i];

		allow_add(&a, dd->type, dd->major, dd->minor, dd->access,
			  xasprintf("default device %s", dd->what));
	}
	*ret = a;
	return 0;
}

/* The v1 devices controller where there is one. Otherwise the unified hierarchy's eBPF filter
 * (cgroup-v2-devices.c): on a pure v2 host every new cgroup gets one, as every v1 cgroup gets
 * its rules; on a hybrid host without the v1 controller only a config that lists device rules
 * does (one that lists none stays unconfined there, as it was before the filter existed). */
static int plan_devices(struct moat_cgroup *cg, const struct oci_resources *res,
			const struct cg_listed *listed, bool creating, struct cg_plan *p,
			moat_error *err)
{
	_cleanup_(cg_allows_clear) struct cg_allows allows = { NULL, 0 };
	bool rules = res != NULL && res->devices != NULL;
	bool v1 = cg->layout != MOAT_CGROUP_V2 && cg_hier_for(cg, CG_DEVICES, false) != NULL;
	bool v2 = !v1 && cg_unified(cg) != NULL &&
		  (rules || (creating && cg->layout == MOAT_CGROUP_V2));

	if (!v1 && !v2 && rules)
		return moat_error_msg(err, EOPNOTSUPP,
				      "linux.resources.devices: not supported on this "
				      "host (no devices controller)");
	if ((!v1 && !v2) || (!creating && !rules))
		return 0;
	if (cg_allows_build(res, listed, &allows, err) < 0)
		return moat_error_ret(err);
	if (v1)
		return cg_v1_plan_devices(res, &allows, creating, p, err);
	return cg_v2_devices_compile(rules ? res->devices : NULL, rules ? res->devices_len : 0,
				     &allows, &p->devices, err);
}

static int plan_build(struct moat_cgroup *cg, const struct oci_resources *res,
		      const struct cg_listed *listed, bool creating, struct cg_plan *p,
		      moat_error *err)
{
	size_t i;

	if (plan_devices(cg, res, listed, creating, p, err) < 0)
		return moat_error_ret(err);
	if (res == NULL)
		return 0;
	for (i = 0; i < MOAT_ARRAY_SIZE(rows); i++)
		if (plan_row(cg, res, &rows[i], p, err) < 0)
			return moat_error_ret(err);
	if (plan_block_io(cg, res->block_io, p, err) < 0 || plan_hugepages(cg, res, p, err) < 0 ||
	    plan_net_prio(cg, res->network, p, err) < 0 || plan_rdma(cg, res, p, err) < 0 ||
	    cg_v2_plan_unified(cg, res->unified, p, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* ---- running a plan ------------------------------------------------------------------------ */

static struct cg_hier *write_hier(struct moat_cgroup *cg, const struct cg_write *w, moat_error *err)
{
	struct cg_hier *h = cg_hier_for(cg, w->ctrl, w->v2);

	if (h == NULL || h->fd < 0) {
		moat_error_msg(err, ENOENT, "%s: cgroup '%s' does not exist in the %s hierarchy",
			       w->field, cg->path,
			       w->v2 ? "unified" : cg_ctrl_name(w->ctrl, false));
		return NULL;
	}
	return h;
}

/* Settle each write on the first of its files that exists here. */
static int plan_pick_files(struct moat_cgroup *cg, struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		struct cg_write *w = &p->w[i];
		struct cg_hier *h = write_hier(cg, w, err);

		if (h == NULL)
			return moat_error_ret(err);
		if (cg_has_file(h, w->file[0]))
			continue;
		if (w->file[1] == NULL && (w->flags & CG_W_IGNORABLE)) {
			plan_ignore(p, w->field, xasprintf("%s (no %s)", w->absent, w->file[0]));
			w->skip = true;
			continue;
		}
		if (w->file[1] == NULL && w->absent != NULL)
			return moat_error_msg(err, EOPNOTSUPP,
					      "%s: not supported on this host: %s (no %s)",
					      w->field, w->absent, w->file[0]);
		if (w->file[1] == NULL)
			return moat_error_msg(err, EOPNOTSUPP,
					      "%s: not supported on this host (no %s)", w->field,
					      w->file[0]);
		if (!cg_has_file(h, w->file[1]))
			return moat_error_msg(err, EOPNOTSUPP,
					      "%s: not supported on this host (no %s or %s)",
					      w->field, w->file[0], w->file[1]);
		free(w->file[0]);
		free(w->value[0]);
		w->file[0] = TAKE_PTR(w->file[1]);
		w->value[0] = TAKE_PTR(w->value[1]);
	}
	return 0;
}

static uint32_t plan_v2_ctrls(const struct cg_plan *p)
{
	uint32_t mask = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->w[i].v2 && p->w[i].ctrl != CG_CORE)
			mask |= CG_BIT(p->w[i].ctrl);
	return mask;
}

static int read_u64(struct cg_hier *h, const char *file, uint64_t *ret, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *end;

	if (cg_read_at(h->fd, h->dir, file, &text, err) < 0)
		return moat_error_ret(err);
	errno = 0;
	*ret = strtoull(text, &end, 10);
	if (errno != 0 || end == text)
		return moat_error_msg(err, EINVAL, "cgroup '%s': %s holds '%.40s', not a number",
				      h->dir, file, text);
	return 0;
}

/* A kernel that accepts a write and ignores it (memory.kmem.limit_in_bytes since 6.1) would
 * drop a limit silently: read back. 1: nothing moved, the kernel ignored it. */
static int write_checked(struct cg_hier *h, const struct cg_write *w, moat_error *err)
{
	uint64_t before, after, want, page = (uint64_t)sysconf(_SC_PAGESIZE);
	int64_t req = strtoll(w->value[0], NULL, 10);

	if (read_u64(h, w->file[0], &before, err) < 0 ||
	    cg_write_at(h->fd, h->dir, w->file[0], w->value[0], err) < 0 ||
	    read_u64(h, w->file[0], &after, err) < 0)
		return moat_error_ret(err);
	want = req < 0 ? 0 : (uint64_t)req / page * page;
	return req >= 0 && after == before && after != want;
}

/* cpu.max with only a period: keep the quota that is there. */
static int write_keep_quota(struct cg_hier *h, const struct cg_write *w, moat_error *err)
{
	_cleanup_free_ char *cur = NULL, *value = NULL;

	if (cg_read_at(h->fd, h->dir, w->file[0], &cur, err) < 0)
		return moat_error_ret(err);
	value = xasprintf("%.*s %s", (int)strcspn(cur, " \n"), cur, w->value[0]);
	return cg_write_at(h->fd, h->dir, w->file[0], value, err);
}

/* The v2 device filter goes in before any file is written, as the v1 rules come first. */
static int run_devices(struct moat_cgroup *cg, const struct cg_plan *p, moat_error *err)
{
	struct cg_hier *u = cg_unified(cg);
	int r;

	if (p->devices == NULL)
		return 0;
	/* Loading the filter takes CAP_BPF, which a user's moat lacks; its container has no more
	 * devices than the user (no mknod in a user namespace, the host's modes on any bind),
	 * as runc and crun leave a rootless container's devices: said in the state, not warned */
	if (geteuid() != 0 && cg->delegated) {
		oci_string_map_set(&cg->ignored, "linux.resources.devices",
				   "a rootless container's cgroup gets no device filter (it needs "
				   "CAP_BPF); the container has only its user's devices");
		return 0;
	}
	if (u == NULL || u->fd < 0)
		return moat_error_msg(err, ENOENT,
				      "linux.resources.devices: cgroup '%s' does not exist in "
				      "the unified hierarchy",
				      cg->path);
	if (cg_hooks != NULL && cg_hooks->devices_prog != NULL) {
		r = cg_hooks->devices_prog(u->dir, p->devices->insns, p->devices->n,
					   cg_hooks->data);
		if (r < 0)
			moat_error_set(err, -r, "attach the device filter to '%s'", u->dir);
	} else {
		r = cg_v2_devices_install(u->fd, u->dir, p->devices, err);
	}
	if (r < 0)
		return moat_error_prefix(err, "linux.resources.devices");
	return 0;
}

static void record_applied(struct moat_cgroup *cg, const struct cg_hier *h,
			   const struct cg_write *w)
{
	_cleanup_free_ char *what = xasprintf("%s/%s=%s", h->dir, w->file[0], w->value[0]);

	oci_string_map_set(&cg->applied, w->field, what);
}

static int write_one(struct moat_cgroup *cg, struct cg_hier *h, const struct cg_write *w,
		     moat_error *err)
{
	if (w->flags & CG_W_CHECK_EFFECT)
		return write_checked(h, w, err);
	if (w->flags & CG_W_KEEP_QUOTA)
		return write_keep_quota(h, w, err);
	if (w->flags & CG_W_RT_BUDGET)
		return cg_rt_write_runtime(cg, h, w, err);
	return cg_write_at(h->fd, h->dir, w->file[0], w->value[0], err);
}

static int plan_run(struct moat_cgroup *cg, struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct cg_write *w = &p->w[i];
		struct cg_hier *h = w->skip ? NULL : write_hier(cg, w, err);
		int r;

		if (w->skip)
			continue;
		if (h == NULL)
			return moat_error_ret(err);
		r = write_one(cg, h, w, err);
		if (r < 0)
			return moat_error_prefix(err, "%s", w->field);
		if (r > 0 && !(w->flags & CG_W_IGNORABLE))
			return moat_error_msg(err, EOPNOTSUPP,
					      "%s: not supported on this host (the kernel "
					      "ignores %s)",
					      w->field, w->file[0]);
		if (r > 0)
			plan_ignore(p, w->field,
				    xasprintf("%s (a write to %s has no effect)", w->absent,
					      w->file[0]));
		else
			record_applied(cg, h, w);
	}
	return 0;
}

/* Keep what the plan could not apply, and say so. */
static void note_ignored(struct moat_cgroup *cg, const struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; p->ignored != NULL && i < p->ignored->len; i++) {
		oci_string_map_set(&cg->ignored, p->ignored->keys[i], p->ignored->values[i]);
		moat_error_warn(err, "%s: ignored: %s", p->ignored->keys[i], p->ignored->values[i]);
	}
}

/* memory.checkBeforeUpdate: refuse a limit below what the cgroup already uses. */
static int check_memory_usage(struct moat_cgroup *cg, const struct oci_resources *res,
			      moat_error *err)
{
	const struct oci_memory *m = res ? res->memory : NULL;
	struct cg_hier *h;
	uint64_t usage;
	bool v2;

	if (m == NULL || !m->check_before_update_present || !m->check_before_update ||
	    !m->limit_present || m->limit < 0)
		return 0;
	if (cg_plan_side(cg, CG_MEMORY, "linux.resources.memory.checkBeforeUpdate", &v2, err) < 0)
		return moat_error_ret(err);
	h = cg_hier_for(cg, CG_MEMORY, v2);
	if (h->fd < 0)
		return 0;
	if (read_u64(h, v2 ? "memory.current" : "memory.usage_in_bytes", &usage, err) < 0)
		return moat_error_prefix(err, "linux.resources.memory.checkBeforeUpdate");
	if (usage > (uint64_t)m->limit)
		return moat_error_msg(err, EBUSY,
				      "linux.resources.memory.limit: %" PRId64
				      " is below the %" PRIu64
				      " bytes the cgroup uses now (memory.checkBeforeUpdate)",
				      m->limit, usage);
	return 0;
}

/* A delegated cgroup (systemd's scope) has the controllers its manager gave it, and moat asks
 * for no more: a field whose controller is not among them is refused, naming both. */
static int check_delegated(struct moat_cgroup *cg, const struct cg_plan *p, moat_error *err)
{
	struct cg_hier *u = cg_unified(cg);
	_cleanup_free_ char *have = NULL;

	if (u == NULL || u->fd < 0 || plan_v2_ctrls(p) == 0)
		return 0;
	if (cg_read_at(u->fd, u->dir, "cgroup.controllers", &have, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < p->n; i++) {
		const char *name = cg_ctrl_name(p->w[i].ctrl, true);

		if (!p->w[i].v2 || p->w[i].ctrl == CG_CORE || cg_v2_listed(have, name))
			continue;
		have[strcspn(have, "\n")] = '\0';
		return moat_error_msg(err, EPERM,
				      "%s: the %s controller is not delegated to the container's "
				      "cgroup %s, which has: %s",
				      p->w[i].field, name, u->dir, have[0] ? have : "none");
	}
	return 0;
}

int cg_resources_apply(struct moat_cgroup *cg, const struct oci_resources *res,
		       const struct cg_listed *listed, bool creating, moat_error *err)
{
	_cleanup_(cg_plan_clear) struct cg_plan p = { NULL, 0, NULL, NULL };

	if (plan_build(cg, res, listed, creating, &p, err) < 0 ||
	    (cg->delegated ? check_delegated(cg, &p, err)
			   : cg_v2_enable(cg, plan_v2_ctrls(&p), err)) < 0 ||
	    plan_pick_files(cg, &p, err) < 0 || check_memory_usage(cg, res, err) < 0 ||
	    cg_v1_order_memory(cg, &p, err) < 0 || run_devices(cg, &p, err) < 0 ||
	    plan_run(cg, &p, err) < 0)
		return moat_error_ret(err);
	note_ignored(cg, &p, err);
	return 0;
}
