/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what a command changed, read from the sandbox's upper layer.
 *
 * The upper layer holds exactly what was written over the base: a file or symlink is added
 * (nothing at its path in the base) or modified (a copy-up of the base's); a whiteout (a
 * character device 0:0) is a deletion; a directory is reported when it is new, or opaque
 * (trusted.overlay.opaque: what the base had under it is gone). A directory of the base that
 * is only there to hold a change below it is not a change. What moat put in the layer before
 * the command (the workdir, the files copied in) is the baseline: an entry still as it was
 * then is not reported. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "sandbox-internal.h"
#include "sha256.h"
#include "utils.h"

struct sb_entry {
	char *path; /* relative to the upper layer's root */
	struct stat st;
};

struct sb_baseline {
	struct sb_entry *e;
	size_t n, cap;
};

typedef int (*walk_fn)(void *data, int dirfd, const char *name, const char *path,
		       const struct stat *st, moat_error *err);

/* Every entry under dirfd, depth first, parents before children. */
static int walk(int dir, const char *prefix, walk_fn fn, void *data, unsigned depth,
		moat_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int fd;

	if (depth > 256)
		return moat_error_msg(err, ELOOP, "sandbox diff: '%s': nested too deep", prefix);
	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return moat_error_set(err, errno, "sandbox diff: read '%s'", prefix);
	}
	while ((e = readdir(d)) != NULL) {
		_cleanup_free_ char *path = NULL;
		struct stat st;
		int r;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		path = xasprintf("%s/%s", prefix, e->d_name);
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return moat_error_set(err, errno, "sandbox diff: stat '%s'", path);
		r = fn(data, dirfd(d), e->d_name, path, &st, err);
		if (r < 0)
			return r;
		if (r == 0 && S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
				dirfd(d), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0)
				return moat_error_set(err, errno, "sandbox diff: open '%s'", path);
			if (walk(sub, path, fn, data, depth + 1, err) < 0)
				return -1;
		}
	}
	return 0;
}

static int record(void *data, int dirfd, const char *name, const char *path, const struct stat *st,
		  moat_error *err)
{
	struct sb_baseline *b = data;

	(void)dirfd, (void)name, (void)err;
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->e = xrealloc(b->e, b->cap * sizeof(*b->e));
	}
	b->e[b->n].path = xstrdup(path);
	b->e[b->n++].st = *st;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sb_entry *)a)->path, ((const struct sb_entry *)b)->path);
}

int sb_baseline_take(const struct sb_layer *l, struct sb_baseline **ret, moat_error *err)
{
	_cleanup_(sb_baseline_freep) struct sb_baseline *b = xcalloc(1, sizeof(*b));

	if (walk(l->upper_fd, "", record, b, 0, err) < 0)
		return moat_error_ret(err);
	qsort(b->e, b->n, sizeof(*b->e), entry_cmp);
	*ret = TAKE_PTR(b);
	return 0;
}

void sb_baseline_free(struct sb_baseline *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->e[i].path);
	free(b->e);
	free(b);
}

static bool in_baseline(const struct sb_baseline *b, const char *path)
{
	struct sb_entry key = { .path = (char *)path };

	return bsearch(&key, b->e, b->n, sizeof(*b->e), entry_cmp) != NULL;
}

/* An entry as it was in the baseline; a directory that was there counts as unchanged
 * whatever came into it (its entries are compared one by one). */
static bool unchanged(const struct sb_baseline *b, const char *path, const struct stat *st)
{
	struct sb_entry key = { .path = (char *)path };
	const struct sb_entry *e = bsearch(&key, b->e, b->n, sizeof(*b->e), entry_cmp);

	if (e != NULL && S_ISDIR(e->st.st_mode) && S_ISDIR(st->st_mode) &&
	    e->st.st_ino == st->st_ino)
		return true;
	return e != NULL && e->st.st_ino == st->st_ino && e->st.st_mode == st->st_mode &&
	       e->st.st_size == st->st_size && e->st.st_mtim.tv_sec == st->st_mtim.tv_sec &&
	       e->st.st_mtim.tv_nsec == st->st_mtim.tv_nsec &&
	       e->st.st_ctim.tv_sec == st->st_ctim.tv_sec &&
	       e->st.st_ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static char type_of(mode_t m)
{
	return S_ISREG(m) ? 'f' : S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : 'o';
}

/* What the base has at path (inside the base, symlinks never leaving it): its mode, or 0. */
static mode_t in_base(int base_fd, const char *path)
{
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, base_fd, path, &how, sizeof(how));
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	return st.st_mode;
}

struct differ {
	const struct sb_layer *l;
	const struct sb_baseline *b;
	struct moat_sandbox_result *r;
	size_t cap;
};

static void describe(struct moat_sandbox_file *f, int dirfd, const char *name,
		     const struct stat *st)
{
	f->type = type_of(st->st_mode);
	f->mode = st->st_mode & 07777;
	if (S_ISREG(st->st_mode)) {
		_cleanup_close_ int fd = -1;

		f->size = (uint64_t)st->st_size;
		if (f->size <= MOAT_SANDBOX_SHA256_MAX)
			fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && moat_sha256_fd(fd, MOAT_SANDBOX_SHA256_MAX, f->sha256) < 0)
			f->sha256[0] = '\0';
	} else if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

		if (n >= 0)
			f->target = xstrndup(target, (size_t)n);
	}
}

static bool opaque(int dirfd, const char *name)
{
	_cleanup_free_ char *p = xasprintf("/proc/self/fd/%d/%s", dirfd, name);
	char v[2];

	return lgetxattr(p, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

/* One upper entry: 0 to descend into it, 1 not to. */
static int compare(void *data, int dirfd, const char *name, const char *path, const struct stat *st,
		   moat_error *err)
{
	struct differ *d = data;
	struct moat_sandbox_result *r = d->r;
	struct moat_sandbox_file f = { 0 };
	mode_t base = in_base(d->l->base_fd, path);
	bool whiteout = S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);

	(void)err;
	if (unchanged(d->b, path, st))
		return 0;
	if (S_ISDIR(st->st_mode) && S_ISDIR(base) && !opaque(dirfd, name))
		return 0;
	if (whiteout && base == 0)
		return 1; /* a whiteout of something the base never had: nothing to report */
	if (r->n_files == MOAT_SANDBOX_FILES_MAX) {
		r->files_truncated = true;
		return 1;
	}
	f.path = xstrdup(path);
	if (whiteout) {
		f.change = MOAT_FILE_DELETED;
		f.type = type_of(base);
	} else {
		f.change =
			base != 0 || in_baseline(d->b, path) ? MOAT_FILE_MODIFIED : MOAT_FILE_ADDED;
		describe(&f, dirfd, name, st);
	}
	if (r->n_files == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 16;
		r->files = xrealloc(r->files, d->cap * sizeof(*r->files));
	}
	r->files[r->n_files++] = f;
	return 0;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct moat_sandbox_file *)a)->path,
		      ((const struct moat_sandbox_file *)b)->path);
}

int sb_diff(const struct sb_layer *l, const struct sb_baseline *b, struct moat_sandbox_result *r,
	    moat_error *err)
{
	struct differ d = { .l = l, .b = b, .r = r };

	if (walk(l->upper_fd, "", compare, &d, 0, err) < 0)
		return moat_error_ret(err);
	qsort(r->files, r->n_files, sizeof(*r->files), file_cmp);
	return 0;
}
