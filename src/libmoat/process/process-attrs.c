/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: scheduler, I/O priority, CPU affinity, personality, memory policy and
 * the LSM exec labels of the container process.
 *
 * Each attribute has a pure plan function (config -> kernel values, every
 * refusal naming the field) that validate and apply share; validate adds
 * what only the host can tell, apply makes the system call and explains a
 * refusal. */
#include "process-attrs.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/ioprio.h>
#include <linux/magic.h>
#include <linux/mempolicy.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include "selinux-lib.h"
#include "utils.h"

/* Bounds on the ids a CPU or node list may name: the largest CONFIG_NR_CPUS
 * and the largest 1 << CONFIG_NODES_SHIFT Linux accepts. They size the
 * bitmaps below, so a list cannot make moat allocate. */
#define MAX_CPUS 8192
#define MAX_NODES 1024
#define ULONG_BITS (8 * sizeof(unsigned long))

#define HOST_CPUS "/sys/devices/system/cpu/online"
#define HOST_NODES "/sys/devices/system/node/online"
#define HOST_NUMA "/sys/devices/system/node"
#define HOST_DL_PERIOD_MIN "/proc/sys/kernel/sched_deadline_period_min_us"
#define HOST_DL_PERIOD_MAX "/proc/sys/kernel/sched_deadline_period_max_us"
#define HOST_APPARMOR "/sys/module/apparmor/parameters/enabled"

/* The kernel's smallest SCHED_DEADLINE runtime: 1 << DL_SCALE ns. */
#define DL_MIN_RUNTIME 1024ULL

/* Where the scheduling privileges count, said once. */
#define INITIAL_USERNS \
	"in the initial user namespace (a container's user namespace cannot grant it)"

/* uapi linux/sched.h, which clashes with glibc's <sched.h>. */
#define SCHED_FLAG_RESET_ON_FORK 0x01ULL
#define SCHED_FLAG_RECLAIM 0x02ULL
#define SCHED_FLAG_DL_OVERRUN 0x04ULL
#define SCHED_FLAG_KEEP_POLICY 0x08ULL
#define SCHED_FLAG_KEEP_PARAMS 0x10ULL
#define SCHED_FLAG_UTIL_CLAMP_MIN 0x20ULL
#define SCHED_FLAG_UTIL_CLAMP_MAX 0x40ULL

/* Linux 6.9; older uapi headers lack it. */
#define MOAT_MPOL_WEIGHTED_INTERLEAVE 6

/* sched_setattr(2)'s struct sched_attr, first version (no utilization
 * clamps). glibc 2.36 declares none, and <linux/sched/types.h> redefines
 * struct sched_param. */
struct sched_attr_v0 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};
_Static_assert(sizeof(struct sched_attr_v0) == 48, "SCHED_ATTR_SIZE_VER0 is 48 bytes");

/* ---- the spec's tables --------------------------------------------------------------- */

/* process.scheduler.policy -> SCHED_*, and which parameters each policy uses. */
static const struct sched_policy {
	const char *name;
	uint32_t policy;
	int prio_min, prio_max; /* sched_priority; 0..0 where it must be 0 */
	bool nice;              /* the nice value applies (it does for the fair classes only) */
	bool deadline;          /* runtime, deadline and period apply */
	const char *refused;    /* why moat refuses the policy, or NULL */
} sched_policies[] = {
	{ "SCHED_OTHER", SCHED_OTHER, 0, 0, true, false, NULL },
	{ "SCHED_FIFO", SCHED_FIFO, 1, 99, false, false, NULL },
	{ "SCHED_RR", SCHED_RR, 1, 99, false, false, NULL },
	{ "SCHED_BATCH", SCHED_BATCH, 0, 0, true, false, NULL },
	{ "SCHED_ISO", SCHED_ISO, 0, 0, false, false,
	  "is reserved by Linux and no kernel schedules it" },
	{ "SCHED_IDLE", SCHED_IDLE, 0, 0, false, false, NULL },
	{ "SCHED_DEADLINE", SCHED_DEADLINE, 0, 0, false, true, NULL },
};

#define UTIL_CLAMP_REFUSED                                                                    \
	"needs a utilization value, which the OCI scheduler object cannot carry (the kernel " \
	"would clamp to 0)"

/* process.scheduler.flags -> SCHED_FLAG_* bits. */
static const struct sched_flag {
	const char *name;
	uint64_t bit;
	bool deadline_only; /* the kernel ignores it for any other policy */
	const char *refused;
} sched_flags[] = {
	{ "SCHED_FLAG_RESET_ON_FORK", SCHED_FLAG_RESET_ON_FORK, false, NULL },
	{ "SCHED_FLAG_RECLAIM", SCHED_FLAG_RECLAIM, true, NULL },
	{ "SCHED_FLAG_DL_OVERRUN", SCHED_FLAG_DL_OVERRUN, true, NULL },
	{ "SCHED_FLAG_KEEP_POLICY", SCHED_FLAG_KEEP_POLICY, false, NULL },
	{ "SCHED_FLAG_KEEP_PARAMS", SCHED_FLAG_KEEP_PARAMS, false, NULL },
	{ "SCHED_FLAG_UTIL_CLAMP_MIN", SCHED_FLAG_UTIL_CLAMP_MIN, false, UTIL_CLAMP_REFUSED },
	{ "SCHED_FLAG_UTIL_CLAMP_MAX", SCHED_FLAG_UTIL_CLAMP_MAX, false, UTIL_CLAMP_REFUSED },
};

/* process.ioPriority.class -> IOPRIO_CLASS_*. */
static const struct ioprio_class {
	const char *name;
	int class;
	bool levels; /* the priority selects a level (the idle class has none) */
} ioprio_classes[] = {
	{ "IOPRIO_CLASS_RT", IOPRIO_CLASS_RT, true },
	{ "IOPRIO_CLASS_BE", IOPRIO_CLASS_BE, true },
	{ "IOPRIO_CLASS_IDLE", IOPRIO_CLASS_IDLE, false },
};

/* linux.personality.domain -> PER_*. The spec defines no flags. */
static const struct personality_domain {
	const char *name;
	unsigned long persona;
} personality_domains[] = {
	{ "LINUX", PER_LINUX },
	{ "LINUX32", PER_LINUX32 },
};

/* linux.memoryPolicy.mode -> MPOL_*, with the nodes each mode takes. */
enum mpol_nodes { NODES_NONE, NODES_AT_MOST_ONE, NODES_SOME };
static const struct mpol_mode {
	const char *name;
	int mode;
	enum mpol_nodes nodes;
	bool numa_balancing; /* MPOL_F_NUMA_BALANCING is accepted */
} mpol_modes[] = {
	{ "MPOL_DEFAULT", MPOL_DEFAULT, NODES_NONE, false },
	{ "MPOL_BIND", MPOL_BIND, NODES_SOME, true },
	{ "MPOL_INTERLEAVE", MPOL_INTERLEAVE, NODES_SOME, false },
	{ "MPOL_WEIGHTED_INTERLEAVE", MOAT_MPOL_WEIGHTED_INTERLEAVE, NODES_SOME, false },
	{ "MPOL_PREFERRED", MPOL_PREFERRED, NODES_AT_MOST_ONE, false },
	{ "MPOL_PREFERRED_MANY", MPOL_PREFERRED_MANY, NODES_SOME, true },
	{ "MPOL_LOCAL", MPOL_LOCAL, NODES_NONE, false },
};

/* linux.memoryPolicy.flags -> MPOL_F_* bits. */
static const struct mpol_flag {
	const char *name;
	unsigned int bit;
} mpol_flags[] = {
	{ "MPOL_F_NUMA_BALANCING", MPOL_F_NUMA_BALANCING },
	{ "MPOL_F_RELATIVE_NODES", MPOL_F_RELATIVE_NODES },
	{ "MPOL_F_STATIC_NODES", MPOL_F_STATIC_NODES },
};
#define MPOL_USER_NODES (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES)

/* Look a name up in one of the tables above (each row starts with its name). */
#define TABLE_FIND(table, key)                                                                  \
	({                                                                                      \
		const __typeof__((table)[0]) *_moat_row = NULL;                                 \
		const char *_moat_key = (key);                                                  \
		for (size_t _moat_i = 0; _moat_key != NULL && _moat_i < MOAT_ARRAY_SIZE(table); \
		     _moat_i++)                                                                 \
			if (strcmp((table)[_moat_i].name, _moat_key) == 0)                      \
				_moat_row = &(table)[_moat_i];                                  \
		_moat_row;                                                                      \
	})

/* ---- CPU and node lists ---------------------------------------------------------------- */

/* A set of CPU or NUMA node numbers, laid out as the kernel's bitmaps. */
struct idset {
	unsigned long bits[MAX_CPUS / ULONG_BITS];
};

static void idset_add(struct idset *s, unsigned int id)
{
	s->bits[id / ULONG_BITS] |= 1UL << (id % ULONG_BITS);
}

static bool idset_has(const struct idset *s, unsigned int id)
{
	return s->bits[id / ULONG_BITS] & (1UL << (id % ULONG_BITS));
}

static unsigned int idset_count(const struct idset *s)
{
	unsigned int n = 0;

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(s->bits); i++)
		n += (unsigned int)__builtin_popcountl(s->bits[i]);
	return n;
}

/* The first id in a that b lacks, or -1. */
static int idset_first_extra(const struct idset *a, const struct idset *b)
{
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(a->bits); i++) {
		unsigned long extra = a->bits[i] & ~b->bits[i];

		if (extra != 0)
			return (int)(i * ULONG_BITS) + __builtin_ctzl(extra);
	}
	return -1;
}

/* Parse a list such as "0-3,7": numbers and ranges, no blanks, each below limit. */
static int idset_parse(const char *list, unsigned int limit, struct idset *ret)
{
	const char *p = list;

	memset(ret, 0, sizeof(*ret));
	for (;;) {
		unsigned long lo, hi;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		lo = hi = strtoul(p, &end, 10);
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -EINVAL;
			hi = strtoul(end + 1, &end, 10);
		}
		if (errno != 0 || lo > hi || hi >= limit)
			return -EINVAL;
		for (; lo <= hi; lo++)
			idset_add(ret, (unsigned int)lo);
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

/* The set as a list, "0-3,7" (for messages). */
static char *idset_format(const struct idset *s, unsigned int limit)
{
	char *buf = NULL;
	size_t len = 0;
	const char *sep = "";
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return xstrdup("?");
	for (unsigned int id = 0; id < limit; id++) {
		unsigned int last = id;

		if (!idset_has(s, id))
			continue;
		while (last + 1 < limit && idset_has(s, last + 1))
			last++;
		fprintf(f, "%s%u", sep, id);
		if (last > id)
			fprintf(f, "-%u", last);
		sep = ",";
		id = last;
	}
	fclose(f);
	return buf;
}

static int parse_list(const char *field, const char *list, const char *what, unsigned int limit,
		      struct idset *ret, moat_error *err)
{
	if (idset_parse(list, limit, ret) < 0)
		return moat_error_msg(err, EINVAL,
				      "%s: '%s' is not a %s list (numbers and ranges below %u, "
				      "such as '0-3,7')",
				      field, list, what, limit);
	return 0;
}

/* The CPUs or nodes the host has online (host_path: a sysfs list). */
static int read_host_ids(const char *field, const char *what, const char *host_path,
			 unsigned int limit, struct idset *ret, moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (read_file_at(AT_FDCWD, host_path, 65536, &buf, &len, err) < 0)
		return moat_error_prefix(err, "%s: list the host's %ss", field, what);
	buf[strcspn(buf, "\n")] = '\0';
	if (idset_parse(buf, limit, ret) < 0)
		return moat_error_msg(err, EINVAL, "%s: cannot read %s: unexpected '%s'", field,
				      host_path, buf);
	return 0;
}

/* Every id of ids must be one the host has online. */
static int check_online(const char *field, const struct idset *ids, const char *what,
			const struct idset *host, unsigned int limit, moat_error *err)
{
	_cleanup_free_ char *online = NULL;
	int extra = idset_first_extra(ids, host);

	if (extra < 0)
		return 0;
	online = idset_format(host, limit);
	return moat_error_msg(err, EINVAL, "%s: %s %d is not online on this host (online: %s)",
			      field, what, extra, online);
}

/* Every id of ids must lie in the container's cpuset when the config sets one.
 * A cpuset that does not parse is the cgroup code's to refuse. */
static int check_cpuset(const char *field, const struct idset *ids, const char *what,
			const char *cpuset_field, const char *cpuset, unsigned int limit,
			moat_error *err)
{
	struct idset allowed;
	int extra;

	if (cpuset == NULL || *cpuset == '\0' || idset_parse(cpuset, limit, &allowed) < 0)
		return 0;
	extra = idset_first_extra(ids, &allowed);
	if (extra < 0)
		return 0;
	return moat_error_msg(err, EINVAL, "%s: %s %d is outside the container's cpuset (%s '%s')",
			      field, what, extra, cpuset_field, cpuset);
}

static const struct oci_cpu *config_cpu(const struct oci_linux *lx)
{
	return lx != NULL && lx->resources != NULL ? lx->resources->cpu : NULL;
}

/* ---- plans: config -> kernel values ------------------------------------------------------ */

static int plan_sched_flags(const struct oci_scheduler *s, const struct sched_policy *pol,
			    uint64_t *ret, moat_error *err)
{
	*ret = 0;
	for (size_t i = 0; i < s->flags_len; i++) {
		const struct sched_flag *f = TABLE_FIND(sched_flags, s->flags[i]);

		if (f == NULL)
			return moat_error_msg(err, EINVAL,
					      "process.scheduler.flags[%zu]: unknown flag '%s'", i,
					      s->flags[i]);
		if (f->refused != NULL)
			return moat_error_msg(err, EINVAL, "process.scheduler.flags[%zu]: %s %s", i,
					      f->name, f->refused);
		if (f->deadline_only && !pol->deadline)
			return moat_error_msg(err, EINVAL,
					      "process.scheduler.flags[%zu]: %s applies only to "
					      "SCHED_DEADLINE, not %s",
					      i, f->name, pol->name);
		*ret |= f->bit;
	}
	return 0;
}

static int check_deadline(const struct oci_scheduler *s, moat_error *err)
{
	uint64_t runtime = s->runtime_present ? s->runtime : 0;
	uint64_t deadline = s->deadline_present ? s->deadline : 0;
	uint64_t period = s->period_present ? s->period : 0;

	if (runtime < DL_MIN_RUNTIME)
		return moat_error_msg(
			err, EINVAL,
			"process.scheduler.runtime: SCHED_DEADLINE needs a runtime of at "
			"least %llu ns, got %" PRIu64,
			DL_MIN_RUNTIME, runtime);
	if (deadline == 0)
		return moat_error_msg(err, EINVAL,
				      "process.scheduler.deadline: required for SCHED_DEADLINE");
	if (runtime > deadline)
		return moat_error_msg(err, EINVAL,
				      "process.scheduler.runtime: %" PRIu64 " ns is longer than "
				      "the deadline (%" PRIu64 " ns)",
				      runtime, deadline);
	if (period != 0 && period < deadline)
		return moat_error_msg(err, EINVAL,
				      "process.scheduler.period: %" PRIu64 " ns is shorter than "
				      "the deadline (%" PRIu64 " ns)",
				      period, deadline);
	if ((deadline | period) >> 63)
		return moat_error_msg(
			err, EINVAL,
			"process.scheduler: deadline and period must be below 2^63 ns");
	return 0;
}

static int check_priority(const struct oci_scheduler *s, const struct sched_policy *pol,
			  moat_error *err)
{
	int prio = s->priority_present ? s->priority : 0;

	if (prio >= pol->prio_min && prio <= pol->prio_max)
		return 0;
	if (pol->prio_max == 0)
		return moat_error_msg(err, EINVAL,
				      "process.scheduler.priority: must be 0 for %s, got %d "
				      "(priorities apply to SCHED_FIFO and SCHED_RR)",
				      pol->name, prio);
	if (!s->priority_present)
		return moat_error_msg(err, EINVAL,
				      "process.scheduler.priority: required for %s (%d..%d)",
				      pol->name, pol->prio_min, pol->prio_max);
	return moat_error_msg(err, EINVAL, "process.scheduler.priority: %d outside %d..%d for %s",
			      prio, pol->prio_min, pol->prio_max, pol->name);
}

static int check_sched_params(const struct oci_scheduler *s, const struct sched_policy *pol,
			      uint64_t flags, moat_error *err)
{
	bool any = s->nice_present || s->priority_present || s->runtime_present ||
		   s->deadline_present || s->period_present;

	if ((flags & SCHED_FLAG_KEEP_PARAMS) && any)
		return moat_error_msg(err, EINVAL,
				      "process.scheduler: SCHED_FLAG_KEEP_PARAMS keeps the current "
				      "nice, priority, runtime, deadline and period, so none of "
				      "them may be set");
	if (flags & SCHED_FLAG_KEEP_PARAMS)
		return 0;
	if (s->nice_present && (s->nice < -20 || s->nice > 19))
		return moat_error_msg(err, EINVAL, "process.scheduler.nice: %d outside -20..19",
				      s->nice);
	if (s->nice_present && s->nice != 0 && !pol->nice)
		return moat_error_msg(
			err, EINVAL,
			"process.scheduler.nice: %s ignores the nice value (it applies "
			"to SCHED_OTHER and SCHED_BATCH)",
			pol->name);
	if (check_priority(s, pol, err) < 0)
		return moat_error_ret(err);
	if (pol->deadline)
		return check_deadline(s, err);
	if ((s->runtime_present && s->runtime) || (s->deadline_present && s->deadline) ||
	    (s->period_present && s->period))
		return moat_error_msg(
			err, EINVAL,
			"process.scheduler: runtime, deadline and period apply only to "
			"SCHED_DEADLINE, not %s",
			pol->name);
	return 0;
}

static int plan_scheduler(const struct oci_scheduler *s, struct sched_attr_v0 *ret,
			  const struct sched_policy **ret_pol, moat_error *err)
{
	const struct sched_policy *pol = TABLE_FIND(sched_policies, s->policy);
	uint64_t flags;

	if (pol == NULL)
		return moat_error_msg(err, EINVAL, "process.scheduler.policy: unknown policy '%s'",
				      s->policy ? s->policy : "");
	if (pol->refused != NULL)
		return moat_error_msg(err, EINVAL, "process.scheduler.policy: %s %s", pol->name,
				      pol->refused);
	if (plan_sched_flags(s, pol, &flags, err) < 0 || check_sched_params(s, pol, flags, err) < 0)
		return moat_error_ret(err);
	*ret = (struct sched_attr_v0){
		.size = sizeof(*ret),
		.sched_policy = pol->policy,
		.sched_flags = flags,
		.sched_nice = s->nice_present ? s->nice : 0,
		.sched_priority = s->priority_present ? (uint32_t)s->priority : 0,
		.sched_runtime = s->runtime_present ? s->runtime : 0,
		.sched_deadline = s->deadline_present ? s->deadline : 0,
		.sched_period = s->period_present ? s->period : 0,
	};
	*ret_pol = pol;
	return 0;
}

static int plan_ioprio(const struct oci_io_priority *io, int *ret, moat_error *err)
{
	const struct ioprio_class *c = TABLE_FIND(ioprio_classes, io->class);

	if (c == NULL)
		return moat_error_msg(err, EINVAL, "process.ioPriority.class: unknown class '%s'",
				      io->class ? io->class : "");
	if (io->priority_present && (io->priority < 0 || io->priority > 7))
		return moat_error_msg(err, EINVAL, "process.ioPriority.priority: %d outside 0..7",
				      io->priority);
	if (!io->priority_present && c->levels)
		return moat_error_msg(
			err, EINVAL,
			"process.ioPriority.priority: required for %s (0 highest to 7 "
			"lowest)",
			c->name);
	*ret = (int)IOPRIO_PRIO_VALUE(c->class, io->priority_present ? io->priority : 0);
	return 0;
}

static int plan_personality(const struct oci_personality *p, unsigned long *ret, moat_error *err)
{
	const struct personality_domain *d = TABLE_FIND(personality_domains, p->domain);

	if (d == NULL)
		return moat_error_msg(err, EINVAL, "linux.personality.domain: unknown domain '%s'",
				      p->domain ? p->domain : "");
	if (p->flags_len > 0)
		return moat_error_msg(
			err, EINVAL,
			"linux.personality.flags[0]: '%s' is not supported (the runtime "
			"spec defines no personality flags)",
			p->flags[0]);
	*ret = d->persona;
	return 0;
}

struct mpol_plan {
	const struct mpol_mode *mode;
	unsigned int flags;
	bool has_nodes;
	struct idset nodes;
};

static int plan_mpol_flags(const struct oci_memory_policy *mp, struct mpol_plan *plan,
			   moat_error *err)
{
	for (size_t i = 0; i < mp->flags_len; i++) {
		const struct mpol_flag *f = TABLE_FIND(mpol_flags, mp->flags[i]);

		if (f == NULL)
			return moat_error_msg(err, EINVAL,
					      "linux.memoryPolicy.flags[%zu]: unknown flag '%s'", i,
					      mp->flags[i]);
		if (plan->mode->mode == MPOL_DEFAULT)
			return moat_error_msg(
				err, EINVAL,
				"linux.memoryPolicy.flags[%zu]: MPOL_DEFAULT takes no flags", i);
		if (f->bit == MPOL_F_NUMA_BALANCING && !plan->mode->numa_balancing)
			return moat_error_msg(
				err, EINVAL,
				"linux.memoryPolicy.flags[%zu]: MPOL_F_NUMA_BALANCING "
				"applies only to MPOL_BIND and MPOL_PREFERRED_MANY, not %s",
				i, plan->mode->name);
		plan->flags |= f->bit;
	}
	if ((plan->flags & MPOL_USER_NODES) == MPOL_USER_NODES)
		return moat_error_msg(err, EINVAL,
				      "linux.memoryPolicy.flags: MPOL_F_STATIC_NODES and "
				      "MPOL_F_RELATIVE_NODES exclude each other");
	return 0;
}

static int check_mpol_nodes(const struct mpol_plan *plan, const char *nodes, moat_error *err)
{
	const char *mode = plan->mode->name;

	switch (plan->mode->nodes) {
	case NODES_NONE:
		if (plan->has_nodes)
			return moat_error_msg(
				err, EINVAL,
				"linux.memoryPolicy.nodes: %s takes no nodes, got '%s'", mode,
				nodes);
		break;
	case NODES_AT_MOST_ONE:
		if (idset_count(&plan->nodes) > 1)
			return moat_error_msg(
				err, EINVAL,
				"linux.memoryPolicy.nodes: %s takes one node, got '%s' "
				"(MPOL_PREFERRED_MANY takes several)",
				mode, nodes);
		break;
	case NODES_SOME:
		if (!plan->has_nodes)
			return moat_error_msg(err, EINVAL,
					      "linux.memoryPolicy.nodes: required for %s", mode);
		break;
	}
	if (!plan->has_nodes && (plan->flags & MPOL_USER_NODES))
		return moat_error_msg(err, EINVAL,
				      "linux.memoryPolicy.flags: MPOL_F_STATIC_NODES and "
				      "MPOL_F_RELATIVE_NODES need nodes, and %s has none",
				      mode);
	return 0;
}

static int plan_mempolicy(const struct oci_memory_policy *mp, struct mpol_plan *ret,
			  moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	ret->mode = TABLE_FIND(mpol_modes, mp->mode);
	if (ret->mode == NULL)
		return moat_error_msg(err, EINVAL, "linux.memoryPolicy.mode: unknown mode '%s'",
				      mp->mode ? mp->mode : "");
	if (plan_mpol_flags(mp, ret, err) < 0)
		return moat_error_ret(err);
	if (mp->nodes != NULL && *mp->nodes != '\0') {
		if (parse_list("linux.memoryPolicy.nodes", mp->nodes, "NUMA node", MAX_NODES,
			       &ret->nodes, err) < 0)
			return moat_error_ret(err);
		ret->has_nodes = true;
	}
	return check_mpol_nodes(ret, mp->nodes, err);
}

/* ---- validate: the config and the host --------------------------------------------------- */

static int read_u64(const char *path, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	char *end;

	if (read_file_at(AT_FDCWD, path, 64, &buf, &len, NULL) < 0)
		return -EIO;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return errno != 0 || end == buf ? -EINVAL : 0;
}

/* The kernel bounds a deadline task's period by two sysctls. Unreadable ones
 * leave the judgement to sched_setattr in apply. */
static int check_host_dl_period(const struct sched_attr_v0 *a, moat_error *err)
{
	uint64_t period = a->sched_period ? a->sched_period : a->sched_deadline, min_us, max_us;

	if (read_u64(HOST_DL_PERIOD_MIN, &min_us) < 0 || read_u64(HOST_DL_PERIOD_MAX, &max_us) < 0)
		return 0;
	if (period >= min_us * 1000 && period <= max_us * 1000)
		return 0;
	return moat_error_msg(
		err, EINVAL,
		"process.scheduler.%s: %" PRIu64 " ns is outside this host's deadline "
		"period range %" PRIu64 "..%" PRIu64 " ns "
		"(kernel.sched_deadline_period_min_us, _max_us)",
		a->sched_period ? "period" : "deadline", period, min_us * 1000, max_us * 1000);
}

/* ret_deadline: the process will run under SCHED_DEADLINE. */
static int validate_scheduler(const struct oci_scheduler *s, bool *ret_deadline, moat_error *err)
{
	const struct sched_policy *pol;
	struct sched_attr_v0 attr;

	*ret_deadline = false;
	if (s == NULL)
		return 0;
	if (plan_scheduler(s, &attr, &pol, err) < 0)
		return moat_error_ret(err);
	*ret_deadline = pol->deadline && !(attr.sched_flags & SCHED_FLAG_KEEP_POLICY);
	if (pol->deadline && !(attr.sched_flags & SCHED_FLAG_KEEP_PARAMS))
		return check_host_dl_period(&attr, err);
	return 0;
}

/* The kernel refuses a SCHED_DEADLINE task an affinity smaller than its root
 * domain: every online CPU, unless cpuset partitions split them, which a
 * container with its own cpuset may be in (then the kernel judges). */
static int check_deadline_affinity(const char *field, const char *list, const struct idset *cpus,
				   const struct idset *host, const struct oci_cpu *cpu,
				   moat_error *err)
{
	int missing = idset_first_extra(host, cpus);

	if (missing < 0 || (cpu != NULL && cpu->cpus != NULL && *cpu->cpus != '\0'))
		return 0;
	return moat_error_msg(err, EINVAL,
			      "%s: SCHED_DEADLINE needs an affinity that covers every online CPU, "
			      "and '%s' leaves out CPU %d",
			      field, list, missing);
}

static int validate_cpus(const char *field, const char *list, const struct oci_linux *lx,
			 bool deadline, moat_error *err)
{
	const struct oci_cpu *cpu = config_cpu(lx);
	struct idset cpus, host;

	if (list == NULL || *list == '\0')
		return 0;
	if (parse_list(field, list, "CPU", MAX_CPUS, &cpus, err) < 0 ||
	    read_host_ids(field, "CPU", HOST_CPUS, MAX_CPUS, &host, err) < 0 ||
	    check_online(field, &cpus, "CPU", &host, MAX_CPUS, err) < 0 ||
	    check_cpuset(field, &cpus, "CPU", "linux.resources.cpu.cpus", cpu ? cpu->cpus : NULL,
			 MAX_CPUS, err) < 0)
		return moat_error_ret(err);
	return deadline ? check_deadline_affinity(field, list, &cpus, &host, cpu, err) : 0;
}

static int validate_affinity(const struct oci_cpu_affinity *a, const struct oci_linux *lx,
			     bool deadline, moat_error *err)
{
	if (a == NULL)
		return 0;
	if (validate_cpus("process.execCPUAffinity.initial", a->initial, lx, deadline, err) < 0)
		return moat_error_ret(err);
	return validate_cpus("process.execCPUAffinity.final", a->final, lx, deadline, err);
}

static int validate_mempolicy(const struct oci_memory_policy *mp, const struct oci_linux *lx,
			      moat_error *err)
{
	const char *field = "linux.memoryPolicy.nodes";
	const struct oci_cpu *cpu = config_cpu(lx);
	struct mpol_plan plan;
	struct idset host;

	if (mp == NULL)
		return 0;
	if (plan_mempolicy(mp, &plan, err) < 0)
		return moat_error_ret(err);
	/* Without NUMA every task has the default policy: exactly what MPOL_DEFAULT asks. */
	if (plan.mode->mode == MPOL_DEFAULT)
		return 0;
	if (access(HOST_NUMA, F_OK) < 0)
		return moat_error_msg(
			err, EOPNOTSUPP,
			"linux.memoryPolicy: this host's kernel has no NUMA support (no %s)",
			HOST_NUMA);
	/* Relative nodes are folded onto whatever nodes the container may use. */
	if (!plan.has_nodes || (plan.flags & MPOL_F_RELATIVE_NODES))
		return 0;
	if (read_host_ids(field, "NUMA node", HOST_NODES, MAX_NODES, &host, err) < 0 ||
	    check_online(field, &plan.nodes, "NUMA node", &host, MAX_NODES, err) < 0)
		return moat_error_ret(err);
	return check_cpuset(field, &plan.nodes, "NUMA node", "linux.resources.cpu.mems",
			    cpu ? cpu->mems : NULL, MAX_NODES, err);
}

static int validate_selinux(const char *label, moat_error *err)
{
	if (label == NULL || *label == '\0')
		return 0;
#ifdef HAVE_SELINUX
	if (moat_selinux_load(err) < 0)
		return moat_error_prefix(err, "process.selinuxLabel");
	if (sym_is_selinux_enabled() <= 0)
		return moat_error_msg(err, EOPNOTSUPP,
				      "process.selinuxLabel: SELinux is not enabled on this host");
	if (sym_security_check_context(label) < 0)
		return moat_error_msg(
			err, EINVAL,
			"process.selinuxLabel: '%s' is not a valid SELinux context on "
			"this host",
			label);
	return 0;
#else
	return moat_error_msg(err, EOPNOTSUPP,
			      "process.selinuxLabel: this moat was built without SELinux support "
			      "(libselinux)");
#endif
}

bool moat_lsm_selinux_available(void)
{
#ifdef HAVE_SELINUX
	_cleanup_error_ moat_error err = MOAT_ERROR_INIT;

	/* Without the library there is no SELinux to speak of. */
	return moat_selinux_load(&err) == 0 && sym_is_selinux_enabled() > 0;
#else
	return false;
#endif
}

static bool apparmor_enabled(void)
{
	_cleanup_fclose_ FILE *f = fopen(HOST_APPARMOR, "re");
	char buf[4] = "";

	return f != NULL && fgets(buf, sizeof(buf), f) != NULL && buf[0] == 'Y';
}

bool moat_lsm_apparmor_available(void)
{
	return apparmor_enabled();
}

static int validate_apparmor(const char *profile, moat_error *err)
{
	if (profile == NULL || *profile == '\0')
		return 0;
	if (!apparmor_enabled())
		return moat_error_msg(
			err, EOPNOTSUPP,
			"process.apparmorProfile: AppArmor is not enabled on this host");
	return 0;
}

int moat_process_attrs_validate(const struct oci_config *cfg, moat_error *err)
{
	const struct oci_process *p = cfg->process;
	const struct oci_linux *lx = cfg->linux;
	unsigned long persona;
	bool deadline;
	int ioprio;

	if (p != NULL && (validate_scheduler(p->scheduler, &deadline, err) < 0 ||
			  (p->io_priority && plan_ioprio(p->io_priority, &ioprio, err) < 0) ||
			  validate_affinity(p->exec_cpu_affinity, lx, deadline, err) < 0 ||
			  validate_selinux(p->selinux_label, err) < 0 ||
			  validate_apparmor(p->apparmor_profile, err) < 0))
		return moat_error_ret(err);
	if (lx != NULL &&
	    ((lx->personality && plan_personality(lx->personality, &persona, err) < 0) ||
	     validate_mempolicy(lx->memory_policy, lx, err) < 0))
		return moat_error_ret(err);
	return 0;
}

/* ---- apply: in the container init, before the identity switch ---------------------------- */

/* True in the host's user namespace, where a refusal is not the user
 * namespace's doing. Read from the container's /proc; false if it has none. */
static bool in_initial_userns(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long inside, outside, count;

	return f != NULL && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3 &&
	       inside == 0 && outside == 0 && count == 4294967295UL;
}

/* cap is in this process's effective set. */
static bool has_cap(unsigned int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };

	return syscall(SYS_capget, &hdr, data) == 0 &&
	       (data[cap / 32].effective & (1U << (cap % 32)));
}

/* The kernel checks CAP_SYS_NICE (and CAP_SYS_ADMIN) with capable(): only
 * the initial user namespace counts. */
static bool host_privileged(unsigned int cap)
{
	return in_initial_userns() && has_cap(cap);
}

static int apply_personality(const struct oci_personality *p, moat_error *err)
{
	unsigned long persona;

	if (p == NULL)
		return 0;
	if (plan_personality(p, &persona, err) < 0)
		return moat_error_ret(err);
	if (personality(persona) < 0)
		return moat_error_set(err, errno, "linux.personality.domain %s", p->domain);
	return 0;
}

/* The kernel keeps only the nodes the task may use (its cpuset.mems); read
 * the policy back so a narrowed set is an error, not a surprise. */
static int check_mempolicy(const struct mpol_plan *plan, const char *nodes, moat_error *err)
{
	_cleanup_free_ char *kept = NULL;
	struct idset got;
	int mode;
	long r;

	if (!plan->has_nodes || (plan->flags & MPOL_USER_NODES))
		return 0;
	memset(&got, 0, sizeof(got));
	r = syscall(SYS_get_mempolicy, &mode, got.bits, (unsigned long)MAX_NODES + 1, NULL, 0UL);
	if (r < 0)
		return moat_error_set(err, errno, "linux.memoryPolicy: read the policy back");
	if (memcmp(&got, &plan->nodes, sizeof(got)) == 0)
		return 0;
	kept = idset_format(&got, MAX_NODES);
	return moat_error_msg(err, EINVAL,
			      "linux.memoryPolicy.nodes '%s': the kernel kept only '%s' (the "
			      "container's cpuset.mems)",
			      nodes, kept);
}

static int apply_mempolicy(const struct oci_memory_policy *mp, moat_error *err)
{
	struct mpol_plan plan;
	long r;

	if (mp == NULL)
		return 0;
	if (plan_mempolicy(mp, &plan, err) < 0)
		return moat_error_ret(err);
	r = syscall(SYS_set_mempolicy, plan.mode->mode | (int)plan.flags,
		    plan.has_nodes ? plan.nodes.bits : NULL,
		    plan.has_nodes ? (unsigned long)MAX_NODES + 1 : 0UL);
	if (r == 0)
		return check_mempolicy(&plan, mp->nodes, err);
	if (errno == ENOSYS && plan.mode->mode == MPOL_DEFAULT)
		return 0; /* no NUMA: every task has the default policy already */
	if (errno == ENOSYS)
		return moat_error_msg(err, ENOSYS,
				      "linux.memoryPolicy: this kernel has no NUMA support");
	return moat_error_set(err, errno, "linux.memoryPolicy (%s%s%s)", mp->mode,
			      plan.has_nodes ? " on nodes " : "", plan.has_nodes ? mp->nodes : "");
}

static int apply_ioprio(const struct oci_io_priority *io, moat_error *err)
{
	int value;

	if (io == NULL)
		return 0;
	if (plan_ioprio(io, &value, err) < 0)
		return moat_error_ret(err);
	if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) == 0)
		return 0;
	if (errno == EPERM)
		return moat_error_msg(err, EPERM,
				      "process.ioPriority.class: %s needs CAP_SYS_NICE or "
				      "CAP_SYS_ADMIN in the initial user namespace (a container's "
				      "user namespace cannot grant them)",
				      io->class);
	return moat_error_set(err, errno, "process.ioPriority (%s, priority %d)", io->class,
			      io->priority);
}

static int affinity_error(const char *field, const char *list, int errnum, moat_error *err)
{
	if (errnum == EINVAL)
		return moat_error_msg(
			err, EINVAL,
			"%s '%s': none of these CPUs is online and in the container's "
			"cpuset",
			field, list);
	if (errnum == EBUSY || errnum == EPERM)
		return moat_error_set(
			err, errnum,
			"%s '%s' (a SCHED_DEADLINE task's affinity must cover its whole "
			"root domain)",
			field, list);
	return moat_error_set(err, errnum, "%s '%s'", field, list);
}

static int apply_affinity(const char *field, const char *list, moat_error *err)
{
	_cleanup_free_ char *kept = NULL;
	struct idset want, got;

	if (list == NULL || *list == '\0')
		return 0;
	if (parse_list(field, list, "CPU", MAX_CPUS, &want, err) < 0)
		return moat_error_ret(err);
	if (syscall(SYS_sched_setaffinity, 0, sizeof(want.bits), want.bits) < 0)
		return affinity_error(field, list, errno, err);
	memset(&got, 0, sizeof(got));
	if (syscall(SYS_sched_getaffinity, 0, sizeof(got.bits), got.bits) < 0)
		return moat_error_set(err, errno, "%s: read the affinity back", field);
	if (memcmp(&want, &got, sizeof(want)) == 0)
		return 0;
	kept = idset_format(&got, MAX_CPUS);
	return moat_error_msg(err, EINVAL,
			      "%s '%s': the kernel kept only '%s' (CPUs offline or outside the "
			      "container's cpuset)",
			      field, list, kept);
}

/* Refused although the process holds CAP_SYS_NICE where it counts. */
static int sched_eperm_privileged(const struct sched_policy *pol, moat_error *err)
{
	if (pol->deadline)
		return moat_error_msg(err, EPERM,
				      "process.scheduler.policy: SCHED_DEADLINE refused: its CPU "
				      "affinity must cover every CPU of its root domain "
				      "(process.execCPUAffinity, linux.resources.cpu.cpus)");
	if (pol->prio_min > 0)
		return moat_error_msg(err, EPERM,
				      "process.scheduler.policy: %s refused: the container's "
				      "cgroup has no real-time budget (RT group scheduling is on; "
				      "set linux.resources.cpu.realtimeRuntime)",
				      pol->name);
	return moat_error_set(err, EPERM, "process.scheduler.policy %s", pol->name);
}

/* Real-time policies without CAP_SYS_NICE: RLIMIT_RTPRIO may allow them, and
 * then only the cgroup's real-time budget can be missing. */
static int sched_eperm_rt(const struct oci_scheduler *s, const struct sched_policy *pol,
			  moat_error *err)
{
	struct rlimit rl = { 0, 0 };

	getrlimit(RLIMIT_RTPRIO, &rl);
	if (rl.rlim_cur >= (rlim_t)s->priority)
		return sched_eperm_privileged(pol, err);
	return moat_error_msg(err, EPERM,
			      "process.scheduler.policy: %s at priority %d needs "
			      "CAP_SYS_NICE " INITIAL_USERNS " or RLIMIT_RTPRIO of at least %d "
			      "(it is %llu)",
			      pol->name, s->priority, s->priority, (unsigned long long)rl.rlim_cur);
}

/* sched_setattr said EPERM: say which privilege was missing. */
static int sched_eperm(const struct oci_scheduler *s, const struct sched_policy *pol,
		       moat_error *err)
{
	struct rlimit rl = { 0, 0 };
	int cur_nice;

	if (host_privileged(CAP_SYS_NICE))
		return sched_eperm_privileged(pol, err);
	if (pol->deadline)
		return moat_error_msg(err, EPERM,
				      "process.scheduler.policy: SCHED_DEADLINE needs "
				      "CAP_SYS_NICE " INITIAL_USERNS);
	if (pol->prio_min > 0)
		return sched_eperm_rt(s, pol, err);
	errno = 0;
	cur_nice = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && s->nice_present && s->nice < cur_nice) {
		getrlimit(RLIMIT_NICE, &rl);
		return moat_error_msg(err, EPERM,
				      "process.scheduler.nice: lowering it from %d to %d needs "
				      "CAP_SYS_NICE " INITIAL_USERNS " or RLIMIT_NICE of at least "
				      "%d (it is %llu)",
				      cur_nice, s->nice, 20 - s->nice,
				      (unsigned long long)rl.rlim_cur);
	}
	return moat_error_msg(err, EPERM,
			      "process.scheduler.policy: %s needs CAP_SYS_NICE " INITIAL_USERNS,
			      pol->name);
}

static int apply_scheduler(const struct oci_scheduler *s, moat_error *err)
{
	const struct sched_policy *pol;
	struct sched_attr_v0 attr;

	if (s == NULL)
		return 0;
	if (plan_scheduler(s, &attr, &pol, err) < 0)
		return moat_error_ret(err);
	if (syscall(SYS_sched_setattr, 0, &attr, 0U) == 0)
		return 0;
	if (errno == EPERM)
		return sched_eperm(s, pol, err);
	if (errno == EBUSY)
		return moat_error_msg(err, EBUSY,
				      "process.scheduler: SCHED_DEADLINE admission control refused "
				      "runtime %" PRIu64 " ns per %" PRIu64 " ns: not enough "
				      "deadline bandwidth on the CPUs the container may use",
				      attr.sched_runtime,
				      attr.sched_period ? attr.sched_period : attr.sched_deadline);
	return moat_error_set(err, errno, "process.scheduler (%s)", pol->name);
}

int moat_process_attrs_apply(const struct oci_config *cfg, moat_error *err)
{
	const struct oci_process *p = cfg->process;
	const struct oci_linux *lx = cfg->linux;

	if (lx != NULL && (apply_personality(lx->personality, err) < 0 ||
			   apply_mempolicy(lx->memory_policy, err) < 0))
		return moat_error_ret(err);
	if (p == NULL)
		return 0;
	/* The affinity first: deadline admission control counts the CPUs it allows. */
	if (apply_ioprio(p->io_priority, err) < 0 ||
	    (p->exec_cpu_affinity && apply_affinity("process.execCPUAffinity.initial",
						    p->exec_cpu_affinity->initial, err) < 0) ||
	    apply_scheduler(p->scheduler, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* ---- exec: after the identity switch, right before execve ------------------------------- */

static const char *nnp_note(void)
{
	return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1
		       ? " (no_new_privs is set: the LSM must allow this transition under it)"
		       : "";
}

static bool on_procfs(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
}

/* This thread's AppArmor exec attribute, reached through the container's
 * /proc without leaving it. Anything that is not procfs is refused: a fake
 * /proc would swallow the profile and run the process unconfined
 * (CVE-2019-16884). */
static int open_apparmor_exec(int *ret_fd, moat_error *err)
{
	static const char *const attrs[] = { "thread-self/attr/apparmor/exec",
					     "thread-self/attr/exec" };
	struct open_how how = { .flags = O_WRONLY | O_CLOEXEC | O_NOCTTY,
				.resolve =
					RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	_cleanup_close_ int procfd = open("/proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int fd = -1;
	const char *attr = NULL;

	if (procfd < 0)
		return moat_error_set(err, errno, "open the container's /proc");
	if (!on_procfs(procfd))
		return moat_error_msg(err, EXDEV, "the container's /proc is not procfs");
	/* The LSM-specific file first (Linux 5.8+), else the shared one. */
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(attrs) && fd < 0; i++) {
		attr = attrs[i];
		fd = (int)syscall(SYS_openat2, procfd, attr, &how, sizeof(how));
		if (fd < 0 && errno != ENOENT)
			break;
	}
	if (fd < 0)
		return moat_error_set(err, errno, "open /proc/%s", attr);
	if (!on_procfs(fd))
		return moat_error_msg(err, EXDEV, "/proc/%s is not on procfs", attr);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int apparmor_exec(const char *profile, moat_error *err)
{
	_cleanup_free_ char *cmd = xasprintf("exec %s", profile);
	_cleanup_close_ int fd = -1;
	size_t len = strlen(cmd);
	ssize_t n;

	if (open_apparmor_exec(&fd, err) < 0)
		return moat_error_prefix(err, "process.apparmorProfile '%s'", profile);
	/* AppArmor takes the command in one write. */
	n = write(fd, cmd, len);
	if (n < 0)
		return moat_error_set(err, errno, "process.apparmorProfile '%s'%s", profile,
				      errno == ENOENT ? " (is the profile loaded?)" : nnp_note());
	if ((size_t)n != len)
		return moat_error_msg(err, EIO, "process.apparmorProfile '%s': short write",
				      profile);
	return 0;
}

static int selinux_exec(const char *label, moat_error *err)
{
#ifdef HAVE_SELINUX
	/* Loaded by validate_selinux(), before this process was forked. */
	if (sym_setexeccon == NULL)
		return moat_error_msg(err, EINVAL,
				      "process.selinuxLabel '%s': libselinux was not loaded before "
				      "the container was entered",
				      label);
	if (sym_setexeccon(label) < 0)
		return moat_error_set(err, errno, "process.selinuxLabel '%s'%s", label, nnp_note());
	return 0;
#else
	return moat_error_msg(err, EOPNOTSUPP,
			      "process.selinuxLabel: this moat was built without SELinux support "
			      "(libselinux)");
#endif
}

int moat_process_attrs_exec(const struct oci_config *cfg, moat_error *err)
{
	const struct oci_process *p = cfg->process;

	if (p == NULL)
		return 0;
	if (p->exec_cpu_affinity &&
	    apply_affinity("process.execCPUAffinity.final", p->exec_cpu_affinity->final, err) < 0)
		return moat_error_ret(err);
	if (p->selinux_label && *p->selinux_label && selinux_exec(p->selinux_label, err) < 0)
		return moat_error_ret(err);
	if (p->apparmor_profile && *p->apparmor_profile &&
	    apparmor_exec(p->apparmor_profile, err) < 0)
		return moat_error_ret(err);
	return 0;
}
