/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for cgroup statistics and OOM notification: on fake v1, v2 and hybrid cgroupfs
 * trees, which file gives which value in which unit, what the JSON calls it, and what it leaves
 * out; the OOM watch on both sides. Then, as root on a host with v1 memory and pids
 * hierarchies, a real cgroup's statistics and a real OOM kill.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "cgroup/cgroup-internal.h"
#include "cgroup-stats.h"
#include "fake-cgroup.h"
#include "oci-config.h"
#include "utils.h"

#define MAXMEM "9223372036854771712\n"
#define CG "/moat/c1"

#define assert_ok(expr, err)                                                           \
	do {                                                                           \
		if ((expr) < 0)                                                        \
			fail_msg("%s: %s", #expr, (err)->msg ? (err)->msg : "(none)"); \
	} while (0)

/* ---- a fake cgroupfs ------------------------------------------------------------------- */

static int next_id; /* the next mount's id (and device) */

static void fake_init(void)
{
	fake_cg_begin("stattest", "root");
	next_id = 30;
}

/* Write root/rel (its directories made as needed). */
static void put(const char *rel, const char *content)
{
	char path[PATH_MAX];
	char *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	for (slash = strchr(path + strlen(fake.root) + 1, '/'); slash != NULL;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*slash = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static void drop(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	assert_int_equal(unlink(path), 0);
}

/* A v1 hierarchy root/name holding the controllers ctrls ("cpu", "memory", ...). */
static void mount_v1(const char *name, const char *ctrls)
{
	char rel[64], mnt[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/cgroup.procs", name);
	put(rel, "");
	snprintf(mnt, sizeof(mnt), "%s/%s", fake.root, name);
	fake_cg_mount(next_id, next_id, mnt, "cgroup", ctrls);
	next_id++;
}

/* The cgroup2 hierarchy at root/name ("" for the fs root itself). */
static void mount_v2(const char *name, const char *ctrls)
{
	char rel[64], mnt[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s%scgroup.controllers", name, *name ? "/" : "");
	put(rel, ctrls);
	snprintf(mnt, sizeof(mnt), "%s%s%s", fake.root, *name ? "/" : "", name);
	fake_cg_mount(next_id, next_id, mnt, "cgroup2", "nsdelegate");
	next_id++;
}

/* Files of the container's cgroup, by hierarchy directory ("" for a v2 fs root). */
struct file {
	const char *name;
	const char *content;
};

static void put_cgroup(const char *hier, const struct file *files, size_t n)
{
	char rel[PATH_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s%s%s/%s", hier, *hier ? "/" : "", CG + 1,
			 files[i].name);
		put(rel, files[i].content);
	}
}

static const struct file v1_cpuacct[] = {
	{ "cpuacct.usage", "123456789\n" },
	{ "cpuacct.usage_percpu", "100000000 23456789 \n" },
	{ "cpuacct.usage_all", "cpu user system\n0 60000000 40000000\n1 20000000 3456789\n" },
	{ "cpuacct.stat", "user 7\nsystem 3\n" },
};
static const struct file v1_cpu[] = {
	{ "cpu.shares", "1024\n" },
	{ "cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_time 5000\nnr_bursts 0\n"
		      "burst_time 0\n" },
};
static const struct file v1_memory[] = {
	{ "memory.usage_in_bytes", "1048576\n" },
	{ "memory.max_usage_in_bytes", "2097152\n" },
	{ "memory.limit_in_bytes", "67108864\n" },
	{ "memory.failcnt", "3\n" },
	{ "memory.memsw.usage_in_bytes", "1052672\n" },
	{ "memory.memsw.max_usage_in_bytes", "2101248\n" },
	{ "memory.memsw.limit_in_bytes", "67108864\n" },
	{ "memory.memsw.failcnt", "0\n" },
	{ "memory.kmem.usage_in_bytes", "4096\n" },
	{ "memory.kmem.max_usage_in_bytes", "8192\n" },
	{ "memory.kmem.limit_in_bytes", MAXMEM },
	{ "memory.kmem.failcnt", "0\n" },
	{ "memory.kmem.tcp.usage_in_bytes", "0\n" },
	{ "memory.kmem.tcp.max_usage_in_bytes", "0\n" },
	{ "memory.kmem.tcp.limit_in_bytes", MAXMEM },
	{ "memory.kmem.tcp.failcnt", "0\n" },
	{ "memory.stat", "cache 4096\nrss 8192\nhierarchical_memory_limit 67108864\n"
			 "total_cache 4096\n" },
	{ "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n" },
	{ "cgroup.event_control", "" },
};
static const struct file v1_pids[] = {
	{ "pids.current", "3\n" },
	{ "pids.max", "100\n" },
};
static const struct file v1_blkio[] = {
	{ "blkio.throttle.io_service_bytes_recursive",
	  "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Async 12288\n8:0 Discard 0\n"
	  "8:0 Total 12288\nTotal 12288\n" },
	{ "blkio.throttle.io_service_bytes", "8:0 Read 1\nTotal 1\n" }, /* not the recursive one */
	{ "blkio.throttle.io_serviced_recursive",
	  "8:0 Read 1\n8:0 Write 2\n8:0 Total 3\nTotal 3\n" },
	{ "blkio.throttle.io_serviced", "8:0 Read 9\nTotal 9\n" },
};
static const struct file v1_hugetlb[] = {
	{ "hugetlb.2MB.limit_in_bytes", MAXMEM },
	{ "hugetlb.2MB.usage_in_bytes", "2097152\n" },
	{ "hugetlb.2MB.max_usage_in_bytes", "4194304\n" },
	{ "hugetlb.2MB.failcnt", "1\n" },
	{ "hugetlb.2MB.rsvd.limit_in_bytes", MAXMEM }, /* not a page size of its own */
	{ "hugetlb.1GB.limit_in_bytes", MAXMEM },
	{ "hugetlb.1GB.usage_in_bytes", "0\n" },
	{ "hugetlb.1GB.max_usage_in_bytes", "0\n" },
	{ "hugetlb.1GB.failcnt", "0\n" },
};

static const struct file v2_files[] = {
	{ "cgroup.procs", "" },
	{ "cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 4\n"
		      "nr_throttled 1\nthrottled_usec 250\nnr_bursts 0\nburst_usec 0\n" },
	{ "memory.current", "1048576\n" },
	{ "memory.max", "max\n" },
	{ "memory.peak", "3145728\n" },
	{ "memory.swap.current", "4096\n" },
	{ "memory.swap.max", "max\n" },
	{ "memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n" },
	{ "memory.swap.events", "high 0\nmax 2\nfail 0\n" },
	{ "memory.stat", "anon 8192\nfile 12288\nkernel 4096\n" },
	{ "pids.current", "2\n" },
	{ "pids.max", "max\n" },
	{ "io.stat", "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
		     "253:1 rbytes=1 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n" },
	{ "hugetlb.2MB.current", "2097152\n" },
	{ "hugetlb.2MB.max", "max\n" },
	{ "hugetlb.2MB.events", "max 3\n" },
	{ "hugetlb.2MB.rsvd.current", "0\n" },
	{ "hugetlb.2MB.rsvd.max", "max\n" },
};

static void fake_v1(void)
{
	fake_init();
	mount_v1("cpu", "cpu");
	mount_v1("cpuacct", "cpuacct");
	mount_v1("memory", "memory");
	mount_v1("pids", "pids");
	mount_v1("blkio", "blkio");
	mount_v1("hugetlb", "hugetlb");
	mount_v1("systemd", "name=systemd");
	put_cgroup("cpu", v1_cpu, MOAT_ARRAY_SIZE(v1_cpu));
	put_cgroup("cpuacct", v1_cpuacct, MOAT_ARRAY_SIZE(v1_cpuacct));
	put_cgroup("memory", v1_memory, MOAT_ARRAY_SIZE(v1_memory));
	put_cgroup("pids", v1_pids, MOAT_ARRAY_SIZE(v1_pids));
	put_cgroup("blkio", v1_blkio, MOAT_ARRAY_SIZE(v1_blkio));
	put_cgroup("hugetlb", v1_hugetlb, MOAT_ARRAY_SIZE(v1_hugetlb));
	fake_cg_done(NULL);
}

static void fake_v2(void)
{
	fake_init();
	mount_v2("", "cpuset cpu io memory hugetlb pids\n");
	put_cgroup("", v2_files, MOAT_ARRAY_SIZE(v2_files));
	fake_cg_done(NULL);
}

/* This project's machines: v1 controllers, hugetlb on the unified hierarchy only. */
static void fake_hybrid(void)
{
	fake_init();
	mount_v1("cpu", "cpu");
	mount_v1("cpuacct", "cpuacct");
	mount_v1("memory", "memory");
	mount_v1("pids", "pids");
	mount_v1("blkio", "blkio");
	mount_v2("unified", "hugetlb\n");
	put_cgroup("cpu", v1_cpu, MOAT_ARRAY_SIZE(v1_cpu));
	put_cgroup("cpuacct", v1_cpuacct, MOAT_ARRAY_SIZE(v1_cpuacct));
	put_cgroup("memory", v1_memory, MOAT_ARRAY_SIZE(v1_memory));
	put_cgroup("pids", v1_pids, MOAT_ARRAY_SIZE(v1_pids));
	put_cgroup("blkio", v1_blkio, MOAT_ARRAY_SIZE(v1_blkio));
	/* the unified cgroup has the core cpu.stat and hugetlb; v1 answers for cpu */
	put_cgroup("unified", v2_files, MOAT_ARRAY_SIZE(v2_files));
	fake_cg_done(NULL);
}

static struct moat_cgroup_stats *stats_of(const char *path)
{
	struct moat_cgroup *cg = NULL;
	struct moat_cgroup_stats *s = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(moat_cgroup_open(path, &cg, &err), &err);
	assert_ok(moat_cgroup_stats(cg, &s, &err), &err);
	moat_cgroup_free(cg);
	return s;
}

/* ---- reading the JSON back ------------------------------------------------------------- */

static yajl_val json_of(const struct moat_cgroup_stats *s)
{
	moat_error err = MOAT_ERROR_INIT;
	char *json = NULL, errbuf[256];
	yajl_val root;

	assert_ok(moat_event_json("stats", "c1", s, &json, &err), &err);
	assert_null(strchr(json, '\n'));
	root = yajl_tree_parse(json, errbuf, sizeof(errbuf));
	if (root == NULL)
		fail_msg("not JSON (%s): %s", errbuf, json);
	free(json);
	return root;
}

/* The member at the NULL-terminated path of keys, or NULL. */
static yajl_val jget(yajl_val root, ...)
{
	const char *path[16];
	size_t n = 0;
	va_list ap;

	va_start(ap, root);
	while (n < MOAT_ARRAY_SIZE(path) - 1 && (path[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	path[n] = NULL;
	return yajl_tree_get(root, path, yajl_t_any);
}

/* A number's text as the JSON has it ("absent" when there is no such member). */
static const char *jnum_text(yajl_val v)
{
	if (v == NULL)
		return "absent";
	if (!YAJL_IS_NUMBER(v))
		fail_msg("not a number");
	return YAJL_GET_NUMBER(v);
}

#define JGET(root, ...) jget(root, __VA_ARGS__, (const char *)NULL)
#define JNUM(root, ...) jnum_text(JGET(root, __VA_ARGS__))

static size_t jobject_len(yajl_val v)
{
	assert_non_null(v);
	assert_true(YAJL_IS_OBJECT(v));
	return YAJL_GET_OBJECT(v)->len;
}

static const struct moat_blkio_entry *find_blkio(const struct moat_blkio_list *l, uint64_t major,
						 const char *op)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->e[i].major == major && strcmp(l->e[i].op, op) == 0)
			return &l->e[i];
	fail_msg("no blkio entry %" PRIu64 " %s", major, op);
	return NULL;
}

static const struct moat_hugetlb_stats *find_hugetlb(const struct moat_cgroup_stats *s,
						     const char *size)
{
	size_t i;

	for (i = 0; i < s->n_hugetlb; i++)
		if (strcmp(s->hugetlb[i].size, size) == 0)
			return &s->hugetlb[i];
	fail_msg("no hugetlb entry %s", size);
	return NULL;
}

#define assert_stat(st, v)                         \
	do {                                       \
		assert_true((st).present);         \
		assert_int_equal((st).value, (v)); \
	} while (0)

static uint64_t ticks_ns(uint64_t ticks)
{
	return ticks * 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
}

/* ---- v1 ---------------------------------------------------------------------------------- */

static void check_v1_cpu(const struct moat_cgroup_stats *s)
{
	assert_stat(s->cpu.total, 123456789);
	assert_int_equal(s->cpu.n_percpu, 2);
	assert_int_equal(s->cpu.percpu[0], 100000000);
	assert_int_equal(s->cpu.percpu[1], 23456789);
	assert_int_equal(s->cpu.n_percpu_user, 2);
	assert_int_equal(s->cpu.percpu_user[1], 20000000);
	assert_int_equal(s->cpu.n_percpu_kernel, 2);
	assert_int_equal(s->cpu.percpu_kernel[0], 40000000);
	assert_stat(s->cpu.user, ticks_ns(7)); /* USER_HZ ticks */
	assert_stat(s->cpu.kernel, ticks_ns(3));
	assert_stat(s->cpu.periods, 10);
	assert_stat(s->cpu.throttled_periods, 2);
	assert_stat(s->cpu.throttled_time, 5000); /* ns already */
}

static void check_v1_memory(const struct moat_cgroup_stats *s)
{
	assert_stat(s->memory.usage.usage, 1048576);
	assert_stat(s->memory.usage.max, 2097152);
	assert_stat(s->memory.usage.limit, 67108864);
	assert_stat(s->memory.usage.failcnt, 3);
	assert_stat(s->memory.swap.usage, 1052672);
	assert_stat(s->memory.swap.max, 2101248);
	assert_stat(s->memory.kernel.usage, 4096);
	assert_stat(s->memory.kernel.limit, 9223372036854771712ull);
	assert_stat(s->memory.kernel_tcp.usage, 0);
	assert_stat(s->memory.cache, 4096);
	assert_int_equal(s->memory.n_raw, 4);
	assert_string_equal(s->memory.raw[2].key, "hierarchical_memory_limit");
	assert_int_equal(s->memory.raw[2].value, 67108864);
	assert_stat(s->memory.oom_kill, 1);
	assert_stat(s->pids.current, 3);
	assert_stat(s->pids.limit, 100);
}

static void test_v1_values(void **state)
{
	struct moat_cgroup_stats *s;

	fake_v1();
	s = stats_of(CG);
	check_v1_cpu(s);
	check_v1_memory(s);
	assert_int_equal(s->blkio.service_bytes.n, 6); /* the _recursive file, without "Total N" */
	assert_int_equal(find_blkio(&s->blkio.service_bytes, 8, "Async")->value, 12288);
	assert_int_equal(find_blkio(&s->blkio.service_bytes, 8, "Read")->minor, 0);
	assert_int_equal(s->blkio.serviced.n, 3);
	assert_int_equal(find_blkio(&s->blkio.serviced, 8, "Write")->value, 2);
	assert_int_equal(s->n_hugetlb, 2);
	assert_stat(find_hugetlb(s, "2MB")->usage, 2097152);
	assert_stat(find_hugetlb(s, "2MB")->max, 4194304);
	assert_stat(find_hugetlb(s, "2MB")->failcnt, 1);
	assert_stat(find_hugetlb(s, "1GB")->usage, 0);
	moat_cgroup_stats_free(s);
}

static void test_v1_json(void **state)
{
	struct moat_cgroup_stats *s;
	yajl_val j, list;

	fake_v1();
	s = stats_of(CG);
	j = json_of(s);
	assert_string_equal(YAJL_GET_STRING(JGET(j, "type")), "stats");
	assert_string_equal(YAJL_GET_STRING(JGET(j, "id")), "c1");
	assert_string_equal(JNUM(j, "data", "cpu", "usage", "total"), "123456789");
	assert_int_equal(YAJL_GET_ARRAY(JGET(j, "data", "cpu", "usage", "percpu"))->len, 2);
	assert_int_equal(YAJL_GET_ARRAY(JGET(j, "data", "cpu", "usage", "percpu_kernel"))->len, 2);
	assert_int_equal(YAJL_GET_ARRAY(JGET(j, "data", "cpu", "usage", "percpu_user"))->len, 2);
	assert_string_equal(JNUM(j, "data", "cpu", "throttling", "periods"), "10");
	assert_string_equal(JNUM(j, "data", "cpu", "throttling", "throttledPeriods"), "2");
	assert_string_equal(JNUM(j, "data", "cpu", "throttling", "throttledTime"), "5000");
	assert_string_equal(JNUM(j, "data", "memory", "cache"), "4096");
	assert_string_equal(JNUM(j, "data", "memory", "usage", "limit"), "67108864");
	assert_string_equal(JNUM(j, "data", "memory", "usage", "usage"), "1048576");
	assert_string_equal(JNUM(j, "data", "memory", "usage", "max"), "2097152");
	assert_string_equal(JNUM(j, "data", "memory", "usage", "failcnt"), "3");
	assert_string_equal(JNUM(j, "data", "memory", "swap", "usage"), "1052672");
	assert_string_equal(JNUM(j, "data", "memory", "kernel", "limit"), "9223372036854771712");
	assert_string_equal(JNUM(j, "data", "memory", "kernelTCP", "usage"), "0");
	assert_string_equal(JNUM(j, "data", "memory", "raw", "total_cache"), "4096");
	assert_int_equal(jobject_len(JGET(j, "data", "memory", "raw")), 4);
	assert_string_equal(JNUM(j, "data", "pids", "current"), "3");
	assert_string_equal(JNUM(j, "data", "pids", "limit"), "100");
	list = JGET(j, "data", "blkio", "ioServiceBytesRecursive");
	assert_true(YAJL_IS_ARRAY(list));
	assert_int_equal(YAJL_GET_ARRAY(list)->len, 6);
	assert_string_equal(JNUM(YAJL_GET_ARRAY(list)->values[0], "major"), "8");
	assert_string_equal(JNUM(YAJL_GET_ARRAY(list)->values[0], "minor"), "0");
	assert_string_equal(YAJL_GET_STRING(JGET(YAJL_GET_ARRAY(list)->values[0], "op")), "Read");
	assert_string_equal(JNUM(YAJL_GET_ARRAY(list)->values[0], "value"), "4096");
	assert_int_equal(YAJL_GET_ARRAY(JGET(j, "data", "blkio", "ioServicedRecursive"))->len, 3);
	assert_string_equal(JNUM(j, "data", "hugetlb", "2MB", "usage"), "2097152");
	assert_string_equal(JNUM(j, "data", "hugetlb", "2MB", "max"), "4194304");
	assert_string_equal(JNUM(j, "data", "hugetlb", "2MB", "failcnt"), "1");
	assert_int_equal(jobject_len(JGET(j, "data", "hugetlb")), 2);
	yajl_tree_free(j);
	moat_cgroup_stats_free(s);
}

/* ---- v2 ---------------------------------------------------------------------------------- */

static void test_v2_values(void **state)
{
	struct moat_cgroup_stats *s;

	fake_v2();
	s = stats_of(CG);
	assert_stat(s->cpu.total, 1500000); /* usec to ns */
	assert_stat(s->cpu.user, 1000000);
	assert_stat(s->cpu.kernel, 500000);
	assert_stat(s->cpu.periods, 4);
	assert_stat(s->cpu.throttled_periods, 1);
	assert_stat(s->cpu.throttled_time, 250000);
	assert_null(s->cpu.percpu);
	assert_stat(s->memory.usage.usage, 1048576);
	assert_stat(s->memory.usage.limit, UINT64_MAX); /* "max" */
	assert_stat(s->memory.usage.max, 3145728);
	assert_stat(s->memory.usage.failcnt, 5);           /* memory.events max */
	assert_stat(s->memory.swap.usage, 4096 + 1048576); /* memory+swap, as v1 counts it */
	assert_stat(s->memory.swap.limit, UINT64_MAX);
	assert_false(s->memory.swap.max.present);
	assert_stat(s->memory.swap.failcnt, 2);
	assert_false(s->memory.kernel.usage.present);
	assert_stat(s->memory.cache, 12288); /* memory.stat file */
	assert_int_equal(s->memory.n_raw, 3);
	assert_stat(s->memory.oom_kill, 1);
	assert_stat(s->pids.current, 2);
	assert_false(s->pids.limit.present); /* "max" */
	assert_int_equal(s->blkio.service_bytes.n, 4);
	assert_int_equal(find_blkio(&s->blkio.service_bytes, 8, "Write")->value, 8192);
	assert_int_equal(find_blkio(&s->blkio.service_bytes, 253, "Read")->minor, 1);
	assert_int_equal(s->blkio.serviced.n, 4);
	assert_int_equal(find_blkio(&s->blkio.serviced, 8, "Write")->value, 2);
	assert_int_equal(s->n_hugetlb, 1);
	assert_stat(find_hugetlb(s, "2MB")->usage, 2097152);
	assert_false(find_hugetlb(s, "2MB")->max.present); /* v2 keeps no peak */
	assert_stat(find_hugetlb(s, "2MB")->failcnt, 3);   /* .events max */
	moat_cgroup_stats_free(s);
}

/* What v2 lacks is left out, except where runc always writes a member. */
static void test_v2_json(void **state)
{
	struct moat_cgroup_stats *s;
	yajl_val j;

	fake_v2();
	s = stats_of(CG);
	j = json_of(s);
	assert_string_equal(JNUM(j, "data", "cpu", "usage", "total"), "1500000");
	assert_null(JGET(j, "data", "cpu", "usage", "percpu"));
	assert_string_equal(JNUM(j, "data", "memory", "usage", "limit"), "18446744073709551615");
	assert_string_equal(JNUM(j, "data", "memory", "swap", "usage"), "1052672");
	assert_null(JGET(j, "data", "memory", "swap", "max"));
	assert_int_equal(jobject_len(JGET(j, "data", "memory", "kernel")), 2);
	assert_string_equal(JNUM(j, "data", "memory", "kernel", "limit"), "0");
	assert_string_equal(JNUM(j, "data", "memory", "kernel", "failcnt"), "0");
	assert_string_equal(JNUM(j, "data", "memory", "raw", "anon"), "8192");
	assert_string_equal(JNUM(j, "data", "pids", "current"), "2");
	assert_null(JGET(j, "data", "pids", "limit"));
	assert_int_equal(YAJL_GET_ARRAY(JGET(j, "data", "blkio", "ioServicedRecursive"))->len, 4);
	assert_null(JGET(j, "data", "hugetlb", "2MB", "max"));
	assert_string_equal(JNUM(j, "data", "hugetlb", "2MB", "failcnt"), "3");
	yajl_tree_free(j);
	moat_cgroup_stats_free(s);
}

/* A swap limit on v2 is reported as memory+swap, like v1's memsw.limit_in_bytes. */
static void test_v2_swap_limit(void **state)
{
	struct moat_cgroup_stats *s;

	fake_v2();
	put("moat/c1/memory.max", "16777216\n");
	put("moat/c1/memory.swap.max", "1048576\n");
	s = stats_of(CG);
	assert_stat(s->memory.usage.limit, 16777216);
	assert_stat(s->memory.swap.limit, 16777216 + 1048576);
	moat_cgroup_stats_free(s);
}

/* ---- hybrid, missing and malformed files ---------------------------------------------------- */

static void test_hybrid(void **state)
{
	struct moat_cgroup_stats *s;

	fake_hybrid();
	s = stats_of(CG);
	check_v1_cpu(s); /* v1's cpu and cpuacct, not the unified cgroup's cpu.stat */
	check_v1_memory(s);
	assert_int_equal(s->blkio.service_bytes.n, 6);
	assert_int_equal(s->n_hugetlb, 1); /* from the unified hierarchy */
	assert_stat(find_hugetlb(s, "2MB")->usage, 2097152);
	assert_stat(find_hugetlb(s, "2MB")->failcnt, 3);
	moat_cgroup_stats_free(s);
}

/* Nothing readable: exactly the members runc always writes, as zeros. */
static void test_empty_cgroup_json(void **state)
{
	static const char want[] =
		"{\"type\":\"stats\",\"id\":\"c1\",\"data\":{"
		"\"cpu\":{\"usage\":{\"kernel\":0,\"user\":0},\"throttling\":{}},"
		"\"memory\":{\"usage\":{\"limit\":0,\"failcnt\":0},"
		"\"swap\":{\"limit\":0,\"failcnt\":0},"
		"\"kernel\":{\"limit\":0,\"failcnt\":0},\"kernelTCP\":{\"limit\":0,\"failcnt\":0}},"
		"\"pids\":{},\"blkio\":{},\"hugetlb\":{}}}";
	struct moat_cgroup_stats *s;
	moat_error err = MOAT_ERROR_INIT;
	char *json = NULL;

	fake_init();
	mount_v1("memory", "memory");
	put("memory/moat/c1/cgroup.procs", "");
	fake_cg_done(NULL);
	s = stats_of(CG);
	assert_ok(moat_event_json("stats", "c1", s, &json, &err), &err);
	assert_string_equal(json, want);
	free(json);
	moat_cgroup_stats_free(s);
}

static void test_oom_event_json(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	char *json = NULL;

	assert_ok(moat_event_json("oom", "c1", NULL, &json, &err), &err);
	assert_string_equal(json, "{\"type\":\"oom\",\"id\":\"c1\"}");
	free(json);
	assert_int_equal(moat_event_json("oom", "bad\xff", NULL, &json, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not UTF-8"));
	moat_error_clear(&err);
}

static void stats_fail(const char *msg_part)
{
	struct moat_cgroup *cg = NULL;
	struct moat_cgroup_stats *s = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(moat_cgroup_open(CG, &cg, &err), &err);
	assert_true(moat_cgroup_stats(cg, &s, &err) < 0);
	assert_null(s);
	if (strstr(err.msg, msg_part) == NULL)
		fail_msg("'%s' does not name '%s'", err.msg, msg_part);
	moat_error_clear(&err);
	moat_cgroup_free(cg);
}

static void test_malformed(void **state)
{
	fake_v1();
	put("memory/moat/c1/memory.usage_in_bytes", "lots\n");
	stats_fail("memory.usage_in_bytes: malformed value");
	put("memory/moat/c1/memory.usage_in_bytes", "1\n");
	put("cpu/moat/c1/cpu.stat", "nr_periods x\n");
	stats_fail("cpu.stat: malformed nr_periods");
	put("cpu/moat/c1/cpu.stat", "nr_periods 1\n");
	put("blkio/moat/c1/blkio.throttle.io_serviced_recursive", "8:0 Read\n");
	stats_fail("blkio.throttle.io_serviced_recursive: malformed line");
	drop("blkio/moat/c1/blkio.throttle.io_serviced_recursive");
	put("memory/moat/c1/memory.stat", "cache\n");
	stats_fail("memory.stat: malformed line");
}

static void test_no_cgroup(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct moat_cgroup_stats *s = NULL;
	moat_error err = MOAT_ERROR_INIT;

	fake_v2();
	assert_ok(moat_cgroup_open("/moat/gone", &cg, &err), &err);
	assert_int_equal(moat_cgroup_stats(cg, &s, &err), -ENOENT);
	assert_string_equal(err.msg, "cgroup '/moat/gone' does not exist");
	moat_error_clear(&err);
	moat_cgroup_free(cg);
}

/* ---- OOM watch ------------------------------------------------------------------------------ */

static struct moat_oom_watch *watch_of(struct moat_cgroup **cg)
{
	struct moat_oom_watch *w = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(moat_cgroup_open(CG, cg, &err), &err);
	assert_ok(moat_oom_watch_open(*cg, &w, &err), &err);
	return w;
}

static uint64_t kills_of(struct moat_oom_watch *w)
{
	moat_error err = MOAT_ERROR_INIT;
	uint64_t n = 99;

	assert_ok(moat_oom_watch_check(w, &n, &err), &err);
	return n;
}

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void test_oom_v2(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct moat_oom_watch *w;

	fake_v2();
	w = watch_of(&cg);
	assert_int_equal(kills_of(w), 0); /* the kill before the watch is not reported */
	assert_false(readable(moat_oom_watch_fd(w), 0));
	put("moat/c1/memory.events", "low 0\nhigh 0\nmax 9\noom 3\noom_kill 3\n");
	assert_true(readable(moat_oom_watch_fd(w), 5000));
	assert_int_equal(kills_of(w), 2);
	assert_false(readable(moat_oom_watch_fd(w), 0)); /* drained */
	assert_int_equal(kills_of(w), 0);
	moat_oom_watch_free(w);
	moat_cgroup_free(cg);
}

/* v1 registers an eventfd on memory.oom_control through cgroup.event_control. */
static void test_oom_v1(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct moat_oom_watch *w;
	char path[PATH_MAX], *text = NULL;
	moat_error err = MOAT_ERROR_INIT;
	int efd = -1, cfd = -1;

	fake_v1();
	w = watch_of(&cg);
	snprintf(path, sizeof(path), "%s/memory" CG "/cgroup.event_control", fake.root);
	assert_int_equal(read_file_at(AT_FDCWD, path, 4096, &text, NULL, &err), 0);
	assert_int_equal(sscanf(text, "%d %d", &efd, &cfd), 2);
	free(text);
	assert_int_equal(efd, moat_oom_watch_fd(w));
	assert_true(cfd > 2);
	/* the kernel signals an OOM before it counts the kill: no kill yet, then one */
	assert_int_equal(eventfd_write(moat_oom_watch_fd(w), 1), 0);
	assert_int_equal(kills_of(w), 0);
	assert_false(readable(moat_oom_watch_fd(w), 0));
	put("memory/moat/c1/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
	assert_int_equal(kills_of(w), 1);
	moat_oom_watch_free(w);
	moat_cgroup_free(cg);
}

/* A v1 kernel without the oom_kill counter: one OOM per notification, none when the
 * notification says the cgroup was removed. */
static void test_oom_v1_uncounted(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct moat_oom_watch *w;

	fake_v1();
	put("memory/moat/c1/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
	w = watch_of(&cg);
	assert_int_equal(kills_of(w), 0);
	assert_int_equal(eventfd_write(moat_oom_watch_fd(w), 2), 0);
	assert_int_equal(kills_of(w), 2);
	drop("memory/moat/c1/memory.oom_control");
	assert_int_equal(eventfd_write(moat_oom_watch_fd(w), 1), 0);
	assert_int_equal(kills_of(w), 0);
	moat_oom_watch_free(w);
	moat_cgroup_free(cg);
}

static void test_oom_no_memory(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct moat_oom_watch *w = NULL;
	moat_error err = MOAT_ERROR_INIT;

	fake_init();
	mount_v2("", "cpu pids\n");
	put("moat/c1/cgroup.procs", "");
	fake_cg_done(NULL);
	assert_ok(moat_cgroup_open(CG, &cg, &err), &err);
	assert_int_equal(moat_oom_watch_open(cg, &w, &err), -EOPNOTSUPP);
	assert_null(w);
	assert_string_equal(err.msg, "cgroup '/moat/c1': no memory controller to report OOM kills");
	moat_error_clear(&err);
	moat_cgroup_free(cg);
}

/* ---- the real host -------------------------------------------------------------------------- */

static struct {
	char path[64];
	pid_t child;
	int go; /* the write end of the child's pipe */
} real;

static int real_setup(void **state)
{
	snprintf(real.path, sizeof(real.path), "/moat/stats-test-%d", (int)getpid());
	real.child = -1;
	real.go = -1;
	return 0;
}

static int real_teardown(void **state)
{
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	if (real.child > 0) {
		kill(real.child, SIGKILL);
		waitpid(real.child, NULL, 0);
	}
	if (real.go >= 0)
		close(real.go);
	if (moat_cgroup_open(real.path, &cg, &err) == 0 && moat_cgroup_destroy(cg, &err) < 0)
		fprintf(stderr, "# cleanup %s: %s\n", real.path, err.msg);
	moat_cgroup_free(cg);
	moat_error_clear(&err);
	return 0;
}

static bool real_host_ok(void)
{
	return geteuid() == 0 && access("/sys/fs/cgroup/memory/cgroup.procs", F_OK) == 0 &&
	       access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) == 0;
}

/* A child in a new cgroup with res_json; it runs fn once real_go() lets it. */
static struct moat_cgroup *real_child(const char *res_json, void (*fn)(void))
{
	struct oci_resources *res = NULL;
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	char *perr = NULL, c = 0;
	int p[2];

	if (oci_resources_parse_data(res_json, strlen(res_json), "test", &res, &perr) != 0)
		fail_msg("%s: %s", res_json, perr);
	assert_ok(moat_cgroup_create(real.path, res, NULL, 0, &cg, &err), &err);
	oci_resources_free(res);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	real.child = fork();
	assert_true(real.child >= 0);
	if (real.child == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) == 1 && fn != NULL)
			fn();
		for (;;)
			pause();
	}
	close(p[0]);
	real.go = p[1];
	assert_ok(moat_cgroup_add_pid(cg, real.child, &err), &err);
	return cg;
}

static void real_go(void)
{
	assert_int_equal(write(real.go, "g", 1), 1);
	close(real.go);
	real.go = -1;
}

static void test_real_stats(void **state)
{
	struct moat_cgroup_stats *s = NULL;
	struct moat_cgroup *cg;
	moat_error err = MOAT_ERROR_INIT;

	if (!real_host_ok())
		skip();
	cg = real_child("{\"memory\": {\"limit\": 67108864}, \"pids\": {\"limit\": 32}}", NULL);
	assert_ok(moat_cgroup_stats(cg, &s, &err), &err);
	assert_stat(s->pids.current, 1);
	assert_stat(s->pids.limit, 32);
	assert_stat(s->memory.usage.limit, 67108864);
	assert_true(s->memory.usage.usage.present);
	assert_true(s->memory.n_raw > 0);
	assert_true(s->cpu.total.present);
	moat_cgroup_stats_free(s);
	moat_cgroup_free(cg);
}

/* Touch far more anonymous memory than the limit allows. */
static void hog(void)
{
	size_t size = 256u << 20, i;
	char *p = malloc(size);

	for (i = 0; p != NULL && i < size; i += 4096)
		p[i] = 1;
	_exit(0);
}

/* The real v1 eventfd (or v2 inotify) path: one kill, reported once. */
static void test_real_oom(void **state)
{
	struct moat_oom_watch *w = NULL;
	struct moat_cgroup *cg;
	moat_error err = MOAT_ERROR_INIT;
	uint64_t kills = 0, n = 0;
	int status, tries;

	if (!real_host_ok())
		skip();
	cg = real_child("{\"memory\": {\"limit\": 16777216, \"swap\": 16777216}}", hog);
	assert_ok(moat_oom_watch_open(cg, &w, &err), &err);
	real_go();
	assert_int_equal(waitpid(real.child, &status, 0), real.child);
	real.child = -1;
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	/* bounded (10 s): the count may follow the notification by a moment */
	for (tries = 0; tries < 100 && kills == 0; tries++) {
		readable(moat_oom_watch_fd(w), 100);
		assert_ok(moat_oom_watch_check(w, &n, &err), &err);
		kills += n;
	}
	assert_int_equal(kills, 1);
	assert_ok(moat_oom_watch_check(w, &n, &err), &err);
	assert_int_equal(n, 0);
	moat_oom_watch_free(w);
	moat_cgroup_free(cg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_v1_values, fake_cg_teardown),
		cmocka_unit_test_teardown(test_v1_json, fake_cg_teardown),
		cmocka_unit_test_teardown(test_v2_values, fake_cg_teardown),
		cmocka_unit_test_teardown(test_v2_json, fake_cg_teardown),
		cmocka_unit_test_teardown(test_v2_swap_limit, fake_cg_teardown),
		cmocka_unit_test_teardown(test_hybrid, fake_cg_teardown),
		cmocka_unit_test_teardown(test_empty_cgroup_json, fake_cg_teardown),
		cmocka_unit_test(test_oom_event_json),
		cmocka_unit_test_teardown(test_malformed, fake_cg_teardown),
		cmocka_unit_test_teardown(test_no_cgroup, fake_cg_teardown),
		cmocka_unit_test_teardown(test_oom_v2, fake_cg_teardown),
		cmocka_unit_test_teardown(test_oom_v1, fake_cg_teardown),
		cmocka_unit_test_teardown(test_oom_v1_uncounted, fake_cg_teardown),
		cmocka_unit_test_teardown(test_oom_no_memory, fake_cg_teardown),
		cmocka_unit_test_setup_teardown(test_real_stats, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_oom, real_setup, real_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
