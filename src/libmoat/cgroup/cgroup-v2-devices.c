/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the cgroup v2 device filter. Answers "which eBPF program enforces these device rules,
 * and how does it replace the one before?": the rules checked and compiled into a
 * BPF_PROG_TYPE_CGROUP_DEVICE program (the layout and what it decides are described in
 * cgroup-v2-devices.h), loaded through bpf(2) and attached to the container's cgroup. */
#include "cgroup-v2-devices.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "utils.h"

/* The program's registers. r1 holds the context (struct bpf_cgroup_dev_ctx) on entry. */
#define R_RET BPF_REG_0 /* the verdict, and scratch before it */
#define R_CTX BPF_REG_1
#define R_TYPE BPF_REG_2 /* BPF_DEVCG_DEV_BLOCK or BPF_DEVCG_DEV_CHAR */
#define R_WANT BPF_REG_3 /* BPF_DEVCG_ACC_* bits the request asks and no rule decided yet */
#define R_MAJOR BPF_REG_4
#define R_MINOR BPF_REG_5

#define VERIFIER_LOG_SIZE \
	(256u << 10) /* the verifier's account of a failing load; when it is
					* longer, Linux 6.4 and later keep its end */
#define LOAD_TRIES 5 /* BPF_PROG_LOAD fails with EAGAIN when a signal interrupts the verifier */

/* "GPL": moat is GPL-2.0-or-later, and this is what the program's license is. The program
 * calls no helper at all, so nothing depends on it being GPL-compatible. */
static const char prog_license[] = "GPL";

/* A rule as the program tests it. */
struct dev_rule {
	bool allow;
	uint32_t type;   /* BPF_DEVCG_DEV_*; 0: block and char */
	int64_t major;   /* CG_DEV_ANY: any */
	int64_t minor;   /* CG_DEV_ANY: any */
	uint32_t access; /* BPF_DEVCG_ACC_* */
};

static const struct {
	char letter;
	uint32_t bit;
} access_letters[] = {
	{ 'r', BPF_DEVCG_ACC_READ },
	{ 'w', BPF_DEVCG_ACC_WRITE },
	{ 'm', BPF_DEVCG_ACC_MKNOD },
};

/* ---- the rules --------------------------------------------------------------------------- */

static int parse_access(const char *text, uint32_t *ret)
{
	size_t i, j;

	*ret = 0;
	if (*text == '\0')
		return -EINVAL;
	for (i = 0; text[i] != '\0'; i++) {
		for (j = 0; j < MOAT_ARRAY_SIZE(access_letters); j++)
			if (text[i] == access_letters[j].letter)
				break;
		if (j == MOAT_ARRAY_SIZE(access_letters))
			return -EINVAL;
		*ret |= access_letters[j].bit;
	}
	return 0;
}

static int parse_type(const char *text, uint32_t *ret)
{
	if (strcmp(text, "a") == 0)
		*ret = 0;
	else if (strcmp(text, "b") == 0)
		*ret = BPF_DEVCG_DEV_BLOCK;
	else if (strcmp(text, "c") == 0)
		*ret = BPF_DEVCG_DEV_CHAR;
	else
		return -EINVAL;
	return 0;
}

/* A major or minor: absent or -1 is any; the kernel reports them as 32-bit numbers. */
static int parse_number(bool present, int64_t v, const char *field, const char *what, int64_t *ret,
			moat_error *err)
{
	if (!present || v == CG_DEV_ANY) {
		*ret = CG_DEV_ANY;
		return 0;
	}
	if (v < 0 || v > UINT32_MAX)
		return moat_error_msg(err, EINVAL,
				      "%s.%s: %" PRId64 " is not -1 (any) or 0..%" PRIu32, field,
				      what, v, UINT32_MAX);
	*ret = v;
	return 0;
}

static int rule_from_oci(const struct oci_device_cgroup *d, const char *field, struct dev_rule *r,
			 moat_error *err)
{
	const char *type = d->type ? d->type : "a";
	const char *access = d->access ? d->access : "rwm";

	r->allow = d->allow;
	if (parse_type(type, &r->type) < 0)
		return moat_error_msg(err, EINVAL, "%s.type: '%s' is not a, b or c", field, type);
	if (parse_access(access, &r->access) < 0)
		return moat_error_msg(err, EINVAL, "%s.access: '%s' is not made of r, w and m",
				      field, access);
	if (parse_number(d->major_present, d->major, field, "major", &r->major, err) < 0 ||
	    parse_number(d->minor_present, d->minor, field, "minor", &r->minor, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* What the rules allow after them (a listed or a default device) goes through the same checks
 * as the config's rules. */
static int rule_from_allow(const struct cg_allow *a, struct dev_rule *r, moat_error *err)
{
	char type[2] = { a->type, '\0' };
	struct oci_device_cgroup d = {
		.allow = true,
		.type = type,
		.access = (char *)a->access,
		.major = a->major,
		.major_present = true,
		.minor = a->minor,
		.minor_present = true,
	};

	return rule_from_oci(&d, a->field, r, err);
}

/* ---- the program ------------------------------------------------------------------------- */

static void emit(struct cg_dev_prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off,
		 int32_t imm)
{
	struct bpf_insn *insn;

	p->insns = xrealloc(p->insns, (p->n + 1) * sizeof(*p->insns));
	insn = &p->insns[p->n++];
	memset(insn, 0, sizeof(*insn));
	insn->code = code;
	insn->dst_reg = dst;
	insn->src_reg = src;
	insn->off = off;
	insn->imm = imm;
}

/* Take the request apart: type and accesses out of access_type, major, minor. */
static void emit_prologue(struct cg_dev_prog *p)
{
	emit(p, BPF_LDX | BPF_MEM | BPF_W, R_TYPE, R_CTX,
	     (int16_t)offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, R_WANT, R_TYPE, 0, 0);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R_TYPE, 0, 0, 0xffff);
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R_WANT, 0, 0, 16);
	emit(p, BPF_LDX | BPF_MEM | BPF_W, R_MAJOR, R_CTX,
	     (int16_t)offsetof(struct bpf_cgroup_dev_ctx, major), 0);
	emit(p, BPF_LDX | BPF_MEM | BPF_W, R_MINOR, R_CTX,
	     (int16_t)offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
}

static void emit_exit(struct cg_dev_prog *p, int32_t verdict)
{
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, R_RET, 0, 0, verdict);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/* The offset for the jump emitted next to reach the end of the block [start, end). */
static int16_t to_end(const struct cg_dev_prog *p, size_t end)
{
	return (int16_t)(end - p->n - 1);
}

/* One rule: guards that jump past the block when the device does not match, then the verdict
 * part. */
static void emit_rule(struct cg_dev_prog *p, const struct dev_rule *r)
{
	size_t guards = (r->type != 0) + (r->major != CG_DEV_ANY) + (r->minor != CG_DEV_ANY);
	size_t end = p->n + guards + (r->allow ? 4 : 5);

	if (r->type != 0)
		emit(p, BPF_JMP32 | BPF_JNE | BPF_K, R_TYPE, 0, to_end(p, end), (int32_t)r->type);
	if (r->major != CG_DEV_ANY)
		emit(p, BPF_JMP32 | BPF_JNE | BPF_K, R_MAJOR, 0, to_end(p, end),
		     (int32_t)(uint32_t)r->major);
	if (r->minor != CG_DEV_ANY)
		emit(p, BPF_JMP32 | BPF_JNE | BPF_K, R_MINOR, 0, to_end(p, end),
		     (int32_t)(uint32_t)r->minor);
	if (r->allow) {
		/* the accesses it names are allowed; done once none is left undecided */
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R_WANT, 0, 0, ~(int32_t)r->access);
		emit(p, BPF_JMP | BPF_JNE | BPF_K, R_WANT, 0, to_end(p, end), 0);
		emit_exit(p, 1);
	} else {
		/* an undecided access it names is denied, and with it the request */
		emit(p, BPF_ALU64 | BPF_MOV | BPF_X, R_RET, R_WANT, 0, 0);
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R_RET, 0, 0, (int32_t)r->access);
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, R_RET, 0, to_end(p, end), 0);
		emit_exit(p, 0);
	}
}

void cg_dev_prog_free(struct cg_dev_prog *p)
{
	if (p == NULL)
		return;
	free(p->insns);
	free(p);
}

int cg_v2_devices_compile(struct oci_device_cgroup *const *rules, size_t n,
			  const struct cg_allows *allows, struct cg_dev_prog **ret, moat_error *err)
{
	struct cg_dev_prog *p = xcalloc(1, sizeof(*p));
	struct dev_rule r;
	size_t i;

	emit_prologue(p);
	/* last rule first: the allows from their end, then the config's rules from theirs */
	for (i = allows->n; i-- > 0;) {
		if (rule_from_allow(&allows->a[i], &r, err) < 0)
			goto fail;
		emit_rule(p, &r);
	}
	for (i = n; i-- > 0;) {
		_cleanup_free_ char *field = xasprintf("linux.resources.devices[%zu]", i);

		if (rule_from_oci(rules[i], field, &r, err) < 0)
			goto fail;
		emit_rule(p, &r);
	}
	emit_exit(p, 0);
	if (p->n > BPF_MAXINSNS) {
		size_t len = p->n;

		cg_dev_prog_free(p);
		return moat_error_msg(err, E2BIG,
				      "linux.resources.devices: %zu rules make a device filter "
				      "of %zu instructions, more than the %d the kernel takes",
				      n, len, BPF_MAXINSNS);
	}
	*ret = p;
	return 0;
fail:
	cg_dev_prog_free(p);
	return moat_error_ret(err);
}

/* ---- the kernel -------------------------------------------------------------------------- */

static uint64_t ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int prog_load(const struct bpf_insn *insns, size_t n, char *log, size_t log_size)
{
	union bpf_attr attr;
	int fd, tries = 0;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.expected_attach_type = BPF_CGROUP_DEVICE;
	attr.insns = ptr(insns);
	attr.insn_cnt = (uint32_t)n;
	attr.license = ptr(prog_license);
	memcpy(attr.prog_name, CG_DEV_PROG_NAME, sizeof(CG_DEV_PROG_NAME));
	if (log != NULL) {
		log[0] = '\0';
		attr.log_level = 1;
		attr.log_buf = ptr(log);
		attr.log_size = (uint32_t)log_size;
	}
	do
		fd = sys_bpf(BPF_PROG_LOAD, &attr);
	while (fd < 0 && errno == EAGAIN && ++tries < LOAD_TRIES);
	return fd;
}

/* The verifier's reason for refusing: the last line of its log before the summary that
 * starts "processed N insns". The log's first lines only retrace the instructions it
 * walked. */
static char *verifier_reason(const char *log)
{
	const char *line = log, *reason = NULL;
	size_t reason_len = 0;

	while (*line != '\0') {
		size_t len = strcspn(line, "\n");

		if (strncmp(line, "processed ", 10) == 0)
			break;
		if (len > 0) {
			reason = line;
			reason_len = len;
		}
		line += len + (line[len] == '\n');
	}
	return reason ? xasprintf("%.*s", (int)reason_len, reason) : xstrdup("no log");
}

int cg_v2_devices_load(const struct bpf_insn *insns, size_t n, moat_error *err)
{
	_cleanup_free_ char *log = NULL, *reason = NULL;
	int fd = prog_load(insns, n, NULL, 0), e;

	if (fd >= 0)
		return fd;
	e = errno;
	if (e == EPERM || e == ENOSYS || e == E2BIG)
		return moat_error_set(err, e, "load the device filter (bpf BPF_PROG_LOAD)");
	log = xmalloc(VERIFIER_LOG_SIZE);
	fd = prog_load(insns, n, log, VERIFIER_LOG_SIZE);
	if (fd >= 0)
		return fd;
	reason = verifier_reason(log);
	return moat_error_msg(err, e, "load the device filter: %s (verifier: %s)", strerror(e),
			      reason);
}

/* Programs of moat's, as fds that keep them alive until they are detached. */
struct prog_fds {
	int fd[CG_DEV_MAX_ATTACHED];
	size_t n;
};

static void prog_fds_close(struct prog_fds *s)
{
	while (s->n > 0)
		close(s->fd[--s->n]);
}

/* Whether the program fd is one moat attached, by its name. */
static int prog_is_moat(int fd, bool *ret)
{
	struct bpf_prog_info info;
	union bpf_attr attr;

	memset(&info, 0, sizeof(info));
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (uint32_t)fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = ptr(&info);
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) < 0)
		return -errno;
	*ret = strncmp(info.name, CG_DEV_PROG_NAME, sizeof(info.name)) == 0;
	return 0;
}

static int prog_fd_by_id(uint32_t id)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_id = id;
	return sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
}

/* The device programs attached to the cgroup itself (not its ancestors') that are moat's. */
static int moat_progs(int cgfd, const char *dir, struct prog_fds *ret, moat_error *err)
{
	uint32_t ids[CG_DEV_MAX_ATTACHED];
	union bpf_attr attr;
	size_t i;

	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = (uint32_t)cgfd;
	attr.query.attach_type = BPF_CGROUP_DEVICE;
	attr.query.prog_ids = ptr(ids);
	attr.query.prog_cnt = CG_DEV_MAX_ATTACHED;
	if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
		return moat_error_set(err, errno, "list the device filters of '%s'", dir);
	for (i = 0; i < attr.query.prog_cnt && i < CG_DEV_MAX_ATTACHED; i++) {
		int fd = prog_fd_by_id(ids[i]), r;
		bool mine = false;

		if (fd < 0 && errno == ENOENT) /* detached and freed meanwhile */
			continue;
		if (fd < 0)
			return moat_error_set(err, errno, "open device filter %" PRIu32 " of '%s'",
					      ids[i], dir);
		r = prog_is_moat(fd, &mine);
		if (r < 0) {
			close(fd);
			return moat_error_set(err, -r, "inspect device filter %" PRIu32 " of '%s'",
					      ids[i], dir);
		}
		if (mine)
			ret->fd[ret->n++] = fd;
		else
			close(fd);
	}
	return 0;
}

static int prog_attach(int cmd, int cgfd, int progfd)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cgfd;
	attr.attach_bpf_fd = (uint32_t)progfd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = cmd == BPF_PROG_ATTACH ? BPF_F_ALLOW_MULTI : 0;
	return sys_bpf(cmd, &attr);
}

int cg_v2_devices_install(int cgfd, const char *dir, const struct cg_dev_prog *p, moat_error *err)
{
	_cleanup_(prog_fds_close) struct prog_fds old = { .n = 0 };
	_cleanup_close_ int fd = cg_v2_devices_load(p->insns, p->n, err);
	size_t i;

	if (fd < 0)
		return fd;
	if (moat_progs(cgfd, dir, &old, err) < 0)
		return moat_error_ret(err);
	if (prog_attach(BPF_PROG_ATTACH, cgfd, fd) < 0)
		return moat_error_set(err, errno, "attach the device filter to '%s'", dir);
	for (i = 0; i < old.n; i++)
		if (prog_attach(BPF_PROG_DETACH, cgfd, old.fd[i]) < 0 && errno != ENOENT)
			return moat_error_set(err, errno,
					      "attached the new device filter to '%s' "
					      "but could not detach the old one",
					      dir);
	return 0;
}
