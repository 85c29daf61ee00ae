/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the real-time CPU budget of cgroup v1's cpu controller (CONFIG_RT_GROUP_SCHED).
 * Answers "can the container's cgroup have the cpu.rt_runtime_us it asks for, and whose budget
 * does that come from?".
 *
 * The kernel admits a group's runtime only if the group's share of its period (runtime /
 * period, compared in 20-bit fixed point; a runtime of -1 is the whole period) is at most the
 * host's (the root's cpu.rt_runtime_us of cpu.rt_period_us: 950000 of 1000000 by default), and
 * if the shares of each group's children add up to at most the group's own. A new cgroup
 * starts with a runtime of 0, moat's parent /moat too, so no container under it could ever get
 * a runtime without a budget given to /moat.
 *
 * moat gives /moat, and no other cgroup of the host, what its children hold: when the kernel
 * refuses a container's runtime, /moat is raised to the sum of its children's shares with the
 * container's new one, if what the root's share leaves beside /moat's siblings covers it; when
 * a container under /moat is deleted, /moat goes back down to what its remaining children hold
 * (a budget someone gave /moat by hand beyond that goes too). A container elsewhere
 * (an absolute linux.cgroupsPath, or a deeper relative one) gets an error that names its
 * parent's budget. Every moat takes flock(2) on /moat's directory in the cpu hierarchy around
 * these steps, so that two of them never count the same free budget. */
#include "cgroup-internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/file.h>

#include "strv.h"
#include "utils.h"

#define RT_RUNTIME "cpu.rt_runtime_us"
#define RT_PERIOD "cpu.rt_period_us"
#define RT_MAX_US \
	(INT64_C(1) << 43) /* beyond any runtime or period the kernel takes (its
				       * limit is 2^44 ns): keeps the fixed point in 64 bits */

/* ---- the kernel's arithmetic ------------------------------------------------------------ */

uint64_t cg_rt_share(int64_t runtime_us, int64_t period_us)
{
	if (runtime_us < 0)
		return CG_RT_UNIT;
	if (period_us <= 0)
		return 0;
	if (runtime_us > RT_MAX_US)
		runtime_us = RT_MAX_US;
	return ((uint64_t)runtime_us << 20) / (uint64_t)period_us;
}

/* share * period / CG_RT_UNIT in microseconds, rounded up or down, without overflow. */
static uint64_t runtime_of(uint64_t share, int64_t period_us, bool up)
{
	uint64_t period = period_us > RT_MAX_US ? (uint64_t)RT_MAX_US
			  : period_us < 0       ? 0
						: (uint64_t)period_us;
	uint64_t whole = share >> 20, part = (share & (CG_RT_UNIT - 1)) * period;

	return whole * period + (part >> 20) + (up && (part & (CG_RT_UNIT - 1)) != 0);
}

uint64_t cg_rt_runtime_for(uint64_t share, int64_t period_us)
{
	return runtime_of(share, period_us, true);
}

/* ---- reading the budgets ------------------------------------------------------------------ */

static int read_i64(int fd, const char *dir, const char *file, int64_t *ret, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *end;

	if (cg_read_at(fd, dir, file, &text, err) < 0)
		return moat_error_ret(err);
	errno = 0;
	*ret = strtoll(text, &end, 10);
	if (errno != 0 || end == text)
		return moat_error_msg(err, EINVAL, "cgroup '%s': %s holds '%.40s', not a number",
				      dir, file, text);
	return 0;
}

struct budget {
	int64_t runtime;
	int64_t period;
};

static int read_budget(int fd, const char *dir, struct budget *ret, moat_error *err)
{
	if (read_i64(fd, dir, RT_RUNTIME, &ret->runtime, err) < 0 ||
	    read_i64(fd, dir, RT_PERIOD, &ret->period, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* The shares the sub-cgroups of fd (dir names it) hold, skip (NULL: none) left out. */
static int children_share(int fd, const char *dir, const char *skip, uint64_t *ret, moat_error *err)
{
	char **subs = NULL;
	size_t n = 0, i;
	uint64_t sum = 0;
	int r = 0;

	if (cg_list_subdirs(fd, dir, &subs, &n, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < n && r == 0; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", dir, subs[i]);
		_cleanup_close_ int sfd = -1;
		struct budget b;

		if (skip != NULL && strcmp(subs[i], skip) == 0)
			continue;
		sfd = openat(fd, subs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0 && errno == ENOENT) /* removed meanwhile */
			continue;
		if (sfd < 0)
			r = moat_error_set(err, errno, "open '%s'", sub);
		else if ((r = read_budget(sfd, sub, &b, err)) == 0)
			sum += cg_rt_share(b.runtime, b.period);
	}
	strv_free_n(subs, n);
	if (r == 0)
		*ret = sum;
	return r;
}

/* ---- moat's own parent -------------------------------------------------------------------- */

/* The container's cgroup is a child of /moat, the one cgroup of the host moat may change. */
static bool under_own_parent(const struct moat_cgroup *cg)
{
	size_t len = strlen(CG_DEFAULT_PARENT);

	return cg_path_levels(cg->path) == 2 && cg->path[0] == '/' &&
	       strncmp(cg->path + 1, CG_DEFAULT_PARENT, len) == 0 && cg->path[len + 1] == '/';
}

/* The container's parent in h, locked against every other moat until *ret_fd is closed. */
static int open_parent(const struct moat_cgroup *cg, const struct cg_hier *h, int *ret_fd,
		       char **ret_dir, moat_error *err)
{
	int fd = cg_open_level(h, cg->path, cg_path_levels(cg->path) - 1, ret_dir, err);

	if (fd < 0)
		return fd;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int r = moat_error_set(err, errno, "lock '%s'", *ret_dir);

			close(fd);
			free(*ret_dir);
			*ret_dir = NULL;
			return r;
		}
	}
	*ret_fd = fd;
	return 0;
}

/* What the root's budget leaves for /moat beside its siblings, as a share. */
static int root_leaves(const struct cg_hier *h, struct budget *ret_root, uint64_t *ret,
		       moat_error *err)
{
	_cleanup_close_ int fd = open(h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t siblings, root;

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", h->mnt);
	if (read_budget(fd, h->mnt, ret_root, err) < 0 ||
	    children_share(fd, h->mnt, CG_DEFAULT_PARENT, &siblings, err) < 0)
		return moat_error_ret(err);
	root = cg_rt_share(ret_root->runtime, ret_root->period);
	*ret = root > siblings ? root - siblings : 0;
	return 0;
}

/* A parent moat may not raise: the kernel's refusal, and the parent's budget. */
static int parent_refuses(int pfd, const char *pdir, const char *name, const moat_error *refusal,
			  moat_error *err)
{
	struct budget b;
	uint64_t others;

	if (read_budget(pfd, pdir, &b, err) < 0 ||
	    children_share(pfd, pdir, name, &others, err) < 0)
		return moat_error_ret(err);
	return moat_error_msg(err, refusal->code,
			      "%s; the parent cgroup '%s' has a real-time budget (%s) of %" PRId64
			      " of every %" PRId64 " us, %" PRIu64 " of it held by its other "
			      "children, and moat raises no budget but that of its own /%s",
			      refusal->msg, pdir, RT_RUNTIME, b.runtime, b.period,
			      runtime_of(others, b.period, true), CG_DEFAULT_PARENT);
}

struct raise {
	struct cg_hier *h; /* the container's cgroup in the cpu hierarchy */
	int pfd;           /* /moat there, locked */
	const char *pdir;
	const char *name;  /* the container's directory in /moat */
	int64_t want;      /* the runtime asked for */
	int64_t period;    /* the container's period */
	const char *value; /* want, as text */
};

/* The runtime /moat needs to take the container's want beside its other children. */
static int parent_need(const struct raise *x, const struct budget *parent, uint64_t *ret,
		       moat_error *err)
{
	uint64_t others, need;

	if (children_share(x->pfd, x->pdir, x->name, &others, err) < 0)
		return moat_error_ret(err);
	need = cg_rt_runtime_for(others + cg_rt_share(x->want, x->period), parent->period);
	if (need > (uint64_t)parent->period)
		return moat_error_msg(
			err, EINVAL,
			"%" PRId64 " of every %" PRId64 " us does not fit: with what the other "
			"containers under '%s' hold it needs a real-time budget of %" PRIu64
			" of every %" PRId64 " us there, more than the whole period",
			x->want, x->period, x->pdir, need, parent->period);
	*ret = need;
	return 0;
}

/* Raise /moat to its need, if the root's budget leaves that much; the old runtime back when
 * the container's write still fails. */
static int raise_parent(struct moat_cgroup *cg, const struct raise *x, moat_error *err)
{
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	_cleanup_free_ char *text = NULL, *old = NULL;
	struct budget parent, root;
	uint64_t need = 0, leaves = 0;

	if (read_budget(x->pfd, x->pdir, &parent, err) < 0 ||
	    parent_need(x, &parent, &need, err) < 0 || root_leaves(x->h, &root, &leaves, err) < 0)
		return moat_error_ret(err);
	if (cg_rt_share((int64_t)need, parent.period) > leaves)
		return moat_error_msg(
			err, EINVAL,
			"%" PRId64 " of every %" PRId64 " us does not fit: moat's parent cgroup "
			"'%s' would need a real-time budget (%s) of %" PRIu64 " of every %" PRId64
			" us for its containers, and the root cgroup's %" PRId64 " of "
			"every %" PRId64 " us leaves it %" PRIu64 " beside the other cgroups' "
			"budgets",
			x->want, x->period, x->pdir, RT_RUNTIME, need, parent.period, root.runtime,
			root.period, runtime_of(leaves, parent.period, false));
	if (need <= (uint64_t)parent.runtime)
		return moat_error_msg(err, EINVAL,
				      "write '%s' to '%s/%s' refused, though '%s' has a "
				      "real-time budget of %" PRId64 " of every %" PRId64 " us",
				      x->value, x->h->dir, RT_RUNTIME, x->pdir, parent.runtime,
				      parent.period);
	text = xasprintf("%" PRIu64, need);
	if (cg_write_at(x->pfd, x->pdir, RT_RUNTIME, text, err) < 0)
		return moat_error_prefix(err, "raise the real-time budget of moat's parent cgroup");
	cg->rt_raised = true;
	if (cg_write_at(x->h->fd, x->h->dir, RT_RUNTIME, x->value, err) == 0)
		return 0;
	old = xasprintf("%" PRId64, parent.runtime);
	cg_write_at(x->pfd, x->pdir, RT_RUNTIME, old, &ignored);
	return moat_error_ret(err);
}

int cg_rt_write_runtime(struct moat_cgroup *cg, struct cg_hier *h, const struct cg_write *w,
			moat_error *err)
{
	_cleanup_error_ moat_error refusal = MOAT_ERROR_INIT;
	_cleanup_free_ char *pdir = NULL, *name = NULL;
	_cleanup_close_ int pfd = -1;
	struct raise x = { .h = h, .value = w->value[0], .want = strtoll(w->value[0], NULL, 10) };

	if (open_parent(cg, h, &pfd, &pdir, err) < 0 ||
	    read_i64(h->fd, h->dir, RT_PERIOD, &x.period, err) < 0)
		return moat_error_ret(err);
	if (x.want > x.period)
		return moat_error_msg(err, EINVAL,
				      "%" PRId64 " is more than the real-time period, %" PRId64
				      " us (%s)",
				      x.want, x.period, RT_PERIOD);
	if (cg_write_at(h->fd, h->dir, RT_RUNTIME, w->value[0], &refusal) == 0)
		return 0;
	name = xstrdup(strrchr(cg->path, '/') + 1);
	if (refusal.code != EINVAL)
		return moat_error_msg(err, refusal.code, "%s", refusal.msg);
	if (!under_own_parent(cg))
		return parent_refuses(pfd, pdir, name, &refusal, err);
	x.pfd = pfd;
	x.pdir = pdir;
	x.name = name;
	return raise_parent(cg, &x, err);
}

/* ---- giving it back ----------------------------------------------------------------------- */

static int own_parent_budget(struct moat_cgroup *cg, struct cg_hier **ret_h, moat_error *err)
{
	struct cg_hier *h = cg->layout == MOAT_CGROUP_V2 ? NULL : cg_hier_for(cg, CG_CPU, false);
	_cleanup_free_ char *pdir = NULL;
	_cleanup_close_ int fd = -1;
	int64_t runtime = 0;

	if (h == NULL || !under_own_parent(cg))
		return 0;
	fd = cg_open_level(h, cg->path, 1, &pdir, err);
	if (fd < 0)
		return fd;
	if (faccessat(fd, RT_RUNTIME, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (read_i64(fd, pdir, RT_RUNTIME, &runtime, err) < 0)
		return moat_error_ret(err);
	*ret_h = h;
	return runtime > 0;
}

bool cg_rt_parent_has_budget(struct moat_cgroup *cg)
{
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	struct cg_hier *h = NULL;

	return own_parent_budget(cg, &h, &ignored) > 0;
}

void cg_rt_drop(struct moat_cgroup *cg)
{
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	struct cg_hier *h = cg->layout == MOAT_CGROUP_V2 ? NULL : cg_hier_for(cg, CG_CPU, false);

	if (h != NULL && cg_has_file(h, RT_RUNTIME))
		cg_write_at(h->fd, h->dir, RT_RUNTIME, "0", &ignored);
}

int cg_rt_release(struct moat_cgroup *cg, moat_error *err)
{
	_cleanup_free_ char *pdir = NULL, *text = NULL;
	_cleanup_close_ int pfd = -1;
	struct cg_hier *h = NULL;
	struct budget parent;
	uint64_t held, need;
	int r = own_parent_budget(cg, &h, err);

	if (r <= 0)
		return r;
	if (open_parent(cg, h, &pfd, &pdir, err) < 0 || read_budget(pfd, pdir, &parent, err) < 0 ||
	    children_share(pfd, pdir, NULL, &held, err) < 0)
		return moat_error_prefix(err, "give back the real-time budget of moat's parent "
					      "cgroup");
	need = cg_rt_runtime_for(held, parent.period);
	if (parent.runtime <= 0 || need >= (uint64_t)parent.runtime)
		return 0;
	text = xasprintf("%" PRIu64, need);
	if (cg_write_at(pfd, pdir, RT_RUNTIME, text, err) < 0)
		return moat_error_prefix(err, "give back the real-time budget of moat's parent "
					      "cgroup");
	return 0;
}
