/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for linux.resources.devices on cgroup v2 (cgroup-v2-devices.c) and its wiring into
 * the cgroup module.
 *   - What the compiled program decides, table-driven: a small interpreter of the instructions
 *     the compiler emits runs it; where bpf(2) works, the kernel's verifier must accept each
 *     program too. Which rules are refused, and why.
 *   - On fake cgroupfs trees (the test hook takes the program instead of the kernel): which
 *     hosts and calls get a filter, on which directory, before which writes, and that a failed
 *     attach rolls the create back.
 *   - For real, as root with bpf(2) and a cgroup2 mount at /sys/fs/cgroup/unified: a cgroup of
 *     our own there gets the filter, and a child that moves itself in opens and mknods device
 *     nodes; updates replace moat's program (and only moat's) with no window; a pure v2 setup
 *     through moat_cgroup_create/update/destroy; every cgroup made is removed.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup/cgroup-internal.h"
#include "cgroup-v2-devices.h"
#include "fake-cgroup.h"
#include "oci-config.h"
#include "utils.h"

#define UNIFIED "/sys/fs/cgroup/unified"

#define assert_ok(expr, err)                                                           \
	do {                                                                           \
		if ((expr) < 0)                                                        \
			fail_msg("%s: %s", #expr, (err)->msg ? (err)->msg : "(none)"); \
	} while (0)

static struct oci_resources *parse_res(const char *json)
{
	struct oci_resources *r = NULL;
	char *perr = NULL;

	if (oci_resources_parse_data(json, strlen(json), "test", &r, &perr) != 0)
		fail_msg("parse %s: %s", json, perr);
	return r;
}

/* Devices as linux.devices lists them, for the tests: "c 10:666", "u 4:64", "p", "b 8:0". */
struct listed {
	struct oci_device d[8];
	struct oci_device *p[8];
	struct cg_listed l;
};

static const struct cg_listed *make_listed(struct listed *x, const char *const *specs)
{
	static char types[8][2];
	size_t n = 0;

	memset(x, 0, sizeof(*x));
	for (; specs != NULL && specs[n] != NULL; n++) {
		struct oci_device *d = &x->d[n];
		unsigned major, minor;

		assert_true(n < 8);
		types[n][0] = specs[n][0];
		d->type = types[n];
		d->path = (char *)"/dev/listed";
		if (sscanf(specs[n] + 1, " %u:%u", &major, &minor) == 2) {
			d->major = major, d->major_present = true;
			d->minor = minor, d->minor_present = true;
		}
		x->p[n] = d;
	}
	x->l.dev = x->p;
	x->l.n = n;
	return &x->l;
}

static struct cg_dev_prog *compile_listed(const char *json, const char *const *listed)
{
	struct oci_resources *res = parse_res(json);
	struct cg_allows allows = { NULL, 0 };
	struct cg_dev_prog *p = NULL;
	moat_error err = MOAT_ERROR_INIT;
	struct listed x;

	assert_ok(cg_allows_build(res, make_listed(&x, listed), &allows, &err), &err);
	assert_ok(cg_v2_devices_compile(res->devices, res->devices_len, &allows, &p, &err), &err);
	cg_allows_clear(&allows);
	oci_resources_free(res);
	return p;
}

static struct cg_dev_prog *compile(const char *json)
{
	return compile_listed(json, NULL);
}

/* The allows of the spec's default devices alone. */
static struct cg_allows default_allows(void)
{
	struct cg_allows allows = { NULL, 0 };
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(cg_allows_build(NULL, NULL, &allows, &err), &err);
	return allows;
}

/* ---- bpf(2), raw, to check what the library did ------------------------------------------ */

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* Whether this process may load a device program: 1 yes, 0 no (why in *why). */
static int bpf_usable(const char **why)
{
	static int state = -1;
	static char reason[160];
	struct cg_dev_prog *p;
	moat_error err = MOAT_ERROR_INIT;
	int fd;

	if (state >= 0) {
		*why = reason;
		return state;
	}
	p = compile("{}");
	fd = cg_v2_devices_load(p->insns, p->n, &err);
	cg_dev_prog_free(p);
	state = fd >= 0;
	if (fd >= 0)
		close(fd);
	else
		snprintf(reason, sizeof(reason), "bpf(2) is not usable here: %s", err.msg);
	moat_error_clear(&err);
	*why = reason;
	return state;
}

/* The device programs attached to the cgroup directory fd itself: ids into ids, the count
 * returned. */
static size_t attached(int cgfd, uint32_t *ids)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = (uint32_t)cgfd;
	attr.query.attach_type = BPF_CGROUP_DEVICE;
	attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
	attr.query.prog_cnt = CG_DEV_MAX_ATTACHED;
	if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
		fail_msg("BPF_PROG_QUERY: %s", strerror(errno));
	return attr.query.prog_cnt;
}

static void prog_name(uint32_t id, char *name, size_t size)
{
	struct bpf_prog_info info;
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_id = id;
	fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
	assert_true(fd >= 0);
	memset(&info, 0, sizeof(info));
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (uint32_t)fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = (uint64_t)(uintptr_t)&info;
	assert_int_equal(sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr), 0);
	close(fd);
	snprintf(name, size, "%.*s", (int)sizeof(info.name), info.name);
}

/* ---- an interpreter for what the compiler emits -------------------------------------------- */

static uint64_t load_ctx(const struct bpf_insn *in, const struct bpf_cgroup_dev_ctx *ctx)
{
	uint32_t v;

	assert_int_equal(BPF_MODE(in->code), BPF_MEM);
	assert_int_equal(BPF_SIZE(in->code), BPF_W);
	assert_int_equal(in->src_reg, BPF_REG_1);
	assert_true(in->off >= 0 && (size_t)in->off + 4 <= sizeof(*ctx) && in->off % 4 == 0);
	memcpy(&v, (const char *)ctx + in->off, sizeof(v));
	return v;
}

static bool jump_taken(const struct bpf_insn *in, uint64_t a, uint64_t b)
{
	if (BPF_CLASS(in->code) == BPF_JMP32) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	switch (BPF_OP(in->code)) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	}
	fail_msg("jump op %#x is not one the compiler emits", BPF_OP(in->code));
	return false;
}

/* Run p for one request; the return value is the program's verdict. Only forward jumps. */
static uint64_t run(const struct cg_dev_prog *p, uint32_t type, uint32_t major, uint32_t minor,
		    uint32_t access)
{
	struct bpf_cgroup_dev_ctx ctx = { (access << 16) | type, major, minor };
	uint64_t r[MAX_BPF_REG] = { 0 };
	size_t pc = 0;

	while (pc < p->n) {
		const struct bpf_insn *in = &p->insns[pc++];
		uint64_t src =
			BPF_SRC(in->code) == BPF_X ? r[in->src_reg] : (uint64_t)(int64_t)in->imm;

		assert_true(in->dst_reg < MAX_BPF_REG && in->src_reg < MAX_BPF_REG);
		switch (BPF_CLASS(in->code)) {
		case BPF_LDX: r[in->dst_reg] = load_ctx(in, &ctx); break;
		case BPF_ALU64:
			switch (BPF_OP(in->code)) {
			case BPF_MOV: r[in->dst_reg] = src; break;
			case BPF_AND: r[in->dst_reg] &= src; break;
			case BPF_RSH: r[in->dst_reg] >>= src; break;
			default:
				fail_msg("alu op %#x is not one the compiler emits",
					 BPF_OP(in->code));
			}
			break;
		case BPF_JMP:
		case BPF_JMP32:
			if (BPF_OP(in->code) == BPF_EXIT)
				return r[BPF_REG_0];
			assert_true(in->off >= 0);
			if (jump_taken(in, r[in->dst_reg], src))
				pc += (size_t)in->off;
			break;
		default:
			fail_msg("instruction class %#x is not one the compiler emits",
				 BPF_CLASS(in->code));
		}
	}
	fail_msg("ran off the end of the program");
	return 2;
}

static uint32_t access_bits(const char *a)
{
	return (strchr(a, 'r') ? BPF_DEVCG_ACC_READ : 0) |
	       (strchr(a, 'w') ? BPF_DEVCG_ACC_WRITE : 0) |
	       (strchr(a, 'm') ? BPF_DEVCG_ACC_MKNOD : 0);
}

/* Each probe is "<b|c> <major>:<minor> <accesses> <+ allowed | - denied>"; listed (may be
 * NULL) are the devices linux.devices lists, as make_listed() reads them. */
static void decides_listed(const char *json, const char *const *listed, const char *const *probes)
{
	struct cg_dev_prog *p = compile_listed(json, listed);
	const char *why;
	size_t i;

	for (i = 0; probes[i] != NULL; i++) {
		char type, acc[4], verdict;
		unsigned major, minor;
		uint64_t got;

		assert_int_equal(
			sscanf(probes[i], "%c %u:%u %3s %c", &type, &major, &minor, acc, &verdict),
			5);
		got = run(p, type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR, major, minor,
			  access_bits(acc));
		if (got != (verdict == '+'))
			fail_msg("%s: '%s' got %s", json, probes[i], got ? "allowed" : "denied");
	}
	if (bpf_usable(&why)) {
		moat_error err = MOAT_ERROR_INIT;
		int fd = cg_v2_devices_load(p->insns, p->n, &err);

		assert_ok(fd, &err);
		close(fd);
	}
	cg_dev_prog_free(p);
}

static void decides(const char *json, const char *const *probes)
{
	decides_listed(json, NULL, probes);
}

#define PROBES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define LISTED(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- what the program decides ------------------------------------------------------------- */

/* No rules: everything denied but the spec's default devices. */
static void test_decides_defaults(void **state)
{
	decides("{}", PROBES("c 1:3 rw +", "c 1:3 rwm +", "c 1:5 r +", "c 1:7 w +", "c 1:8 r +",
			     "c 1:9 r +", "c 5:0 rw +", "c 5:1 rw +", "c 5:2 rw +", "c 136:0 rw +",
			     "c 136:4095 rw +", "c 1:1 r -", "c 1:100 r -", "c 5:3 r -",
			     "b 1:3 r -", "b 8:0 m -", "c 10:200 rw -"));
	/* a leading deny-all, as configs usually start, takes nothing from the defaults */
	decides("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}",
		PROBES("c 1:3 rw +", "c 136:1 rw +", "c 1:100 r -"));
	/* the defaults come last: a config cannot take /dev/null away (as on v1) */
	decides("{\"devices\": [{\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 3}]}",
		PROBES("c 1:3 rwm +"));
}

static void test_decides_allow(void **state)
{
	decides("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
		" {\"allow\": true, \"type\": \"c\", \"major\": 10, \"minor\": 200, \"access\": \"rw\"}]}",
		PROBES("c 10:200 rw +", "c 10:200 r +", "c 10:200 w +", "c 10:200 m -",
		       "c 10:200 rwm -", "c 10:201 r -", "c 11:200 r -", "b 10:200 r -"));
}

/* The last rule that names an access of the device decides it. */
static void test_decides_last_match(void **state)
{
	decides("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"access\": \"rwm\"},"
		" {\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100, \"access\": \"rwm\"}]}",
		PROBES("c 1:100 r -", "c 1:100 m -", "c 1:101 rw +", "c 1:101 m +", "c 2:100 r -"));
	decides("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"access\": \"rwm\"},"
		" {\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100, \"access\": \"w\"}]}",
		PROBES("c 1:100 r +", "c 1:100 m +", "c 1:100 w -", "c 1:100 rw -", "c 1:101 w +"));
	/* an allow after a deny wins for what it names, and only that */
	decides("{\"devices\": [{\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100},"
		" {\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100, \"access\": \"r\"}]}",
		PROBES("c 1:100 r +", "c 1:100 w -", "c 1:100 rw -"));
	decides("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100},"
		" {\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100},"
		" {\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100, \"access\": \"m\"}]}",
		PROBES("c 1:100 m +", "c 1:100 r -", "c 1:100 rm -"));
	/* accesses allowed by different rules add up */
	decides("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"access\": \"r\"},"
		" {\"allow\": true, \"type\": \"c\", \"minor\": 100, \"access\": \"w\"}]}",
		PROBES("c 1:100 rw +", "c 1:101 rw -", "c 1:101 r +", "c 2:100 w +",
		       "c 2:100 r -"));
}

static void test_decides_wildcards(void **state)
{
	/* major absent, minor -1: any */
	decides("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"minor\": 100, \"access\": \"rm\"}]}",
		PROBES("c 1:100 r +", "c 240:100 m +", "c 240:100 rm +", "c 240:100 w -",
		       "c 240:101 m -", "b 240:100 m -"));
	decides("{\"devices\": [{\"allow\": true, \"type\": \"b\", \"major\": -1, \"minor\": -1,"
		" \"access\": \"r\"}]}",
		PROBES("b 8:0 r +", "b 259:3 r +", "b 8:0 w -", "c 8:0 r -"));
	/* numbers above 2^31 compare as the kernel's unsigned 32-bit ones */
	decides("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 4294967295,"
		" \"minor\": 2147483648, \"access\": \"r\"}]}",
		PROBES("c 4294967295:2147483648 r +", "c 2147483647:2147483648 r -",
		       "c 4294967295:0 r -"));
}

/* Type "a" (or none) is both block and char, with whatever access and numbers it has. */
static void test_decides_type_all(void **state)
{
	decides("{\"devices\": [{\"allow\": true, \"type\": \"a\"}]}",
		PROBES("b 8:1 rwm +", "c 99:1 rwm +", "c 1:100 rw +"));
	decides("{\"devices\": [{\"allow\": true, \"type\": \"a\"}, {\"allow\": false, \"type\": \"b\"}]}",
		PROBES("b 8:1 r -", "b 8:1 m -", "c 8:1 rwm +"));
	decides("{\"devices\": [{\"allow\": true, \"access\": \"m\"}]}",
		PROBES("b 8:1 m +", "c 4:1 m +", "c 4:1 r -", "b 8:1 rm -"));
	decides("{\"devices\": [{\"allow\": true, \"type\": \"a\", \"major\": 7, \"access\": \"rw\"}]}",
		PROBES("b 7:0 rw +", "c 7:3 r +", "b 8:0 r -", "b 7:0 m -"));
}

/* issue 14 (6): a device linux.devices lists is allowed rwm after the config's rules, so that
 * their usual leading deny-all does not take it away; a rule naming that very device still
 * takes away what it denies. */
static void test_decides_listed(void **state)
{
	const char *deny_all = "{\"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}";

	decides(deny_all, PROBES("c 10:666 r -", "c 10:666 m -"));
	decides_listed(deny_all, LISTED("c 10:666"),
		       PROBES("c 10:666 rw +", "c 10:666 m +", "c 10:666 rwm +", "c 10:667 r -",
			      "c 11:666 r -", "b 10:666 r -", "c 1:3 rw +", "c 1:1 r -"));
	/* no rules at all: the same */
	decides_listed("{}", LISTED("c 10:666"), PROBES("c 10:666 rwm +", "c 10:1 r -"));
	/* u is a character device too; a block device is allowed as a block device */
	decides_listed(deny_all, LISTED("u 4:64", "b 7:3", "p"),
		       PROBES("c 4:64 rw +", "b 4:64 r -", "b 7:3 rwm +", "c 7:3 r -"));
	/* a deny wider than the device (a whole major, every char device) does not count */
	decides_listed("{\"devices\": [{\"allow\": false, \"type\": \"c\", \"major\": 10}]}",
		       LISTED("c 10:666"), PROBES("c 10:666 rwm +", "c 10:200 r -"));
	decides_listed("{\"devices\": [{\"allow\": false, \"type\": \"c\"}]}", LISTED("c 10:666"),
		       PROBES("c 10:666 rwm +", "c 10:200 r -"));
	/* a deny of the device itself does, for the accesses it names */
	decides_listed("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
		       " {\"allow\": false, \"type\": \"c\", \"major\": 10, \"minor\": 666,"
		       " \"access\": \"w\"}]}",
		       LISTED("c 10:666"),
		       PROBES("c 10:666 r +", "c 10:666 m +", "c 10:666 w -", "c 10:666 rw -"));
	decides_listed("{\"devices\": [{\"allow\": false, \"type\": \"a\", \"major\": 10,"
		       " \"minor\": 666}]}",
		       LISTED("c 10:666"), PROBES("c 10:666 r -", "c 10:666 m -"));
	/* the last rule naming the device decides each access */
	decides_listed("{\"devices\": [{\"allow\": false, \"type\": \"c\", \"major\": 10,"
		       " \"minor\": 666}, {\"allow\": true, \"type\": \"c\", \"major\": 10,"
		       " \"minor\": 666, \"access\": \"r\"}]}",
		       LISTED("c 10:666"), PROBES("c 10:666 r +", "c 10:666 w -", "c 10:666 m -"));
	/* a rule naming another type does not touch it */
	decides_listed("{\"devices\": [{\"allow\": false, \"type\": \"b\", \"major\": 10,"
		       " \"minor\": 666}]}",
		       LISTED("c 10:666"), PROBES("c 10:666 rwm +", "b 10:666 r -"));
}

static void listed_fails(const char *const *listed, const char *msg)
{
	struct cg_allows allows = { NULL, 0 };
	moat_error err = MOAT_ERROR_INIT;
	struct listed x;

	assert_int_equal(cg_allows_build(NULL, make_listed(&x, listed), &allows, &err), -EINVAL);
	assert_null(allows.a);
	assert_string_equal(err.msg, msg);
	moat_error_clear(&err);
}

static void test_refuses_bad_listed(void **state)
{
	/* the config parser refuses these already; this module does not rely on it */
	listed_fails(LISTED("c"), "linux.devices[0] (/dev/listed): a c device needs a major and a "
				  "minor of 0..4294967295");
	listed_fails(LISTED("p", "b"), "linux.devices[1] (/dev/listed): a b device needs a major "
				       "and a minor of 0..4294967295");
}

static void compile_fails(const char *json, int code, const char *msg)
{
	struct oci_resources *res = parse_res(json);
	struct cg_allows allows = default_allows();
	struct cg_dev_prog *p = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_int_equal(cg_v2_devices_compile(res->devices, res->devices_len, &allows, &p, &err),
			 -code);
	assert_null(p);
	assert_string_equal(err.msg, msg);
	moat_error_clear(&err);
	cg_allows_clear(&allows);
	oci_resources_free(res);
}

static void struct_fails(const char *type, const char *access, const char *msg)
{
	struct oci_device_cgroup d = { .allow = true,
				       .type = (char *)type,
				       .access = (char *)access };
	struct oci_device_cgroup *list[] = { &d };
	struct cg_allows allows = default_allows();
	struct cg_dev_prog *p = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_int_equal(cg_v2_devices_compile(list, 1, &allows, &p, &err), -EINVAL);
	assert_null(p);
	assert_string_equal(err.msg, msg);
	moat_error_clear(&err);
	cg_allows_clear(&allows);
}

static void test_refuses_bad_rules(void **state)
{
	char *json;
	size_t i, len;

	/* the config parser refuses these already; this module does not rely on it */
	struct_fails("x", "rwm", "linux.resources.devices[0].type: 'x' is not a, b or c");
	struct_fails("c", "rx",
		     "linux.resources.devices[0].access: 'rx' is not made of r, w and m");
	compile_fails("{\"devices\": [{\"allow\": true, \"access\": \"\"}]}", EINVAL,
		      "linux.resources.devices[0].access: '' is not made of r, w and m");
	compile_fails("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": -2}]}", EINVAL,
		      "linux.resources.devices[0].major: -2 is not -1 (any) or 0..4294967295");
	compile_fails(
		"{\"devices\": [{\"allow\": true, \"type\": \"c\", \"minor\": 4294967296}]}",
		EINVAL,
		"linux.resources.devices[0].minor: 4294967296 is not -1 (any) or 0..4294967295");
	/* more rules than a program the kernel takes can hold */
	json = xstrdup("{\"devices\": [");
	for (i = 0; i < 600; i++) {
		char *more = xasprintf("%s%s{\"allow\": true, \"type\": \"c\", \"major\": 1, "
				       "\"minor\": %zu}",
				       json, i ? "," : "", i);

		free(json);
		json = more;
	}
	len = strlen(json);
	json = xrealloc(json, len + 3);
	memcpy(json + len, "]}", 3);
	compile_fails(json, E2BIG,
		      "linux.resources.devices: 600 rules make a device filter of "
		      "4270 instructions, more than the 4096 the kernel takes");
	free(json);
}

/* A program the verifier refuses: the error carries its reason. */
static void test_verifier_reason(void **state)
{
	struct bpf_insn bad[2];
	moat_error err = MOAT_ERROR_INIT;
	const char *why;

	if (!bpf_usable(&why)) {
		fprintf(stderr, "# SKIP %s\n", why);
		skip();
	}
	memset(bad, 0, sizeof(bad));
	bad[0].code = BPF_ALU64 | BPF_MOV | BPF_K; /* r0 = 2: device programs return 0 or 1 */
	bad[0].imm = 2;
	bad[1].code = BPF_JMP | BPF_EXIT;
	assert_int_equal(cg_v2_devices_load(bad, 2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "load the device filter: Invalid argument (verifier: "));
	assert_non_null(strstr(err.msg, "R0"));
	moat_error_clear(&err);
}

/* ---- the wiring, on fake cgroupfs trees ---------------------------------------------------- */

enum fake_layout {
	FAKE_V2,             /* cgroup2 at the root, with the pids controller */
	FAKE_HYBRID,         /* v1 devices and pids, cgroup2 at <root>/unified */
	FAKE_HYBRID_NO_DEVS, /* v1 pids only, cgroup2 at <root>/unified */
	FAKE_V1_NO_DEVS,     /* v1 pids only */
};

/* What these tests watch beyond the fake's log (fake-cgroup.h). */
static struct {
	struct cg_dev_prog *last; /* the last program handed over */
	int attach_result;        /* what the hook returns */
} F;

/* What the kernel makes in a new cgroup directory, for the controllers this fake has. */
static void hook_made_dir(const char *mnt, bool v2, int dirfd, void *data)
{
	const char *base = strrchr(mnt, '/') + 1;

	fake_cg_put(dirfd, "cgroup.procs", "");
	if (v2) {
		fake_cg_put(dirfd, "cgroup.controllers", strcmp(base, "unified") ? "pids\n" : "\n");
		fake_cg_put(dirfd, "cgroup.subtree_control", "");
		fake_cg_put(dirfd, "cgroup.events", "populated 0\nfrozen 0\n");
		fake_cg_put(dirfd, "cgroup.kill", "");
	}
	if ((v2 && strcmp(base, "unified") != 0) || strcmp(base, "pids") == 0)
		fake_cg_put(dirfd, "pids.max", "max\n");
	if (strcmp(base, "devices") == 0) {
		fake_cg_put(dirfd, "devices.allow", "");
		fake_cg_put(dirfd, "devices.deny", "");
	}
}

static void hook_wrote(const char *path, const char *value, void *data)
{
	const char *file = strrchr(path, '/') + 1;

	fake_cg_log_write(path, value);
	if (strcmp(file, "cgroup.subtree_control") == 0) {
		/* the kernel lists what is enabled (here only ever pids) */
		int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

		assert_true(fd >= 0);
		dprintf(fd, "%s\n", value + 1);
		close(fd);
	}
}

static int hook_devices_prog(const char *dir, const struct bpf_insn *insns, size_t n, void *data)
{
	fake_cg_log("%s: filter", fake_cg_rel(dir));
	cg_dev_prog_free(F.last);
	F.last = xcalloc(1, sizeof(*F.last));
	F.last->insns = xmalloc(n * sizeof(*insns));
	memcpy(F.last->insns, insns, n * sizeof(*insns));
	F.last->n = n;
	return F.attach_result;
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
	hook_made_dir(mnt, v2, fd, NULL);
	close(fd);
	fake_cg_mount(id, id, mnt, v2 ? "cgroup2" : "cgroup", v2 ? "" : name);
}

static void fake_setup(enum fake_layout layout)
{
	int fd;

	fake_cg_begin("cgdevtest", "root");
	if (layout == FAKE_V2) {
		fd = open(fake.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		hook_made_dir(fake.root, true, fd, NULL);
		close(fd);
		fake_cg_mount(30, 30, fake.root, "cgroup2", "");
	} else {
		fake_cg_mount(30, 30, fake.root, "tmpfs", "mode=755");
		make_hier(31, "pids", false);
		if (layout == FAKE_HYBRID)
			make_hier(32, "devices", false);
		if (layout != FAKE_V1_NO_DEVS)
			make_hier(33, "unified", true);
	}
	fake_cg_done(&hooks);
}

static int fake_teardown(void **state)
{
	fake_cg_teardown(state);
	cg_dev_prog_free(F.last);
	memset(&F, 0, sizeof(F));
	return 0;
}

static void log_reset(void)
{
	fake_cg_log_reset();
	cg_dev_prog_free(F.last);
	F.last = NULL;
}

static struct moat_cgroup *create_ok(const char *json)
{
	struct oci_resources *res = json ? parse_res(json) : NULL;
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(moat_cgroup_create("/moat/c1", res, NULL, 0, &cg, &err), &err);
	oci_resources_free(res);
	return cg;
}

static void update_ok(struct moat_cgroup *cg, const char *json)
{
	struct oci_resources *res = parse_res(json);
	moat_error err = MOAT_ERROR_INIT;

	log_reset();
	assert_ok(moat_cgroup_update(cg, res, NULL, 0, &err), &err);
	oci_resources_free(res);
}

static void create_fails(const char *json, const char *msg)
{
	struct oci_resources *res = parse_res(json);
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	char path[PATH_MAX];

	if (moat_cgroup_create("/moat/c1", res, NULL, 0, &cg, &err) == 0)
		fail_msg("%s: created", json);
	assert_null(cg);
	assert_string_equal(err.msg, msg);
	moat_error_clear(&err);
	oci_resources_free(res);
	/* nothing left: the levels create made are gone in every hierarchy */
	snprintf(path, sizeof(path), "%s/moat", fake.root);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/unified/moat", fake.root);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/pids/moat", fake.root);
	assert_int_equal(access(path, F_OK), -1);
}

/* What the program handed to the hook decides for one request. */
static bool last_allows(char type, uint32_t major, uint32_t minor, const char *access)
{
	assert_non_null(F.last);
	return run(F.last, type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR, major, minor,
		   access_bits(access)) == 1;
}

/* Pure v2: a new cgroup gets deny-all and the defaults, before any file is written. */
static void test_wiring_v2_create(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(FAKE_V2);
	cg = create_ok(NULL);
	assert_string_equal(fake.log, "moat/c1: filter\n");
	assert_true(last_allows('c', 1, 3, "rw"));
	assert_false(last_allows('c', 1, 100, "r"));
	moat_cgroup_free(cg);
	fake_teardown(NULL);

	fake_setup(FAKE_V2);
	cg = create_ok("{\"pids\": {\"limit\": 10}, \"devices\": [{\"allow\": true, \"type\": "
		       "\"c\", \"major\": 10, \"minor\": 200, \"access\": \"rw\"}]}");
	assert_string_equal(fake.log, "cgroup.subtree_control=+pids\n"
				      "moat/cgroup.subtree_control=+pids\n"
				      "moat/c1: filter\n"
				      "moat/c1/pids.max=10\n");
	assert_true(last_allows('c', 10, 200, "rw"));
	assert_false(last_allows('c', 10, 200, "m"));
	assert_true(last_allows('c', 5, 2, "rw"));
	moat_cgroup_free(cg);
}

/* An update replaces the filter only when it brings a devices list. */
static void test_wiring_v2_update(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(FAKE_V2);
	cg = create_ok("{\"pids\": {\"limit\": 10}}");
	update_ok(cg, "{\"pids\": {\"limit\": 20}}");
	assert_string_equal(fake.log, "moat/c1/pids.max=20\n");
	update_ok(cg, "{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, "
		      "\"minor\": 100, \"access\": \"r\"}]}");
	assert_string_equal(fake.log, "moat/c1: filter\n");
	assert_true(last_allows('c', 1, 100, "r"));
	assert_false(last_allows('c', 1, 100, "w"));
	/* an empty list is a list: back to deny-all and the defaults */
	update_ok(cg, "{\"devices\": []}");
	assert_string_equal(fake.log, "moat/c1: filter\n");
	assert_false(last_allows('c', 1, 100, "r"));
	assert_true(last_allows('c', 1, 3, "r"));
	moat_cgroup_free(cg);
}

/* issue 14 (6): the devices linux.devices lists get into the filter, at create and again at
 * an update that brings a devices list. */
static void test_wiring_v2_listed(void **state)
{
	struct oci_resources *res = parse_res("{\"devices\": [{\"allow\": false, \"access\": "
					      "\"rwm\"}]}");
	const struct cg_listed *l;
	struct moat_cgroup *cg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	struct listed x;

	fake_setup(FAKE_V2);
	l = make_listed(&x, LISTED("c 10:666", "p"));
	assert_ok(moat_cgroup_create("/moat/c1", res, l->dev, l->n, &cg, &err), &err);
	assert_string_equal(fake.log, "moat/c1: filter\n");
	assert_true(last_allows('c', 10, 666, "rwm"));
	assert_false(last_allows('c', 10, 667, "r"));
	log_reset();
	assert_ok(moat_cgroup_update(cg, res, l->dev, l->n, &err), &err);
	assert_string_equal(fake.log, "moat/c1: filter\n");
	assert_true(last_allows('c', 10, 666, "rw"));
	moat_cgroup_free(cg);
	oci_resources_free(res);
}

/* Hybrid without v1 devices: the unified cgroup gets the filter, when there are rules. */
static void test_wiring_hybrid_no_devices(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(FAKE_HYBRID_NO_DEVS);
	cg = create_ok(NULL);
	assert_null(strstr(fake.log, "filter"));
	moat_cgroup_free(cg);
	fake_teardown(NULL);

	fake_setup(FAKE_HYBRID_NO_DEVS);
	cg = create_ok("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
		       " {\"allow\": true, \"type\": \"b\", \"major\": 8, \"access\": \"r\"}]}");
	assert_string_equal(fake.log, "unified/moat/c1: filter\n");
	assert_true(last_allows('b', 8, 16, "r"));
	assert_false(last_allows('b', 8, 16, "w"));
	update_ok(cg, "{\"pids\": {\"limit\": 5}}");
	assert_string_equal(fake.log, "pids/moat/c1/pids.max=5\n");
	moat_cgroup_free(cg);
}

/* A v1 devices hierarchy takes the rules, hybrid or not: no filter. */
static void test_wiring_hybrid_v1_devices(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(FAKE_HYBRID);
	cg = create_ok("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 10, "
		       "\"minor\": 200, \"access\": \"rw\"}]}");
	assert_null(strstr(fake.log, "filter"));
	assert_non_null(strstr(fake.log, "devices/moat/c1/devices.deny=a\n"
					 "devices/moat/c1/devices.allow=c 10:200 rw\n"
					 "devices/moat/c1/devices.allow=c 1:3 rwm\n"));
	assert_non_null(strstr(fake.log, "devices/moat/c1/devices.allow=c 136:* rwm\n"));
	moat_cgroup_free(cg);
}

static void test_wiring_v1_no_devices(void **state)
{
	struct moat_cgroup *cg;

	fake_setup(FAKE_V1_NO_DEVS);
	create_fails("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}",
		     "linux.resources.devices: not supported on this host (no devices controller)");
	cg = create_ok(NULL);
	moat_cgroup_free(cg);
}

/* Refused rules and a failed attach leave nothing behind. */
static void test_wiring_failures(void **state)
{
	char want[PATH_MAX + 128];

	fake_setup(FAKE_V2);
	create_fails("{\"devices\": [{\"allow\": true}, {\"allow\": true, \"major\": -2}]}",
		     "linux.resources.devices[1].major: -2 is not -1 (any) or 0..4294967295");
	assert_null(strstr(fake.log, "filter"));
	F.attach_result = -EPERM;
	snprintf(want, sizeof(want),
		 "linux.resources.devices: attach the device filter to "
		 "'%s/moat/c1': Operation not permitted",
		 fake.root);
	create_fails("{\"pids\": {\"limit\": 10}}", want);
	/* the filter went first: nothing was written to the cgroup */
	assert_null(strstr(fake.log, "pids.max"));
	fake_teardown(NULL);

	fake_setup(FAKE_HYBRID_NO_DEVS);
	F.attach_result = -EPERM;
	snprintf(want, sizeof(want),
		 "linux.resources.devices: attach the device filter to "
		 "'%s/unified/moat/c1': Operation not permitted",
		 fake.root);
	create_fails("{\"devices\": []}", want);
}

/* ---- for real: a cgroup of our own under /sys/fs/cgroup/unified ---------------------------- */

#define RMDIR_WAIT_MS 2000 /* rmdir can see EBUSY for a moment after the last child exits */
#define RACE_UPDATES 50    /* updates while a child keeps opening a device both filters deny */

static struct {
	char skip[256]; /* why the real tests cannot run here; "" when they can */
	char name[64];  /* moat-unit-devices-<pid> */
	char cg[PATH_MAX];
	char cg_e2e[PATH_MAX]; /* the one moat_cgroup_create makes */
	int cgfd;
	char tmp[64]; /* device nodes are made here */
	int tmpfd;
} R;

static void node_path(char *buf, size_t size, const char *node)
{
	snprintf(buf, size, "%s/%s", R.tmp, node);
}

/* Device nodes the children open: major 1 is the mem driver, which has nothing at minors 100
 * to 102, so an open the filter lets through fails with ENXIO and touches nothing. */
static const struct {
	const char *name;
	unsigned minor;
} nodes[] = { { "c1_100", 100 }, { "c1_101", 101 }, { "c1_102", 102 } };

static void real_check_host(void)
{
	struct statfs sf;
	struct statvfs sv;
	const char *why = NULL;
	char path[PATH_MAX];
	int fd;

	if (geteuid() != 0)
		why = "not root";
	else if (statfs(UNIFIED, &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
		why = "no cgroup2 mount at " UNIFIED;
	else if (!bpf_usable(&why))
		;
	else if (statvfs(R.tmp, &sv) != 0 || (sv.f_flag & ST_NODEV))
		why = "the temp dir is on a nodev filesystem";
	if (why != NULL) {
		snprintf(R.skip, sizeof(R.skip), "%s", why);
		return;
	}
	/* without a filter the node opens (and fails in the driver), or nothing can be tested */
	node_path(path, sizeof(path), "c1_100");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (fd >= 0 || errno != ENXIO)
		snprintf(R.skip, sizeof(R.skip),
			 "opening char 1:100 outside the test cgroup gives "
			 "%s, not ENXIO",
			 fd >= 0 ? "success" : strerror(errno));
}

static int real_setup(void **state)
{
	size_t i;

	memset(&R, 0, sizeof(R));
	R.cgfd = R.tmpfd = -1;
	snprintf(R.tmp, sizeof(R.tmp), "/tmp/moat-unit-devices-XXXXXX");
	assert_non_null(mkdtemp(R.tmp));
	R.tmpfd = open(R.tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(R.tmpfd >= 0);
	for (i = 0; i < MOAT_ARRAY_SIZE(nodes) && geteuid() == 0; i++)
		assert_int_equal(
			mknodat(R.tmpfd, nodes[i].name, S_IFCHR | 0600, makedev(1, nodes[i].minor)),
			0);
	real_check_host();
	if (R.skip[0] != '\0')
		return 0;
	snprintf(R.name, sizeof(R.name), "moat-unit-devices-%d", (int)getpid());
	snprintf(R.cg, sizeof(R.cg), "%s/%s", UNIFIED, R.name);
	snprintf(R.cg_e2e, sizeof(R.cg_e2e), "%s/%s-e2e", UNIFIED, R.name);
	if (mkdir(R.cg, 0755) < 0)
		fail_msg("mkdir %s: %s", R.cg, strerror(errno));
	R.cgfd = open(R.cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(R.cgfd >= 0);
	return 0;
}

static int rmdir_cgroup(const char *path)
{
	unsigned waited = 0;

	while (rmdir(path) < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || waited >= RMDIR_WAIT_MS) {
			fprintf(stderr, "# cleanup: rmdir %s: %s\n", path, strerror(errno));
			return -1;
		}
		usleep(10 * 1000);
		waited += 10;
	}
	return 0;
}

/* Whatever happened, remove what setup made; a cgroup left behind fails the test. */
static int real_teardown(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	int r = 0;

	moat_cgroup_set_fsroot(NULL);
	if (R.cgfd >= 0)
		close(R.cgfd);
	if (R.cg[0] != '\0' && rmdir_cgroup(R.cg) < 0)
		r = -1;
	if (R.cg_e2e[0] != '\0' && rmdir_cgroup(R.cg_e2e) < 0)
		r = -1;
	if (R.tmpfd >= 0)
		close(R.tmpfd);
	if (R.tmp[0] != '\0' && remove_tree_at(AT_FDCWD, R.tmp, &err) < 0)
		fprintf(stderr, "# cleanup %s: %s\n", R.tmp, err.msg);
	moat_error_clear(&err);
	memset(&R, 0, sizeof(R));
	return r;
}

#define REAL_OR_SKIP()                                          \
	do {                                                    \
		if (R.skip[0] != '\0') {                        \
			fprintf(stderr, "# SKIP %s\n", R.skip); \
			skip();                                 \
		}                                               \
	} while (0)

/* In a child that first moves itself into the cgroup cgfd: open path with flags, or (path
 * NULL) mknod a node of kind and dev in the temp dir. 0, or the errno it failed with. */
static int in_cgroup(int cgfd, const char *path, int flags, mode_t kind, dev_t dev)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = openat(cgfd, "cgroup.procs", O_WRONLY | O_CLOEXEC), r;

		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(255);
		if (path != NULL)
			r = open(path, flags | O_CLOEXEC | O_NOCTTY);
		else
			r = mknodat(R.tmpfd, "made", kind | 0600, dev);
		_exit(r < 0 ? errno : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 255)
		fail_msg("the child could not join %s", R.cg);
	unlinkat(R.tmpfd, "made", 0);
	return WEXITSTATUS(status);
}

/* Allowed is anything but EPERM: a node with no driver behind it fails later, with ENXIO. */
static void opens_in(int cgfd, const char *path, int flags, bool allowed)
{
	char full[PATH_MAX];
	int r;

	if (path[0] != '/')
		node_path(full, sizeof(full), path);
	else
		snprintf(full, sizeof(full), "%s", path);
	r = in_cgroup(cgfd, full, flags, 0, 0);
	if ((r != EPERM) != allowed)
		fail_msg("open %s (flags %#x): %s, expected it %s", path, flags,
			 r ? strerror(r) : "opened", allowed ? "allowed" : "denied");
}

static void opens(const char *path, int flags, bool allowed)
{
	opens_in(R.cgfd, path, flags, allowed);
}

static void mknods(char type, unsigned major, unsigned minor, bool allowed)
{
	int r = in_cgroup(R.cgfd, NULL, 0, type == 'b' ? S_IFBLK : S_IFCHR, makedev(major, minor));

	if ((r == 0) != allowed)
		fail_msg("mknod %c %u:%u: %s, expected it %s", type, major, minor,
			 r ? strerror(r) : "made", allowed ? "allowed" : "denied");
}

static void install(const char *json)
{
	struct cg_dev_prog *p = compile(json);
	moat_error err = MOAT_ERROR_INIT;

	assert_ok(cg_v2_devices_install(R.cgfd, R.cg, p, &err), &err);
	cg_dev_prog_free(p);
}

static void test_real_default_deny(void **state)
{
	REAL_OR_SKIP();
	opens("c1_100", O_RDONLY, true); /* no filter yet */
	install("{}");
	opens("/dev/null", O_RDWR, true);
	opens("/dev/zero", O_RDONLY, true);
	opens("c1_100", O_RDONLY, false);
	mknods('c', 1, 101, false);
	mknods('c', 1, 3, true); /* the defaults include mknod */
}

static void test_real_allow_rule(void **state)
{
	REAL_OR_SKIP();
	install("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
		" {\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100, \"access\": \"rw\"}]}");
	opens("c1_100", O_RDWR, true);
	opens("c1_101", O_RDONLY, false);
	mknods('c', 1, 100, false);
	opens("/dev/null", O_RDWR, true);
}

/* issue 14 (6), through the kernel: a listed device opens and mknods under a deny-all, and
 * what a rule of the device itself denies stays denied. */
static void test_real_listed(void **state)
{
	struct cg_dev_prog *p;
	moat_error err = MOAT_ERROR_INIT;

	REAL_OR_SKIP();
	p = compile_listed("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}",
			   LISTED("c 1:100"));
	assert_ok(cg_v2_devices_install(R.cgfd, R.cg, p, &err), &err);
	cg_dev_prog_free(p);
	opens("c1_100", O_RDWR, true);
	opens("c1_101", O_RDONLY, false);
	mknods('c', 1, 100, true);
	mknods('c', 1, 101, false);
	p = compile_listed("{\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
			   " {\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100,"
			   " \"access\": \"w\"}]}",
			   LISTED("c 1:100"));
	assert_ok(cg_v2_devices_install(R.cgfd, R.cg, p, &err), &err);
	cg_dev_prog_free(p);
	opens("c1_100", O_RDONLY, true);
	opens("c1_100", O_WRONLY, false);
	mknods('c', 1, 100, true);
}

static void test_real_deny_after_allow(void **state)
{
	REAL_OR_SKIP();
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1},"
		" {\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100}]}");
	opens("c1_100", O_RDONLY, false);
	opens("c1_101", O_RDWR, true);
	mknods('c', 1, 102, true);
	mknods('c', 1, 100, false);
	/* a deny of one access takes only that one */
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100},"
		" {\"allow\": false, \"type\": \"c\", \"major\": 1, \"minor\": 100, \"access\": \"w\"}]}");
	opens("c1_100", O_RDONLY, true);
	opens("c1_100", O_WRONLY, false);
	opens("c1_100", O_RDWR, false);
}

static void test_real_wildcards(void **state)
{
	REAL_OR_SKIP();
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"minor\": 100, \"access\": \"rm\"}]}");
	opens("c1_100", O_RDONLY, true);
	opens("c1_100", O_WRONLY, false);
	opens("c1_101", O_RDONLY, false);
	mknods('c', 240, 100, true);
	mknods('c', 240, 101, false);
	mknods('b', 240, 100, false);
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": -1,"
		" \"access\": \"r\"}]}");
	opens("c1_101", O_RDONLY, true);
	opens("c1_102", O_RDONLY, true);
	opens("c1_102", O_WRONLY, false);
}

static void test_real_type_all(void **state)
{
	REAL_OR_SKIP();
	install("{\"devices\": [{\"allow\": true, \"type\": \"a\"}]}");
	opens("c1_101", O_RDWR, true);
	mknods('b', 8, 1, true);
	install("{\"devices\": [{\"allow\": true, \"type\": \"a\"},"
		" {\"allow\": false, \"type\": \"b\"}]}");
	mknods('b', 8, 1, false);
	mknods('c', 8, 1, true);
	install("{\"devices\": [{\"allow\": true, \"access\": \"m\"}]}");
	mknods('b', 8, 1, true);
	mknods('c', 240, 7, true);
	opens("c1_100", O_RDONLY, false);
}

static void test_real_read_only(void **state)
{
	REAL_OR_SKIP();
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100,"
		" \"access\": \"r\"}]}");
	opens("c1_100", O_RDONLY, true);
	opens("c1_100", O_WRONLY, false);
	opens("c1_100", O_RDWR, false);
}

static void test_real_mknod_needs_m(void **state)
{
	REAL_OR_SKIP();
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100,"
		" \"access\": \"rw\"}]}");
	mknods('c', 1, 100, false);
	install("{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 100,"
		" \"access\": \"m\"}]}");
	mknods('c', 1, 100, true);
	opens("c1_100", O_RDONLY, false);
}

static const char only_100[] = "{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1,"
			       " \"minor\": 100, \"access\": \"r\"}]}";
static const char only_101[] = "{\"devices\": [{\"allow\": true, \"type\": \"c\", \"major\": 1,"
			       " \"minor\": 101, \"access\": \"r\"}]}";

/* A child in the cgroup opens c 1:102, which every filter here denies, until stop is closed:
 * its exit status is 0 when no open got through, 1 when one did. */
static pid_t keep_opening(int ready, int stop, int stop_writer)
{
	pid_t pid = fork();
	char path[PATH_MAX];

	assert_true(pid >= 0);
	if (pid != 0)
		return pid;
	close(stop_writer); /* the child's copy would keep the pipe from ever ending */
	node_path(path, sizeof(path), "c1_102");
	{
		int fd = openat(R.cgfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		unsigned leaks = 0;
		char c;

		if (fd < 0 || write(fd, "0", 1) != 1 || write(ready, "1", 1) != 1)
			_exit(255);
		for (;;) {
			int nfd = open(path, O_RDONLY | O_CLOEXEC);

			if (nfd >= 0)
				close(nfd);
			if (nfd >= 0 || errno != EPERM)
				leaks++;
			if (read(stop, &c, 1) == 0)
				break;
		}
		_exit(leaks ? 1 : 0);
	}
}

/* The new program goes in before the old one leaves: only one is attached after an update,
 * and a device both deny is never reachable in between. */
static void test_real_update_replaces(void **state)
{
	uint32_t ids[CG_DEV_MAX_ATTACHED], first;
	int ready[2], stop[2], status, i;
	char name[BPF_OBJ_NAME_LEN + 1], c;
	pid_t pid;

	REAL_OR_SKIP();
	install(only_100);
	assert_int_equal(attached(R.cgfd, ids), 1);
	first = ids[0];
	prog_name(first, name, sizeof(name));
	assert_string_equal(name, CG_DEV_PROG_NAME);
	install(only_101);
	assert_int_equal(attached(R.cgfd, ids), 1);
	assert_int_not_equal(ids[0], first);
	opens("c1_100", O_RDONLY, false);
	opens("c1_101", O_RDONLY, true);

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(stop, O_CLOEXEC | O_NONBLOCK), 0);
	pid = keep_opening(ready[1], stop[0], stop[1]);
	close(ready[1]);
	close(stop[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	for (i = 0; i < RACE_UPDATES; i++)
		install(i % 2 ? only_100 : only_101);
	close(stop[1]);
	close(ready[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("c 1:102 was reachable during an update (child status %d)",
			 WEXITSTATUS(status));
	assert_int_equal(attached(R.cgfd, ids), 1);
}

/* A device program someone else attached: allows everything, named other_dev. */
static int attach_foreign(void)
{
	static const char license[] = "GPL";
	struct bpf_insn allow[2];
	union bpf_attr attr;
	int fd;

	memset(allow, 0, sizeof(allow));
	allow[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
	allow[0].imm = 1;
	allow[1].code = BPF_JMP | BPF_EXIT;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)allow;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t)license;
	memcpy(attr.prog_name, "other_dev", sizeof("other_dev"));
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	assert_true(fd >= 0);
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)R.cgfd;
	attr.attach_bpf_fd = (uint32_t)fd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = BPF_F_ALLOW_MULTI;
	assert_int_equal(sys_bpf(BPF_PROG_ATTACH, &attr), 0);
	return fd;
}

static void test_real_update_keeps_foreign(void **state)
{
	uint32_t ids[CG_DEV_MAX_ATTACHED], moat_id = 0;
	char name[BPF_OBJ_NAME_LEN + 1];
	size_t i, n, foreign = 0, moat = 0;
	int fd;

	REAL_OR_SKIP();
	install(only_100);
	fd = attach_foreign();
	close(fd);
	assert_int_equal(attached(R.cgfd, ids), 2);
	for (i = 0; i < 2; i++) {
		prog_name(ids[i], name, sizeof(name));
		if (strcmp(name, CG_DEV_PROG_NAME) == 0)
			moat_id = ids[i];
	}
	assert_int_not_equal(moat_id, 0);
	install(only_101);
	n = attached(R.cgfd, ids);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		prog_name(ids[i], name, sizeof(name));
		if (strcmp(name, "other_dev") == 0)
			foreign++;
		if (strcmp(name, CG_DEV_PROG_NAME) == 0 && ids[i] != moat_id)
			moat++;
	}
	assert_int_equal(foreign, 1);
	assert_int_equal(moat, 1);
	/* both must allow: the foreign one allows all, so moat's decides */
	opens("c1_100", O_RDONLY, false);
	opens("c1_101", O_RDONLY, true);
}

/* moat_cgroup_create/update/destroy with the cgroup2 mount as the fs root: a pure v2 host. */
static void test_real_pure_v2_cgroup(void **state)
{
	struct moat_cgroup *cg = NULL;
	struct oci_resources *res;
	moat_error err = MOAT_ERROR_INIT;
	uint32_t ids[CG_DEV_MAX_ATTACHED], first;
	char path[PATH_MAX];
	int fd;

	REAL_OR_SKIP();
	moat_cgroup_set_fsroot(UNIFIED);
	snprintf(path, sizeof(path), "/%s-e2e", R.name);
	assert_ok(moat_cgroup_create(path, NULL, NULL, 0, &cg, &err), &err);
	assert_int_equal(moat_cgroup_layout(cg), MOAT_CGROUP_V2);
	fd = open(R.cg_e2e, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(attached(fd, ids), 1);
	first = ids[0];
	opens_in(fd, "/dev/null", O_RDWR, true);
	opens_in(fd, "c1_100", O_RDONLY, false);

	res = parse_res(only_100);
	assert_ok(moat_cgroup_update(cg, res, NULL, 0, &err), &err);
	oci_resources_free(res);
	assert_int_equal(attached(fd, ids), 1);
	assert_int_not_equal(ids[0], first);
	opens_in(fd, "c1_100", O_RDONLY, true);
	opens_in(fd, "c1_100", O_WRONLY, false);
	/* an update without devices leaves the filter */
	res = parse_res("{\"pids\": {\"limit\": 10}}");
	first = ids[0];
	if (moat_cgroup_update(cg, res, NULL, 0, &err) ==
	    0) /* no pids controller on this cgroup2 */
		fail_msg("pids.limit applied without a pids controller");
	moat_error_clear(&err);
	oci_resources_free(res);
	assert_int_equal(attached(fd, ids), 1);
	assert_int_equal(ids[0], first);
	close(fd);

	assert_ok(moat_cgroup_destroy(cg, &err), &err);
	moat_cgroup_free(cg);
	assert_int_equal(access(R.cg_e2e, F_OK), -1);
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decides_defaults),
		cmocka_unit_test(test_decides_allow),
		cmocka_unit_test(test_decides_last_match),
		cmocka_unit_test(test_decides_wildcards),
		cmocka_unit_test(test_decides_type_all),
		cmocka_unit_test(test_decides_listed),
		cmocka_unit_test(test_refuses_bad_listed),
		cmocka_unit_test(test_refuses_bad_rules),
		cmocka_unit_test(test_verifier_reason),
		cmocka_unit_test_teardown(test_wiring_v2_create, fake_teardown),
		cmocka_unit_test_teardown(test_wiring_v2_update, fake_teardown),
		cmocka_unit_test_teardown(test_wiring_v2_listed, fake_teardown),
		cmocka_unit_test_teardown(test_wiring_hybrid_no_devices, fake_teardown),
		cmocka_unit_test_teardown(test_wiring_hybrid_v1_devices, fake_teardown),
		cmocka_unit_test_teardown(test_wiring_v1_no_devices, fake_teardown),
		cmocka_unit_test_teardown(test_wiring_failures, fake_teardown),
		cmocka_unit_test_setup_teardown(test_real_default_deny, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_allow_rule, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_listed, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_deny_after_allow, real_setup,
						real_teardown),
		cmocka_unit_test_setup_teardown(test_real_wildcards, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_type_all, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_read_only, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_mknod_needs_m, real_setup, real_teardown),
		cmocka_unit_test_setup_teardown(test_real_update_replaces, real_setup,
						real_teardown),
		cmocka_unit_test_setup_teardown(test_real_update_keeps_foreign, real_setup,
						real_teardown),
		cmocka_unit_test_setup_teardown(test_real_pure_v2_cgroup, real_setup,
						real_teardown),
	};

	return cmocka_run_group_tests_name("cgroup-devices", tests, NULL, NULL);
}
