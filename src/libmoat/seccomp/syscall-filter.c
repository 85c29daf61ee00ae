/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: linux.seccomp, compiled with libseccomp (syscall-filter.h says how the profile is read). */
#include "syscall-filter-internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "oci-state.h"
#include "utils.h"

/* The largest errno the kernel passes through SECCOMP_RET_ERRNO (include/linux/err.h). */
#define SECCOMP_MAX_ERRNO 4095
/* SECCOMP_RET_DATA is 16 bits: what SECCOMP_RET_TRACE can hand the tracer. */
#define SECCOMP_MAX_TRACE 0xffff
/* A syscall takes at most six arguments. */
#define SECCOMP_MAX_ARGS 6

/* ---- tables: the spec's names and libseccomp's values ---------------------------------- */

/* max_ret: the largest errnoRet the action takes; 0 when it takes none. */
static const struct action_row {
	const char *name;
	uint32_t action;
	uint32_t max_ret;
} actions[] = {
	{ "SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD, 0 }, /* libseccomp's SCMP_ACT_KILL */
	{ "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, 0 },
	{ "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, 0 },
	{ "SCMP_ACT_TRAP", SCMP_ACT_TRAP, 0 },
	{ "SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), SECCOMP_MAX_ERRNO },
	{ "SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), SECCOMP_MAX_TRACE },
	{ "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, 0 },
	{ "SCMP_ACT_LOG", SCMP_ACT_LOG, 0 },
	{ "SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY, 0 },
};

/* clang-format off */
static const struct op_row {
	const char *name;
	enum scmp_compare op;
} operators[] = {
	{ "SCMP_CMP_NE", SCMP_CMP_NE }, { "SCMP_CMP_LT", SCMP_CMP_LT },
	{ "SCMP_CMP_LE", SCMP_CMP_LE }, { "SCMP_CMP_EQ", SCMP_CMP_EQ },
	{ "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
	{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
};
/* clang-format on */

static const struct arch_row {
	const char *name;
	uint32_t token;
} arches[] = {
	{ "SCMP_ARCH_X86", SCMP_ARCH_X86 },
	{ "SCMP_ARCH_X86_64", SCMP_ARCH_X86_64 },
	{ "SCMP_ARCH_X32", SCMP_ARCH_X32 },
	{ "SCMP_ARCH_ARM", SCMP_ARCH_ARM },
	{ "SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64 },
	{ "SCMP_ARCH_MIPS", SCMP_ARCH_MIPS },
	{ "SCMP_ARCH_MIPS64", SCMP_ARCH_MIPS64 },
	{ "SCMP_ARCH_MIPS64N32", SCMP_ARCH_MIPS64N32 },
	{ "SCMP_ARCH_MIPSEL", SCMP_ARCH_MIPSEL },
	{ "SCMP_ARCH_MIPSEL64", SCMP_ARCH_MIPSEL64 },
	{ "SCMP_ARCH_MIPSEL64N32", SCMP_ARCH_MIPSEL64N32 },
	{ "SCMP_ARCH_PPC", SCMP_ARCH_PPC },
	{ "SCMP_ARCH_PPC64", SCMP_ARCH_PPC64 },
	{ "SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE },
	{ "SCMP_ARCH_S390", SCMP_ARCH_S390 },
	{ "SCMP_ARCH_S390X", SCMP_ARCH_S390X },
	{ "SCMP_ARCH_PARISC", SCMP_ARCH_PARISC },
	{ "SCMP_ARCH_PARISC64", SCMP_ARCH_PARISC64 },
	{ "SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64 },
#ifdef SCMP_ARCH_LOONGARCH64
	{ "SCMP_ARCH_LOONGARCH64", SCMP_ARCH_LOONGARCH64 },
#endif
#ifdef SCMP_ARCH_M68K
	{ "SCMP_ARCH_M68K", SCMP_ARCH_M68K },
#endif
#ifdef SCMP_ARCH_SH
	{ "SCMP_ARCH_SH", SCMP_ARCH_SH },
	{ "SCMP_ARCH_SHEB", SCMP_ARCH_SHEB },
#endif
};

#define LIBSECCOMP_AT_LEAST(maj, min) \
	(SCMP_VER_MAJOR > (maj) || (SCMP_VER_MAJOR == (maj) && SCMP_VER_MINOR >= (min)))

/* The spec's filter flags: the libseccomp attribute that checks this libseccomp and kernel
 * support it (-1: this libseccomp has none, so moat refuses the flag), and the flag moat
 * passes to seccomp(2) when it loads the program itself (seccomp-bpf.c). */
static const struct flag_row {
	const char *name;
	int attr;
	uint32_t kernel_flag;
} flags[] = {
	{ "SECCOMP_FILTER_FLAG_TSYNC", SCMP_FLTATR_CTL_TSYNC, SECCOMP_FILTER_FLAG_TSYNC },
	{ "SECCOMP_FILTER_FLAG_LOG", SCMP_FLTATR_CTL_LOG, SECCOMP_FILTER_FLAG_LOG },
	{ "SECCOMP_FILTER_FLAG_SPEC_ALLOW", SCMP_FLTATR_CTL_SSB, SECCOMP_FILTER_FLAG_SPEC_ALLOW },
#if LIBSECCOMP_AT_LEAST(2, 6)
	{ "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", SCMP_FLTATR_CTL_WAITKILL,
	  SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV },
#else
	{ "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", -1, 0 },
#endif
};

/* Syscalls newer than the libseccomp moat is built with (Debian 12's 2.5.4 knows up to
 * futex_requeue, 456). Since Linux 5.1 (424) a new syscall has the same number on every
 * architecture but alpha, mips (which add their ABI's offset) and x32 (which sets bit 30);
 * moat uses these numbers only for a filter whose one architecture numbers that way. */
/* clang-format off */
static const struct newer_row {
	const char *name;
	int nr;
} newer_syscalls[] = {
	{ "statmount", 457 },         { "listmount", 458 },     /* 6.8 */
	{ "lsm_get_self_attr", 459 }, { "lsm_set_self_attr", 460 },
	{ "lsm_list_modules", 461 },  /* 6.8 */
	{ "mseal", 462 },             /* 6.10 */
	{ "setxattrat", 463 },        { "getxattrat", 464 },    /* 6.13 */
	{ "listxattrat", 465 },       { "removexattrat", 466 }, /* 6.13 */
	{ "open_tree_attr", 467 },    /* 6.15 */
	{ "file_getattr", 468 },      { "file_setattr", 469 },  /* 6.17 */
};
/* clang-format on */

#define FIND_ROW(table, key)                                                       \
	({                                                                         \
		const __typeof__((table)[0]) *_row = NULL;                         \
		for (size_t _i = 0; _i < MOAT_ARRAY_SIZE(table); _i++)             \
			if ((key) != NULL && strcmp((table)[_i].name, (key)) == 0) \
				_row = &(table)[_i];                               \
		_row;                                                              \
	})

/* ---- the compiled filter, and what compiling it keeps track of ------------------------ */

/* One action a syscall has been given, by an unconditional rule or by rules with
 * conditions, and the first syscalls[] entry that did: how libseccomp's silent drops are
 * caught. */
struct given {
	int nr;
	bool conditional;
	uint32_t action;
	size_t entry;
};

struct compile {
	const struct oci_seccomp *s;
	struct moat_seccomp *sc;
	uint32_t default_action;
	bool generic_numbers; /* the filter's only architecture numbers new syscalls generically */
	struct given *given;
	size_t n_given;
	moat_error *err;
};

/* ---- actions, arguments ---------------------------------------------------------------- */

/* field names the action ("linux.seccomp.defaultAction"), ret_field its errno member. */
static int parse_action(const char *name, bool has_ret, uint32_t ret, const char *field,
			const char *ret_field, uint32_t *ret_action, moat_error *err)
{
	const struct action_row *a = FIND_ROW(actions, name);

	if (a == NULL)
		return moat_error_msg(err, EINVAL, "%s: unknown action \"%s\"", field,
				      name ? name : "");
	if (has_ret && a->max_ret == 0)
		return moat_error_msg(err, EINVAL,
				      "%s: %s takes no errno (only SCMP_ACT_ERRNO and "
				      "SCMP_ACT_TRACE do)",
				      ret_field, a->name);
	if (has_ret && ret > a->max_ret)
		return moat_error_msg(err, EINVAL, "%s: %u is out of range for %s (0..%u)",
				      ret_field, ret, a->name, a->max_ret);
	*ret_action = a->max_ret ? a->action | (has_ret ? ret : EPERM) : a->action;
	return 0;
}

static int parse_arg(const struct oci_syscall_arg *arg, const char *field, struct scmp_arg_cmp *ret,
		     moat_error *err)
{
	const struct op_row *o = FIND_ROW(operators, arg->op);

	if (arg->index >= SECCOMP_MAX_ARGS)
		return moat_error_msg(err, EINVAL, "%s.index: %u is not an argument index (0..5)",
				      field, arg->index);
	if (o == NULL)
		return moat_error_msg(err, EINVAL, "%s.op: unknown operator \"%s\"", field,
				      arg->op ? arg->op : "");
	if (o->op != SCMP_CMP_MASKED_EQ && arg->value_two_present && arg->value_two != 0)
		return moat_error_msg(err, EINVAL,
				      "%s.valueTwo: only SCMP_CMP_MASKED_EQ takes a "
				      "second value",
				      field);
	/* MASKED_EQ: (arg & datum_a) == datum_b, the mask being the spec's value. */
	*ret = (struct scmp_arg_cmp){
		.arg = arg->index, .op = o->op, .datum_a = arg->value, .datum_b = arg->value_two
	};
	return 0;
}

/* The rules one syscalls[] entry stands for: comparisons on one index are alternatives,
 * comparisons on different indexes all apply. Rule r takes, for each index used, the
 * comparison picked by r's digits in the mixed radix of the group sizes. */
static int split_args(const struct oci_syscall *sys, size_t at, struct scmp_arg_cmp **ret,
		      size_t *ret_rules, unsigned *ret_per_rule, moat_error *err)
{
	struct scmp_arg_cmp all[SECCOMP_MAX_ARGS][MOAT_SECCOMP_MAX_SPLIT];
	size_t n[SECCOMP_MAX_ARGS] = { 0 }, rules = 1, i, r;
	unsigned used = 0, k;
	struct scmp_arg_cmp *out;

	for (i = 0; i < sys->args_len; i++) {
		_cleanup_free_ char *field =
			xasprintf("linux.seccomp.syscalls[%zu].args[%zu]", at, i);
		struct scmp_arg_cmp c;

		if (parse_arg(sys->args[i], field, &c, err) < 0)
			return moat_error_ret(err);
		if (n[c.arg] == MOAT_SECCOMP_MAX_SPLIT)
			return moat_error_msg(err, E2BIG,
					      "%s: more than %d comparisons of argument %u", field,
					      MOAT_SECCOMP_MAX_SPLIT, c.arg);
		all[c.arg][n[c.arg]++] = c;
	}
	for (k = 0; k < SECCOMP_MAX_ARGS; k++) {
		if (n[k] == 0)
			continue;
		used++;
		rules *= n[k];
		if (rules > MOAT_SECCOMP_MAX_SPLIT)
			return moat_error_msg(err, E2BIG,
					      "linux.seccomp.syscalls[%zu].args: the "
					      "alternatives make more than %d rules",
					      at, MOAT_SECCOMP_MAX_SPLIT);
	}
	out = xcalloc(rules * (used ? used : 1), sizeof(*out));
	for (r = 0; r < rules; r++) {
		size_t digits = r, j = 0;

		for (k = 0; k < SECCOMP_MAX_ARGS; k++) {
			if (n[k] == 0)
				continue;
			out[r * used + j++] = all[k][digits % n[k]];
			digits /= n[k];
		}
	}
	*ret = out;
	*ret_rules = rules;
	*ret_per_rule = used;
	return 0;
}

/* ---- syscall names ---------------------------------------------------------------------- */

/* The number to give libseccomp for name, or __NR_SCMP_ERROR when no architecture of the
 * filter has that syscall (libseccomp would drop the rule without a word). */
static int resolve_name(const struct compile *c, const char *name)
{
	uint32_t tokens[MOAT_ARRAY_SIZE(arches)];
	size_t i, n = 0;
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR) {
		const struct newer_row *row = FIND_ROW(newer_syscalls, name);

		return row != NULL && c->generic_numbers ? row->nr : __NR_SCMP_ERROR;
	}
	for (i = 0; i < MOAT_ARRAY_SIZE(arches); i++)
		if (seccomp_arch_exist(c->sc->ctx, arches[i].token) == 0)
			tokens[n++] = arches[i].token;
	for (i = 0; i < n; i++)
		if (seccomp_syscall_resolve_name_arch(tokens[i], name) >= 0)
			return nr;
	return __NR_SCMP_ERROR;
}

static void warn_skipped(const struct compile *c, size_t at, const char *names)
{
	const struct scmp_version *v = seccomp_version();

	moat_error_warn(c->err,
			"linux.seccomp.syscalls[%zu]: skipped %s: not a syscall that "
			"libseccomp %u.%u.%u knows for the filter's architectures",
			at, names, v->major, v->minor, v->micro);
}

/* ---- rules ------------------------------------------------------------------------------ */

/* The first action nr was given, other than action, of the kind that clashes with a new
 * rule (conditional or not). */
static const struct given *clash(const struct compile *c, int nr, bool conditional, uint32_t action)
{
	for (size_t i = 0; i < c->n_given; i++) {
		const struct given *g = &c->given[i];

		if (g->nr != nr || g->action == action)
			continue;
		/* libseccomp keeps an unconditional rule and drops every other rule of the
		 * syscall with another action: conditional ones, and later unconditional ones. */
		if (!conditional || !g->conditional)
			return g;
	}
	return NULL;
}

static void remember(struct compile *c, int nr, bool conditional, uint32_t action, size_t at)
{
	for (size_t i = 0; i < c->n_given; i++)
		if (c->given[i].nr == nr && c->given[i].conditional == conditional &&
		    c->given[i].action == action)
			return;
	c->given = xrealloc(c->given, (c->n_given + 1) * sizeof(*c->given));
	c->given[c->n_given++] = (struct given){ nr, conditional, action, at };
}

/* A second rule of a syscall with another action, where one of the two has no args: libseccomp
 * keeps the one without args (the first, when neither has args) and drops the other without a
 * word. runc and crun get the same filter from the same profile, and engines' default profiles
 * rely on it (Podman's allows setns and also lists it as EPERM without CAP_SYS_ADMIN), so moat
 * keeps libseccomp's choice and says which rule it ignores. */
static void warn_clash(const struct compile *c, size_t at, const char *name, const struct given *g,
		       bool conditional)
{
	if (!g->conditional)
		moat_error_warn(c->err,
				"linux.seccomp.syscalls[%zu]: the rule for \"%s\" is "
				"ignored: syscalls[%zu] gives it another action %s (libseccomp "
				"keeps that one, as under runc and crun)",
				at, name, g->entry, conditional ? "for every call" : "first");
	else
		moat_error_warn(
			c->err,
			"linux.seccomp.syscalls[%zu]: the rule for \"%s\" applies "
			"to every call, so its conditional rule in syscalls[%zu] with another "
			"action is ignored (libseccomp keeps this one, as under runc and crun)",
			at, name, g->entry);
}

static int add_rules(struct compile *c, size_t at, const char *name, int nr, uint32_t action,
		     const struct scmp_arg_cmp *cmps, size_t rules, unsigned per_rule)
{
	const struct given *g = clash(c, nr, per_rule > 0, action);
	size_t r;
	int rc;

	if (g != NULL)
		warn_clash(c, at, name, g, per_rule > 0);
	for (r = 0; r < rules; r++) {
		rc = seccomp_rule_add_array(c->sc->ctx, action, nr, per_rule, cmps + r * per_rule);
		if (rc == -EEXIST)
			return moat_error_msg(c->err, EINVAL,
					      "linux.seccomp.syscalls[%zu]: \"%s\" "
					      "with the same args has another action in an earlier "
					      "entry",
					      at, name);
		if (rc < 0)
			return moat_error_set(c->err, -rc, "linux.seccomp.syscalls[%zu]: \"%s\"",
					      at, name);
	}
	remember(c, nr, per_rule > 0, action, at);
	return 0;
}

static int compile_entry(struct compile *c, size_t at)
{
	const struct oci_syscall *sys = c->s->syscalls[at];
	_cleanup_free_ struct scmp_arg_cmp *cmps = NULL;
	_cleanup_free_ char *field = xasprintf("linux.seccomp.syscalls[%zu]", at);
	_cleanup_free_ char *afield = xasprintf("%s.action", field);
	_cleanup_free_ char *rfield = xasprintf("%s.errnoRet", field);
	_cleanup_free_ char *skipped = NULL;
	size_t rules, i, len = 0;
	unsigned per_rule;
	uint32_t action;
	FILE *out;

	if (parse_action(sys->action, sys->errno_ret_present, sys->errno_ret, afield, rfield,
			 &action, c->err) < 0)
		return moat_error_ret(c->err);
	if (sys->names_len == 0)
		return moat_error_msg(c->err, EINVAL, "%s.names: no syscall named", field);
	if (split_args(sys, at, &cmps, &rules, &per_rule, c->err) < 0)
		return moat_error_ret(c->err);
	if (action == c->default_action)
		return 0; /* libseccomp refuses it, and it changes nothing */
	c->sc->notify |= action == SCMP_ACT_NOTIFY;
	out = open_memstream(&skipped, &len);
	for (i = 0; i < sys->names_len; i++) {
		const char *name = sys->names[i];
		int nr = resolve_name(c, name);

		if (action == SCMP_ACT_NOTIFY && strcmp(name, "sendmsg") == 0) {
			fclose(out);
			return moat_error_msg(
				c->err, EINVAL,
				"%s.names[%zu]: SCMP_ACT_NOTIFY cannot "
				"apply to sendmsg: moat passes the listener fd with it",
				field, i);
		}
		if (nr == __NR_SCMP_ERROR)
			fprintf(out, "%s\"%s\"", ftell(out) ? ", " : "", name);
		else if (add_rules(c, at, name, nr, action, cmps, rules, per_rule) < 0)
			break;
	}
	fclose(out);
	if (i < sys->names_len)
		return moat_error_ret(c->err);
	/* An allow rule without a syscall this architecture does not have allows nothing less
	 * than it could (engines' profiles list other architectures' names): no warning. A
	 * skipped name in any other rule may be a syscall the kernel has and libseccomp does
	 * not know, which the rule then fails to stop. */
	if (len > 0 && action != SCMP_ACT_ALLOW)
		warn_skipped(c, at, skipped);
	return 0;
}

/* ---- the filter as a whole ------------------------------------------------------------- */

static int add_arches(struct compile *c, moat_error *err)
{
	uint32_t native = seccomp_arch_native();
	size_t i;
	int r;

	for (i = 0; i < c->s->architectures_len; i++) {
		const struct arch_row *a = FIND_ROW(arches, c->s->architectures[i]);

		if (a == NULL)
			return moat_error_msg(err, EINVAL,
					      "linux.seccomp.architectures[%zu]: unknown "
					      "architecture \"%s\"",
					      i, c->s->architectures[i]);
		r = seccomp_arch_add(c->sc->ctx, a->token);
		if (r < 0 && r != -EEXIST)
			return moat_error_set(err, -r, "linux.seccomp.architectures[%zu]: %s", i,
					      a->name);
		c->generic_numbers &= a->token == native;
	}
	return 0;
}

static int set_flags(struct compile *c, moat_error *err)
{
	const struct scmp_version *v = seccomp_version();
	size_t i;
	int r;

	for (i = 0; i < c->s->flags_len; i++) {
		const struct flag_row *f = FIND_ROW(flags, c->s->flags[i]);

		if (f == NULL)
			return moat_error_msg(err, EINVAL,
					      "linux.seccomp.flags[%zu]: unknown flag "
					      "\"%s\"",
					      i, c->s->flags[i]);
		if (f->attr < 0)
			return moat_error_msg(err, EOPNOTSUPP,
					      "linux.seccomp.flags[%zu]: %s needs "
					      "libseccomp 2.6 or later; moat runs with %u.%u.%u",
					      i, f->name, v->major, v->minor, v->micro);
		r = seccomp_attr_set(c->sc->ctx, (enum scmp_filter_attr)f->attr, 1);
		if (r < 0)
			return moat_error_set(err, -r, "linux.seccomp.flags[%zu]: %s", i, f->name);
		c->sc->kernel_flags |= f->kernel_flag;
	}
	return 0;
}

/* Whether new syscalls (newer_syscalls) have their generic numbers on this architecture. */
static bool numbers_generically(uint32_t token)
{
	static const uint32_t offset_or_flagged[] = {
		SCMP_ARCH_X32,    SCMP_ARCH_MIPS,     SCMP_ARCH_MIPS64,      SCMP_ARCH_MIPS64N32,
		SCMP_ARCH_MIPSEL, SCMP_ARCH_MIPSEL64, SCMP_ARCH_MIPSEL64N32,
	};

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(offset_or_flagged); i++)
		if (token == offset_or_flagged[i])
			return false;
	return true;
}

/* What applies whatever the profile says: a syscall of an architecture outside the filter
 * kills the process; libseccomp never sets no_new_privs on its own (process.noNewPrivileges
 * decides), returns the kernel's errno, and makes a binary search of the syscall numbers. */
static int set_attrs(scmp_filter_ctx ctx, moat_error *err)
{
	static const struct {
		enum scmp_filter_attr attr;
		uint32_t value;
	} attrs[] = {
		{ SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS },
		{ SCMP_FLTATR_CTL_NNP, 0 },
		{ SCMP_FLTATR_API_SYSRAWRC, 1 },
		{ SCMP_FLTATR_CTL_OPTIMIZE, 2 },
	};
	int r;

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(attrs); i++) {
		r = seccomp_attr_set(ctx, attrs[i].attr, attrs[i].value);
		if (r < 0)
			return moat_error_set(err, -r, "linux.seccomp: libseccomp attribute %d",
					      (int)attrs[i].attr);
	}
	return 0;
}

static int check_notify(const struct oci_seccomp *s, bool notify, moat_error *err)
{
	if (s->listener_metadata != NULL && s->listener_path == NULL)
		return moat_error_msg(err, EINVAL,
				      "linux.seccomp.listenerMetadata: set without "
				      "listenerPath");
	if (notify && (s->listener_path == NULL || s->listener_path[0] == '\0'))
		return moat_error_msg(err, EINVAL,
				      "linux.seccomp.listenerPath: required when an "
				      "action is SCMP_ACT_NOTIFY");
	return 0;
}

static int compile(struct compile *c)
{
	size_t i;

	if (set_attrs(c->sc->ctx, c->err) < 0 || add_arches(c, c->err) < 0 ||
	    set_flags(c, c->err) < 0)
		return moat_error_ret(c->err);
	for (i = 0; i < c->s->syscalls_len; i++)
		if (compile_entry(c, i) < 0)
			return moat_error_ret(c->err);
	return check_notify(c->s, c->sc->notify, c->err);
}

int moat_seccomp_prepare(const struct oci_seccomp *s, struct moat_seccomp **ret, moat_error *err)
{
	uint32_t native = seccomp_arch_native();
	struct compile c = { .s = s, .err = err };
	int r;

	if (parse_action(s->default_action, s->default_errno_ret_present, s->default_errno_ret,
			 "linux.seccomp.defaultAction", "linux.seccomp.defaultErrnoRet",
			 &c.default_action, err) < 0)
		return moat_error_ret(err);
	if (c.default_action == SCMP_ACT_NOTIFY)
		return moat_error_msg(
			err, EINVAL,
			"linux.seccomp.defaultAction: SCMP_ACT_NOTIFY "
			"would hold every syscall, moat's own before the listener has "
			"the fd among them");
	c.sc = xcalloc(1, sizeof(*c.sc));
	c.sc->ctx = seccomp_init(c.default_action);
	if (c.sc->ctx == NULL) {
		free(c.sc);
		return moat_error_msg(err, EINVAL,
				      "linux.seccomp.defaultAction: libseccomp refuses "
				      "%s",
				      s->default_action);
	}
	c.generic_numbers = numbers_generically(native);
	r = compile(&c);
	free(c.given);
	if (r == 0)
		r = moat_seccomp_bpf_export(c.sc, err);
	if (r < 0) {
		moat_seccomp_free(c.sc);
		return r;
	}
	*ret = c.sc;
	return 0;
}

bool moat_seccomp_uses_notify(const struct moat_seccomp *sc)
{
	return sc->notify;
}

void moat_seccomp_free(struct moat_seccomp *sc)
{
	if (sc == NULL)
		return;
	if (sc->ctx != NULL)
		seccomp_release(sc->ctx);
	free(sc->prog);
	free(sc);
}

int moat_seccomp_export(const struct moat_seccomp *sc, int fd, bool pfc, moat_error *err)
{
	int r;

	if (!pfc)
		return write_all(fd, sc->prog, sc->prog_len * sizeof(*sc->prog)) < 0
			       ? moat_error_set(err, errno, "export the seccomp filter")
			       : 0;
	if (sc->ctx == NULL)
		return moat_error_msg(err, ENOENT,
				      "export the seccomp filter: this one came "
				      "compiled from the cache, without libseccomp's pseudo code");
	r = seccomp_export_pfc(sc->ctx, fd);
	if (r < 0)
		return moat_error_set(err, -r, "export the seccomp filter");
	return 0;
}

/* ---- the seccomp notify listener -------------------------------------------------------- */

/* The runtime spec's "container process state". */
struct process_state {
	char *oci_version;
	char **fds;
	size_t fds_len;
	int32_t pid;
	char *metadata;
	struct oci_state *state;
};

static const struct ocijson_field process_state_fields[] = {
	OCIJSON_STR(struct process_state, "ociVersion", oci_version, OCIJSON_REQUIRED),
	OCIJSON_STR_ARRAY(struct process_state, "fds", fds, 0),
	OCIJSON_I32_REQ(struct process_state, "pid", pid),
	OCIJSON_STR(struct process_state, "metadata", metadata, 0),
	OCIJSON_OBJ(struct process_state, "state", state, struct oci_state, &oci_state_type,
		    OCIJSON_REQUIRED),
};

static const struct ocijson_type process_state_type = {
	.name = "container process state",
	.size = sizeof(struct process_state),
	.fields = process_state_fields,
	.n_fields = OCIJSON_N_(process_state_fields),
};

static int process_state_json(const char *metadata, pid_t pid, const char *state_json, char **ret,
			      size_t *ret_len, moat_error *err)
{
	char fd_name[] = "seccompFd", *fds[] = { fd_name }, *msg = NULL;
	struct oci_state *st = NULL;
	struct process_state ps;
	int r;

	r = oci_state_parse_data(state_json, strlen(state_json), "state", &st, &msg);
	if (r == 0 && pid <= 0 && !st->pid_present) {
		r = -EINVAL;
		msg = xstrdup("state: pid: required field missing");
	}
	if (r == 0) {
		ps = (struct process_state){ .oci_version = st->oci_version,
					     .fds = fds,
					     .fds_len = 1,
					     .pid = pid > 0 ? pid : st->pid,
					     .metadata = (char *)metadata,
					     .state = st };
		r = ocijson_generate(&process_state_type, &ps, false, ret, ret_len, &msg);
	}
	if (r < 0)
		moat_error_msg(err, -r, "seccomp listener: %s", msg ? msg : "out of memory");
	free(msg);
	oci_state_free(st);
	return r;
}

/* The JSON in as many sends as the socket takes, the fd with the first. */
static int send_state(int sock, const char *json, size_t len, int fd, moat_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl = { .buf = { 0 } };
	struct iovec iov = { .iov_base = (void *)json, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	size_t done;
	ssize_t n;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	for (done = n > 0 ? (size_t)n : 0; n >= 0 && done<len; done += n> 0 ? (size_t)n : 0) {
		n = send(sock, json + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			n = 0;
	}
	if (n < 0)
		return moat_error_set(err, errno, "send the container process state");
	return 0;
}

int moat_seccomp_send_to_listener(const char *listener_path, const char *metadata, int notify_fd,
				  pid_t pid, const char *state_json, moat_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *json = NULL;
	_cleanup_close_ int sock = -1;
	size_t len = 0;

	if (strlen(listener_path) >= sizeof(sa.sun_path))
		return moat_error_msg(err, ENAMETOOLONG,
				      "linux.seccomp.listenerPath '%s': too "
				      "long for a unix socket",
				      listener_path);
	memcpy(sa.sun_path, listener_path, strlen(listener_path) + 1);
	if (process_state_json(metadata, pid, state_json, &json, &len, err) < 0)
		return moat_error_ret(err);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return moat_error_set(err, errno, "linux.seccomp.listenerPath: socket");
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_set(err, errno, "linux.seccomp.listenerPath: connect '%s'",
				      listener_path);
	if (send_state(sock, json, len, notify_fd, err) < 0)
		return moat_error_prefix(err, "linux.seccomp.listenerPath '%s'", listener_path);
	return 0;
}

/* ---- the default profile and feature lists ---------------------------------------------- */

/* seccomp-default.c: contrib/seccomp/default.json, NUL-terminated. */
extern const char moat_seccomp_default_profile[];

const char *moat_seccomp_default_json(void)
{
	return moat_seccomp_default_profile;
}

int moat_seccomp_default(struct oci_seccomp **ret, moat_error *err)
{
	const char *json = moat_seccomp_default_profile;
	void *obj = NULL;
	char *msg = NULL;
	int r;

	r = ocijson_parse_data(&oci_seccomp_type, json, strlen(json), "default seccomp profile",
			       &obj, &msg);
	if (r < 0) {
		moat_error_msg(err, -r, "%s", msg ? msg : "default seccomp profile: parse");
		free(msg);
		return r;
	}
	*ret = obj;
	return 0;
}

/* A NULL-terminated list of the names of a table whose rows start with the name. */
#define NAMES_OF(table, filter)                                        \
	({                                                             \
		static const char *_list[MOAT_ARRAY_SIZE(table) + 1];  \
		size_t _n = 0;                                         \
		for (size_t _i = 0; _i < MOAT_ARRAY_SIZE(table); _i++) \
			if (filter(&(table)[_i]))                      \
				_list[_n++] = (table)[_i].name;        \
		_list[_n] = NULL;                                      \
		(const char *const *)_list;                            \
	})
#define ANY_ROW(row) ((void)(row), true)
#define SUPPORTED_FLAG(row) ((row)->attr >= 0)

const char *const *moat_seccomp_names(enum moat_seccomp_names which)
{
	switch (which) {
	case MOAT_SECCOMP_ACTIONS: return NAMES_OF(actions, ANY_ROW);
	case MOAT_SECCOMP_OPERATORS: return NAMES_OF(operators, ANY_ROW);
	case MOAT_SECCOMP_ARCHES: return NAMES_OF(arches, ANY_ROW);
	case MOAT_SECCOMP_KNOWN_FLAGS: return NAMES_OF(flags, ANY_ROW);
	case MOAT_SECCOMP_SUPPORTED_FLAGS: return NAMES_OF(flags, SUPPORTED_FLAG);
	}
	return NULL;
}
