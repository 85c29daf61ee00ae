/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat_image_rootfs as a list of phases: open the cache, see the image as a directory, read
 * its plan, and unless its root is cached already: the rest of the archive, each layer into
 * the cache (unpacked, checked, renamed into place), the layers merged into a new root,
 * renamed into place. */
#include "image.h"
#include "image-internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "safe-path.h"
#include "strv.h"

#define IMPLICIT_FILE "implicit-dirs"
#define IMPLICIT_MAX ((size_t)64 << 20) /* the names of a layer's directories, at most */

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct build {
	struct image_cache cache;
	struct image_source *src;
	struct image_plan *plan;
	size_t owners_lost;
};

static bool cached(int dirfd, const char *hex)
{
	struct stat st;

	return fstatat(dirfd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static int verify_layer(const struct image_layer *l, const struct image_unpack *u, int fd,
			moat_error *err)
{
	char hex[MOAT_SHA256_HEX_SIZE];

	if (l->verify == IMAGE_VERIFY_BLOB) {
		if (strcmp(u->hex, l->hex) != 0)
			return moat_error_msg(
				err, EINVAL,
				"%s: '%s' has the digest sha256:%s, not the manifest's", l->name,
				l->path, u->hex);
		if (l->size >= 0 && u->size != (uint64_t)l->size)
			return moat_error_msg(
				err, EINVAL, "%s: '%s' has %llu bytes, not the %lld of its size",
				l->name, l->path, (unsigned long long)u->size, (long long)l->size);
		return 0;
	}
	if (strcmp(u->hex, l->hex) == 0)
		return 0; /* a tar as it is, as Docker writes them */
	if (!u->compressed)
		return moat_error_msg(
			err, EINVAL, "%s: '%s' has the digest sha256:%s, not its diff_id sha256:%s",
			l->name, l->path, u->hex, l->hex);
	if (image_tar_digest(fd, hex, err) < 0)
		return moat_error_prefix(err, "%s", l->name);
	if (strcmp(hex, l->hex) != 0)
		return moat_error_msg(err, EINVAL,
				      "%s: '%s' uncompressed has the digest sha256:%s, not its "
				      "diff_id sha256:%s",
				      l->name, l->path, hex, l->hex);
	return 0;
}

static int write_implicit(int dirfd, char **implicit, size_t n, moat_error *err)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += strlen(implicit[i]) + 1;
	data = xmalloc(len + 1);
	len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(implicit[i]) + 1;
		memcpy(data + len, implicit[i], l);
		len += l;
	}
	return write_file_atomic_at(dirfd, IMPLICIT_FILE, data, len, 0600, err);
}

/* The layer's blob unpacked into tmp's diff/ and checked. */
static int unpack_into(struct build *b, const struct image_layer *l, struct image_tmp *tmp,
		       moat_error *err)
{
	_cleanup_close_ int diff = -1, fd = -1;
	_cleanup_error_ moat_error open_err = MOAT_ERROR_INIT;
	struct image_unpack u = { .what = l->name, .layer = true, .max_file_size = -1 };
	struct stat st;
	int r;

	if (mkdirat(tmp->fd, "diff", 0755) < 0 ||
	    (diff = openat(tmp->fd, "diff", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return moat_error_set(err, errno, "%s: make 'tmp/%s/diff'", l->name, tmp->name);
	r = moat_safe_open(b->src->dirfd, l->path, O_RDONLY, 0, 0, &fd, &open_err);
	if (r < 0)
		return moat_error_set(err, -r, "%s: open '%s'", l->name, l->path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return moat_error_msg(err, EINVAL, "%s: '%s' is not a regular file", l->name,
				      l->path);
	r = image_unpack_fd(fd, diff, &u, err);
	if (r == 0)
		r = verify_layer(l, &u, fd, err);
	if (r == 0)
		r = write_implicit(tmp->fd, u.implicit, u.n_implicit, err);
	b->owners_lost += u.owners_lost;
	image_unpack_release(&u);
	return r;
}

static int unpack_layer(struct build *b, const struct image_layer *l, moat_error *err)
{
	struct image_tmp tmp = IMAGE_TMP_INIT;

	if (cached(b->cache.layers, l->hex))
		return 0;
	if (image_tmp_make(&b->cache, "layer", &tmp, err) < 0)
		return moat_error_prefix(err, "%s", l->name);
	if (unpack_into(b, l, &tmp, err) < 0) {
		image_tmp_remove(&b->cache, &tmp);
		return moat_error_ret(err);
	}
	if (image_tmp_publish(&b->cache, &tmp, b->cache.layers, l->hex, err) < 0)
		return moat_error_prefix(err, "%s", l->name);
	return 0;
}

/* The layer's implicit directories, sorted for bsearch. */
static int read_implicit(int layerdir, char ***ret, size_t *ret_n, moat_error *err)
{
	_cleanup_free_ char *data = NULL;
	char **names = NULL;
	size_t len, n = 0;

	if (read_file_at(layerdir, IMPLICIT_FILE, IMPLICIT_MAX, &data, &len, err) < 0)
		return moat_error_ret(err);
	for (size_t off = 0; off < len; off += strlen(data + off) + 1)
		strv_push(&names, &n, data + off);
	if (n > 0)
		qsort(names, n, sizeof(char *), cmp_name);
	*ret = names;
	*ret_n = n;
	return 0;
}

static int merge_one(struct build *b, const struct image_layer *l, int rootfd, moat_error *err)
{
	_cleanup_close_ int dir = -1, diff = -1;
	_cleanup_(strv_freep) char **implicit = NULL;
	size_t n = 0;

	dir = openat(b->cache.layers, l->hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0)
		diff = openat(dir, "diff", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (diff < 0)
		return moat_error_set(err, errno, "%s: open 'layers/sha256/%s/diff'", l->name,
				      l->hex);
	if (read_implicit(dir, &implicit, &n, err) < 0)
		return moat_error_prefix(err, "%s", l->name);
	return image_merge_layer(rootfd, diff, l->name, implicit, n, &b->owners_lost, err);
}

static int build_root(struct build *b, moat_error *err)
{
	struct image_tmp tmp = IMAGE_TMP_INIT;

	if (image_tmp_make(&b->cache, "rootfs", &tmp, err) < 0)
		return moat_error_ret(err);
	if (fchmod(tmp.fd, 0755) < 0) {
		moat_error_set(err, errno, "chmod 'tmp/%s'", tmp.name);
		image_tmp_remove(&b->cache, &tmp);
		return moat_error_ret(err);
	}
	for (size_t i = 0; i < b->plan->n_layers; i++) {
		if (merge_one(b, &b->plan->layers[i], tmp.fd, err) < 0) {
			image_tmp_remove(&b->cache, &tmp);
			return moat_error_ret(err);
		}
	}
	return image_tmp_publish(&b->cache, &tmp, b->cache.roots, b->plan->key, err);
}

static int run(struct build *b, const char *path, const char *cache_dir, moat_error *err)
{
	if (image_cache_open(cache_dir, &b->cache, err) < 0)
		return moat_error_prefix(err, "cache");
	if (image_source_open(&b->cache, path, &b->src, err) < 0 ||
	    image_read_plan(b->src->dirfd, image_host_arch(), &b->plan, err) < 0)
		return moat_error_ret(err);
	if (cached(b->cache.roots, b->plan->key))
		return 0;
	if (image_source_complete(b->src, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < b->plan->n_layers; i++)
		if (unpack_layer(b, &b->plan->layers[i], err) < 0)
			return moat_error_ret(err);
	return build_root(b, err);
}

int moat_image_rootfs(const char *path, const char *cache_dir, char **ret_rootfs, moat_error *err)
{
	struct build b = { .cache = IMAGE_CACHE_INIT };
	int r;

	if (path == NULL || *path == '\0' || cache_dir == NULL || *cache_dir == '\0')
		return moat_error_msg(err, EINVAL,
				      "image: a path and a cache directory are needed");
	r = run(&b, path, cache_dir, err);
	if (b.owners_lost > 0)
		moat_error_warn(err,
				"image '%s': the owners of %zu files could not be set; they belong "
				"to uid %u",
				path, b.owners_lost, (unsigned)geteuid());
	if (r == 0)
		*ret_rootfs = xasprintf("%s/rootfs/sha256/%s", cache_dir, b.plan->key);
	image_plan_free(b.plan);
	image_source_free(&b.cache, b.src);
	image_cache_close(&b.cache);
	if (r < 0)
		return moat_error_prefix(err, "image '%s'", path);
	return 0;
}
