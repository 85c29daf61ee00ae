/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: resolving paths inside the container root by fd (see safe-path.h). */
#include "safe-path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>

#include "utils.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif

/* A race seen during a walk (a component changed between two looks) restarts it, this often. */
#define WALK_RETRIES 8
/* openat2(RESOLVE_IN_ROOT) returns EAGAIN when a rename or mount raced the lookup. */
#define OPENAT2_RETRIES 32
/* Upper bound on the path still to resolve after splicing in symlink targets. */
#define WALK_MAX_REST (2 * PATH_MAX)

static bool openat2_missing;

bool moat_safe_path_fallback(void)
{
	const char *force = getenv("MOAT_TEST_FORCE_OPENAT_FALLBACK");

	return openat2_missing || (force != NULL && strcmp(force, "1") == 0);
}

static int openat2_in_root(int rootfd, const char *path, int flags, mode_t mode, unsigned resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int i;

	if (resolve & MOAT_RESOLVE_NO_SYMLINKS)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	for (i = 0; i < OPENAT2_RETRIES; i++) {
		long fd = syscall(__NR_openat2, rootfd, path, &how, sizeof(how));

		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN && errno != EINTR)
			break;
	}
	return -errno;
}

/* ---- the fallback walk ----------------------------------------------------------------- */

struct walk {
	int rootfd;
	unsigned resolve;
	int *stack; /* O_PATH fds of the directories below the root, innermost last */
	size_t depth, cap;
	char *rest; /* the path still to resolve */
	unsigned links;
};

enum { STEP_NEXT, STEP_RESTART, STEP_DONE };

static int walk_cur(const struct walk *w)
{
	return w->depth > 0 ? w->stack[w->depth - 1] : w->rootfd;
}

static void walk_push(struct walk *w, int fd)
{
	if (w->depth == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 16;
		w->stack = xrealloc(w->stack, w->cap * sizeof(int));
	}
	w->stack[w->depth++] = fd;
}

static void walk_pop(struct walk *w)
{
	if (w->depth > 0)
		close(w->stack[--w->depth]);
}

static void walk_release(struct walk *w)
{
	while (w->depth > 0)
		walk_pop(w);
	free(w->stack);
	free(w->rest);
}

/* A symlink on procfs with an absolute target is a magic link (fd/N, cwd, root, exe): refused,
 * as RESOLVE_NO_MAGICLINKS refuses it. /proc/self and /proc/mounts are relative and followed. */
static bool is_magic_link(int linkfd, const char *target)
{
	struct statfs sfs;

	if (target[0] != '/')
		return false;
	return fstatfs(linkfd, &sfs) < 0 || sfs.f_type == PROC_SUPER_MAGIC;
}

/* Replace the component just read (a symlink, linkfd) by its target: rest becomes target
 * followed by what came after the component. */
static int walk_splice_link(struct walk *w, int linkfd, const char *after)
{
	char target[PATH_MAX];
	size_t tlen, alen;
	ssize_t n;
	char *rest;

	if (w->resolve & MOAT_RESOLVE_NO_SYMLINKS)
		return -ELOOP;
	if (++w->links > MOAT_MAXSYMLINKS)
		return -ELOOP;
	n = readlinkat(linkfd, "", target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENOENT;
	target[n] = '\0';
	if (is_magic_link(linkfd, target))
		return -ELOOP;
	tlen = (size_t)n;
	alen = strlen(after);
	if (tlen + alen > WALK_MAX_REST)
		return -ENAMETOOLONG;
	rest = xmalloc(tlen + alen + 1);
	memcpy(rest, target, tlen);
	memcpy(rest + tlen, after, alen + 1);
	free(w->rest);
	w->rest = rest;
	if (target[0] == '/')
		while (w->depth > 0)
			walk_pop(w);
	return STEP_RESTART;
}

/* The last component does not exist and flags ask to create it. */
static int walk_create(struct walk *w, const char *name, bool trailing, int flags, mode_t mode,
		       int *ret_fd)
{
	int fd;

	if (trailing)
		return -EISDIR;
	fd = openat(walk_cur(w), name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return STEP_DONE;
}

/* Open the last component for real, and check that it is what was looked at. */
static int walk_open_last(struct walk *w, const char *name, const struct stat *seen, int flags,
			  mode_t mode, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = openat(walk_cur(w), name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_dev != seen->st_dev || st.st_ino != seen->st_ino)
		return -EAGAIN; /* swapped between the two opens: walk again */
	*ret_fd = TAKE_FD(fd);
	return STEP_DONE;
}

static bool follow_last(int flags, bool trailing)
{
	if (trailing)
		return true;
	if (flags & O_NOFOLLOW)
		return false;
	return (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
}

static int walk_name(struct walk *w, const char *name, const char *after, bool last, bool trailing,
		     int flags, mode_t mode, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = openat(walk_cur(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && last && (flags & O_CREAT))
			return walk_create(w, name, trailing, flags, mode, ret_fd);
		return -errno;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode) && (!last || follow_last(flags, trailing)))
		return walk_splice_link(w, fd, after);
	if (!last) {
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		walk_push(w, TAKE_FD(fd));
		return STEP_NEXT;
	}
	if (trailing && !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return -EEXIST;
	return walk_open_last(w, name, &st, flags, mode, ret_fd);
}

/* The path ended on a directory already walked ("/", "a/..", "a/."). */
static int walk_open_cur(struct walk *w, int flags, mode_t mode, int *ret_fd)
{
	int fd = openat(walk_cur(w), ".", (flags & ~O_NOFOLLOW) | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return STEP_DONE;
}

static int walk_step(struct walk *w, size_t *pos, int flags, mode_t mode, int *ret_fd)
{
	char name[NAME_MAX + 1];
	const char *start = w->rest + *pos, *end, *after;
	bool last;

	while (*start == '/')
		start++;
	if (*start == '\0')
		return walk_open_cur(w, flags, mode, ret_fd);
	end = strchrnul(start, '/');
	if ((size_t)(end - start) > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, start, (size_t)(end - start));
	name[end - start] = '\0';
	for (after = end; *after == '/'; after++)
		;
	last = *after == '\0';
	*pos = (size_t)(end - w->rest);
	if (strcmp(name, ".") == 0)
		return STEP_NEXT;
	if (strcmp(name, "..") == 0) {
		walk_pop(w); /* never above the root: the stack ends there */
		return STEP_NEXT;
	}
	return walk_name(w, name, end, last, last && *end == '/', flags, mode, ret_fd);
}

static int walk_once(int rootfd, const char *path, int flags, mode_t mode, unsigned resolve,
		     int *ret_fd)
{
	struct walk w = { .rootfd = rootfd, .resolve = resolve, .rest = xstrdup(path) };
	size_t pos = 0;
	int r;

	do {
		r = walk_step(&w, &pos, flags, mode, ret_fd);
		if (r == STEP_RESTART)
			pos = 0;
	} while (r == STEP_NEXT || r == STEP_RESTART);
	walk_release(&w);
	return r < 0 ? r : 0;
}

static int fallback_open(int rootfd, const char *path, int flags, mode_t mode, unsigned resolve)
{
	int i, fd = -1, r = -EAGAIN;

	if (path[0] == '\0')
		return -ENOENT;
	for (i = 0; i < WALK_RETRIES && r == -EAGAIN; i++)
		r = walk_once(rootfd, path, flags, mode, resolve, &fd);
	return r < 0 ? r : fd;
}

/* ---- public ----------------------------------------------------------------------------- */

/* Returns an fd or -errno, without touching an error. */
static int open_in_root(int rootfd, const char *path, int flags, mode_t mode, unsigned resolve)
{
	int r;

	if (!moat_safe_path_fallback()) {
		r = openat2_in_root(rootfd, path, flags, mode, resolve);
		if (r != -ENOSYS)
			return r;
		openat2_missing = true;
	}
	return fallback_open(rootfd, path, flags, mode, resolve);
}

int moat_safe_open(int rootfd, const char *path, int flags, mode_t mode, unsigned resolve,
		   int *ret_fd, moat_error *err)
{
	int r = open_in_root(rootfd, path, flags, mode, resolve);

	if (r < 0)
		return moat_error_set(err, -r, "open '%s' in the container root", path);
	*ret_fd = r;
	return 0;
}

static int mkdir_p_at(int rootfd, const char *path, mode_t mode, unsigned depth);

/* name in parent (whose path inside the root is dir) is a symlink: the path inside the root it
 * points to, *ret (allocated). An absolute target is taken as it is (it restarts at the root);
 * a relative one follows dir, which resolves as the link would (".." after a symlinked
 * component goes where the kernel would go). -EINVAL: name is not a symlink. */
static int link_path(int parent, const char *dir, const char *name, char **ret)
{
	_cleanup_close_ int lfd = -1;
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	lfd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0)
		return -errno;
	if (fstat(lfd, &st) < 0)
		return -errno;
	if (!S_ISLNK(st.st_mode))
		return -EINVAL;
	n = readlinkat(lfd, "", target, sizeof(target) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	target[n] = '\0';
	if (is_magic_link(lfd, target))
		return -ELOOP;
	*ret = target[0] == '/' ? xstrdup(target) : xasprintf("%s/%s", dir, target);
	return 0;
}

/* name exists in parent (whose path is prefix/..) but is not a directory: when it is a dangling
 * symlink, create its target (resolved inside the root) and open the result. */
static int create_link_target(int rootfd, int parent, const char *prefix, const char *name,
			      mode_t mode, unsigned depth)
{
	_cleanup_free_ char *dir =
		xasprintf("%.*s", (int)(strlen(prefix) - strlen(name) - 1), prefix);
	_cleanup_free_ char *target_path = NULL;
	int fd;

	fd = link_path(parent, dir, name, &target_path);
	if (fd < 0)
		return fd == -EINVAL ? -ENOTDIR : fd;
	fd = mkdir_p_at(rootfd, target_path, mode, depth + 1);
	if (fd < 0)
		return fd;
	close(fd);
	return open_in_root(rootfd, prefix, O_PATH | O_DIRECTORY, 0, 0);
}

static int create_component(int rootfd, int parent, const char *prefix, const char *name,
			    mode_t mode, unsigned depth)
{
	int fd;

	if (mkdirat(parent, name, mode) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno != ENOTDIR && errno != ELOOP)
		return -errno;
	return create_link_target(rootfd, parent, prefix, name, mode, depth);
}

/* mkdir -p inside the root; returns an O_PATH fd of the directory or -errno. */
static int mkdir_p_at(int rootfd, const char *path, mode_t mode, unsigned depth)
{
	_cleanup_free_ char *prefix = xmalloc(strlen(path) + 2);
	_cleanup_close_ int cur = -1;
	const char *p = path;
	size_t plen = 0;
	int r;

	if (depth > MOAT_MAXSYMLINKS)
		return -ELOOP;
	r = open_in_root(rootfd, path, O_PATH | O_DIRECTORY, 0, 0);
	if (r != -ENOENT)
		return r;
	cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	while (*p != '\0') {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (len == 0)
			break;
		prefix[plen++] = '/';
		memcpy(prefix + plen, p, len);
		plen += len;
		prefix[plen] = '\0';
		p += len;
		r = open_in_root(rootfd, prefix, O_PATH | O_DIRECTORY, 0, 0);
		if (r == -ENOENT && strcmp(prefix + plen - len, "..") != 0)
			r = create_component(rootfd, cur, prefix, prefix + plen - len, mode, depth);
		if (r < 0)
			return r;
		close(cur);
		cur = r;
	}
	return TAKE_FD(cur);
}

int moat_safe_mkdir_p(int rootfd, const char *path, mode_t mode, int *ret_fd, moat_error *err)
{
	int r = mkdir_p_at(rootfd, path, mode, 0);

	if (r < 0)
		return moat_error_set(err, -r, "create directory '%s' in the container root", path);
	*ret_fd = r;
	return 0;
}

/* Split path into a parent and a last component that is a plain name. */
static int split_last(const char *path, char **ret_parent, const char **ret_name)
{
	size_t len = strlen(path), start;

	if (len == 0 || path[len - 1] == '/')
		return -EISDIR;
	start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (strcmp(path + start, ".") == 0 || strcmp(path + start, "..") == 0)
		return -EISDIR;
	*ret_parent = xasprintf("/%.*s", (int)start, path);
	*ret_name = path + start;
	return 0;
}

static int mkfile_at(int rootfd, const char *path, mode_t mode, unsigned depth)
{
	_cleanup_close_ int parent = -1;
	_cleanup_free_ char *dir = NULL, *target = NULL;
	const char *name;
	int r;

	if (depth > MOAT_MAXSYMLINKS)
		return -ELOOP;
	r = open_in_root(rootfd, path, O_PATH, 0, 0);
	if (r != -ENOENT)
		return r;
	r = split_last(path, &dir, &name);
	if (r < 0)
		return r;
	parent = mkdir_p_at(rootfd, dir, 0755, 0);
	if (parent < 0)
		return parent;
	if (mknodat(parent, name, S_IFREG | mode, 0) < 0) {
		if (errno != EEXIST)
			return -errno;
		/* a dangling symlink: its target is made, inside the root (else a race: it
		 * exists now) */
		r = link_path(parent, dir, name, &target);
		if (r == 0)
			r = mkfile_at(rootfd, target, mode, depth + 1);
		if (r < 0 && r != -EINVAL)
			return r;
		if (r >= 0)
			close(r);
	}
	return open_in_root(rootfd, path, O_PATH, 0, 0);
}

int moat_safe_mkfile(int rootfd, const char *path, mode_t mode, int *ret_fd, moat_error *err)
{
	int r = mkfile_at(rootfd, path, mode, 0);

	if (r < 0)
		return moat_error_set(err, -r, "create file '%s' in the container root", path);
	*ret_fd = r;
	return 0;
}

int moat_safe_open_parent(int rootfd, const char *path, int *ret_dirfd, char **ret_name,
			  moat_error *err)
{
	_cleanup_free_ char *dir = NULL;
	const char *name;
	int r;

	r = split_last(path, &dir, &name);
	if (r == 0)
		r = mkdir_p_at(rootfd, dir, 0755, 0);
	if (r < 0)
		return moat_error_set(err, -r, "open the directory of '%s' in the container root",
				      path);
	*ret_dirfd = r;
	*ret_name = xstrdup(name);
	return 0;
}

int moat_fd_check_fs(int fd, long magic, const char *what, const char *fsname, moat_error *err)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return moat_error_set(err, errno, "statfs '%s'", what);
	if ((long)sfs.f_type != magic)
		return moat_error_msg(err, EXDEV, "'%s' is not %s (filesystem magic 0x%lx)", what,
				      fsname, (unsigned long)sfs.f_type);
	return 0;
}
