/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: files between the host and a sandbox: --copy-in into the upper layer before the
 * command, --copy-out from the sandbox's root after it.
 *
 * Copies are copies, never bind mounts. Inside the sandbox every path is resolved by fd in
 * the sandbox's root (safe-path.h): copy-in writes only into the upper layer, which holds
 * nothing but what moat put there, and copy-out never follows a symlink, not even one in the
 * middle of the path, so a symlink the code planted cannot point a copy at the host. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safe-path.h"
#include "sandbox-internal.h"
#include "utils.h"

char *sb_sandbox_path(const struct moat_sandbox_opts *o, const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	return xasprintf("%s/%s", o->workdir, path);
}

/* Copy the bytes of in to out, at most max (EFBIG beyond). */
static int copy_bytes(int in, int out, uint64_t max, uint64_t *ret_n)
{
	char buf[65536];
	uint64_t n = 0;

	for (;;) {
		ssize_t r = read(in, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (uint64_t)r;
		if (n > max)
			return -EFBIG;
		if (write_all(out, buf, (size_t)r) < 0)
			return -errno;
	}
	*ret_n = n;
	return 0;
}

/* ---- copy-in ---------------------------------------------------------------------------- */

static int in_fail(const struct sb_copy *c, int e, const char *what, moat_error *err)
{
	if (e == ENOSPC || e == EDQUOT)
		return moat_error_msg(err, e,
				      "%s '%s': the sandbox's disk is full (--disk %llu bytes)",
				      c->flag, c->arg, (unsigned long long)c->o->disk);
	return moat_error_msg(err, e, "%s '%s': %s: %s", c->flag, c->arg, what, strerror(e));
}

static int in_entry(const struct sb_copy *c, int src_dir, const char *src_name, int dst_dir,
		    const char *dst_name, bool follow, moat_error *err);

static int in_tree(const struct sb_copy *c, int src_fd, int dst_dir, const char *name, mode_t mode,
		   moat_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int out = -1;
	struct dirent *e;
	int fd;

	if (mkdirat(dst_dir, name, mode & 07777) < 0 && errno != EEXIST)
		return in_fail(c, errno, name, err);
	out = openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0 || fchown(out, c->o->uid, c->o->gid) < 0)
		return in_fail(c, errno, name, err);
	fd = openat(src_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return in_fail(c, errno, "read the directory", err);
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (in_entry(c, dirfd(d), e->d_name, out, e->d_name, false, err) < 0)
			return moat_error_ret(err);
	}
	return 0;
}

static int in_file(const struct sb_copy *c, int src, int dst_dir, const char *name, mode_t mode,
		   moat_error *err)
{
	_cleanup_close_ int out = -1;
	uint64_t n;
	int r;

	unlinkat(dst_dir, name, 0);
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return in_fail(c, errno, name, err);
	r = copy_bytes(src, out, UINT64_MAX, &n);
	if (r < 0)
		return in_fail(c, -r, name, err);
	if (fchown(out, c->o->uid, c->o->gid) < 0 || fchmod(out, mode & 0777) < 0)
		return in_fail(c, errno, name, err);
	return 0;
}

static int not_copied(const struct sb_copy *c, const char *name, moat_error *err)
{
	return moat_error_msg(err, EINVAL, "%s '%s': '%s' is not a file, directory or symlink",
			      c->flag, c->arg, name);
}

/* An open file or directory (fd, taken over). */
static int in_open(const struct sb_copy *c, int fd, const struct stat *st, int dst_dir,
		   const char *dst_name, moat_error *err)
{
	_cleanup_close_ int src = fd;

	if (S_ISDIR(st->st_mode))
		return in_tree(c, src, dst_dir, dst_name, st->st_mode, err);
	if (S_ISREG(st->st_mode))
		return in_file(c, src, dst_dir, dst_name, st->st_mode, err);
	return not_copied(c, dst_name, err);
}

/* One entry: a directory (recursively), a regular file, or a symlink (as a symlink unless
 * follow: the argument itself is followed, as cp does). Anything else is refused. */
static int in_entry(const struct sb_copy *c, int src_dir, const char *src_name, int dst_dir,
		    const char *dst_name, bool follow, moat_error *err)
{
	struct stat st;
	int fd;

	if (fstatat(src_dir, src_name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
		return in_fail(c, errno, src_name, err);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(src_dir, src_name, target, sizeof(target) - 1);

		if (n < 0)
			return in_fail(c, errno, src_name, err);
		target[n] = '\0';
		unlinkat(dst_dir, dst_name, 0);
		if (symlinkat(target, dst_dir, dst_name) < 0 ||
		    fchownat(dst_dir, dst_name, c->o->uid, c->o->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return in_fail(c, errno, dst_name, err);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return not_copied(c, src_name, err);
	fd = openat(src_dir, src_name,
		    O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW) |
			    (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return in_fail(c, errno, src_name, err);
	return in_open(c, fd, &st, dst_dir, dst_name, err);
}

int sb_copy_in(const struct moat_sandbox_opts *o, const struct sb_layer *l, moat_error *err)
{
	for (size_t i = 0; i < o->n_copy_in; i++) {
		const struct moat_sandbox_copy *cp = &o->copy_in[i];
		_cleanup_free_ char *dst = sb_sandbox_path(o, cp->path), *name = NULL;
		_cleanup_free_ char *arg = xasprintf("%s:%s", cp->host, cp->path);
		struct sb_copy c = { .o = o, .flag = "--copy-in", .arg = arg };
		_cleanup_close_ int parent = -1;

		/* an O_PATH fd: the *at calls work on it */
		if (moat_safe_open_parent(l->upper_fd, dst, &parent, &name, err) < 0)
			return moat_error_prefix(err, "--copy-in '%s'", arg);
		if (in_entry(&c, AT_FDCWD, cp->host, parent, name, true, err) < 0)
			return moat_error_ret(err);
	}
	return 0;
}

int sb_copy_in_fd(const struct sb_copy *c, int root_fd, int src_fd, const char *src_name,
		  const char *path, moat_error *err)
{
	_cleanup_free_ char *dst = sb_sandbox_path(c->o, path), *name = NULL;
	_cleanup_close_ int parent = -1, into = -1, fd = -1;
	size_t n = strlen(dst);
	struct stat st;

	/* "dir/", "dir/.": the directory itself */
	while (n > 1 && (dst[n - 1] == '/' || (dst[n - 1] == '.' && dst[n - 2] == '/')))
		dst[--n] = '\0';
	if (moat_safe_open_parent(root_fd, dst, &parent, &name, err) < 0)
		return moat_error_prefix(err, "%s '%s'", c->flag, c->arg);
	/* into an existing directory, under the source's own name */
	into = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (into >= 0 && strchr(src_name, '/') == NULL && strcmp(src_name, "..") != 0 &&
	    strcmp(src_name, ".") != 0) {
		close(TAKE_FD(parent));
		parent = TAKE_FD(into);
		free(name);
		name = xstrdup(src_name);
	}
	fd = fcntl(src_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || fstat(fd, &st) < 0)
		return in_fail(c, errno, src_name, err);
	return in_open(c, TAKE_FD(fd), &st, parent, name, err);
}

/* ---- copy-out --------------------------------------------------------------------------- */

struct copy_out {
	const char *flag;
	const char *arg;
	uint64_t total;
	moat_error *err;
};

static int out_fail(const struct copy_out *c, int e, const char *what)
{
	if (e == ELOOP)
		return moat_error_msg(c->err, e,
				      "%s '%s': '%s' is or passes through a symlink; "
				      "symlinks are not followed",
				      c->flag, c->arg, what);
	if (e == EFBIG)
		return moat_error_msg(
			c->err, e, "%s '%s': '%s' is larger than %llu bytes, the copy-out limit",
			c->flag, c->arg, what, (unsigned long long)MOAT_SANDBOX_COPY_OUT_MAX);
	return moat_error_msg(c->err, e, "%s '%s': %s: %s", c->flag, c->arg, what, strerror(e));
}

static int out_entry(struct copy_out *c, int src, const char *name, int dst_dir,
		     const char *dst_name);

static int out_tree(struct copy_out *c, int src, int dst_dir, const char *dst_name, mode_t mode)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int out = -1, dir = src;
	struct dirent *e;

	if (mkdirat(dst_dir, dst_name, (mode & 0777) | 0700) < 0 && errno != EEXIST)
		return out_fail(c, errno, dst_name);
	out = openat(dst_dir, dst_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0)
		return out_fail(c, errno, dst_name);
	d = fdopendir(dir);
	if (d != NULL)
		dir = -1; /* the DIR has it */
	if (d == NULL)
		return out_fail(c, errno, "read the directory");
	while ((e = readdir(d)) != NULL) {
		_cleanup_close_ int fd = -1;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno == ELOOP)
			continue; /* a symlink inside a tree is left out, never followed */
		if (fd < 0)
			return out_fail(c, errno, e->d_name);
		if (out_entry(c, TAKE_FD(fd), e->d_name, out, e->d_name) < 0)
			return -1;
	}
	return 0;
}

/* src is an open fd of the entry (taken over); only files and directories are copied. */
static int out_entry(struct copy_out *c, int src, const char *name, int dst_dir,
		     const char *dst_name)
{
	_cleanup_close_ int fd = src, out = -1;
	struct stat st;
	uint64_t n;
	int r;

	if (fstat(fd, &st) < 0)
		return out_fail(c, errno, name);
	if (S_ISDIR(st.st_mode))
		return out_tree(c, TAKE_FD(fd), dst_dir, dst_name, st.st_mode);
	if (!S_ISREG(st.st_mode))
		return 0; /* devices, fifos, sockets: not files to hand back */
	if ((uint64_t)st.st_size > MOAT_SANDBOX_COPY_OUT_MAX - c->total)
		return out_fail(c, EFBIG, name);
	out = openat(dst_dir, dst_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		     st.st_mode & 0777);
	if (out < 0)
		return out_fail(c, errno, dst_name);
	r = copy_bytes(fd, out, MOAT_SANDBOX_COPY_OUT_MAX - c->total, &n);
	if (r < 0)
		return out_fail(c, -r, name);
	c->total += n;
	return 0;
}

/* One copy out of the sandbox's root: path to dst_name in dst_dir. */
static int out_one(struct copy_out *c, int root_fd, const char *path, int dst_dir,
		   const char *dst_name)
{
	int fd = -1;

	if (moat_safe_open(root_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0,
			   MOAT_RESOLVE_NO_SYMLINKS, &fd, c->err) < 0) {
		int e = moat_error_ret(c->err);

		moat_error_drop(c->err);
		return out_fail(c, -e, path);
	}
	return out_entry(c, fd, path, dst_dir, dst_name);
}

int sb_copy_out(const struct moat_sandbox_opts *o, int rootfd, moat_error *err)
{
	struct copy_out c = { .flag = "--copy-out", .err = err };

	for (size_t i = 0; i < o->n_copy_out; i++) {
		const struct moat_sandbox_copy *cp = &o->copy_out[i];
		_cleanup_free_ char *src = sb_sandbox_path(o, cp->path);
		_cleanup_free_ char *arg = xasprintf("%s:%s", cp->path, cp->host);

		c.arg = arg;
		if (out_one(&c, rootfd, src, AT_FDCWD, cp->host) < 0)
			return moat_error_ret(err);
	}
	return 0;
}

int sb_copy_out_fd(const struct sb_copy *sc, int root_fd, const char *path, int dst_dir,
		   const char *dst_name, moat_error *err)
{
	_cleanup_free_ char *src = sb_sandbox_path(sc->o, path);
	struct copy_out c = { .flag = sc->flag, .arg = sc->arg, .err = err };

	if (out_one(&c, root_fd, src, dst_dir, dst_name) < 0)
		return moat_error_ret(err);
	return 0;
}
