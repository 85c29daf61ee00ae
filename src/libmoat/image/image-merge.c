/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One unpacked layer (its diff/ directory) applied onto a root, as overlayfs would stack it,
 * walking both trees by fd with O_NOFOLLOW:
 *   - in each directory, an opaque marker (".wh..wh..opq") first empties the root's
 *     directory of what the layers below put there, then each ".wh.<name>" removes <name>,
 *     then the layer's other entries are applied (a whiteout and an entry of the same name
 *     in one layer: the entry stays);
 *   - a file, symlink or FIFO replaces whatever the root has at its name, and is a hard link
 *     to the layer's (a copy when a link cannot be made: another filesystem, too many links);
 *   - a directory merges with the root's directory, and replaces anything else, except that
 *     a directory the layer never named (made for its entries' parents, listed in the
 *     layer's implicit-dirs) does not replace a symlink or a file: its entries would have
 *     gone through that symlink, and are refused. It takes the layer's mode, owner and time
 *     when the layer named it, and keeps the root's otherwise.
 * Other ".wh..wh." names are reserved (AUFS's) and skipped. */
#include "image-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "strv.h"

#define WHITEOUT ".wh."
#define WHITEOUT_META ".wh..wh."
#define OPAQUE ".wh..wh..opq"

struct merge {
	const char *what;
	char **implicit;
	size_t n_implicit;
	size_t *owners_lost;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_implicit(const struct merge *m, const char *path)
{
	return m->n_implicit > 0 &&
	       bsearch(&path, m->implicit, m->n_implicit, sizeof(char *), cmp_str) != NULL;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static char *join(const char *rel, const char *name)
{
	return *rel == '\0' ? xstrdup(name) : xasprintf("%s/%s", rel, name);
}

/* The names in dirfd, sorted, NULL-terminated. */
static int list_names(int dirfd, char ***ret, size_t *ret_n, moat_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "open");
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return moat_error_set(err, errno, "read");
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strv_push(&names, &n, de->d_name);
	if (n > 0)
		qsort(names, n, sizeof(char *), cmp_str);
	*ret = names;
	*ret_n = n;
	return 0;
}

static int clear_dir(struct merge *m, int rdir, const char *rel, moat_error *err)
{
	_cleanup_(strv_freep) char **names = NULL;
	size_t n = 0;

	if (list_names(rdir, &names, &n, err) < 0)
		return moat_error_prefix(err, "%s: opaque '%s'", m->what, rel);
	for (size_t i = 0; i < n; i++)
		if (remove_tree_at(rdir, names[i], err) < 0)
			return moat_error_prefix(err, "%s: opaque '%s'", m->what, rel);
	return 0;
}

static int whiteout(struct merge *m, int rdir, const char *rel, const char *name, moat_error *err)
{
	const char *target = name + strlen(WHITEOUT);
	_cleanup_free_ char *path = join(rel, name);

	if (*target == '\0' || strcmp(target, ".") == 0 || strcmp(target, "..") == 0)
		return moat_error_msg(err, EINVAL, "%s: entry '%s': a whiteout of no name", m->what,
				      path);
	if (remove_tree_at(rdir, target, err) < 0)
		return moat_error_prefix(err, "%s: entry '%s'", m->what, path);
	return 0;
}

static void set_owner(struct merge *m, int fd, const char *name, const struct stat *st)
{
	int r = name != NULL ? fchownat(fd, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW)
			     : fchown(fd, st->st_uid, st->st_gid);
	if (r < 0)
		(*m->owners_lost)++;
}

static int copy_bytes(int src, int dst)
{
	uint8_t buf[64 * 1024];

	for (;;) {
		ssize_t n = copy_file_range(src, NULL, dst, NULL, SSIZE_MAX, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		if (write_all(dst, buf, (size_t)n) < 0)
			return -errno;
	}
}

static int copy_file(struct merge *m, int ldir, int rdir, const char *name, const struct stat *st)
{
	_cleanup_close_ int src = openat(ldir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int dst = -1;

	if (src < 0)
		return -errno;
	dst = openat(rdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return -errno;
	int r = copy_bytes(src, dst);
	if (r < 0)
		return r;
	set_owner(m, dst, NULL, st);
	if (fchmod(dst, st->st_mode & 07777) < 0)
		return -errno;
	futimens(dst, (struct timespec[2]){ st->st_atim, st->st_mtim });
	return 0;
}

/* A copy of ldir/name where a hard link cannot be made. */
static int copy_entry(struct merge *m, int ldir, int rdir, const char *name, const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n;

	if (S_ISREG(st->st_mode))
		return copy_file(m, ldir, rdir, name, st);
	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(ldir, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, rdir, name) < 0)
			return -errno;
	} else if (S_ISFIFO(st->st_mode)) {
		if (mknodat(rdir, name, S_IFIFO | 0600, 0) < 0)
			return -errno;
		set_owner(m, rdir, name, st);
		if (fchmodat(rdir, name, st->st_mode & 07777, 0) < 0)
			return -errno;
	} else {
		return -EOPNOTSUPP;
	}
	if (S_ISLNK(st->st_mode))
		set_owner(m, rdir, name, st);
	utimensat(rdir, name, (struct timespec[2]){ st->st_atim, st->st_mtim },
		  AT_SYMLINK_NOFOLLOW);
	return 0;
}

static int apply_dir(struct merge *m, int rfd, int lfd, const char *rel, size_t depth,
		     const struct stat *meta, moat_error *err);

/* The layer's directory at rel (its name under ldir) merged into rdir's. meta: the
 * metadata the directory gets afterwards, NULL to keep the root's. */
static int merge_subdir(struct merge *m, int rdir, int ldir, const char *name, const char *rel,
			size_t depth, const struct stat *meta, moat_error *err)
{
	_cleanup_close_ int rfd = -1, lfd = -1;

	if (depth >= IMAGE_MAX_DEPTH)
		return moat_error_msg(err, ELOOP, "%s: entry '%s': nested deeper than %d", m->what,
				      rel, IMAGE_MAX_DEPTH);
	rfd = openat(rdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return moat_error_set(err, errno, "%s: entry '%s': open in the root", m->what, rel);
	lfd = openat(ldir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0)
		return moat_error_set(err, errno, "%s: entry '%s': open", m->what, rel);
	return apply_dir(m, rfd, lfd, rel, depth + 1, meta, err);
}

/* Entries under a directory the layer never named, where a lower layer has a symlink or a
 * file: name the first of them. */
static int refuse_implicit(struct merge *m, int ldir, const char *name, const char *rel,
			   const struct stat *rs, moat_error *err)
{
	_cleanup_(strv_freep) char **names = NULL;
	_cleanup_close_ int lfd =
		openat(ldir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t n = 0;
	moat_error ignored = MOAT_ERROR_INIT;

	if (lfd >= 0)
		list_names(lfd, &names, &n, &ignored);
	moat_error_clear(&ignored);
	_cleanup_free_ char *entry = n > 0 ? join(rel, names[0]) : xstrdup(rel);
	if (S_ISLNK(rs->st_mode))
		return moat_error_msg(
			err, ELOOP,
			"%s: entry '%s': passes through the symlink '%s' of a lower layer", m->what,
			entry, rel);
	return moat_error_msg(err, ENOTDIR,
			      "%s: entry '%s': '%s' is not a directory in the layers below",
			      m->what, entry, rel);
}

static int merge_entry(struct merge *m, int rdir, int ldir, const char *name, const char *rel,
		       size_t depth, moat_error *err)
{
	_cleanup_free_ char *path = join(rel, name);
	struct stat ls, rs;
	bool in_root;

	if (fstatat(ldir, name, &ls, AT_SYMLINK_NOFOLLOW) < 0)
		return moat_error_set(err, errno, "%s: entry '%s'", m->what, path);
	in_root = fstatat(rdir, name, &rs, AT_SYMLINK_NOFOLLOW) == 0;
	if (!in_root && errno != ENOENT)
		return moat_error_set(err, errno, "%s: entry '%s': in the root", m->what, path);
	if (S_ISDIR(ls.st_mode)) {
		bool implicit = is_implicit(m, path);
		if (in_root && !S_ISDIR(rs.st_mode)) {
			if (implicit)
				return refuse_implicit(m, ldir, name, path, &rs, err);
			if (remove_tree_at(rdir, name, err) < 0)
				return moat_error_prefix(err, "%s: entry '%s'", m->what, path);
			in_root = false;
		}
		if (!in_root && mkdirat(rdir, name, 0700) < 0)
			return moat_error_set(err, errno, "%s: entry '%s': mkdir", m->what, path);
		return merge_subdir(m, rdir, ldir, name, path, depth,
				    in_root && implicit ? NULL : &ls, err);
	}
	if (in_root && remove_tree_at(rdir, name, err) < 0)
		return moat_error_prefix(err, "%s: entry '%s'", m->what, path);
	if (linkat(ldir, name, rdir, name, 0) == 0)
		return 0;
	if (errno != EXDEV && errno != EMLINK && errno != EPERM)
		return moat_error_set(err, errno, "%s: entry '%s': link", m->what, path);
	int r = copy_entry(m, ldir, rdir, name, &ls);
	if (r < 0)
		return moat_error_set(err, -r, "%s: entry '%s': copy", m->what, path);
	return 0;
}

static int merge_dir(struct merge *m, int rdir, int ldir, const char *rel, size_t depth,
		     moat_error *err)
{
	_cleanup_(strv_freep) char **names = NULL;
	size_t n = 0;
	bool opaque = false;

	if (list_names(ldir, &names, &n, err) < 0)
		return moat_error_prefix(err, "%s: '%s'", m->what, *rel ? rel : ".");
	for (size_t i = 0; i < n; i++)
		opaque = opaque || strcmp(names[i], OPAQUE) == 0;
	if (opaque && clear_dir(m, rdir, rel, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < n; i++)
		if (has_prefix(names[i], WHITEOUT) && !has_prefix(names[i], WHITEOUT_META) &&
		    whiteout(m, rdir, rel, names[i], err) < 0)
			return moat_error_ret(err);
	for (size_t i = 0; i < n; i++)
		if (!has_prefix(names[i], WHITEOUT) &&
		    merge_entry(m, rdir, ldir, names[i], rel, depth, err) < 0)
			return moat_error_ret(err);
	return 0;
}

static int apply_dir(struct merge *m, int rfd, int lfd, const char *rel, size_t depth,
		     const struct stat *meta, moat_error *err)
{
	struct stat orig;

	if (fstat(rfd, &orig) < 0)
		return moat_error_set(err, errno, "%s: entry '%s': stat", m->what, rel);
	/* writable while the entries go in, whoever we are */
	if ((orig.st_mode & 0700) != 0700 && fchmod(rfd, (orig.st_mode & 07777) | 0700) < 0)
		return moat_error_set(err, errno, "%s: entry '%s': chmod", m->what, rel);
	if (merge_dir(m, rfd, lfd, rel, depth, err) < 0)
		return moat_error_ret(err);
	const struct stat *final = meta != NULL ? meta : &orig;
	if (meta != NULL)
		set_owner(m, rfd, NULL, meta);
	if (fchmod(rfd, final->st_mode & 07777) < 0)
		return moat_error_set(err, errno, "%s: entry '%s': chmod", m->what, rel);
	futimens(rfd, (struct timespec[2]){ final->st_atim, final->st_mtim });
	return 0;
}

int image_merge_layer(int rootfd, int layerfd, const char *what, char **implicit, size_t n_implicit,
		      size_t *owners_lost, moat_error *err)
{
	struct merge m = { .what = what,
			   .implicit = implicit,
			   .n_implicit = n_implicit,
			   .owners_lost = owners_lost };
	struct stat top;

	if (fstat(layerfd, &top) < 0)
		return moat_error_set(err, errno, "%s: stat", what);
	return apply_dir(&m, rootfd, layerfd, "", 0, is_implicit(&m, "") ? NULL : &top, err);
}
