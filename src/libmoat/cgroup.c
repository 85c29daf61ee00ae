/* moat: the container's cgroup. Layout detection, path resolution, the hierarchy walk, the
 * resource table that turns linux.resources into a plan of writes, and the lifecycle (create,
 * open, processes, freeze, kill, destroy). What differs between v1 and v2 lives in
 * cgroup-v1.c and cgroup-v2.c. */
#include "cgroup-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "utils.h"

#define DEFAULT_FSROOT "/sys/fs/cgroup"
#define DEFAULT_MOUNTINFO "/proc/self/mountinfo"
#define DEFAULT_PARENT "moat"           /* linux.cgroupsPath absent or relative */
#define DEFAULT_SLICE "system.slice"    /* systemd form with an empty slice */
#define KILL_ROUNDS 10                  /* unfrozen kill: rescans for processes forked meanwhile */

static char *fsroot_override;
static char *mountinfo_override;
const struct moat_cgroup_test_hooks *cg_hooks;

/* ---- controllers ------------------------------------------------------------------------ */

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

/* ---- small I/O helpers ------------------------------------------------------------------- */

/* An error with a message but no strerror() suffix, returning -code. */
static int cg_fail(moat_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int cg_fail(moat_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	moat_error_setv(err, 0, fmt, ap);
	va_end(ap);
	if (err != NULL)
		err->code = code;
	return -code;
}

static char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (p == NULL)
		abort();
	return p;
}

void cg_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int cg_read_at(int dirfd, const char *dir, const char *file, char **ret, moat_error *err)
{
	if (read_file_at(dirfd, file, CG_MAX_FILE, ret, NULL, err) < 0)
		return moat_error_prefix(err, "cgroup '%s'", dir);
	return 0;
}

/* One write(2) per value: cgroup files take a value whole or not at all. */
int cg_write_at(int dirfd, const char *dir, const char *file, const char *value, moat_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	size_t len = strlen(value);
	ssize_t n;

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s/%s'", dir, file);
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "write '%.200s' to '%s/%s'", value, dir, file);
	if ((size_t)n != len)
		return moat_error_msg(err, EIO, "write '%.200s' to '%s/%s': short write", value, dir,
				      file);
	if (cg_hooks != NULL && cg_hooks->wrote != NULL) {
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);

		cg_hooks->wrote(path, value, cg_hooks->data);
	}
	return 0;
}

bool cg_has_file(const struct cg_hier *h, const char *file)
{
	struct stat st;

	return h->fd >= 0 && fstatat(h->fd, file, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Names of the sub-directories of fd (the sub-cgroups). */
static int list_subdirs(int fd, const char *dir, char ***ret, size_t *ret_n, moat_error *err)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	if (dfd < 0)
		return moat_error_set(err, errno, "open '%s'", dir);
	d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return moat_error_set(err, errno, "read '%s'", dir);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		names = xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	*ret = names;
	*ret_n = n;
	return 0;
}

static void free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
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
	case MOAT_CGROUP_V1:
		return "v1";
	case MOAT_CGROUP_V2:
		return "v2";
	case MOAT_CGROUP_HYBRID:
		return "hybrid";
	}
	return "unknown";
}

/* mountinfo escapes space, tab, newline and backslash in paths as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

struct mount_entry {
	const char *dev;    /* major:minor: one per hierarchy, shared by its bind mounts */
	char *mnt;
	const char *fstype;
	const char *super;  /* super options: the v1 controllers */
};

/* "id parent maj:min root mountpoint options [optional...] - fstype source super" */
static bool parse_mount_line(char *line, struct mount_entry *e)
{
	char *tok[32], *save = NULL, *t;
	size_t n = 0, i;

	for (t = strtok_r(line, " ", &save); t != NULL && n < MOAT_ARRAY_SIZE(tok);
	     t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	for (i = 6; i < n; i++)
		if (strcmp(tok[i], "-") == 0)
			break;
	if (i + 3 >= n)
		return false;
	e->dev = tok[2];
	e->mnt = tok[4];
	e->fstype = tok[i + 1];
	e->super = tok[i + 3];
	unescape_octal(e->mnt);
	return true;
}

static bool at_or_below(const char *path, const char *root)
{
	size_t len = strlen(root);

	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(path, root, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

static void hier_clear(struct cg_hier *h)
{
	if (h->fd >= 0)
		close(h->fd);
	free(h->mnt);
	free(h->dir);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
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
	h->fd = -1;
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
	s->devs = xrealloc(s->devs, (s->ndevs + 1) * sizeof(*s->devs));
	s->devs[s->ndevs++] = xstrdup(dev);
	return false;
}

static void scan_line(struct moat_cgroup *cg, struct scan *s, char *line)
{
	struct mount_entry e;

	if (!parse_mount_line(line, &e) || !at_or_below(e.mnt, fsroot()))
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
			hier_clear(&cg->h[--cg->n]);
		cg->layout = MOAT_CGROUP_V2;
	} else {
		cg->layout = s->v2_mnt != NULL ? MOAT_CGROUP_HYBRID : MOAT_CGROUP_V1;
	}
	if (s->v2_mnt != NULL)
		hier_add(cg, s->v2_mnt, true, 0);
}

/* Fill cg->h with the hierarchies under the fs root, the unified one last. */
static int scan_mounts(struct moat_cgroup *cg, moat_error *err)
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
	free_names(s.devs, s.ndevs);
	free(s.v2_mnt);
	return r;
}

int moat_cgroup_detect(enum moat_cgroup_layout *ret, moat_error *err)
{
	struct moat_cgroup cg = { 0 };
	int r = scan_mounts(&cg, err);

	if (r == 0)
		*ret = cg.layout;
	while (cg.n > 0)
		hier_clear(&cg.h[--cg.n]);
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

/* ---- paths ------------------------------------------------------------------------------ */

static int check_component(const char *c, size_t len, const char *whole, moat_error *err)
{
	size_t i;

	if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
		return cg_fail(err, EINVAL, "'%.*s' is not allowed in '%s'", (int)len, c, whole);
	if (len > NAME_MAX)
		return cg_fail(err, EINVAL, "a component of '%s' is longer than %d bytes", whole,
			       NAME_MAX);
	for (i = 0; i < len; i++)
		if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
			return cg_fail(err, EINVAL, "control character in '%s'", whole);
	return 0;
}

/* "/a//b/" -> "/a/b"; refuses ".", "..", control characters and the root itself. */
static int normalize_path(const char *in, char **ret, moat_error *err)
{
	_cleanup_free_ char *out = xmalloc(strlen(in) + 2);
	const char *p = in;
	size_t n = 0;

	if (*p != '/')
		return cg_fail(err, EINVAL, "'%s' is not an absolute path", in);
	while (*p) {
		size_t len;

		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 0)
			break;
		if (check_component(p, len, in, err) < 0)
			return moat_error_ret(err);
		out[n++] = '/';
		memcpy(out + n, p, len);
		n += len;
		p += len;
	}
	if (n == 0)
		return cg_fail(err, EINVAL, "'%s' is the root cgroup, not one for a container", in);
	out[n] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

static int check_id(const char *id, moat_error *err)
{
	if (id == NULL || *id == '\0' || strchr(id, '/') != NULL ||
	    check_component(id, strlen(id), id, err) < 0)
		return cg_fail(err, EINVAL, "container id '%s' cannot name a cgroup",
			       id ? id : "(null)");
	return 0;
}

/* "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" -> "" (the root). */
static int expand_slice(const char *slice, char **ret, moat_error *err)
{
	size_t len = strlen(slice), base, i;
	_cleanup_free_ char *out = NULL;

	if (len < 6 || strcmp(slice + len - 6, ".slice") != 0)
		return cg_fail(err, EINVAL, "'%s' is not a slice (name.slice)", slice);
	base = len - 6;
	if (base == 1 && slice[0] == '-') {
		*ret = xstrdup("");
		return 0;
	}
	if (strchr(slice, '/') != NULL || slice[0] == '-' || slice[base - 1] == '-' ||
	    strstr(slice, "--") != NULL)
		return cg_fail(err, EINVAL, "'%s' is not a valid slice name", slice);
	out = xstrdup("");
	for (i = 0; i <= base; i++) {
		char *next;

		if (i < base && slice[i] != '-')
			continue;
		next = xasprintf("%s/%.*s.slice", out, (int)i, slice);
		free(out);
		out = next;
	}
	*ret = TAKE_PTR(out);
	return 0;
}

/* "slice:prefix:name" -> "<slice path>/<prefix>-<name>.scope" */
static int resolve_systemd(const char *spec, const char *id, char **ret, moat_error *err)
{
	_cleanup_free_ char *dflt = NULL, *copy = NULL, *slice_path = NULL, *unit = NULL;
	_cleanup_free_ char *raw = NULL;
	char *slice, *prefix, *name;

	if (spec == NULL || *spec == '\0') {
		if (check_id(id, err) < 0)
			return moat_error_ret(err);
		spec = dflt = xasprintf("%s:moat:%s", DEFAULT_SLICE, id);
	}
	copy = xstrdup(spec);
	slice = copy;
	prefix = strchr(slice, ':');
	name = prefix ? strchr(prefix + 1, ':') : NULL;
	if (name == NULL || strchr(name + 1, ':') != NULL || name[1] == '\0')
		return cg_fail(err, EINVAL,
			       "expected \"slice:prefix:name\" with systemd cgroups, got '%s'", spec);
	*prefix++ = '\0';
	*name++ = '\0';
	if (strchr(prefix, '/') != NULL || strchr(name, '/') != NULL)
		return cg_fail(err, EINVAL, "'/' in '%s'", spec);
	if (expand_slice(*slice ? slice : DEFAULT_SLICE, &slice_path, err) < 0)
		return moat_error_ret(err);
	if (strlen(name) > 6 && strcmp(name + strlen(name) - 6, ".slice") == 0)
		unit = xstrdup(name);
	else if (*prefix)
		unit = xasprintf("%s-%s.scope", prefix, name);
	else
		unit = xasprintf("%s.scope", name);
	raw = xasprintf("%s/%s", slice_path, unit);
	return normalize_path(raw, ret, err);
}

int moat_cgroup_resolve_path(const char *cgroups_path, const char *id, bool systemd,
			     char **ret_path, moat_error *err)
{
	_cleanup_free_ char *raw = NULL;
	int r;

	if (systemd)
		r = resolve_systemd(cgroups_path, id, ret_path, err);
	else if (cgroups_path != NULL && cgroups_path[0] == '/')
		r = normalize_path(cgroups_path, ret_path, err);
	else if (cgroups_path != NULL && cgroups_path[0] != '\0')
		r = normalize_path(raw = xasprintf("/%s/%s", DEFAULT_PARENT, cgroups_path),
				   ret_path, err);
	else if ((r = check_id(id, err)) == 0)
		r = normalize_path(raw = xasprintf("/%s/%s", DEFAULT_PARENT, id), ret_path, err);
	if (r < 0)
		return moat_error_prefix(err, "linux.cgroupsPath");
	return 0;
}

size_t cg_path_levels(const char *path)
{
	size_t n = 0;

	for (; *path; path++)
		if (*path == '/')
			n++;
	return n;
}

/* The first n components of a normalized path, relative: "a/b"; "." for none. */
static char *path_prefix(const char *path, size_t n)
{
	const char *p = path;

	if (n == 0)
		return xstrdup(".");
	while (n-- > 0)
		p = strchrnul(p + 1, '/');
	return xstrndup(path + 1, (size_t)(p - path - 1));
}

/* Component i (0-based) of a normalized path. */
static char *path_component(const char *path, size_t i)
{
	const char *p = path + 1;

	while (i-- > 0)
		p = strchr(p, '/') + 1;
	return xstrndup(p, strcspn(p, "/"));
}

/* The directory of level n (its first n components) of path in h; *ret_dir names it. */
int cg_open_level(const struct cg_hier *h, const char *path, size_t n, char **ret_dir,
		  moat_error *err)
{
	_cleanup_free_ char *rel = path_prefix(path, n);
	int fd = openat(AT_FDCWD, h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int lfd;

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", h->mnt);
	lfd = openat(fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	if (lfd < 0)
		return moat_error_set(err, errno, "open '%s/%s'", h->mnt, rel);
	if (ret_dir != NULL)
		*ret_dir = n == 0 ? xstrdup(h->mnt) : xasprintf("%s/%s", h->mnt, rel);
	return lfd;
}

/* ---- making, opening and removing the directories ----------------------------------------- */

static int made_level(const struct moat_cgroup *cg, const struct cg_hier *h, int parentfd,
		      const char *parent_dir, int fd, const char *dir, moat_error *err)
{
	if (cg_hooks != NULL && cg_hooks->made_dir != NULL)
		cg_hooks->made_dir(h->mnt, h->v2, fd, cg_hooks->data);
	if (h->v2)
		return 0;
	return cg_v1_init_level(h, parentfd, parent_dir, fd, dir, err);
}

/* Open the cgroup's directory in h, making the missing levels when make is set. Without make,
 * a missing level leaves h->fd at -1. */
static int hier_walk(struct moat_cgroup *cg, struct cg_hier *h, bool make, moat_error *err)
{
	size_t levels = cg_path_levels(cg->path), i;
	_cleanup_free_ char *dir = xstrdup(h->mnt);
	_cleanup_close_ int fd = open(h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", h->mnt);
	for (i = 0; i < levels; i++) {
		_cleanup_free_ char *name = path_component(cg->path, i);
		_cleanup_free_ char *sub = xasprintf("%s/%s", dir, name);
		bool made = false;
		int nfd;

		if (make && mkdirat(fd, name, 0755) == 0) {
			made = true;
			if (h->made == 0)
				h->made = levels - i;
		} else if (make && errno != EEXIST) {
			return moat_error_set(err, errno, "mkdir '%s'", sub);
		}
		nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && !make && errno == ENOENT)
			return 0;
		if (nfd < 0)
			return moat_error_set(err, errno, "open '%s'", sub);
		if (made && made_level(cg, h, fd, dir, nfd, sub, err) < 0) {
			close(nfd);
			return moat_error_ret(err);
		}
		close(fd);
		fd = nfd;
		free(dir);
		dir = TAKE_PTR(sub);
	}
	h->fd = TAKE_FD(fd);
	return 0;
}

/* rmdir a cgroup after its sub-cgroups. rmdir can fail with EBUSY for a moment after the last
 * process left. */
static int remove_cgroup(int parentfd, const char *name, const char *dir, unsigned depth,
			 moat_error *err)
{
	_cleanup_close_ int fd = openat(parentfd, name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **subs = NULL;
	size_t nsubs = 0, i;
	unsigned waited = 0;
	int r = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : moat_error_set(err, errno, "open '%s'", dir);
	if (depth > CG_MAX_DEPTH)
		return moat_error_msg(err, ELOOP, "remove '%s': nested deeper than %d", dir,
				      CG_MAX_DEPTH);
	if (list_subdirs(fd, dir, &subs, &nsubs, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < nsubs && r == 0; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", dir, subs[i]);

		r = remove_cgroup(fd, subs[i], sub, depth + 1, err);
	}
	free_names(subs, nsubs);
	if (r < 0)
		return r;
	if (cg_hooks != NULL && cg_hooks->removing_dir != NULL)
		cg_hooks->removing_dir(fd, cg_hooks->data);
	while (unlinkat(parentfd, name, AT_REMOVEDIR) < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || waited >= CG_RMDIR_TIMEOUT_MS)
			return moat_error_set(err, errno, "rmdir '%s'", dir);
		cg_sleep_ms(10);
		waited += 10;
	}
	return 0;
}

/* Remove the levels create made in h: the shallowest made level and all below it. */
static void hier_unmake(struct moat_cgroup *cg, struct cg_hier *h)
{
	size_t first = cg_path_levels(cg->path) - h->made;
	_cleanup_free_ char *name = NULL, *pdir = NULL, *dir = NULL;
	_cleanup_close_ int pfd = -1;
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;

	if (h->made == 0)
		return;
	pfd = cg_open_level(h, cg->path, first, &pdir, &ignored);
	if (pfd < 0)
		return;
	name = path_component(cg->path, first);
	dir = xasprintf("%s/%s", pdir, name);
	remove_cgroup(pfd, name, dir, 0, &ignored);
	h->made = 0;
}

static int hier_remove(struct moat_cgroup *cg, struct cg_hier *h, moat_error *err)
{
	size_t levels = cg_path_levels(cg->path);
	_cleanup_free_ char *name = path_component(cg->path, levels - 1), *pdir = NULL;
	_cleanup_close_ int pfd = -1;

	pfd = cg_open_level(h, cg->path, levels - 1, &pdir, err);
	if (pfd == -ENOENT)
		moat_error_clear(err);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	if (remove_cgroup(pfd, name, h->dir, 0, err) < 0)
		return moat_error_ret(err);
	close(h->fd);
	h->fd = -1;
	return 0;
}

/* ---- the resource table ------------------------------------------------------------------- */

enum cg_kind { K_I64, K_U64, K_U32, K_U16, K_BOOL, K_STR };

enum cg_conv {
	CV_NONE,           /* no file on this side: the field is an error here */
	CV_NUM,            /* the number as it is */
	CV_NUM_SET,        /* the number; 0 means "not set" (as runc and crun read shares,
			    * quota, period and weights), so nothing is written */
	CV_MAX_NEG,        /* negative -> "max" */
	CV_PIDS,           /* 0 or negative -> "max" */
	CV_BOOL,           /* "1" or "0" */
	CV_STR,            /* the string as it is */
	CV_CPU_WEIGHT,     /* cpu.shares -> cpu.weight */
	CV_IO_WEIGHT,      /* blkio weight 10..1000 -> "default <io.weight 1..10000>" */
	CV_SWAP_V2,        /* memory+swap -> memory.swap.max (swap alone) */
	CV_CPU_MAX,        /* quota (and period) -> cpu.max */
	CV_CPU_MAX_PERIOD, /* period without quota -> cpu.max keeping the quota */
	CV_NOOP_TRUE,      /* no file: true is what this side always does; false is an error */
	CV_NOOP_FALSE,     /* no file: false is what this side always does; true is an error */
};

struct cg_target {
	const char *file;
	enum cg_conv conv;
};

struct cg_row {
	const char *field;     /* below linux.resources */
	enum cg_ctrl ctrl;
	size_t object;         /* offsetof(struct oci_resources, <object pointer>) */
	size_t member;         /* offsetof(<object>, <member>) */
	size_t present;        /* offsetof(<object>, <member>_present), or NO_FLAG */
	enum cg_kind kind;
	struct cg_target v1[2]; /* the first file that exists in the cgroup is written */
	struct cg_target v2[2];
	unsigned flags;        /* CG_W_* */
};

#define NO_FLAG SIZE_MAX
#define FIELD(obj, type, m)                                                   \
	offsetof(struct oci_resources, obj), offsetof(struct type, m),        \
		offsetof(struct type, m##_present)
#define FIELD_ALWAYS(obj, type, m) \
	offsetof(struct oci_resources, obj), offsetof(struct type, m), NO_FLAG
#define NO_FILE { { NULL, CV_NONE } }

/* One row per OCI field: which controller, which v1 file, which v2 file, how the value is
 * written. Order matters within a controller (period before quota, rt period before rt
 * runtime); cg_v1_order_memory() orders memory limit and swap. */
static const struct cg_row rows[] = {
	{ "memory.limit", CG_MEMORY, FIELD(memory, oci_memory, limit), K_I64,
	  { { "memory.limit_in_bytes", CV_NUM } }, { { "memory.max", CV_MAX_NEG } } },
	{ "memory.reservation", CG_MEMORY, FIELD(memory, oci_memory, reservation), K_I64,
	  { { "memory.soft_limit_in_bytes", CV_NUM } }, { { "memory.low", CV_MAX_NEG } } },
	{ "memory.swap", CG_MEMORY, FIELD(memory, oci_memory, swap), K_I64,
	  { { "memory.memsw.limit_in_bytes", CV_NUM } }, { { "memory.swap.max", CV_SWAP_V2 } } },
	{ "memory.kernel", CG_MEMORY, FIELD(memory, oci_memory, kernel), K_I64,
	  { { "memory.kmem.limit_in_bytes", CV_NUM } }, NO_FILE, CG_W_CHECK_EFFECT },
	{ "memory.kernelTCP", CG_MEMORY, FIELD(memory, oci_memory, kernel_tcp), K_I64,
	  { { "memory.kmem.tcp.limit_in_bytes", CV_NUM } }, NO_FILE, CG_W_CHECK_EFFECT },
	{ "memory.swappiness", CG_MEMORY, FIELD(memory, oci_memory, swappiness), K_U64,
	  { { "memory.swappiness", CV_NUM } }, NO_FILE },
	{ "memory.disableOOMKiller", CG_MEMORY, FIELD(memory, oci_memory, disable_oom_killer),
	  K_BOOL,
	  { { "memory.oom_control", CV_BOOL } }, { { NULL, CV_NOOP_FALSE } } },
	{ "memory.useHierarchy", CG_MEMORY, FIELD(memory, oci_memory, use_hierarchy), K_BOOL,
	  { { "memory.use_hierarchy", CV_BOOL } }, { { NULL, CV_NOOP_TRUE } } },
	{ "cpu.shares", CG_CPU, FIELD(cpu, oci_cpu, shares), K_U64,
	  { { "cpu.shares", CV_NUM_SET } }, { { "cpu.weight", CV_CPU_WEIGHT } } },
	{ "cpu.period", CG_CPU, FIELD(cpu, oci_cpu, period), K_U64,
	  { { "cpu.cfs_period_us", CV_NUM_SET } }, { { "cpu.max", CV_CPU_MAX_PERIOD } } },
	{ "cpu.quota", CG_CPU, FIELD(cpu, oci_cpu, quota), K_I64,
	  { { "cpu.cfs_quota_us", CV_NUM_SET } }, { { "cpu.max", CV_CPU_MAX } } },
	{ "cpu.burst", CG_CPU, FIELD(cpu, oci_cpu, burst), K_U64,
	  { { "cpu.cfs_burst_us", CV_NUM } }, { { "cpu.max.burst", CV_NUM } } },
	{ "cpu.realtimePeriod", CG_CPU, FIELD(cpu, oci_cpu, realtime_period), K_U64,
	  { { "cpu.rt_period_us", CV_NUM } }, NO_FILE },
	{ "cpu.realtimeRuntime", CG_CPU, FIELD(cpu, oci_cpu, realtime_runtime), K_I64,
	  { { "cpu.rt_runtime_us", CV_NUM } }, NO_FILE },
	{ "cpu.idle", CG_CPU, FIELD(cpu, oci_cpu, idle), K_I64,
	  { { "cpu.idle", CV_NUM } }, { { "cpu.idle", CV_NUM } } },
	{ "cpu.cpus", CG_CPUSET, FIELD_ALWAYS(cpu, oci_cpu, cpus), K_STR,
	  { { "cpuset.cpus", CV_STR } }, { { "cpuset.cpus", CV_STR } } },
	{ "cpu.mems", CG_CPUSET, FIELD_ALWAYS(cpu, oci_cpu, mems), K_STR,
	  { { "cpuset.mems", CV_STR } }, { { "cpuset.mems", CV_STR } } },
	{ "pids.limit", CG_PIDS, FIELD_ALWAYS(pids, oci_pids, limit), K_I64,
	  { { "pids.max", CV_PIDS } }, { { "pids.max", CV_PIDS } } },
	{ "blockIO.weight", CG_BLKIO, FIELD(block_io, oci_block_io, weight), K_U16,
	  { { "blkio.weight", CV_NUM_SET }, { "blkio.bfq.weight", CV_NUM_SET } },
	  { { "io.bfq.weight", CV_NUM_SET }, { "io.weight", CV_IO_WEIGHT } } },
	{ "blockIO.leafWeight", CG_BLKIO, FIELD(block_io, oci_block_io, leaf_weight), K_U16,
	  { { "blkio.leaf_weight", CV_NUM_SET } }, NO_FILE },
	{ "network.classID", CG_NET_CLS, FIELD(network, oci_network, class_id), K_U32,
	  { { "net_cls.classid", CV_NUM } }, NO_FILE },
};

/* blockIO.throttle*: one "major:minor rate" line each, to its v1 file or v2 io.max key. */
static const struct {
	const char *field;
	size_t list, len; /* offsetof(struct oci_block_io, ...) */
	const char *v1;
	const char *v2_key;
} throttle_rows[] = {
#define T(name, m, file, key) \
	{ name, offsetof(struct oci_block_io, m), offsetof(struct oci_block_io, m##_len), file, key }
	T("throttleReadBpsDevice", throttle_read_bps_device, "blkio.throttle.read_bps_device",
	  "rbps"),
	T("throttleWriteBpsDevice", throttle_write_bps_device, "blkio.throttle.write_bps_device",
	  "wbps"),
	T("throttleReadIOPSDevice", throttle_read_iops_device, "blkio.throttle.read_iops_device",
	  "riops"),
	T("throttleWriteIOPSDevice", throttle_write_iops_device, "blkio.throttle.write_iops_device",
	  "wiops"),
#undef T
};

struct cg_value {
	int64_t i;    /* K_I64 */
	uint64_t u;   /* unsigned kinds */
	bool b;
	const char *s;
};

/* The row's object, or NULL when the field is absent. */
static const char *row_get(const struct oci_resources *res, const struct cg_row *row,
			   struct cg_value *v)
{
	const char *obj = *(const char *const *)((const char *)res + row->object);
	const char *m;

	if (obj == NULL || (row->present != NO_FLAG && !*(const bool *)(obj + row->present)))
		return NULL;
	m = obj + row->member;
	memset(v, 0, sizeof(*v));
	switch (row->kind) {
	case K_I64: v->i = *(const int64_t *)m; break;
	case K_U64: v->u = *(const uint64_t *)m; break;
	case K_U32: v->u = *(const uint32_t *)m; break;
	case K_U16: v->u = *(const uint16_t *)m; break;
	case K_BOOL: v->b = *(const bool *)m; break;
	case K_STR: v->s = *(const char *const *)m; break;
	}
	if (row->kind == K_STR && v->s == NULL)
		return NULL;
	return obj;
}

static char *num_text(const struct cg_row *row, const struct cg_value *v)
{
	return row->kind == K_I64 ? xasprintf("%" PRId64, v->i) : xasprintf("%" PRIu64, v->u);
}

static bool is_zero(const struct cg_row *row, const struct cg_value *v)
{
	return row->kind == K_I64 ? v->i == 0 : v->u == 0;
}

/* The text for one target, NULL (with 0) when nothing is to be written. */
static int convert(const struct cg_row *row, const struct cg_target *t, const char *obj,
		   const struct cg_value *v, const char *field, char **ret, unsigned *flags,
		   moat_error *err)
{
	*ret = NULL;
	switch (t->conv) {
	case CV_NONE:
	case CV_NOOP_TRUE:
	case CV_NOOP_FALSE:
		return 0;
	case CV_NUM_SET:
		if (is_zero(row, v))
			return 0;
		/* fall through */
	case CV_NUM:
		*ret = num_text(row, v);
		return 0;
	case CV_MAX_NEG:
		*ret = v->i < 0 ? xstrdup("max") : num_text(row, v);
		return 0;
	case CV_PIDS:
		*ret = v->i <= 0 ? xstrdup("max") : num_text(row, v);
		return 0;
	case CV_BOOL:
		*ret = xstrdup(v->b ? "1" : "0");
		return 0;
	case CV_STR:
		*ret = xstrdup(v->s);
		return 0;
	case CV_CPU_WEIGHT:
		if (v->u != 0)
			*ret = xasprintf("%" PRIu64, cg_v2_cpu_weight(v->u));
		return 0;
	case CV_IO_WEIGHT:
		if (v->u == 0)
			return 0;
		if (v->u < 10 || v->u > 1000)
			return cg_fail(err, EINVAL, "%s: %" PRIu64 " is outside 10..1000", field, v->u);
		*ret = xasprintf("default %" PRIu64, cg_v2_io_weight(v->u));
		return 0;
	case CV_SWAP_V2:
		return cg_v2_swap_max((const struct oci_memory *)obj, ret, err);
	case CV_CPU_MAX: {
		const struct oci_cpu *c = (const struct oci_cpu *)obj;

		if (c->quota != 0)
			*ret = cg_v2_cpu_max(c, flags);
		return 0;
	}
	case CV_CPU_MAX_PERIOD: {
		const struct oci_cpu *c = (const struct oci_cpu *)obj;

		if (!c->quota_present || c->quota == 0)
			*ret = cg_v2_cpu_max(c, flags);
		return 0;
	}
	}
	return 0;
}

void cg_plan_add(struct cg_plan *p, const char *field, enum cg_ctrl c, bool v2, char *file,
		 char *value)
{
	struct cg_write *w;

	p->w = xrealloc(p->w, (p->n + 1) * sizeof(*p->w));
	w = &p->w[p->n++];
	memset(w, 0, sizeof(*w));
	w->field = xstrdup(field);
	w->ctrl = c;
	w->v2 = v2;
	w->file[0] = file;
	w->value[0] = value;
}

void cg_plan_clear(struct cg_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->w[i].field);
		free(p->w[i].file[0]);
		free(p->w[i].file[1]);
		free(p->w[i].value[0]);
		free(p->w[i].value[1]);
	}
	free(p->w);
	p->w = NULL;
	p->n = 0;
}

/* Which side takes the controller: the v1 hierarchy holding it, else the unified one. */
int cg_plan_side(struct moat_cgroup *cg, enum cg_ctrl c, const char *field, bool *ret_v2,
		 moat_error *err)
{
	struct cg_hier *u = cg_unified(cg);

	if (c != CG_CORE && cg_hier_for(cg, c, false) != NULL) {
		*ret_v2 = false;
		return 0;
	}
	if (u != NULL && ctrl_table[c].v2 != NULL && (c == CG_CORE || (u->ctrls & CG_BIT(c)))) {
		*ret_v2 = true;
		return 0;
	}
	if (cg->layout == MOAT_CGROUP_V2 && ctrl_table[c].v2 == NULL)
		return cg_fail(err, EOPNOTSUPP, "%s: not supported on cgroup v2", field);
	return cg_fail(err, EOPNOTSUPP, "%s: not supported on this host (no %s controller)", field,
		       cg_ctrl_name(c, cg->layout == MOAT_CGROUP_V2));
}

static int plan_no_file(const struct cg_row *row, const struct cg_target *t,
			const struct cg_value *v, const char *field, bool v2, moat_error *err)
{
	if ((t->conv == CV_NOOP_TRUE && v->b) || (t->conv == CV_NOOP_FALSE && !v->b))
		return 0;
	if (t->conv == CV_NOOP_TRUE || t->conv == CV_NOOP_FALSE)
		return cg_fail(err, EOPNOTSUPP, "%s: %s is not supported on cgroup v%d", field,
			       v->b ? "true" : "false", v2 ? 2 : 1);
	return cg_fail(err, EOPNOTSUPP, "%s: not supported on cgroup v%d", field, v2 ? 2 : 1);
}

static int plan_row(struct moat_cgroup *cg, const struct oci_resources *res,
		    const struct cg_row *row, struct cg_plan *p, moat_error *err)
{
	_cleanup_free_ char *field = NULL, *val0 = NULL, *val1 = NULL;
	const struct cg_target *t;
	struct cg_value v;
	unsigned flags = row->flags;
	const char *obj = row_get(res, row, &v);
	bool v2;

	if (obj == NULL)
		return 0;
	field = xasprintf("linux.resources.%s", row->field);
	if (cg_plan_side(cg, row->ctrl, field, &v2, err) < 0)
		return moat_error_ret(err);
	t = v2 ? row->v2 : row->v1;
	if (t[0].file == NULL)
		return plan_no_file(row, &t[0], &v, field, v2, err);
	if (convert(row, &t[0], obj, &v, field, &val0, &flags, err) < 0)
		return moat_error_ret(err);
	if (val0 == NULL)
		return 0;
	if (t[1].file != NULL && convert(row, &t[1], obj, &v, field, &val1, &flags, err) < 0)
		return moat_error_ret(err);
	cg_plan_add(p, field, row->ctrl, v2, xstrdup(t[0].file), TAKE_PTR(val0));
	p->w[p->n - 1].flags = flags;
	if (t[1].file != NULL && val1 != NULL) {
		p->w[p->n - 1].file[1] = xstrdup(t[1].file);
		p->w[p->n - 1].value[1] = TAKE_PTR(val1);
	}
	return 0;
}

static int check_dev(const char *field, int64_t major, int64_t minor, moat_error *err)
{
	if (major < 0 || minor < 0)
		return cg_fail(err, EINVAL, "%s: major and minor must not be negative", field);
	return 0;
}

static int plan_weight_device(struct moat_cgroup *cg, const struct oci_weight_device *d,
			      size_t i, struct cg_plan *p, moat_error *err)
{
	_cleanup_free_ char *field = xasprintf("linux.resources.blockIO.weightDevice[%zu]", i);
	_cleanup_free_ char *wfield = xasprintf("%s.weight", field);
	_cleanup_free_ char *lfield = xasprintf("%s.leafWeight", field);
	bool v2;

	if (check_dev(field, d->major, d->minor, err) < 0 ||
	    cg_plan_side(cg, CG_BLKIO, field, &v2, err) < 0)
		return moat_error_ret(err);
	if (d->weight_present && !v2) {
		cg_plan_add(p, wfield, CG_BLKIO, false, xstrdup("blkio.weight_device"),
			    xasprintf("%" PRId64 ":%" PRId64 " %u", d->major, d->minor, d->weight));
		p->w[p->n - 1].file[1] = xstrdup("blkio.bfq.weight_device");
		p->w[p->n - 1].value[1] = xstrdup(p->w[p->n - 1].value[0]);
	} else if (d->weight_present) {
		if (d->weight < 10 || d->weight > 1000)
			return cg_fail(err, EINVAL, "%s: %u is outside 10..1000", wfield, d->weight);
		cg_plan_add(p, wfield, CG_BLKIO, true, xstrdup("io.bfq.weight"),
			    xasprintf("%" PRId64 ":%" PRId64 " %u", d->major, d->minor, d->weight));
		p->w[p->n - 1].file[1] = xstrdup("io.weight");
		p->w[p->n - 1].value[1] = xasprintf("%" PRId64 ":%" PRId64 " %" PRIu64, d->major,
						    d->minor, cg_v2_io_weight(d->weight));
	}
	if (d->leaf_weight_present && v2)
		return cg_fail(err, EOPNOTSUPP, "%s: not supported on cgroup v2", lfield);
	if (d->leaf_weight_present)
		cg_plan_add(p, lfield, CG_BLKIO, false, xstrdup("blkio.leaf_weight_device"),
			    xasprintf("%" PRId64 ":%" PRId64 " %u", d->major, d->minor,
				      d->leaf_weight));
	return 0;
}

static int plan_throttle(struct moat_cgroup *cg, const struct oci_block_io *bio, size_t row,
			 struct cg_plan *p, moat_error *err)
{
	const struct oci_throttle_device *const *list =
		*(const struct oci_throttle_device *const *const *)((const char *)bio +
								       throttle_rows[row].list);
	size_t n = *(const size_t *)((const char *)bio + throttle_rows[row].len), i;

	for (i = 0; i < n; i++) {
		const struct oci_throttle_device *d = list[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.blockIO.%s[%zu]",
						       throttle_rows[row].field, i);
		bool v2;

		if (check_dev(field, d->major, d->minor, err) < 0 ||
		    cg_plan_side(cg, CG_BLKIO, field, &v2, err) < 0)
			return moat_error_ret(err);
		if (v2)
			cg_plan_add(p, field, CG_BLKIO, true, xstrdup("io.max"),
				    xasprintf("%" PRId64 ":%" PRId64 " %s=%" PRIu64, d->major,
					      d->minor, throttle_rows[row].v2_key, d->rate));
		else
			cg_plan_add(p, field, CG_BLKIO, false, xstrdup(throttle_rows[row].v1),
				    xasprintf("%" PRId64 ":%" PRId64 " %" PRIu64, d->major, d->minor,
					      d->rate));
	}
	return 0;
}

static int plan_block_io(struct moat_cgroup *cg, const struct oci_block_io *bio,
			 struct cg_plan *p, moat_error *err)
{
	size_t i;

	if (bio == NULL)
		return 0;
	for (i = 0; i < bio->weight_device_len; i++)
		if (plan_weight_device(cg, bio->weight_device[i], i, p, err) < 0)
			return moat_error_ret(err);
	for (i = 0; i < MOAT_ARRAY_SIZE(throttle_rows); i++)
		if (plan_throttle(cg, bio, i, p, err) < 0)
			return moat_error_ret(err);
	return 0;
}

/* A word that goes into a file name or a line: letters, digits and a few marks only. */
static bool plain_word(const char *s, size_t max, const char *extra)
{
	size_t len = strlen(s), i;

	if (len == 0 || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr(extra, s[i]) != NULL))
			return false;
	return true;
}

static int plan_hugepages(struct moat_cgroup *cg, const struct oci_resources *res,
			  struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < res->hugepage_limits_len; i++) {
		const struct oci_hugepage_limit *h = res->hugepage_limits[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.hugepageLimits[%zu]", i);
		bool v2;

		if (!plain_word(h->page_size, 16, ""))
			return cg_fail(err, EINVAL, "%s.pageSize: '%s' is not a page size such as 2MB",
				       field, h->page_size);
		if (cg_plan_side(cg, CG_HUGETLB, field, &v2, err) < 0)
			return moat_error_ret(err);
		cg_plan_add(p, field, CG_HUGETLB, v2,
			    v2 ? xasprintf("hugetlb.%s.max", h->page_size)
			       : xasprintf("hugetlb.%s.limit_in_bytes", h->page_size),
			    xasprintf("%" PRIu64, h->limit));
	}
	return 0;
}

static int plan_net_prio(struct moat_cgroup *cg, const struct oci_network *net,
			 struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; net != NULL && i < net->priorities_len; i++) {
		const struct oci_net_priority *np = net->priorities[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.network.priorities[%zu]", i);
		bool v2;

		if (!plain_word(np->name, 15, "-_.@:"))
			return cg_fail(err, EINVAL, "%s.name: '%s' is not an interface name", field,
				       np->name);
		if (cg_plan_side(cg, CG_NET_PRIO, field, &v2, err) < 0)
			return moat_error_ret(err);
		cg_plan_add(p, field, CG_NET_PRIO, false, xstrdup("net_prio.ifpriomap"),
			    xasprintf("%s %" PRIu32, np->name, np->priority));
	}
	return 0;
}

static int plan_rdma(struct moat_cgroup *cg, const struct oci_resources *res, struct cg_plan *p,
		     moat_error *err)
{
	size_t i;

	for (i = 0; i < res->rdma_len; i++) {
		const struct oci_rdma *d = res->rdma[i];
		_cleanup_free_ char *field = xasprintf("linux.resources.rdma.%s", d->name);
		_cleanup_free_ char *handles = NULL, *objects = NULL;
		bool v2;

		if (!plain_word(d->name, 64, "-_.:"))
			return cg_fail(err, EINVAL, "%s: '%s' is not a device name", field, d->name);
		if (!d->hca_handles_present && !d->hca_objects_present)
			continue;
		if (cg_plan_side(cg, CG_RDMA, field, &v2, err) < 0)
			return moat_error_ret(err);
		handles = d->hca_handles_present ? xasprintf(" hca_handle=%" PRIu32, d->hca_handles)
						 : xstrdup("");
		objects = d->hca_objects_present ? xasprintf(" hca_object=%" PRIu32, d->hca_objects)
						 : xstrdup("");
		cg_plan_add(p, field, CG_RDMA, v2, xstrdup("rdma.max"),
			    xasprintf("%s%s%s", d->name, handles, objects));
	}
	return 0;
}

static int plan_devices(struct moat_cgroup *cg, const struct oci_resources *res, bool creating,
			struct cg_plan *p, moat_error *err)
{
	bool listed = res != NULL && res->devices != NULL;

	if (cg->layout != MOAT_CGROUP_V2 && cg_hier_for(cg, CG_DEVICES, false) != NULL)
		return cg_v1_plan_devices(res, creating, p, err);
	if (!listed)
		return 0;
	if (cg->layout == MOAT_CGROUP_V1)
		return cg_fail(err, EOPNOTSUPP, "linux.resources.devices: not supported on this "
						"host (no devices controller)");
	return cg_fail(err, EOPNOTSUPP,
		       "linux.resources.devices: device rules on cgroup v2 need an eBPF program, "
		       "which moat does not load yet");
}

static int plan_build(struct moat_cgroup *cg, const struct oci_resources *res, bool creating,
		      struct cg_plan *p, moat_error *err)
{
	size_t i;

	if (plan_devices(cg, res, creating, p, err) < 0)
		return moat_error_ret(err);
	if (res == NULL)
		return 0;
	for (i = 0; i < MOAT_ARRAY_SIZE(rows); i++)
		if (plan_row(cg, res, &rows[i], p, err) < 0)
			return moat_error_ret(err);
	if (plan_block_io(cg, res->block_io, p, err) < 0 || plan_hugepages(cg, res, p, err) < 0 ||
	    plan_net_prio(cg, res->network, p, err) < 0 || plan_rdma(cg, res, p, err) < 0 ||
	    cg_v2_plan_unified(cg, res->unified, p, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* ---- running a plan ------------------------------------------------------------------------ */

static struct cg_hier *write_hier(struct moat_cgroup *cg, const struct cg_write *w,
				  moat_error *err)
{
	struct cg_hier *h = cg_hier_for(cg, w->ctrl, w->v2);

	if (h == NULL || h->fd < 0) {
		cg_fail(err, ENOENT, "%s: cgroup '%s' does not exist in the %s hierarchy", w->field,
			cg->path, w->v2 ? "unified" : cg_ctrl_name(w->ctrl, false));
		return NULL;
	}
	return h;
}

/* Settle each write on the first of its files that exists here. */
static int plan_pick_files(struct moat_cgroup *cg, struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		struct cg_write *w = &p->w[i];
		struct cg_hier *h = write_hier(cg, w, err);

		if (h == NULL)
			return moat_error_ret(err);
		if (cg_has_file(h, w->file[0]))
			continue;
		if (w->file[1] == NULL)
			return cg_fail(err, EOPNOTSUPP, "%s: not supported on this host (no %s)",
				       w->field, w->file[0]);
		if (!cg_has_file(h, w->file[1]))
			return cg_fail(err, EOPNOTSUPP,
				       "%s: not supported on this host (no %s or %s)", w->field,
				       w->file[0], w->file[1]);
		free(w->file[0]);
		free(w->value[0]);
		w->file[0] = TAKE_PTR(w->file[1]);
		w->value[0] = TAKE_PTR(w->value[1]);
	}
	return 0;
}

static uint32_t plan_v2_ctrls(const struct cg_plan *p)
{
	uint32_t mask = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->w[i].v2 && p->w[i].ctrl != CG_CORE)
			mask |= CG_BIT(p->w[i].ctrl);
	return mask;
}

static int read_u64(struct cg_hier *h, const char *file, uint64_t *ret, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char *end;

	if (cg_read_at(h->fd, h->dir, file, &text, err) < 0)
		return moat_error_ret(err);
	errno = 0;
	*ret = strtoull(text, &end, 10);
	if (errno != 0 || end == text)
		return cg_fail(err, EINVAL, "cgroup '%s': %s holds '%.40s', not a number", h->dir,
			       file, text);
	return 0;
}

/* A kernel that accepts a write and ignores it (memory.kmem.limit_in_bytes since 6.1) would
 * drop a limit silently: read back, and call the field unsupported if nothing moved. */
static int write_checked(struct cg_hier *h, const struct cg_write *w, moat_error *err)
{
	uint64_t before, after, want, page = (uint64_t)sysconf(_SC_PAGESIZE);
	int64_t req = strtoll(w->value[0], NULL, 10);

	if (read_u64(h, w->file[0], &before, err) < 0 ||
	    cg_write_at(h->fd, h->dir, w->file[0], w->value[0], err) < 0 ||
	    read_u64(h, w->file[0], &after, err) < 0)
		return moat_error_ret(err);
	want = req < 0 ? 0 : (uint64_t)req / page * page;
	if (req >= 0 && after == before && after != want)
		return cg_fail(err, EOPNOTSUPP, "not supported on this host (the kernel ignores %s)",
			       w->file[0]);
	return 0;
}

/* cpu.max with only a period: keep the quota that is there. */
static int write_keep_quota(struct cg_hier *h, const struct cg_write *w, moat_error *err)
{
	_cleanup_free_ char *cur = NULL, *value = NULL;

	if (cg_read_at(h->fd, h->dir, w->file[0], &cur, err) < 0)
		return moat_error_ret(err);
	value = xasprintf("%.*s %s", (int)strcspn(cur, " \n"), cur, w->value[0]);
	return cg_write_at(h->fd, h->dir, w->file[0], value, err);
}

static int plan_run(struct moat_cgroup *cg, const struct cg_plan *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct cg_write *w = &p->w[i];
		struct cg_hier *h = write_hier(cg, w, err);
		int r;

		if (h == NULL)
			return moat_error_ret(err);
		if (w->flags & CG_W_CHECK_EFFECT)
			r = write_checked(h, w, err);
		else if (w->flags & CG_W_KEEP_QUOTA)
			r = write_keep_quota(h, w, err);
		else
			r = cg_write_at(h->fd, h->dir, w->file[0], w->value[0], err);
		if (r < 0)
			return moat_error_prefix(err, "%s", w->field);
	}
	return 0;
}

/* memory.checkBeforeUpdate: refuse a limit below what the cgroup already uses. */
static int check_memory_usage(struct moat_cgroup *cg, const struct oci_resources *res,
			      moat_error *err)
{
	const struct oci_memory *m = res ? res->memory : NULL;
	struct cg_hier *h;
	uint64_t usage;
	bool v2;

	if (m == NULL || !m->check_before_update_present || !m->check_before_update ||
	    !m->limit_present || m->limit < 0)
		return 0;
	if (cg_plan_side(cg, CG_MEMORY, "linux.resources.memory.checkBeforeUpdate", &v2, err) < 0)
		return moat_error_ret(err);
	h = cg_hier_for(cg, CG_MEMORY, v2);
	if (h->fd < 0)
		return 0;
	if (read_u64(h, v2 ? "memory.current" : "memory.usage_in_bytes", &usage, err) < 0)
		return moat_error_prefix(err, "linux.resources.memory.checkBeforeUpdate");
	if (usage > (uint64_t)m->limit)
		return cg_fail(err, EBUSY,
			       "linux.resources.memory.limit: %" PRId64 " is below the %" PRIu64
			       " bytes the cgroup uses now (memory.checkBeforeUpdate)",
			       m->limit, usage);
	return 0;
}

static int apply(struct moat_cgroup *cg, const struct oci_resources *res, bool creating,
		 moat_error *err)
{
	_cleanup_(cg_plan_clear) struct cg_plan p = { NULL, 0 };

	if (plan_build(cg, res, creating, &p, err) < 0 ||
	    cg_v2_enable(cg, plan_v2_ctrls(&p), err) < 0 || plan_pick_files(cg, &p, err) < 0 ||
	    check_memory_usage(cg, res, err) < 0 || cg_v1_order_memory(cg, &p, err) < 0 ||
	    plan_run(cg, &p, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static int cg_setup(const char *path, struct moat_cgroup **ret, moat_error *err)
{
	struct moat_cgroup *cg = xcalloc(1, sizeof(*cg));
	size_t i;

	if (path == NULL) {
		moat_cgroup_free(cg);
		return cg_fail(err, EINVAL, "no cgroup path");
	}
	if (normalize_path(path, &cg->path, err) < 0) {
		moat_cgroup_free(cg);
		return moat_error_prefix(err, "cgroup path");
	}
	if (strcmp(cg->path, path) != 0) {
		moat_cgroup_free(cg);
		return cg_fail(err, EINVAL, "cgroup path '%s' is not normalized", path);
	}
	if (scan_mounts(cg, err) < 0) {
		moat_cgroup_free(cg);
		return moat_error_ret(err);
	}
	for (i = 0; i < cg->n; i++)
		cg->h[i].dir = xasprintf("%s%s", cg->h[i].mnt, cg->path);
	*ret = cg;
	return 0;
}

struct pidset {
	pid_t *p;
	size_t n;
};

static int collect_pids(int fd, const char *dir, struct pidset *s, unsigned depth,
			moat_error *err);

/* A cgroup that was there already and holds processes belongs to someone else: joining it
 * would put the container beside them, and destroy would kill them. */
static int check_unoccupied(struct moat_cgroup *cg, moat_error *err)
{
	size_t i;

	for (i = 0; i < cg->n; i++) {
		struct cg_hier *h = &cg->h[i];
		struct pidset s = { NULL, 0 };
		pid_t first;

		if (h->made > 0 || h->fd < 0)
			continue;
		if (collect_pids(h->fd, h->dir, &s, 0, err) < 0)
			return moat_error_ret(err);
		first = s.n > 0 ? s.p[0] : 0;
		free(s.p);
		if (first != 0)
			return cg_fail(err, EBUSY,
				       "linux.cgroupsPath: cgroup '%s' exists already with processes "
				       "in it (%d in '%s'); moat does not share a cgroup with "
				       "processes it did not start", cg->path, (int)first, h->dir);
	}
	return 0;
}

int moat_cgroup_create(const char *path, const struct oci_resources *res,
		       struct moat_cgroup **ret, moat_error *err)
{
	struct moat_cgroup *cg = NULL;
	size_t i;

	if (cg_setup(path, &cg, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < cg->n; i++)
		if (hier_walk(cg, &cg->h[i], true, err) < 0)
			goto fail;
	if (check_unoccupied(cg, err) < 0 || apply(cg, res, true, err) < 0)
		goto fail;
	for (i = 0; i < cg->n; i++)
		cg->h[i].made = 0;
	*ret = cg;
	return 0;
fail:
	for (i = 0; i < cg->n; i++)
		hier_unmake(cg, &cg->h[i]);
	moat_cgroup_free(cg);
	return moat_error_ret(err);
}

int moat_cgroup_open(const char *path, struct moat_cgroup **ret, moat_error *err)
{
	struct moat_cgroup *cg = NULL;
	size_t i;

	if (cg_setup(path, &cg, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < cg->n; i++)
		if (hier_walk(cg, &cg->h[i], false, err) < 0) {
			moat_cgroup_free(cg);
			return moat_error_ret(err);
		}
	*ret = cg;
	return 0;
}

bool moat_cgroup_exists(const struct moat_cgroup *cg)
{
	size_t i;

	for (i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0)
			return true;
	return false;
}

static int no_cgroup(const struct moat_cgroup *cg, moat_error *err)
{
	return cg_fail(err, ENOENT, "cgroup '%s' does not exist", cg->path);
}

int moat_cgroup_add_pid(struct moat_cgroup *cg, pid_t pid, moat_error *err)
{
	char text[24];
	size_t i;

	if (!moat_cgroup_exists(cg))
		return no_cgroup(cg, err);
	snprintf(text, sizeof(text), "%d", (int)pid);
	for (i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0 &&
		    cg_write_at(cg->h[i].fd, cg->h[i].dir, "cgroup.procs", text, err) < 0)
			return moat_error_prefix(err, "add process %d to the cgroup", (int)pid);
	return 0;
}

int moat_cgroup_update(struct moat_cgroup *cg, const struct oci_resources *res, moat_error *err)
{
	if (!moat_cgroup_exists(cg))
		return no_cgroup(cg, err);
	return apply(cg, res, false, err);
}

const char *moat_cgroup_path(const struct moat_cgroup *cg)
{
	return cg->path;
}

enum moat_cgroup_layout moat_cgroup_layout(const struct moat_cgroup *cg)
{
	return cg->layout;
}

void moat_cgroup_free(struct moat_cgroup *cg)
{
	if (cg == NULL)
		return;
	while (cg->n > 0)
		hier_clear(&cg->h[--cg->n]);
	free(cg->h);
	free(cg->path);
	free(cg);
}

/* ---- processes ---------------------------------------------------------------------------- */

static void pidset_add_text(struct pidset *s, const char *text)
{
	const char *p = text;

	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0 && v <= INT_MAX) {
			s->p = xrealloc(s->p, (s->n + 1) * sizeof(*s->p));
			s->p[s->n++] = (pid_t)v;
		}
		p = end;
	}
}

static int collect_pids(int fd, const char *dir, struct pidset *s, unsigned depth,
			moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	char **subs = NULL;
	size_t nsubs = 0, i;
	int r = 0;

	if (depth > CG_MAX_DEPTH)
		return moat_error_msg(err, ELOOP, "'%s': nested deeper than %d", dir, CG_MAX_DEPTH);
	if (cg_read_at(fd, dir, "cgroup.procs", &text, err) < 0)
		return moat_error_ret(err);
	pidset_add_text(s, text);
	if (list_subdirs(fd, dir, &subs, &nsubs, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < nsubs && r == 0; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", dir, subs[i]);
		_cleanup_close_ int sfd = openat(fd, subs[i],
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (sfd < 0)
			r = errno == ENOENT ? 0 : moat_error_set(err, errno, "open '%s'", sub);
		else
			r = collect_pids(sfd, sub, s, depth + 1, err);
	}
	free_names(subs, nsubs);
	return r;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int moat_cgroup_pids(struct moat_cgroup *cg, pid_t **ret_pids, size_t *ret_n, moat_error *err)
{
	struct pidset s = { NULL, 0 };
	size_t i, n = 0;

	for (i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0 && collect_pids(cg->h[i].fd, cg->h[i].dir, &s, 0, err) < 0) {
			free(s.p);
			return moat_error_ret(err);
		}
	if (s.n > 0)
		qsort(s.p, s.n, sizeof(*s.p), cmp_pid);
	for (i = 0; i < s.n; i++)
		if (n == 0 || s.p[n - 1] != s.p[i])
			s.p[n++] = s.p[i];
	*ret_pids = s.p;
	*ret_n = n;
	return 0;
}

/* ---- freezing ----------------------------------------------------------------------------- */

static struct cg_hier *freezer_of(struct moat_cgroup *cg, bool *ret_v2)
{
	struct cg_hier *h = cg_hier_for(cg, CG_FREEZER, false);
	struct cg_hier *u = cg_unified(cg);

	if (h != NULL && h->fd >= 0) {
		*ret_v2 = false;
		return h;
	}
	if (u != NULL && cg_has_file(u, "cgroup.freeze")) {
		*ret_v2 = true;
		return u;
	}
	return NULL;
}

static int no_freezer(struct moat_cgroup *cg, moat_error *err)
{
	if (!moat_cgroup_exists(cg))
		return no_cgroup(cg, err);
	return cg_fail(err, EOPNOTSUPP, "cgroup '%s': no freezer on this host", cg->path);
}

int moat_cgroup_freeze(struct moat_cgroup *cg, bool frozen, moat_error *err)
{
	bool v2;
	struct cg_hier *h = freezer_of(cg, &v2);

	if (h == NULL)
		return no_freezer(cg, err);
	return v2 ? cg_v2_freeze(h, frozen, err) : cg_v1_freeze(h, frozen, err);
}

int moat_cgroup_is_frozen(struct moat_cgroup *cg, bool *ret, moat_error *err)
{
	bool v2;
	struct cg_hier *h = freezer_of(cg, &v2);

	if (h == NULL)
		return no_freezer(cg, err);
	return v2 ? cg_v2_is_frozen(h, ret, err) : cg_v1_is_frozen(h, ret, err);
}

/* ---- killing and removing ----------------------------------------------------------------- */

static bool pid_in(const pid_t *p, size_t n, pid_t pid)
{
	return n > 0 && bsearch(&pid, p, n, sizeof(*p), cmp_pid) != NULL;
}

/* Signal each process once. Frozen, one pass finds them all; otherwise rescan for processes
 * forked in the meantime, a bounded number of times. */
static int signal_each(struct moat_cgroup *cg, int sig, bool frozen, moat_error *err)
{
	_cleanup_free_ pid_t *done = NULL;
	size_t ndone = 0, round, i;

	for (round = 0; round < KILL_ROUNDS; round++) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0, before = ndone;

		if (moat_cgroup_pids(cg, &pids, &n, err) < 0)
			return moat_error_ret(err);
		for (i = 0; i < n; i++) {
			if (pids[i] == getpid() || pid_in(done, before, pids[i]))
				continue;
			if (kill(pids[i], sig) < 0 && errno != ESRCH)
				return moat_error_set(err, errno, "signal %d to process %d", sig,
						      (int)pids[i]);
			done = xrealloc(done, (ndone + 1) * sizeof(*done));
			done[ndone++] = pids[i];
		}
		if (frozen || ndone == before)
			break;
		qsort(done, ndone, sizeof(*done), cmp_pid);
	}
	return 0;
}

int moat_cgroup_kill_all(struct moat_cgroup *cg, int sig, moat_error *err)
{
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	struct cg_hier *u = cg_unified(cg);
	bool v2 = false, was_frozen = false, froze = false, killed = false;
	int r;

	if (!moat_cgroup_exists(cg))
		return 0;
	if (sig == SIGKILL && u != NULL && u->fd >= 0) {
		if (cg_v2_kill(u, &killed, err) < 0)
			return moat_error_ret(err);
		if (killed && cg->layout == MOAT_CGROUP_V2)
			return 0;
	}
	/* Frozen, nothing forks while the list is walked. After cgroup.kill (hybrid) the
	 * processes are dying already: only stragglers outside the unified cgroup remain. */
	if (freezer_of(cg, &v2) != NULL && moat_cgroup_is_frozen(cg, &was_frozen, &ignored) == 0 &&
	    !was_frozen && !killed)
		froze = moat_cgroup_freeze(cg, true, &ignored) == 0;
	r = signal_each(cg, sig, was_frozen || froze, err);
	/* a v1-frozen task dies of SIGKILL only once thawed */
	if ((froze || (was_frozen && sig == SIGKILL)) &&
	    moat_cgroup_freeze(cg, false, &ignored) < 0 && r == 0) {
		moat_error_set(err, 0, "%s", ignored.msg ? ignored.msg : "thaw failed");
		r = moat_error_prefix(err, "kill: thaw after signalling");
	}
	return r;
}

static int wait_empty(struct moat_cgroup *cg, moat_error *err)
{
	unsigned waited = 0, step = 5, next_kill = 500;

	for (;;) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0;

		if (moat_cgroup_pids(cg, &pids, &n, err) < 0)
			return moat_error_ret(err);
		if (n == 0)
			return 0;
		if (waited >= CG_EMPTY_TIMEOUT_MS)
			return cg_fail(err, EBUSY,
				       "cgroup '%s' still has %zu process(es), the first %d, %u ms "
				       "after SIGKILL", cg->path, n, (int)pids[0], waited);
		if (waited >= next_kill) {
			next_kill += 500;
			if (moat_cgroup_kill_all(cg, SIGKILL, err) < 0)
				return moat_error_ret(err);
		}
		cg_sleep_ms(step);
		waited += step;
		if (step < 50)
			step *= 2;
	}
}

int moat_cgroup_destroy(struct moat_cgroup *cg, moat_error *err)
{
	size_t i;

	if (!moat_cgroup_exists(cg))
		return 0;
	if (moat_cgroup_kill_all(cg, SIGKILL, err) < 0 || wait_empty(cg, err) < 0)
		return moat_error_prefix(err, "destroy cgroup '%s'", cg->path);
	for (i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0 && hier_remove(cg, &cg->h[i], err) < 0)
			return moat_error_prefix(err, "destroy cgroup '%s'", cg->path);
	return 0;
}
