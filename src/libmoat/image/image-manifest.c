/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What an image directory says about itself, read into a plan: which layers, in which
 * order, named and checked by which digest, and the root's name.
 *
 * An OCI layout (index.json present, Docker 25's archives included): index.json's manifests
 * (and an index it names, up to IMAGE_MAX_INDEX_DEPTH), the one for linux and the host's
 * architecture, or else the first without a platform; its manifest and config blobs checked
 * against their descriptors; the layers are blobs. A Docker archive (manifest.json): its one
 * image's Config file and Layers paths, the layers named by the config's rootfs.diff_ids.
 * Either way the config's os and architecture, when it has them, must be the host's.
 * The documents are parsed by ocijson tables, so a bad field's error names its JSON path. */
#include "image-internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "ocijson.h"
#include "safe-path.h"
#include "strv.h"

/* ---- the documents ------------------------------------------------------------------ */

struct img_layout {
	char *version;
};
struct img_platform {
	char *architecture, *os, *variant;
};
struct img_descriptor {
	char *media_type, *digest;
	int64_t size;
	bool size_present;
	struct img_platform *platform;
};
struct img_index {
	struct img_descriptor **manifests;
	size_t manifests_len;
};
struct img_manifest {
	char *media_type;
	struct img_descriptor *config;
	struct img_descriptor **layers;
	size_t layers_len;
};
struct img_rootfs {
	char **diff_ids;
	size_t diff_ids_len;
};
struct img_config {
	char *architecture, *os;
	struct img_rootfs *rootfs;
};
struct docker_image {
	char *config;
	char **repo_tags;
	size_t repo_tags_len;
	char **layers;
	size_t layers_len;
};
struct docker_archive {
	struct docker_image **images;
	size_t images_len;
};

#define T struct img_layout
static const struct ocijson_field layout_fields[] = {
	OCIJSON_STR(T, "imageLayoutVersion", version, OCIJSON_REQUIRED),
};
#undef T
static const struct ocijson_type layout_type =
	OCIJSON_TYPE("oci-layout", struct img_layout, layout_fields, NULL);

#define T struct img_platform
static const struct ocijson_field platform_fields[] = {
	OCIJSON_STR(T, "architecture", architecture, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "os", os, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "variant", variant, 0),
};
#undef T
static const struct ocijson_type platform_type =
	OCIJSON_TYPE("platform", struct img_platform, platform_fields, NULL);

#define T struct img_descriptor
static const struct ocijson_field descriptor_fields[] = {
	OCIJSON_STR(T, "mediaType", media_type, 0),
	OCIJSON_STR(T, "digest", digest, OCIJSON_REQUIRED),
	OCIJSON_I64_OPT(T, "size", size),
	OCIJSON_OBJ(T, "platform", platform, struct img_platform, &platform_type, 0),
};
#undef T
static const struct ocijson_type descriptor_type =
	OCIJSON_TYPE("descriptor", struct img_descriptor, descriptor_fields, NULL);

#define T struct img_index
static const struct ocijson_field index_fields[] = {
	OCIJSON_OBJ_ARRAY(T, "manifests", manifests, struct img_descriptor, &descriptor_type,
			  OCIJSON_REQUIRED),
};
#undef T
static const struct ocijson_type index_type =
	OCIJSON_TYPE("index", struct img_index, index_fields, NULL);

#define T struct img_manifest
static const struct ocijson_field manifest_fields[] = {
	OCIJSON_STR(T, "mediaType", media_type, 0),
	OCIJSON_OBJ(T, "config", config, struct img_descriptor, &descriptor_type, OCIJSON_REQUIRED),
	OCIJSON_OBJ_ARRAY(T, "layers", layers, struct img_descriptor, &descriptor_type,
			  OCIJSON_REQUIRED),
};
#undef T
static const struct ocijson_type manifest_type =
	OCIJSON_TYPE("manifest", struct img_manifest, manifest_fields, NULL);

#define T struct img_rootfs
static const struct ocijson_field rootfs_fields[] = {
	OCIJSON_STR_ARRAY(T, "diff_ids", diff_ids, OCIJSON_REQUIRED),
};
#undef T
static const struct ocijson_type rootfs_type =
	OCIJSON_TYPE("rootfs", struct img_rootfs, rootfs_fields, NULL);

#define T struct img_config
static const struct ocijson_field config_fields[] = {
	OCIJSON_STR(T, "architecture", architecture, 0),
	OCIJSON_STR(T, "os", os, 0),
	OCIJSON_OBJ(T, "rootfs", rootfs, struct img_rootfs, &rootfs_type, 0),
};
#undef T
static const struct ocijson_type config_type =
	OCIJSON_TYPE("config", struct img_config, config_fields, NULL);

#define T struct docker_image
static const struct ocijson_field docker_image_fields[] = {
	OCIJSON_STR(T, "Config", config, OCIJSON_REQUIRED),
	OCIJSON_STR_ARRAY(T, "RepoTags", repo_tags, 0),
	OCIJSON_STR_ARRAY(T, "Layers", layers, OCIJSON_REQUIRED),
};
#undef T
static const struct ocijson_type docker_image_type =
	OCIJSON_TYPE("image", struct docker_image, docker_image_fields, NULL);

/* manifest.json is an array, and ocijson parses objects: the array is read as the member ""
 * of an object around it, which makes the JSON paths "[0].Config". */
#define T struct docker_archive
static const struct ocijson_field docker_archive_fields[] = {
	OCIJSON_OBJ_ARRAY(T, "", images, struct docker_image, &docker_image_type, OCIJSON_REQUIRED),
};
#undef T
static const struct ocijson_type docker_archive_type =
	OCIJSON_TYPE("manifest.json", struct docker_archive, docker_archive_fields, NULL);

/* clang-format off */
static const char *const manifest_media_types[] = {
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	NULL,
};
static const char *const index_media_types[] = {
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	NULL,
};
/* the compression of each is found from the bytes, not from the name */
static const char *const layer_media_types[] = {
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	"application/vnd.oci.image.layer.nondistributable.v1.tar",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
	NULL,
};
/* clang-format on */

const char *image_host_arch(void)
{
#if defined(__x86_64__)
	return "amd64";
#elif defined(__aarch64__)
	return "arm64";
#elif defined(__i386__)
	return "386";
#elif defined(__arm__)
	return "arm";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "ppc64le";
#elif defined(__s390x__)
	return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#else
	return "unknown";
#endif
}

void image_plan_free(struct image_plan *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_layers; i++) {
		free(p->layers[i].name);
		free(p->layers[i].path);
	}
	free(p->layers);
	free(p);
}

int image_parse_digest(const char *field, const char *digest, char hex[MOAT_SHA256_HEX_SIZE],
		       moat_error *err)
{
	const char *h = digest + strlen("sha256:");

	if (strncmp(digest, "sha256:", strlen("sha256:")) != 0)
		return moat_error_msg(err, EINVAL, "%s: '%s': only sha256 digests are supported",
				      field, digest);
	if (strlen(h) != 2 * MOAT_SHA256_SIZE || strspn(h, "0123456789abcdef") != strlen(h))
		return moat_error_msg(err, EINVAL, "%s: '%s' is not a sha256 digest", field,
				      digest);
	memcpy(hex, h, MOAT_SHA256_HEX_SIZE);
	return 0;
}

/* ---- reading them ------------------------------------------------------------------- */

/* The file at path inside dirfd (its symlinks resolved inside it), whole, and its digest. */
static int read_file(int dirfd, const char *path, char **ret, size_t *ret_len,
		     char hex[MOAT_SHA256_HEX_SIZE], moat_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_error_ moat_error open_err = MOAT_ERROR_INIT;
	struct stat st;
	int r = moat_safe_open(dirfd, path, O_RDONLY, 0, 0, &fd, &open_err);

	if (r < 0)
		return moat_error_set(err, -r, "open '%s'", path);
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat '%s'", path);
	if (!S_ISREG(st.st_mode))
		return moat_error_msg(err, EINVAL, "'%s' is not a regular file", path);
	if (read_fd_all(fd, path, IMAGE_META_MAX, ret, ret_len, err) < 0)
		return moat_error_ret(err);
	moat_sha256_data(*ret, *ret_len, hex);
	return 0;
}

static int parse(const struct ocijson_type *type, const char *data, size_t len, const char *source,
		 void **ret, moat_error *err)
{
	_cleanup_free_ char *msg = NULL;
	int r = ocijson_parse_data(type, data, len, source, ret, &msg);

	if (r < 0)
		return moat_error_msg(err, -r, "%s", msg ? msg : "out of memory");
	return 0;
}

/* The blob desc names (field: where desc is, for errors), checked against its digest and
 * size, parsed as type; source becomes "<kind> sha256:<hex>" for the blob's own errors. */
static int read_blob(int dirfd, const struct img_descriptor *desc, const char *field,
		     const char *kind, const struct ocijson_type *type, void **ret,
		     char hex[MOAT_SHA256_HEX_SIZE], moat_error *err)
{
	_cleanup_free_ char *data = NULL, *path = NULL, *source = NULL, *digest_field = NULL;
	char actual[MOAT_SHA256_HEX_SIZE];
	size_t len;

	digest_field = xasprintf("%s.digest", field);
	if (image_parse_digest(digest_field, desc->digest, hex, err) < 0)
		return moat_error_ret(err);
	path = xasprintf("blobs/sha256/%s", hex);
	if (read_file(dirfd, path, &data, &len, actual, err) < 0)
		return moat_error_prefix(err, "%s", field);
	if (strcmp(actual, hex) != 0)
		return moat_error_msg(err, EINVAL, "%s: '%s' has the digest sha256:%s, not %s",
				      field, path, actual, desc->digest);
	if (desc->size_present && (uint64_t)desc->size != len)
		return moat_error_msg(err, EINVAL, "%s.size: %lld, but '%s' has %zu bytes", field,
				      (long long)desc->size, path, len);
	source = xasprintf("%s sha256:%s", kind, hex);
	return parse(type, data, len, source, ret, err);
}

static int check_platform(const struct img_config *c, const char *source, const char *arch,
			  moat_error *err)
{
	if (c->os != NULL && strcmp(c->os, "linux") != 0)
		return moat_error_msg(err, EINVAL, "%s: os '%s': only linux images run here",
				      source, c->os);
	if (c->architecture != NULL && strcmp(c->architecture, arch) != 0)
		return moat_error_msg(err, EINVAL, "%s: architecture '%s': this host runs %s",
				      source, c->architecture, arch);
	return 0;
}

/* ---- OCI layouts -------------------------------------------------------------------- */

static bool platform_matches(const struct img_platform *p, const char *arch)
{
	return strcmp(p->os, "linux") == 0 && strcmp(p->architecture, arch) == 0;
}

static bool is_image_ref(const struct img_descriptor *d)
{
	return d->media_type == NULL || ocijson_in_list(d->media_type, manifest_media_types) ||
	       ocijson_in_list(d->media_type, index_media_types);
}

static int no_platform(const struct img_index *idx, const char *source, const char *arch,
		       moat_error *err)
{
	_cleanup_free_ char *seen = xstrdup("");

	for (size_t i = 0; i < idx->manifests_len; i++) {
		const struct img_platform *p = idx->manifests[i]->platform;
		if (!is_image_ref(idx->manifests[i]) || p == NULL)
			continue;
		char *more =
			xasprintf("%s%s%s/%s%s%s", seen, *seen ? ", " : "", p->os, p->architecture,
				  p->variant ? "/" : "", p->variant ? p->variant : "");
		free(seen);
		seen = more;
	}
	if (*seen == '\0')
		return moat_error_msg(err, ENOENT, "%s: manifests: no image manifest", source);
	return moat_error_msg(err, ENOENT, "%s: manifests: no image for linux/%s; it holds %s",
			      source, arch, seen);
}

/* The entry of idx to use: the first for linux/arch, else the first without a platform. */
static int choose(const struct img_index *idx, const char *source, const char *arch, size_t *ret,
		  moat_error *err)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < idx->manifests_len; i++) {
			const struct img_descriptor *d = idx->manifests[i];
			if (!is_image_ref(d))
				continue;
			if (pass == 0 ? d->platform != NULL && platform_matches(d->platform, arch)
				      : d->platform == NULL) {
				*ret = i;
				return 0;
			}
		}
	}
	return no_platform(idx, source, arch, err);
}

static void free_index(struct img_index **p)
{
	ocijson_free(&index_type, *p);
}
static void free_manifest(struct img_manifest **p)
{
	ocijson_free(&manifest_type, *p);
}
static void free_config(struct img_config **p)
{
	ocijson_free(&config_type, *p);
}

/* Follow index.json (and the indexes it names) to the image manifest for arch. */
static int find_manifest(int dirfd, const char *data, size_t len, const char *arch,
			 struct img_manifest **ret, char hex[MOAT_SHA256_HEX_SIZE], moat_error *err)
{
	_cleanup_(free_index) struct img_index *idx = NULL;
	_cleanup_free_ char *source = xstrdup("index.json");

	if (parse(&index_type, data, len, source, (void **)&idx, err) < 0)
		return moat_error_ret(err);
	for (int depth = 0; depth <= IMAGE_MAX_INDEX_DEPTH; depth++) {
		_cleanup_free_ char *field = NULL;
		struct img_index *next = NULL;
		size_t i = 0;

		if (choose(idx, source, arch, &i, err) < 0)
			return moat_error_ret(err);
		field = xasprintf("%s: manifests[%zu]", source, i);
		const struct img_descriptor *d = idx->manifests[i];
		if (d->media_type == NULL || !ocijson_in_list(d->media_type, index_media_types))
			return read_blob(dirfd, d, field, "manifest", &manifest_type, (void **)ret,
					 hex, err);
		if (read_blob(dirfd, d, field, "index", &index_type, (void **)&next, hex, err) < 0)
			return moat_error_ret(err);
		free_index(&idx);
		idx = next;
		free(source);
		source = xasprintf("index sha256:%s", hex);
	}
	return moat_error_msg(err, ELOOP, "%s: indexes nested deeper than %d", source,
			      IMAGE_MAX_INDEX_DEPTH);
}

static int check_layout_version(int dirfd, moat_error *err)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_error_ moat_error read_err = MOAT_ERROR_INIT;
	struct img_layout *layout = NULL;
	char hex[MOAT_SHA256_HEX_SIZE];
	size_t len;

	/* optional: Docker's archives and some tools leave it out */
	if (read_file(dirfd, "oci-layout", &data, &len, hex, &read_err) < 0)
		return read_err.code == ENOENT
			       ? 0
			       : moat_error_msg(err, read_err.code, "%s", read_err.msg);
	if (parse(&layout_type, data, len, "oci-layout", (void **)&layout, err) < 0)
		return moat_error_ret(err);
	bool ok = strncmp(layout->version, "1.", 2) == 0;
	int r = ok ? 0
		   : moat_error_msg(err, EINVAL,
				    "oci-layout: imageLayoutVersion '%s': only 1.x is known",
				    layout->version);
	ocijson_free(&layout_type, layout);
	return r;
}

static int oci_layers(const struct img_manifest *m, const char *source, struct image_plan *plan,
		      moat_error *err)
{
	if (m->layers_len > IMAGE_MAX_LAYERS)
		return moat_error_msg(err, E2BIG, "%s: layers: %zu, more than %d", source,
				      m->layers_len, IMAGE_MAX_LAYERS);
	plan->layers = xcalloc(m->layers_len, sizeof(*plan->layers));
	for (size_t i = 0; i < m->layers_len; i++) {
		const struct img_descriptor *d = m->layers[i];
		struct image_layer *l = &plan->layers[i];
		_cleanup_free_ char *field = xasprintf("%s: layers[%zu].digest", source, i);

		if (d->media_type != NULL && !ocijson_in_list(d->media_type, layer_media_types))
			return moat_error_msg(err, EINVAL,
					      "%s: layers[%zu].mediaType: '%s' is not a layer moat "
					      "unpacks",
					      source, i, d->media_type);
		if (image_parse_digest(field, d->digest, l->hex, err) < 0)
			return moat_error_ret(err);
		plan->n_layers++;
		l->name = xasprintf("layers[%zu] sha256:%s", i, l->hex);
		l->path = xasprintf("blobs/sha256/%s", l->hex);
		l->verify = IMAGE_VERIFY_BLOB;
		l->size = d->size_present ? d->size : -1;
	}
	return 0;
}

static int read_oci(int dirfd, const char *index, size_t len, const char *arch,
		    struct image_plan *plan, moat_error *err)
{
	_cleanup_(free_manifest) struct img_manifest *m = NULL;
	_cleanup_(free_config) struct img_config *config = NULL;
	_cleanup_free_ char *source = NULL, *config_source = NULL;
	char config_hex[MOAT_SHA256_HEX_SIZE];

	if (check_layout_version(dirfd, err) < 0 ||
	    find_manifest(dirfd, index, len, arch, &m, plan->key, err) < 0)
		return moat_error_ret(err);
	source = xasprintf("manifest sha256:%s", plan->key);
	if (m->media_type != NULL && !ocijson_in_list(m->media_type, manifest_media_types))
		return moat_error_msg(err, EINVAL, "%s: mediaType '%s' is not an image manifest",
				      source, m->media_type);
	_cleanup_free_ char *field = xasprintf("%s: config", source);
	if (read_blob(dirfd, m->config, field, "config", &config_type, (void **)&config, config_hex,
		      err) < 0)
		return moat_error_ret(err);
	config_source = xasprintf("config sha256:%s", config_hex);
	if (check_platform(config, config_source, arch, err) < 0)
		return moat_error_ret(err);
	return oci_layers(m, source, plan, err);
}

/* ---- Docker archives ---------------------------------------------------------------- */

static int read_docker_manifest(int dirfd, struct docker_archive **ret, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *wrapped = NULL;
	char hex[MOAT_SHA256_HEX_SIZE];
	size_t len;

	if (read_file(dirfd, "manifest.json", &data, &len, hex, err) < 0)
		return moat_error_ret(err);
	wrapped = xmalloc(len + 6);
	memcpy(wrapped, "{\"\":", 4);
	memcpy(wrapped + 4, data, len);
	memcpy(wrapped + 4 + len, "}", 2);
	if (parse(&docker_archive_type, wrapped, len + 5, "manifest.json", (void **)ret, err) < 0)
		return moat_error_ret(err);
	if ((*ret)->images_len == 1)
		return 0;
	size_t n = (*ret)->images_len;
	ocijson_free(&docker_archive_type, *ret);
	*ret = NULL;
	return moat_error_msg(err, EINVAL,
			      "manifest.json: %zu images; moat takes an archive of one", n);
}

/* The config's digest, checked against its file name when that is one ("<hex>.json",
 * "blobs/sha256/<hex>"). */
static int check_config_name(const char *path, const char *hex, moat_error *err)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strspn(base, "0123456789abcdef");

	if (n != 2 * MOAT_SHA256_SIZE || (base[n] != '\0' && strcmp(base + n, ".json") != 0))
		return 0;
	if (strncmp(base, hex, n) != 0)
		return moat_error_msg(err, EINVAL,
				      "manifest.json: [0].Config: '%s' has the digest sha256:%s",
				      path, hex);
	return 0;
}

static int docker_layers(const struct docker_image *img, const struct img_config *config,
			 const char *source, struct image_plan *plan, moat_error *err)
{
	if (config->rootfs == NULL)
		return moat_error_msg(err, EINVAL, "%s: rootfs: required field missing", source);
	if (config->rootfs->diff_ids_len != img->layers_len)
		return moat_error_msg(err, EINVAL,
				      "%s: rootfs.diff_ids: %zu digests for the %zu Layers of "
				      "manifest.json",
				      source, config->rootfs->diff_ids_len, img->layers_len);
	if (img->layers_len > IMAGE_MAX_LAYERS)
		return moat_error_msg(err, E2BIG, "manifest.json: [0].Layers: %zu, more than %d",
				      img->layers_len, IMAGE_MAX_LAYERS);
	plan->layers = xcalloc(img->layers_len, sizeof(*plan->layers));
	for (size_t i = 0; i < img->layers_len; i++) {
		struct image_layer *l = &plan->layers[i];
		_cleanup_free_ char *field = xasprintf("%s: rootfs.diff_ids[%zu]", source, i);

		if (image_parse_digest(field, config->rootfs->diff_ids[i], l->hex, err) < 0)
			return moat_error_ret(err);
		plan->n_layers++;
		l->name = xasprintf("Layers[%zu] '%s'", i, img->layers[i]);
		l->path = xstrdup(img->layers[i]);
		l->verify = IMAGE_VERIFY_DIFF_ID;
		l->size = -1;
	}
	return 0;
}

static int read_docker(int dirfd, const char *arch, struct image_plan *plan, moat_error *err)
{
	struct docker_archive *archive = NULL;
	_cleanup_(free_config) struct img_config *config = NULL;
	_cleanup_free_ char *data = NULL, *source = NULL;
	size_t len;
	int r;

	if (read_docker_manifest(dirfd, &archive, err) < 0)
		return moat_error_ret(err);
	const struct docker_image *img = archive->images[0];
	source = xasprintf("config '%s'", img->config);
	r = read_file(dirfd, img->config, &data, &len, plan->key, err);
	if (r < 0)
		moat_error_prefix(err, "manifest.json: [0].Config");
	if (r == 0)
		r = check_config_name(img->config, plan->key, err);
	if (r == 0)
		r = parse(&config_type, data, len, source, (void **)&config, err);
	if (r == 0)
		r = check_platform(config, source, arch, err);
	if (r == 0)
		r = docker_layers(img, config, source, plan, err);
	ocijson_free(&docker_archive_type, archive);
	return r < 0 ? moat_error_ret(err) : 0;
}

int image_read_plan(int dirfd, const char *arch, struct image_plan **ret, moat_error *err)
{
	_cleanup_(image_plan_freep) struct image_plan *plan = xcalloc(1, sizeof(*plan));
	_cleanup_free_ char *index = NULL;
	_cleanup_error_ moat_error index_err = MOAT_ERROR_INIT;
	char hex[MOAT_SHA256_HEX_SIZE];
	size_t len;
	int r;

	if (read_file(dirfd, "index.json", &index, &len, hex, &index_err) == 0)
		r = read_oci(dirfd, index, len, arch, plan, err);
	else if (index_err.code != ENOENT)
		r = moat_error_msg(err, index_err.code, "%s", index_err.msg);
	else if (faccessat(dirfd, "manifest.json", F_OK, 0) == 0)
		r = read_docker(dirfd, arch, plan, err);
	else
		r = moat_error_msg(err, ENOENT,
				   "neither index.json (an OCI layout) nor manifest.json (a Docker "
				   "archive)");
	if (r < 0)
		return moat_error_ret(err);
	*ret = TAKE_PTR(plan);
	return 0;
}
