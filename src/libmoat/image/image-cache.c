/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The image cache's directories: layers/sha256, rootfs/sha256 and tmp/ under cache_dir, and
 * the temporary directories in tmp/ that become layers and roots by a rename.
 *
 * A temporary directory is locked with flock(2) on an fd of it for as long as its maker has
 * it open; the lock goes with the process. So what a killed unpack left is any directory in
 * tmp/ whose lock can be taken, and image_cache_open removes those. */
#include "image-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

/* Open (making it 0700 when missing) the directory name under parentfd; O_NOFOLLOW: a
 * symlink planted in the cache is not followed. */
static int open_subdir(int parentfd, const char *name, int *ret_fd, moat_error *err)
{
	if (mkdirat(parentfd, name, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mkdir '%s'", name);
	int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", name);
	*ret_fd = fd;
	return 0;
}

/* Remove the directories in tmp/ whose lock is free: their makers are gone. */
static void sweep_tmp(struct image_cache *c)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd = openat(c->tmp, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		_cleanup_close_ int entry = -1;
		moat_error ignored = MOAT_ERROR_INIT;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		entry = openat(c->tmp, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (entry < 0 || flock(entry, LOCK_EX | LOCK_NB) < 0)
			continue;
		remove_tree_at(c->tmp, de->d_name, &ignored);
		moat_error_clear(&ignored);
	}
}

int image_cache_open(const char *cache_dir, struct image_cache *c, moat_error *err)
{
	_cleanup_close_ int layers = -1, roots = -1;

	if (mkdir_p(cache_dir, 0700, err) < 0)
		return moat_error_ret(err);
	c->path = xstrdup(cache_dir);
	c->fd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->fd < 0)
		return moat_error_set(err, errno, "open '%s'", cache_dir);
	if (open_subdir(c->fd, "layers", &layers, err) < 0 ||
	    open_subdir(layers, "sha256", &c->layers, err) < 0 ||
	    open_subdir(c->fd, "rootfs", &roots, err) < 0 ||
	    open_subdir(roots, "sha256", &c->roots, err) < 0 ||
	    open_subdir(c->fd, "tmp", &c->tmp, err) < 0)
		return moat_error_prefix(err, "'%s'", cache_dir);
	sweep_tmp(c);
	return 0;
}

void image_cache_close(struct image_cache *c)
{
	moat_closep(&c->tmp);
	moat_closep(&c->roots);
	moat_closep(&c->layers);
	moat_closep(&c->fd);
	c->tmp = c->roots = c->layers = c->fd = -1;
	free(c->path);
	c->path = NULL;
}

/* Make, open and lock one candidate; -EEXIST to try another name, -EAGAIN when a sweep
 * removed it between the mkdir and the lock. */
static int make_locked(struct image_cache *c, const char *name, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (mkdirat(c->tmp, name, 0700) < 0)
		return errno == EEXIST ? -EEXIST
				       : moat_error_set(err, errno, "mkdir 'tmp/%s'", name);
	fd = openat(c->tmp, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EAGAIN
				       : moat_error_set(err, errno, "open 'tmp/%s'", name);
	if (flock(fd, LOCK_EX) < 0)
		return moat_error_set(err, errno, "lock 'tmp/%s'", name);
	/* a sweep that took the lock first removed it: a removed directory has no links */
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat 'tmp/%s'", name);
	if (st.st_nlink == 0)
		return -EAGAIN;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int image_tmp_make(struct image_cache *c, const char *prefix, struct image_tmp *ret,
		   moat_error *err)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		uint64_t rnd = 0;
		int fd = -1;

		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return moat_error_set(err, errno ? errno : EIO, "getrandom");
		char *name = xasprintf("%s-%016llx", prefix, (unsigned long long)rnd);
		int r = make_locked(c, name, &fd, err);
		if (r == 0) {
			ret->name = name;
			ret->fd = fd;
			return 0;
		}
		free(name);
		if (r != -EEXIST && r != -EAGAIN)
			return r;
	}
	return moat_error_msg(err, EEXIST, "no free name for a directory in '%s/tmp'", c->path);
}

/* renameat2(RENAME_NOREPLACE), or where the filesystem has no such flag (EINVAL: NFS) a
 * plain rename, which fails too when the target is a directory with entries; one without
 * any is an empty root, the same as ours. */
static int rename_noreplace(int olddir, const char *oldname, int newdir, const char *newname)
{
	if (renameat2(olddir, oldname, newdir, newname, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL)
		return -1;
	if (renameat(olddir, oldname, newdir, newname) == 0)
		return 0;
	if (errno == ENOTEMPTY)
		errno = EEXIST;
	return -1;
}

int image_tmp_publish(struct image_cache *c, struct image_tmp *t, int destfd, const char *name,
		      moat_error *err)
{
	if (rename_noreplace(c->tmp, t->name, destfd, name) < 0) {
		int saved = errno;
		image_tmp_remove(c, t);
		if (saved != EEXIST)
			return moat_error_set(err, saved, "rename into '%s'", name);
		return 0;
	}
	free(t->name);
	t->name = NULL;
	moat_closep(&t->fd);
	t->fd = -1;
	return 0;
}

void image_tmp_remove(struct image_cache *c, struct image_tmp *t)
{
	moat_error ignored = MOAT_ERROR_INIT;

	if (t->name != NULL)
		remove_tree_at(c->tmp, t->name, &ignored);
	moat_error_clear(&ignored);
	free(t->name);
	t->name = NULL;
	moat_closep(&t->fd);
	t->fd = -1;
}
