/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the image module (src/libmoat/image/): images built at test time with
 * libarchive's writer in a temp directory under /tmp (removed by the teardown, which cmocka
 * runs when a test fails too): an OCI layout of two layers, the second whiting out a file and
 * making a directory opaque; the same as an OCI archive (gzip-compressed, with a gzip layer),
 * with a zstd layer, and as a Docker archive (its layers reached through symlinks); hostile layers ("../escape", an absolute name, an entry through a
 * symlink to /etc planted by the layer below or by an earlier entry, hard links to paths
 * outside); a blob whose digest is wrong; a second call served from the cache; multi-platform
 * indexes. Every refusal's message is checked for the layer and entry, or the field, it
 * names. Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "image.h"
#include "image/image-internal.h"
#include "sha256.h"
#include "utils.h"

#define MTIME 1700000000

struct fixture {
	char dir[64];
	char cache[128];
	char image[128];
	char escape[128]; /* a name in /etc that a hostile layer aims at */
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/moat-unit-image.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
	snprintf(f->image, sizeof(f->image), "%s/image", f->dir);
	snprintf(f->escape, sizeof(f->escape), "moat-image-escape-%d", (int)getpid());
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	moat_error err = MOAT_ERROR_INIT;
	char path[160];

	remove_tree_at(AT_FDCWD, f->dir, &err);
	moat_error_clear(&err);
	snprintf(path, sizeof(path), "/etc/%s", f->escape);
	unlink(path);
	free(f);
	return 0;
}

/* ---- layers: tars written by libarchive ------------------------------------------- */

struct ent {
	const char *name;
	char type;        /* f file, d directory, l symlink, h hard link, c char device, p FIFO */
	const char *data; /* a file's content, a link's target */
	mode_t perm;      /* 0: 0644 (0755 for directories) */
	int uid, gid;
};

/* how a layer is compressed */
enum comp { PLAIN, GZIP, ZSTD };

static char *make_tar(const struct ent *e, size_t n, enum comp comp, size_t *ret_len)
{
	size_t cap = 4 << 20, used = 0;
	char *buf = xmalloc(cap);
	struct archive *a = archive_write_new();

	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	if (comp == GZIP)
		assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	if (comp == ZSTD)
		assert_int_equal(archive_write_add_filter_zstd(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *ae = archive_entry_new();
		archive_entry_set_pathname(ae, e[i].name);
		archive_entry_set_perm(ae, e[i].perm ? e[i].perm : e[i].type == 'd' ? 0755 : 0644);
		archive_entry_set_uid(ae, e[i].uid);
		archive_entry_set_gid(ae, e[i].gid);
		archive_entry_set_mtime(ae, MTIME, 0);
		switch (e[i].type) {
		case 'f':
			archive_entry_set_filetype(ae, AE_IFREG);
			archive_entry_set_size(ae, (la_int64_t)strlen(e[i].data));
			break;
		case 'd': archive_entry_set_filetype(ae, AE_IFDIR); break;
		case 'l':
			archive_entry_set_filetype(ae, AE_IFLNK);
			archive_entry_set_symlink(ae, e[i].data);
			break;
		case 'h':
			archive_entry_set_filetype(ae, AE_IFREG);
			archive_entry_set_hardlink(ae, e[i].data);
			break;
		case 'c':
			archive_entry_set_filetype(ae, AE_IFCHR);
			archive_entry_set_rdev(ae, makedev(1, 3));
			break;
		case 'p': archive_entry_set_filetype(ae, AE_IFIFO); break;
		}
		assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
		if (e[i].type == 'f')
			assert_int_equal(archive_write_data(a, e[i].data, strlen(e[i].data)),
					 (la_ssize_t)strlen(e[i].data));
		archive_entry_free(ae);
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	*ret_len = used;
	return buf;
}

struct layer {
	char *data;
	size_t len;
	enum comp comp;
	char hex[MOAT_SHA256_HEX_SIZE];     /* of data */
	char diff_id[MOAT_SHA256_HEX_SIZE]; /* of the uncompressed tar */
};

static struct layer make_layer(const struct ent *e, size_t n, enum comp comp)
{
	struct layer l = { .comp = comp };
	size_t len;
	char *plain = make_tar(e, n, PLAIN, &len);

	moat_sha256_data(plain, len, l.diff_id);
	if (comp != PLAIN) {
		free(plain);
		plain = make_tar(e, n, comp, &len);
	}
	l.data = plain;
	l.len = len;
	moat_sha256_data(l.data, l.len, l.hex);
	return l;
}

static void free_layers(struct layer *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].data);
}

/* ---- images: a list of files, written as a directory or as a tar ------------------ */

struct image {
	size_t n;
	struct {
		char *name, *data;
		size_t len;
		char *link; /* a symlink's target, or NULL for a file */
	} f[32];
};

static void im_add(struct image *im, const char *name, const void *data, size_t len)
{
	assert_true(im->n < MOAT_ARRAY_SIZE(im->f));
	im->f[im->n].name = xstrdup(name);
	im->f[im->n].data = xmalloc(len + 1);
	memcpy(im->f[im->n].data, data, len);
	im->f[im->n].len = len;
	im->n++;
}

static void im_add_link(struct image *im, const char *name, const char *target)
{
	im_add(im, name, "", 0);
	im->f[im->n - 1].link = xstrdup(target);
}

static void im_add_str(struct image *im, const char *name, const char *s)
{
	im_add(im, name, s, strlen(s));
}

static void im_blob(struct image *im, const void *data, size_t len, char hex[MOAT_SHA256_HEX_SIZE])
{
	char name[96];

	moat_sha256_data(data, len, hex);
	snprintf(name, sizeof(name), "blobs/sha256/%s", hex);
	im_add(im, name, data, len);
}

static void im_free(struct image *im)
{
	for (size_t i = 0; i < im->n; i++) {
		free(im->f[i].name);
		free(im->f[i].data);
		free(im->f[i].link);
	}
	im->n = 0;
}

static void im_write_dir(const struct image *im, const char *dir)
{
	moat_error err = MOAT_ERROR_INIT;

	for (size_t i = 0; i < im->n; i++) {
		char *path = xasprintf("%s/%s", dir, im->f[i].name);
		*strrchr(path, '/') = '\0';
		assert_int_equal(mkdir_p(path, 0755, &err), 0);
		free(path);
		path = xasprintf("%s/%s", dir, im->f[i].name);
		if (im->f[i].link != NULL) {
			assert_int_equal(symlink(im->f[i].link, path), 0);
			free(path);
			continue;
		}
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write_all(fd, im->f[i].data, im->f[i].len), (ssize_t)im->f[i].len);
		close(fd);
		free(path);
	}
}

static void im_write_tar(const struct image *im, const char *path, bool gzip)
{
	struct archive *a = archive_write_new();

	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	if (gzip)
		assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < im->n; i++) {
		struct archive_entry *ae = archive_entry_new();
		archive_entry_set_pathname(ae, im->f[i].name);
		archive_entry_set_filetype(ae, im->f[i].link ? AE_IFLNK : AE_IFREG);
		archive_entry_set_perm(ae, 0644);
		archive_entry_set_size(ae, (la_int64_t)im->f[i].len);
		if (im->f[i].link != NULL)
			archive_entry_set_symlink(ae, im->f[i].link);
		assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
		assert_int_equal(archive_write_data(a, im->f[i].data, im->f[i].len),
				 (la_ssize_t)im->f[i].len);
		archive_entry_free(ae);
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

/* An OCI config and manifest for the layers and arch; *ret_hex is the manifest's digest,
 * *ret_size its size. */
static void oci_manifest(struct image *im, const struct layer *l, size_t n, const char *arch,
			 char ret_hex[MOAT_SHA256_HEX_SIZE], size_t *ret_size)
{
	char *diff_ids = xstrdup(""), *descs = xstrdup("");
	char config_hex[MOAT_SHA256_HEX_SIZE];

	for (size_t i = 0; i < n; i++) {
		char *d = xasprintf("%s%s\"sha256:%s\"", diff_ids, i ? "," : "", l[i].diff_id);
		char *m =
			xasprintf("%s%s{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar%s\","
				  "\"digest\":\"sha256:%s\",\"size\":%zu}",
				  descs, i ? "," : "",
				  l[i].comp == GZIP   ? "+gzip"
				  : l[i].comp == ZSTD ? "+zstd"
						      : "",
				  l[i].hex, l[i].len);
		free(diff_ids);
		free(descs);
		diff_ids = d;
		descs = m;
	}
	char *config = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\",\"rootfs\":{\"type\":"
				 "\"layers\",\"diff_ids\":[%s]}}",
				 arch, diff_ids);
	im_blob(im, config, strlen(config), config_hex);
	char *manifest = xasprintf(
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		"\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		"\"digest\":\"sha256:%s\",\"size\":%zu},\"layers\":[%s]}",
		config_hex, strlen(config), descs);
	im_blob(im, manifest, strlen(manifest), ret_hex);
	*ret_size = strlen(manifest);
	for (size_t i = 0; i < n; i++) {
		char hex[MOAT_SHA256_HEX_SIZE];
		im_blob(im, l[i].data, l[i].len, hex);
	}
	free(manifest);
	free(config);
	free(diff_ids);
	free(descs);
}

static void oci_index(struct image *im, const char *manifests)
{
	char *index = xasprintf("{\"schemaVersion\":2,\"manifests\":[%s]}", manifests);

	im_add_str(im, "index.json", index);
	im_add_str(im, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
	free(index);
}

static char *descriptor(const char *hex, size_t size, const char *platform)
{
	return xasprintf("{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
			 "\"digest\":\"sha256:%s\",\"size\":%zu%s%s}",
			 hex, size, platform ? ",\"platform\":" : "", platform ? platform : "");
}

/* A one-image OCI layout; ret_hex gets the manifest's digest. */
static void oci_image(struct image *im, const struct layer *l, size_t n,
		      char ret_hex[MOAT_SHA256_HEX_SIZE])
{
	size_t size;

	oci_manifest(im, l, n, image_host_arch(), ret_hex, &size);
	char *platform = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\"}", image_host_arch());
	char *desc = descriptor(ret_hex, size, platform);
	oci_index(im, desc);
	free(desc);
	free(platform);
}

/* A Docker archive's files, as `podman save` writes them (and `docker save` before Docker 25):
 * each layer a "<diff_id>.tar", named in manifest.json by a "<id>/layer.tar" symlink to it;
 * ret_hex gets the config's digest. */
static void docker_image(struct image *im, const struct layer *l, size_t n,
			 char ret_hex[MOAT_SHA256_HEX_SIZE])
{
	char *diff_ids = xstrdup(""), *paths = xstrdup("");

	for (size_t i = 0; i < n; i++) {
		char name[64], file[96], target[128];
		snprintf(name, sizeof(name), "%02zu%s/layer.tar", i, "abcdef");
		snprintf(file, sizeof(file), "%s.tar", l[i].diff_id);
		snprintf(target, sizeof(target), "../%s", file);
		im_add(im, file, l[i].data, l[i].len);
		im_add_link(im, name, target);
		char *d = xasprintf("%s%s\"sha256:%s\"", diff_ids, i ? "," : "", l[i].diff_id);
		char *p = xasprintf("%s%s\"%s\"", paths, i ? "," : "", name);
		free(diff_ids);
		free(paths);
		diff_ids = d;
		paths = p;
	}
	char *config = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\",\"rootfs\":{\"type\":"
				 "\"layers\",\"diff_ids\":[%s]}}",
				 image_host_arch(), diff_ids);
	moat_sha256_data(config, strlen(config), ret_hex);
	char *config_name = xasprintf("%s.json", ret_hex);
	im_add_str(im, config_name, config);
	char *manifest = xasprintf(
		"[{\"Config\":\"%s\",\"RepoTags\":[\"moat/test:latest\"],\"Layers\":[%s]}]",
		config_name, paths);
	im_add_str(im, "manifest.json", manifest);
	free(manifest);
	free(config_name);
	free(config);
	free(paths);
	free(diff_ids);
}

/* ---- running and checking ---------------------------------------------------------- */

static int unpack(struct fixture *f, const char *path, char **ret_rootfs, char **ret_msg)
{
	moat_error err = MOAT_ERROR_INIT;
	char *rootfs = NULL;
	int r = moat_image_rootfs(path, f->cache, &rootfs, &err);

	if (r == 0)
		assert_non_null(rootfs);
	else
		assert_non_null(err.msg);
	if (ret_msg != NULL)
		*ret_msg = err.msg ? xstrdup(err.msg) : NULL;
	else if (r < 0)
		print_message("# unexpected error: %s\n", err.msg);
	if (ret_rootfs != NULL)
		*ret_rootfs = rootfs;
	else
		free(rootfs);
	moat_error_clear(&err);
	return r;
}

static void assert_contains(const char *msg, const char *part)
{
	if (msg == NULL || strstr(msg, part) == NULL)
		fail_msg("'%s' does not contain '%s'", msg ? msg : "(null)", part);
}

static char *content(const char *root, const char *rel)
{
	char *path = xasprintf("%s/%s", root, rel);
	char *data = NULL;
	size_t len;
	moat_error err = MOAT_ERROR_INIT;

	if (read_file_at(AT_FDCWD, path, 1 << 20, &data, &len, &err) < 0)
		fail_msg("%s", err.msg);
	free(path);
	return data;
}

static bool exists(const char *root, const char *rel)
{
	char *path = xasprintf("%s/%s", root, rel);
	struct stat st;
	bool r = lstat(path, &st) == 0;

	free(path);
	return r;
}

static struct stat lstat_of(const char *root, const char *rel)
{
	char *path = xasprintf("%s/%s", root, rel);
	struct stat st;

	if (lstat(path, &st) < 0)
		fail_msg("lstat '%s': %s", path, strerror(errno));
	free(path);
	return st;
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* Nothing is left in the cache's tmp/ after a call, whatever it returned. */
static void assert_tmp_empty(struct fixture *f)
{
	char *tmp = xasprintf("%s/tmp", f->cache);
	assert_int_equal(count_entries(tmp), 0);
	free(tmp);
}

/* ---- the base image: two layers ---------------------------------------------------- */

/* Layer 1: files, a symlink, a hard link, a setuid file, owned files, a device node, a FIFO.
 * Layer 2: whites out etc/gone, makes opaque/ opaque, replaces etc/hostname. */
static void base_layers(struct layer l[2], enum comp second)
{
	const struct ent one[] = {
		{ "./", 'd' },
		{ "etc/", 'd' },
		{ "etc/hostname", 'f', "one\n" },
		{ "etc/gone", 'f', "x" },
		{ "opaque/", 'd', NULL, 0750 },
		{ "opaque/old", 'f', "old" },
		{ "bin/", 'd' },
		{ "bin/su", 'f', "#!su", 04755 },
		{ "home/user/file", 'f', "mine", 0600, 1234, 5678 },
		{ "link", 'l', "etc/hostname" },
		{ "hard", 'h', "etc/hostname" },
		{ "dev/", 'd' },
		{ "dev/null", 'c' },
		{ "run/", 'd' },
		{ "run/fifo", 'p' },
	};
	const struct ent two[] = {
		{ "etc/", 'd' },
		{ "etc/.wh.gone", 'f', "" },
		{ "etc/hostname", 'f', "two\n" },
		{ "opaque/", 'd', NULL, 0700 },
		{ "opaque/.wh..wh..opq", 'f', "" },
		{ "opaque/new", 'f', "new" },
	};

	l[0] = make_layer(one, MOAT_ARRAY_SIZE(one), PLAIN);
	l[1] = make_layer(two, MOAT_ARRAY_SIZE(two), second);
}

static void check_base_root(const char *root)
{
	char *s;

	assert_string_equal(s = content(root, "etc/hostname"), "two\n");
	free(s);
	assert_false(exists(root, "etc/gone"));
	assert_false(exists(root, "etc/.wh.gone"));
	assert_false(exists(root, "opaque/old"));
	assert_false(exists(root, "opaque/.wh..wh..opq"));
	assert_string_equal(s = content(root, "opaque/new"), "new");
	free(s);
	assert_int_equal(lstat_of(root, "opaque").st_mode & 07777, 0700);
	/* the hard link keeps the first layer's file */
	assert_string_equal(s = content(root, "hard"), "one\n");
	free(s);
	assert_true(S_ISLNK(lstat_of(root, "link").st_mode));
	assert_int_equal(lstat_of(root, "bin/su").st_mode & 07777, 04755);
	assert_true(S_ISFIFO(lstat_of(root, "run/fifo").st_mode));
	assert_false(exists(root, "dev/null"));
	assert_true(S_ISDIR(lstat_of(root, "dev").st_mode));
	assert_int_equal(lstat_of(root, "etc/hostname").st_mtime, MTIME);
	if (geteuid() == 0) {
		struct stat st = lstat_of(root, "home/user/file");
		assert_int_equal(st.st_uid, 1234);
		assert_int_equal(st.st_gid, 5678);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
}

static void test_oci_layout(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *root = NULL;

	base_layers(l, PLAIN);
	oci_image(&im, l, 2, hex);
	im_write_dir(&im, f->image);
	moat_error err = MOAT_ERROR_INIT;
	assert_int_equal(moat_image_rootfs(f->image, f->cache, &root, &err), 0);
	/* owners are set, or one warning says they could not be */
	if (geteuid() == 0)
		assert_null(err.warn);
	else
		assert_contains(err.warn, "could not be set");
	moat_error_clear(&err);
	char *want = xasprintf("%s/rootfs/sha256/%s", f->cache, hex);
	assert_string_equal(root, want);
	check_base_root(root);
	/* each layer in the cache under its digest, with the files as its tar has them */
	char *diff = xasprintf("%s/layers/sha256/%s/diff", f->cache, l[1].hex);
	assert_true(exists(diff, "etc/.wh.gone"));
	assert_true(exists(diff, "opaque/.wh..wh..opq"));
	assert_tmp_empty(f);
	free(diff);
	free(want);
	free(root);
	free_layers(l, 2);
	im_free(&im);
}

static void test_oci_archive_gzip(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *root = NULL;

	base_layers(l, GZIP); /* the second layer is tar+gzip */
	oci_image(&im, l, 2, hex);
	im_write_tar(&im, f->image, true); /* and the archive is gzip-compressed too */
	assert_int_equal(unpack(f, f->image, &root, NULL), 0);
	assert_non_null(strstr(root, hex));
	check_base_root(root);
	assert_tmp_empty(f);
	free(root);
	free_layers(l, 2);
	im_free(&im);
}

static void test_docker_archive(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *root = NULL;

	base_layers(l, GZIP); /* a gzip layer: its diff_id is the uncompressed tar's digest */
	docker_image(&im, l, 2, hex);
	im_write_tar(&im, f->image, false);
	assert_int_equal(unpack(f, f->image, &root, NULL), 0);
	char *want = xasprintf("%s/rootfs/sha256/%s", f->cache, hex);
	assert_string_equal(root, want);
	check_base_root(root);
	/* Docker layers are cached under their diff_id */
	char *layer = xasprintf("%s/layers/sha256/%s", f->cache, l[1].diff_id);
	assert_true(exists(layer, "diff/opaque/new"));
	assert_tmp_empty(f);
	free(layer);
	free(want);
	free(root);
	free_layers(l, 2);
	im_free(&im);
}

static void test_docker_wrong_diff_id(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *msg = NULL;

	base_layers(l, GZIP);
	moat_sha256_data("other", 5, l[1].diff_id); /* the wrong one */
	docker_image(&im, l, 2, hex);
	im_write_tar(&im, f->image, false);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	assert_contains(msg, "Layers[1] '01abcdef/layer.tar'");
	assert_contains(msg, "not its diff_id");
	assert_tmp_empty(f);
	free(msg);
	free_layers(l, 2);
	im_free(&im);
}

static void test_zstd_layer(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *root = NULL;

	if (archive_libzstd_version() == NULL)
		skip(); /* this libarchive has no zstd, and moat runs no external one */
	base_layers(l, ZSTD);
	oci_image(&im, l, 2, hex);
	im_write_dir(&im, f->image);
	assert_int_equal(unpack(f, f->image, &root, NULL), 0);
	check_base_root(root);
	free(root);
	free_layers(l, 2);
	im_free(&im);
}

/* An archive's own entries are kept inside its temporary directory. */
static void test_archive_entry_outside_refused(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *msg = NULL;

	base_layers(l, PLAIN);
	oci_image(&im, l, 2, hex);
	im_add_str(&im, "../outside", "x");
	im_write_tar(&im, f->image, false);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	assert_contains(msg, "archive: entry '../outside': '..' leaves the root");
	assert_false(exists(f->cache, "outside"));
	assert_tmp_empty(f);
	free(msg);
	free_layers(l, 2);
	im_free(&im);
}

/* The second call finds the root: nothing is unpacked again (the layers removed from the
 * cache stay removed) and the root is the same directory. */
static void test_cache_reuse(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];
	char *root1 = NULL, *root2 = NULL;
	moat_error err = MOAT_ERROR_INIT;

	base_layers(l, PLAIN);
	oci_image(&im, l, 2, hex);
	im_write_tar(&im, f->image, false);
	assert_int_equal(unpack(f, f->image, &root1, NULL), 0);
	struct stat before = lstat_of(root1, ".");
	char *layers = xasprintf("%s/layers/sha256", f->cache);
	assert_int_equal(count_entries(layers), 2);
	for (int i = 0; i < 2; i++) {
		char *p = xasprintf("%s/%s", layers, l[i].hex);
		assert_int_equal(remove_tree_at(AT_FDCWD, p, &err), 0);
		free(p);
	}
	assert_int_equal(unpack(f, f->image, &root2, NULL), 0);
	assert_string_equal(root1, root2);
	struct stat after = lstat_of(root2, ".");
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(count_entries(layers), 0);
	check_base_root(root2);
	assert_tmp_empty(f);
	free(layers);
	free(root1);
	free(root2);
	free_layers(l, 2);
	im_free(&im);
}

/* What a killed unpack left in tmp/ (unlocked) goes; what a live one holds (locked) stays. */
static void test_stale_tmp_swept(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	struct layer l[2];
	char hex[MOAT_SHA256_HEX_SIZE];

	base_layers(l, PLAIN);
	oci_image(&im, l, 2, hex);
	im_write_dir(&im, f->image);
	char *dead = xasprintf("%s/tmp/rootfs-dead/etc", f->cache);
	char *live = xasprintf("%s/tmp/rootfs-live", f->cache);
	moat_error err = MOAT_ERROR_INIT;
	assert_int_equal(mkdir_p(dead, 0700, &err), 0);
	assert_int_equal(mkdir_p(live, 0700, &err), 0);
	int lock = open(live, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(lock >= 0);
	assert_int_equal(flock(lock, LOCK_EX), 0);
	assert_int_equal(unpack(f, f->image, NULL, NULL), 0);
	char *tmp = xasprintf("%s/tmp", f->cache);
	assert_int_equal(count_entries(tmp), 1);
	assert_true(exists(live, "."));
	close(lock);
	free(tmp);
	free(dead);
	free(live);
	free_layers(l, 2);
	im_free(&im);
}

/* ---- hostile layers ------------------------------------------------------------------ */

/* An OCI layout of the layers, unpacked: returns the error message (or NULL on success,
 * *ret_root the root). */
static char *try_layers(struct fixture *f, struct layer *l, size_t n, char **ret_root)
{
	struct image im = { 0 };
	char hex[MOAT_SHA256_HEX_SIZE];
	char *msg = NULL;

	oci_image(&im, l, n, hex);
	im_write_dir(&im, f->image);
	int r = unpack(f, f->image, ret_root, &msg);
	if (r == 0) {
		free(msg);
		msg = NULL;
	}
	assert_tmp_empty(f);
	free_layers(l, n);
	im_free(&im);
	return msg;
}

static void test_dotdot_refused(void **state)
{
	struct fixture *f = *state;
	const struct ent bad[] = { { "ok", 'f', "ok" }, { "../escape", 'f', "out" } };
	struct layer l[1] = { make_layer(bad, 2, PLAIN) };
	char *name = xasprintf("layers[0] sha256:%s: entry '../escape'", l[0].hex);
	char *msg = try_layers(f, l, 1, NULL);

	assert_contains(msg, name);
	assert_contains(msg, "'..' leaves the root");
	/* nothing landed beside the layer's directory, nor beside the cache */
	char *tmp = xasprintf("%s/tmp/escape", f->cache);
	assert_false(exists(tmp, "."));
	assert_false(exists(f->dir, "escape"));
	assert_false(exists(f->cache, "escape"));
	free(tmp);
	free(name);
	free(msg);
}

static void test_absolute_made_relative(void **state)
{
	struct fixture *f = *state;
	const struct ent abs[] = { { "/abs/", 'd' }, { "/abs/file", 'f', "in" } };
	struct layer l[1] = { make_layer(abs, 2, PLAIN) };
	char *root = NULL, *s;

	assert_null(try_layers(f, l, 1, &root));
	assert_string_equal(s = content(root, "abs/file"), "in");
	free(s);
	free(root);
}

/* CVE-2014-6407: the layer below plants evil -> /etc; an entry under evil/ would write into
 * the host's /etc if it were followed. */
static void test_symlink_from_lower_layer_refused(void **state)
{
	struct fixture *f = *state;
	const struct ent one[] = { { "evil", 'l', "/etc" } };
	char *name = xasprintf("evil/%s", f->escape);
	const struct ent two[] = { { name, 'f', "pwned" } };
	struct layer l[2] = { make_layer(one, 1, PLAIN), make_layer(two, 1, PLAIN) };
	char *want = xasprintf("layers[1] sha256:%s: entry '%s': passes through the symlink "
			       "'evil' of a lower layer",
			       l[1].hex, name);
	char *msg = try_layers(f, l, 2, NULL);
	char *host = xasprintf("/etc/%s", f->escape);

	assert_contains(msg, want);
	assert_false(exists(host, "."));
	free(host);
	free(msg);
	free(want);
	free(name);
}

static void test_symlink_in_same_layer_refused(void **state)
{
	struct fixture *f = *state;
	char *name = xasprintf("evil/%s", f->escape);
	const struct ent bad[] = { { "evil", 'l', "/etc" }, { name, 'f', "pwned" } };
	struct layer l[1] = { make_layer(bad, 2, PLAIN) };
	char *want = xasprintf("layers[0] sha256:%s: entry '%s': passes through the symlink 'evil'",
			       l[0].hex, name);
	char *msg = try_layers(f, l, 1, NULL);
	char *host = xasprintf("/etc/%s", f->escape);

	assert_contains(msg, want);
	assert_false(exists(host, "."));
	free(host);
	free(msg);
	free(want);
	free(name);
}

/* A directory entry replaces the lower layer's symlink, as in overlayfs: nothing goes
 * through it. */
static void test_directory_replaces_lower_symlink(void **state)
{
	struct fixture *f = *state;
	const struct ent one[] = { { "evil", 'l', "/etc" } };
	char *name = xasprintf("evil/%s", f->escape);
	const struct ent two[] = { { "evil/", 'd' }, { name, 'f', "inside" } };
	struct layer l[2] = { make_layer(one, 1, PLAIN), make_layer(two, 2, PLAIN) };
	char *root = NULL, *s;
	char *host = xasprintf("/etc/%s", f->escape);

	assert_null(try_layers(f, l, 2, &root));
	assert_true(S_ISDIR(lstat_of(root, "evil").st_mode));
	assert_string_equal(s = content(root, name), "inside");
	assert_false(exists(host, "."));
	free(s);
	free(host);
	free(root);
	free(name);
}

static void test_hardlinks_outside_refused(void **state)
{
	struct fixture *f = *state;
	const struct ent dotdot[] = { { "h", 'h', "../../../../etc/passwd" } };
	const struct ent abs[] = { { "h", 'h', "/etc/passwd" } };
	const struct ent via[] = { { "lnk", 'l', "/etc" }, { "h", 'h', "lnk/passwd" } };
	struct layer l[1];
	char *msg;

	l[0] = make_layer(dotdot, 1, PLAIN);
	msg = try_layers(f, l, 1, NULL);
	assert_contains(msg,
			"entry 'h': hard link to '../../../../etc/passwd': '..' leaves the root");
	free(msg);

	/* absolute: inside the root, where the layer has no etc/passwd */
	l[0] = make_layer(abs, 1, PLAIN);
	msg = try_layers(f, l, 1, NULL);
	assert_contains(msg, "layers[0] sha256:");
	assert_contains(msg,
			"entry 'h': hard link to '/etc/passwd', which is not an earlier entry");
	free(msg);

	l[0] = make_layer(via, 2, PLAIN);
	msg = try_layers(f, l, 1, NULL);
	assert_contains(msg,
			"entry 'h': hard link to 'lnk/passwd': passes through the symlink 'lnk'");
	free(msg);
}

static void test_wrong_digest_refused(void **state)
{
	struct fixture *f = *state;
	const struct ent good[] = { { "file", 'f', "good" } };
	const struct ent evil[] = { { "file", 'f', "evil" } };
	struct layer l = make_layer(good, 1, PLAIN);
	struct layer other = make_layer(evil, 1, PLAIN);
	struct image im = { 0 };
	char hex[MOAT_SHA256_HEX_SIZE];
	char *msg = NULL;

	oci_image(&im, &l, 1, hex);
	/* the blob named by the good digest holds the other bytes (of the same size) */
	for (size_t i = 0; i < im.n; i++) {
		if (strstr(im.f[i].name, l.hex) != NULL) {
			assert_int_equal(im.f[i].len, other.len);
			memcpy(im.f[i].data, other.data, other.len);
		}
	}
	im_write_dir(&im, f->image);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	char *want = xasprintf("layers[0] sha256:%s: 'blobs/sha256/%s' has the digest sha256:%s",
			       l.hex, l.hex, other.hex);
	assert_contains(msg, want);
	/* nothing entered the cache */
	char *layers = xasprintf("%s/layers/sha256", f->cache);
	assert_int_equal(count_entries(layers), 0);
	assert_tmp_empty(f);
	free(layers);
	free(want);
	free(msg);
	free(l.data);
	free(other.data);
	im_free(&im);
}

static void test_bad_digest_field(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	char *msg = NULL;

	oci_index(&im, "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		       "\"digest\":\"sha512:abc\",\"size\":1}");
	im_write_dir(&im, f->image);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	assert_contains(msg, "image '");
	assert_contains(msg, "index.json: manifests[0].digest: 'sha512:abc': only sha256");
	free(msg);
	im_free(&im);
	moat_error ignored = MOAT_ERROR_INIT;
	remove_tree_at(AT_FDCWD, f->image, &ignored);
	moat_error_clear(&ignored);

	/* a field missing: ocijson names its path */
	oci_index(&im, "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\"}");
	im_write_dir(&im, f->image);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	assert_contains(msg, "index.json: manifests[0].digest");
	free(msg);
	im_free(&im);
}

/* ---- platforms ------------------------------------------------------------------------ */

static const char *other_arch(int i)
{
	static const char *const arches[] = { "arm64", "s390x", "ppc64le" };
	/* two architectures that are not the host's */
	int k = 0;
	for (size_t j = 0; j < MOAT_ARRAY_SIZE(arches); j++)
		if (strcmp(arches[j], image_host_arch()) != 0 && k++ == i)
			return arches[j];
	return "riscv64";
}

static void test_multi_platform_index(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	const struct ent a[] = { { "which", 'f', "other" } };
	const struct ent b[] = { { "which", 'f', "host" } };
	struct layer la = make_layer(a, 1, PLAIN), lb = make_layer(b, 1, PLAIN);
	char ha[MOAT_SHA256_HEX_SIZE], hb[MOAT_SHA256_HEX_SIZE];
	size_t sa, sb;
	char *root = NULL, *s;

	oci_manifest(&im, &la, 1, other_arch(0), ha, &sa);
	oci_manifest(&im, &lb, 1, image_host_arch(), hb, &sb);
	char *pa = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\"}", other_arch(0));
	char *pb = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\"}", image_host_arch());
	char *da = descriptor(ha, sa, pa), *db = descriptor(hb, sb, pb);
	char *both = xasprintf("%s,%s", da, db);
	oci_index(&im, both);
	im_write_dir(&im, f->image);
	assert_int_equal(unpack(f, f->image, &root, NULL), 0);
	assert_string_equal(s = content(root, "which"), "host");
	assert_non_null(strstr(root, hb));
	free(s);
	free(root);
	free(both);
	free(da);
	free(db);
	free(pa);
	free(pb);
	free(la.data);
	free(lb.data);
	im_free(&im);
}

static void test_no_platform_for_host(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	const struct ent a[] = { { "which", 'f', "a" } };
	struct layer la = make_layer(a, 1, PLAIN);
	char ha[MOAT_SHA256_HEX_SIZE];
	size_t sa;
	char *msg = NULL;

	oci_manifest(&im, &la, 1, other_arch(0), ha, &sa);
	char *pa = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\",\"variant\":\"v8\"}",
			     other_arch(0));
	char *pb = xasprintf("{\"architecture\":\"%s\",\"os\":\"linux\"}", other_arch(1));
	char *da = descriptor(ha, sa, pa), *db = descriptor(ha, sa, pb);
	char *both = xasprintf("%s,%s", da, db);
	oci_index(&im, both);
	im_write_dir(&im, f->image);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	char *want = xasprintf("index.json: manifests: no image for linux/%s; it holds "
			       "linux/%s/v8, linux/%s",
			       image_host_arch(), other_arch(0), other_arch(1));
	assert_contains(msg, want);
	free(want);
	free(msg);
	free(both);
	free(da);
	free(db);
	free(pa);
	free(pb);
	free(la.data);
	im_free(&im);
}

/* An index entry without a platform is taken, and its config must be for this host. */
static void test_config_architecture_checked(void **state)
{
	struct fixture *f = *state;
	struct image im = { 0 };
	const struct ent a[] = { { "which", 'f', "a" } };
	struct layer la = make_layer(a, 1, PLAIN);
	char ha[MOAT_SHA256_HEX_SIZE];
	size_t sa;
	char *msg = NULL;

	oci_manifest(&im, &la, 1, other_arch(0), ha, &sa);
	char *da = descriptor(ha, sa, NULL);
	oci_index(&im, da);
	im_write_dir(&im, f->image);
	assert_true(unpack(f, f->image, NULL, &msg) < 0);
	char *want =
		xasprintf("architecture '%s': this host runs %s", other_arch(0), image_host_arch());
	assert_contains(msg, "config sha256:");
	assert_contains(msg, want);
	free(want);
	free(msg);
	free(da);
	free(la.data);
	im_free(&im);
}

/* ---- names ------------------------------------------------------------------------------ */

static void test_clean_name(void **state)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "a/b", "a/b" },   { "./a//b/", "a/b" }, { "/etc/x", "etc/x" },
		{ ".", "" },        { "/", "" },          { "./", "" },
		{ "a/./b", "a/b" }, { "...", "..." },     { "..a/b..", "..a/b.." },
	};
	static const char *const bad[] = { "..", "../x", "a/../b", "a/..", "/../etc" };
	moat_error err = MOAT_ERROR_INIT;
	char *out = NULL;

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(ok); i++) {
		assert_int_equal(image_clean_name(ok[i].in, &out, &err), 0);
		assert_string_equal(out, ok[i].out);
		free(out);
	}
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(bad); i++) {
		assert_int_equal(image_clean_name(bad[i], &out, &err), -EINVAL);
		assert_contains(err.msg, "'..' leaves the root");
		moat_error_clear(&err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_name),
		cmocka_unit_test_setup_teardown(test_oci_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oci_archive_gzip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_archive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_wrong_diff_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zstd_layer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_archive_entry_outside_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cache_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_tmp_swept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotdot_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absolute_made_relative, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_from_lower_layer_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlink_in_same_layer_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_directory_replaces_lower_symlink, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hardlinks_outside_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_digest_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_digest_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_platform_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_platform_for_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_architecture_checked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
