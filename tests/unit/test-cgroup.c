/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the cgroup module: path resolution, layout detection, and on fake v1, v2 and
 * hybrid cgroupfs trees exactly which files get which values, in which order, and which
 * fields a host without them refuses. Then, as root on a host with a v1 pids hierarchy, a real
 * cgroup is made, filled with a child, frozen, killed and removed.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup/cgroup-internal.h"
#include "fake-cgroup.h"
#include "oci-config.h"
#include "utils.h"

#define MAXMEM "9223372036854771712\n"

/* ---- a fake cgroupfs ------------------------------------------------------------------- */

struct fake_file {
	const char *ctrl; /* the controller that makes the file; "cgroup" for core files */
	const char *name;
	const char *content;
};

static const struct fake_file v1_files[] = {
	{ "cpu", "cpu.shares", "1024\n" },
	{ "cpu", "cpu.cfs_period_us", "100000\n" },
	{ "cpu", "cpu.cfs_quota_us", "-1\n" },
	{ "cpu", "cpu.cfs_burst_us", "0\n" },
	{ "cpu", "cpu.rt_period_us", "1000000\n" },
	{ "cpu", "cpu.rt_runtime_us", "0\n" },
	{ "cpu", "cpu.idle", "0\n" },
	{ "cpuset", "cpuset.cpus", "\n" },
	{ "cpuset", "cpuset.mems", "\n" },
	{ "memory", "memory.limit_in_bytes", MAXMEM },
	{ "memory", "memory.soft_limit_in_bytes", MAXMEM },
	{ "memory", "memory.memsw.limit_in_bytes", MAXMEM },
	{ "memory", "memory.kmem.limit_in_bytes", MAXMEM },
	{ "memory", "memory.kmem.tcp.limit_in_bytes", MAXMEM },
	{ "memory", "memory.swappiness", "60\n" },
	{ "memory", "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n" },
	{ "memory", "memory.use_hierarchy", "1\n" },
	{ "memory", "memory.usage_in_bytes", "0\n" },
	{ "devices", "devices.allow", "" },
	{ "devices", "devices.deny", "" },
	{ "freezer", "freezer.state", "THAWED\n" },
	{ "blkio", "blkio.bfq.weight", "100\n" },
	{ "blkio", "blkio.bfq.weight_device", "" },
	{ "blkio", "blkio.throttle.read_bps_device", "" },
	{ "blkio", "blkio.throttle.write_bps_device", "" },
	{ "blkio", "blkio.throttle.read_iops_device", "" },
	{ "blkio", "blkio.throttle.write_iops_device", "" },
	{ "pids", "pids.max", "max\n" },
	{ "hugetlb", "hugetlb.2MB.limit_in_bytes", MAXMEM },
	{ "net_cls", "net_cls.classid", "0\n" },
	{ "net_prio", "net_prio.ifpriomap", "" },
	{ "rdma", "rdma.max", "" },
};

static const struct fake_file v2_files[] = {
	{ "cgroup", "cgroup.controllers", NULL }, /* the fake's controller list */
	{ "cgroup", "cgroup.subtree_control", "" },
	{ "cgroup", "cgroup.events", "populated 0\nfrozen 0\n" },
	{ "cgroup", "cgroup.freeze", "0\n" },
	{ "cgroup", "cgroup.kill", "" },
	{ "cgroup", "cgroup.max.depth", "max\n" },
	{ "cgroup", "cgroup.max.descendants", "max\n" },
	{ "memory", "memory.max", "max\n" },
	{ "memory", "memory.low", "0\n" },
	{ "memory", "memory.high", "max\n" },
	{ "memory", "memory.swap.max", "max\n" },
	{ "memory", "memory.current", "0\n" },
	{ "cpu", "cpu.weight", "100\n" },
	{ "cpu", "cpu.max", "max 100000\n" },
	{ "cpu", "cpu.max.burst", "0\n" },
	{ "cpu", "cpu.idle", "0\n" },
	{ "cpuset", "cpuset.cpus", "\n" },
	{ "cpuset", "cpuset.mems", "\n" },
	{ "io", "io.weight", "default 100\n" },
	{ "io", "io.max", "" },
	{ "pids", "pids.max", "max\n" },
	{ "hugetlb", "hugetlb.2MB.max", "max\n" },
	{ "hugetlb", "hugetlb.1GB.max", "max\n" },
	{ "rdma", "rdma.max", "" },
};

/* Every v1 hierarchy a kernel can have, net_cls and net_prio sharing one as they often do. */
static const char *const v1_hiers[] = {
	"cpu",   "cpuacct", "cpuset",  "memory",           "devices", "freezer",
	"blkio", "pids",    "hugetlb", "net_cls,net_prio", "rdma",    "systemd",
};
/* What this project's machines have: see shared/notes/platform-facts.md. */
static const char *const hybrid_hiers[] = {
	"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd",
};

#define ALL_V2 "cpuset cpu io memory hugetlb pids rdma misc"

/* What the tests vary in the fake (fake-cgroup.h has the rest). */
static struct {
	const char *v2_ctrls;  /* cgroup.controllers of the unified hierarchy */
	bool no_bfq;           /* a kernel without BFQ: no blkio.bfq.* files */
	bool kmem_ignored;     /* memory.kmem.limit_in_bytes takes writes and ignores them */
	bool no_kmem;          /* a kernel without memory.kmem.* files */
	bool no_rt;            /* a kernel without CONFIG_RT_GROUP_SCHED: no cpu.rt_* files */
	const char *full_file; /* made as /dev/full, so writes to it fail with ENOSPC */
	char *filters;         /* a line per v2 device filter installed: its cgroup's directory */
} F;

static bool in_list(const char *list, const char *name, const char *seps)
{
	size_t len = strlen(name);

	while (*list) {
		size_t n = strcspn(list, seps);

		if (n == len && strncmp(list, name, n) == 0)
			return true;
		list += n;
		list += strspn(list, seps);
	}
	return false;
}

/* What the kernel does in a new cgroup directory: make the controllers' files. */
static void populate(int dirfd, const char *mnt, bool v2)
{
	const char *base = strrchr(mnt, '/') + 1;
	size_t i;

	fake_cg_put(dirfd, "cgroup.procs", "");
	if (!v2)
		fake_cg_put(dirfd, "tasks", "");
	for (i = 0; v2 && i < MOAT_ARRAY_SIZE(v2_files); i++)
		if (strcmp(v2_files[i].ctrl, "cgroup") == 0 ||
		    in_list(F.v2_ctrls, v2_files[i].ctrl, " "))
			fake_cg_put(dirfd, v2_files[i].name,
				    v2_files[i].content ? v2_files[i].content : F.v2_ctrls);
	for (i = 0; !v2 && i < MOAT_ARRAY_SIZE(v1_files); i++)
		if (in_list(base, v1_files[i].ctrl, ",") &&
		    !(F.no_bfq && strstr(v1_files[i].name, "bfq")) &&
		    !(F.no_kmem && strstr(v1_files[i].name, ".kmem.")) &&
		    !(F.no_rt && strstr(v1_files[i].name, ".rt_")))
			fake_cg_put(dirfd, v1_files[i].name, v1_files[i].content);
	if (F.full_file != NULL && faccessat(dirfd, F.full_file, F_OK, 0) == 0) {
		assert_int_equal(unlinkat(dirfd, F.full_file, 0), 0);
		assert_int_equal(mknodat(dirfd, F.full_file, S_IFCHR | 0666, makedev(1, 7)), 0);
	}
}

static void hook_made_dir(const char *mnt, bool v2, int dirfd, void *data)
{
	populate(dirfd, mnt, v2);
}

/* Keep the names enabled so far in fake.enabled; show them in cgroup.subtree_control. */
static void fake_enable(const char *path, const char *file, const char *value)
{
	char dir[PATH_MAX], enabled[PATH_MAX + 16];
	char *list = NULL;
	moat_error err = MOAT_ERROR_INIT;
	int fd;

	assert_int_equal(value[0], '+');
	snprintf(dir, sizeof(dir), "%.*s", (int)(file - path - 1), path);
	snprintf(enabled, sizeof(enabled), "%s/fake.enabled", dir);
	if (read_file_at(AT_FDCWD, enabled, 4096, &list, NULL, &err) < 0)
		list = xstrdup("");
	moat_error_clear(&err);
	fd = open(enabled, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	dprintf(fd, "%s%s%s", list, *list ? " " : "", value + 1);
	close(fd);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	dprintf(fd, "%s%s%s\n", list, *list ? " " : "", value + 1);
	close(fd);
	free(list);
}

static void hook_wrote(const char *path, const char *value, void *data)
{
	const char *file = strrchr(path, '/') + 1;

	fake_cg_log_write(path, value);
	if (strcmp(file, "cgroup.freeze") == 0) { /* the kernel reports the new state */
		char events[PATH_MAX];
		int fd;

		snprintf(events, sizeof(events), "%.*s/cgroup.events", (int)(file - path - 1),
			 path);
		fd = open(events, O_WRONLY | O_TRUNC | O_CLOEXEC);
		assert_true(fd >= 0);
		dprintf(fd, "populated 0\nfrozen %c\n", value[0]);
		close(fd);
	}
	if (strcmp(file, "cgroup.subtree_control") == 0) /* the kernel lists what is enabled */
		fake_enable(path, file, value);
	if (F.kmem_ignored && strcmp(file, "memory.kmem.limit_in_bytes") == 0) {
		int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

		assert_true(fd >= 0);
		dprintf(fd, "%s", MAXMEM);
		close(fd);
	}
}

/* The v2 device filter (test-cgroup-devices.c tests what it decides): note where it went. */
static int hook_devices_prog(const char *dir, const struct bpf_insn *insns, size_t n, void *data)
{
	const char *rel = fake_cg_rel(dir);
	size_t add = strlen(rel) + 1, len = F.filters ? strlen(F.filters) : 0;

	F.filters = xrealloc(F.filters, len + add + 1);
	snprintf(F.filters + len, add + 1, "%s\n", rel);
	return 0;
}

static const struct moat_cgroup_test_hooks hooks = {
	.made_dir = hook_made_dir,
	.removing_dir = fake_cg_removing_dir,
	.wrote = hook_wrote,
	.devices_prog = hook_devices_prog,
};

static void make_hier(int id, const char *name, bool v2)
{
	char mnt[PATH_MAX];
	int fd;

	snprintf(mnt, sizeof(mnt), "%s/%s", fake.root, name);
	assert_int_equal(mkdir(mnt, 0755), 0);
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	populate(fd, mnt, v2);
	close(fd);
	if (v2)
		fake_cg_mount(id, id, mnt, "cgroup2", "nsdelegate");
	else
		fake_cg_mount(id, id, mnt, "cgroup",
			      strcmp(name, "systemd") == 0 ? "name=systemd" : name);
}

static void fake_setup(enum moat_cgroup_layout layout)
{
	const char *const *hiers = layout == MOAT_CGROUP_HYBRID ? hybrid_hiers : v1_hiers;
	size_t n = layout == MOAT_CGROUP_HYBRID ? MOAT_ARRAY_SIZE(hybrid_hiers)
						: MOAT_ARRAY_SIZE(v1_hiers),
	       i;
	char cpuset[PATH_MAX + 16];
	int fd;

	/* "fs root": a space, which mountinfo escapes */
	fake_cg_begin("cgtest", "fs root");
	if (F.v2_ctrls == NULL)
		F.v2_ctrls = layout == MOAT_CGROUP_HYBRID ? "hugetlb" : ALL_V2;
	fake_cg_mount(21, 99, "/elsewhere/memory", "cgroup", "memory"); /* not under the root */
	if (layout == MOAT_CGROUP_V2) {
		fd = open(fake.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		populate(fd, "/", true);
		close(fd);
		fake_cg_mount(30, 30, fake.root, "cgroup2", "nsdelegate");
	} else {
		fake_cg_mount(30, 27, fake.root, "tmpfs", "mode=755");
		for (i = 0; i < n; i++)
			make_hier(31 + (int)i, hiers[i], false);
		/* a bind mount of the cpu hierarchy: the same device, so the same hierarchy */
		snprintf(cpuset, sizeof(cpuset), "%s/cpu-again", fake.root);
		assert_int_equal(mkdir(cpuset, 0755), 0);
		fake_cg_mount(60, 31, cpuset, "cgroup", "cpu");
		snprintf(cpuset, sizeof(cpuset), "%s/cpuset", fake.root);
		fd = open(cpuset, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		fake_cg_put(fd, "cpuset.cpus", "0-3\n");
		fake_cg_put(fd, "cpuset.mems", "0\n");
		close(fd);
	}
	if (layout == MOAT_CGROUP_HYBRID)
		make_hier(50, "unified", true);
	fake_cg_done(&hooks);
}

static int fake_teardown(void **state)
{
	fake_cg_teardown(state);
	free(F.filters);
	memset(&F, 0, sizeof(F));
	return 0;
}

/* No "moat" directory left in any hierarchy (or the v2 root). */
static void assert_no_leftovers(void)
{
	static const char *const places[] = {
		"moat",         "cpu/moat",     "cpuset/moat",    "memory/moat",
		"devices/moat", "pids/moat",    "systemd/moat",   "unified/moat",
		"blkio/moat",   "freezer/moat", "cpu-again/moat",
	};
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(places); i++)
		if (fake_cg_exists(places[i]))
			fail_msg("'%s' left behind", places[i]);
}

static struct oci_resources *parse_res(const char *json)
{
	struct oci_resources *r = NULL;
	char *perr = NULL;

	if (oci_resources_parse_data(json, strlen(json), "test", &r, &perr) != 0)
		fail_msg("parse %s: %s", json, perr);
	return r;
}

#define assert_ok(expr, err)                                                           \
	do {                                                                           \
		if ((expr) < 0)                                                        \
			fail_msg("%s: %s", #expr, (err)->msg ? (err)->msg : "(none)"); \
	} while (0)

static struct moat_cgroup *create_ok(const char *path, const char *json)
{
	struct oci_resources *res = json ? parse_res(json) : NULL;
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(moat_cgroup_create(path, res, NULL, 0, &cg, &err), &err);
	oci_resources_free(res);
	return cg;
}

static void create_fails(const char *json, const char *msg)
{
	struct oci_resources *res = parse_res(json);
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	if (moat_cgroup_create("/moat/c1", res, NULL, 0, &cg, &err) == 0)
		fail_msg("%s: created", json);
	assert_null(cg);
	assert_string_equal(err.msg, msg);
	assert_no_leftovers();
	moat_error_clear(&err);
	oci_resources_free(res);
}

/* ---- paths --------------------------------------------------------------------------------- */

static void resolves(const char *in, const char *id, bool systemd, const char *want)
{
	moat_error err = MOAT_ERROR_INIT;
	char *got = NULL;

	assert_ok(moat_cgroup_resolve_path(in, id, systemd, &got, &err), &err);
	assert_string_equal(got, want);
	free(got);
}

static void refuses(const char *in, const char *id, bool systemd, const char *msg)
{
	moat_error err = MOAT_ERROR_INIT;
	char *got = NULL;

	if (moat_cgroup_resolve_path(in, id, systemd, &got, &err) == 0)
		fail_msg("'%s' resolved to '%s'", in, got);
	assert_string_equal(err.msg, msg);
	moat_error_clear(&err);
}

static void test_resolve_path(void **state)
{
	resolves(NULL, "abc", false, "/moat/abc");
	resolves("", "abc", false, "/moat/abc");
	resolves("pod1/abc", "x", false, "/moat/pod1/abc");
	resolves("/kubepods//burstable/pod1/", "x", false, "/kubepods/burstable/pod1");
	resolves("system.slice:moat:abc", "x", true, "/system.slice/moat-abc.scope");
	resolves("a-b-c.slice:p:n", "x", true, "/a.slice/a-b.slice/a-b-c.slice/p-n.scope");
	resolves("-.slice:p:n", "x", true, "/p-n.scope");
	resolves(":p:n", "x", true, "/system.slice/p-n.scope");
	resolves("user.slice::n", "x", true, "/user.slice/n.scope");
	resolves("machine.slice:p:sub.slice", "x", true, "/machine.slice/sub.slice");
	resolves(NULL, "abc", true, "/system.slice/moat-abc.scope");

	refuses("/a/../b", "x", false, "linux.cgroupsPath: '..' is not allowed in '/a/../b'");
	refuses("a/./b", "x", false, "linux.cgroupsPath: '.' is not allowed in '/moat/a/./b'");
	refuses("/", "x", false,
		"linux.cgroupsPath: '/' is the root cgroup, not one for a container");
	refuses("//", "x", false,
		"linux.cgroupsPath: '//' is the root cgroup, not one for a container");
	refuses("/a\nb", "x", false, "linux.cgroupsPath: control character in '/a\nb'");
	refuses(NULL, "a/b", false, "linux.cgroupsPath: container id 'a/b' cannot name a cgroup");
	refuses(NULL, "..", false, "linux.cgroupsPath: container id '..' cannot name a cgroup");
	refuses("moat:abc", "x", true,
		"linux.cgroupsPath: expected \"slice:prefix:name\" with systemd cgroups, got 'moat:abc'");
	refuses("a:b:c:d", "x", true,
		"linux.cgroupsPath: expected \"slice:prefix:name\" with systemd cgroups, got 'a:b:c:d'");
	refuses("system.slice:moat:", "x", true,
		"linux.cgroupsPath: expected \"slice:prefix:name\" with systemd cgroups, got "
		"'system.slice:moat:'");
	refuses("system:moat:abc", "x", true,
		"linux.cgroupsPath: 'system' is not a slice (name.slice)");
	refuses(".slice:p:n", "x", true, "linux.cgroupsPath: '.slice' is not a valid slice name");
	refuses("a--b.slice:p:n", "x", true,
		"linux.cgroupsPath: 'a--b.slice' is not a valid slice name");
	refuses("system.slice:p:../n", "x", true,
		"linux.cgroupsPath: '/' in 'system.slice:p:../n'");
}

/* ---- detection ----------------------------------------------------------------------------- */

static void detects(enum moat_cgroup_layout layout)
{
	enum moat_cgroup_layout got = (enum moat_cgroup_layout) - 1;
	moat_error err = MOAT_ERROR_INIT;

	fake_setup(layout);
	assert_ok(moat_cgroup_detect(&got, &err), &err);
	assert_int_equal(got, layout);
	fake_teardown(NULL);
}

static void test_detect(void **state)
{
	enum moat_cgroup_layout got;
	moat_error err = MOAT_ERROR_INIT;
	char path[128];

	detects(MOAT_CGROUP_V1);
	detects(MOAT_CGROUP_V2);
	detects(MOAT_CGROUP_HYBRID);

	fake_setup(MOAT_CGROUP_V1);
	snprintf(path, sizeof(path), "%s/nothing", fake.base);
	moat_cgroup_set_fsroot(path);
	assert_int_equal(moat_cgroup_detect(&got, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "detect cgroups: nothing mounted at or below"));
	moat_error_clear(&err);
	fake_teardown(NULL);
}

/* ---- v1 ------------------------------------------------------------------------------------ */

static const char rich_v1[] =
	"{"
	"\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
	"  {\"allow\": true, \"type\": \"c\", \"major\": 10, \"minor\": 200, \"access\": \"rw\"},"
	"  {\"allow\": true, \"type\": \"b\", \"major\": 8, \"access\": \"r\"}],"
	"\"memory\": {\"limit\": 1073741824, \"reservation\": 536870912, \"swap\": 2147483648,"
	"  \"kernelTCP\": 16777216, \"swappiness\": 10, \"disableOOMKiller\": true,"
	"  \"useHierarchy\": true},"
	"\"cpu\": {\"shares\": 512, \"quota\": 50000, \"period\": 100000, \"burst\": 1000,"
	"  \"realtimeRuntime\": 950000, \"realtimePeriod\": 1000000, \"cpus\": \"0-1\","
	"  \"mems\": \"0\", \"idle\": 0},"
	"\"pids\": {\"limit\": 0},"
	"\"blockIO\": {\"weight\": 500, \"weightDevice\": [{\"major\": 8, \"minor\": 0, \"weight\": 300}],"
	"  \"throttleReadBpsDevice\": [{\"major\": 8, \"minor\": 0, \"rate\": 1048576}],"
	"  \"throttleWriteBpsDevice\": [{\"major\": 8, \"minor\": 0, \"rate\": 2097152}],"
	"  \"throttleReadIOPSDevice\": [{\"major\": 8, \"minor\": 16, \"rate\": 100}],"
	"  \"throttleWriteIOPSDevice\": [{\"major\": 8, \"minor\": 16, \"rate\": 200}]},"
	"\"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 209715200}],"
	"\"network\": {\"classID\": 1048577, \"priorities\": [{\"name\": \"eth0\", \"priority\": 5}]},"
	"\"rdma\": {\"mlx5_1\": {\"hcaHandles\": 3, \"hcaObjects\": 10000}}"
	"}";

static const char rich_v1_writes[] =
	/* new cpuset levels get their parent's CPUs and memory nodes */
	"cpuset/moat/cpuset.cpus=0-3\n"
	"cpuset/moat/cpuset.mems=0\n"
	"cpuset/moat/c1/cpuset.cpus=0-3\n"
	"cpuset/moat/c1/cpuset.mems=0\n"
	"devices/moat/c1/devices.deny=a\n"
	"devices/moat/c1/devices.deny=a\n"
	"devices/moat/c1/devices.allow=c 10:200 rw\n"
	"devices/moat/c1/devices.allow=b 8:* r\n"
	"devices/moat/c1/devices.allow=c 1:3 rwm\n"
	"devices/moat/c1/devices.allow=c 1:5 rwm\n"
	"devices/moat/c1/devices.allow=c 1:7 rwm\n"
	"devices/moat/c1/devices.allow=c 1:8 rwm\n"
	"devices/moat/c1/devices.allow=c 1:9 rwm\n"
	"devices/moat/c1/devices.allow=c 5:0 rwm\n"
	"devices/moat/c1/devices.allow=c 5:1 rwm\n"
	"devices/moat/c1/devices.allow=c 5:2 rwm\n"
	"devices/moat/c1/devices.allow=c 136:* rwm\n"
	"memory/moat/c1/memory.limit_in_bytes=1073741824\n"
	"memory/moat/c1/memory.soft_limit_in_bytes=536870912\n"
	"memory/moat/c1/memory.memsw.limit_in_bytes=2147483648\n"
	"memory/moat/c1/memory.kmem.tcp.limit_in_bytes=16777216\n"
	"memory/moat/c1/memory.swappiness=10\n"
	"memory/moat/c1/memory.oom_control=1\n"
	"memory/moat/c1/memory.use_hierarchy=1\n"
	"cpu/moat/c1/cpu.shares=512\n"
	"cpu/moat/c1/cpu.cfs_period_us=100000\n"
	"cpu/moat/c1/cpu.cfs_quota_us=50000\n"
	"cpu/moat/c1/cpu.cfs_burst_us=1000\n"
	"cpu/moat/c1/cpu.rt_period_us=1000000\n"
	"cpu/moat/c1/cpu.rt_runtime_us=950000\n"
	"cpu/moat/c1/cpu.idle=0\n"
	"cpuset/moat/c1/cpuset.cpus=0-1\n"
	"cpuset/moat/c1/cpuset.mems=0\n"
	"pids/moat/c1/pids.max=max\n"
	"blkio/moat/c1/blkio.bfq.weight=500\n"
	"net_cls,net_prio/moat/c1/net_cls.classid=1048577\n"
	"blkio/moat/c1/blkio.bfq.weight_device=8:0 300\n"
	"blkio/moat/c1/blkio.throttle.read_bps_device=8:0 1048576\n"
	"blkio/moat/c1/blkio.throttle.write_bps_device=8:0 2097152\n"
	"blkio/moat/c1/blkio.throttle.read_iops_device=8:16 100\n"
	"blkio/moat/c1/blkio.throttle.write_iops_device=8:16 200\n"
	"hugetlb/moat/c1/hugetlb.2MB.limit_in_bytes=209715200\n"
	"net_cls,net_prio/moat/c1/net_prio.ifpriomap=eth0 5\n"
	"rdma/moat/c1/rdma.max=mlx5_1 hca_handle=3 hca_object=10000\n";

static void test_v1_resources(void **state)
{
	struct moat_cgroup *cg;
	char *text;

	fake_setup(MOAT_CGROUP_V1);
	cg = create_ok("/moat/c1", rich_v1);
	assert_string_equal(fake.log, rich_v1_writes);
	assert_string_equal(moat_cgroup_path(cg), "/moat/c1");
	assert_int_equal(moat_cgroup_layout(cg), MOAT_CGROUP_V1);
	/* every hierarchy got the directory, named ones too, bind mounts once */
	assert_true(fake_cg_exists("systemd/moat/c1"));
	assert_true(fake_cg_exists("cpuacct/moat/c1"));
	assert_false(fake_cg_exists("cpu-again/moat"));
	text = fake_cg_get("pids/moat/c1/pids.max");
	assert_string_equal(text, "max");
	free(text);
	moat_cgroup_free(cg);
}

/* Raising the limit above the present memory+swap limit must write memsw first. */
static void test_v1_memory_order(void **state)
{
	struct moat_cgroup *cg;
	struct oci_resources *up;
	moat_error err = MOAT_ERROR_INIT;

	fake_setup(MOAT_CGROUP_V1);
	cg = create_ok("/moat/c1", "{\"memory\": {\"limit\": 1000000, \"swap\": 2000000}}");
	assert_non_null(strstr(fake.log, "memory/moat/c1/memory.limit_in_bytes=1000000\n"
					 "memory/moat/c1/memory.memsw.limit_in_bytes=2000000\n"));
	fake_cg_log_reset();
	up = parse_res("{\"memory\": {\"limit\": 3000000, \"swap\": 4000000}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	/* an update without a devices list leaves the device rules alone */
	assert_string_equal(fake.log, "memory/moat/c1/memory.memsw.limit_in_bytes=4000000\n"
				      "memory/moat/c1/memory.limit_in_bytes=3000000\n");
	oci_resources_free(up);
	fake_cg_log_reset();
	up = parse_res("{\"memory\": {\"limit\": 1000000, \"swap\": 1500000}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	assert_string_equal(fake.log, "memory/moat/c1/memory.limit_in_bytes=1000000\n"
				      "memory/moat/c1/memory.memsw.limit_in_bytes=1500000\n");
	oci_resources_free(up);
	moat_cgroup_free(cg);
}

static void test_v1_check_before_update(void **state)
{
	struct moat_cgroup *cg;
	struct oci_resources *up;
	moat_error err = MOAT_ERROR_INIT;
	int fd;
	char path[PATH_MAX];

	fake_setup(MOAT_CGROUP_V1);
	cg = create_ok("/moat/c1", NULL);
	snprintf(path, sizeof(path), "%s/memory/moat/c1", fake.root);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fake_cg_put(fd, "memory.usage_in_bytes", "5000000\n");
	close(fd);
	fake_cg_log_reset();
	up = parse_res("{\"memory\": {\"limit\": 1000000, \"checkBeforeUpdate\": true}}");
	assert_int_equal(moat_cgroup_update(cg, up, NULL, 0, &err), -EBUSY);
	assert_string_equal(err.msg, "linux.resources.memory.limit: 1000000 is below the 5000000 "
				     "bytes the cgroup uses now (memory.checkBeforeUpdate)");
	assert_string_equal(fake.log, "");
	moat_error_clear(&err);
	oci_resources_free(up);
	up = parse_res("{\"memory\": {\"limit\": 6000000, \"checkBeforeUpdate\": true}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	assert_string_equal(fake.log, "memory/moat/c1/memory.limit_in_bytes=6000000\n");
	oci_resources_free(up);
	moat_cgroup_free(cg);
}

/* No resources at all still confines devices: deny everything but the spec's defaults. */
static void test_v1_default_devices(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(MOAT_CGROUP_V1);
	cg = create_ok("/moat/c1", NULL);
	assert_non_null(strstr(fake.log, "devices/moat/c1/devices.deny=a\n"
					 "devices/moat/c1/devices.allow=c 1:3 rwm\n"));
	assert_null(strstr(fake.log, "memory/"));
	moat_cgroup_free(cg);
}

/* ---- v2 ------------------------------------------------------------------------------------ */

static const char rich_v2[] =
	"{"
	"\"memory\": {\"limit\": 1073741824, \"reservation\": 536870912, \"swap\": 2147483648,"
	"  \"useHierarchy\": true, \"disableOOMKiller\": false},"
	"\"cpu\": {\"shares\": 1024, \"quota\": 50000, \"period\": 100000, \"burst\": 1000,"
	"  \"cpus\": \"0-1\", \"mems\": \"0\", \"idle\": 1},"
	"\"pids\": {\"limit\": 100},"
	"\"blockIO\": {\"weight\": 500, \"weightDevice\": [{\"major\": 8, \"minor\": 0, \"weight\": 300}],"
	"  \"throttleReadBpsDevice\": [{\"major\": 8, \"minor\": 0, \"rate\": 1048576}],"
	"  \"throttleWriteIOPSDevice\": [{\"major\": 8, \"minor\": 16, \"rate\": 300}]},"
	"\"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 209715200}],"
	"\"rdma\": {\"mlx5_1\": {\"hcaHandles\": 3}},"
	"\"unified\": {\"memory.high\": \"900000000\", \"cgroup.max.descendants\": \"10\"}"
	"}";

/* clang-format off */
#define ENABLE(dir)                                  \
	dir "cgroup.subtree_control=+cpu\n"          \
	dir "cgroup.subtree_control=+cpuset\n"       \
	dir "cgroup.subtree_control=+memory\n"       \
	dir "cgroup.subtree_control=+io\n"           \
	dir "cgroup.subtree_control=+pids\n"         \
	dir "cgroup.subtree_control=+hugetlb\n"      \
	dir "cgroup.subtree_control=+rdma\n"

static const char rich_v2_writes[] =
	ENABLE("")
	ENABLE("moat/")
	"moat/c1/memory.max=1073741824\n"
	"moat/c1/memory.low=536870912\n"
	"moat/c1/memory.swap.max=1073741824\n"     /* memory+swap 2 GiB - memory 1 GiB */
	"moat/c1/cpu.weight=39\n"                  /* 1 + (1024 - 2) * 9999 / 262142 */
	"moat/c1/cpu.max=50000 100000\n"
	"moat/c1/cpu.max.burst=1000\n"
	"moat/c1/cpu.idle=1\n"
	"moat/c1/cpuset.cpus=0-1\n"
	"moat/c1/cpuset.mems=0\n"
	"moat/c1/pids.max=100\n"
	"moat/c1/io.weight=default 4950\n"         /* 1 + (500 - 10) * 9999 / 990 */
	"moat/c1/io.weight=8:0 2930\n"
	"moat/c1/io.max=8:0 rbps=1048576\n"
	"moat/c1/io.max=8:16 wiops=300\n"
	"moat/c1/hugetlb.2MB.max=209715200\n"
	"moat/c1/rdma.max=mlx5_1 hca_handle=3\n"
	"moat/c1/memory.high=900000000\n"
	"moat/c1/cgroup.max.descendants=10\n";
/* clang-format on */

static void test_v2_resources(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(MOAT_CGROUP_V2);
	cg = create_ok("/moat/c1", rich_v2);
	assert_string_equal(fake.log, rich_v2_writes);
	/* no devices list: the new cgroup still gets deny-all and the defaults */
	assert_string_equal(F.filters, "moat/c1\n");
	assert_int_equal(moat_cgroup_layout(cg), MOAT_CGROUP_V2);
	moat_cgroup_free(cg);
}

/* cpu.max takes the quota first: a period alone keeps the quota already there. */
static void test_v2_cpu_max_update(void **state)
{
	struct moat_cgroup *cg;
	struct oci_resources *up;
	moat_error err = MOAT_ERROR_INIT;

	fake_setup(MOAT_CGROUP_V2);
	cg = create_ok("/moat/c1", "{\"cpu\": {\"quota\": 50000}}");
	assert_non_null(strstr(fake.log, "moat/c1/cpu.max=50000\n"));
	fake_cg_log_reset();
	up = parse_res("{\"cpu\": {\"period\": 200000}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	assert_string_equal(fake.log, "moat/c1/cpu.max=50000 200000\n");
	oci_resources_free(up);
	fake_cg_log_reset();
	up = parse_res("{\"cpu\": {\"quota\": -1, \"shares\": 2}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	assert_string_equal(fake.log, "moat/c1/cpu.weight=1\nmoat/c1/cpu.max=max\n");
	oci_resources_free(up);
	moat_cgroup_free(cg);
}

/* ---- hybrid -------------------------------------------------------------------------------- */

static const char rich_hybrid[] =
	"{"
	"\"memory\": {\"limit\": 67108864},"
	"\"pids\": {\"limit\": -1},"
	"\"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 209715200}],"
	"\"unified\": {\"hugetlb.1GB.max\": \"0\"}"
	"}";

static void test_hybrid_resources(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(MOAT_CGROUP_HYBRID);
	cg = create_ok("/moat/c1", rich_hybrid);
	assert_non_null(strstr(fake.log, "memory/moat/c1/memory.limit_in_bytes=67108864\n"
					 "pids/moat/c1/pids.max=max\n"
					 "unified/moat/c1/hugetlb.2MB.max=209715200\n"
					 "unified/moat/c1/hugetlb.1GB.max=0\n"));
	/* hugetlb lives on the unified side only: enabled there, from the root down */
	assert_non_null(strstr(fake.log, "unified/cgroup.subtree_control=+hugetlb\n"
					 "unified/moat/cgroup.subtree_control=+hugetlb\n"));
	assert_true(fake_cg_exists("unified/moat/c1"));
	assert_true(fake_cg_exists("systemd/moat/c1"));
	/* the v1 devices hierarchy takes the device rules: no eBPF filter besides */
	assert_null(F.filters);
	moat_cgroup_free(cg);
}

/* ---- what a host lacks is an error that names the field -------------------------------------- */

static void test_unsupported_v1(void **state)
{
	fake_setup(MOAT_CGROUP_V1);
	create_fails("{\"unified\": {\"memory.high\": \"1\"}}",
		     "linux.resources.unified: needs cgroup v2, and this host has only cgroup v1");
	create_fails("{\"devices\": [{\"allow\": true, \"access\": \"r\"}]}",
		     "linux.resources.devices[0]: a rule for all devices must have access \"rwm\" "
		     "on cgroup v1, not \"r\"");
	create_fails("{\"blockIO\": {\"leafWeight\": 500}}",
		     "linux.resources.blockIO.leafWeight: not supported on this host "
		     "(no blkio.leaf_weight)");
	create_fails("{\"cpu\": {\"period\": 100000}, \"blockIO\": {\"throttleReadBpsDevice\": "
		     "[{\"major\": -8, \"minor\": 0, \"rate\": 1}]}}",
		     "linux.resources.blockIO.throttleReadBpsDevice[0]: major and minor must not "
		     "be negative");
	fake_teardown(NULL);

	F.no_bfq = true;
	fake_setup(MOAT_CGROUP_V1);
	create_fails("{\"blockIO\": {\"weight\": 500}}",
		     "linux.resources.blockIO.weight: not supported on this host "
		     "(no blkio.weight or blkio.bfq.weight)");
	fake_teardown(NULL);

	/* issue 14 (21): without real-time group scheduling, the message says so */
	F.no_rt = true;
	fake_setup(MOAT_CGROUP_V1);
	create_fails("{\"cpu\": {\"realtimeRuntime\": 1000}}",
		     "linux.resources.cpu.realtimeRuntime: not supported on this host: the kernel "
		     "has no real-time group scheduling (no cpu.rt_runtime_us)");
	create_fails("{\"cpu\": {\"realtimePeriod\": 1000000}}",
		     "linux.resources.cpu.realtimePeriod: not supported on this host: the kernel "
		     "has no real-time group scheduling (no cpu.rt_period_us)");
}

static void test_unsupported_hybrid(void **state)
{
	F.kmem_ignored = true;
	fake_setup(MOAT_CGROUP_HYBRID);
	create_fails("{\"network\": {\"classID\": 1}}",
		     "linux.resources.network.classID: not supported on this host "
		     "(no net_cls controller)");
	create_fails("{\"network\": {\"priorities\": [{\"name\": \"eth0\", \"priority\": 1}]}}",
		     "linux.resources.network.priorities[0]: not supported on this host "
		     "(no net_prio controller)");
	create_fails(
		"{\"rdma\": {\"mlx5_1\": {\"hcaHandles\": 1}}}",
		"linux.resources.rdma.mlx5_1: not supported on this host (no rdma controller)");
	create_fails("{\"unified\": {\"memory.high\": \"1\"}}",
		     "linux.resources.unified[\"memory.high\"]: the memory controller is on "
		     "cgroup v1 on this host, not on the unified hierarchy");
	create_fails("{\"unified\": {\"rdma.max\": \"1\"}}",
		     "linux.resources.unified[\"rdma.max\"]: not supported on this host "
		     "(no rdma controller on cgroup v2)");
	create_fails("{\"hugepageLimits\": [{\"pageSize\": \"../2MB\", \"limit\": 1}]}",
		     "linux.resources.hugepageLimits[0].pageSize: '../2MB' is not a page size "
		     "such as 2MB");
	create_fails("{\"hugepageLimits\": [{\"pageSize\": \"4MB\", \"limit\": 1}]}",
		     "linux.resources.hugepageLimits[0]: not supported on this host "
		     "(no hugetlb.4MB.max)");
}

static void test_unsupported_v2(void **state)
{
	fake_setup(MOAT_CGROUP_V2);
	create_fails("{\"memory\": {\"swappiness\": 10}}",
		     "linux.resources.memory.swappiness: not supported on cgroup v2");
	create_fails("{\"memory\": {\"useHierarchy\": false}}",
		     "linux.resources.memory.useHierarchy: false is not supported on cgroup v2");
	create_fails("{\"memory\": {\"disableOOMKiller\": true}}",
		     "linux.resources.memory.disableOOMKiller: true is not supported on cgroup v2");
	create_fails("{\"cpu\": {\"realtimeRuntime\": 1000}}",
		     "linux.resources.cpu.realtimeRuntime: not supported on cgroup v2");
	create_fails("{\"network\": {\"classID\": 1}}",
		     "linux.resources.network.classID: not supported on cgroup v2");
	create_fails("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
		     " {\"allow\": true, \"type\": \"c\", \"major\": -2}]}",
		     "linux.resources.devices[1].major: -2 is not -1 (any) or 0..4294967295");
	create_fails("{\"memory\": {\"limit\": 100, \"swap\": 50}}",
		     "linux.resources.memory.swap: 50 is below memory.limit 100 "
		     "(swap counts memory+swap)");
	create_fails("{\"memory\": {\"swap\": 50}}",
		     "linux.resources.memory.swap: on cgroup v2 it needs a memory.limit to "
		     "subtract (swap counts memory+swap)");
	create_fails("{\"blockIO\": {\"weight\": 5}}",
		     "linux.resources.blockIO.weight: 5 is outside 10..1000");
	create_fails(
		"{\"blockIO\": {\"weightDevice\": [{\"major\": 8, \"minor\": 0, "
		"\"leafWeight\": 50}]}}",
		"linux.resources.blockIO.weightDevice[0].leafWeight: not supported on cgroup v2");
	create_fails("{\"unified\": {\"cgroup.procs\": \"1\"}}",
		     "linux.resources.unified[\"cgroup.procs\"]: moat manages this file itself");
	create_fails("{\"unified\": {\"../x.y\": \"1\"}}",
		     "linux.resources.unified[\"../x.y\"]: not a cgroup v2 file name");
	create_fails(
		"{\"unified\": {\"nope.max\": \"1\"}}",
		"linux.resources.unified[\"nope.max\"]: no cgroup v2 controller is called 'nope'");
	create_fails("{\"unified\": {\"memory.nonexistent\": \"1\"}}",
		     "linux.resources.unified[\"memory.nonexistent\"]: not supported on this host "
		     "(no memory.nonexistent)");
}

/* ---- memory.kernel and kernelTCP: ignored, with a note, where the host has no such limit ---- */

static struct moat_cgroup *create_warns(const char *json, const char *warn)
{
	struct oci_resources *res = parse_res(json);
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(moat_cgroup_create("/moat/c1", res, NULL, 0, &cg, &err), &err);
	if (warn == NULL)
		assert_null(err.warn);
	else
		assert_string_equal(err.warn, warn);
	moat_error_clear(&err);
	oci_resources_free(res);
	return cg;
}

static void assert_ignored(const struct moat_cgroup *cg, const char *field, const char *why)
{
	const char *got = oci_string_map_get(moat_cgroup_ignored(cg), field);

	if (why == NULL && got != NULL)
		fail_msg("%s ignored: %s", field, got);
	if (why != NULL && got == NULL)
		fail_msg("%s not ignored", field);
	if (why != NULL)
		assert_string_equal(got, why);
}

#define KMEM_IGNORED                                         \
	"the kernel has no kernel-memory limit (a write to " \
	"memory.kmem.limit_in_bytes has no effect)"

/* issue 14 (20): since Linux 6.1 memory.kmem.limit_in_bytes takes a write and ignores it. */
static void test_kernel_memory_ignored_v1(void **state)
{
	struct oci_resources *up;
	struct moat_cgroup *cg;
	moat_error err = MOAT_ERROR_INIT;

	F.kmem_ignored = true;
	fake_setup(MOAT_CGROUP_HYBRID);
	cg = create_warns("{\"memory\": {\"limit\": 67108864, \"kernel\": 1048576,"
			  " \"kernelTCP\": 1048576}}",
			  "linux.resources.memory.kernel: ignored: " KMEM_IGNORED);
	assert_ignored(cg, "linux.resources.memory.kernel", KMEM_IGNORED);
	assert_ignored(cg, "linux.resources.memory.kernelTCP", NULL);
	assert_null(oci_string_map_get(moat_cgroup_applied(cg), "linux.resources.memory.kernel"));
	assert_non_null(
		oci_string_map_get(moat_cgroup_applied(cg), "linux.resources.memory.kernelTCP"));
	assert_non_null(strstr(fake.log, "memory/moat/c1/memory.limit_in_bytes=67108864\n"));
	/* update: the same */
	up = parse_res("{\"memory\": {\"kernel\": 2097152}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	assert_string_equal(err.warn, "linux.resources.memory.kernel: ignored: " KMEM_IGNORED);
	moat_error_clear(&err);
	oci_resources_free(up);
	moat_cgroup_free(cg);
	fake_teardown(NULL);

	/* a kernel that still has the limit gets it */
	fake_setup(MOAT_CGROUP_V1);
	cg = create_warns("{\"memory\": {\"kernel\": 1048576}}", NULL);
	assert_ignored(cg, "linux.resources.memory.kernel", NULL);
	assert_null(moat_cgroup_ignored(cg));
	assert_non_null(strstr(fake.log, "memory/moat/c1/memory.kmem.limit_in_bytes=1048576\n"));
	moat_cgroup_free(cg);
	fake_teardown(NULL);

	/* one without the files */
	F.no_kmem = true;
	fake_setup(MOAT_CGROUP_V1);
	cg = create_warns(
		"{\"memory\": {\"kernel\": 1048576, \"kernelTCP\": 4096}}",
		"linux.resources.memory.kernel: ignored: the kernel has no kernel-memory "
		"limit (no memory.kmem.limit_in_bytes); linux.resources.memory.kernelTCP: "
		"ignored: the kernel has no limit of its own for TCP buffers (no "
		"memory.kmem.tcp.limit_in_bytes)");
	assert_null(strstr(fake.log, "kmem"));
	moat_cgroup_free(cg);
}

static void test_kernel_memory_ignored_v2(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(MOAT_CGROUP_V2);
	cg = create_warns(
		"{\"memory\": {\"kernel\": 1, \"kernelTCP\": 2, \"limit\": 4096}}",
		"linux.resources.memory.kernel: ignored: the kernel has no kernel-memory "
		"limit on cgroup v2; linux.resources.memory.kernelTCP: ignored: the kernel "
		"has no limit of its own for TCP buffers on cgroup v2");
	assert_ignored(cg, "linux.resources.memory.kernel",
		       "the kernel has no kernel-memory limit on cgroup v2");
	assert_ignored(cg, "linux.resources.memory.kernelTCP",
		       "the kernel has no limit of its own for TCP buffers on cgroup v2");
	assert_non_null(strstr(fake.log, "moat/c1/memory.max=4096\n"));
	moat_cgroup_free(cg);
	/* -1 asks for no limit, which holds */
	fake_cg_log_reset();
	fake_teardown(NULL);
	fake_setup(MOAT_CGROUP_V2);
	cg = create_warns("{\"memory\": {\"kernel\": -1}}", NULL);
	assert_null(moat_cgroup_ignored(cg));
	moat_cgroup_free(cg);
}

/* ---- the real-time budget's arithmetic (the kernel's to_ratio) ------------------------------ */

static void test_rt_share(void **state)
{
	static const int64_t periods[] = { 1, 1000, 100000, 1000000, 3000000 };
	static const uint64_t shares[] = {
		0, 1, 2, 1000, 996147, CG_RT_UNIT - 1, CG_RT_UNIT, 3 * CG_RT_UNIT + 5
	};
	size_t i, j;

	assert_int_equal(cg_rt_share(950000, 1000000), 996147);
	assert_int_equal(cg_rt_runtime_for(996147, 1000000), 950000);
	assert_int_equal(cg_rt_share(0, 1000000), 0);
	assert_int_equal(cg_rt_share(-1, 1000000), CG_RT_UNIT);
	assert_int_equal(cg_rt_share(1000000, 1000000), CG_RT_UNIT);
	assert_int_equal(cg_rt_share(10, 0), 0);
	assert_int_equal(cg_rt_runtime_for(CG_RT_UNIT, 1000000), 1000000);
	assert_int_equal(cg_rt_runtime_for(0, 1000000), 0);
	assert_int_equal(cg_rt_runtime_for(1, 1000000), 1);
	/* the least runtime that holds the share: it does, and one less does not */
	for (i = 0; i < MOAT_ARRAY_SIZE(periods); i++)
		for (j = 0; j < MOAT_ARRAY_SIZE(shares); j++) {
			uint64_t r = cg_rt_runtime_for(shares[j], periods[i]);

			assert_true(cg_rt_share((int64_t)r, periods[i]) >= shares[j]);
			if (r > 0)
				assert_true(cg_rt_share((int64_t)r - 1, periods[i]) < shares[j]);
		}
}

/* ---- linux.devices on v1: each listed device allowed after the config's rules ---------------- */

static void test_v1_listed_devices(void **state)
{
	static char c[] = "c", u[] = "u", pp[] = "p", foo[] = "/dev/foo", bar[] = "/dev/bar",
		    fifo[] = "/dev/fifo";
	struct oci_device d[] = {
		{ .type = c,
		  .path = foo,
		  .major = 10,
		  .major_present = true,
		  .minor = 666,
		  .minor_present = true },
		{ .type = pp, .path = fifo },
		{ .type = u,
		  .path = bar,
		  .major = 10,
		  .major_present = true,
		  .minor = 667,
		  .minor_present = true },
	};
	struct oci_device *list[] = { &d[0], &d[1], &d[2] };
	struct oci_resources *res =
		parse_res("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
			  " {\"allow\": true, \"type\": \"c\", \"major\": 10, \"minor\": 200,"
			  " \"access\": \"rw\"},"
			  " {\"allow\": false, \"type\": \"c\", \"major\": 10, \"minor\": 667,"
			  " \"access\": \"w\"}]}");
	static const char want[] = "devices/moat/c1/devices.deny=a\n"
				   "devices/moat/c1/devices.allow=c 10:200 rw\n"
				   "devices/moat/c1/devices.deny=c 10:667 w\n"
				   "devices/moat/c1/devices.allow=c 10:666 rwm\n"
				   "devices/moat/c1/devices.allow=c 10:667 rm\n"
				   "devices/moat/c1/devices.allow=c 1:3 rwm\n";
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	char applied[PATH_MAX + 64];

	fake_setup(MOAT_CGROUP_V1);
	assert_ok(moat_cgroup_create("/moat/c1", res, list, 3, &cg, &err), &err);
	assert_non_null(strstr(fake.log, want));
	snprintf(applied, sizeof(applied), "%s/devices/moat/c1/devices.allow=c 10:666 rwm",
		 fake.root);
	assert_string_equal(
		oci_string_map_get(moat_cgroup_applied(cg), "linux.devices[0] (/dev/foo)"),
		applied);
	/* an update with a devices list programs them again; one without leaves the rules */
	fake_cg_log_reset();
	assert_ok(moat_cgroup_update(cg, res, list, 3, &err), &err);
	assert_non_null(strstr(fake.log, want));
	oci_resources_free(res);
	res = parse_res("{\"pids\": {\"limit\": 5}}");
	fake_cg_log_reset();
	assert_ok(moat_cgroup_update(cg, res, list, 3, &err), &err);
	assert_string_equal(fake.log, "pids/moat/c1/pids.max=5\n");
	moat_cgroup_free(cg);
	oci_resources_free(res);
}

/* A value the kernel refuses: the message names the field, value, file and errno. */
static void test_write_rejected(void **state)
{
	struct oci_resources *res;
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	char want[PATH_MAX + 200];

	if (geteuid() != 0)
		skip();
	F.full_file = "pids.max";
	fake_setup(MOAT_CGROUP_HYBRID);
	res = parse_res("{\"pids\": {\"limit\": 10}}");
	assert_int_equal(moat_cgroup_create("/moat/c1", res, NULL, 0, &cg, &err), -ENOSPC);
	snprintf(want, sizeof(want),
		 "linux.resources.pids.limit: write '10' to '%s/pids/moat/c1/pids.max': "
		 "No space left on device",
		 fake.root);
	assert_string_equal(err.msg, want);
	assert_no_leftovers();
	moat_error_clear(&err);
	oci_resources_free(res);
}

/* A failed create removes the levels it made and only those. */
static void test_rollback_keeps_existing(void **state)
{
	char path[PATH_MAX];

	fake_setup(MOAT_CGROUP_HYBRID);
	snprintf(path, sizeof(path), "%s/memory/moat", fake.root);
	assert_int_equal(mkdir(path, 0755), 0);
	{
		struct oci_resources *res = parse_res("{\"network\": {\"classID\": 1}}");
		struct moat_cgroup *cg = NULL;
		moat_error err = MOAT_ERROR_INIT;

		assert_true(moat_cgroup_create("/moat/c1", res, NULL, 0, &cg, &err) < 0);
		moat_error_clear(&err);
		oci_resources_free(res);
	}
	assert_true(fake_cg_exists("memory/moat"));
	assert_false(fake_cg_exists("memory/moat/c1"));
	assert_false(fake_cg_exists("cpu/moat"));
	assert_false(fake_cg_exists("unified/moat"));
}

/* A leaf that exists with processes in it is someone else's: refused, and left as it was. */
static void test_refuses_occupied(void **state)
{
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	char path[PATH_MAX], want[PATH_MAX + 200];
	int fd;

	fake_setup(MOAT_CGROUP_HYBRID);
	snprintf(path, sizeof(path), "%s/pids/moat", fake.root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/pids/moat/c1", fake.root);
	assert_int_equal(mkdir(path, 0755), 0);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fake_cg_put(fd, "cgroup.procs", "5000007\n");
	close(fd);
	assert_int_equal(moat_cgroup_create("/moat/c1", NULL, NULL, 0, &cg, &err), -EBUSY);
	snprintf(want, sizeof(want),
		 "linux.cgroupsPath: cgroup '/moat/c1' exists already with processes in it "
		 "(5000007 in '%s/pids/moat/c1'); moat does not share a cgroup with processes it "
		 "did not start",
		 fake.root);
	assert_string_equal(err.msg, want);
	moat_error_clear(&err);
	assert_true(fake_cg_exists("pids/moat/c1/cgroup.procs"));
	assert_false(fake_cg_exists("memory/moat"));
	/* empty, it is reused */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fake_cg_put(fd, "cgroup.procs", "");
	close(fd);
	cg = create_ok("/moat/c1", NULL);
	moat_cgroup_free(cg);
}

/* ---- processes, freezing, destroying on the fake tree -------------------------------------- */

/* How many of cg's hierarchies hold an open cgroup. */
static size_t open_hierarchies(const struct moat_cgroup *cg)
{
	size_t i, n = 0;

	for (i = 0; i < cg->n; i++)
		n += cg->h[i].fd >= 0;
	return n;
}

static void test_fake_lifecycle(enum moat_cgroup_layout layout, const char *freeze_file,
				const char *frozen_value)
{
	struct moat_cgroup *cg, *opened = NULL;
	moat_error err = MOAT_ERROR_INIT;
	pid_t *pids = NULL;
	size_t n = 0;
	bool frozen = true;
	char path[PATH_MAX];
	int fd, fd0;

	fake_setup(layout);
	cg = create_ok("/moat/c1", NULL);
	/* pids above any pid_max: nothing real is ever named */
	snprintf(path, sizeof(path), "%s/%s/moat/c1", fake.root,
		 layout == MOAT_CGROUP_V2 ? "." : "pids");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fake_cg_put(fd, "cgroup.procs", "5000003\n5000001\n");
	assert_int_equal(mkdirat(fd, "sub", 0755), 0);
	close(fd);
	fd = openat(fd0 = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "sub",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd0);
	fake_cg_put(fd, "cgroup.procs", "5000002\n5000001\n");
	close(fd);
	assert_ok(moat_cgroup_pids(cg, &pids, &n, &err), &err);
	assert_int_equal(n, 3);
	assert_int_equal(pids[0], 5000001);
	assert_int_equal(pids[1], 5000002);
	assert_int_equal(pids[2], 5000003);
	free(pids);

	assert_ok(moat_cgroup_is_frozen(cg, &frozen, &err), &err);
	assert_false(frozen);
	fake_cg_log_reset();
	assert_ok(moat_cgroup_freeze(cg, true, &err), &err);
	snprintf(path, sizeof(path), "%s=%s\n", freeze_file, frozen_value);
	assert_string_equal(fake.log, path);
	assert_ok(moat_cgroup_is_frozen(cg, &frozen, &err), &err);
	assert_true(frozen);
	/* a status check opens the freezer's hierarchy, and only that one */
	assert_ok(moat_cgroup_open_freezer("/moat/c1", &opened, &err), &err);
	assert_int_equal(open_hierarchies(opened), 1);
	assert_ok(moat_cgroup_is_frozen(opened, &frozen, &err), &err);
	assert_true(frozen);
	moat_cgroup_free(opened);
	opened = NULL;
	assert_ok(moat_cgroup_freeze(cg, false, &err), &err);
	assert_ok(moat_cgroup_is_frozen(cg, &frozen, &err), &err);
	assert_false(frozen);

	/* empty it (a fake has no kernel to kill anything), then destroy through open */
	snprintf(path, sizeof(path), "%s/%s/moat/c1", fake.root,
		 layout == MOAT_CGROUP_V2 ? "." : "pids");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fake_cg_put(fd, "cgroup.procs", "");
	close(fd);
	fd = openat(fd0 = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "sub",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd0);
	fake_cg_put(fd, "cgroup.procs", "");
	close(fd);
	moat_cgroup_free(cg);
	assert_ok(moat_cgroup_open("/moat/c1", &opened, &err), &err);
	assert_true(moat_cgroup_exists(opened));
	assert_ok(moat_cgroup_destroy(opened, &err), &err);
	assert_false(moat_cgroup_exists(opened));
	assert_false(fake_cg_exists(layout == MOAT_CGROUP_V2 ? "moat/c1" : "pids/moat/c1"));
	assert_false(fake_cg_exists(layout == MOAT_CGROUP_V2 ? "moat/c1" : "systemd/moat/c1"));
	assert_true(fake_cg_exists(layout == MOAT_CGROUP_V2 ? "moat" : "pids/moat"));
	moat_cgroup_free(opened);

	/* absent: opens, has no processes, destroys as a no-op */
	assert_ok(moat_cgroup_open("/moat/c1", &opened, &err), &err);
	assert_false(moat_cgroup_exists(opened));
	assert_ok(moat_cgroup_pids(opened, &pids, &n, &err), &err);
	assert_int_equal(n, 0);
	free(pids);
	assert_ok(moat_cgroup_kill_all(opened, SIGKILL, &err), &err);
	assert_ok(moat_cgroup_destroy(opened, &err), &err);
	assert_int_equal(moat_cgroup_freeze(opened, true, &err), -ENOENT);
	assert_string_equal(err.msg, "cgroup '/moat/c1' does not exist");
	moat_error_clear(&err);
	moat_cgroup_free(opened);
	assert_ok(moat_cgroup_open_freezer("/moat/c1", &opened, &err), &err);
	assert_int_equal(open_hierarchies(opened), 0);
	assert_int_equal(moat_cgroup_is_frozen(opened, &frozen, &err), -ENOENT);
	moat_error_clear(&err);
	moat_cgroup_free(opened);
}

static void test_fake_lifecycle_v1(void **state)
{
	test_fake_lifecycle(MOAT_CGROUP_V1, "freezer/moat/c1/freezer.state", "FROZEN");
}

static void test_fake_lifecycle_v2(void **state)
{
	test_fake_lifecycle(MOAT_CGROUP_V2, "moat/c1/cgroup.freeze", "1");
}

static void test_fake_lifecycle_hybrid(void **state)
{
	test_fake_lifecycle(MOAT_CGROUP_HYBRID, "freezer/moat/c1/freezer.state", "FROZEN");
}

/* create's first child joins the v1 cgroups by moving itself (0 into `tasks`, no
 * cgroup.procs: no grace period) through the tasks files the parent opened, and the init is
 * added to the v2 one only; clone3 gets the v2 cgroup's directory. */
static void test_join_v1_then_v2(void **state)
{
	struct moat_cgroup *cg;
	moat_error err = MOAT_ERROR_INIT;

	fake_setup(MOAT_CGROUP_HYBRID);
	cg = create_ok("/moat/c1", NULL);
	assert_true(moat_cgroup_v2_fd(cg) >= 0);
	fake_cg_log_reset();
	/* nothing opened: nothing to join */
	assert_ok(moat_cgroup_join_v1(cg, &err), &err);
	assert_string_equal(fake.log, "");
	assert_ok(moat_cgroup_open_tasks(cg, &err), &err);
	assert_string_equal(fake.log, "");
	assert_ok(moat_cgroup_join_v1(cg, &err), &err);
	assert_string_equal(fake.log, "cpu/moat/c1/tasks=0\n"
				      "cpuacct/moat/c1/tasks=0\n"
				      "cpuset/moat/c1/tasks=0\n"
				      "memory/moat/c1/tasks=0\n"
				      "devices/moat/c1/tasks=0\n"
				      "freezer/moat/c1/tasks=0\n"
				      "blkio/moat/c1/tasks=0\n"
				      "pids/moat/c1/tasks=0\n"
				      "systemd/moat/c1/tasks=0\n");
	fake_cg_log_reset();
	assert_ok(moat_cgroup_add_pid_v2(cg, 5000009, &err), &err);
	assert_string_equal(fake.log, "unified/moat/c1/cgroup.procs=5000009\n");
	/* the parent closes its copies once the child has them */
	moat_cgroup_close_tasks(cg);
	fake_cg_log_reset();
	assert_ok(moat_cgroup_join_v1(cg, &err), &err);
	assert_string_equal(fake.log, "");
	/* the child closes every fd the handle holds, and frees nothing */
	assert_ok(moat_cgroup_open_tasks(cg, &err), &err);
	moat_cgroup_close_fds(cg);
	assert_int_equal(moat_cgroup_v2_fd(cg), -1);
	assert_ok(moat_cgroup_join_v1(cg, &err), &err);
	assert_string_equal(fake.log, "");
	assert_string_equal(moat_cgroup_path(cg), "/moat/c1");
	moat_cgroup_free(cg);
	fake_cg_teardown(state);
	memset(&F, 0, sizeof(F));

	/* all v1: nothing to clone into, nothing for the parent to add */
	fake_setup(MOAT_CGROUP_V1);
	cg = create_ok("/moat/c1", NULL);
	assert_int_equal(moat_cgroup_v2_fd(cg), -1);
	fake_cg_log_reset();
	assert_ok(moat_cgroup_add_pid_v2(cg, 5000009, &err), &err);
	assert_string_equal(fake.log, "");
	moat_cgroup_free(cg);
}

static void test_open_refuses_bad_path(void **state)
{
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	fake_setup(MOAT_CGROUP_V1);
	assert_int_equal(moat_cgroup_open("/moat/../etc", &cg, &err), -EINVAL);
	assert_string_equal(err.msg, "cgroup path: '..' is not allowed in '/moat/../etc'");
	moat_error_clear(&err);
	assert_int_equal(moat_cgroup_create("/moat//x", NULL, NULL, 0, &cg, &err), -EINVAL);
	assert_string_equal(err.msg, "cgroup path '/moat//x' is not normalized");
	moat_error_clear(&err);
	assert_null(cg);
}

/* ---- the real host ------------------------------------------------------------------------- */

static struct {
	char path[64];
	pid_t child;
} real;

static const char *const real_hiers[] = {
	"cpu",     "cpuacct", "cpuset", "memory",  "devices",
	"freezer", "blkio",   "pids",   "systemd", "unified",
};

static char *real_read(const char *hier, const char *file)
{
	char path[PATH_MAX];
	char *text = NULL;
	moat_error err = MOAT_ERROR_INIT;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s/%s", hier, real.path, file);
	if (read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	return text;
}

static bool real_dir_exists(const char *hier)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s", hier, real.path);
	return access(path, F_OK) == 0;
}

static void assert_real_gone(void)
{
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(real_hiers); i++)
		if (real_dir_exists(real_hiers[i]))
			fail_msg("/sys/fs/cgroup/%s%s left behind", real_hiers[i], real.path);
}

static int real_setup(void **state)
{
	if (geteuid() != 0 || access("/sys/fs/cgroup/pids", F_OK) != 0)
		return 0;
	moat_cgroup_set_fsroot(NULL);
	moat_cgroup_set_mountinfo(NULL);
	moat_cgroup_set_test_hooks(NULL);
	snprintf(real.path, sizeof(real.path), "/moat-test-%d", (int)getpid());
	real.child = -1;
	return 0;
}

/* Whatever happened, leave nothing: our child killed and reaped, our cgroup removed. */
static int real_teardown(void **state)
{
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	if (real.child > 0) {
		kill(real.child, SIGKILL);
		waitpid(real.child, NULL, 0);
		real.child = -1;
	}
	if (real.path[0] != '\0' && moat_cgroup_open(real.path, &cg, &err) == 0 &&
	    moat_cgroup_destroy(cg, &err) < 0)
		fprintf(stderr, "# cleanup %s: %s\n", real.path, err.msg);
	moat_cgroup_free(cg);
	moat_error_clear(&err);
	return 0;
}

static bool has_line(const char *text, const char *line)
{
	size_t len = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0'))
			return true;
		p += len;
	}
	return false;
}

static void test_real_host(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct oci_resources *res, *up;
	moat_error err = MOAT_ERROR_INIT;
	enum moat_cgroup_layout layout;
	pid_t *pids = NULL;
	size_t n = 0;
	bool frozen = false;
	char want[128], *text;
	int status;

	if (geteuid() != 0 || access("/sys/fs/cgroup/pids", F_OK) != 0)
		skip();
	assert_ok(moat_cgroup_detect(&layout, &err), &err);
	res = parse_res("{\"pids\": {\"limit\": 32}, \"memory\": {\"limit\": 67108864},"
			" \"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}");
	assert_ok(moat_cgroup_create(real.path, res, NULL, 0, &cg, &err), &err);
	oci_resources_free(res);
	text = real_read("pids", "pids.max");
	assert_string_equal(text, "32\n");
	free(text);
	text = real_read("memory", "memory.limit_in_bytes");
	assert_string_equal(text, "67108864\n");
	free(text);
	text = real_read("devices", "devices.list");
	assert_true(has_line(text, "c 1:3 rwm"));
	assert_false(has_line(text, "a *:* rwm"));
	free(text);
	text = real_read("cpuset", "cpuset.cpus");
	assert_true(strlen(text) > 1);
	free(text);

	real.child = fork();
	assert_true(real.child >= 0);
	if (real.child == 0) {
		for (;;)
			pause();
	}
	assert_ok(moat_cgroup_add_pid(cg, real.child, &err), &err);
	snprintf(want, sizeof(want), "/proc/%d/cgroup", (int)real.child);
	assert_int_equal(read_file_at(AT_FDCWD, want, 1 << 16, &text, NULL, &err), 0);
	snprintf(want, sizeof(want), "pids:%s", real.path);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "memory:%s", real.path);
	assert_non_null(strstr(text, want));
	if (layout == MOAT_CGROUP_HYBRID) {
		snprintf(want, sizeof(want), "0::%s", real.path);
		assert_non_null(strstr(text, want));
	}
	free(text);
	assert_ok(moat_cgroup_pids(cg, &pids, &n, &err), &err);
	assert_int_equal(n, 1);
	assert_int_equal(pids[0], real.child);
	free(pids);

	assert_ok(moat_cgroup_freeze(cg, true, &err), &err);
	assert_ok(moat_cgroup_is_frozen(cg, &frozen, &err), &err);
	assert_true(frozen);
	up = parse_res("{\"pids\": {\"limit\": 64}}");
	assert_ok(moat_cgroup_update(cg, up, NULL, 0, &err), &err);
	oci_resources_free(up);
	text = real_read("pids", "pids.max");
	assert_string_equal(text, "64\n");
	free(text);

	/* SIGKILL while frozen: kill_all must thaw for the v1 freezer to let it die */
	assert_ok(moat_cgroup_kill_all(cg, SIGKILL, &err), &err);
	assert_int_equal(waitpid(real.child, &status, 0), real.child);
	real.child = -1;
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_ok(moat_cgroup_destroy(cg, &err), &err);
	moat_cgroup_free(cg);
	assert_real_gone();
}

/* An unkillable-by-default child: destroy must SIGKILL it itself. */
static void test_real_destroy_kills(void **state)
{
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	int status, ready[2];
	char c;

	if (geteuid() != 0 || access("/sys/fs/cgroup/pids", F_OK) != 0)
		skip();
	assert_ok(moat_cgroup_create(real.path, NULL, NULL, 0, &cg, &err), &err);
	assert_int_equal(pipe(ready), 0);
	real.child = fork();
	assert_true(real.child >= 0);
	if (real.child == 0) {
		signal(SIGTERM, SIG_IGN);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	/* SIGTERM only once the child ignores it: under load it may not have got that far */
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_ok(moat_cgroup_add_pid(cg, real.child, &err), &err);
	assert_ok(moat_cgroup_kill_all(cg, SIGTERM, &err), &err);
	assert_int_equal(waitpid(real.child, &status, WNOHANG), 0);
	/* destroy without reaping first: the zombie must not count as a process */
	assert_ok(moat_cgroup_destroy(cg, &err), &err);
	assert_int_equal(waitpid(real.child, &status, 0), real.child);
	real.child = -1;
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	moat_cgroup_free(cg);
	assert_real_gone();
}

/* What the host lacks fails, and the failure leaves nothing on the host. */
static void test_real_unsupported(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct oci_resources *res;
	moat_error err = MOAT_ERROR_INIT;

	if (geteuid() != 0 || access("/sys/fs/cgroup/pids", F_OK) != 0)
		skip();
	if (access("/sys/fs/cgroup/net_cls", F_OK) != 0) {
		res = parse_res("{\"network\": {\"classID\": 1}}");
		assert_int_equal(moat_cgroup_create(real.path, res, NULL, 0, &cg, &err),
				 -EOPNOTSUPP);
		assert_string_equal(err.msg, "linux.resources.network.classID: not supported on "
					     "this host (no net_cls controller)");
		moat_error_clear(&err);
		oci_resources_free(res);
		assert_real_gone();
	}
	/* kmem limits: since Linux 6.1 the file takes writes and ignores them; then the field is
	 * ignored with a note, and the create succeeds */
	res = parse_res("{\"memory\": {\"kernel\": 1048576}}");
	assert_ok(moat_cgroup_create(real.path, res, NULL, 0, &cg, &err), &err);
	if (moat_cgroup_ignored(cg) != NULL) {
		assert_string_equal(oci_string_map_get(moat_cgroup_ignored(cg),
						       "linux.resources.memory.kernel"),
				    "the kernel has no kernel-memory limit (a write to "
				    "memory.kmem.limit_in_bytes has no effect)");
		assert_non_null(err.warn);
	} else {
		char *text = real_read("memory", "memory.kmem.limit_in_bytes");

		assert_string_equal(text, "1048576\n");
		free(text);
	}
	assert_ok(moat_cgroup_destroy(cg, &err), &err);
	moat_cgroup_free(cg);
	assert_real_gone();
	moat_error_clear(&err);
	oci_resources_free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_path),
		cmocka_unit_test(test_detect),
		cmocka_unit_test_teardown(test_v1_resources, fake_teardown),
		cmocka_unit_test_teardown(test_v1_memory_order, fake_teardown),
		cmocka_unit_test_teardown(test_v1_check_before_update, fake_teardown),
		cmocka_unit_test_teardown(test_v1_default_devices, fake_teardown),
		cmocka_unit_test_teardown(test_v2_resources, fake_teardown),
		cmocka_unit_test_teardown(test_v2_cpu_max_update, fake_teardown),
		cmocka_unit_test_teardown(test_hybrid_resources, fake_teardown),
		cmocka_unit_test_teardown(test_unsupported_v1, fake_teardown),
		cmocka_unit_test_teardown(test_unsupported_hybrid, fake_teardown),
		cmocka_unit_test_teardown(test_unsupported_v2, fake_teardown),
		cmocka_unit_test_teardown(test_kernel_memory_ignored_v1, fake_teardown),
		cmocka_unit_test_teardown(test_kernel_memory_ignored_v2, fake_teardown),
		cmocka_unit_test(test_rt_share),
		cmocka_unit_test_teardown(test_v1_listed_devices, fake_teardown),
		cmocka_unit_test_teardown(test_write_rejected, fake_teardown),
		cmocka_unit_test_teardown(test_rollback_keeps_existing, fake_teardown),
		cmocka_unit_test_teardown(test_refuses_occupied, fake_teardown),
		cmocka_unit_test_teardown(test_fake_lifecycle_v1, fake_teardown),
		cmocka_unit_test_teardown(test_fake_lifecycle_v2, fake_teardown),
		cmocka_unit_test_teardown(test_fake_lifecycle_hybrid, fake_teardown),
		cmocka_unit_test_teardown(test_join_v1_then_v2, fake_teardown),
		cmocka_unit_test_teardown(test_open_refuses_bad_path, fake_teardown),
		cmocka_unit_test_setup_teardown(test_real_host, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_destroy_kills, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_unsupported, real_setup, real_teardown),
	};

	return cmocka_run_group_tests_name("cgroup", tests, NULL, NULL);
}
