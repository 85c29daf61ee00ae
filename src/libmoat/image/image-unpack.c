/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One tar stream into a directory, with libarchive reading and nothing else writing: every
 * entry is made by an *at call on the fd of its parent, reached from the top one component at
 * a time with O_NOFOLLOW, so no name is resolved through a symlink and none leaves the
 * directory (libarchive's own extraction resolves paths as strings, which is what this
 * avoids).
 *
 * A layer's bytes are read through a callback that hashes them, so the digest is of exactly
 * what was unpacked; the rest of the fd (what follows the end-of-archive blocks) is hashed
 * too. An image archive's are not hashed: its blobs are checked one by one.
 * Directories are made 0700 and get their own mode, owner and time only at the end, after
 * their entries (a read-only directory would refuse them, and each entry changes the time).
 */
#include "image-internal.h"

#include <fcntl.h>
#include <limits.h>
#include <search.h>
#include <string.h>
#include <sys/stat.h>

#include "archive-lib.h"
#include "strv.h"

#define READ_BUF_SIZE (128 * 1024)

struct reader {
	int fd;
	bool hash; /* a layer's bytes are hashed; an archive's need not be */
	struct moat_sha256 sha;
	uint64_t total;
	uint8_t *buf;
};

/* A directory's metadata, applied once every entry is in. */
struct dir_meta {
	char *path; /* "" for the top */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec mtime;
	bool has_mtime;
	bool implicit; /* made for an entry's parent, not named (yet) */
};

struct unpack {
	struct image_unpack *u;
	struct archive *a;
	int rootfd;
	const char *name; /* the entry's name as the tar has it, for errors */
	struct dir_meta **dirs;
	size_t n_dirs;
	void *by_path; /* tsearch tree of dirs, keyed by path */
};

static la_ssize_t reader_read(struct archive *a, void *data, const void **ret_buf)
{
	struct reader *r = data;

	for (;;) {
		ssize_t n = read(r->fd, r->buf, READ_BUF_SIZE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sym_archive_set_error(a, errno, "read: %s", strerror(errno));
			return -1;
		}
		if (r->hash)
			moat_sha256_update(&r->sha, r->buf, (size_t)n);
		r->total += (uint64_t)n;
		*ret_buf = r->buf;
		return n;
	}
}

/* Hash what libarchive left unread: padding after the end-of-archive blocks. */
static int reader_drain(struct reader *r, const char *what, moat_error *err)
{
	for (;;) {
		ssize_t n = read(r->fd, r->buf, READ_BUF_SIZE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "%s: read", what);
		if (n == 0)
			return 0;
		if (r->hash)
			moat_sha256_update(&r->sha, r->buf, (size_t)n);
		r->total += (uint64_t)n;
	}
}

/* A reader of tar (or an empty stream; with raw, of the stream as it is) behind gzip or zstd,
 * only when libarchive has them built in: without the library it would run the external
 * program instead. Into *ret; libarchive is loaded first. */
static int new_reader(bool raw, struct archive **ret, moat_error *err)
{
	struct archive *a;

	if (image_archive_load(err) < 0)
		return moat_error_ret(err);
	a = sym_archive_read_new();
	if (a == NULL)
		abort();
	if (raw) {
		sym_archive_read_support_format_raw(a);
	} else {
		sym_archive_read_support_format_tar(a);
		sym_archive_read_support_format_empty(a);
	}
	if (sym_archive_zlib_version() != NULL)
		sym_archive_read_support_filter_gzip(a);
	if (sym_archive_libzstd_version() != NULL)
		sym_archive_read_support_filter_zstd(a);
	*ret = a;
	return 0;
}

static void free_reader(struct archive **a)
{
	if (*a != NULL)
		sym_archive_read_free(*a);
}

int image_clean_name(const char *name, char **ret, moat_error *err)
{
	_cleanup_free_ char *out = xmalloc(strlen(name) + 1);
	size_t len = 0, depth = 0;
	const char *p = name;

	if (strlen(name) >= PATH_MAX)
		return moat_error_msg(err, ENAMETOOLONG, "name longer than %d bytes", PATH_MAX - 1);
	while (*p != '\0') {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return moat_error_msg(err, EINVAL, "'..' leaves the root");
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (++depth > IMAGE_MAX_DEPTH)
				return moat_error_msg(err, EINVAL, "nested deeper than %d",
						      IMAGE_MAX_DEPTH);
			if (len > 0)
				out[len++] = '/';
			memcpy(out + len, p, n);
			len += n;
		}
		p += n;
		p += strspn(p, "/");
	}
	out[len] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

static int cmp_meta(const void *a, const void *b)
{
	return strcmp(((const struct dir_meta *)a)->path, ((const struct dir_meta *)b)->path);
}

/* The record of the directory at path, made (implicit, 0755) when it has none yet. */
static struct dir_meta *dir_record(struct unpack *x, const char *path)
{
	struct dir_meta key = { .path = (char *)path };
	void *found = tfind(&key, &x->by_path, cmp_meta);

	if (found != NULL)
		return *(struct dir_meta **)found;
	struct dir_meta *m = xcalloc(1, sizeof(*m));
	m->path = xstrdup(path);
	m->mode = 0755;
	m->uid = 0;
	m->gid = 0;
	m->implicit = true;
	x->dirs = xrealloc(x->dirs, (x->n_dirs + 1) * sizeof(*x->dirs));
	x->dirs[x->n_dirs++] = m;
	if (tsearch(m, &x->by_path, cmp_meta) == NULL)
		abort();
	return m;
}

static int entry_fail(struct unpack *x, moat_error *err)
{
	return moat_error_prefix(err, "%s: entry '%s'", x->u->what, x->name);
}

/* Open the directory rel names (every component, or all but the last when parent_only),
 * from the top, one O_NOFOLLOW step at a time. With create, missing directories are made
 * (and recorded as implicit). A component that is a symlink or not a directory fails. */
static int walk(struct unpack *x, const char *rel, bool parent_only, bool create, int *ret_fd,
		moat_error *err)
{
	_cleanup_free_ char *path = xstrdup(rel);
	_cleanup_close_ int fd = openat(x->rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *comp = path;

	if (fd < 0)
		return moat_error_set(err, errno, "open the top");
	while (*comp != '\0') {
		char *slash = strchr(comp, '/');
		struct stat st;
		if (slash == NULL && parent_only)
			break;
		if (slash != NULL)
			*slash = '\0';
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT || !create)
				return moat_error_set(err, errno, "'%s'", path);
			if (mkdirat(fd, comp, 0700) < 0)
				return moat_error_set(err, errno, "mkdir '%s'", path);
			dir_record(x, path);
		} else if (S_ISLNK(st.st_mode)) {
			return moat_error_msg(err, ELOOP, "passes through the symlink '%s'", path);
		} else if (!S_ISDIR(st.st_mode)) {
			return moat_error_msg(err, ENOTDIR, "'%s' is not a directory", path);
		}
		int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return moat_error_set(err, errno, "open '%s'", path);
		close(fd);
		fd = next;
		if (slash == NULL)
			break;
		*slash = '/';
		comp = slash + 1;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static const char *last_component(const char *rel)
{
	const char *slash = strrchr(rel, '/');
	return slash != NULL ? slash + 1 : rel;
}

/* Make room for a new entry at parent/name: nothing is kept, except a directory when the
 * entry is a directory too (tar's rule: a later entry replaces an earlier one). *ret_is_dir
 * says the directory stays. */
static int clear_place(int parent, const char *name, bool keep_dir, bool *ret_is_dir,
		       moat_error *err)
{
	struct stat st;

	*ret_is_dir = false;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : moat_error_set(err, errno, "stat");
	if (S_ISDIR(st.st_mode) && keep_dir) {
		*ret_is_dir = true;
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return remove_tree_at(parent, name, err);
	if (unlinkat(parent, name, 0) < 0)
		return moat_error_set(err, errno, "replace");
	return 0;
}

/* Set the owner (layers only) and then the mode: chown clears setuid bits. */
static void set_owner(struct unpack *x, int fd, const char *name, uid_t uid, gid_t gid)
{
	if (!x->u->layer)
		return;
	int r = name != NULL ? fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW)
			     : fchown(fd, uid, gid);
	if (r < 0)
		x->u->owners_lost++;
}

static void set_mtime(int fd, const char *name, struct archive_entry *e)
{
	if (!sym_archive_entry_mtime_is_set(e))
		return;
	struct timespec ts[2] = {
		{ .tv_sec = sym_archive_entry_mtime(e),
		  .tv_nsec = sym_archive_entry_mtime_nsec(e) },
	};
	ts[1] = ts[0];
	if (name != NULL)
		utimensat(fd, name, ts, AT_SYMLINK_NOFOLLOW);
	else
		futimens(fd, ts);
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int write_data(struct unpack *x, int fd, struct archive_entry *e, moat_error *err)
{
	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = sym_archive_read_data_block(x->a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return moat_error_msg(err, EIO, "read: %s", sym_archive_error_string(x->a));
		r = pwrite_all(fd, buf, len, (off_t)off);
		if (r < 0)
			return moat_error_set(err, -r, "write");
	}
	/* a sparse file's last hole */
	if (ftruncate(fd, (off_t)sym_archive_entry_size(e)) < 0)
		return moat_error_set(err, errno, "write");
	return 0;
}

static int make_file(struct unpack *x, int parent, const char *name, struct archive_entry *e,
		     moat_error *err)
{
	_cleanup_close_ int fd = -1;

	fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return moat_error_set(err, errno, "create");
	if (write_data(x, fd, e, err) < 0)
		return moat_error_ret(err);
	set_owner(x, fd, NULL, sym_archive_entry_uid(e), sym_archive_entry_gid(e));
	if (fchmod(fd, x->u->layer ? sym_archive_entry_perm(e) : 0600) < 0)
		return moat_error_set(err, errno, "chmod");
	set_mtime(fd, NULL, e);
	return 0;
}

static int make_symlink(struct unpack *x, int parent, const char *name, struct archive_entry *e,
			moat_error *err)
{
	const char *target = sym_archive_entry_symlink(e);

	if (target == NULL || *target == '\0')
		return moat_error_msg(err, EINVAL, "symlink without a target");
	if (symlinkat(target, parent, name) < 0)
		return moat_error_set(err, errno, "symlink");
	set_owner(x, parent, name, sym_archive_entry_uid(e), sym_archive_entry_gid(e));
	set_mtime(parent, name, e);
	return 0;
}

static int make_fifo(struct unpack *x, int parent, const char *name, struct archive_entry *e,
		     moat_error *err)
{
	if (mknodat(parent, name, S_IFIFO | 0600, 0) < 0)
		return moat_error_set(err, errno, "mkfifo");
	set_owner(x, parent, name, sym_archive_entry_uid(e), sym_archive_entry_gid(e));
	if (fchmodat(parent, name, sym_archive_entry_perm(e), 0) < 0)
		return moat_error_set(err, errno, "chmod");
	set_mtime(parent, name, e);
	return 0;
}

/* A hard link to target, an entry of this stream: inside the top, no symlink on the way, not a
 * directory. */
static int make_hardlink(struct unpack *x, int parent, const char *name, const char *target,
			 moat_error *err)
{
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int tparent = -1;
	struct stat st;

	if (image_clean_name(target, &rel, err) < 0)
		return moat_error_prefix(err, "hard link to '%s'", target);
	if (*rel == '\0')
		return moat_error_msg(err, EINVAL, "hard link to the top directory");
	int r = walk(x, rel, true, false, &tparent, err);
	if (r == 0 && fstatat(tparent, last_component(rel), &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = moat_error_set(err, errno, "stat");
	if (r == -ENOENT)
		return moat_error_msg(err, ENOENT,
				      "hard link to '%s', which is not an earlier entry", target);
	if (r < 0)
		return moat_error_prefix(err, "hard link to '%s'", target);
	if (S_ISDIR(st.st_mode))
		return moat_error_msg(err, EISDIR, "hard link to the directory '%s'", target);
	if (linkat(tparent, last_component(rel), parent, name, 0) < 0)
		return moat_error_set(err, errno, "hard link to '%s'", target);
	return 0;
}

static int make_dir(struct unpack *x, int parent, const char *rel, bool exists,
		    struct archive_entry *e, moat_error *err)
{
	if (!exists && mkdirat(parent, last_component(rel), 0700) < 0)
		return moat_error_set(err, errno, "mkdir");
	struct dir_meta *m = dir_record(x, rel);
	m->implicit = false;
	m->mode = x->u->layer ? sym_archive_entry_perm(e) : 0700;
	m->uid = sym_archive_entry_uid(e);
	m->gid = sym_archive_entry_gid(e);
	m->has_mtime = sym_archive_entry_mtime_is_set(e);
	m->mtime.tv_sec = sym_archive_entry_mtime(e);
	m->mtime.tv_nsec = sym_archive_entry_mtime_nsec(e);
	return 0;
}

/* The entry at rel (not the top), of any type but directory-at-the-top. */
static int place_entry(struct unpack *x, const char *rel, struct archive_entry *e, moat_error *err)
{
	_cleanup_close_ int parent = -1;
	const char *name = last_component(rel);
	const char *hardlink = sym_archive_entry_hardlink(e);
	mode_t type = sym_archive_entry_filetype(e);
	bool is_dir = false;

	if (hardlink == NULL && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK &&
	    type != AE_IFIFO)
		return 0; /* device nodes and sockets are skipped */
	if (hardlink != NULL && x->u->max_file_size >= 0) {
		x->u->skipped++; /* its target may be one of the files left out */
		return 0;
	}
	if (hardlink == NULL && type == AE_IFREG && x->u->max_file_size >= 0 &&
	    sym_archive_entry_size(e) > x->u->max_file_size) {
		x->u->skipped++;
		return 0;
	}
	if (walk(x, rel, true, true, &parent, err) < 0 ||
	    clear_place(parent, name, hardlink == NULL && type == AE_IFDIR, &is_dir, err) < 0)
		return moat_error_ret(err);
	if (hardlink != NULL)
		return make_hardlink(x, parent, name, hardlink, err);
	switch (type) {
	case AE_IFDIR: return make_dir(x, parent, rel, is_dir, e, err);
	case AE_IFLNK: return make_symlink(x, parent, name, e, err);
	case AE_IFIFO: return make_fifo(x, parent, name, e, err);
	default: return make_file(x, parent, name, e, err);
	}
}

static int unpack_entry(struct unpack *x, struct archive_entry *e, moat_error *err)
{
	_cleanup_free_ char *rel = NULL;

	x->name = sym_archive_entry_pathname(e);
	if (x->name == NULL)
		x->name = sym_archive_entry_pathname_utf8(e);
	if (x->name == NULL)
		return moat_error_msg(err, EINVAL, "%s: an entry without a name", x->u->what);
	if (image_clean_name(x->name, &rel, err) < 0)
		return entry_fail(x, err);
	if (*rel == '\0') {
		/* the top itself ("./"): only its metadata */
		if (sym_archive_entry_filetype(e) != AE_IFDIR ||
		    sym_archive_entry_hardlink(e) != NULL)
			return moat_error_msg(err, EINVAL,
					      "%s: entry '%s': the top is not a directory",
					      x->u->what, x->name);
		return make_dir(x, x->rootfd, "", true, e, err);
	}
	if (place_entry(x, rel, e, err) < 0)
		return entry_fail(x, err);
	return 0;
}

/* Every directory's metadata, the deepest first: a directory is recorded when it is made,
 * before anything in it, so backwards is children first (the top's record may come last, but
 * the top is opened from its fd, not walked to). One replaced since by a file is skipped. */
static int finish_dirs(struct unpack *x, moat_error *err)
{
	for (size_t i = x->n_dirs; i-- > 0;) {
		struct dir_meta *m = x->dirs[i];
		_cleanup_close_ int fd = -1, dir = -1;
		moat_error ignored = MOAT_ERROR_INIT;

		if (*m->path == '\0')
			dir = openat(x->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else if (walk(x, m->path, false, false, &fd, &ignored) == 0)
			dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		moat_error_clear(&ignored);
		if (dir < 0)
			continue;
		if (!m->implicit)
			set_owner(x, dir, NULL, m->uid, m->gid);
		if (fchmod(dir, m->mode) < 0)
			return moat_error_set(err, errno, "%s: chmod '%s'", x->u->what, m->path);
		if (m->has_mtime)
			futimens(dir, (struct timespec[2]){ m->mtime, m->mtime });
	}
	return 0;
}

static void collect_implicit(struct unpack *x)
{
	struct dir_meta top = { .path = (char *)"" };

	/* the top is implicit too when no "./" entry named it */
	if (tfind(&top, &x->by_path, cmp_meta) == NULL)
		strv_push(&x->u->implicit, &x->u->n_implicit, "");
	for (size_t i = 0; i < x->n_dirs; i++)
		if (x->dirs[i]->implicit)
			strv_push(&x->u->implicit, &x->u->n_implicit, x->dirs[i]->path);
}

static int read_entries(struct unpack *x, struct reader *r, moat_error *err)
{
	struct archive_entry *e;

	if (new_reader(false, &x->a, err) < 0)
		return moat_error_ret(err);
	if (sym_archive_read_open(x->a, r, NULL, reader_read, NULL) != ARCHIVE_OK)
		return moat_error_msg(err, EINVAL, "%s: %s", x->u->what,
				      sym_archive_error_string(x->a));
	for (;;) {
		int st = sym_archive_read_next_header(x->a, &e);
		if (st == ARCHIVE_EOF)
			break;
		if (st < ARCHIVE_WARN)
			return moat_error_msg(err, EINVAL, "%s: %s", x->u->what,
					      sym_archive_error_string(x->a));
		if (unpack_entry(x, e, err) < 0)
			return moat_error_ret(err);
	}
	/* the first filter is the format's reader; any other is a decompressor */
	x->u->compressed = sym_archive_filter_count(x->a) > 1;
	return 0;
}

static void keep_node(void *p)
{
	(void)p; /* the records are freed from x->dirs */
}

static void free_dirs(struct unpack *x)
{
	tdestroy(x->by_path, keep_node);
	for (size_t i = 0; i < x->n_dirs; i++) {
		free(x->dirs[i]->path);
		free(x->dirs[i]);
	}
	free(x->dirs);
}

int image_unpack_fd(int fd, int dirfd, struct image_unpack *u, moat_error *err)
{
	_cleanup_free_ uint8_t *buf = xmalloc(READ_BUF_SIZE);
	struct reader r = { .fd = fd, .hash = u->layer, .buf = buf };
	struct unpack x = { .u = u, .rootfd = dirfd };
	uint8_t digest[MOAT_SHA256_SIZE];
	int ret;

	moat_sha256_init(&r.sha);
	ret = read_entries(&x, &r, err);
	if (ret == 0 && r.hash)
		ret = reader_drain(&r, u->what, err);
	if (ret == 0)
		ret = finish_dirs(&x, err);
	if (ret == 0 && u->layer)
		collect_implicit(&x);
	free_reader(&x.a);
	free_dirs(&x);
	if (ret < 0)
		return moat_error_ret(err);
	moat_sha256_final(&r.sha, digest);
	moat_sha256_hex(digest, u->hex);
	u->size = r.total;
	return 0;
}

int image_tar_digest(int fd, char hex[MOAT_SHA256_HEX_SIZE], moat_error *err)
{
	_cleanup_free_ uint8_t *buf = xmalloc(READ_BUF_SIZE);
	_cleanup_(free_reader) struct archive *a = NULL;
	struct reader r = { .fd = fd, .buf = buf };
	struct archive_entry *e;
	struct moat_sha256 sha;
	uint8_t digest[MOAT_SHA256_SIZE];

	if (new_reader(true, &a, err) < 0)
		return moat_error_ret(err);
	moat_sha256_init(&r.sha);
	moat_sha256_init(&sha);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return moat_error_set(err, errno, "seek");
	if (sym_archive_read_open(a, &r, NULL, reader_read, NULL) != ARCHIVE_OK ||
	    sym_archive_read_next_header(a, &e) < ARCHIVE_WARN)
		return moat_error_msg(err, EINVAL, "decompress: %s", sym_archive_error_string(a));
	for (;;) {
		const void *data;
		size_t len;
		la_int64_t off;
		int st = sym_archive_read_data_block(a, &data, &len, &off);
		if (st == ARCHIVE_EOF)
			break;
		if (st < ARCHIVE_WARN)
			return moat_error_msg(err, EINVAL, "decompress: %s",
					      sym_archive_error_string(a));
		moat_sha256_update(&sha, data, len);
	}
	moat_sha256_final(&sha, digest);
	moat_sha256_hex(digest, hex);
	return 0;
}

void image_unpack_release(struct image_unpack *u)
{
	strv_free(u->implicit);
	u->implicit = NULL;
	u->n_implicit = 0;
}
