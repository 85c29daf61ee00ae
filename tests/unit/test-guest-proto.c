/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the host/guest wire protocol (src/proto/proto.c).
 *   - Every message round-trips through the encoder and decoder, with every field set and with
 *     none of the optional ones; one frame is checked byte for byte to pin the format.
 *   - Frames arrive in pieces: every prefix asks for more, and frames back to back decode one
 *     after the other.
 *   - Every rejection the decoder makes, on frames built by hand, with the message it gives and
 *     whether the stream can go on; the encoder refuses the same things before sending.
 *   - Hostile input: every truncation of a real START, random byte flips and random frames
 *     decode or fail cleanly (run under ASan/UBSan to make that mean something).
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"
#include "utils.h"

/* ---- building frames by hand ----------------------------------------------------------------- */

static void put(struct moat_buf *b, uint64_t v, size_t width)
{
	uint8_t tmp[8];

	for (size_t i = 0; i < width; i++, v >>= 8)
		tmp[i] = (uint8_t)v;
	moat_buf_append(b, tmp, width);
}

static void tlv(struct moat_buf *b, uint16_t tag, const void *v, size_t len)
{
	put(b, tag, 2);
	put(b, len, 4);
	moat_buf_append(b, v, len);
}

static void tlv_int(struct moat_buf *b, uint16_t tag, uint64_t v, size_t width)
{
	put(b, tag, 2);
	put(b, width, 4);
	put(b, v, width);
}

static void tlv_str(struct moat_buf *b, uint16_t tag, const char *s)
{
	tlv(b, tag, s, strlen(s));
}

static void tlv_buf(struct moat_buf *b, uint16_t tag, const struct moat_buf *inner)
{
	tlv(b, tag, inner->data, inner->len);
}

/* A frame: header, then the payload given. */
static void frame(struct moat_buf *out, uint16_t type, uint32_t id, const struct moat_buf *payload)
{
	put(out, payload ? payload->len : 0, 4);
	put(out, type, 2);
	put(out, id, 4);
	if (payload)
		moat_buf_append(out, payload->data, payload->len);
}

/* The fields of the smallest valid process spec. */
static void proc_min(struct moat_buf *p)
{
	tlv_str(p, 1, "sh");
	tlv_str(p, 3, "/");
	tlv_int(p, 4, 0, 4);
	tlv_int(p, 5, 0, 4);
}

/* A START frame whose process is proc_min plus extra process fields, and extra START fields. */
static void start_frame(struct moat_buf *out, const struct moat_buf *extra_proc,
			const struct moat_buf *extra_start)
{
	struct moat_buf proc = { 0 }, payload = { 0 };

	proc_min(&proc);
	if (extra_proc)
		moat_buf_append(&proc, extra_proc->data, extra_proc->len);
	tlv_buf(&payload, 1, &proc);
	if (extra_start)
		moat_buf_append(&payload, extra_start->data, extra_start->len);
	frame(out, MOAT_MSG_START, 1, &payload);
	moat_buf_free(&proc);
	moat_buf_free(&payload);
}

/* Decode buf expecting a refusal whose message contains want; skippable says whether the
 * stream may go on (used != 0, and then it is the whole frame). */
static void expect_reject_(enum moat_proto_peer from, const struct moat_buf *b, const char *want,
			   bool skippable, const char *file, int line)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_msg m;
	size_t used = 99;
	int r;

	r = moat_proto_decode(from, b->data, b->len, &used, &m, &err);
	if (r >= 0)
		_fail(file, line);
	if (err.msg == NULL || strstr(err.msg, want) == NULL) {
		print_error("%s:%d: error \"%s\" does not contain \"%s\"\n", file, line,
			    err.msg ? err.msg : "(none)", want);
		_fail(file, line);
	}
	if (skippable && used != b->len) {
		print_error("%s:%d: used %zu, frame is %zu\n", file, line, used, b->len);
		_fail(file, line);
	}
	if (!skippable && used != 0) {
		print_error("%s:%d: used %zu on a broken stream\n", file, line, used);
		_fail(file, line);
	}
	/* Nothing to clear after an error: the message is empty. */
	assert_int_equal(m.type, 0);
	moat_error_clear(&err);
}
#define expect_reject(from, b, want) expect_reject_(from, b, want, true, __FILE__, __LINE__)
#define expect_reject_fatal(from, b, want) expect_reject_(from, b, want, false, __FILE__, __LINE__)

static void decode_ok_(enum moat_proto_peer from, const struct moat_buf *b, struct moat_msg *m,
		       const char *file, int line)
{
	moat_error err = MOAT_ERROR_INIT;
	size_t used = 0;

	if (moat_proto_decode(from, b->data, b->len, &used, m, &err) != 1) {
		print_error("%s:%d: decode: %s\n", file, line, err.msg ? err.msg : "incomplete");
		_fail(file, line);
	}
	assert_int_equal(used, b->len);
}
#define decode_ok(from, b, m) decode_ok_(from, b, m, __FILE__, __LINE__)

/* Encode, decode, and hand back the decoded copy. */
static void round_trip_(enum moat_proto_peer sender, const struct moat_msg *in,
			struct moat_msg *out, const char *file, int line)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_buf b = { 0 };

	if (moat_proto_encode(sender, in, &b, &err) < 0) {
		print_error("%s:%d: encode: %s\n", file, line, err.msg);
		_fail(file, line);
	}
	decode_ok_(sender, &b, out, file, line);
	assert_int_equal(out->type, in->type);
	assert_int_equal(out->id, in->id);
	moat_buf_free(&b);
}
#define round_trip(sender, in, out) round_trip_(sender, in, out, __FILE__, __LINE__)

static void expect_encode_fails_(enum moat_proto_peer sender, const struct moat_msg *m,
				 const char *want, const char *file, int line)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_buf b = { 0 };

	moat_buf_append(&b, "xyz", 3);
	if (moat_proto_encode(sender, m, &b, &err) >= 0)
		_fail(file, line);
	if (err.msg == NULL || strstr(err.msg, want) == NULL) {
		print_error("%s:%d: error \"%s\" does not contain \"%s\"\n", file, line,
			    err.msg ? err.msg : "(none)", want);
		_fail(file, line);
	}
	/* What was in the buffer before stays, and only that. */
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "xyz", 3);
	moat_buf_free(&b);
	moat_error_clear(&err);
}
#define expect_encode_fails(sender, m, want) \
	expect_encode_fails_(sender, m, want, __FILE__, __LINE__)

/* ---- a full START, for round trips and fuzzing ---------------------------------------------- */

static char *args[] = { "/bin/sh", "-c", "echo hi; exit 3", "" };
static char *env[] = { "PATH=/usr/bin:/bin", "TERM=xterm", "EMPTY=" };
static uint32_t groups[] = { 10, 20, 65534 };
static struct moat_proto_rlimit rlimits[] = {
	{ 7 /* NOFILE */, 1024, 4096 },
	{ 3 /* STACK */, UINT64_MAX, UINT64_MAX },
};
static struct sock_filter prog[] = {
	{ 0x20, 0, 0, 0 },          /* ld [0] */
	{ 0x15, 0, 1, 83 },         /* jeq #83 (mkdir) */
	{ 0x06, 0, 0, 0x00050001 }, /* ret ERRNO(EPERM) */
	{ 0x06, 0, 0, 0x7fff0000 }, /* ret ALLOW */
};
static char *masked[] = { "/proc/kcore", "/sys/firmware" };
static char *readonly[] = { "/proc/sys" };

static struct moat_proto_mount mounts[] = {
	{ "proc", "proc", "/proc", 0xe, NULL },
	{ "tmpfs", "tmpfs", "/dev/shm", 0x6, "mode=1777,size=65536k" },
	{ "bind", "/etc/data", "/mnt/data", 0x5000 | 1, NULL },
};

static uint8_t v4[] = { 10, 88, 0, 5 }, v4_any[4], v4_gw[] = { 10, 88, 0, 1 };
static uint8_t v6[] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5 };
static uint8_t mac[] = { 0x02, 0x42, 0xac, 0x11, 0x00, 0x05 };
static struct moat_proto_ifaddr ifaddrs[] = { { v4, 4, 16 }, { v6, 16, 64 } };
static struct moat_proto_route routes[] = {
	{ .dst = v4_any, .dst_bytes = 4, .dst_len = 0, .gateway = v4_gw, .gateway_len = 4 },
	{ .dst = v6, .dst_bytes = 16, .dst_len = 48, .has_priority = true, .priority = 1024 },
};
static struct moat_proto_interface interfaces[] = { {
	.name = "eth0",
	.mac = mac,
	.mac_len = 6,
	.mtu = 1500,
	.addresses = ifaddrs,
	.n_addresses = 2,
	.routes = routes,
	.n_routes = 2,
} };

/* START's seed: any 32 bytes */
static uint8_t seed[MOAT_PROTO_SEED_SIZE] = { 0x5e, 0xed, [31] = 0x42 };

static struct moat_msg full_start(void)
{
	struct moat_msg m = { .type = MOAT_MSG_START, .id = 1 };
	struct moat_proto_process *p = &m.u.start.process;

	p->args = args;
	p->n_args = MOAT_ARRAY_SIZE(args);
	p->env = env;
	p->n_env = MOAT_ARRAY_SIZE(env);
	p->cwd = "/work dir";
	p->uid = 1000;
	p->gid = 1001;
	p->groups = groups;
	p->n_groups = MOAT_ARRAY_SIZE(groups);
	p->has_umask = true;
	p->umask = 027;
	p->cap_bounding = 0x1ffffffffffULL;
	p->cap_effective = 1ULL << 10;
	p->cap_inheritable = 1ULL << 40;
	p->cap_permitted = (1ULL << 10) | (1ULL << 40);
	p->cap_ambient = 1ULL << 63;
	p->rlimits = rlimits;
	p->n_rlimits = MOAT_ARRAY_SIZE(rlimits);
	p->no_new_privs = true;
	p->terminal = true;
	p->seccomp = prog;
	p->n_seccomp = MOAT_ARRAY_SIZE(prog);
	p->has_seccomp_flags = true;
	p->seccomp_flags = 2;
	m.u.start.mounts = mounts;
	m.u.start.n_mounts = MOAT_ARRAY_SIZE(mounts);
	m.u.start.hostname = "box";
	m.u.start.masked = masked;
	m.u.start.n_masked = MOAT_ARRAY_SIZE(masked);
	m.u.start.readonly = readonly;
	m.u.start.n_readonly = MOAT_ARRAY_SIZE(readonly);
	m.u.start.root_readonly = true;
	m.u.start.has_winsize = true;
	m.u.start.winsize.rows = 24;
	m.u.start.winsize.cols = 80;
	m.u.start.namespaces = MOAT_PROTO_NS_PID | MOAT_PROTO_NS_CGROUP;
	m.u.start.interfaces = interfaces;
	m.u.start.n_interfaces = MOAT_ARRAY_SIZE(interfaces);
	m.u.start.seed = seed;
	m.u.start.seed_len = sizeof(seed);
	m.u.start.has_resources = true;
	m.u.start.resources = (struct moat_proto_resources){ .has_pids_limit = true,
							     .pids_limit = 1024,
							     .has_cpu_quota = true,
							     .cpu_quota = 20000,
							     .has_cpu_period = true,
							     .cpu_period = 100000 };
	return m;
}

static void assert_process_equal(const struct moat_proto_process *a,
				 const struct moat_proto_process *b)
{
	assert_int_equal(a->n_args, b->n_args);
	for (size_t i = 0; i < a->n_args; i++)
		assert_string_equal(a->args[i], b->args[i]);
	assert_int_equal(a->n_env, b->n_env);
	for (size_t i = 0; i < a->n_env; i++)
		assert_string_equal(a->env[i], b->env[i]);
	assert_string_equal(a->cwd, b->cwd);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_int_equal(a->n_groups, b->n_groups);
	if (a->n_groups)
		assert_memory_equal(a->groups, b->groups, a->n_groups * sizeof(uint32_t));
	assert_int_equal(a->has_umask, b->has_umask);
	assert_int_equal(a->umask, b->umask);
	assert_true(a->cap_bounding == b->cap_bounding);
	assert_true(a->cap_effective == b->cap_effective);
	assert_true(a->cap_inheritable == b->cap_inheritable);
	assert_true(a->cap_permitted == b->cap_permitted);
	assert_true(a->cap_ambient == b->cap_ambient);
	assert_int_equal(a->n_rlimits, b->n_rlimits);
	for (size_t i = 0; i < a->n_rlimits; i++) {
		assert_int_equal(a->rlimits[i].type, b->rlimits[i].type);
		assert_true(a->rlimits[i].soft == b->rlimits[i].soft);
		assert_true(a->rlimits[i].hard == b->rlimits[i].hard);
	}
	assert_int_equal(a->no_new_privs, b->no_new_privs);
	assert_int_equal(a->terminal, b->terminal);
	assert_int_equal(a->n_seccomp, b->n_seccomp);
	for (size_t i = 0; i < a->n_seccomp; i++) {
		assert_int_equal(a->seccomp[i].code, b->seccomp[i].code);
		assert_int_equal(a->seccomp[i].jt, b->seccomp[i].jt);
		assert_int_equal(a->seccomp[i].jf, b->seccomp[i].jf);
		assert_int_equal(a->seccomp[i].k, b->seccomp[i].k);
	}
	assert_int_equal(a->has_seccomp_flags, b->has_seccomp_flags);
	assert_int_equal(a->seccomp_flags, b->seccomp_flags);
}

static void encode_ok(enum moat_proto_peer sender, const struct moat_msg *m, struct moat_buf *b)
{
	moat_error err = MOAT_ERROR_INIT;

	if (moat_proto_encode(sender, m, b, &err) < 0)
		fail_msg("encode: %s", err.msg);
}

/* ---- round trips ----------------------------------------------------------------------------- */

static void test_round_trip_start_full(void **state)
{
	struct moat_msg in = full_start(), out;

	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_process_equal(&in.u.start.process, &out.u.start.process);
	assert_int_equal(out.u.start.n_mounts, MOAT_ARRAY_SIZE(mounts));
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(mounts); i++) {
		assert_string_equal(out.u.start.mounts[i].type, mounts[i].type);
		assert_string_equal(out.u.start.mounts[i].source, mounts[i].source);
		assert_string_equal(out.u.start.mounts[i].dest, mounts[i].dest);
		assert_true(out.u.start.mounts[i].flags == mounts[i].flags);
		if (mounts[i].data)
			assert_string_equal(out.u.start.mounts[i].data, mounts[i].data);
		else
			assert_null(out.u.start.mounts[i].data);
	}
	assert_string_equal(out.u.start.hostname, "box");
	assert_int_equal(out.u.start.n_masked, MOAT_ARRAY_SIZE(masked));
	assert_string_equal(out.u.start.masked[1], "/sys/firmware");
	assert_int_equal(out.u.start.n_readonly, 1);
	assert_string_equal(out.u.start.readonly[0], "/proc/sys");
	assert_true(out.u.start.root_readonly);
	assert_true(out.u.start.has_winsize);
	assert_int_equal(out.u.start.winsize.rows, 24);
	assert_int_equal(out.u.start.winsize.cols, 80);
	assert_int_equal(out.u.start.namespaces, MOAT_PROTO_NS_PID | MOAT_PROTO_NS_CGROUP);
	assert_true(out.u.start.has_resources);
	assert_true(out.u.start.resources.has_pids_limit);
	assert_int_equal(out.u.start.resources.pids_limit, 1024);
	assert_true(out.u.start.resources.has_cpu_quota);
	assert_int_equal(out.u.start.resources.cpu_quota, 20000);
	assert_true(out.u.start.resources.has_cpu_period);
	assert_int_equal(out.u.start.resources.cpu_period, 100000);
	assert_int_equal(out.u.start.n_interfaces, 1);
	assert_string_equal(out.u.start.interfaces[0].name, "eth0");
	assert_memory_equal(out.u.start.interfaces[0].mac, mac, 6);
	assert_int_equal(out.u.start.interfaces[0].mtu, 1500);
	assert_int_equal(out.u.start.interfaces[0].n_addresses, 2);
	assert_memory_equal(out.u.start.interfaces[0].addresses[1].address, v6, 16);
	assert_int_equal(out.u.start.interfaces[0].addresses[1].prefix, 64);
	assert_int_equal(out.u.start.interfaces[0].n_routes, 2);
	assert_int_equal(out.u.start.interfaces[0].routes[0].dst_len, 0);
	assert_memory_equal(out.u.start.interfaces[0].routes[0].gateway, v4_gw, 4);
	assert_null(out.u.start.interfaces[0].routes[1].gateway);
	assert_int_equal(out.u.start.interfaces[0].routes[1].priority, 1024);
	assert_int_equal(out.u.start.seed_len, MOAT_PROTO_SEED_SIZE);
	assert_memory_equal(out.u.start.seed, seed, MOAT_PROTO_SEED_SIZE);
	moat_msg_clear(&out);
}

static void test_round_trip_start_minimal(void **state)
{
	static char *a[] = { "true" };
	struct moat_msg in = { .type = MOAT_MSG_START, .id = 42 }, out;

	in.u.start.process.args = a;
	in.u.start.process.n_args = 1;
	in.u.start.process.cwd = "/";
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_process_equal(&in.u.start.process, &out.u.start.process);
	assert_null(out.u.start.process.env);
	assert_null(out.u.start.process.seccomp);
	assert_false(out.u.start.process.has_umask);
	assert_int_equal(out.u.start.n_mounts, 0);
	assert_null(out.u.start.hostname);
	assert_false(out.u.start.root_readonly);
	assert_false(out.u.start.has_winsize);
	assert_int_equal(out.u.start.namespaces, 0);
	assert_false(out.u.start.has_resources);
	assert_null(out.u.start.seed);
	moat_msg_clear(&out);
}

static void test_round_trip_exec(void **state)
{
	struct moat_msg start = full_start(), in = { .type = MOAT_MSG_EXEC, .id = 0xfffffffe }, out;

	in.u.exec.process = start.u.start.process;
	in.u.exec.process.terminal = false;
	in.u.exec.has_winsize = true;
	in.u.exec.winsize.rows = 0;
	in.u.exec.winsize.cols = 65535;
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_process_equal(&in.u.exec.process, &out.u.exec.process);
	assert_true(out.u.exec.has_winsize);
	assert_int_equal(out.u.exec.winsize.rows, 0);
	assert_int_equal(out.u.exec.winsize.cols, 65535);
	moat_msg_clear(&out);
}

static void test_round_trip_small_messages(void **state)
{
	static uint8_t big[MOAT_PROTO_MAX_DATA];
	struct moat_msg in, out;

	memset(big, 0xa5, sizeof(big));
	in = (struct moat_msg){ .type = MOAT_MSG_STDIN, .id = 3 };
	in.u.data.data = big;
	in.u.data.len = sizeof(big);
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_int_equal(out.u.data.len, sizeof(big));
	assert_memory_equal(out.u.data.data, big, sizeof(big));
	moat_msg_clear(&out);

	/* Empty stdin (close) has a NULL pointer when encoded, a valid one decoded. */
	in = (struct moat_msg){ .type = MOAT_MSG_STDIN, .id = 3 };
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_int_equal(out.u.data.len, 0);
	assert_non_null(out.u.data.data);
	moat_msg_clear(&out);

	in = (struct moat_msg){ .type = MOAT_MSG_SIGNAL, .id = 1, .u.signal.signo = 64 };
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_int_equal(out.u.signal.signo, 64);

	in = (struct moat_msg){ .type = MOAT_MSG_RESIZE, .id = 1 };
	in.u.resize.winsize.rows = 50;
	in.u.resize.winsize.cols = 132;
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_int_equal(out.u.resize.winsize.rows, 50);
	assert_int_equal(out.u.resize.winsize.cols, 132);

	in = (struct moat_msg){ .type = MOAT_MSG_SHUTDOWN };
	round_trip(MOAT_PEER_HOST, &in, &out);

	in = (struct moat_msg){ .type = MOAT_MSG_READY, .u.ready = { 1, "6.1.0-moat" } };
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(out.u.ready.version, MOAT_PROTO_VERSION);
	assert_string_equal(out.u.ready.release, "6.1.0-moat");
	moat_msg_clear(&out);

	in = (struct moat_msg){ .type = MOAT_MSG_STARTED, .id = 9, .u.started.pid = 4194304 };
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(out.u.started.pid, 4194304);

	in = (struct moat_msg){ .type = MOAT_MSG_OUTPUT, .id = 9 };
	in.u.data.stream = MOAT_STREAM_STDERR;
	in.u.data.data = (uint8_t *)"oops\n";
	in.u.data.len = 5;
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(out.u.data.stream, MOAT_STREAM_STDERR);
	assert_int_equal(out.u.data.len, 5);
	assert_memory_equal(out.u.data.data, "oops\n", 5);
	moat_msg_clear(&out);

	in = (struct moat_msg){ .type = MOAT_MSG_EXITED, .id = 9 };
	in.u.exited.has_status = true;
	in.u.exited.status = 0;
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_true(out.u.exited.has_status);
	assert_false(out.u.exited.has_signal);
	assert_int_equal(moat_proto_exit_code(&out.u.exited), 0);

	in = (struct moat_msg){ .type = MOAT_MSG_EXITED, .id = 9 };
	in.u.exited.has_signal = true;
	in.u.exited.signal = 9;
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(moat_proto_exit_code(&out.u.exited), 137);

	in = (struct moat_msg){ .type = MOAT_MSG_ERROR, .id = 0 };
	in.u.error.message = "mount proc on /proc: Permission denied";
	in.u.error.has_errno = true;
	in.u.error.errnum = EACCES;
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_string_equal(out.u.error.message, in.u.error.message);
	assert_true(out.u.error.has_errno);
	assert_int_equal(out.u.error.errnum, EACCES);
	moat_msg_clear(&out);

	in = (struct moat_msg){ .type = MOAT_MSG_CREDIT, .id = 2, .u.credit.bytes = 4096 };
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(out.u.credit.bytes, 4096);
}

/* CONTAINER: START's container fields and its name; the fields only START has are refused;
 * EXEC's container; FREEZE and its answer, FROZEN. */
static void test_round_trip_pod_messages(void **state)
{
	struct moat_msg start = full_start(), in = start, out;
	struct moat_buf b = { 0 }, p = { 0 };

	in.type = MOAT_MSG_CONTAINER;
	in.id = 7;
	in.u.start.interfaces = NULL;
	in.u.start.n_interfaces = 0;
	in.u.start.namespaces = MOAT_PROTO_NS_PID | MOAT_PROTO_NS_IPC | MOAT_PROTO_NS_UTS;
	in.u.start.resources.has_memory_limit = true;
	in.u.start.resources.memory_limit = 64ULL << 20;
	in.u.start.name = "0123abcd";
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_string_equal(out.u.start.name, "0123abcd");
	assert_int_equal(out.u.start.namespaces, in.u.start.namespaces);
	assert_true(out.u.start.resources.has_memory_limit);
	assert_int_equal(out.u.start.resources.memory_limit, 64ULL << 20);
	assert_int_equal(out.u.start.n_mounts, in.u.start.n_mounts);
	assert_process_equal(&in.u.start.process, &out.u.start.process);
	moat_msg_clear(&out);

	in = (struct moat_msg){ .type = MOAT_MSG_EXEC, .id = 8 };
	in.u.exec.process = start.u.start.process;
	in.u.exec.process.terminal = false;
	in.u.exec.container = 7;
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_int_equal(out.u.exec.container, 7);
	moat_msg_clear(&out);

	in = (struct moat_msg){ .type = MOAT_MSG_FREEZE, .id = 7, .u.freeze.frozen = false };
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_false(out.u.freeze.frozen);
	in.u.freeze.frozen = true;
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_true(out.u.freeze.frozen);
	in.type = MOAT_MSG_FROZEN;
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_true(out.u.freeze.frozen);

	/* UPDATE: the limits (a pod member's memory among them); no limit is an empty
	 * RESOURCES; UPDATED answers */
	in = (struct moat_msg){ .type = MOAT_MSG_UPDATE, .id = 1 };
	in.u.update.resources.has_pids_limit = true;
	in.u.update.resources.pids_limit = 32;
	in.u.update.resources.has_cpu_quota = in.u.update.resources.has_cpu_period = true;
	in.u.update.resources.cpu_quota = 50000;
	in.u.update.resources.cpu_period = 100000;
	in.u.update.resources.has_memory_limit = true;
	in.u.update.resources.memory_limit = 64ULL << 20;
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_true(out.u.update.resources.has_pids_limit);
	assert_int_equal(out.u.update.resources.pids_limit, 32);
	assert_int_equal(out.u.update.resources.cpu_quota, 50000);
	assert_int_equal(out.u.update.resources.cpu_period, 100000);
	assert_true(out.u.update.resources.has_memory_limit);
	assert_int_equal(out.u.update.resources.memory_limit, 64ULL << 20);
	in.u.update.resources = (struct moat_proto_resources){ 0 };
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_false(out.u.update.resources.has_pids_limit ||
		     out.u.update.resources.has_cpu_quota ||
		     out.u.update.resources.has_memory_limit);
	in = (struct moat_msg){ .type = MOAT_MSG_UPDATED, .id = 1 };
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(out.type, MOAT_MSG_UPDATED);

#define CONTAINER_FRAME(extra)                                 \
	do {                                                   \
		b.len = p.len = 0;                             \
		proc_min(&p);                                  \
		{                                              \
			struct moat_buf pl = { 0 };            \
			tlv_buf(&pl, 1, &p);                   \
			extra;                                 \
			frame(&b, MOAT_MSG_CONTAINER, 7, &pl); \
			moat_buf_free(&pl);                    \
		}                                              \
	} while (0)

	CONTAINER_FRAME((void)0);
	expect_reject(MOAT_PEER_HOST, &b, "CONTAINER: name: missing");
	CONTAINER_FRAME(tlv_str(&pl, 10, ".."));
	expect_reject(MOAT_PEER_HOST, &b, "CONTAINER: name: not a file name");
	CONTAINER_FRAME(tlv_str(&pl, 10, "a/b"));
	expect_reject(MOAT_PEER_HOST, &b, "CONTAINER: name: not a file name");
	CONTAINER_FRAME(tlv_str(&pl, 10, "a\nb"));
	expect_reject(MOAT_PEER_HOST, &b, "CONTAINER: name: contains control character 0x0a");
	CONTAINER_FRAME((tlv_str(&pl, 10, "x"), tlv_int(&pl, 8, 1, 8)));
	expect_reject(MOAT_PEER_HOST, &b, "CONTAINER: unknown field tag 8");
	CONTAINER_FRAME(tlv_str(&pl, 10, "x"));
	expect_reject(MOAT_PEER_GUEST, &b, "is not one the guest sends");
	/* START takes no name */
	b.len = p.len = 0;
	tlv_str(&p, 10, "x");
	start_frame(&b, NULL, &p);
	expect_reject(MOAT_PEER_HOST, &b, "START: unknown field tag 10");
	b.len = p.len = 0;
	frame(&b, MOAT_MSG_FREEZE, 7, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "FREEZE: frozen: missing");
	b.len = p.len = 0;
	tlv_int(&p, 1, 2, 1);
	frame(&b, MOAT_MSG_FREEZE, 7, &p);
	expect_reject(MOAT_PEER_HOST, &b, "FREEZE: frozen: value 2 out of range 0..1");
	b.len = p.len = 0;
	tlv_int(&p, 1, 1, 1);
	frame(&b, MOAT_MSG_FROZEN, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "FROZEN: id must not be 0");
	b.len = p.len = 0;
	frame(&b, MOAT_MSG_UPDATE, 1, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "UPDATE: resources: missing");
	{
		struct moat_buf r = { 0 };

		b.len = p.len = 0;
		tlv_int(&r, 4, 10, 8); /* memory_limit */
		tlv_buf(&p, 1, &r);
		frame(&b, MOAT_MSG_UPDATE, 1, &p);
		expect_reject(MOAT_PEER_HOST, &b,
			      "UPDATE: resources.memory_limit: value 10 out of range 1048576..");
		b.len = r.len = 0;
		frame(&b, MOAT_MSG_UPDATE, 1, NULL);
		expect_reject(MOAT_PEER_GUEST, &b, "is not one the guest sends");
		b.len = 0;
		frame(&b, MOAT_MSG_UPDATED, 1, NULL);
		expect_reject(MOAT_PEER_HOST, &b, "is not one the host sends");
		moat_buf_free(&r);
	}
#undef CONTAINER_FRAME
	moat_buf_free(&b);
	moat_buf_free(&p);
}

/* STATS asks what a container's cgroup in the guest counted; USAGE answers, with the peaks
 * the guest's kernel may not have; a USAGE without a required count, or sent the wrong way,
 * is refused. */
static void test_stats_and_usage(void **state)
{
	struct moat_msg in = { .type = MOAT_MSG_STATS, .id = 3 }, out;
	struct moat_buf b = { 0 }, p = { 0 };

	(void)state;
	round_trip(MOAT_PEER_HOST, &in, &out);
	assert_int_equal(out.type, MOAT_MSG_STATS);
	assert_int_equal(out.id, 3);
	in = (struct moat_msg){ .type = MOAT_MSG_USAGE, .id = 3 };
	in.u.usage = (struct moat_msg_usage){ .oom_kills = 2,
					      .pids_max = 517,
					      .has_pids_peak = true,
					      .pids_peak = 32,
					      .has_memory_peak = true,
					      .memory_peak = UINT64_C(1) << 40,
					      .cpu_user_us = 1234567,
					      .cpu_system_us = 89 };
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_int_equal(out.u.usage.oom_kills, 2);
	assert_int_equal(out.u.usage.pids_max, 517);
	assert_true(out.u.usage.has_pids_peak && out.u.usage.has_memory_peak);
	assert_int_equal(out.u.usage.pids_peak, 32);
	assert_true(out.u.usage.memory_peak == UINT64_C(1) << 40);
	assert_int_equal(out.u.usage.cpu_user_us, 1234567);
	assert_int_equal(out.u.usage.cpu_system_us, 89);
	in.u.usage.has_pids_peak = in.u.usage.has_memory_peak = false;
	round_trip(MOAT_PEER_GUEST, &in, &out);
	assert_false(out.u.usage.has_pids_peak || out.u.usage.has_memory_peak);

	frame(&b, MOAT_MSG_STATS, 0, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "STATS: id must not be 0");
	b.len = 0;
	frame(&b, MOAT_MSG_STATS, 3, NULL);
	expect_reject(MOAT_PEER_GUEST, &b, "is not one the guest sends");
	b.len = 0;
	tlv_int(&p, 1, 0, 8);
	tlv_int(&p, 2, 0, 8);
	tlv_int(&p, 5, 0, 8);
	frame(&b, MOAT_MSG_USAGE, 3, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "USAGE: cpu_system_us: missing");
	expect_reject(MOAT_PEER_HOST, &b, "is not one the host sends");
	/* a count the host could not keep in an int64_t */
	tlv_int(&p, 6, 0, 8);
	tlv_int(&p, 3, UINT64_MAX, 8);
	b.len = 0;
	frame(&b, MOAT_MSG_USAGE, 3, &p);
	expect_reject(MOAT_PEER_GUEST, &b,
		      "USAGE: pids_peak: value 18446744073709551615 out of range");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

/* The format on the wire, byte for byte, as proto.h describes it. */
/* The agent's spliced OUTPUT frames: the prefix and the data are the frame the encoder makes,
 * for the smallest, an odd and the largest length, on either stream. */
static void test_output_prefix(void **state)
{
	static uint8_t data[MOAT_PROTO_MAX_DATA];
	const uint32_t lens[] = { 1, 4097, MOAT_PROTO_MAX_DATA };
	uint8_t prefix[MOAT_PROTO_OUTPUT_PREFIX];
	struct moat_buf b = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (uint8_t stream = MOAT_STREAM_STDOUT; stream <= MOAT_STREAM_STDERR; stream++) {
			struct moat_msg m = { .type = MOAT_MSG_OUTPUT, .id = 0x01020304 };

			m.u.data.stream = stream;
			m.u.data.data = data;
			m.u.data.len = lens[i];
			b.len = 0;
			encode_ok(MOAT_PEER_GUEST, &m, &b);
			moat_proto_output_prefix(prefix, m.id, stream, lens[i]);
			assert_int_equal(b.len, sizeof(prefix) + lens[i]);
			assert_memory_equal(b.data, prefix, sizeof(prefix));
			assert_memory_equal(b.data + sizeof(prefix), data, lens[i]);
		}
	moat_buf_free(&b);
}

static void test_wire_format_pinned(void **state)
{
	static const uint8_t want[] = {
		0x0a, 0x00, 0x00, 0x00, /* payload length 10 */
		0x04, 0x00,             /* SIGNAL */
		0x07, 0x00, 0x00, 0x00, /* id 7 */
		0x01, 0x00,             /* tag 1: signo */
		0x04, 0x00, 0x00, 0x00, /* length 4 */
		0x09, 0x00, 0x00, 0x00, /* 9 */
	};
	static const uint8_t want_resize[] = {
		0x16, 0x00, 0x00, 0x00, 0x05, 0x00, 0x02, 0x00,
		0x00, 0x00,                                     /* 22 bytes, RESIZE, id 2 */
		0x01, 0x00, 0x10, 0x00, 0x00, 0x00,             /* tag 1: winsize, 16 bytes */
		0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x18, 0x00, /* rows 24 */
		0x02, 0x00, 0x02, 0x00, 0x00, 0x00, 0x50, 0x00, /* cols 80 */
	};
	struct moat_msg m = { .type = MOAT_MSG_SIGNAL, .id = 7, .u.signal.signo = 9 };
	struct moat_buf b = { 0 };

	encode_ok(MOAT_PEER_HOST, &m, &b);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	b.len = 0;
	m = (struct moat_msg){ .type = MOAT_MSG_RESIZE, .id = 2 };
	m.u.resize.winsize.rows = 24;
	m.u.resize.winsize.cols = 80;
	encode_ok(MOAT_PEER_HOST, &m, &b);
	assert_int_equal(b.len, sizeof(want_resize));
	assert_memory_equal(b.data, want_resize, sizeof(want_resize));
	moat_buf_free(&b);
	assert_string_equal(moat_proto_type_name(MOAT_MSG_START), "START");
	assert_string_equal(moat_proto_type_name(MOAT_MSG_OUTPUT), "DATA");
	assert_null(moat_proto_type_name(0x7f));
}

/* Frames arrive in pieces, and several in one read. */
static void test_partial_and_back_to_back(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_msg in = full_start(), m;
	struct moat_buf b = { 0 };
	size_t used, one;

	encode_ok(MOAT_PEER_HOST, &in, &b);
	one = b.len;
	for (size_t len = 0; len < one; len++) {
		assert_int_equal(moat_proto_decode(MOAT_PEER_HOST, b.data, len, &used, &m, &err),
				 0);
		assert_int_equal(used, 0);
	}
	in = (struct moat_msg){ .type = MOAT_MSG_SIGNAL, .id = 1, .u.signal.signo = 15 };
	encode_ok(MOAT_PEER_HOST, &in, &b);
	assert_int_equal(moat_proto_decode(MOAT_PEER_HOST, b.data, b.len, &used, &m, &err), 1);
	assert_int_equal(used, one);
	assert_int_equal(m.type, MOAT_MSG_START);
	moat_msg_clear(&m);
	moat_buf_consume(&b, used);
	assert_int_equal(moat_proto_decode(MOAT_PEER_HOST, b.data, b.len, &used, &m, &err), 1);
	assert_int_equal(m.type, MOAT_MSG_SIGNAL);
	assert_int_equal(m.u.signal.signo, 15);
	moat_buf_consume(&b, used);
	assert_int_equal(b.len, 0);
	assert_null(err.msg);
	moat_buf_free(&b);
}

/* ---- rejections: the frame ------------------------------------------------------------------- */

static void test_reject_framing(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };

	/* Over the limit: the stream is broken, even before the payload arrives. */
	put(&b, MOAT_PROTO_MAX_PAYLOAD + 1, 4);
	put(&b, MOAT_MSG_STDIN, 2);
	put(&b, 1, 4);
	expect_reject_fatal(MOAT_PEER_HOST, &b, "over the limit");
	b.len = 0;
	put(&b, UINT32_MAX, 4);
	put(&b, MOAT_MSG_STDIN, 2);
	put(&b, 1, 4);
	expect_reject_fatal(MOAT_PEER_GUEST, &b, "payload of 4294967295 bytes");

	b.len = 0;
	frame(&b, 0x77, 1, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "unknown message type 0x77");

	b.len = 0;
	tlv_int(&p, 1, 1, 4);
	tlv_str(&p, 2, "6.1");
	frame(&b, MOAT_MSG_READY, 0, &p);
	expect_reject(MOAT_PEER_HOST, &b, "message type 0x81 (READY) is not one the host sends");
	b.len = 0;
	frame(&b, MOAT_MSG_SHUTDOWN, 0, NULL);
	expect_reject(MOAT_PEER_GUEST, &b, "(SHUTDOWN) is not one the guest sends");

	b.len = 0;
	frame(&b, MOAT_MSG_READY, 5, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "READY: id must be 0, not 5");
	b.len = 0;
	frame(&b, MOAT_MSG_SHUTDOWN, 1, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "SHUTDOWN: id must be 0");
	b.len = 0;
	p.len = 0;
	tlv_int(&p, 1, 9, 4);
	frame(&b, MOAT_MSG_SIGNAL, 0, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: id must not be 0");

	/* SHUTDOWN takes no fields. */
	b.len = 0;
	frame(&b, MOAT_MSG_SHUTDOWN, 0, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SHUTDOWN: unknown field tag 1");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

static void test_reject_tlv_structure(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };

	/* A field header cut short. */
	tlv_int(&p, 1, 9, 4);
	put(&p, 2, 2);
	put(&p, 0, 2);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: truncated field header (4 bytes left)");

	/* A value longer than what is left. */
	b.len = p.len = 0;
	put(&p, 1, 2);
	put(&p, 5, 4);
	put(&p, 9, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "field tag 1: length 5 runs past the end");
	b.len = p.len = 0;
	put(&p, 1, 2);
	put(&p, UINT32_MAX, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "length 4294967295 runs past the end (0 bytes left)");

	/* Unknown tags: refused, unless marked ignorable. */
	b.len = p.len = 0;
	tlv_int(&p, 1, 9, 4);
	tlv_int(&p, 2, 1, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: unknown field tag 2");
	b.len = p.len = 0;
	tlv_int(&p, MOAT_TAG_IGNORABLE | 2, 1, 4);
	tlv_int(&p, 1, 9, 4);
	tlv_int(&p, MOAT_TAG_IGNORABLE | 2, 1, 4);
	tlv(&p, 0xffff, "", 0);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	{
		struct moat_msg m;

		decode_ok(MOAT_PEER_HOST, &b, &m);
		assert_int_equal(m.u.signal.signo, 9);
	}
	/* A known tag with the ignorable bit is another, unknown, tag: skipped. */
	b.len = p.len = 0;
	tlv_int(&p, MOAT_TAG_IGNORABLE | 1, 9, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: signo: missing");

	/* Duplicates and missing fields. */
	b.len = p.len = 0;
	tlv_int(&p, 1, 9, 4);
	tlv_int(&p, 1, 15, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: signo: given twice");
	b.len = 0;
	frame(&b, MOAT_MSG_SIGNAL, 1, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: signo: missing");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

static void test_reject_integers(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };

	tlv_int(&p, 1, 9, 8);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "SIGNAL: signo: length 8, expected 4");
	b.len = p.len = 0;
	tlv_int(&p, 1, 0, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "signo: value 0 out of range 1..64");
	b.len = p.len = 0;
	tlv_int(&p, 1, 65, 4);
	frame(&b, MOAT_MSG_SIGNAL, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "signo: value 65 out of range 1..64");

	b.len = p.len = 0;
	tlv_int(&p, 1, 3, 1);
	tlv_str(&p, 2, "x");
	frame(&b, MOAT_MSG_OUTPUT, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "DATA: stream: value 3 out of range 1..2");

	b.len = p.len = 0;
	tlv_int(&p, 1, 0, 4);
	frame(&b, MOAT_MSG_STARTED, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "STARTED: pid: value 0 out of range");
	b.len = p.len = 0;
	tlv_int(&p, 1, 0, 4);
	frame(&b, MOAT_MSG_CREDIT, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "CREDIT: bytes: value 0 out of range");
	b.len = p.len = 0;
	tlv_int(&p, 1, MOAT_PROTO_STDIN_WINDOW + 1, 4);
	frame(&b, MOAT_MSG_CREDIT, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "CREDIT: bytes: value 262145 out of range");

	/* Booleans are 0 or 1. */
	b.len = p.len = 0;
	tlv_int(&p, 4, 2, 1);
	start_frame(&b, NULL, &p);
	expect_reject(MOAT_PEER_HOST, &b, "START: root_readonly: value 2 out of range 0..1");
	b.len = p.len = 0;
	tlv_int(&p, 14, 1, 4);
	start_frame(&b, &p, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "START: process.no_new_privs: length 4, expected 1");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

static void test_reject_exited(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };

	tlv_int(&p, 1, 1, 4);
	tlv_int(&p, 2, 9, 4);
	frame(&b, MOAT_MSG_EXITED, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "EXITED: needs exactly one of status and signal");
	b.len = 0;
	frame(&b, MOAT_MSG_EXITED, 1, NULL);
	expect_reject(MOAT_PEER_GUEST, &b, "EXITED: needs exactly one");
	b.len = p.len = 0;
	tlv_int(&p, 1, 256, 4);
	frame(&b, MOAT_MSG_EXITED, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "EXITED: status: value 256 out of range 0..255");
	b.len = p.len = 0;
	tlv_int(&p, 2, 0, 4);
	frame(&b, MOAT_MSG_EXITED, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "EXITED: signal: value 0 out of range 1..64");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

/* What a hostile guest could put in front of a person reading the host's log. */
static void test_reject_text(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };
	char big[MOAT_PROTO_MAX_MESSAGE + 2];

	tlv_str(&p, 1, "all good\x1b[2J");
	frame(&b, MOAT_MSG_ERROR, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "ERROR: message: contains control character 0x1b");
	b.len = p.len = 0;
	tlv_str(&p, 1, "two\nlines");
	frame(&b, MOAT_MSG_ERROR, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "control character 0x0a");
	b.len = p.len = 0;
	tlv(&p, 1, "nul\0x", 5);
	frame(&b, MOAT_MSG_ERROR, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "ERROR: message: contains a NUL byte");
	b.len = p.len = 0;
	tlv_str(&p, 1, "");
	frame(&b, MOAT_MSG_ERROR, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "ERROR: message: length 0 out of range 1..1024");
	b.len = p.len = 0;
	memset(big, 'e', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tlv_str(&p, 1, big);
	frame(&b, MOAT_MSG_ERROR, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "ERROR: message: length 1025 out of range");
	b.len = p.len = 0;
	tlv_int(&p, 1, 1, 4);
	tlv_str(&p, 2, "6.1\x07");
	frame(&b, MOAT_MSG_READY, 0, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "READY: release: contains control character 0x07");
	b.len = p.len = 0;
	tlv_str(&p, 1, "x");
	tlv_int(&p, 2, 4096, 4);
	frame(&b, MOAT_MSG_ERROR, 3, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "ERROR: errno: value 4096 out of range 1..4095");
	/* UTF-8 in a path is text. */
	b.len = p.len = 0;
	tlv_str(&p, 1, "exec /bin/caf\xc3\xa9: No such file or directory");
	frame(&b, MOAT_MSG_ERROR, 3, &p);
	{
		struct moat_msg m;

		decode_ok(MOAT_PEER_GUEST, &b, &m);
		moat_msg_clear(&m);
	}
	moat_buf_free(&b);
	moat_buf_free(&p);
}

static void test_reject_data(void **state)
{
	static uint8_t big[MOAT_PROTO_MAX_DATA + 1];
	struct moat_buf b = { 0 }, p = { 0 };

	tlv(&p, 1, big, sizeof(big));
	frame(&b, MOAT_MSG_STDIN, 1, &p);
	expect_reject(MOAT_PEER_HOST, &b, "DATA: bytes: length 65537 out of range 0..65536");
	b.len = p.len = 0;
	tlv(&p, 2, big, 10);
	frame(&b, MOAT_MSG_OUTPUT, 1, &p);
	expect_reject(MOAT_PEER_GUEST, &b, "DATA: stream: missing");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

/* ---- rejections: the process spec and START ---------------------------------------------------- */

/* Each row: process fields added to proc_min (or, for replace rows, instead of it), and the
 * error expected. */
static void test_reject_process_fields(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };

	/* Missing required fields, each in turn. */
	static const struct {
		uint16_t drop;
		const char *want;
	} missing[] = {
		{ 1, "START: process.args: missing" },
		{ 3, "START: process.cwd: missing" },
		{ 4, "START: process.uid: missing" },
		{ 5, "START: process.gid: missing" },
	};
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(missing); i++) {
		struct moat_buf proc = { 0 }, payload = { 0 };

		if (missing[i].drop != 1)
			tlv_str(&proc, 1, "sh");
		if (missing[i].drop != 3)
			tlv_str(&proc, 3, "/");
		if (missing[i].drop != 4)
			tlv_int(&proc, 4, 0, 4);
		if (missing[i].drop != 5)
			tlv_int(&proc, 5, 0, 4);
		tlv_buf(&payload, 1, &proc);
		b.len = 0;
		frame(&b, MOAT_MSG_START, 1, &payload);
		expect_reject(MOAT_PEER_HOST, &b, missing[i].want);
		moat_buf_free(&proc);
		moat_buf_free(&payload);
	}
	b.len = 0;
	frame(&b, MOAT_MSG_START, 1, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "START: process: missing");

#define REJECT_PROC(build, want)                         \
	do {                                             \
		b.len = p.len = 0;                       \
		build;                                   \
		start_frame(&b, &p, NULL);               \
		expect_reject(MOAT_PEER_HOST, &b, want); \
	} while (0)

	REJECT_PROC(tlv_str(&p, 3, "/again"), "START: process.cwd: given twice");
	REJECT_PROC(tlv(&p, 1, "a\0b", 3), "START: process.args[1]: contains a NUL byte");
	REJECT_PROC(tlv_str(&p, 2, "NOEQUALS"),
		    "START: process.env[0]: not of the form NAME=value");
	REJECT_PROC(tlv_str(&p, 2, "=value"), "START: process.env[0]: not of the form NAME=value");
	REJECT_PROC((tlv_str(&p, 2, "A=1"), tlv_str(&p, 2, "=xy")),
		    "START: process.env[1]: not of the form NAME=value");
	REJECT_PROC(tlv_str(&p, 2, "X"), "START: process.env[0]: length 1 out of range 2..");
	REJECT_PROC(tlv_int(&p, 7, 01000, 4),
		    "START: process.umask: value 512 out of range 0..511");
	REJECT_PROC(tlv_int(&p, 8, 1, 4), "START: process.cap_bounding: length 4, expected 8");
	REJECT_PROC(tlv(&p, 6, "\1\0\0\0\2\0", 6),
		    "START: process.groups: length 6 is not a multiple of 4");
	REJECT_PROC(tlv(&p, 16, "\6\0\0\0\0\0\xff\x7f\0", 9),
		    "START: process.seccomp: length 9 is not a multiple of 8");
	REJECT_PROC(tlv(&p, 16, "", 0), "START: process.seccomp: 0 entries, expected 1..4096");
	REJECT_PROC(tlv_int(&p, 17, 2, 4),
		    "START: process.seccomp_flags: given without a seccomp program");
	REJECT_PROC((tlv(&p, 16, "\6\0\0\0\0\0\xff\x7f", 8), tlv_int(&p, 17, 8, 4)),
		    "START: process.seccomp_flags: unsupported bits 0x8");
	REJECT_PROC(tlv(&p, 99, "", 0), "START: process: unknown field tag 99");

	/* uid and gid -1 mean "unchanged" to the kernel. */
	{
		struct moat_buf proc = { 0 }, payload = { 0 };

		tlv_str(&proc, 1, "sh");
		tlv_str(&proc, 3, "/");
		tlv_int(&proc, 4, UINT32_MAX, 4);
		tlv_int(&proc, 5, 0, 4);
		tlv_buf(&payload, 1, &proc);
		b.len = 0;
		frame(&b, MOAT_MSG_START, 1, &payload);
		expect_reject(MOAT_PEER_HOST, &b,
			      "START: process.uid: value 4294967295 out of range");
		moat_buf_free(&proc);
		moat_buf_free(&payload);
	}
	/* A relative cwd. */
	{
		struct moat_buf proc = { 0 }, payload = { 0 };

		tlv_str(&proc, 1, "sh");
		tlv_str(&proc, 3, "tmp");
		tlv_int(&proc, 4, 0, 4);
		tlv_int(&proc, 5, 0, 4);
		tlv_buf(&payload, 1, &proc);
		b.len = 0;
		frame(&b, MOAT_MSG_START, 1, &payload);
		expect_reject(MOAT_PEER_HOST, &b, "START: process.cwd: not an absolute path");
		moat_buf_free(&proc);
		moat_buf_free(&payload);
	}
	moat_buf_free(&b);
	moat_buf_free(&p);
}

static void rlimit(struct moat_buf *p, uint64_t type, uint64_t soft, uint64_t hard)
{
	struct moat_buf r = { 0 };

	tlv_int(&r, 1, type, 4);
	tlv_int(&r, 2, soft, 8);
	tlv_int(&r, 3, hard, 8);
	tlv_buf(p, 13, &r);
	moat_buf_free(&r);
}

static void test_reject_rlimits(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 }, r = { 0 };

	REJECT_PROC((rlimit(&p, 7, 1, 2), rlimit(&p, 7, 1, 2)),
		    "START: process.rlimit[1]: resource 7 given twice");
	REJECT_PROC(rlimit(&p, 16, 1, 2),
		    "START: process.rlimit[0].type: value 16 out of range 0..15");
	REJECT_PROC((rlimit(&p, 1, 1, 2), rlimit(&p, 2, 3, 2)),
		    "START: process.rlimit[1]: soft limit 3 is above hard limit 2");
	REJECT_PROC((tlv_int(&r, 1, 7, 4), tlv_int(&r, 2, 1, 8), tlv_buf(&p, 13, &r)),
		    "START: process.rlimit[0].hard: missing");
	REJECT_PROC((r.len = 0, tlv_int(&r, 1, 7, 4), put(&r, 2, 2), tlv_buf(&p, 13, &r)),
		    "START: process.rlimit[0]: truncated field header (2 bytes left)");
	/* More entries than resources. */
	b.len = p.len = 0;
	for (int i = 0; i < MOAT_PROTO_MAX_RLIMITS + 1; i++)
		rlimit(&p, (uint64_t)i % 16, 1, 1);
	start_frame(&b, &p, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "START: process.rlimit: more than 16 entries");
	moat_buf_free(&b);
	moat_buf_free(&p);
	moat_buf_free(&r);
}

static void test_reject_limits(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 };
	char *s;

	/* Just over each count limit. */
	b.len = p.len = 0;
	for (int i = 0; i < MOAT_PROTO_MAX_ARGS; i++) /* plus the one of proc_min */
		tlv_str(&p, 1, "");
	start_frame(&b, &p, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "START: process.args: more than 8192 entries");
	b.len = p.len = 0;
	for (int i = 0; i < MOAT_PROTO_MAX_ENV + 1; i++)
		tlv_str(&p, 2, "A=");
	start_frame(&b, &p, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "START: process.env: more than 8192 entries");
	b.len = p.len = 0;
	{
		size_t n = MOAT_PROTO_MAX_GROUPS + 1;
		uint8_t *g = xcalloc(n, 4);

		tlv(&p, 6, g, n * 4);
		free(g);
	}
	start_frame(&b, &p, NULL);
	expect_reject(MOAT_PEER_HOST, &b,
		      "START: process.groups: 65537 entries, expected 0..65536");
	b.len = p.len = 0;
	{
		size_t n = MOAT_PROTO_MAX_BPF_INSNS + 1;
		uint8_t *g = xcalloc(n, 8);

		tlv(&p, 16, g, n * 8);
		free(g);
	}
	start_frame(&b, &p, NULL);
	expect_reject(MOAT_PEER_HOST, &b, "START: process.seccomp: 4097 entries, expected 1..4096");

	/* Just over each length limit. */
	s = xmalloc(MOAT_PROTO_MAX_STRING + 2);
	memset(s, 'a', MOAT_PROTO_MAX_STRING + 1);
	s[MOAT_PROTO_MAX_STRING + 1] = '\0';
	REJECT_PROC(tlv_str(&p, 1, s),
		    "START: process.args[1]: length 131073 out of range 0..131072");
	s[MOAT_PROTO_MAX_STRING] = '\0';
	b.len = p.len = 0;
	tlv_str(&p, 1, s); /* at the limit: fine */
	start_frame(&b, &p, NULL);
	{
		struct moat_msg m;

		decode_ok(MOAT_PEER_HOST, &b, &m);
		assert_int_equal(strlen(m.u.start.process.args[1]), MOAT_PROTO_MAX_STRING);
		moat_msg_clear(&m);
	}
	s[0] = '/';
	s[MOAT_PROTO_MAX_PATH + 1] = '\0';
	{
		struct moat_buf proc = { 0 }, payload = { 0 };

		tlv_str(&proc, 1, "sh");
		tlv_str(&proc, 3, s);
		tlv_int(&proc, 4, 0, 4);
		tlv_int(&proc, 5, 0, 4);
		tlv_buf(&payload, 1, &proc);
		b.len = 0;
		frame(&b, MOAT_MSG_START, 1, &payload);
		expect_reject(MOAT_PEER_HOST, &b,
			      "START: process.cwd: length 4096 out of range 1..4095");
		moat_buf_free(&proc);
		moat_buf_free(&payload);
	}
	s[MOAT_PROTO_MAX_HOSTNAME + 1] = '\0';
	b.len = p.len = 0;
	tlv_str(&p, 3, s);
	start_frame(&b, NULL, &p);
	expect_reject(MOAT_PEER_HOST, &b, "START: hostname: length 65 out of range 1..64");
	free(s);

	/* The whole START over the frame limit, made of valid pieces. */
	b.len = p.len = 0;
	{
		char *e = xmalloc(60000);

		memset(e, 'v', 59999);
		e[0] = 'V';
		e[1] = '=';
		e[59999] = '\0';
		for (int i = 0; i < 18; i++)
			tlv_str(&p, 2, e);
		free(e);
	}
	start_frame(&b, &p, NULL);
	expect_reject_fatal(MOAT_PEER_HOST, &b, "over the limit of 1048576");
	moat_buf_free(&b);
	moat_buf_free(&p);
}

static void mount_entry(struct moat_buf *p, const char *type, const char *src, const char *dest)
{
	struct moat_buf m = { 0 };

	if (type)
		tlv_str(&m, 1, type);
	if (src)
		tlv_str(&m, 2, src);
	if (dest)
		tlv_str(&m, 3, dest);
	tlv_int(&m, 4, 0, 8);
	tlv_buf(p, 2, &m);
	moat_buf_free(&m);
}

static void test_reject_mounts_and_start(void **state)
{
	struct moat_buf b = { 0 }, p = { 0 }, w = { 0 };

#define REJECT_START(build, want)                        \
	do {                                             \
		b.len = p.len = 0;                       \
		build;                                   \
		start_frame(&b, NULL, &p);               \
		expect_reject(MOAT_PEER_HOST, &b, want); \
	} while (0)

	REJECT_START(
		(mount_entry(&p, "proc", "proc", "/proc"), mount_entry(&p, "tmpfs", "t", "tmp")),
		"START: mount[1].dest: not an absolute path");
	REJECT_START(mount_entry(&p, "proc", "proc", NULL), "START: mount[0].dest: missing");
	REJECT_START(mount_entry(&p, NULL, "proc", "/proc"), "START: mount[0].type: missing");
	REJECT_START(mount_entry(&p, "", "proc", "/proc"),
		     "START: mount[0].type: length 0 out of range");
	REJECT_START(tlv_str(&p, 3, ""), "START: hostname: length 0 out of range 1..64");
	REJECT_START(tlv_str(&p, 11, "proc/kcore"), "START: masked[0]: not an absolute path");
	REJECT_START(tlv_str(&p, 12, ""), "START: readonly[0]: length 0 out of range");
	REJECT_START((tlv_int(&p, 4, 1, 1), tlv_int(&p, 4, 1, 1)),
		     "START: root_readonly: given twice");
	REJECT_START((tlv_int(&w, 1, 24, 2), tlv_buf(&p, 5, &w)), "START: winsize.cols: missing");
	REJECT_START((w.len = 0, tlv_int(&w, 1, 24, 4), tlv_int(&w, 2, 80, 2), tlv_buf(&p, 5, &w)),
		     "START: winsize.rows: length 4, expected 2");
	REJECT_START(tlv_int(&p, 6, 0x14, 4), "START: namespaces: unsupported bits 0x10");
	REJECT_START((w.len = 0, tlv_int(&w, 1, 0, 8), tlv_buf(&p, 7, &w)),
		     "START: resources.pids_limit: value 0 out of range 1..4194304");
	REJECT_START(
		(w.len = 0, tlv_int(&w, 1, MOAT_PROTO_MAX_PIDS_LIMIT + 1, 8), tlv_buf(&p, 7, &w)),
		"START: resources.pids_limit: value 4194305 out of range");
	REJECT_START((w.len = 0, tlv_int(&w, 2, 999, 8), tlv_buf(&p, 7, &w)),
		     "START: resources.cpu_quota: value 999 out of range 1000..17592186044415");
	REJECT_START(
		(w.len = 0, tlv_int(&w, 2, MOAT_PROTO_MAX_CPU_QUOTA + 1, 8), tlv_buf(&p, 7, &w)),
		"START: resources.cpu_quota: value 17592186044416 out of range");
	REJECT_START(
		(w.len = 0, tlv_int(&w, 2, 5000, 8), tlv_int(&w, 3, 999, 8), tlv_buf(&p, 7, &w)),
		"START: resources.cpu_period: value 999 out of range 1000..1000000");
	REJECT_START((w.len = 0, tlv_int(&w, 2, 5000, 8), tlv_int(&w, 3, 1000001, 8),
		      tlv_buf(&p, 7, &w)),
		     "START: resources.cpu_period: value 1000001 out of range");
	REJECT_START((w.len = 0, tlv_int(&w, 3, 100000, 8), tlv_buf(&p, 7, &w)),
		     "START: resources.cpu_period: given without a cpu_quota");
	REJECT_START((w.len = 0, tlv_int(&w, 1, 10, 4), tlv_buf(&p, 7, &w)),
		     "START: resources.pids_limit: length 4, expected 8");
	REJECT_START((w.len = 0, tlv_int(&w, 4, 10, 8), tlv_buf(&p, 7, &w)),
		     "START: resources.memory_limit: value 10 out of range 1048576..");
	REJECT_START((w.len = 0, tlv_int(&w, 5, 10, 8), tlv_buf(&p, 7, &w)),
		     "START: resources: unknown field tag 5");
	/* INTERFACE: the name, the MAC, the MTU, each address and route checked */
	{
		struct moat_buf i = { 0 }, a = { 0 };

#define IFACE(extra)                                                                             \
	(i.len = a.len = 0, tlv_str(&i, 1, "eth0"), tlv(&i, 2, mac, 6), tlv_int(&i, 3, 1500, 4), \
	 extra, tlv_buf(&p, 9, &i))
		REJECT_START((i.len = 0, tlv_str(&i, 1, "a-name-too-long-x"), tlv(&i, 2, mac, 6),
			      tlv_int(&i, 3, 1500, 4), tlv_buf(&p, 9, &i)),
			     "START: interface[0].name: length 17 out of range 1..15");
		REJECT_START((i.len = 0, tlv_str(&i, 1, "eth0"), tlv(&i, 2, mac, 5),
			      tlv_int(&i, 3, 1500, 4), tlv_buf(&p, 9, &i)),
			     "START: interface[0].mac: length 5 out of range 6..6");
		REJECT_START((i.len = 0, tlv_str(&i, 1, "eth0"), tlv(&i, 2, mac, 6),
			      tlv_int(&i, 3, 67, 4), tlv_buf(&p, 9, &i)),
			     "START: interface[0].mtu: value 67 out of range 68..65535");
		REJECT_START(IFACE((tlv(&a, 1, v4, 4), tlv_int(&a, 2, 33, 1), tlv_buf(&i, 4, &a))),
			     "START: interface[0].address[0].address: a prefix of 33 bits");
		REJECT_START(IFACE((tlv(&a, 1, v6, 8), tlv_int(&a, 2, 8, 1), tlv_buf(&i, 4, &a))),
			     "START: interface[0].address[0].address: an address of 8 bytes");
		REJECT_START(IFACE((tlv(&a, 1, v4, 4), tlv_int(&a, 2, 0, 1), tlv(&a, 3, v6, 16),
				    tlv_buf(&i, 5, &a))),
			     "START: interface[0].route[0].gateway: 16 bytes for a 4-byte dst");
#undef IFACE
		moat_buf_free(&i);
		moat_buf_free(&a);
	}
	/* The process object, cut inside: its own length is in bounds, its fields are not. */
	{
		struct moat_buf proc = { 0 }, payload = { 0 };

		proc_min(&proc);
		put(&proc, 2, 2);
		put(&proc, 100, 4);
		moat_buf_append(&proc, "PATH", 4);
		tlv_buf(&payload, 1, &proc);
		b.len = 0;
		frame(&b, MOAT_MSG_START, 1, &payload);
		expect_reject(
			MOAT_PEER_HOST, &b,
			"START: process: field tag 2: length 100 runs past the end (4 bytes left)");
		moat_buf_free(&proc);
		moat_buf_free(&payload);
	}
	/* Too many mounts. */
	b.len = p.len = 0;
	for (int i = 0; i < MOAT_PROTO_MAX_MOUNTS + 1; i++)
		mount_entry(&p, "tmpfs", "tmpfs", "/x");
	start_frame(&b, NULL, &p);
	expect_reject(MOAT_PEER_HOST, &b, "START: mount: more than 512 entries");
	/* EXEC has no mounts. */
	{
		struct moat_buf proc = { 0 }, payload = { 0 };

		proc_min(&proc);
		tlv_buf(&payload, 1, &proc);
		mount_entry(&payload, "proc", "proc", "/proc");
		b.len = 0;
		frame(&b, MOAT_MSG_EXEC, 2, &payload);
		expect_reject(MOAT_PEER_HOST, &b, "EXEC: winsize: unknown field tag 3");
		moat_buf_free(&proc);
		moat_buf_free(&payload);
	}
	moat_buf_free(&b);
	moat_buf_free(&p);
	moat_buf_free(&w);
}

/* ---- the encoder refuses what the decoder would ------------------------------------------ */

static void test_encoder_refuses(void **state)
{
	static char *bad_env[] = { "NOEQ" };
	static char *null_arg[] = { "sh", NULL };
	struct moat_msg m = full_start();
	struct moat_proto_rlimit dup[] = { { 1, 1, 1 }, { 1, 2, 2 } };
	struct moat_proto_mount bad_mount[] = { { "bind", "/a", "b", 0, NULL } };

	m.u.start.process.cwd = "relative";
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.cwd: not an absolute path");
	m = full_start();
	m.u.start.seed_len = MOAT_PROTO_SEED_SIZE - 1;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: seed: length 31 out of range 32..32");
	m = full_start();
	m.u.start.process.cwd = NULL;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.cwd: missing");
	m = full_start();
	m.u.start.process.n_args = 0;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.args: missing");
	m = full_start();
	m.u.start.process.args = null_arg;
	m.u.start.process.n_args = 2;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.args[1]: missing");
	m = full_start();
	m.u.start.process.args = NULL;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.args: 4 entries but no array");
	m = full_start();
	m.u.start.process.env = bad_env;
	m.u.start.process.n_env = 1;
	expect_encode_fails(MOAT_PEER_HOST, &m,
			    "START: process.env[0]: not of the form NAME=value");
	m = full_start();
	m.u.start.process.rlimits = dup;
	m.u.start.process.n_rlimits = 2;
	expect_encode_fails(MOAT_PEER_HOST, &m, "resource 1 given twice");
	m = full_start();
	m.u.start.process.seccomp_flags = 8; /* NEW_LISTENER */
	expect_encode_fails(MOAT_PEER_HOST, &m,
			    "START: process.seccomp_flags: unsupported bits 0x8");
	m = full_start();
	m.u.start.process.n_seccomp = 0;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.seccomp: empty program");
	m = full_start();
	m.u.start.process.seccomp = NULL;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.seccomp: missing");
	m = full_start();
	m.u.start.process.n_seccomp = MOAT_PROTO_MAX_BPF_INSNS + 1;
	m.u.start.process.seccomp =
		xcalloc(m.u.start.process.n_seccomp, sizeof(struct sock_filter));
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: process.seccomp: 4097 entries");
	free(m.u.start.process.seccomp);
	m = full_start();
	m.u.start.process.uid = UINT32_MAX;
	expect_encode_fails(MOAT_PEER_HOST, &m,
			    "START: process.uid: value 4294967295 out of range");
	m = full_start();
	m.u.start.mounts = bad_mount;
	m.u.start.n_mounts = 1;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: mount[0].dest: not an absolute path");
	m = full_start();
	m.id = 0;
	expect_encode_fails(MOAT_PEER_HOST, &m, "START: id must not be 0");

	/* The guest cannot send what only the host sends, nor the reverse. */
	m = full_start();
	expect_encode_fails(MOAT_PEER_GUEST, &m, "not one the guest sends");
	m = (struct moat_msg){ .type = MOAT_MSG_READY, .u.ready = { 1, "6.1" } };
	expect_encode_fails(MOAT_PEER_HOST, &m, "not one the host sends");
	m = (struct moat_msg){ .type = 0x40 };
	expect_encode_fails(MOAT_PEER_HOST, &m, "unknown message type 0x40");

	/* Text from untrusted strings has to be cleaned before it is sent. */
	m = (struct moat_msg){ .type = MOAT_MSG_ERROR, .id = 1 };
	m.u.error.message = "exec /bin/\x1b[31mred: No such file or directory";
	expect_encode_fails(MOAT_PEER_GUEST, &m, "ERROR: message: contains control character 0x1b");
	{
		char clean[64];
		struct moat_msg out;

		moat_proto_sanitize_text(clean, sizeof(clean), m.u.error.message);
		assert_string_equal(clean, "exec /bin/?[31mred: No such file or directory");
		m.u.error.message = clean;
		round_trip(MOAT_PEER_GUEST, &m, &out);
		moat_msg_clear(&out);
		moat_proto_sanitize_text(clean, 5, "abcdefgh");
		assert_string_equal(clean, "abcd");
	}
	{
		char *huge = xmalloc(5000), clean[5000];

		memset(huge, 'x', 4999);
		huge[4999] = '\0';
		moat_proto_sanitize_text(clean, sizeof(clean), huge);
		assert_int_equal(strlen(clean), MOAT_PROTO_MAX_MESSAGE);
		free(huge);
	}

	/* Output over the data limit: the sender must split it. */
	{
		static uint8_t big[MOAT_PROTO_MAX_DATA + 1];

		m = (struct moat_msg){ .type = MOAT_MSG_OUTPUT, .id = 1 };
		m.u.data.stream = 1;
		m.u.data.data = big;
		m.u.data.len = sizeof(big);
		expect_encode_fails(MOAT_PEER_GUEST, &m, "DATA: bytes: length 65537 out of range");
	}
	/* A message far over the limit fails without building it whole. */
	{
		size_t n = MOAT_PROTO_MAX_ARGS;
		char **many = xcalloc(n, sizeof(char *));
		char *s = xmalloc(MOAT_PROTO_MAX_STRING + 1);

		memset(s, 'a', MOAT_PROTO_MAX_STRING);
		s[MOAT_PROTO_MAX_STRING] = '\0';
		for (size_t i = 0; i < n; i++)
			many[i] = s;
		m = full_start();
		m.u.start.process.args = many;
		m.u.start.process.n_args = n;
		expect_encode_fails(MOAT_PEER_HOST, &m, "message too large");
		free(many);
		free(s);
	}
}

/* ---- hostile input ---------------------------------------------------------------------------- */

/* Decoding must end in success or a clean error; under ASan any overread fails the test. */
static void decode_any(enum moat_proto_peer from, const uint8_t *buf, size_t len)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_msg m;
	size_t used;
	int r;

	r = moat_proto_decode(from, buf, len, &used, &m, &err);
	assert_true(used <= len);
	if (r == 1) {
		assert_null(err.msg);
		moat_msg_clear(&m);
	} else if (r < 0) {
		assert_non_null(err.msg);
		assert_true(used == 0 || used >= MOAT_PROTO_HEADER_SIZE);
	} else {
		assert_int_equal(used, 0);
	}
	moat_error_clear(&err);
}

/* Every truncation of a full START's payload, with the frame's length adjusted to match, so
 * each one reaches the field decoder. Copies are exact-size, so ASan sees any overread. */
static void test_truncations(void **state)
{
	struct moat_msg in = full_start();
	struct moat_buf b = { 0 };
	size_t refused = 0;

	encode_ok(MOAT_PEER_HOST, &in, &b);
	for (size_t l = 0; l + MOAT_PROTO_HEADER_SIZE <= b.len; l++) {
		size_t n = MOAT_PROTO_HEADER_SIZE + l;
		uint8_t *copy = xmalloc(n);
		moat_error err = MOAT_ERROR_INIT;
		struct moat_msg m;
		size_t used;
		int r;

		memcpy(copy, b.data, n);
		copy[0] = (uint8_t)l;
		copy[1] = (uint8_t)(l >> 8);
		copy[2] = (uint8_t)(l >> 16);
		copy[3] = 0;
		r = moat_proto_decode(MOAT_PEER_HOST, copy, n, &used, &m, &err);
		assert_int_equal(used, n);
		if (n == b.len) {
			assert_int_equal(r, 1);
			moat_msg_clear(&m);
		} else {
			/* Cut before a field ends: refused. Cut between fields: only
			 * a frame missing a required field, or a valid shorter one. */
			if (r < 0)
				refused++;
			else
				moat_msg_clear(&m);
		}
		moat_error_clear(&err);
		free(copy);
		/* And without adjusting the length: just incomplete. */
		decode_any(MOAT_PEER_HOST, b.data, n);
	}
	assert_true(refused > b.len / 2);
	moat_buf_free(&b);
}

/* A small deterministic generator: the test repeats exactly. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_random_mutations(void **state)
{
	struct moat_msg in = full_start(), ex = { .type = MOAT_MSG_EXITED, .id = 4 };
	struct moat_buf seeds[2] = { { 0 }, { 0 } };

	encode_ok(MOAT_PEER_HOST, &in, &seeds[0]);
	ex.u.exited.has_signal = true;
	ex.u.exited.signal = 9;
	encode_ok(MOAT_PEER_GUEST, &ex, &seeds[1]);
	for (int iter = 0; iter < 20000; iter++) {
		const struct moat_buf *s = &seeds[iter & 1];
		enum moat_proto_peer from = (iter & 1) ? MOAT_PEER_GUEST : MOAT_PEER_HOST;
		uint8_t *copy = xmalloc(s->len);
		int flips = 1 + (int)(rng() % 4);

		memcpy(copy, s->data, s->len);
		for (int i = 0; i < flips; i++) {
			/* Leave the header alone mostly: flipped lengths just make frames incomplete. */
			size_t at = (rng() % 8 == 0)
					    ? rng() % s->len
					    : MOAT_PROTO_HEADER_SIZE +
						      rng() % (s->len - MOAT_PROTO_HEADER_SIZE);

			copy[at] = (rng() % 3 == 0) ? (uint8_t)rng()
						    : copy[at] ^ (uint8_t)(1u << (rng() % 8));
		}
		decode_any(from, copy, s->len);
		free(copy);
	}
	/* Random frames: a plausible header over random fields. */
	for (int iter = 0; iter < 20000; iter++) {
		size_t plen = rng() % 64;
		uint8_t *f = xmalloc(MOAT_PROTO_HEADER_SIZE + plen);
		static const uint16_t types[] = { 1,    2,    3,    4,    5,    6,
						  0x81, 0x82, 0x83, 0x84, 0x85, 0x86 };

		f[0] = (uint8_t)plen;
		f[1] = f[2] = f[3] = 0;
		f[4] = (uint8_t)types[rng() % MOAT_ARRAY_SIZE(types)];
		f[5] = 0;
		for (size_t i = 6; i < MOAT_PROTO_HEADER_SIZE + plen; i++)
			f[i] = (rng() % 2) ? (uint8_t)rng() : (uint8_t)(rng() % 4);
		decode_any(iter & 1 ? MOAT_PEER_GUEST : MOAT_PEER_HOST, f,
			   MOAT_PROTO_HEADER_SIZE + plen);
		free(f);
	}
	moat_buf_free(&seeds[0]);
	moat_buf_free(&seeds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_start_full),
		cmocka_unit_test(test_round_trip_start_minimal),
		cmocka_unit_test(test_round_trip_exec),
		cmocka_unit_test(test_round_trip_small_messages),
		cmocka_unit_test(test_round_trip_pod_messages),
		cmocka_unit_test(test_stats_and_usage),
		cmocka_unit_test(test_wire_format_pinned),
		cmocka_unit_test(test_output_prefix),
		cmocka_unit_test(test_partial_and_back_to_back),
		cmocka_unit_test(test_reject_framing),
		cmocka_unit_test(test_reject_tlv_structure),
		cmocka_unit_test(test_reject_integers),
		cmocka_unit_test(test_reject_exited),
		cmocka_unit_test(test_reject_text),
		cmocka_unit_test(test_reject_data),
		cmocka_unit_test(test_reject_process_fields),
		cmocka_unit_test(test_reject_rlimits),
		cmocka_unit_test(test_reject_limits),
		cmocka_unit_test(test_reject_mounts_and_start),
		cmocka_unit_test(test_encoder_refuses),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_random_mutations),
	};

	return cmocka_run_group_tests_name("guest-proto", tests, NULL, NULL);
}
