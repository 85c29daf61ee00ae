/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: which cgroup hierarchies the host has and where: the controllers moat knows by name,
 * the scan of mountinfo below the cgroupfs root (v1, v2, hybrid), and the test seams that
 * point it at a fake cgroupfs. */
#include "cgroup-internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"
#include "strv.h"
#include "utils.h"

#define DEFAULT_FSROOT "/sys/fs/cgroup"
#define DEFAULT_MOUNTINFO "/proc/self/mountinfo"

static char *fsroot_override;
static char *mountinfo_override;
const struct moat_cgroup_test_hooks *cg_hooks;

/* ---- controllers ------------------------------------------------------------------------ */

/* clang-format off */
static const struct {
	const char *v1; /* name in a v1 mount's options */
	const char *v2; /* name in cgroup.controllers; NULL: no such controller on v2 */
} ctrl_table[CG_CTRL_COUNT] = {
	[CG_CORE] = { "cgroup", "cgroup" },
	[CG_CPU] = { "cpu", "cpu" },
	[CG_CPUACCT] = { "cpuacct", NULL },
	[CG_CPUSET] = { "cpuset", "cpuset" },
	[CG_MEMORY] = { "memory", "memory" },
	[CG_DEVICES] = { "devices", NULL },
	[CG_FREEZER] = { "freezer", NULL },
	[CG_BLKIO] = { "blkio", "io" },
	[CG_PIDS] = { "pids", "pids" },
	[CG_HUGETLB] = { "hugetlb", "hugetlb" },
	[CG_NET_CLS] = { "net_cls", NULL },
	[CG_NET_PRIO] = { "net_prio", NULL },
	[CG_RDMA] = { "rdma", "rdma" },
	[CG_MISC] = { "misc", "misc" },
	[CG_PERF_EVENT] = { "perf_event", NULL },
};
/* clang-format on */

const char *cg_ctrl_name(enum cg_ctrl c, bool v2)
{
	return v2 && ctrl_table[c].v2 ? ctrl_table[c].v2 : ctrl_table[c].v1;
}

static int ctrl_lookup(const char *name, size_t len, bool v2)
{
	int c;

	for (c = CG_CPU; c < CG_CTRL_COUNT; c++) {
		const char *n = v2 ? ctrl_table[c].v2 : ctrl_table[c].v1;

		if (n != NULL && strlen(n) == len && strncmp(n, name, len) == 0)
			return c;
	}
	return -1;
}

int cg_ctrl_from_v2_name(const char *name, size_t len)
{
	return ctrl_lookup(name, len, true);
}

bool cg_ctrl_has_v2(enum cg_ctrl c)
{
	return ctrl_table[c].v2 != NULL;
}

/* "rw,cpu,cpuacct" (v1 super options, sep ',') or "cpu io memory" (cgroup.controllers). */
static uint32_t ctrl_mask(const char *list, const char *seps, bool v2)
{
	uint32_t mask = 0;
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, seps);
		int c = ctrl_lookup(p, len, v2);

		if (c >= 0)
			mask |= CG_BIT(c);
		p += len;
		p += strspn(p, seps);
	}
	return mask;
}

/* ---- where cgroupfs is, and what is mounted there ----------------------------------------- */

void moat_cgroup_set_fsroot(const char *fsroot)
{
	free(fsroot_override);
	fsroot_override = NULL;
	if (fsroot != NULL) {
		size_t len = strlen(fsroot);

		while (len > 1 && fsroot[len - 1] == '/')
			len--;
		fsroot_override = xstrndup(fsroot, len);
	}
}

void moat_cgroup_set_mountinfo(const char *path)
{
	free(mountinfo_override);
	mountinfo_override = path != NULL ? xstrdup(path) : NULL;
}

void moat_cgroup_set_test_hooks(const struct moat_cgroup_test_hooks *hooks)
{
	cg_hooks = hooks;
}

static const char *fsroot(void)
{
	return fsroot_override != NULL ? fsroot_override : DEFAULT_FSROOT;
}

const char *moat_cgroup_layout_name(enum moat_cgroup_layout layout)
{
	switch (layout) {
	case MOAT_CGROUP_V1: return "v1";
	case MOAT_CGROUP_V2: return "v2";
	case MOAT_CGROUP_HYBRID: return "hybrid";
	}
	return "unknown";
}

static bool at_or_below(const char *path, const char *root)
{
	size_t len = strlen(root);

	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(path, root, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

void cg_hier_clear(struct cg_hier *h)
{
	if (h->fd >= 0)
		close(h->fd);
	if (h->tasks_fd >= 0)
		close(h->tasks_fd);
	free(h->mnt);
	free(h->dir);
	memset(h, 0, sizeof(*h));
	h->fd = h->tasks_fd = -1;
}

static void hier_add(struct moat_cgroup *cg, const char *mnt, bool v2, uint32_t ctrls)
{
	struct cg_hier *h;

	cg->h = xrealloc(cg->h, (cg->n + 1) * sizeof(*cg->h));
	h = &cg->h[cg->n++];
	memset(h, 0, sizeof(*h));
	h->mnt = xstrdup(mnt);
	h->v2 = v2;
	h->ctrls = ctrls;
	h->fd = h->tasks_fd = -1;
}

static int read_v2_controllers(struct cg_hier *h, moat_error *err)
{
	_cleanup_close_ int fd = open(h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *list = NULL;

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", h->mnt);
	if (cg_read_at(fd, h->mnt, "cgroup.controllers", &list, err) < 0)
		return moat_error_ret(err);
	h->ctrls = ctrl_mask(list, " \n", true);
	return 0;
}

struct scan {
	char **devs; /* hierarchies seen: a bind mount of one counts once */
	size_t ndevs;
	char *v2_mnt;
};

static bool scan_seen(struct scan *s, const char *dev)
{
	size_t i;

	for (i = 0; i < s->ndevs; i++)
		if (strcmp(s->devs[i], dev) == 0)
			return true;
	strv_push(&s->devs, &s->ndevs, dev);
	return false;
}

static void scan_line(struct moat_cgroup *cg, struct scan *s, char *line)
{
	struct moat_mountinfo e;

	if (!moat_mountinfo_parse(line, &e) || !at_or_below(e.mnt, fsroot()))
		return;
	if (strcmp(e.fstype, "cgroup2") == 0) {
		/* one cgroup2 hierarchy; the one at the fs root wins over e.g. <root>/unified */
		if (s->v2_mnt == NULL || strcmp(e.mnt, fsroot()) == 0) {
			free(s->v2_mnt);
			s->v2_mnt = xstrdup(e.mnt);
		}
		return;
	}
	if (strcmp(e.fstype, "cgroup") == 0 && !scan_seen(s, e.dev))
		hier_add(cg, e.mnt, false, ctrl_mask(e.super, ",", false));
}

static void scan_layout(struct moat_cgroup *cg, struct scan *s)
{
	if (s->v2_mnt != NULL && (strcmp(s->v2_mnt, fsroot()) == 0 || cg->n == 0)) {
		while (cg->n > 0)
			cg_hier_clear(&cg->h[--cg->n]);
		cg->layout = MOAT_CGROUP_V2;
	} else {
		cg->layout = s->v2_mnt != NULL ? MOAT_CGROUP_HYBRID : MOAT_CGROUP_V1;
	}
	if (s->v2_mnt != NULL)
		hier_add(cg, s->v2_mnt, true, 0);
}

/* Fill cg->h with the hierarchies under the fs root, the unified one last. */
int cg_scan_mounts(struct moat_cgroup *cg, moat_error *err)
{
	const char *path = mountinfo_override != NULL ? mountinfo_override : DEFAULT_MOUNTINFO;
	_cleanup_free_ char *data = NULL;
	struct scan s = { NULL, 0, NULL };
	char *line, *save = NULL;
	int r = 0;

	if (read_file_at(AT_FDCWD, path, CG_MAX_FILE, &data, NULL, err) < 0)
		return moat_error_prefix(err, "detect cgroups");
	for (line = strtok_r(data, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		scan_line(cg, &s, line);
	scan_layout(cg, &s);
	if (cg->n == 0)
		r = moat_error_msg(err, ENOENT, "detect cgroups: nothing mounted at or below '%s'",
				   fsroot());
	else if (cg->h[cg->n - 1].v2)
		r = read_v2_controllers(&cg->h[cg->n - 1], err);
	strv_free_n(s.devs, s.ndevs);
	free(s.v2_mnt);
	return r;
}

int moat_cgroup_detect(enum moat_cgroup_layout *ret, moat_error *err)
{
	struct moat_cgroup cg = { 0 };
	int r = cg_scan_mounts(&cg, err);

	if (r == 0)
		*ret = cg.layout;
	while (cg.n > 0)
		cg_hier_clear(&cg.h[--cg.n]);
	free(cg.h);
	return r;
}

struct cg_hier *cg_hier_for(struct moat_cgroup *cg, enum cg_ctrl c, bool v2)
{
	size_t i;

	if (v2)
		return cg_unified(cg);
	for (i = 0; i < cg->n; i++)
		if (!cg->h[i].v2 && (cg->h[i].ctrls & CG_BIT(c)))
			return &cg->h[i];
	return NULL;
}

struct cg_hier *cg_unified(struct moat_cgroup *cg)
{
	return cg->n > 0 && cg->h[cg->n - 1].v2 ? &cg->h[cg->n - 1] : NULL;
}
