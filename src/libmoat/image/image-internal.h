/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The image module's seam: what its files share, not part of the API (image.h is).
 *
 *   image.c           moat_image_rootfs: the phases, each layer into the cache, the root
 *   image-cache.c     the cache's directories, temporary directories and their locks, renames
 *   image-source.c    the image as a directory: path itself, or its archive unpacked
 *   image-manifest.c  index.json, manifests, configs, manifest.json: which layers, which digests
 *   image-unpack.c    one tar stream into a directory, every name kept inside it
 *   image-merge.c     one unpacked layer onto a root, whiteouts honoured
 */
#ifndef MOAT_IMAGE_INTERNAL_H
#define MOAT_IMAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sha256.h"
#include "utils.h"

/* Limits on what an image may ask of us, each with its reason. */
#define IMAGE_MAX_LAYERS 1000   /* far above what any builder makes (Docker stops near 127) */
#define IMAGE_MAX_INDEX_DEPTH 4 /* an index naming an index naming a manifest is already rare */
#define IMAGE_MAX_DEPTH \
	256 /* components of an entry's name; the merge holds two fds per
				   level, so this bounds the fds it needs */
#define IMAGE_META_MAX \
	((size_t)4 << 20) /* a JSON document (ocijson's own bound); the first
					    pass over an archive takes only files up to this */

/* ---- image-cache.c ------------------------------------------------------------------ */

struct image_cache {
	char *path;
	int fd;     /* cache_dir */
	int layers; /* layers/sha256 */
	int roots;  /* rootfs/sha256 */
	int tmp;    /* tmp */
};
#define IMAGE_CACHE_INIT             \
	{                            \
		NULL, -1, -1, -1, -1 \
	}

/* A directory under tmp/, locked (flock) for as long as fd is open so that a sweep can tell it
 * from one whose maker died. */
struct image_tmp {
	char *name; /* NULL once removed or published */
	int fd;     /* the directory, O_RDONLY */
};
#define IMAGE_TMP_INIT   \
	{                \
		NULL, -1 \
	}

/* Make cache_dir and its directories when missing (0700), open them, and remove what killed
 * unpacks left in tmp/. */
int image_cache_open(const char *cache_dir, struct image_cache *c, moat_error *err);
void image_cache_close(struct image_cache *c);

/* A new locked directory tmp/<prefix>-<random>. */
int image_tmp_make(struct image_cache *c, const char *prefix, struct image_tmp *ret,
		   moat_error *err);
/* Rename t to destfd/name unless that exists already (a concurrent unpack made it: the same
 * content, so ours is removed). Either way t is spent. */
int image_tmp_publish(struct image_cache *c, struct image_tmp *t, int destfd, const char *name,
		      moat_error *err);
/* Remove t if it is still there; for cleanup paths (errors are dropped). */
void image_tmp_remove(struct image_cache *c, struct image_tmp *t);

/* ---- image-source.c ----------------------------------------------------------------- */

struct image_source {
	int dirfd;            /* the image's files */
	int archive_fd;       /* the archive, when path is one; -1 for a directory */
	struct image_tmp tmp; /* where the archive is unpacked */
	bool partial;         /* the archive's files over IMAGE_META_MAX are not unpacked yet */
};

/* path as a directory: itself, or its archive's small files (the manifests and configs)
 * unpacked under the cache's tmp/. */
int image_source_open(struct image_cache *c, const char *path, struct image_source **ret,
		      moat_error *err);
/* Unpack the rest of an archive (nothing for a directory). */
int image_source_complete(struct image_source *src, moat_error *err);
/* Removes the archive's temporary directory; accepts NULL. */
void image_source_free(struct image_cache *c, struct image_source *src);

/* ---- image-manifest.c --------------------------------------------------------------- */

enum image_verify {
	IMAGE_VERIFY_BLOB,    /* the digest of the bytes as stored (an OCI blob), and its size */
	IMAGE_VERIFY_DIFF_ID, /* the digest of the uncompressed tar (Docker's rootfs.diff_ids) */
};

struct image_layer {
	char *name; /* for errors: "layers[1] sha256:<hex>", "Layers[1] 'abc/layer.tar'" */
	char *path; /* of the blob, inside the image's directory */
	char hex[MOAT_SHA256_HEX_SIZE]; /* its name in the layer cache */
	enum image_verify verify;
	int64_t size; /* the descriptor's size, -1 when unknown */
};

struct image_plan {
	char key[MOAT_SHA256_HEX_SIZE]; /* the root's name: the manifest's or the config's digest */
	struct image_layer *layers;
	size_t n_layers;
};

/* The OCI layout or Docker archive in dirfd, for linux/arch. */
int image_read_plan(int dirfd, const char *arch, struct image_plan **ret, moat_error *err);
void image_plan_free(struct image_plan *p);
MOAT_DEFINE_CLEANUP(struct image_plan, image_plan_free)

/* The GOARCH-style name of the architecture moat was built for ("amd64", "arm64", ...). */
const char *image_host_arch(void);

/* "sha256:<64 lowercase hex>" into hex; field names what holds it, for the error. */
int image_parse_digest(const char *field, const char *digest, char hex[MOAT_SHA256_HEX_SIZE],
		       moat_error *err);

/* ---- image-unpack.c ----------------------------------------------------------------- */

struct image_unpack {
	/* in */
	const char *what;      /* "layers[1] sha256:<hex>", "archive": begins every error */
	bool layer;            /* an image layer: owners kept, implicit directories listed */
	int64_t max_file_size; /* regular files over this are skipped (and counted), -1: none */
	/* out */
	char hex[MOAT_SHA256_HEX_SIZE]; /* the digest of the bytes read from fd (layers only) */
	uint64_t size;                  /* how many there were */
	bool compressed;                /* a decompression filter was in the way */
	size_t skipped;                 /* entries left out for max_file_size */
	size_t owners_lost;             /* files whose owner could not be set */
	char **implicit;                /* NULL-terminated: the directories made for parents
					   and never named by an entry (layers only) */
	size_t n_implicit;
};

/* "./a//b/" is "a/b", "/etc/x" is "etc/x", "." and "/" are "" (the root itself); a ".."
 * component or more than IMAGE_MAX_DEPTH components fail (-EINVAL, "'..' leaves the root"
 * or "nested too deep": the caller adds the entry). */
int image_clean_name(const char *name, char **ret, moat_error *err);

/* Unpack the tar stream read from fd (to its end: the digest covers every byte) into dirfd. */
int image_unpack_fd(int fd, int dirfd, struct image_unpack *u, moat_error *err);
/* The digest of the uncompressed stream read from fd (from its start). */
int image_tar_digest(int fd, char hex[MOAT_SHA256_HEX_SIZE], moat_error *err);
void image_unpack_release(struct image_unpack *u);

/* ---- image-merge.c ------------------------------------------------------------------ */

/* Apply the unpacked layer in layerfd (its diff/) onto the root in rootfd. implicit is the
 * layer's implicit directories, sorted (strcmp) and NULL-terminated; *owners_lost counts
 * the files whose owner could not be set. */
int image_merge_layer(int rootfd, int layerfd, const char *what, char **implicit, size_t n_implicit,
		      size_t *owners_lost, moat_error *err);

#endif
