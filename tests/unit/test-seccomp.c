/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for linux.seccomp (seccomp.c) and moat's default profile.
 *   - Compiling: every refusal names its JSON path in one line; names libseccomp does not
 *     know are skipped with a warning; of two clashing rules libseccomp would keep one
 *     without a word: moat keeps the same one and warns;
 *     repeated argument indexes become alternatives.
 *   - What a compiled filter decides, without loading it: a small interpreter runs the
 *     exported BPF program on a seccomp_data. For the default profile: every x86_64 syscall
 *     number gets what the JSON says (or the default), the argument rules (socket families,
 *     ioctl requests with any upper bits, clone flags, personality) decide as documented,
 *     and other architectures' entry points kill the process.
 *   - For real, in forked children: an ERRNO action, the default profile (denied calls fail
 *     with the documented errno, ordinary ones work, threads still start), NOTIFY through the
 *     listener protocol, x32 and i386 entry points killed with SIGSYS, and the load refused
 *     without no_new_privs or CAP_SYS_ADMIN with an error that says so.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include <seccomp.h>

#include "syscall-filter.h"

#include "oci-config.h"
#include "utils.h"

#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))
#define RET_KILL_PROCESS SECCOMP_RET_KILL_PROCESS
#define HI32 0xffffffff00000000ULL

/* ---- helpers ---------------------------------------------------------------------------- */

static struct oci_seccomp *parse(const char *json)
{
	void *obj = NULL;
	char *msg = NULL;

	if (ocijson_parse_data(&oci_seccomp_type, json, strlen(json), "test", &obj, &msg) != 0)
		fail_msg("parse %s: %s", json, msg);
	return obj;
}

static void replace(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value);
}

/* Prepare s; the error message (or NULL) and warnings go to err. */
static struct moat_seccomp *prepare(const struct oci_seccomp *s, moat_error *err)
{
	struct moat_seccomp *sc = NULL;

	if (moat_seccomp_prepare(s, &sc, err) < 0)
		return NULL;
	assert_non_null(sc);
	return sc;
}

static struct moat_seccomp *prepare_json(const char *json, moat_error *err)
{
	struct oci_seccomp *s = parse(json);
	struct moat_seccomp *sc = prepare(s, err);

	ocijson_free(&oci_seccomp_type, s);
	return sc;
}

/* The error prepare gives s: it must fail with a single line containing want. */
static void expect_error(struct oci_seccomp *s, const char *want)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc = prepare(s, &err);

	if (sc != NULL)
		fail_msg("no error, expected \"%s\"", want);
	assert_non_null(err.msg);
	if (strstr(err.msg, want) == NULL || strchr(err.msg, '\n') != NULL)
		fail_msg("error \"%s\", expected \"%s\"", err.msg, want);
	moat_error_clear(&err);
	ocijson_free(&oci_seccomp_type, s);
}

static void expect_json_error(const char *json, const char *want)
{
	expect_error(parse(json), want);
}

/* ---- a BPF interpreter, to see what a filter decides ------------------------------------ */

struct program {
	struct sock_filter *insns;
	size_t len;
};

static struct program export_bpf(const struct moat_seccomp *sc)
{
	moat_error err = MOAT_ERROR_INIT;
	int fd = memfd_create("bpf", MFD_CLOEXEC);
	struct program p = { 0 };
	off_t size;

	assert_true(fd >= 0);
	if (moat_seccomp_export(sc, fd, false, &err) < 0)
		fail_msg("export: %s", err.msg);
	size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0 && size % (off_t)sizeof(struct sock_filter) == 0);
	p.len = (size_t)size / sizeof(struct sock_filter);
	p.insns = xcalloc(p.len, sizeof(struct sock_filter));
	assert_int_equal(pread(fd, p.insns, (size_t)size, 0), size);
	close(fd);
	return p;
}

static uint32_t run(const struct program *p, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	size_t pc = 0;

	while (pc < p->len) {
		const struct sock_filter *i = &p->insns[pc++];

		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			assert_true(i->k + 4 <= sizeof(*d));
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_LD | BPF_IMM: a = i->k; break;
		case BPF_LDX | BPF_IMM: x = i->k; break;
		case BPF_LD | BPF_MEM: a = mem[i->k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: x = mem[i->k % BPF_MEMWORDS]; break;
		case BPF_ST: mem[i->k % BPF_MEMWORDS] = a; break;
		case BPF_STX: mem[i->k % BPF_MEMWORDS] = x; break;
		case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
		case BPF_ALU | BPF_OR | BPF_K: a |= i->k; break;
		case BPF_MISC | BPF_TAX: x = a; break;
		case BPF_MISC | BPF_TXA: a = x; break;
		case BPF_JMP | BPF_JA: pc += i->k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
		case BPF_RET | BPF_K: return i->k;
		case BPF_RET | BPF_A: return a;
		default: fail_msg("instruction %zu: opcode %#x not interpreted", pc - 1, i->code);
		}
	}
	fail_msg("the program runs off its end");
	return 0;
}

static uint32_t decide(const struct program *p, uint32_t arch, int nr, uint64_t a0, uint64_t a1,
		       uint64_t a2)
{
	struct seccomp_data d = { .nr = nr, .arch = arch, .args = { a0, a1, a2 } };

	return run(p, &d);
}

#define X86_64 AUDIT_ARCH_X86_64
#define expect_decision(p, nr, a0, a1, a2, want)                                     \
	do {                                                                         \
		uint32_t _got = decide(p, X86_64, nr, a0, a1, a2);                   \
		if (_got != (want))                                                  \
			fail_msg("%s(%#llx, %#llx, %#llx): %#x, expected %#x", #nr,  \
				 (unsigned long long)(a0), (unsigned long long)(a1), \
				 (unsigned long long)(a2), _got, (uint32_t)(want));  \
	} while (0)

/* ---- compiling: errors ------------------------------------------------------------------ */

#define ONE_RULE(rule) "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [" rule "]}"

static void test_errors_name_the_path(void **state)
{
	struct oci_seccomp *s;

	s = parse("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
		  "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\"},"
		  "{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_ERRNO\"},"
		  "{\"names\": [\"getuid\"], \"action\": \"SCMP_ACT_ERRNO\"},"
		  "{\"names\": [\"getgid\"], \"action\": \"SCMP_ACT_ERRNO\"}]}");
	replace(&s->syscalls[3]->action, "SCMP_ACT_FOO");
	expect_error(s, "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"");
	s = parse("{\"defaultAction\": \"SCMP_ACT_ALLOW\"}");
	replace(&s->default_action, "SCMP_ACT_BAR");
	expect_error(s, "linux.seccomp.defaultAction: unknown action \"SCMP_ACT_BAR\"");
	s = parse(ONE_RULE("{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": "
			   "[{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}"));
	replace(&s->syscalls[0]->args[0]->op, "SCMP_CMP_XX");
	expect_error(s, "linux.seccomp.syscalls[0].args[0].op: unknown operator \"SCMP_CMP_XX\"");
	s = parse("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86\", "
		  "\"SCMP_ARCH_X86\"]}");
	replace(&s->architectures[1], "SCMP_ARCH_Z80");
	expect_error(s, "linux.seccomp.architectures[1]: unknown architecture \"SCMP_ARCH_Z80\"");
	s = parse("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": "
		  "[\"SECCOMP_FILTER_FLAG_LOG\"]}");
	replace(&s->flags[0], "SECCOMP_FILTER_FLAG_FOO");
	expect_error(s, "linux.seccomp.flags[0]: unknown flag \"SECCOMP_FILTER_FLAG_FOO\"");
}

static void test_errors_errno_and_args(void **state)
{
	expect_json_error(ONE_RULE("{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\", "
				   "\"errnoRet\": 1}"),
			  "linux.seccomp.syscalls[0].errnoRet: SCMP_ACT_ALLOW takes no errno");
	expect_json_error("{\"defaultAction\": \"SCMP_ACT_KILL_PROCESS\", \"defaultErrnoRet\": 1}",
			  "linux.seccomp.defaultErrnoRet: SCMP_ACT_KILL_PROCESS takes no errno");
	expect_json_error(ONE_RULE("{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\", "
				   "\"errnoRet\": 5000}"),
			  "linux.seccomp.syscalls[0].errnoRet: 5000 is out of range for "
			  "SCMP_ACT_ERRNO (0..4095)");
	expect_json_error(
		ONE_RULE("{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": ["
			 "{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"},"
			 "{\"index\": 6, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}"),
		"linux.seccomp.syscalls[0].args[1].index: 6 is not an argument index");
	expect_json_error(
		ONE_RULE("{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": ["
			 "{\"index\": 0, \"value\": 1, \"valueTwo\": 3, \"op\": "
			 "\"SCMP_CMP_EQ\"}]}"),
		"linux.seccomp.syscalls[0].args[0].valueTwo: only SCMP_CMP_MASKED_EQ");
	expect_json_error(ONE_RULE("{\"names\": [], \"action\": \"SCMP_ACT_ERRNO\"}"),
			  "linux.seccomp.syscalls[0].names: no syscall named");
}

static void test_errors_notify(void **state)
{
	expect_json_error("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerMetadata\": \"x\"}",
			  "linux.seccomp.listenerMetadata: set without listenerPath");
	expect_json_error(ONE_RULE("{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_NOTIFY\"}"),
			  "linux.seccomp.listenerPath: required when an action is SCMP_ACT_NOTIFY");
	expect_json_error("{\"defaultAction\": \"SCMP_ACT_NOTIFY\", \"listenerPath\": \"/x\"}",
			  "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY would hold every syscall");
	expect_json_error(
		"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/x\", "
		"\"syscalls\": [{\"names\": [\"getpid\", \"sendmsg\"], "
		"\"action\": \"SCMP_ACT_NOTIFY\"}]}",
		"linux.seccomp.syscalls[0].names[1]: SCMP_ACT_NOTIFY cannot apply to sendmsg");
}

static void test_errors_flags(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc;

#if SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR < 6
	expect_json_error("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": "
			  "[\"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV\"]}",
			  "linux.seccomp.flags[0]: SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV needs "
			  "libseccomp 2.6");
#endif
	sc = prepare_json("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": ["
			  "\"SECCOMP_FILTER_FLAG_TSYNC\", \"SECCOMP_FILTER_FLAG_LOG\", "
			  "\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"]}",
			  &err);
	if (sc == NULL)
		fail_msg("flags: %s", err.msg);
	moat_seccomp_free(sc);
	moat_error_clear(&err);
}

/* Prepare json, which must compile with a warning containing want; its program. */
static struct program expect_json_warning(const char *json, const char *want)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc = prepare_json(json, &err);
	struct program p;

	if (sc == NULL)
		fail_msg("error \"%s\", expected the warning \"%s\"", err.msg, want);
	if (err.warn == NULL || strstr(err.warn, want) == NULL)
		fail_msg("warnings \"%s\", expected \"%s\"", err.warn ? err.warn : "", want);
	p = export_bpf(sc);
	moat_seccomp_free(sc);
	moat_error_clear(&err);
	return p;
}

/* A syscall with rules of two actions, one of them without args: libseccomp keeps the one
 * without args (the first, when neither has) and drops the other without a word, as runc and
 * crun do with the same profile; moat keeps the same rule and says which one it ignores. */
static void test_clashing_rules_warn(void **state)
{
	struct program p;

	/* Podman's default profile: setns allowed, and EPERM "without CAP_SYS_ADMIN" after it */
	p = expect_json_warning(
		"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, "
		"\"syscalls\": ["
		"{\"names\": [\"getpid\", \"setns\"], \"action\": \"SCMP_ACT_ALLOW\"},"
		"{\"names\": [\"setns\"], \"action\": \"SCMP_ACT_ERRNO\", "
		"\"errnoRet\": 1}]}",
		"linux.seccomp.syscalls[1]: the rule for \"setns\" is ignored: "
		"syscalls[0] gives it another action first");
	expect_decision(&p, SYS_setns, 0, 0, 0, SECCOMP_RET_ALLOW);
	free(p.insns);
	/* a conditional rule after one without args */
	p = expect_json_warning(ONE_RULE("{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_LOG\"},"
					 "{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", "
					 "\"args\": [{\"index\": 1, \"value\": 21522, "
					 "\"op\": \"SCMP_CMP_EQ\"}]}"),
				"linux.seccomp.syscalls[1]: the rule for \"ioctl\" is ignored: "
				"syscalls[0] gives it another action for every call");
	expect_decision(&p, SYS_ioctl, 0, 21522, 0, SECCOMP_RET_LOG);
	free(p.insns);
	/* one without args after a conditional one: the later one wins */
	p = expect_json_warning(
		ONE_RULE("{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", "
			 "\"args\": [{\"index\": 1, \"value\": 21522, "
			 "\"op\": \"SCMP_CMP_EQ\"}]},"
			 "{\"names\": [\"getpid\", \"ioctl\"], "
			 "\"action\": \"SCMP_ACT_LOG\"}"),
		"linux.seccomp.syscalls[1]: the rule for \"ioctl\" applies to every "
		"call, so its conditional rule in syscalls[0] with another action is "
		"ignored");
	expect_decision(&p, SYS_ioctl, 0, 21522, 0, SECCOMP_RET_LOG);
	free(p.insns);
	/* the same args with two actions stays an error: libseccomp refuses it itself */
	expect_json_error(
		ONE_RULE("{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_LOG\", \"args\": "
			 "[{\"index\": 1, \"value\": 9, \"op\": \"SCMP_CMP_EQ\"}]},"
			 "{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_TRAP\", \"args\": "
			 "[{\"index\": 1, \"value\": 9, \"op\": \"SCMP_CMP_EQ\"}]}"),
		"linux.seccomp.syscalls[1]: \"kill\" with the same args has another action");
}

static void test_errors_too_many_alternatives(void **state)
{
	_cleanup_free_ char *args = NULL, *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&args, &len);

	/* 9 x 9 alternatives on two indexes: 81 rules */
	for (int i = 0; i < 18; i++)
		fprintf(f, "%s{\"index\": %d, \"value\": %d, \"op\": \"SCMP_CMP_EQ\"}",
			i ? "," : "", i % 2, i);
	fclose(f);
	json = xasprintf(ONE_RULE("{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_LOG\", "
				  "\"args\": [%s]}"),
			 args);
	expect_json_error(json, "linux.seccomp.syscalls[0].args: the alternatives make more than");
}

/* ---- compiling: what passes ------------------------------------------------------------- */

static void test_unknown_names_warn(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc;
	struct program p;

	/* socketcall is i386's; mseal is newer than libseccomp 2.5.4 but in moat's table */
	sc = prepare_json(ONE_RULE("{\"names\": [\"getpid\", \"no_such_syscall\", \"socketcall\", "
				   "\"mseal\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 7}"),
			  &err);
	if (sc == NULL)
		fail_msg("unknown names are no error: %s", err.msg);
	assert_non_null(err.warn);
	assert_non_null(strstr(err.warn, "linux.seccomp.syscalls[0]: skipped \"no_such_syscall\", "
					 "\"socketcall\": not a syscall"));
	p = export_bpf(sc);
	expect_decision(&p, SYS_getpid, 0, 0, 0, RET_ERRNO(7));
	expect_decision(&p, 462 /* mseal */, 0, 0, 0, RET_ERRNO(7));
	free(p.insns);
	moat_seccomp_free(sc);
	moat_error_clear(&err);
	/* with i386 in the filter, socketcall is known; mseal's number is not certain */
	sc = prepare_json(
		"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": "
		"[\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"], \"syscalls\": ["
		"{\"names\": [\"socketcall\", \"mseal\"], \"action\": \"SCMP_ACT_ERRNO\"}]}",
		&err);
	assert_non_null(sc);
	assert_non_null(err.warn);
	assert_non_null(strstr(err.warn, "skipped \"mseal\":"));
	assert_null(strstr(err.warn, "socketcall"));
	moat_seccomp_free(sc);
	moat_error_clear(&err);
}

/* {a0 == 1 or a0 == 2} and a1 == 9 */
static void test_repeated_index_alternatives(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc;
	struct program p;

	sc = prepare_json(ONE_RULE("{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_ERRNO\", "
				   "\"errnoRet\": 13, \"args\": ["
				   "{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"},"
				   "{\"index\": 1, \"value\": 9, \"op\": \"SCMP_CMP_EQ\"},"
				   "{\"index\": 0, \"value\": 2, \"op\": \"SCMP_CMP_EQ\"}]}"),
			  &err);
	if (sc == NULL)
		fail_msg("%s", err.msg);
	p = export_bpf(sc);
	expect_decision(&p, SYS_kill, 1, 9, 0, RET_ERRNO(13));
	expect_decision(&p, SYS_kill, 2, 9, 0, RET_ERRNO(13));
	expect_decision(&p, SYS_kill, 1, 8, 0, RET_ALLOW);
	expect_decision(&p, SYS_kill, 3, 9, 0, RET_ALLOW);
	expect_decision(&p, SYS_getpid, 1, 9, 0, RET_ALLOW);
	free(p.insns);
	moat_seccomp_free(sc);
}

/* Every operator, MASKED_EQ's value as mask and valueTwo as value, TRACE's errnoRet. */
static void test_operators_and_actions(void **state)
{
	static const char *const ops[] = { "NE", "LT", "LE", "EQ", "GE", "GT" };
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *json = NULL;
	struct moat_seccomp *sc;
	struct program p;
	int nrs[] = { SYS_getuid, SYS_getgid, SYS_geteuid, SYS_getegid, SYS_getppid, SYS_getpgrp };

	json = xasprintf(
		ONE_RULE(
			"{\"names\": [\"getuid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1, \"args\": [{\"index\": 0, \"value\": 5, \"op\": \"SCMP_CMP_%s\"}]},"
			"{\"names\": [\"getgid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 2, \"args\": [{\"index\": 0, \"value\": 5, \"op\": \"SCMP_CMP_%s\"}]},"
			"{\"names\": [\"geteuid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 3, \"args\": [{\"index\": 0, \"value\": 5, \"op\": \"SCMP_CMP_%s\"}]},"
			"{\"names\": [\"getegid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 4, \"args\": [{\"index\": 0, \"value\": 5, \"op\": \"SCMP_CMP_%s\"}]},"
			"{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 5, \"args\": [{\"index\": 0, \"value\": 5, \"op\": \"SCMP_CMP_%s\"}]},"
			"{\"names\": [\"getpgrp\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 6, \"args\": [{\"index\": 0, \"value\": 5, \"op\": \"SCMP_CMP_%s\"}]},"
			"{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_TRACE\", \"errnoRet\": 777, \"args\": [{\"index\": 1, \"value\": 240, \"valueTwo\": 16, \"op\": \"SCMP_CMP_MASKED_EQ\"}]},"
			"{\"names\": [\"tkill\"], \"action\": \"SCMP_ACT_KILL\"},"
			"{\"names\": [\"tgkill\"], \"action\": \"SCMP_ACT_TRAP\"},"
			"{\"names\": [\"getsid\"], \"action\": \"SCMP_ACT_LOG\"},"
			"{\"names\": [\"getpgid\"], \"action\": \"SCMP_ACT_KILL_THREAD\"}"),
		ops[0], ops[1], ops[2], ops[3], ops[4], ops[5]);
	sc = prepare_json(json, &err);
	if (sc == NULL)
		fail_msg("%s", err.msg);
	p = export_bpf(sc);
	for (int i = 0; i < 6; i++) {
		/* arg 4, 5, 6 against 5 */
		bool want[6][3] = { { 1, 0, 1 }, { 1, 0, 0 }, { 1, 1, 0 },
				    { 0, 1, 0 }, { 0, 1, 1 }, { 0, 0, 1 } };

		for (int v = 0; v < 3; v++)
			if (decide(&p, X86_64, nrs[i], 4 + (uint64_t)v, 0, 0) !=
			    (want[i][v] ? RET_ERRNO(i + 1) : RET_ALLOW))
				fail_msg("SCMP_CMP_%s with %d", ops[i], 4 + v);
	}
	expect_decision(&p, SYS_kill, 0, 0x1f, 0, SECCOMP_RET_TRACE | 777);
	expect_decision(&p, SYS_kill, 0, 0x2f, 0, RET_ALLOW);
	expect_decision(&p, SYS_tkill, 0, 0, 0, SECCOMP_RET_KILL_THREAD);
	expect_decision(&p, SYS_tgkill, 0, 0, 0, SECCOMP_RET_TRAP);
	expect_decision(&p, SYS_getsid, 0, 0, 0, SECCOMP_RET_LOG);
	free(p.insns);
	moat_seccomp_free(sc);
}

static void test_feature_names(void **state)
{
	const char *const *l = moat_seccomp_names(MOAT_SECCOMP_ACTIONS);
	size_t n = 0;

	while (l[n] != NULL)
		n++;
	assert_int_equal(n, 9);
	for (l = moat_seccomp_names(MOAT_SECCOMP_OPERATORS), n = 0; l[n]; n++)
		;
	assert_int_equal(n, 7);
	for (l = moat_seccomp_names(MOAT_SECCOMP_KNOWN_FLAGS), n = 0; l[n]; n++)
		;
	assert_int_equal(n, 4);
	l = moat_seccomp_names(MOAT_SECCOMP_ARCHES);
	assert_string_equal(l[1], "SCMP_ARCH_X86_64");
	for (l = moat_seccomp_names(MOAT_SECCOMP_SUPPORTED_FLAGS), n = 0; l[n]; n++)
		;
	assert_int_equal(n, SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR < 6 ? 3 : 4);
}

/* ---- the default profile, compiled -------------------------------------------------------- */

/* The names in the profile that libseccomp 2.5.4 does not know (seccomp.c's table). */
/* clang-format off */
static const struct {
	const char *name;
	int nr;
} newer[] = {
	{ "statmount", 457 },    { "listmount", 458 },     { "lsm_get_self_attr", 459 },
	{ "lsm_list_modules", 461 }, { "mseal", 462 },     { "setxattrat", 463 },
	{ "getxattrat", 464 },   { "listxattrat", 465 },   { "removexattrat", 466 },
	{ "open_tree_attr", 467 }, { "file_getattr", 468 }, { "file_setattr", 469 },
};
/* clang-format on */

static int nr_of(const char *name)
{
	int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name);

	for (size_t i = 0; nr < 0 && i < MOAT_ARRAY_SIZE(newer); i++)
		if (strcmp(newer[i].name, name) == 0)
			nr = newer[i].nr;
	if (nr < 0)
		fail_msg("the default profile names \"%s\", which is no x86_64 syscall", name);
	return nr;
}

static struct moat_seccomp *default_filter(struct oci_seccomp **ret_profile)
{
	moat_error err = MOAT_ERROR_INIT;
	struct oci_seccomp *s = NULL;
	struct moat_seccomp *sc;

	assert_int_equal(moat_seccomp_default_json()[0], '{');
	if (moat_seccomp_default(&s, &err) < 0)
		fail_msg("parse the default profile: %s", err.msg);
	sc = prepare(s, &err);
	if (sc == NULL)
		fail_msg("compile the default profile: %s", err.msg);
	if (err.warn != NULL)
		fail_msg("the default profile compiles with warnings: %s", err.warn);
	assert_false(moat_seccomp_uses_notify(sc));
	if (ret_profile != NULL)
		*ret_profile = s;
	else
		ocijson_free(&oci_seccomp_type, s);
	return sc;
}

/* Each syscall of an entry without args gets the entry's action; every other number that
 * no entry names gets the default, EPERM. */
static void test_default_profile_every_syscall(void **state)
{
	uint32_t want[512];
	struct oci_seccomp *s;
	struct moat_seccomp *sc = default_filter(&s);
	struct program p = export_bpf(sc);
	size_t i, j;

	for (i = 0; i < MOAT_ARRAY_SIZE(want); i++)
		want[i] = RET_ERRNO(EPERM);
	for (i = 0; i < s->syscalls_len; i++) {
		const struct oci_syscall *e = s->syscalls[i];
		uint32_t action = strcmp(e->action, "SCMP_ACT_ALLOW") == 0
					  ? RET_ALLOW
					  : RET_ERRNO(e->errno_ret);

		assert_true(strcmp(e->action, "SCMP_ACT_ALLOW") == 0 ||
			    (strcmp(e->action, "SCMP_ACT_ERRNO") == 0 && e->errno_ret_present));
		for (j = 0; j < e->names_len; j++)
			want[nr_of(e->names[j])] = e->args_len ? 0 : action;
	}
	for (i = 0; i < MOAT_ARRAY_SIZE(want); i++) {
		uint32_t got;

		if (want[i] == 0)
			continue; /* decided by its args: the tests below */
		got = decide(&p, X86_64, (int)i, 0, 0, 0);
		if (got != want[i])
			fail_msg("syscall %zu: %#x, the profile says %#x", i, got, want[i]);
	}
	free(p.insns);
	moat_seccomp_free(sc);
	ocijson_free(&oci_seccomp_type, s);
}

static void test_default_profile_arguments(void **state)
{
	struct moat_seccomp *sc = default_filter(NULL);
	struct program p = export_bpf(sc);

	expect_decision(&p, SYS_socket, AF_UNIX, SOCK_STREAM, 0, RET_ALLOW);
	expect_decision(&p, SYS_socket, AF_INET, SOCK_DGRAM, 0, RET_ALLOW);
	expect_decision(&p, SYS_socket, AF_INET6, SOCK_STREAM, 0, RET_ALLOW);
	expect_decision(&p, SYS_socket, AF_NETLINK, SOCK_RAW, 0 /* ROUTE */, RET_ALLOW);
	expect_decision(&p, SYS_socket, AF_NETLINK, SOCK_RAW, 9 /* AUDIT */,
			RET_ERRNO(EPROTONOSUPPORT));
	expect_decision(&p, SYS_socket, AF_NETLINK, SOCK_RAW, HI32, RET_ERRNO(EPROTONOSUPPORT));
	expect_decision(&p, SYS_socket, AF_PACKET, SOCK_RAW, 0, RET_ERRNO(EAFNOSUPPORT));
	expect_decision(&p, SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0, RET_ERRNO(EAFNOSUPPORT));
	expect_decision(&p, SYS_socket, 38 /* AF_ALG */, SOCK_SEQPACKET, 0,
			RET_ERRNO(EAFNOSUPPORT));
	expect_decision(&p, SYS_socket, 0, SOCK_STREAM, 0, RET_ERRNO(EAFNOSUPPORT));
	expect_decision(&p, SYS_socket, 4 /* AF_IPX */, SOCK_DGRAM, 0, RET_ERRNO(EAFNOSUPPORT));
	/* upper bits the kernel drops (family is an int) never reach an allow */
	expect_decision(&p, SYS_socket, (1ULL << 32) | AF_INET, SOCK_STREAM, 0,
			RET_ERRNO(EAFNOSUPPORT));
	expect_decision(&p, SYS_socket, (1ULL << 32) | AF_NETLINK, SOCK_RAW, 0,
			RET_ERRNO(EAFNOSUPPORT));

	expect_decision(&p, SYS_ioctl, 0, TCGETS, 0, RET_ALLOW);
	expect_decision(&p, SYS_ioctl, 0, HI32 | 0x80045430 /* TIOCGPTN, musl */, 0, RET_ALLOW);
	expect_decision(&p, SYS_ioctl, 0, TIOCSTI, 0, RET_ERRNO(EIO));
	expect_decision(&p, SYS_ioctl, 0, HI32 | TIOCSTI, 0, RET_ERRNO(EIO));
	expect_decision(&p, SYS_ioctl, 0, TIOCLINUX, 0, RET_ERRNO(ENOTTY));
	expect_decision(&p, SYS_ioctl, 0, HI32 | TIOCLINUX, 0, RET_ERRNO(ENOTTY));
	/* the kernel reads the request as 32 bits: the denials look at those bits only */
	expect_decision(&p, SYS_ioctl, 0, (1ULL << 32) | TIOCSTI, 0, RET_ERRNO(EIO));
	expect_decision(&p, SYS_ioctl, 0, (1ULL << 32) | TIOCLINUX, 0, RET_ERRNO(ENOTTY));
	expect_decision(&p, SYS_ioctl, 0, (1ULL << 32) | TCGETS, 0, RET_ALLOW);

	expect_decision(&p, SYS_clone, SIGCHLD, 0, 0, RET_ALLOW);
	expect_decision(&p, SYS_clone,
			CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
				CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
				CLONE_CHILD_CLEARTID,
			0, 0, RET_ALLOW);
	expect_decision(&p, SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, RET_ERRNO(EPERM));
	expect_decision(&p, SYS_clone, CLONE_NEWNS, 0, 0, RET_ERRNO(EPERM));
	expect_decision(&p, SYS_clone, CLONE_NEWNET | CLONE_NEWPID, 0, 0, RET_ERRNO(EPERM));
	expect_decision(&p, SYS_clone, CLONE_NEWCGROUP, 0, 0, RET_ERRNO(EPERM));

	expect_decision(&p, SYS_personality, 0xffffffff, 0, 0, RET_ALLOW);
	expect_decision(&p, SYS_personality, PER_LINUX, 0, 0, RET_ALLOW);
	expect_decision(&p, SYS_personality, PER_LINUX32, 0, 0, RET_ALLOW);
	expect_decision(&p, SYS_personality, ADDR_NO_RANDOMIZE, 0, 0, RET_ERRNO(EPERM));
	expect_decision(&p, SYS_personality, READ_IMPLIES_EXEC, 0, 0, RET_ERRNO(EPERM));
	free(p.insns);
	moat_seccomp_free(sc);
}

/* i386 (int 0x80) and x32 (x86_64's entry, bit 30 set) are outside the filter. */
static void test_default_profile_other_arches(void **state)
{
	struct moat_seccomp *sc = default_filter(NULL);
	struct program p = export_bpf(sc);

	assert_int_equal(decide(&p, AUDIT_ARCH_I386, 20 /* getpid */, 0, 0, 0), RET_KILL_PROCESS);
	assert_int_equal(decide(&p, X86_64, 0x40000000 | SYS_getpid, 0, 0, 0), RET_KILL_PROCESS);
	assert_int_equal(decide(&p, X86_64, 0x40000000 | SYS_read, 0, 0, 0), RET_KILL_PROCESS);
	assert_int_equal(decide(&p, AUDIT_ARCH_AARCH64, 172, 0, 0, 0), RET_KILL_PROCESS);
	assert_int_equal(decide(&p, X86_64, SYS_getpid, 0, 0, 0), RET_ALLOW);
	free(p.insns);
	moat_seccomp_free(sc);
}

/* ---- for real, in a child --------------------------------------------------------------- */

/* Children report the first failed check on this pipe and exit 1. */
static int report_fd = -1;

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			dprintf(report_fd, "line %d: %s (errno %d)", __LINE__, #cond, errno); \
			_exit(1);                                                             \
		}                                                                             \
	} while (0)
#define CHECK_ERRNO(call, e) CHECK((call) < 0 && errno == (e))

/* Run fn in a child; its wait status. The child's report, if any, fails the test. */
static int in_child(void (*fn)(void *), void *arg)
{
	char msg[512] = "";
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static const int caught[] = { SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGSYS };
		struct rlimit no_core = { 0, 0 };

		/* cmocka's handlers would carry on with the test run in the child */
		for (size_t i = 0; i < MOAT_ARRAY_SIZE(caught); i++)
			signal(caught[i], SIG_DFL);
		close(fds[0]);
		report_fd = fds[1];
		setrlimit(RLIMIT_CORE, &no_core);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], msg, sizeof(msg) - 1);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (n > 0)
		fail_msg("child: %.*s", (int)n, msg);
	return status;
}

static void expect_exit_0(int status)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child: wait status %#x", status);
}

static void load_or_die(struct moat_seccomp *sc, int *ret_fd)
{
	moat_error err = MOAT_ERROR_INIT;
	int fd = -1;

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	if (moat_seccomp_load(sc, &fd, &err) < 0) {
		dprintf(report_fd, "load: %s", err.msg);
		_exit(1);
	}
	if (ret_fd != NULL)
		*ret_fd = fd;
	else
		CHECK(fd == -1);
}

static void errno_action_child(void *arg)
{
	load_or_die(arg, NULL);
	CHECK_ERRNO(syscall(SYS_getppid), EXDEV);
	CHECK(syscall(SYS_getpid) == getpid());
	CHECK_ERRNO(syscall(SYS_kill, 0, 0), EPERM);
}

static void test_real_errno_action(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc;

	sc = prepare_json(ONE_RULE("{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_ERRNO\", "
				   "\"errnoRet\": 18},"
				   "{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_ERRNO\"}"),
			  &err);
	assert_non_null(sc);
	expect_exit_0(in_child(errno_action_child, sc));
	moat_seccomp_free(sc);
}

static void *thread_main(void *arg)
{
	return arg;
}

/* What the default profile refuses, with its errno, and what keeps working. */
static void default_denied_child(void *arg)
{
	struct seccomp_data d = { 0 };

	load_or_die(arg, NULL);
	CHECK_ERRNO(unshare(CLONE_NEWUSER), ENOSYS);
	CHECK_ERRNO(unshare(CLONE_NEWNS), ENOSYS);
	CHECK_ERRNO(setns(0, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_clone3, &d, 64), ENOSYS);
	CHECK_ERRNO(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	CHECK_ERRNO(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_add_key, "user", "x", "y", 1, -3), ENOSYS);
	CHECK_ERRNO(syscall(SYS_bpf, 0, NULL, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_io_uring_setup, 8, &d), ENOSYS);
	CHECK_ERRNO(syscall(SYS_userfaultfd, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_mount, "none", "/mnt", "tmpfs", 0, NULL), ENOSYS);
	CHECK_ERRNO(syscall(SYS_umount2, "/mnt", 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_fsopen, "tmpfs", 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_open_tree, -1, "/", 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_pivot_root, "/", "/"), ENOSYS);
	CHECK_ERRNO(syscall(458 /* listmount */, NULL, NULL, 0, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_name_to_handle_at, -1, "/", NULL, NULL, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_init_module, NULL, 0, ""), ENOSYS);
	CHECK_ERRNO(syscall(SYS_kexec_load, 0, 0, NULL, 0), ENOSYS);
	CHECK_ERRNO(syscall(SYS_reboot, 0, 0, 0, NULL), ENOSYS);
	CHECK_ERRNO(syscall(SYS_swapoff, "/nonexistent"), ENOSYS);
	CHECK_ERRNO(syscall(SYS_settimeofday, NULL, NULL), ENOSYS);
	CHECK_ERRNO(syscall(SYS_clock_settime, 0, NULL), ENOSYS);
	CHECK_ERRNO(syscall(SYS_acct, NULL), ENOSYS);
	CHECK_ERRNO(syscall(SYS_quotactl, 0, NULL, 0, NULL), ENOSYS);
	CHECK_ERRNO(syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0), EPERM); /* the default */
	CHECK_ERRNO(personality(ADDR_NO_RANDOMIZE), EPERM);
	CHECK_ERRNO(socket(AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT);
	CHECK_ERRNO(socket(40 /* AF_VSOCK */, SOCK_STREAM, 0), EAFNOSUPPORT);
	CHECK_ERRNO(socket(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */), EPROTONOSUPPORT);
}

static void default_allowed_child(void *arg)
{
	char buf[64];
	int fds[2], fd, pid;
	pthread_t t;
	void *ret = NULL;

	load_or_die(arg, NULL);
	CHECK(getpid() > 0 && syscall(SYS_getpid) == getpid());
	CHECK((fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)) >= 0);
	CHECK(read(fd, buf, sizeof(buf)) > 0 && close(fd) == 0);
	CHECK(pipe2(fds, O_CLOEXEC) == 0 && write(fds[1], "x", 1) == 1);
	CHECK(read(fds[0], buf, 1) == 1 && buf[0] == 'x');
	CHECK((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	CHECK((fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	CHECK((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	CHECK((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	CHECK(personality(0xffffffff) >= 0);
	/* glibc tries clone3 first and falls back to clone on ENOSYS */
	CHECK(pthread_create(&t, NULL, thread_main, buf) == 0);
	CHECK(pthread_join(t, &ret) == 0 && ret == buf);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(7);
	CHECK(waitpid(pid, &fd, 0) == pid && WIFEXITED(fd) && WEXITSTATUS(fd) == 7);
}

/* TIOCSTI and TIOCLINUX on a pty, with the upper bits a musl program sets or not. */
static void default_tty_child(void *arg)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), tty;
	struct termios tio;
	char c = 'x';

	CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
	CHECK((tty = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0);
	load_or_die(arg, NULL);
	CHECK(tcgetattr(tty, &tio) == 0);
	CHECK_ERRNO(ioctl(tty, TIOCSTI, &c), EIO);
	CHECK_ERRNO(syscall(SYS_ioctl, tty, HI32 | TIOCSTI, &c), EIO);
	CHECK_ERRNO(syscall(SYS_ioctl, tty, (1ULL << 32) | TIOCSTI, &c), EIO);
	CHECK_ERRNO(syscall(SYS_ioctl, tty, (1ULL << 32) | TIOCLINUX, &c), ENOTTY);
	CHECK_ERRNO(ioctl(tty, TIOCLINUX, &c), ENOTTY);
	CHECK_ERRNO(syscall(SYS_ioctl, tty, HI32 | TIOCLINUX, &c), ENOTTY);
}

static void test_real_default_profile(void **state)
{
	struct moat_seccomp *sc = default_filter(NULL);

	expect_exit_0(in_child(default_denied_child, sc));
	expect_exit_0(in_child(default_allowed_child, sc));
	expect_exit_0(in_child(default_tty_child, sc));
	moat_seccomp_free(sc);
}

static void x32_child(void *arg)
{
	long r, nr = 0x40000000L | SYS_getpid;

	load_or_die(arg, NULL);
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr) : "rcx", "r11", "memory");
	dprintf(report_fd, "x32 getpid returned %ld", r);
	_exit(1);
}

static void i386_child(void *arg)
{
	long r;

	if (arg != NULL)
		load_or_die(arg, NULL);
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L /* i386 getpid */) : "memory");
	if (arg != NULL) {
		dprintf(report_fd, "i386 getpid returned %ld", r);
		_exit(1);
	}
	_exit(r == getpid() ? 0 : 2);
}

static void test_real_x32_killed(void **state)
{
	struct moat_seccomp *sc = default_filter(NULL);
	int status = in_child(x32_child, sc);

	moat_seccomp_free(sc);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
		fail_msg("x32 syscall: wait status %#x, expected SIGSYS", status);
}

static void test_real_i386_killed(void **state)
{
	struct moat_seccomp *sc;
	int status;

	/* Some kernels (no IA32 emulation, or this VM's) fault on int 0x80 before seccomp. */
	status = in_child(i386_child, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "# SKIP int 0x80 does not work here (wait status %#x)\n", status);
		skip();
	}
	sc = default_filter(NULL);
	status = in_child(i386_child, sc);
	moat_seccomp_free(sc);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
		fail_msg("i386 syscall: wait status %#x, expected SIGSYS", status);
}

/* Without no_new_privs and without CAP_SYS_ADMIN the kernel refuses; the error says why. */
static void no_privilege_child(void *arg)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	moat_error err = MOAT_ERROR_INIT;
	int fd;

	CHECK(syscall(SYS_capget, &h, d) == 0);
	d[0].effective &= ~(1u << CAP_SYS_ADMIN);
	CHECK(syscall(SYS_capset, &h, d) == 0);
	CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0);
	CHECK(moat_seccomp_load(arg, &fd, &err) == -EACCES);
	CHECK(err.msg != NULL && strstr(err.msg, "no_new_privs") != NULL &&
	      strstr(err.msg, "CAP_SYS_ADMIN") != NULL);
	CHECK(syscall(SYS_getppid) == getppid()); /* nothing loaded */
}

static void test_real_load_needs_privilege(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc;

	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
		fprintf(stderr, "# SKIP the test runner has no_new_privs set\n");
		skip();
	}
	sc = prepare_json(ONE_RULE("{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_ERRNO\"}"),
			  &err);
	assert_non_null(sc);
	expect_exit_0(in_child(no_privilege_child, sc));
	moat_seccomp_free(sc);
}

/* ---- seccomp notify --------------------------------------------------------------------- */

struct listener {
	char dir[64];
	char path[96];
	int sock;
};

static void listener_open(struct listener *l)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(l->dir, sizeof(l->dir), "/tmp/moat-seccomp-XXXXXX");
	assert_non_null(mkdtemp(l->dir));
	snprintf(l->path, sizeof(l->path), "%s/agent.sock", l->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->path);
	l->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l->sock >= 0);
	assert_int_equal(bind(l->sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l->sock, 1), 0);
}

static void listener_close(struct listener *l)
{
	close(l->sock);
	unlink(l->path);
	rmdir(l->dir);
}

/* Accept one connection: the JSON it carries (to EOF) and the fd with it. */
static char *listener_receive(struct listener *l, int *ret_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	static char json[4096];
	struct iovec iov = { .iov_base = json, .iov_len = sizeof(json) - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	int conn = accept4(l->sock, NULL, NULL, SOCK_CLOEXEC);
	ssize_t n, total;
	struct cmsghdr *cm;

	assert_true(conn >= 0);
	n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);
	assert_true(n > 0);
	cm = CMSG_FIRSTHDR(&mh);
	assert_non_null(cm);
	assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
	memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
	for (total = n; (n = read(conn, json + total, sizeof(json) - 1 - (size_t)total)) > 0;)
		total += n;
	json[total] = '\0';
	close(conn);
	return json;
}

#define STATE_JSON                                                               \
	"{\"ociVersion\": \"1.2.0\", \"id\": \"c1\", \"status\": \"creating\", " \
	"\"pid\": 4242, \"bundle\": \"/b\", \"annotations\": {\"k\": \"v\"}}"

static void test_listener_protocol(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct listener l;
	int fds[2], got = -1, status;
	char *json;
	pid_t pid;

	listener_open(&l);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(moat_seccomp_send_to_listener(l.path, "MKNOD=/dev/null", fds[1], 0,
						    STATE_JSON, &err) < 0
			      ? 1
			      : 0);
	json = listener_receive(&l, &got);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	expect_exit_0(status);
	assert_string_equal(json, "{\"ociVersion\":\"1.2.0\",\"fds\":[\"seccompFd\"],\"pid\":4242,"
				  "\"metadata\":\"MKNOD=/dev/null\",\"state\":{\"ociVersion\":"
				  "\"1.2.0\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":4242,"
				  "\"bundle\":\"/b\",\"annotations\":{\"k\":\"v\"}}}");
	/* the fd that came is the pipe's write end */
	assert_int_equal(write(got, "z", 1), 1);
	close(got);
	close(fds[1]);
	listener_close(&l);
	/* errors name the field */
	assert_true(moat_seccomp_send_to_listener("/nonexistent/agent.sock", NULL, 0, 0, STATE_JSON,
						  &err) < 0);
	assert_non_null(strstr(err.msg, "linux.seccomp.listenerPath: connect "
					"'/nonexistent/agent.sock'"));
	moat_error_clear(&err);
	assert_true(moat_seccomp_send_to_listener("/x", NULL, 0, 0, "{\"ociVersion\": \"1.2.0\"}",
						  &err) < 0);
	assert_non_null(strstr(err.msg, "seccomp listener: state: "));
	moat_error_clear(&err);
	close(fds[0]);
}

struct notify_args {
	struct moat_seccomp *sc;
	const char *path;
};

/* Load, hand the listener fd over as the spec says, then make the notified call. */
static void notify_child(void *arg)
{
	const struct notify_args *a = arg;
	moat_error err = MOAT_ERROR_INIT;
	int fd = -1;

	load_or_die(a->sc, &fd);
	CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	if (moat_seccomp_send_to_listener(a->path, NULL, fd, getpid(), STATE_JSON, &err) < 0) {
		dprintf(report_fd, "send: %s", err.msg);
		_exit(1);
	}
	close(fd);
	CHECK(syscall(SYS_getppid) == 31337); /* the agent's answer */
	CHECK(syscall(SYS_getpid) == getpid());
}

static void test_real_notify(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	_cleanup_free_ char *want = NULL;
	struct notify_args a;
	struct listener l;
	int fd = -1, status;
	pid_t pid;

	listener_open(&l);
	a.path = l.path;
	a.sc = prepare_json("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/x\", "
			    "\"syscalls\": [{\"names\": [\"getppid\"], "
			    "\"action\": \"SCMP_ACT_NOTIFY\"}]}",
			    &err);
	assert_non_null(a.sc);
	assert_true(moat_seccomp_uses_notify(a.sc));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		report_fd = 2;
		notify_child(&a);
		_exit(0);
	}
	want = xasprintf("\"fds\":[\"seccompFd\"],\"pid\":%d,", (int)pid);
	assert_non_null(strstr(listener_receive(&l, &fd), want));
	assert_int_equal(seccomp_notify_alloc(&req, &resp), 0);
	assert_int_equal(seccomp_notify_receive(fd, req), 0);
	assert_int_equal(req->data.nr, SYS_getppid);
	assert_int_equal(req->pid, pid);
	resp->id = req->id;
	resp->val = 31337;
	resp->error = 0;
	resp->flags = 0;
	assert_int_equal(seccomp_notify_respond(fd, resp), 0);
	seccomp_notify_free(req, resp);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	expect_exit_0(status);
	close(fd);
	listener_close(&l);
	moat_seccomp_free(a.sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors_name_the_path),
		cmocka_unit_test(test_errors_errno_and_args),
		cmocka_unit_test(test_errors_notify),
		cmocka_unit_test(test_errors_flags),
		cmocka_unit_test(test_clashing_rules_warn),
		cmocka_unit_test(test_errors_too_many_alternatives),
		cmocka_unit_test(test_unknown_names_warn),
		cmocka_unit_test(test_repeated_index_alternatives),
		cmocka_unit_test(test_operators_and_actions),
		cmocka_unit_test(test_feature_names),
		cmocka_unit_test(test_default_profile_every_syscall),
		cmocka_unit_test(test_default_profile_arguments),
		cmocka_unit_test(test_default_profile_other_arches),
		cmocka_unit_test(test_listener_protocol),
		cmocka_unit_test(test_real_errno_action),
		cmocka_unit_test(test_real_default_profile),
		cmocka_unit_test(test_real_x32_killed),
		cmocka_unit_test(test_real_i386_killed),
		cmocka_unit_test(test_real_load_needs_privilege),
		cmocka_unit_test(test_real_notify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
