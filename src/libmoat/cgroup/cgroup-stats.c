/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a container's resource statistics, and notice of its OOM kills. Answers "what has the
 * container used, and has the kernel killed anything in it for lack of memory?" for `moat
 * events`. Which file gives which value is the tables below: one row per file or key, v1 rows
 * before v2 rows. A controller is read on one side only: its v1 hierarchy when the host has one,
 * the unified hierarchy otherwise (hybrid hosts mix the two), and a value a v1 file gave is never
 * replaced by a v2 one. */
#include "cgroup-stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <yajl/yajl_gen.h>

#include "cgroup-internal.h"
#include "utils.h"

#define NSEC_PER_SEC 1000000000ull
#define SCALE_TICKS 0 /* key_row.scale: the value is in USER_HZ ticks (cpuacct.stat) */
#define MAX_SIZES 32  /* hugetlb page sizes one cgroup may list; x86 has two */

#define ST(m) offsetof(struct moat_cgroup_stats, m)
#define ROWS(a) (a), MOAT_ARRAY_SIZE(a)

/* ---- which file gives which value ---------------------------------------------------------- */

/* A file holding one number. */
struct value_file {
	enum cg_ctrl ctrl;
	bool v2;
	const char *file;
	size_t off; /* of the struct moat_stat it fills */
	unsigned flags;
};

#define MAX_UNLIMITED (1u << 0) /* "max" is UINT64_MAX, as runc reports a v2 memory limit */
#define MAX_ABSENT (1u << 1)    /* "max" leaves the value absent: runc omits a pids limit of max */

static const struct value_file value_files[] = {
	{ CG_CPUACCT, false, "cpuacct.usage", ST(cpu.total), 0 },
	{ CG_MEMORY, false, "memory.usage_in_bytes", ST(memory.usage.usage), 0 },
	{ CG_MEMORY, false, "memory.max_usage_in_bytes", ST(memory.usage.max), 0 },
	{ CG_MEMORY, false, "memory.limit_in_bytes", ST(memory.usage.limit), 0 },
	{ CG_MEMORY, false, "memory.failcnt", ST(memory.usage.failcnt), 0 },
	{ CG_MEMORY, false, "memory.memsw.usage_in_bytes", ST(memory.swap.usage), 0 },
	{ CG_MEMORY, false, "memory.memsw.max_usage_in_bytes", ST(memory.swap.max), 0 },
	{ CG_MEMORY, false, "memory.memsw.limit_in_bytes", ST(memory.swap.limit), 0 },
	{ CG_MEMORY, false, "memory.memsw.failcnt", ST(memory.swap.failcnt), 0 },
	{ CG_MEMORY, false, "memory.kmem.usage_in_bytes", ST(memory.kernel.usage), 0 },
	{ CG_MEMORY, false, "memory.kmem.max_usage_in_bytes", ST(memory.kernel.max), 0 },
	{ CG_MEMORY, false, "memory.kmem.limit_in_bytes", ST(memory.kernel.limit), 0 },
	{ CG_MEMORY, false, "memory.kmem.failcnt", ST(memory.kernel.failcnt), 0 },
	{ CG_MEMORY, false, "memory.kmem.tcp.usage_in_bytes", ST(memory.kernel_tcp.usage), 0 },
	{ CG_MEMORY, false, "memory.kmem.tcp.max_usage_in_bytes", ST(memory.kernel_tcp.max), 0 },
	{ CG_MEMORY, false, "memory.kmem.tcp.limit_in_bytes", ST(memory.kernel_tcp.limit), 0 },
	{ CG_MEMORY, false, "memory.kmem.tcp.failcnt", ST(memory.kernel_tcp.failcnt), 0 },
	{ CG_PIDS, false, "pids.current", ST(pids.current), 0 },
	{ CG_PIDS, false, "pids.max", ST(pids.limit), MAX_ABSENT },
	{ CG_PIDS, false, "pids.peak", ST(pids.peak), 0 },
	{ CG_MEMORY, true, "memory.current", ST(memory.usage.usage), 0 },
	{ CG_MEMORY, true, "memory.peak", ST(memory.usage.max), 0 },
	{ CG_MEMORY, true, "memory.max", ST(memory.usage.limit), MAX_UNLIMITED },
	/* swap alone here; v2_memory() adds memory to make them memory+swap */
	{ CG_MEMORY, true, "memory.swap.current", ST(memory.swap.usage), 0 },
	{ CG_MEMORY, true, "memory.swap.max", ST(memory.swap.limit), MAX_UNLIMITED },
	{ CG_PIDS, true, "pids.current", ST(pids.current), 0 },
	{ CG_PIDS, true, "pids.max", ST(pids.limit), MAX_ABSENT },
	{ CG_PIDS, true, "pids.peak", ST(pids.peak), 0 },
};

/* One key of a flat-keyed file ("key value" lines). */
struct key_row {
	const char *key;
	size_t off;     /* of the struct moat_stat it fills */
	uint64_t scale; /* multiplier to runc's unit, or SCALE_TICKS */
};

static const struct key_row cpuacct_stat_rows[] = {
	{ "user", ST(cpu.user), SCALE_TICKS },
	{ "system", ST(cpu.kernel), SCALE_TICKS },
};
static const struct key_row v1_cpu_stat_rows[] = {
	{ "nr_periods", ST(cpu.periods), 1 },
	{ "nr_throttled", ST(cpu.throttled_periods), 1 },
	{ "throttled_time", ST(cpu.throttled_time), 1 },
};
/* on v2 the usage keys are there without the cpu controller too (cgroup core) */
static const struct key_row v2_cpu_stat_rows[] = {
	{ "usage_usec", ST(cpu.total), 1000 },
	{ "user_usec", ST(cpu.user), 1000 },
	{ "system_usec", ST(cpu.kernel), 1000 },
	{ "nr_periods", ST(cpu.periods), 1 },
	{ "nr_throttled", ST(cpu.throttled_periods), 1 },
	{ "throttled_usec", ST(cpu.throttled_time), 1000 },
};
static const struct key_row oom_control_rows[] = {
	{ "oom_kill", ST(memory.oom_kill), 1 },
};
/* "max": times usage was about to pass memory.max, the nearest thing to v1's failcnt */
static const struct key_row memory_events_rows[] = {
	{ "max", ST(memory.usage.failcnt), 1 },
	{ "oom_kill", ST(memory.oom_kill), 1 },
};
/* forks refused at pids.max (v1 and v2 alike) */
static const struct key_row pids_events_rows[] = {
	{ "max", ST(pids.failcnt), 1 },
};
static const struct key_row swap_events_rows[] = {
	{ "max", ST(memory.swap.failcnt), 1 },
};

struct keyed_file {
	enum cg_ctrl ctrl;
	bool v2;
	const char *file;
	const struct key_row *rows;
	size_t n_rows;
};

static const struct keyed_file keyed_files[] = {
	{ CG_CPUACCT, false, "cpuacct.stat", ROWS(cpuacct_stat_rows) },
	{ CG_CPU, false, "cpu.stat", ROWS(v1_cpu_stat_rows) },
	{ CG_MEMORY, false, "memory.oom_control", ROWS(oom_control_rows) },
	{ CG_PIDS, false, "pids.events", ROWS(pids_events_rows) },
	{ CG_PIDS, true, "pids.events", ROWS(pids_events_rows) },
	{ CG_CPU, true, "cpu.stat", ROWS(v2_cpu_stat_rows) },
	{ CG_MEMORY, true, "memory.events", ROWS(memory_events_rows) },
	{ CG_MEMORY, true, "memory.swap.events", ROWS(swap_events_rows) },
};

/* ---- reading ---------------------------------------------------------------------------- */

/* The side of the host that holds controller c, if the container's cgroup is there. */
static struct cg_hier *side(struct moat_cgroup *cg, enum cg_ctrl c, bool v2)
{
	struct cg_hier *v1h = cg_hier_for(cg, c, false);
	struct cg_hier *h = v2 ? (v1h == NULL ? cg_unified(cg) : NULL) : v1h;

	return h != NULL && h->fd >= 0 ? h : NULL;
}

/* The file's text, or NULL (and 0) where this kernel or cgroup has no such file. */
static int read_opt(const struct cg_hier *h, const char *file, char **ret, moat_error *err)
{
	moat_error e = MOAT_ERROR_INIT;
	int r = 0;

	*ret = NULL;
	if (cg_read_at(h->fd, h->dir, file, ret, &e) < 0 && e.code != ENOENT)
		r = moat_error_msg(err, e.code, "%s", e.msg);
	moat_error_clear(&e);
	return r;
}

static int malformed(const struct cg_hier *h, const char *file, const char *what, moat_error *err)
{
	return moat_error_msg(err, EINVAL, "cgroup '%s': %s: malformed %s", h->dir, file, what);
}

/* A decimal u64 with nothing but whitespace after it. */
static bool parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end[strspn(end, " \t\n")] != '\0')
		return false;
	*ret = v;
	return true;
}

static uint64_t ticks_to_ns(uint64_t ticks)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t h = hz > 0 ? (uint64_t)hz : 100;

	return ticks / h * NSEC_PER_SEC + ticks % h * NSEC_PER_SEC / h;
}

static void set_stat(struct moat_stat *st, uint64_t value)
{
	if (st->present) /* a v1 file gave it already */
		return;
	st->value = value;
	st->present = true;
}

/* A file holding one number into *dst; flags as in value_files. */
static int read_value(const struct cg_hier *h, const char *file, unsigned flags,
		      struct moat_stat *dst, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	uint64_t v;

	if (read_opt(h, file, &text, err) < 0)
		return moat_error_ret(err);
	if (text == NULL)
		return 0;
	if (strcmp(text, "max\n") == 0 || strcmp(text, "max") == 0) {
		if (flags & MAX_UNLIMITED)
			set_stat(dst, UINT64_MAX);
		if (flags & (MAX_UNLIMITED | MAX_ABSENT))
			return 0;
	}
	if (!parse_u64(text, &v))
		return malformed(h, file, "value", err);
	set_stat(dst, v);
	return 0;
}

/* The keys of a flat-keyed file that rows name, into the struct at base. */
static int read_keys(const struct cg_hier *h, const char *file, const struct key_row *rows,
		     size_t n_rows, void *base, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;
	size_t i;

	if (read_opt(h, file, &text, err) < 0)
		return moat_error_ret(err);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t klen = strcspn(line, " ");
		uint64_t v;

		for (i = 0; i < n_rows; i++)
			if (strlen(rows[i].key) == klen && strncmp(line, rows[i].key, klen) == 0)
				break;
		if (i == n_rows)
			continue;
		if (line[klen] != ' ' || !parse_u64(line + klen + 1, &v))
			return malformed(h, file, rows[i].key, err);
		set_stat((struct moat_stat *)((char *)base + rows[i].off),
			 rows[i].scale == SCALE_TICKS ? ticks_to_ns(v) : v * rows[i].scale);
	}
	return 0;
}

/* Space-separated numbers (cpuacct.usage_percpu). */
static int parse_list(const struct cg_hier *h, const char *file, char *text, uint64_t **ret,
		      size_t *ret_n, moat_error *err)
{
	char *tok, *save = NULL;
	uint64_t *list = xmalloc(sizeof(*list));
	size_t n = 0;

	for (tok = strtok_r(text, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save)) {
		list = xrealloc(list, (n + 1) * sizeof(*list));
		if (!parse_u64(tok, &list[n++])) {
			free(list);
			return malformed(h, file, "number", err);
		}
	}
	*ret = list;
	*ret_n = n;
	return 0;
}

/* cpuacct.usage_all: a "cpu user system" header, then one line per CPU (ns). */
static int parse_usage_all(const struct cg_hier *h, char *text, struct moat_cgroup_stats *s,
			   moat_error *err)
{
	char *line, *save = NULL;
	size_t n = 0;

	s->cpu.percpu_user = xmalloc(sizeof(uint64_t));
	s->cpu.percpu_kernel = xmalloc(sizeof(uint64_t));
	line = strtok_r(text, "\n", &save); /* the header */
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		unsigned long long cpu, user, sys;

		if (sscanf(line, "%llu %llu %llu", &cpu, &user, &sys) != 3)
			return malformed(h, "cpuacct.usage_all", "line", err);
		s->cpu.percpu_user = xrealloc(s->cpu.percpu_user, (n + 1) * sizeof(uint64_t));
		s->cpu.percpu_kernel = xrealloc(s->cpu.percpu_kernel, (n + 1) * sizeof(uint64_t));
		s->cpu.percpu_user[n] = user;
		s->cpu.percpu_kernel[n++] = sys;
		s->cpu.n_percpu_user = s->cpu.n_percpu_kernel = n;
	}
	return 0;
}

static int v1_cpuacct(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err)
{
	_cleanup_free_ char *percpu = NULL, *all = NULL;

	if (read_opt(h, "cpuacct.usage_percpu", &percpu, err) < 0 ||
	    read_opt(h, "cpuacct.usage_all", &all, err) < 0)
		return moat_error_ret(err);
	if (percpu != NULL && parse_list(h, "cpuacct.usage_percpu", percpu, &s->cpu.percpu,
					 &s->cpu.n_percpu, err) < 0)
		return moat_error_ret(err);
	if (all != NULL && parse_usage_all(h, all, s, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* memory.stat: every key into raw, and the page cache as runc reports it. */
static int read_memory_stat(const struct cg_hier *h, const char *cache_key,
			    struct moat_cgroup_stats *s, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;

	if (read_opt(h, "memory.stat", &text, err) < 0)
		return moat_error_ret(err);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		uint64_t v;

		if (sp == NULL || sp == line || !parse_u64(sp + 1, &v))
			return malformed(h, "memory.stat", "line", err);
		*sp = '\0';
		s->memory.raw =
			xrealloc(s->memory.raw, (s->memory.n_raw + 1) * sizeof(*s->memory.raw));
		s->memory.raw[s->memory.n_raw].key = xstrdup(line);
		s->memory.raw[s->memory.n_raw++].value = v;
		if (strcmp(line, cache_key) == 0)
			set_stat(&s->memory.cache, v);
	}
	return 0;
}

static int v1_memory(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err)
{
	return read_memory_stat(h, "cache", s, err);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* v1's memsw counts memory+swap; v2 counts swap alone. Report v1's sum, as runc does (the
 * peak of the sum is unknown, so swap.max stays absent). */
static int v2_memory(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err)
{
	struct moat_mem_entry *m = &s->memory.usage, *sw = &s->memory.swap;

	if (sw->usage.present && m->usage.present)
		sw->usage.value = add_sat(sw->usage.value, m->usage.value);
	if (sw->limit.present && m->limit.present && sw->limit.value != UINT64_MAX)
		sw->limit.value = add_sat(sw->limit.value, m->limit.value);
	return read_memory_stat(h, "file", s, err);
}

static void blkio_add(struct moat_blkio_list *l, uint64_t major, uint64_t minor, const char *op,
		      uint64_t value)
{
	struct moat_blkio_entry *e;

	l->e = xrealloc(l->e, (l->n + 1) * sizeof(*l->e));
	e = &l->e[l->n++];
	e->major = major;
	e->minor = minor;
	snprintf(e->op, sizeof(e->op), "%s", op);
	e->value = value;
}

/* "8:0 Read 4096" lines and a final "Total 4096". */
static int read_blkio_file(const struct cg_hier *h, const char *file, struct moat_blkio_list *l,
			   moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;

	if (read_opt(h, file, &text, err) < 0)
		return moat_error_ret(err);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long major, minor, value;
		char op[16];

		if (sscanf(line, "%llu:%llu %15s %llu", &major, &minor, op, &value) == 4)
			blkio_add(l, major, minor, op, value);
		else if (strncmp(line, "Total ", 6) != 0)
			return malformed(h, file, "line", err);
	}
	return 0;
}

/* The throttle layer's counters: they see every device, whatever its I/O scheduler. */
static int v1_blkio(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err)
{
	bool rec = cg_has_file(h, "blkio.throttle.io_service_bytes_recursive");

	if (read_blkio_file(h,
			    rec ? "blkio.throttle.io_service_bytes_recursive"
				: "blkio.throttle.io_service_bytes",
			    &s->blkio.service_bytes, err) < 0 ||
	    read_blkio_file(
		    h, rec ? "blkio.throttle.io_serviced_recursive" : "blkio.throttle.io_serviced",
		    &s->blkio.serviced, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* io.stat keys onto v1's tables and operation names, as runc maps them. */
static const struct {
	const char *key;
	size_t off; /* of the moat_blkio_list */
	const char *op;
} io_keys[] = {
	{ "rbytes", ST(blkio.service_bytes), "Read" },
	{ "wbytes", ST(blkio.service_bytes), "Write" },
	{ "rios", ST(blkio.serviced), "Read" },
	{ "wios", ST(blkio.serviced), "Write" },
};

/* "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" */
static int v2_io_line(const struct cg_hier *h, char *line, struct moat_cgroup_stats *s,
		      moat_error *err)
{
	unsigned long long major, minor;
	char *tok, *save = NULL;
	size_t i;

	tok = strtok_r(line, " ", &save);
	if (tok == NULL || sscanf(tok, "%llu:%llu", &major, &minor) != 2)
		return malformed(h, "io.stat", "device", err);
	while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
		size_t klen = strcspn(tok, "=");
		uint64_t v;

		for (i = 0; i < MOAT_ARRAY_SIZE(io_keys); i++)
			if (strlen(io_keys[i].key) == klen &&
			    strncmp(tok, io_keys[i].key, klen) == 0)
				break;
		if (i == MOAT_ARRAY_SIZE(io_keys))
			continue;
		if (tok[klen] != '=' || !parse_u64(tok + klen + 1, &v))
			return malformed(h, "io.stat", io_keys[i].key, err);
		blkio_add((struct moat_blkio_list *)((char *)s + io_keys[i].off), major, minor,
			  io_keys[i].op, v);
	}
	return 0;
}

static int v2_io(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;

	if (read_opt(h, "io.stat", &text, err) < 0)
		return moat_error_ret(err);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		if (v2_io_line(h, line, s, err) < 0)
			return moat_error_ret(err);
	return 0;
}

/* One entry per page size the cgroup has files for: "hugetlb.<size><suffix>", <size> without a
 * dot (v2 also has hugetlb.<size>.rsvd.max). */
static int hugetlb_sizes(const struct cg_hier *h, const char *suffix, struct moat_cgroup_stats *s,
			 moat_error *err)
{
	int dfd = openat(h->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t slen = strlen(suffix);
	struct dirent *de;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return moat_error_set(err, errno, "read '%s'", h->dir);
	}
	s->hugetlb = xcalloc(MAX_SIZES, sizeof(*s->hugetlb));
	while ((de = readdir(d)) != NULL && s->n_hugetlb < MAX_SIZES) {
		const char *size = de->d_name + 8;
		size_t len = strlen(de->d_name), n = len - 8 - slen;

		if (strncmp(de->d_name, "hugetlb.", 8) != 0 || len <= 8 + slen ||
		    strcmp(de->d_name + len - slen, suffix) != 0 ||
		    n >= sizeof(s->hugetlb[0].size) || memchr(size, '.', n) != NULL)
			continue;
		memcpy(s->hugetlb[s->n_hugetlb++].size, size, n);
	}
	closedir(d);
	return 0;
}

#define HT(m) offsetof(struct moat_hugetlb_stats, m)

/* hugetlb.<size>.<suffix> files; v2 has no peak usage, and counts failures in .events. */
static const struct {
	bool v2;
	const char *suffix;
	size_t off;
} hugetlb_files[] = {
	{ false, "usage_in_bytes", HT(usage) },
	{ false, "max_usage_in_bytes", HT(max) },
	{ false, "failcnt", HT(failcnt) },
	{ true, "current", HT(usage) },
};
static const struct key_row hugetlb_events_rows[] = {
	{ "max", HT(failcnt), 1 },
};

static int read_hugetlb(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err)
{
	size_t i, k;

	if (hugetlb_sizes(h, h->v2 ? ".max" : ".limit_in_bytes", s, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < s->n_hugetlb; i++) {
		struct moat_hugetlb_stats *e = &s->hugetlb[i];
		_cleanup_free_ char *events = xasprintf("hugetlb.%s.events", e->size);

		for (k = 0; k < MOAT_ARRAY_SIZE(hugetlb_files); k++) {
			struct moat_stat *dst =
				(struct moat_stat *)((char *)e + hugetlb_files[k].off);
			_cleanup_free_ char *file = NULL;

			if (hugetlb_files[k].v2 != h->v2)
				continue;
			file = xasprintf("hugetlb.%s.%s", e->size, hugetlb_files[k].suffix);
			if (read_value(h, file, 0, dst, err) < 0)
				return moat_error_ret(err);
		}
		if (h->v2 && read_keys(h, events, ROWS(hugetlb_events_rows), e, err) < 0)
			return moat_error_ret(err);
	}
	return 0;
}

/* What the tables cannot say, per controller and side. */
/* clang-format off */
static const struct {
	enum cg_ctrl ctrl;
	bool v2;
	int (*read)(const struct cg_hier *h, struct moat_cgroup_stats *s, moat_error *err);
} readers[] = {
	{ CG_CPUACCT, false, v1_cpuacct },
	{ CG_MEMORY, false, v1_memory },
	{ CG_MEMORY, true, v2_memory }, /* after the value files: it sums them */
	{ CG_BLKIO, false, v1_blkio },
	{ CG_BLKIO, true, v2_io },
	{ CG_HUGETLB, false, read_hugetlb },
	{ CG_HUGETLB, true, read_hugetlb },
};
/* clang-format on */

static int read_controllers(struct moat_cgroup *cg, struct moat_cgroup_stats *s, moat_error *err)
{
	struct cg_hier *h;
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(value_files); i++)
		if ((h = side(cg, value_files[i].ctrl, value_files[i].v2)) != NULL &&
		    read_value(h, value_files[i].file, value_files[i].flags,
			       (struct moat_stat *)((char *)s + value_files[i].off), err) < 0)
			return moat_error_ret(err);
	for (i = 0; i < MOAT_ARRAY_SIZE(keyed_files); i++)
		if ((h = side(cg, keyed_files[i].ctrl, keyed_files[i].v2)) != NULL &&
		    read_keys(h, keyed_files[i].file, keyed_files[i].rows, keyed_files[i].n_rows, s,
			      err) < 0)
			return moat_error_ret(err);
	for (i = 0; i < MOAT_ARRAY_SIZE(readers); i++)
		if ((h = side(cg, readers[i].ctrl, readers[i].v2)) != NULL &&
		    readers[i].read(h, s, err) < 0)
			return moat_error_ret(err);
	return 0;
}

int moat_cgroup_stats(struct moat_cgroup *cg, struct moat_cgroup_stats **ret, moat_error *err)
{
	struct moat_cgroup_stats *s;

	if (!moat_cgroup_exists(cg))
		return moat_error_msg(err, ENOENT, "cgroup '%s' does not exist",
				      moat_cgroup_path(cg));
	s = xcalloc(1, sizeof(*s));
	if (read_controllers(cg, s, err) < 0) {
		moat_cgroup_stats_free(s);
		return moat_error_prefix(err, "statistics of cgroup '%s'", moat_cgroup_path(cg));
	}
	*ret = s;
	return 0;
}

void moat_cgroup_stats_free(struct moat_cgroup_stats *s)
{
	size_t i;

	if (s == NULL)
		return;
	free(s->cpu.percpu);
	free(s->cpu.percpu_kernel);
	free(s->cpu.percpu_user);
	for (i = 0; i < s->memory.n_raw; i++)
		free(s->memory.raw[i].key);
	free(s->memory.raw);
	free(s->blkio.service_bytes.e);
	free(s->blkio.serviced.e);
	free(s->hugetlb);
	free(s);
}

/* ---- runc's JSON ---------------------------------------------------------------------------
 * Members runc always writes (Go fields without omitempty) are written as 0 when the host has
 * no value: the objects cpu, cpu.usage, cpu.throttling, memory and its four entries, pids,
 * blkio and hugetlb; cpu.usage.kernel and .user; limit and failcnt of each memory entry;
 * failcnt of each hugetlb size. Everything else is written only when the host gave it (a zero
 * it gave included). runc's cpuset, intel_rdt and network_interfaces are not written. */

struct gen {
	yajl_gen g;
	yajl_gen_status st; /* the first failure; later calls do nothing */
};

static void g_str(struct gen *j, const char *s)
{
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_string(j->g, (const unsigned char *)s, strlen(s));
}

static void g_u64(struct gen *j, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_number(j->g, buf, (size_t)n);
}

/* key and "{" (key NULL: "{" alone) */
static void g_open(struct gen *j, const char *key)
{
	if (key != NULL)
		g_str(j, key);
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_map_open(j->g);
}

static void g_close(struct gen *j)
{
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_map_close(j->g);
}

static void g_stat(struct gen *j, const char *key, const struct moat_stat *s, bool always)
{
	if (!s->present && !always)
		return;
	g_str(j, key);
	g_u64(j, s->present ? s->value : 0);
}

static void g_list(struct gen *j, const char *key, const uint64_t *v, size_t n)
{
	size_t i;

	if (n == 0) /* runc omits an empty list */
		return;
	g_str(j, key);
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_array_open(j->g);
	for (i = 0; i < n; i++)
		g_u64(j, v[i]);
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_array_close(j->g);
}

static void gen_cpu(struct gen *j, const struct moat_cgroup_stats *s)
{
	g_open(j, "cpu");
	g_open(j, "usage");
	g_stat(j, "total", &s->cpu.total, false);
	g_list(j, "percpu", s->cpu.percpu, s->cpu.n_percpu);
	g_list(j, "percpu_kernel", s->cpu.percpu_kernel, s->cpu.n_percpu_kernel);
	g_list(j, "percpu_user", s->cpu.percpu_user, s->cpu.n_percpu_user);
	g_stat(j, "kernel", &s->cpu.kernel, true);
	g_stat(j, "user", &s->cpu.user, true);
	g_close(j);
	g_open(j, "throttling");
	g_stat(j, "periods", &s->cpu.periods, false);
	g_stat(j, "throttledPeriods", &s->cpu.throttled_periods, false);
	g_stat(j, "throttledTime", &s->cpu.throttled_time, false);
	g_close(j);
	g_close(j);
}

static void gen_mem_entry(struct gen *j, const char *key, const struct moat_mem_entry *e)
{
	g_open(j, key);
	g_stat(j, "limit", &e->limit, true);
	g_stat(j, "usage", &e->usage, false);
	g_stat(j, "max", &e->max, false);
	g_stat(j, "failcnt", &e->failcnt, true);
	g_close(j);
}

static void gen_memory(struct gen *j, const struct moat_cgroup_stats *s)
{
	size_t i;

	g_open(j, "memory");
	g_stat(j, "cache", &s->memory.cache, false);
	gen_mem_entry(j, "usage", &s->memory.usage);
	gen_mem_entry(j, "swap", &s->memory.swap);
	gen_mem_entry(j, "kernel", &s->memory.kernel);
	gen_mem_entry(j, "kernelTCP", &s->memory.kernel_tcp);
	if (s->memory.n_raw > 0) {
		g_open(j, "raw");
		for (i = 0; i < s->memory.n_raw; i++) {
			g_str(j, s->memory.raw[i].key);
			g_u64(j, s->memory.raw[i].value);
		}
		g_close(j);
	}
	g_close(j);
}

static void gen_blkio_list(struct gen *j, const char *key, const struct moat_blkio_list *l)
{
	size_t i;

	if (l->n == 0) /* runc omits an empty list */
		return;
	g_str(j, key);
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_array_open(j->g);
	for (i = 0; i < l->n; i++) {
		g_open(j, NULL);
		g_str(j, "major");
		g_u64(j, l->e[i].major);
		g_str(j, "minor");
		g_u64(j, l->e[i].minor);
		g_str(j, "op");
		g_str(j, l->e[i].op);
		g_str(j, "value");
		g_u64(j, l->e[i].value);
		g_close(j);
	}
	if (j->st == yajl_gen_status_ok)
		j->st = yajl_gen_array_close(j->g);
}

static void gen_rest(struct gen *j, const struct moat_cgroup_stats *s)
{
	size_t i;

	g_open(j, "pids");
	g_stat(j, "current", &s->pids.current, false);
	g_stat(j, "limit", &s->pids.limit, false);
	g_close(j);
	g_open(j, "blkio");
	gen_blkio_list(j, "ioServiceBytesRecursive", &s->blkio.service_bytes);
	gen_blkio_list(j, "ioServicedRecursive", &s->blkio.serviced);
	g_close(j);
	g_open(j, "hugetlb");
	for (i = 0; i < s->n_hugetlb; i++) {
		g_open(j, s->hugetlb[i].size);
		g_stat(j, "usage", &s->hugetlb[i].usage, false);
		g_stat(j, "max", &s->hugetlb[i].max, false);
		g_stat(j, "failcnt", &s->hugetlb[i].failcnt, true);
		g_close(j);
	}
	g_close(j);
}

int moat_event_json(const char *type, const char *id, const struct moat_cgroup_stats *stats,
		    char **ret_json, moat_error *err)
{
	struct gen j = { yajl_gen_alloc(NULL), yajl_gen_status_ok };
	const unsigned char *buf;
	size_t len;
	int r = 0;

	if (j.g == NULL)
		abort();
	yajl_gen_config(j.g, yajl_gen_validate_utf8, 1);
	g_open(&j, NULL);
	g_str(&j, "type");
	g_str(&j, type);
	g_str(&j, "id");
	g_str(&j, id);
	if (stats != NULL) {
		g_open(&j, "data");
		gen_cpu(&j, stats);
		gen_memory(&j, stats);
		gen_rest(&j, stats);
		g_close(&j);
	}
	g_close(&j);
	if (j.st == yajl_gen_status_ok)
		j.st = yajl_gen_get_buf(j.g, &buf, &len);
	if (j.st == yajl_gen_status_ok) {
		*ret_json = xmalloc(len + 1);
		memcpy(*ret_json, buf, len);
		(*ret_json)[len] = '\0';
	} else {
		r = moat_error_msg(
			err, EINVAL, "%s event of '%s': cannot write JSON (%s)", type, id,
			j.st == yajl_gen_invalid_string ? "not UTF-8" : "generator error");
	}
	yajl_gen_free(j.g);
	return r;
}

/* ---- OOM notification ---------------------------------------------------------------------- */

struct moat_oom_watch {
	int fd;    /* v1: eventfd; v2: inotify */
	int dirfd; /* the memory cgroup */
	char *dir;
	bool v2;
	bool counted;   /* the kernel counts OOM kills (oom_kill) */
	uint64_t kills; /* oom_kill when last checked */
};

/* oom_kill from memory.oom_control (v1) or memory.events (v2). *ret_found is false on kernels
 * that do not count kills (v1 before 4.13) and once the cgroup is gone. */
static int read_kills(const struct moat_oom_watch *w, uint64_t *ret, bool *ret_found,
		      moat_error *err)
{
	struct cg_hier h = { .dir = w->dir, .v2 = w->v2, .fd = w->dirfd };
	struct moat_cgroup_stats s = { 0 };

	if (read_keys(&h, w->v2 ? "memory.events" : "memory.oom_control", ROWS(oom_control_rows),
		      &s, err) < 0)
		return moat_error_ret(err);
	*ret = s.memory.oom_kill.value;
	*ret_found = s.memory.oom_kill.present;
	return 0;
}

/* v1: an eventfd the kernel signals on each OOM in the cgroup (and once when it is removed). */
static int watch_v1(struct moat_oom_watch *w, moat_error *err)
{
	_cleanup_close_ int ctl = openat(w->dirfd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
	char line[32];

	if (ctl < 0)
		return moat_error_set(err, errno, "open '%s/memory.oom_control'", w->dir);
	w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->fd < 0)
		return moat_error_set(err, errno, "eventfd");
	snprintf(line, sizeof(line), "%d %d", w->fd, ctl);
	return cg_write_at(w->dirfd, w->dir, "cgroup.event_control", line, err);
}

/* v2: memory.events changes on every event it counts, oom_kill among them. */
static int watch_v2(struct moat_oom_watch *w, moat_error *err)
{
	_cleanup_free_ char *path = xasprintf("/proc/self/fd/%d/memory.events", w->dirfd);

	w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->fd < 0)
		return moat_error_set(err, errno, "inotify_init1");
	if (inotify_add_watch(w->fd, path, IN_MODIFY) < 0)
		return moat_error_set(err, errno, "watch '%s/memory.events'", w->dir);
	return 0;
}

int moat_oom_watch_open(struct moat_cgroup *cg, struct moat_oom_watch **ret, moat_error *err)
{
	struct cg_hier *h = side(cg, CG_MEMORY, false);
	struct moat_oom_watch *w;
	bool v2 = false;

	if (h == NULL && (h = side(cg, CG_MEMORY, true)) != NULL) {
		v2 = true;
		if (!cg_has_file(h, "memory.events"))
			h = NULL;
	}
	if (h == NULL)
		return moat_error_msg(err, EOPNOTSUPP,
				      "cgroup '%s': no memory controller to report OOM kills",
				      moat_cgroup_path(cg));
	w = xcalloc(1, sizeof(*w));
	w->fd = -1;
	w->v2 = v2;
	w->dir = xstrdup(h->dir);
	w->dirfd = fcntl(h->fd, F_DUPFD_CLOEXEC, 3);
	if (w->dirfd < 0)
		moat_error_set(err, errno, "dup '%s'", h->dir);
	else if ((v2 ? watch_v2(w, err) : watch_v1(w, err)) == 0 &&
		 read_kills(w, &w->kills, &w->counted, err) == 0) {
		*ret = w;
		return 0;
	}
	moat_oom_watch_free(w);
	return moat_error_prefix(err, "watch for OOM kills");
}

int moat_oom_watch_fd(const struct moat_oom_watch *w)
{
	return w->fd;
}

/* Empty the fd; how many OOMs an eventfd counted (an inotify fd counts nothing). */
static uint64_t drain(struct moat_oom_watch *w)
{
	char buf[4096] __attribute__((aligned(8)));
	uint64_t total = 0;
	ssize_t n;

	while ((n = read(w->fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (!w->v2 && n == (ssize_t)sizeof(uint64_t))
			total += *(uint64_t *)(void *)buf;
	return total;
}

int moat_oom_watch_check(struct moat_oom_watch *w, uint64_t *ret_kills, moat_error *err)
{
	uint64_t signalled = drain(w), now = 0;
	bool found = false;

	if (read_kills(w, &now, &found, err) < 0)
		return moat_error_prefix(err, "check for OOM kills");
	*ret_kills = 0;
	if (found) {
		*ret_kills = now > w->kills ? now - w->kills : 0;
		w->kills = now;
	} else if (!w->counted && !w->v2 &&
		   faccessat(w->dirfd, "memory.oom_control", F_OK, 0) == 0) {
		/* no oom_kill counter: each v1 notification stands for one OOM (but the last one
		 * comes when the cgroup is removed) */
		*ret_kills = signalled;
	}
	return 0;
}

void moat_oom_watch_free(struct moat_oom_watch *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->dirfd >= 0)
		close(w->dirfd);
	free(w->dir);
	free(w);
}
