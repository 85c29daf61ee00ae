/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container's cgroup. Answers "how is the container's cgroup made, entered, frozen,
 * killed and removed?": the hierarchy walk and the lifecycle (create, open, processes, freeze,
 * kill, destroy). Which hierarchies the host has is cgroup-layout.c's, what a cgroupsPath names
 * cgroup-path.c's; what linux.resources writes is cgroup-resources.c's; what differs between
 * v1 and v2 lives in cgroup-v1.c and cgroup-v2.c. */
#include "cgroup-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mountinfo.h"
#include "strv.h"
#include "utils.h"

#define KILL_ROUNDS 10 /* unfrozen kill: rescans for processes forked meanwhile */

/* ---- small I/O helpers ------------------------------------------------------------------- */

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
int cg_write_fd(int fd, const char *dir, const char *file, const char *value, moat_error *err)
{
	size_t len = strlen(value);
	ssize_t n;

	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return moat_error_set(err, errno, "write '%.200s' to '%s/%s'", value, dir, file);
	if ((size_t)n != len)
		return moat_error_msg(err, EIO, "write '%.200s' to '%s/%s': short write", value,
				      dir, file);
	if (cg_hooks != NULL && cg_hooks->wrote != NULL) {
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);

		cg_hooks->wrote(path, value, cg_hooks->data);
	}
	return 0;
}

int cg_write_at(int dirfd, const char *dir, const char *file, const char *value, moat_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s/%s'", dir, file);
	return cg_write_fd(fd, dir, file, value, err);
}

bool cg_has_file(const struct cg_hier *h, const char *file)
{
	struct stat st;

	return h->fd >= 0 && fstatat(h->fd, file, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Names of the sub-directories of fd (the sub-cgroups). */
int cg_list_subdirs(int fd, const char *dir, char ***ret, size_t *ret_n, moat_error *err)
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
		strv_push(&names, &n, de->d_name);
	}
	closedir(d);
	*ret = names;
	*ret_n = n;
	return 0;
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

/* The existing cgroup under the hierarchy root open as root, in one call: 1 and h->fd set, 0
 * when it is missing, -errno when openat2 is not there (Linux before 5.6) or fails otherwise,
 * and the caller walks it a level at a time. A cgroupfs has no symbolic links below its root,
 * and the walk refuses to follow one, as the level-by-level walk does (O_NOFOLLOW). */
static int hier_open_existing(const struct moat_cgroup *cg, struct cg_hier *h, int root)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve =
					RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV };
	int fd = (int)syscall(SYS_openat2, root, cg->path + 1, &how, sizeof(how));

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	h->fd = fd;
	return 1;
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
	if (!make && levels > 0 && hier_open_existing(cg, h, fd) >= 0)
		return 0;
	for (i = 0; i < levels; i++) {
		_cleanup_free_ char *name = cg_path_component(cg->path, i);
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
	_cleanup_close_ int fd =
		openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **subs = NULL;
	size_t nsubs = 0, i;
	unsigned waited = 0;
	int r = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : moat_error_set(err, errno, "open '%s'", dir);
	if (depth > CG_MAX_DEPTH)
		return moat_error_msg(err, ELOOP, "remove '%s': nested deeper than %d", dir,
				      CG_MAX_DEPTH);
	if (cg_list_subdirs(fd, dir, &subs, &nsubs, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < nsubs && r == 0; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", dir, subs[i]);

		r = remove_cgroup(fd, subs[i], sub, depth + 1, err);
	}
	strv_free_n(subs, nsubs);
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
	name = cg_path_component(cg->path, first);
	dir = xasprintf("%s/%s", pdir, name);
	remove_cgroup(pfd, name, dir, 0, &ignored);
	h->made = 0;
}

static int hier_remove(struct moat_cgroup *cg, struct cg_hier *h, moat_error *err)
{
	size_t levels = cg_path_levels(cg->path);
	_cleanup_free_ char *name = cg_path_component(cg->path, levels - 1), *pdir = NULL;
	_cleanup_close_ int pfd = -1;

	pfd = cg_open_level(h, cg->path, levels - 1, &pdir, err);
	if (pfd == -ENOENT)
		moat_error_drop(err);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	if (remove_cgroup(pfd, name, h->dir, 0, err) < 0)
		return moat_error_ret(err);
	close(h->fd);
	h->fd = -1;
	return 0;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static int cg_setup(const char *path, struct moat_cgroup **ret, moat_error *err)
{
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = xcalloc(1, sizeof(*cg));
	size_t i;

	if (path == NULL)
		return moat_error_msg(err, EINVAL, "no cgroup path");
	if (cg_normalize_path(path, &cg->path, err) < 0)
		return moat_error_prefix(err, "cgroup path");
	if (strcmp(cg->path, path) != 0)
		return moat_error_msg(err, EINVAL, "cgroup path '%s' is not normalized", path);
	if (cg_scan_mounts(cg, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < cg->n; i++)
		cg->h[i].dir = xasprintf("%s%s", cg->h[i].mnt, cg->path);
	*ret = TAKE_PTR(cg);
	return 0;
}

struct pidset {
	pid_t *p;
	size_t n;
};

static int collect_pids(int fd, const char *dir, struct pidset *s, unsigned depth, moat_error *err);

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
			return moat_error_msg(
				err, EBUSY,
				"linux.cgroupsPath: cgroup '%s' exists already with processes "
				"in it (%d in '%s'); moat does not share a cgroup with "
				"processes it did not start",
				cg->path, (int)first, h->dir);
	}
	return 0;
}

int moat_cgroup_create(const char *path, const struct oci_resources *res,
		       struct oci_device *const *devices, size_t n, struct moat_cgroup **ret,
		       moat_error *err)
{
	const struct cg_listed listed = { devices, n };
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	struct moat_cgroup *cg = NULL;
	size_t i;

	if (cg_setup(path, &cg, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < cg->n; i++)
		if (hier_walk(cg, &cg->h[i], true, err) < 0)
			goto fail;
	if (check_unoccupied(cg, err) < 0 || cg_resources_apply(cg, res, &listed, true, err) < 0)
		goto fail;
	for (i = 0; i < cg->n; i++)
		cg->h[i].made = 0;
	*ret = cg;
	return 0;
fail:
	if (cg->rt_raised)
		cg_rt_drop(cg);
	for (i = 0; i < cg->n; i++)
		hier_unmake(cg, &cg->h[i]);
	if (cg->rt_raised)
		cg_rt_release(cg, &ignored);
	moat_cgroup_free(cg);
	return moat_error_ret(err);
}

int moat_cgroup_adopt(const char *path, const struct oci_resources *res,
		      struct oci_device *const *devices, size_t n, struct moat_cgroup **ret,
		      moat_error *err)
{
	const struct cg_listed listed = { devices, n };
	struct moat_cgroup *cg = NULL;

	if (moat_cgroup_open(path, &cg, err) < 0)
		return moat_error_ret(err);
	if (!moat_cgroup_exists(cg)) {
		moat_cgroup_free(cg);
		return moat_error_msg(err, ENOENT, "cgroup '%s' does not exist", path);
	}
	cg->delegated = true;
	if (cg_resources_apply(cg, res, &listed, true, err) < 0) {
		moat_cgroup_free(cg);
		return moat_error_ret(err);
	}
	*ret = cg;
	return 0;
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

int moat_cgroup_open_freezer(const char *path, struct moat_cgroup **ret, moat_error *err)
{
	struct moat_cgroup *cg = NULL;
	struct cg_hier *h, *u;

	if (cg_setup(path, &cg, err) < 0)
		return moat_error_ret(err);
	h = cg_hier_for(cg, CG_FREEZER, false);
	u = cg_unified(cg);
	if ((h != NULL && hier_walk(cg, h, false, err) < 0) ||
	    ((h == NULL || h->fd < 0) && u != NULL && hier_walk(cg, u, false, err) < 0)) {
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
	return moat_error_msg(err, ENOENT, "cgroup '%s' does not exist", cg->path);
}

/* pid into the cgroup of every hierarchy, or only of the v2 one. */
static int add_pid(struct moat_cgroup *cg, pid_t pid, bool v2_only, moat_error *err)
{
	char text[24];
	size_t i;

	if (!moat_cgroup_exists(cg))
		return no_cgroup(cg, err);
	snprintf(text, sizeof(text), "%d", (int)pid);
	for (i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0 && (cg->h[i].v2 || !v2_only) &&
		    cg_write_at(cg->h[i].fd, cg->h[i].dir, "cgroup.procs", text, err) < 0)
			return moat_error_prefix(err, "add process %d to the cgroup", (int)pid);
	return 0;
}

int moat_cgroup_add_pid(struct moat_cgroup *cg, pid_t pid, moat_error *err)
{
	return add_pid(cg, pid, false, err);
}

int moat_cgroup_add_pid_v2(struct moat_cgroup *cg, pid_t pid, moat_error *err)
{
	return add_pid(cg, pid, true, err);
}

int moat_cgroup_v2_fd(const struct moat_cgroup *cg)
{
	for (size_t i = 0; i < cg->n; i++)
		if (cg->h[i].v2)
			return cg->h[i].fd;
	return -1;
}

int moat_cgroup_open_tasks(struct moat_cgroup *cg, moat_error *err)
{
	for (size_t i = 0; i < cg->n; i++) {
		struct cg_hier *h = &cg->h[i];

		if (h->fd < 0 || h->v2 || h->tasks_fd >= 0)
			continue;
		h->tasks_fd = openat(h->fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (h->tasks_fd < 0)
			return moat_error_set(err, errno, "join the cgroup: open '%s/tasks'",
					      h->dir);
	}
	return 0;
}

void moat_cgroup_close_tasks(struct moat_cgroup *cg)
{
	for (size_t i = 0; i < cg->n; i++)
		if (cg->h[i].tasks_fd >= 0) {
			close(cg->h[i].tasks_fd);
			cg->h[i].tasks_fd = -1;
		}
}

void moat_cgroup_close_fds(struct moat_cgroup *cg)
{
	moat_cgroup_close_tasks(cg);
	for (size_t i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0) {
			close(cg->h[i].fd);
			cg->h[i].fd = -1;
		}
}

int moat_cgroup_join_v1(const struct moat_cgroup *cg, moat_error *err)
{
	for (size_t i = 0; i < cg->n; i++)
		if (cg->h[i].tasks_fd >= 0 &&
		    cg_write_fd(cg->h[i].tasks_fd, cg->h[i].dir, "tasks", "0", err) < 0)
			return moat_error_prefix(err, "join the cgroup");
	return 0;
}

int moat_cgroup_update(struct moat_cgroup *cg, const struct oci_resources *res,
		       struct oci_device *const *devices, size_t n, moat_error *err)
{
	const struct cg_listed listed = { devices, n };

	if (!moat_cgroup_exists(cg))
		return no_cgroup(cg, err);
	return cg_resources_apply(cg, res, &listed, false, err);
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
		cg_hier_clear(&cg->h[--cg->n]);
	free(cg->h);
	free(cg->path);
	oci_string_map_free(cg->applied);
	oci_string_map_free(cg->ignored);
	free(cg);
}

const struct oci_string_map *moat_cgroup_applied(const struct moat_cgroup *cg)
{
	return cg->applied;
}

const struct oci_string_map *moat_cgroup_ignored(const struct moat_cgroup *cg)
{
	return cg->ignored;
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

static int collect_pids(int fd, const char *dir, struct pidset *s, unsigned depth, moat_error *err)
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
	if (cg_list_subdirs(fd, dir, &subs, &nsubs, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < nsubs && r == 0; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", dir, subs[i]);
		_cleanup_close_ int sfd =
			openat(fd, subs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (sfd < 0)
			r = errno == ENOENT ? 0 : moat_error_set(err, errno, "open '%s'", sub);
		else
			r = collect_pids(sfd, sub, s, depth + 1, err);
	}
	strv_free_n(subs, nsubs);
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
	return moat_error_msg(err, EOPNOTSUPP, "cgroup '%s': no freezer on this host", cg->path);
}

int cg_freeze(struct cg_hier *h, const struct cg_freezer *f, bool frozen, moat_error *err)
{
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	unsigned waited = 0, step = 1;
	bool asked = false, done = false;

	for (;;) {
		if ((!asked || f->ask_again) &&
		    cg_write_at(h->fd, h->dir, f->file, f->value[frozen], err) < 0)
			return moat_error_ret(err);
		asked = true;
		if (f->settled(h, frozen, &done, err) < 0)
			return moat_error_ret(err);
		if (done)
			return 0;
		if (waited >= CG_FREEZE_TIMEOUT_MS)
			break;
		cg_sleep_ms(step);
		waited += step;
		if (step < 100)
			step *= 2;
	}
	if (frozen)
		cg_write_at(h->fd, h->dir, f->file, f->value[false], &ignored);
	return moat_error_msg(err, ETIMEDOUT, "cgroup '%s': %s after %u ms", h->dir,
			      f->not_settled[frozen], waited);
}

int moat_cgroup_freeze(struct moat_cgroup *cg, bool frozen, moat_error *err)
{
	bool v2;
	struct cg_hier *h = freezer_of(cg, &v2);

	if (h == NULL)
		return no_freezer(cg, err);
	return cg_freeze(h, v2 ? &cg_v2_freezer : &cg_v1_freezer, frozen, err);
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
		moat_error_msg(err, EINVAL, "%s", ignored.msg ? ignored.msg : "thaw failed");
		r = moat_error_prefix(err, "kill: thaw after signalling");
	}
	return r;
}

/* 1 when no process is in the cgroup in any hierarchy, 0 when one is, -errno when that
 * cannot be read. */
static int cg_is_empty(struct moat_cgroup *cg)
{
	_cleanup_error_ moat_error ignored = MOAT_ERROR_INIT;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	int r = moat_cgroup_pids(cg, &pids, &n, &ignored);

	return r < 0 ? r : n == 0;
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
			return moat_error_msg(
				err, EBUSY,
				"cgroup '%s' still has %zu process(es), the first %d, %u ms "
				"after SIGKILL",
				cg->path, n, (int)pids[0], waited);
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

/* /moat's real-time budget back down to what its children still hold: a failure is only a
 * warning, since the container is gone either way. */
static void give_back_budget(struct moat_cgroup *cg, moat_error *err)
{
	_cleanup_error_ moat_error why = MOAT_ERROR_INIT;

	if (cg_rt_release(cg, &why) < 0)
		moat_error_warn(err, "destroy cgroup '%s': %s", cg->path, why.msg);
}

int moat_cgroup_destroy(struct moat_cgroup *cg, moat_error *err)
{
	bool budget;
	size_t i;

	if (!moat_cgroup_exists(cg))
		return 0;
	/* Most often the cgroup is empty already (the init of a container with a pid namespace
	 * of its own has exited, and the kernel killed the rest with it), and then no freezing
	 * or signalling is needed: nothing left in it can fork. */
	if (cg_is_empty(cg) != 1 &&
	    (moat_cgroup_kill_all(cg, SIGKILL, err) < 0 || wait_empty(cg, err) < 0))
		return moat_error_prefix(err, "destroy cgroup '%s'", cg->path);
	budget = cg_rt_parent_has_budget(cg);
	if (budget)
		cg_rt_drop(cg);
	for (i = 0; i < cg->n; i++)
		if (cg->h[i].fd >= 0 && hier_remove(cg, &cg->h[i], err) < 0)
			return moat_error_prefix(err, "destroy cgroup '%s'", cg->path);
	if (budget)
		give_back_budget(cg, err);
	return 0;
}
