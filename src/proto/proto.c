/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the host/guest wire protocol (see proto.h for the format).
 *
 * Every message and object is described by one table of fields; a single
 * decoder and a single encoder walk the tables. The encoder checks its output
 * by decoding it, so nothing is sent that the receiver would refuse.
 */
#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

/* ---- byte buffer ---------------------------------------------------------------------------- */

void moat_buf_append(struct moat_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (n > SIZE_MAX / 2 - b->len)
		abort();
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void moat_buf_consume(struct moat_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

void moat_buf_free(struct moat_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* ---- little-endian integers ------------------------------------------------------------------ */

static uint64_t get_le(const uint8_t *p, size_t width)
{
	uint64_t v = 0;

	while (width-- > 0)
		v = (v << 8) | p[width];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, size_t width)
{
	for (size_t i = 0; i < width; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void append_le(struct moat_buf *b, uint64_t v, size_t width)
{
	uint8_t tmp[8];

	put_le(tmp, v, width);
	moat_buf_append(b, tmp, width);
}

/* ---- the tables ------------------------------------------------------------------------------ */

enum kind {
	K_BOOL,      /* u8 0/1, stored as bool */
	K_U8,        /* stored as uint8_t */
	K_U16,       /* stored as uint16_t */
	K_U32,       /* stored as uint32_t */
	K_U64,       /* stored as uint64_t */
	K_STR,       /* stored as char *, NUL-terminated */
	K_BYTES,     /* stored as uint8_t * and a size_t length */
	K_U32_ARRAY, /* stored as uint32_t * and a size_t count */
	K_BPF,       /* stored as struct sock_filter * and a size_t count */
	K_OBJ,       /* stored inline (or, for a list, as an array and a size_t count) */
};

enum str_check {
	S_ANY,  /* no NUL */
	S_PATH, /* absolute */
	S_ENV,  /* NAME=value, NAME not empty */
	S_TEXT, /* no control characters */
	S_NAME, /* text, and a file name: no '/', neither "." nor ".." */
};

enum {
	F_REQUIRED = 1 << 0,
	F_LIST = 1 << 1, /* the tag repeats; K_STR and K_OBJ only */
	F_MASK = 1 << 2, /* an integer bitmask: no bits outside max */
};

#define NO_OFF SIZE_MAX
#define BPF_INSN_SIZE 8

struct object;

struct field {
	uint16_t tag;
	uint8_t kind;
	uint8_t flags;
	uint8_t str_check;
	const char *name;
	size_t off;     /* the value, or the array pointer */
	size_t n_off;   /* the count or length, for lists, arrays and bytes */
	size_t has_off; /* a bool set when an optional scalar or object is present */
	uint64_t min;   /* integers: value range; strings and bytes: length; arrays: count */
	uint64_t max;
	size_t max_count; /* lists */
	const struct object *obj;
};

struct object {
	size_t size;
	const struct field *fields;
	size_t n_fields;
	/* Rules that span fields, run after the fields decoded. */
	int (*check)(const void *obj, const char *path, moat_error *err);
};

/* Scanning keeps a count per field on the stack. */
#define MAX_FIELDS 24

#define OFF(type, member) offsetof(type, member)
#define FIELDS(a) a, MOAT_ARRAY_SIZE(a)

static void set_failure(moat_error *err, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_failure(moat_error *err, const char *path, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (path[0] == '\0')
		moat_error_msg(err, EBADMSG, "%s", text);
	else
		moat_error_msg(err, EBADMSG, "%s: %s", path, text);
}

/* "path: what is wrong", and the value to return: always -EBADMSG. */
#define fail(err, path, ...) (set_failure(err, path, __VA_ARGS__), -EBADMSG)

/* clang-format off */
static const struct field winsize_fields[] = {
	{ 1, K_U16, F_REQUIRED, 0, "rows", OFF(struct moat_proto_winsize, rows), NO_OFF, NO_OFF, 0, UINT16_MAX, 0, NULL },
	{ 2, K_U16, F_REQUIRED, 0, "cols", OFF(struct moat_proto_winsize, cols), NO_OFF, NO_OFF, 0, UINT16_MAX, 0, NULL },
};
static const struct object winsize_object = { sizeof(struct moat_proto_winsize), FIELDS(winsize_fields), NULL };
/* clang-format on */

static void join_path(char *dst, size_t size, const char *path, const char *name, long index)
{
	const char *sep = path[0] ? "." : "";

	if (index >= 0)
		snprintf(dst, size, "%s%s%s[%ld]", path, sep, name, index);
	else
		snprintf(dst, size, "%s%s%s", path, sep, name);
}

static int check_rlimit(const void *obj, const char *path, moat_error *err)
{
	const struct moat_proto_rlimit *r = obj;

	if (r->soft > r->hard)
		return fail(err, path, "soft limit %llu is above hard limit %llu",
			    (unsigned long long)r->soft, (unsigned long long)r->hard);
	return 0;
}

/* clang-format off */
static const struct field rlimit_fields[] = {
	{ 1, K_U32, F_REQUIRED, 0, "type", OFF(struct moat_proto_rlimit, type), NO_OFF, NO_OFF, 0, MOAT_PROTO_MAX_RLIMITS - 1, 0, NULL },
	{ 2, K_U64, F_REQUIRED, 0, "soft", OFF(struct moat_proto_rlimit, soft), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 3, K_U64, F_REQUIRED, 0, "hard", OFF(struct moat_proto_rlimit, hard), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
};
static const struct object rlimit_object = { sizeof(struct moat_proto_rlimit), FIELDS(rlimit_fields), check_rlimit };
/* clang-format on */

/* clang-format off */
static const struct field mount_fields[] = {
	{ 1, K_STR, F_REQUIRED, S_ANY, "type", OFF(struct moat_proto_mount, type), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_FSTYPE, 0, NULL },
	{ 2, K_STR, 0, S_ANY, "source", OFF(struct moat_proto_mount, source), NO_OFF, NO_OFF, 0, MOAT_PROTO_MAX_PATH, 0, NULL },
	{ 3, K_STR, F_REQUIRED, S_PATH, "dest", OFF(struct moat_proto_mount, dest), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_PATH, 0, NULL },
	{ 4, K_U64, 0, 0, "flags", OFF(struct moat_proto_mount, flags), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 5, K_STR, 0, S_ANY, "data", OFF(struct moat_proto_mount, data), NO_OFF, NO_OFF, 0, MOAT_PROTO_MAX_MOUNT_DATA, 0, NULL },
};
static const struct object mount_object = { sizeof(struct moat_proto_mount), FIELDS(mount_fields), NULL };
/* clang-format on */

static int check_process(const void *obj, const char *path, moat_error *err)
{
	const struct moat_proto_process *p = obj;
	uint32_t seen = 0;

	char fpath[160];

	for (size_t i = 0; i < p->n_rlimits; i++) {
		uint32_t bit = UINT32_C(1) << p->rlimits[i].type;

		if (seen & bit) {
			join_path(fpath, sizeof(fpath), path, "rlimit", (long)i);
			return fail(err, fpath, "resource %u given twice", p->rlimits[i].type);
		}
		seen |= bit;
	}
	if (p->has_seccomp_flags && p->seccomp == NULL) {
		join_path(fpath, sizeof(fpath), path, "seccomp_flags", -1);
		return fail(err, fpath, "given without a seccomp program");
	}
	return 0;
}

/* clang-format off */
#define P(member) OFF(struct moat_proto_process, member)
static const struct field process_fields[] = {
	{ 1, K_STR, F_REQUIRED | F_LIST, S_ANY, "args", P(args), P(n_args), NO_OFF, 0, MOAT_PROTO_MAX_STRING, MOAT_PROTO_MAX_ARGS, NULL },
	{ 2, K_STR, F_LIST, S_ENV, "env", P(env), P(n_env), NO_OFF, 2, MOAT_PROTO_MAX_STRING, MOAT_PROTO_MAX_ENV, NULL },
	{ 3, K_STR, F_REQUIRED, S_PATH, "cwd", P(cwd), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_PATH, 0, NULL },
	/* (uid_t)-1 means "unchanged" to setresuid: never a real id. */
	{ 4, K_U32, F_REQUIRED, 0, "uid", P(uid), NO_OFF, NO_OFF, 0, UINT32_MAX - 1, 0, NULL },
	{ 5, K_U32, F_REQUIRED, 0, "gid", P(gid), NO_OFF, NO_OFF, 0, UINT32_MAX - 1, 0, NULL },
	{ 6, K_U32_ARRAY, 0, 0, "groups", P(groups), P(n_groups), NO_OFF, 0, MOAT_PROTO_MAX_GROUPS, 0, NULL },
	{ 7, K_U32, 0, 0, "umask", P(umask), NO_OFF, P(has_umask), 0, 0777, 0, NULL },
	{ 8, K_U64, 0, 0, "cap_bounding", P(cap_bounding), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 9, K_U64, 0, 0, "cap_effective", P(cap_effective), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 10, K_U64, 0, 0, "cap_inheritable", P(cap_inheritable), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 11, K_U64, 0, 0, "cap_permitted", P(cap_permitted), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 12, K_U64, 0, 0, "cap_ambient", P(cap_ambient), NO_OFF, NO_OFF, 0, UINT64_MAX, 0, NULL },
	{ 13, K_OBJ, F_LIST, 0, "rlimit", P(rlimits), P(n_rlimits), NO_OFF, 0, 0, MOAT_PROTO_MAX_RLIMITS, &rlimit_object },
	{ 14, K_BOOL, 0, 0, "no_new_privs", P(no_new_privs), NO_OFF, NO_OFF, 0, 1, 0, NULL },
	{ 15, K_BOOL, 0, 0, "terminal", P(terminal), NO_OFF, NO_OFF, 0, 1, 0, NULL },
	{ 16, K_BPF, 0, 0, "seccomp", P(seccomp), P(n_seccomp), NO_OFF, 1, MOAT_PROTO_MAX_BPF_INSNS, 0, NULL },
	{ 17, K_U32, F_MASK, 0, "seccomp_flags", P(seccomp_flags), NO_OFF, P(has_seccomp_flags), 0, MOAT_PROTO_SECCOMP_FLAGS, 0, NULL },
};
#undef P
static const struct object process_object = { sizeof(struct moat_proto_process), FIELDS(process_fields), check_process };
/* clang-format on */

static int check_resources(const void *obj, const char *path, moat_error *err)
{
	const struct moat_proto_resources *r = obj;
	char fpath[160];

	if (r->has_cpu_period && !r->has_cpu_quota) {
		join_path(fpath, sizeof(fpath), path, "cpu_period", -1);
		return fail(err, fpath, "given without a cpu_quota");
	}
	return 0;
}

/* clang-format off */
#define R(member) OFF(struct moat_proto_resources, member)
static const struct field resources_fields[] = {
	{ 1, K_U64, 0, 0, "pids_limit", R(pids_limit), NO_OFF, R(has_pids_limit), 1, MOAT_PROTO_MAX_PIDS_LIMIT, 0, NULL },
	{ 2, K_U64, 0, 0, "cpu_quota", R(cpu_quota), NO_OFF, R(has_cpu_quota), MOAT_PROTO_MIN_CPU_QUOTA, MOAT_PROTO_MAX_CPU_QUOTA, 0, NULL },
	{ 3, K_U64, 0, 0, "cpu_period", R(cpu_period), NO_OFF, R(has_cpu_period), MOAT_PROTO_MIN_CPU_PERIOD, MOAT_PROTO_MAX_CPU_PERIOD, 0, NULL },
	{ 4, K_U64, 0, 0, "memory_limit", R(memory_limit), NO_OFF, R(has_memory_limit), MOAT_PROTO_MIN_MEMORY_LIMIT, UINT64_MAX, 0, NULL },
};
#undef R
static const struct object resources_object = { sizeof(struct moat_proto_resources), FIELDS(resources_fields), check_resources };
/* clang-format on */

static int check_ip_prefix(size_t bytes, uint8_t prefix, const char *path, const char *name,
			   moat_error *err)
{
	char fpath[160];

	join_path(fpath, sizeof(fpath), path, name, -1);
	if (bytes != 4 && bytes != 16)
		return fail(err, fpath, "an address of %zu bytes (4 or 16)", bytes);
	if (prefix > bytes * 8)
		return fail(err, fpath, "a prefix of %u bits for a %zu-byte address", prefix,
			    bytes);
	return 0;
}

static int check_ifaddr(const void *obj, const char *path, moat_error *err)
{
	const struct moat_proto_ifaddr *a = obj;

	return check_ip_prefix(a->address_len, a->prefix, path, "address", err);
}

static int check_route(const void *obj, const char *path, moat_error *err)
{
	const struct moat_proto_route *r = obj;
	char fpath[160];

	if (check_ip_prefix(r->dst_bytes, r->dst_len, path, "dst", err) < 0)
		return -EBADMSG;
	join_path(fpath, sizeof(fpath), path, "gateway", -1);
	if (r->gateway != NULL && r->gateway_len != r->dst_bytes)
		return fail(err, fpath, "%zu bytes for a %zu-byte dst", r->gateway_len,
			    r->dst_bytes);
	return 0;
}

/* clang-format off */
#define A(member) OFF(struct moat_proto_ifaddr, member)
static const struct field ifaddr_fields[] = {
	{ 1, K_BYTES, F_REQUIRED, 0, "address", A(address), A(address_len), NO_OFF, 4, 16, 0, NULL },
	{ 2, K_U8, F_REQUIRED, 0, "prefix", A(prefix), NO_OFF, NO_OFF, 0, 128, 0, NULL },
};
#undef A
static const struct object ifaddr_object = { sizeof(struct moat_proto_ifaddr), FIELDS(ifaddr_fields), check_ifaddr };
#define RT(member) OFF(struct moat_proto_route, member)
static const struct field route_fields[] = {
	{ 1, K_BYTES, F_REQUIRED, 0, "dst", RT(dst), RT(dst_bytes), NO_OFF, 4, 16, 0, NULL },
	{ 2, K_U8, F_REQUIRED, 0, "dst_len", RT(dst_len), NO_OFF, NO_OFF, 0, 128, 0, NULL },
	{ 3, K_BYTES, 0, 0, "gateway", RT(gateway), RT(gateway_len), NO_OFF, 4, 16, 0, NULL },
	{ 4, K_U32, 0, 0, "priority", RT(priority), NO_OFF, RT(has_priority), 0, UINT32_MAX, 0, NULL },
};
#undef RT
static const struct object route_object = { sizeof(struct moat_proto_route), FIELDS(route_fields), check_route };
#define I(member) OFF(struct moat_proto_interface, member)
static const struct field interface_fields[] = {
	{ 1, K_STR, F_REQUIRED, S_TEXT, "name", I(name), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_IFNAME, 0, NULL },
	{ 2, K_BYTES, F_REQUIRED, 0, "mac", I(mac), I(mac_len), NO_OFF, 6, 6, 0, NULL },
	{ 3, K_U32, F_REQUIRED, 0, "mtu", I(mtu), NO_OFF, NO_OFF, MOAT_PROTO_MIN_MTU, MOAT_PROTO_MAX_MTU, 0, NULL },
	{ 4, K_OBJ, F_LIST, 0, "address", I(addresses), I(n_addresses), NO_OFF, 0, 0, MOAT_PROTO_MAX_IFADDRS, &ifaddr_object },
	{ 5, K_OBJ, F_LIST, 0, "route", I(routes), I(n_routes), NO_OFF, 0, 0, MOAT_PROTO_MAX_ROUTES, &route_object },
};
#undef I
static const struct object interface_object = { sizeof(struct moat_proto_interface), FIELDS(interface_fields), NULL };
/* clang-format on */

/* clang-format off */
#define M(kind, member) OFF(struct moat_msg, u.kind.member)
/* What makes a container, START's and CONTAINER's alike. */
#define CONTAINER_FIELDS \
	{ 1, K_OBJ, F_REQUIRED, 0, "process", M(start, process), NO_OFF, NO_OFF, 0, 0, 0, &process_object }, \
	{ 2, K_OBJ, F_LIST, 0, "mount", M(start, mounts), M(start, n_mounts), NO_OFF, 0, 0, MOAT_PROTO_MAX_MOUNTS, &mount_object }, \
	{ 3, K_STR, 0, S_ANY, "hostname", M(start, hostname), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_HOSTNAME, 0, NULL }, \
	{ 4, K_BOOL, 0, 0, "root_readonly", M(start, root_readonly), NO_OFF, NO_OFF, 0, 1, 0, NULL }, \
	{ 5, K_OBJ, 0, 0, "winsize", M(start, winsize), NO_OFF, M(start, has_winsize), 0, 0, 0, &winsize_object }, \
	{ 6, K_U32, F_MASK, 0, "namespaces", M(start, namespaces), NO_OFF, NO_OFF, 0, MOAT_PROTO_NAMESPACES, 0, NULL }, \
	{ 7, K_OBJ, 0, 0, "resources", M(start, resources), NO_OFF, M(start, has_resources), 0, 0, 0, &resources_object }, \
	{ 11, K_STR, F_LIST, S_PATH, "masked", M(start, masked), M(start, n_masked), NO_OFF, 1, MOAT_PROTO_MAX_PATH, MOAT_PROTO_MAX_MOUNTS, NULL }, \
	{ 12, K_STR, F_LIST, S_PATH, "readonly", M(start, readonly), M(start, n_readonly), NO_OFF, 1, MOAT_PROTO_MAX_PATH, MOAT_PROTO_MAX_MOUNTS, NULL }
static const struct field start_fields[] = {
	CONTAINER_FIELDS,
	{ 8, K_U64, 0, 0, "realtime", M(start, realtime_ns), NO_OFF, M(start, has_realtime), 1, UINT64_MAX, 0, NULL },
	{ 9, K_OBJ, F_LIST, 0, "interface", M(start, interfaces), M(start, n_interfaces), NO_OFF, 0, 0, MOAT_PROTO_MAX_INTERFACES, &interface_object },
	{ 13, K_BYTES, 0, 0, "seed", M(start, seed), M(start, seed_len), NO_OFF, MOAT_PROTO_SEED_SIZE, MOAT_PROTO_SEED_SIZE, 0, NULL },
};
/* START's fields that say what a container is, and its name in the pod's share. */
static const struct field container_fields[] = {
	CONTAINER_FIELDS,
	{ 10, K_STR, F_REQUIRED, S_NAME, "name", M(start, name), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_NAME, 0, NULL },
};
static const struct field exec_fields[] = {
	{ 1, K_OBJ, F_REQUIRED, 0, "process", M(exec, process), NO_OFF, NO_OFF, 0, 0, 0, &process_object },
	{ 2, K_OBJ, 0, 0, "winsize", M(exec, winsize), NO_OFF, M(exec, has_winsize), 0, 0, 0, &winsize_object },
	{ 3, K_U32, 0, 0, "container", M(exec, container), NO_OFF, NO_OFF, 1, UINT32_MAX, 0, NULL },
};
static const struct field update_fields[] = {
	{ 1, K_OBJ, F_REQUIRED, 0, "resources", M(update, resources), NO_OFF, NO_OFF, 0, 0, 0, &resources_object },
};
/* (bounded so that the host keeps them in an int64_t, CPU time in ns) */
static const struct field usage_fields[] = {
	{ 1, K_U64, F_REQUIRED, 0, "oom_kills", M(usage, oom_kills), NO_OFF, NO_OFF, 0, INT64_MAX, 0, NULL },
	{ 2, K_U64, F_REQUIRED, 0, "pids_max", M(usage, pids_max), NO_OFF, NO_OFF, 0, INT64_MAX, 0, NULL },
	{ 3, K_U64, 0, 0, "pids_peak", M(usage, pids_peak), NO_OFF, M(usage, has_pids_peak), 0, INT64_MAX, 0, NULL },
	{ 4, K_U64, 0, 0, "memory_peak", M(usage, memory_peak), NO_OFF, M(usage, has_memory_peak), 0, INT64_MAX, 0, NULL },
	{ 5, K_U64, F_REQUIRED, 0, "cpu_user_us", M(usage, cpu_user_us), NO_OFF, NO_OFF, 0, INT64_MAX / 1000, 0, NULL },
	{ 6, K_U64, F_REQUIRED, 0, "cpu_system_us", M(usage, cpu_system_us), NO_OFF, NO_OFF, 0, INT64_MAX / 1000, 0, NULL },
};
static const struct field freeze_fields[] = {
	{ 1, K_BOOL, F_REQUIRED, 0, "frozen", M(freeze, frozen), NO_OFF, NO_OFF, 0, 1, 0, NULL },
};
static const struct field stdin_fields[] = {
	{ 1, K_BYTES, F_REQUIRED, 0, "bytes", M(data, data), M(data, len), NO_OFF, 0, MOAT_PROTO_MAX_DATA, 0, NULL },
};
static const struct field signal_fields[] = {
	{ 1, K_U32, F_REQUIRED, 0, "signo", M(signal, signo), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_SIGNAL, 0, NULL },
};
static const struct field resize_fields[] = {
	{ 1, K_OBJ, F_REQUIRED, 0, "winsize", M(resize, winsize), NO_OFF, NO_OFF, 0, 0, 0, &winsize_object },
};
static const struct field ready_fields[] = {
	{ 1, K_U32, F_REQUIRED, 0, "version", M(ready, version), NO_OFF, NO_OFF, 0, UINT32_MAX, 0, NULL },
	{ 2, K_STR, F_REQUIRED, S_TEXT, "release", M(ready, release), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_RELEASE, 0, NULL },
};
static const struct field started_fields[] = {
	{ 1, K_U32, F_REQUIRED, 0, "pid", M(started, pid), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_PID, 0, NULL },
};
static const struct field output_fields[] = {
	{ 1, K_U8, F_REQUIRED, 0, "stream", M(data, stream), NO_OFF, NO_OFF, MOAT_STREAM_STDOUT, MOAT_STREAM_STDERR, 0, NULL },
	{ 2, K_BYTES, F_REQUIRED, 0, "bytes", M(data, data), M(data, len), NO_OFF, 0, MOAT_PROTO_MAX_DATA, 0, NULL },
};
static const struct field exited_fields[] = {
	{ 1, K_U32, 0, 0, "status", M(exited, status), NO_OFF, M(exited, has_status), 0, 255, 0, NULL },
	{ 2, K_U32, 0, 0, "signal", M(exited, signal), NO_OFF, M(exited, has_signal), 1, MOAT_PROTO_MAX_SIGNAL, 0, NULL },
};
static const struct field error_fields[] = {
	{ 1, K_STR, F_REQUIRED, S_TEXT, "message", M(error, message), NO_OFF, NO_OFF, 1, MOAT_PROTO_MAX_MESSAGE, 0, NULL },
	{ 2, K_U32, 0, 0, "errno", M(error, errnum), NO_OFF, M(error, has_errno), 1, MOAT_PROTO_MAX_ERRNO, 0, NULL },
};
static const struct field credit_fields[] = {
	{ 1, K_U32, F_REQUIRED, 0, "bytes", M(credit, bytes), NO_OFF, NO_OFF, 1, MOAT_PROTO_STDIN_WINDOW, 0, NULL },
};
#undef CONTAINER_FIELDS
#undef M
/* clang-format on */

static int check_exited(const void *obj, const char *path, moat_error *err)
{
	const struct moat_msg *m = obj;

	if (m->u.exited.has_status == m->u.exited.has_signal)
		return fail(err, path, "needs exactly one of status and signal");
	return 0;
}

/* Messages are objects over struct moat_msg (the offsets above include the
 * union), so the generic code needs no per-type glue. */
/* clang-format off */
static const struct object start_object = { sizeof(struct moat_msg), FIELDS(start_fields), NULL };
static const struct object container_object = { sizeof(struct moat_msg), FIELDS(container_fields), NULL };
static const struct object exec_object = { sizeof(struct moat_msg), FIELDS(exec_fields), NULL };
static const struct object freeze_object = { sizeof(struct moat_msg), FIELDS(freeze_fields), NULL };
static const struct object update_object = { sizeof(struct moat_msg), FIELDS(update_fields), NULL };
static const struct object usage_object = { sizeof(struct moat_msg), FIELDS(usage_fields), NULL };
static const struct object stdin_object = { sizeof(struct moat_msg), FIELDS(stdin_fields), NULL };
static const struct object signal_object = { sizeof(struct moat_msg), FIELDS(signal_fields), NULL };
static const struct object resize_object = { sizeof(struct moat_msg), FIELDS(resize_fields), NULL };
static const struct object empty_object = { sizeof(struct moat_msg), NULL, 0, NULL };
static const struct object ready_object = { sizeof(struct moat_msg), FIELDS(ready_fields), NULL };
static const struct object started_object = { sizeof(struct moat_msg), FIELDS(started_fields), NULL };
static const struct object output_object = { sizeof(struct moat_msg), FIELDS(output_fields), NULL };
static const struct object exited_object = { sizeof(struct moat_msg), FIELDS(exited_fields), check_exited };
static const struct object error_object = { sizeof(struct moat_msg), FIELDS(error_fields), NULL };
static const struct object credit_object = { sizeof(struct moat_msg), FIELDS(credit_fields), NULL };
/* clang-format on */

enum id_rule {
	ID_ZERO,    /* about the agent */
	ID_PROCESS, /* about one process: not 0 */
	ID_ANY,
};

struct msgdef {
	uint16_t type;
	const char *name;
	enum moat_proto_peer sender;
	enum id_rule id;
	const struct object *payload;
};

static const struct msgdef messages[] = {
	{ MOAT_MSG_START, "START", MOAT_PEER_HOST, ID_PROCESS, &start_object },
	{ MOAT_MSG_EXEC, "EXEC", MOAT_PEER_HOST, ID_PROCESS, &exec_object },
	{ MOAT_MSG_STDIN, "DATA", MOAT_PEER_HOST, ID_PROCESS, &stdin_object },
	{ MOAT_MSG_SIGNAL, "SIGNAL", MOAT_PEER_HOST, ID_PROCESS, &signal_object },
	{ MOAT_MSG_RESIZE, "RESIZE", MOAT_PEER_HOST, ID_PROCESS, &resize_object },
	{ MOAT_MSG_SHUTDOWN, "SHUTDOWN", MOAT_PEER_HOST, ID_ZERO, &empty_object },
	{ MOAT_MSG_CONTAINER, "CONTAINER", MOAT_PEER_HOST, ID_PROCESS, &container_object },
	{ MOAT_MSG_FREEZE, "FREEZE", MOAT_PEER_HOST, ID_PROCESS, &freeze_object },
	{ MOAT_MSG_UPDATE, "UPDATE", MOAT_PEER_HOST, ID_PROCESS, &update_object },
	{ MOAT_MSG_STATS, "STATS", MOAT_PEER_HOST, ID_PROCESS, &empty_object },
	{ MOAT_MSG_READY, "READY", MOAT_PEER_GUEST, ID_ZERO, &ready_object },
	{ MOAT_MSG_STARTED, "STARTED", MOAT_PEER_GUEST, ID_PROCESS, &started_object },
	{ MOAT_MSG_OUTPUT, "DATA", MOAT_PEER_GUEST, ID_PROCESS, &output_object },
	{ MOAT_MSG_EXITED, "EXITED", MOAT_PEER_GUEST, ID_PROCESS, &exited_object },
	{ MOAT_MSG_ERROR, "ERROR", MOAT_PEER_GUEST, ID_ANY, &error_object },
	{ MOAT_MSG_CREDIT, "CREDIT", MOAT_PEER_GUEST, ID_PROCESS, &credit_object },
	{ MOAT_MSG_FROZEN, "FROZEN", MOAT_PEER_GUEST, ID_PROCESS, &freeze_object },
	{ MOAT_MSG_UPDATED, "UPDATED", MOAT_PEER_GUEST, ID_PROCESS, &empty_object },
	{ MOAT_MSG_USAGE, "USAGE", MOAT_PEER_GUEST, ID_PROCESS, &usage_object },
};

static const struct msgdef *find_msgdef(uint16_t type)
{
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(messages); i++)
		if (messages[i].type == type)
			return &messages[i];
	return NULL;
}

const char *moat_proto_type_name(uint16_t type)
{
	const struct msgdef *d = find_msgdef(type);

	return d ? d->name : NULL;
}

static const char *peer_name(enum moat_proto_peer p)
{
	return p == MOAT_PEER_HOST ? "host" : "guest";
}

/* ---- freeing --------------------------------------------------------------------------------- */

#define AT(base, off, type) ((type *)((char *)(base) + (off)))

static void free_object(const struct object *o, void *base);

static void free_field(const struct field *f, void *base)
{
	switch (f->kind) {
	case K_STR:
		if (f->flags & F_LIST) {
			char **v = *AT(base, f->off, char **);

			for (size_t i = 0; v != NULL && i < *AT(base, f->n_off, size_t); i++)
				free(v[i]);
			free(v);
		} else {
			free(*AT(base, f->off, char *));
		}
		break;
	case K_BYTES:
	case K_U32_ARRAY:
	case K_BPF: free(*AT(base, f->off, void *)); break;
	case K_OBJ:
		if (f->flags & F_LIST) {
			char *v = *AT(base, f->off, char *);

			for (size_t i = 0; v != NULL && i < *AT(base, f->n_off, size_t); i++)
				free_object(f->obj, v + i * f->obj->size);
			free(v);
		} else {
			free_object(f->obj, AT(base, f->off, char));
		}
		break;
	default: break;
	}
}

static void free_object(const struct object *o, void *base)
{
	for (size_t i = 0; i < o->n_fields; i++)
		free_field(&o->fields[i], base);
}

void moat_msg_clear(struct moat_msg *msg)
{
	const struct msgdef *d;

	if (msg == NULL)
		return;
	d = find_msgdef(msg->type);
	if (d != NULL)
		free_object(d->payload, msg);
	memset(msg, 0, sizeof(*msg));
}

/* ---- decoding -------------------------------------------------------------------------------- */

struct tlv {
	uint16_t tag;
	uint32_t len;
	const uint8_t *value;
};

/* Take the field at *p (before end). 1: one was read; 0: the end; <0: truncated. */
static int next_tlv(const uint8_t **p, const uint8_t *end, struct tlv *ret, const char *path,
		    moat_error *err)
{
	size_t left = (size_t)(end - *p);

	if (left == 0)
		return 0;
	if (left < 6)
		return fail(err, path, "truncated field header (%zu bytes left)", left);
	ret->tag = (uint16_t)get_le(*p, 2);
	ret->len = (uint32_t)get_le(*p + 2, 4);
	if (ret->len > left - 6)
		return fail(err, path, "field tag %u: length %u runs past the end (%zu bytes left)",
			    ret->tag, ret->len, left - 6);
	ret->value = *p + 6;
	*p += 6 + (size_t)ret->len;
	return 1;
}

static const struct field *find_field(const struct object *o, uint16_t tag, size_t *ret_index)
{
	for (size_t i = 0; i < o->n_fields; i++)
		if (o->fields[i].tag == tag) {
			*ret_index = i;
			return &o->fields[i];
		}
	return NULL;
}

static int check_string(const struct field *f, const uint8_t *v, size_t len, const char *path,
			moat_error *err)
{
	const uint8_t *eq;

	if (memchr(v, '\0', len) != NULL)
		return fail(err, path, "contains a NUL byte");
	switch (f->str_check) {
	case S_PATH:
		if (v[0] != '/')
			return fail(err, path, "not an absolute path");
		break;
	case S_ENV:
		eq = memchr(v, '=', len);
		if (eq == NULL || eq == v)
			return fail(err, path, "not of the form NAME=value");
		break;
	case S_TEXT:
	case S_NAME:
		for (size_t i = 0; i < len; i++)
			if (v[i] < 0x20 || v[i] == 0x7f)
				return fail(err, path, "contains control character 0x%02x", v[i]);
		if (f->str_check == S_NAME &&
		    (memchr(v, '/', len) != NULL || (len == 1 && v[0] == '.') ||
		     (len == 2 && v[0] == '.' && v[1] == '.')))
			return fail(err, path, "not a file name");
		break;
	default: break;
	}
	return 0;
}

static int decode_object(const struct object *o, const uint8_t *p, size_t len, void *base,
			 const char *path, moat_error *err);

/* An integer (bool, u8..u64) of its exact width, within the field's range or mask. */
static int decode_int(const struct field *f, const struct tlv *t, void *slot, const char *path,
		      moat_error *err)
{
	static const size_t widths[] = {
		[K_BOOL] = 1, [K_U8] = 1, [K_U16] = 2, [K_U32] = 4, [K_U64] = 8
	};
	uint64_t v;

	if (t->len != widths[f->kind])
		return fail(err, path, "length %u, expected %zu", t->len, widths[f->kind]);
	v = get_le(t->value, t->len);
	if ((f->flags & F_MASK) && (v & ~f->max) != 0)
		return fail(err, path, "unsupported bits 0x%llx",
			    (unsigned long long)(v & ~f->max));
	if (v < f->min || v > f->max)
		return fail(err, path, "value %llu out of range %llu..%llu", (unsigned long long)v,
			    (unsigned long long)f->min, (unsigned long long)f->max);
	if (f->kind == K_BOOL)
		*(bool *)slot = v != 0;
	else if (f->kind == K_U64)
		*(uint64_t *)slot = v;
	else if (f->kind == K_U32)
		*(uint32_t *)slot = (uint32_t)v;
	else if (f->kind == K_U16)
		*(uint16_t *)slot = (uint16_t)v;
	else
		*(uint8_t *)slot = (uint8_t)v;
	return 0;
}

/* A string (NUL-terminated, checked as the field says) or bytes, of a length in range. */
static int decode_bytes(const struct field *f, const struct tlv *t, void *slot, const char *path,
			moat_error *err)
{
	bool str = f->kind == K_STR;
	uint8_t *v;

	if (t->len < f->min || t->len > f->max)
		return fail(err, path, "length %u out of range %llu..%llu", t->len,
			    (unsigned long long)f->min, (unsigned long long)f->max);
	if (str && t->len > 0 && check_string(f, t->value, t->len, path, err) < 0)
		return -EBADMSG;
	v = xmalloc((size_t)t->len + str);
	memcpy(v, t->value, t->len);
	if (str) {
		v[t->len] = '\0';
		*(char **)slot = (char *)v;
	} else {
		*(uint8_t **)slot = v;
	}
	return 0;
}

/* An array of u32, or a classic BPF program: fixed-width entries, a count in range. */
static int decode_array(const struct field *f, const struct tlv *t, void *slot, const char *path,
			moat_error *err)
{
	size_t width = f->kind == K_BPF ? BPF_INSN_SIZE : 4;
	uint64_t n;

	if (t->len % width != 0)
		return fail(err, path, "length %u is not a multiple of %zu", t->len, width);
	n = t->len / width;
	if (n < f->min || n > f->max)
		return fail(err, path, "%llu entries, expected %llu..%llu", (unsigned long long)n,
			    (unsigned long long)f->min, (unsigned long long)f->max);
	if (f->kind == K_U32_ARRAY) {
		uint32_t *a = xcalloc(n, sizeof(*a));

		for (size_t i = 0; i < n; i++)
			a[i] = (uint32_t)get_le(t->value + 4 * i, 4);
		*(uint32_t **)slot = a;
	} else {
		struct sock_filter *a = xcalloc(n, sizeof(*a));

		for (size_t i = 0; i < n; i++) {
			const uint8_t *q = t->value + BPF_INSN_SIZE * i;

			a[i].code = (uint16_t)get_le(q, 2);
			a[i].jt = q[2];
			a[i].jf = q[3];
			a[i].k = (uint32_t)get_le(q + 4, 4);
		}
		*(struct sock_filter **)slot = a;
	}
	return 0;
}

/* Decode one value into slot (which the caller zeroed). */
static int decode_value(const struct field *f, const struct tlv *t, void *slot, const char *path,
			moat_error *err)
{
	switch (f->kind) {
	case K_BOOL:
	case K_U8:
	case K_U16:
	case K_U32:
	case K_U64: return decode_int(f, t, slot, path, err);
	case K_STR:
	case K_BYTES: return decode_bytes(f, t, slot, path, err);
	case K_U32_ARRAY:
	case K_BPF: return decode_array(f, t, slot, path, err);
	case K_OBJ: return decode_object(f->obj, t->value, t->len, slot, path, err);
	default: return fail(err, path, "internal error: unknown field kind");
	}
}

/* The count that goes with an array value (bytes, array of u32, program). */
static size_t value_count(const struct field *f, const struct tlv *t)
{
	if (f->kind == K_U32_ARRAY)
		return t->len / 4;
	if (f->kind == K_BPF)
		return t->len / BPF_INSN_SIZE;
	return t->len;
}

/* First pass: framing, unknown tags, duplicates, list sizes, required
 * fields. Fills counts[] per field. Nothing is allocated. */
static int scan_object(const struct object *o, const uint8_t *p, size_t len, size_t *counts,
		       const char *path, moat_error *err)
{
	const uint8_t *end = p + len;
	struct tlv t;
	int r;

	memset(counts, 0, sizeof(size_t) * o->n_fields);
	while ((r = next_tlv(&p, end, &t, path, err)) > 0) {
		size_t i;
		const struct field *f = find_field(o, t.tag, &i);
		char fpath[160];

		if (f == NULL) {
			if (t.tag & MOAT_TAG_IGNORABLE)
				continue;
			return fail(err, path, "unknown field tag %u", t.tag);
		}
		join_path(fpath, sizeof(fpath), path, f->name, -1);
		if (!(f->flags & F_LIST) && counts[i] > 0)
			return fail(err, fpath, "given twice");
		if ((f->flags & F_LIST) && counts[i] >= f->max_count)
			return fail(err, fpath, "more than %zu entries", f->max_count);
		counts[i]++;
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < o->n_fields; i++)
		if ((o->fields[i].flags & F_REQUIRED) && counts[i] == 0) {
			char fpath[160];

			join_path(fpath, sizeof(fpath), path, o->fields[i].name, -1);
			return fail(err, fpath, "missing");
		}
	return 0;
}

static int decode_object(const struct object *o, const uint8_t *p, size_t len, void *base,
			 const char *path, moat_error *err)
{
	size_t counts[MAX_FIELDS], filled[MAX_FIELDS] = { 0 };
	const uint8_t *end = p + len;
	struct tlv t;
	int r;

	if (o->n_fields > MAX_FIELDS)
		return fail(err, path, "internal error: object has too many fields");
	r = scan_object(o, p, len, counts, path, err);
	if (r < 0)
		return r;
	/* Lists get their arrays now, sized by the scan, and their counts: the
	 * entries are zeroed, so freeing after a failure half-way is safe. */
	for (size_t i = 0; i < o->n_fields; i++) {
		const struct field *f = &o->fields[i];

		if (!(f->flags & F_LIST) || counts[i] == 0)
			continue;
		*AT(base, f->off, void *) =
			xcalloc(counts[i], f->kind == K_OBJ ? f->obj->size : sizeof(char *));
		*AT(base, f->n_off, size_t) = counts[i];
	}
	while (next_tlv(&p, end, &t, path, err) > 0) {
		size_t i;
		const struct field *f = find_field(o, t.tag, &i);
		char fpath[160];
		void *slot;

		if (f == NULL)
			continue; /* ignorable: the scan refused the others */
		if (f->flags & F_LIST) {
			join_path(fpath, sizeof(fpath), path, f->name, (long)filled[i]);
			if (f->kind == K_OBJ)
				slot = *AT(base, f->off, char *) + filled[i] * f->obj->size;
			else
				slot = *AT(base, f->off, char **) + filled[i];
		} else {
			join_path(fpath, sizeof(fpath), path, f->name, -1);
			slot = AT(base, f->off, char);
		}
		r = decode_value(f, &t, slot, fpath, err);
		if (r < 0)
			return r;
		filled[i]++;
		if (!(f->flags & F_LIST) && f->n_off != NO_OFF)
			*AT(base, f->n_off, size_t) = value_count(f, &t);
		if (f->has_off != NO_OFF)
			*AT(base, f->has_off, bool) = true;
	}
	if (o->check != NULL)
		return o->check(base, path, err);
	return 0;
}

int moat_proto_decode(enum moat_proto_peer from, const uint8_t *buf, size_t len, size_t *ret_used,
		      struct moat_msg *ret, moat_error *err)
{
	const struct msgdef *d;
	uint32_t plen, id;
	uint16_t type;
	int r;

	memset(ret, 0, sizeof(*ret));
	*ret_used = 0;
	if (len < MOAT_PROTO_HEADER_SIZE)
		return 0;
	plen = (uint32_t)get_le(buf, 4);
	type = (uint16_t)get_le(buf + 4, 2);
	id = (uint32_t)get_le(buf + 6, 4);
	if (plen > MOAT_PROTO_MAX_PAYLOAD)
		return moat_error_msg(
			err, EMSGSIZE,
			"frame of type %u: payload of %u bytes is over the limit of %d", type, plen,
			MOAT_PROTO_MAX_PAYLOAD);
	if (len - MOAT_PROTO_HEADER_SIZE < plen)
		return 0;
	/* From here on the frame can be skipped whatever is wrong inside it. */
	*ret_used = MOAT_PROTO_HEADER_SIZE + (size_t)plen;
	d = find_msgdef(type);
	if (d == NULL)
		return moat_error_msg(err, EBADMSG, "unknown message type 0x%02x", type);
	if (d->sender != from)
		return moat_error_msg(err, EBADMSG,
				      "message type 0x%02x (%s) is not one the %s sends", type,
				      d->name, peer_name(from));
	if (d->id == ID_ZERO && id != 0)
		return moat_error_msg(err, EBADMSG, "%s: id must be 0, not %u", d->name, id);
	if (d->id == ID_PROCESS && id == 0)
		return moat_error_msg(err, EBADMSG, "%s: id must not be 0", d->name);
	ret->type = type;
	ret->id = id;
	r = decode_object(d->payload, buf + MOAT_PROTO_HEADER_SIZE, plen, ret, "", err);
	if (r < 0) {
		moat_msg_clear(ret);
		return moat_error_prefix(err, "%s", d->name);
	}
	return 1;
}

/* ---- encoding -------------------------------------------------------------------------------- */

/* Start a field: its header with a length to patch. Returns where the value begins. */
static size_t begin_tlv(struct moat_buf *b, uint16_t tag)
{
	append_le(b, tag, 2);
	append_le(b, 0, 4);
	return b->len;
}

static void end_tlv(struct moat_buf *b, size_t start)
{
	put_le(b->data + start - 4, b->len - start, 4);
}

/* An encoding in progress: the buffer and where its frame begins. */
struct enc {
	struct moat_buf *b;
	size_t frame;
};

static int encode_object(const struct object *o, const void *base, struct enc *e, const char *path,
			 moat_error *err);

static int encode_value(const struct field *f, const void *slot, size_t n, struct enc *e,
			const char *path, moat_error *err)
{
	struct moat_buf *b = e->b;
	size_t start;
	int r = 0;

	/* Stop well before the u32 length could wrap, without building a huge
	 * frame first; the decode that follows refuses what is merely over
	 * the limit. */
	if (b->len - e->frame > (size_t)MOAT_PROTO_MAX_PAYLOAD * 2)
		return fail(err, path, "message too large");
	start = begin_tlv(b, f->tag);
	switch (f->kind) {
	case K_BOOL: append_le(b, *(const bool *)slot ? 1 : 0, 1); break;
	case K_U8: append_le(b, *(const uint8_t *)slot, 1); break;
	case K_U16: append_le(b, *(const uint16_t *)slot, 2); break;
	case K_U32: append_le(b, *(const uint32_t *)slot, 4); break;
	case K_U64: append_le(b, *(const uint64_t *)slot, 8); break;
	case K_STR: {
		const char *s = *(const char *const *)slot;
		size_t l = strnlen(s, (size_t)MOAT_PROTO_MAX_PAYLOAD + 1);

		if (l > MOAT_PROTO_MAX_PAYLOAD)
			return fail(err, path, "string too long");
		moat_buf_append(b, s, l);
		break;
	}
	case K_BYTES:
		if (n > MOAT_PROTO_MAX_PAYLOAD)
			return fail(err, path, "%zu bytes is too long", n);
		moat_buf_append(b, *(const uint8_t *const *)slot, n);
		break;
	case K_U32_ARRAY:
		if (n > MOAT_PROTO_MAX_PAYLOAD / 4)
			return fail(err, path, "%zu entries is too many", n);
		for (size_t i = 0; i < n; i++)
			append_le(b, (*(const uint32_t *const *)slot)[i], 4);
		break;
	case K_BPF:
		if (n > MOAT_PROTO_MAX_PAYLOAD / BPF_INSN_SIZE)
			return fail(err, path, "%zu instructions is too many", n);
		for (size_t i = 0; i < n; i++) {
			const struct sock_filter *ins =
				&(*(const struct sock_filter *const *)slot)[i];

			append_le(b, ins->code, 2);
			append_le(b, ins->jt, 1);
			append_le(b, ins->jf, 1);
			append_le(b, ins->k, 4);
		}
		break;
	case K_OBJ: r = encode_object(f->obj, slot, e, path, err); break;
	}
	end_tlv(b, start);
	return r;
}

/* Whether an optional field is there to send. */
static bool present(const struct field *f, const void *base)
{
	if (f->flags & F_REQUIRED)
		return true;
	if (f->has_off != NO_OFF)
		return *AT(base, f->has_off, const bool);
	switch (f->kind) {
	case K_BOOL: return *AT(base, f->off, const bool);
	case K_U8: return *AT(base, f->off, const uint8_t) != 0;
	case K_U16: return *AT(base, f->off, const uint16_t) != 0;
	case K_U32: return *AT(base, f->off, const uint32_t) != 0;
	case K_U64: return *AT(base, f->off, const uint64_t) != 0;
	default:
		/* An array given as NULL with a count is caught as missing. */
		return *AT(base, f->off, void *const) != NULL ||
		       (f->n_off != NO_OFF && *AT(base, f->n_off, const size_t) > 0);
	}
}

static int encode_object(const struct object *o, const void *base, struct enc *e, const char *path,
			 moat_error *err)
{
	for (size_t i = 0; i < o->n_fields; i++) {
		const struct field *f = &o->fields[i];
		size_t n = f->n_off != NO_OFF ? *AT(base, f->n_off, const size_t) : 0;
		char fpath[160];
		int r;

		join_path(fpath, sizeof(fpath), path, f->name, -1);
		if (f->flags & F_LIST) {
			const char *arr = *AT(base, f->off, const char *const);
			size_t elsize = f->kind == K_OBJ ? f->obj->size : sizeof(char *);

			if (n > 0 && arr == NULL)
				return fail(err, fpath, "%zu entries but no array", n);
			if (n > f->max_count)
				return fail(err, fpath, "more than %zu entries", f->max_count);
			for (size_t j = 0; j < n; j++) {
				join_path(fpath, sizeof(fpath), path, f->name, (long)j);
				if (f->kind == K_STR && ((const char *const *)arr)[j] == NULL)
					return fail(err, fpath, "missing");
				r = encode_value(f, arr + j * elsize, 0, e, fpath, err);
				if (r < 0)
					return r;
			}
			continue;
		}
		if (!present(f, base))
			continue;
		/* A required pointer that is NULL: nothing to send (empty bytes
		 * are fine as long as there are none). */
		if ((f->kind == K_STR ||
		     ((f->kind == K_BYTES || f->kind == K_U32_ARRAY || f->kind == K_BPF) &&
		      n > 0)) &&
		    *AT(base, f->off, void *const) == NULL)
			return fail(err, fpath, "missing");
		if (f->kind == K_BPF && *AT(base, f->off, void *const) != NULL && n == 0)
			return fail(err, fpath, "empty program");
		r = encode_value(f, AT(base, f->off, const char), n, e, fpath, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int moat_proto_encode(enum moat_proto_peer sender, const struct moat_msg *msg, struct moat_buf *out,
		      moat_error *err)
{
	const struct msgdef *d = find_msgdef(msg->type);
	size_t start = out->len, used = 0;
	struct enc e = { out, out->len };
	struct moat_msg check;
	int r;

	if (d == NULL)
		return moat_error_msg(err, EINVAL, "unknown message type 0x%02x", msg->type);
	append_le(out, 0, 4);
	append_le(out, msg->type, 2);
	append_le(out, msg->id, 4);
	r = encode_object(d->payload, msg, &e, "", err);
	if (r < 0) {
		out->len = start;
		return moat_error_prefix(err, "%s", d->name);
	}
	if (out->len - start - MOAT_PROTO_HEADER_SIZE > MOAT_PROTO_MAX_PAYLOAD) {
		size_t plen = out->len - start - MOAT_PROTO_HEADER_SIZE;

		out->len = start;
		return moat_error_msg(err, EMSGSIZE,
				      "%s: payload of %zu bytes is over the limit of %d", d->name,
				      plen, MOAT_PROTO_MAX_PAYLOAD);
	}
	put_le(out->data + start, out->len - start - MOAT_PROTO_HEADER_SIZE, 4);
	/* What the receiver will check, checked here with the same code. */
	r = moat_proto_decode(sender, out->data + start, out->len - start, &used, &check, err);
	if (r <= 0) {
		out->len = start;
		return r < 0 ? r
			     : moat_error_msg(err, EINVAL, "%s: encoded frame incomplete", d->name);
	}
	moat_msg_clear(&check);
	return 0;
}

/* ---- helpers --------------------------------------------------------------------------------- */

void moat_proto_output_prefix(uint8_t out[MOAT_PROTO_OUTPUT_PREFIX], uint32_t id, uint8_t stream,
			      uint32_t len)
{
	uint8_t *f = out + MOAT_PROTO_HEADER_SIZE;

	put_le(out, MOAT_PROTO_OUTPUT_PREFIX - MOAT_PROTO_HEADER_SIZE + (uint64_t)len, 4);
	put_le(out + 4, MOAT_MSG_OUTPUT, 2);
	put_le(out + 6, id, 4);
	/* field 1, stream: u8 */
	put_le(f, 1, 2);
	put_le(f + 2, 1, 4);
	f[6] = stream;
	/* field 2, bytes: its tag and length, the bytes to follow */
	put_le(f + 7, 2, 2);
	put_le(f + 9, len, 4);
}

int moat_proto_exit_code(const struct moat_msg_exited *e)
{
	if (e->has_signal)
		return 128 + (int)e->signal;
	return (int)e->status;
}

void moat_proto_sanitize_text(char *dst, size_t size, const char *text)
{
	size_t i, max = size - 1;

	if (max > MOAT_PROTO_MAX_MESSAGE)
		max = MOAT_PROTO_MAX_MESSAGE;
	for (i = 0; i < max && text[i] != '\0'; i++) {
		unsigned char c = (unsigned char)text[i];

		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[i] = '\0';
}
