/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The image as a directory of files. A directory (an OCI layout) is used as it is. An archive
 * (an OCI archive or a Docker archive, either compressed or not) is unpacked under the
 * cache's tmp/ by the same code as a layer, every name kept inside, in two passes: first
 * only its files up to IMAGE_META_MAX (index.json, manifests, configs: enough to learn the
 * image's digest and find its root in the cache), and the rest only when the root must be
 * built. The archive stays open in between, so both passes read the same file. */
#include "image-internal.h"

#include <fcntl.h>
#include <sys/stat.h>

static int unpack_archive(struct image_source *src, int64_t max_file_size, moat_error *err)
{
	struct image_unpack u = { .what = "archive",
				  .layer = false,
				  .max_file_size = max_file_size };

	if (lseek(src->archive_fd, 0, SEEK_SET) < 0)
		return moat_error_set(err, errno, "archive: seek");
	int r = image_unpack_fd(src->archive_fd, src->dirfd, &u, err);
	image_unpack_release(&u);
	if (r < 0)
		return r;
	src->partial = u.skipped > 0;
	return 0;
}

int image_source_open(struct image_cache *c, const char *path, struct image_source **ret,
		      moat_error *err)
{
	struct image_source *src = xcalloc(1, sizeof(*src));
	struct stat st;
	int r = 0;

	src->dirfd = src->archive_fd = -1;
	src->tmp = (struct image_tmp)IMAGE_TMP_INIT;
	int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = moat_error_set(err, errno, "open");
		if (fd >= 0)
			close(fd);
	} else if (S_ISDIR(st.st_mode)) {
		src->dirfd = fd;
	} else if (S_ISREG(st.st_mode)) {
		src->archive_fd = fd;
		r = image_tmp_make(c, "archive", &src->tmp, err);
		if (r == 0) {
			src->dirfd = openat(src->tmp.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (src->dirfd < 0)
				r = moat_error_set(err, errno, "open 'tmp/%s'", src->tmp.name);
		}
		if (r == 0)
			r = unpack_archive(src, (int64_t)IMAGE_META_MAX, err);
	} else {
		close(fd);
		r = moat_error_msg(err, EINVAL, "neither a directory nor an archive");
	}
	if (r < 0) {
		image_source_free(c, src);
		return r;
	}
	*ret = src;
	return 0;
}

int image_source_complete(struct image_source *src, moat_error *err)
{
	if (!src->partial)
		return 0;
	return unpack_archive(src, -1, err);
}

void image_source_free(struct image_cache *c, struct image_source *src)
{
	if (src == NULL)
		return;
	moat_closep(&src->dirfd);
	moat_closep(&src->archive_fd);
	image_tmp_remove(c, &src->tmp);
	free(src);
}
