/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: an engine's overlay rootfs, stacked again on idmapped layers (see overlay-idmap.h). */
#include "overlay-idmap.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/fsuid.h>
#include <sched.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "mount-idmap.h"
#include "mountinfo.h"
#include "sync.h"
#include "utils.h"

#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif

/* mountinfo of a host with many containers runs to megabytes; more is not a mount table. */
#define MOUNTINFO_MAX (64u << 20)
/* overlayfs itself stops at 500 lower layers. */
#define MAX_LOWER 500

/* Super options passed to the new overlay unchanged: how the engine's overlay treats its
 * layers, which the new one must match to read the same upper layer the same way. */
static const char *const kept_options[] = {
	"redirect_dir", "index", "uuid", "nfs_export", "xino", "metacopy", "verity", "userxattr",
};
/* Not "volatile": a volatile overlay marks its workdir as never to be mounted again, and
 * moat's overlay reuses its own (see MOAT_WORKDIR). */

/* moat's overlay has a workdir of its own, made inside the engine's: two overlays cannot share
 * one. It is removed with the engine's layer. */
#define MOAT_WORKDIR "moat"

/* Mount flags of the engine's mount, kept on the new one. */
static const struct {
	const char *name;
	uint64_t attr;
} kept_flags[] = {
	{ "ro", MOUNT_ATTR_RDONLY },       { "nosuid", MOUNT_ATTR_NOSUID },
	{ "nodev", MOUNT_ATTR_NODEV },     { "noexec", MOUNT_ATTR_NOEXEC },
	{ "noatime", MOUNT_ATTR_NOATIME }, { "nodiratime", MOUNT_ATTR_NODIRATIME },
};

/* What the engine's overlay is made of. */
struct overlay {
	char *lower[MAX_LOWER];
	size_t n_lower;
	char *upper, *work;
	char *options[MOAT_ARRAY_SIZE(kept_options)]; /* "key" or "key=value" */
	size_t n_options;
	unsigned int attrs;
	/* The idmapped clones. Each stays open until the overlay is made: closing the last fd of
	 * a detached mount unmounts it, and overlayfs takes its layers only at create. */
	int held[MAX_LOWER + 1];
	size_t n_held;
};

static void overlay_free(struct overlay *o)
{
	size_t i;

	for (i = 0; i < o->n_lower; i++)
		free(o->lower[i]);
	for (i = 0; i < o->n_options; i++)
		free(o->options[i]);
	for (i = 0; i < o->n_held; i++)
		close(o->held[i]);
	free(o->upper);
	free(o->work);
}

bool moat_overlay_is_root(const char *path)
{
	struct statfs sfs;
	struct stat st, parent;
	_cleanup_free_ char *up = xasprintf("%s/..", path);

	if (statfs(path, &sfs) < 0 || (unsigned long)sfs.f_type != OVERLAYFS_SUPER_MAGIC)
		return false;
	/* the root of the overlay, not a directory inside one */
	return stat(path, &st) == 0 && stat(up, &parent) == 0 && st.st_dev != parent.st_dev;
}

static bool option_kept(const char *opt)
{
	size_t i, len = strcspn(opt, "=");

	for (i = 0; i < MOAT_ARRAY_SIZE(kept_options); i++)
		if (strlen(kept_options[i]) == len && strncmp(opt, kept_options[i], len) == 0)
			return true;
	return false;
}

static int parse_lower(struct overlay *o, char *list, moat_error *err)
{
	char *save = NULL, *dir;

	if (strstr(list, "::") != NULL)
		return moat_error_msg(err, EINVAL, "data-only lower layers are not supported");
	for (dir = strtok_r(list, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		if (o->n_lower == MAX_LOWER)
			return moat_error_msg(err, E2BIG, "more than %d lower layers", MAX_LOWER);
		o->lower[o->n_lower++] = xstrdup(dir);
	}
	return 0;
}

/* The layers and options from the super options field of mountinfo. */
static int parse_super(struct overlay *o, const char *super, moat_error *err)
{
	_cleanup_free_ char *copy = xstrdup(super);
	char *save = NULL, *opt;

	for (opt = strtok_r(copy, ",", &save); opt != NULL; opt = strtok_r(NULL, ",", &save)) {
		moat_mountinfo_unescape(opt);
		if (strchr(opt, '\\') != NULL)
			return moat_error_msg(err, EINVAL,
					      "option '%s': escaped characters in a "
					      "layer path are not supported",
					      opt);
		if (strncmp(opt, "lowerdir=", 9) == 0) {
			if (parse_lower(o, opt + 9, err) < 0)
				return moat_error_ret(err);
		} else if (strncmp(opt, "upperdir=", 9) == 0) {
			o->upper = xstrdup(opt + 9);
		} else if (strncmp(opt, "workdir=", 8) == 0) {
			o->work = xstrdup(opt + 8);
		} else if (option_kept(opt) && o->n_options < MOAT_ARRAY_SIZE(o->options)) {
			o->options[o->n_options++] = xstrdup(opt);
		}
	}
	if (o->n_lower == 0)
		return moat_error_msg(err, EINVAL, "no lowerdir in its options");
	if ((o->upper == NULL) != (o->work == NULL))
		return moat_error_msg(err, EINVAL, "upperdir without workdir");
	return 0;
}

static void parse_flags(struct overlay *o, const char *opts)
{
	_cleanup_free_ char *copy = xstrdup(opts);
	char *save = NULL, *opt;
	size_t i;

	for (opt = strtok_r(copy, ",", &save); opt != NULL; opt = strtok_r(NULL, ",", &save))
		for (i = 0; i < MOAT_ARRAY_SIZE(kept_flags); i++)
			if (strcmp(opt, kept_flags[i].name) == 0)
				o->attrs |= (unsigned int)kept_flags[i].attr;
}

static bool below(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	return strncmp(path, dir, len) == 0 && path[len] == '/';
}

/* *p, when relative, made absolute against base; false when it does not exist there. */
static bool resolve_one(char **p, const char *base)
{
	char *abs;
	struct stat st;

	if (*p == NULL || (*p)[0] == '/')
		return true;
	abs = xasprintf("%s/%s", base, *p);
	free(*p);
	*p = abs;
	return stat(abs, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Podman and Docker mount an overlay with many layers from their driver's directory with
 * relative paths ("l/<short id>" for the lower layers, "<id>/diff" and "<id>/work"), to keep
 * the options within a page; mountinfo shows them as given. That directory is the one that
 * holds "<id>/merged", the mount point. */
static int resolve_relative(struct overlay *o, const char *mnt, moat_error *err)
{
	_cleanup_free_ char *base = xstrdup(mnt);
	char *slash;
	size_t i;
	bool ok = true;

	for (i = 0; i < 2 && (slash = strrchr(base, '/')) != NULL && slash != base; i++)
		*slash = '\0';
	if (i < 2)
		base[1] = '\0';
	for (i = 0; i < o->n_lower; i++)
		ok = resolve_one(&o->lower[i], base) && ok;
	ok = resolve_one(&o->upper, base) && ok;
	ok = resolve_one(&o->work, base) && ok;
	if (!ok)
		return moat_error_msg(err, ENOENT,
				      "its relative layer paths are not directories "
				      "under '%s', the directory two levels above the mount point",
				      base);
	return 0;
}

/* Find the overlay mounted at path (the topmost mount there) and refuse one with mounts on
 * top of it inside: a new overlay would not carry them. */
static int read_overlay(const char *path, struct overlay *o, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *super = NULL, *flags = NULL;
	char *line, *save = NULL;
	struct moat_mountinfo e;

	if (read_file_at(AT_FDCWD, "/proc/self/mountinfo", MOUNTINFO_MAX, &data, NULL, err) < 0)
		return moat_error_ret(err);
	for (line = strtok_r(data, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (!moat_mountinfo_parse(line, &e))
			continue;
		if (strcmp(e.mnt, path) == 0) {
			free(super);
			free(flags);
			super = strcmp(e.fstype, "overlay") == 0 ? xstrdup(e.super) : NULL;
			flags = xstrdup(e.opts);
		} else if (super != NULL && below(e.mnt, path)) {
			return moat_error_msg(err, EINVAL,
					      "'%s' is mounted inside it: an overlay "
					      "rootfs with submounts is not supported",
					      e.mnt);
		}
	}
	if (super == NULL)
		return moat_error_msg(err, EINVAL, "'%s' is not the root of an overlay mount",
				      path);
	parse_flags(o, flags);
	if (parse_super(o, super, err) < 0)
		return moat_error_ret(err);
	return resolve_relative(o, path, err);
}

/* A detached clone of dir, idmapped through userns; o holds it. */
static int idmapped_clone(struct overlay *o, const char *dir, int userns, moat_error *err)
{
	int fd;

	if (moat_mount_idmap_clone(AT_FDCWD, dir, userns, false, &fd, err) < 0)
		return moat_error_prefix(err, "layer");
	o->held[o->n_held++] = fd;
	return fd;
}

/* The reason overlayfs gave for the last refusal, from the context's message log ("e ovl:
 * ..."), as ": ovl: ...", or "" when it gave none. */
static const char *fs_reason(int fsfd, char *buf, size_t size)
{
	ssize_t n = read(fsfd, buf, size - 1);

	if (n <= 2)
		return "";
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	buf[0] = ':'; /* over the message's "e" */
	return buf;
}

static int set_fd(int fsfd, const char *key, int fd, const char *dir, moat_error *err)
{
	char why[256];
	int e;

	if (fsconfig(fsfd, FSCONFIG_SET_FD, key, NULL, fd) == 0)
		return 0;
	e = errno;
	return moat_error_set(err, e, "layer '%s': fsconfig %s%s", dir, key,
			      fs_reason(fsfd, why, sizeof(why)));
}

/* MOAT_WORKDIR inside the engine's workdir, made by host root (an idmapped mount takes no
 * new file from an id it does not map). */
static int make_workdir(const char *work, moat_error *err)
{
	_cleanup_close_ int dir = open(work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dir < 0)
		return moat_error_set(err, errno, "workdir '%s'", work);
	if (mkdirat(dir, MOAT_WORKDIR, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "workdir '%s/%s'", work, MOAT_WORKDIR);
	return 0;
}

/* upperdir and workdir must be on one mount: their common parent is cloned once. */
static int set_upper(int fsfd, struct overlay *o, int userns, moat_error *err)
{
	_cleanup_free_ char *parent = xstrdup(o->upper), *work_path = NULL;
	_cleanup_close_ int upper = -1, work = -1;
	int dir;
	char *slash = strrchr(parent, '/');
	size_t len;

	if (slash == NULL || slash == parent)
		return moat_error_msg(err, EINVAL, "upperdir '%s' has no parent", o->upper);
	*slash = '\0';
	len = strlen(parent);
	if (!below(o->work, parent) || strchr(o->work + len + 1, '/') != NULL)
		return moat_error_msg(err, EINVAL,
				      "upperdir '%s' and workdir '%s' are not in one "
				      "directory",
				      o->upper, o->work);
	if (make_workdir(o->work, err) < 0)
		return moat_error_ret(err);
	dir = idmapped_clone(o, parent, userns, err);
	if (dir < 0)
		return moat_error_ret(err);
	work_path = xasprintf("%s/%s", o->work + len + 1, MOAT_WORKDIR);
	upper = openat(dir, slash + 1, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	work = openat(dir, work_path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (upper < 0 || work < 0)
		return moat_error_set(err, errno, "open '%s'", upper < 0 ? o->upper : o->work);
	if (set_fd(fsfd, "upperdir", upper, o->upper, err) < 0 ||
	    set_fd(fsfd, "workdir", work, o->work, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* Make the overlay with root_id as the fs ids. overlayfs works in its upper layer with the
 * credentials of whoever made it, and through an idmapped upper layer host root's ids map to
 * nothing: the container's root (root_id on the host) is what the mapping takes. */
static int create_as(int fsfd, uid_t root_id, moat_error *err)
{
	int r = 0, e = 0;

	setfsgid(root_id);
	setfsuid(root_id);
	if (moat_caps_raise_effective(err) < 0)
		r = -1;
	else if (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		r = -1, e = errno;
	setfsuid(0);
	setfsgid(0);
	if (moat_caps_raise_effective(r < 0 ? NULL : err) < 0)
		return moat_error_ret(err);
	if (e != 0) {
		char why[256];

		return moat_error_set(err, e, "create%s", fs_reason(fsfd, why, sizeof(why)));
	}
	return r;
}

/* The engine's options that the new overlay keeps. */
static int set_options(int fsfd, const struct overlay *o, moat_error *err)
{
	for (size_t i = 0; i < o->n_options; i++) {
		_cleanup_free_ char *key = xstrdup(o->options[i]);
		char *value = strchr(key, '=');
		int r;

		if (value != NULL)
			*value++ = '\0';
		r = value != NULL ? fsconfig(fsfd, FSCONFIG_SET_STRING, key, value, 0)
				  : fsconfig(fsfd, FSCONFIG_SET_FLAG, key, NULL, 0);
		if (r < 0)
			return moat_error_set(err, errno, "option '%s'", o->options[i]);
	}
	return 0;
}

/* The overlay made, as a detached mount. */
static int create_mount(int fsfd, const struct overlay *o, uid_t root_id, int *ret_fd,
			moat_error *err)
{
	int mfd;

	if (set_options(fsfd, o, err) < 0 || create_as(fsfd, root_id, err) < 0)
		return moat_error_ret(err);
	mfd = (int)fsmount(fsfd, FSMOUNT_CLOEXEC, o->attrs);
	if (mfd < 0)
		return moat_error_set(err, errno, "fsmount");
	*ret_fd = mfd;
	return 0;
}

/* ---- on kernels before 6.15 ------------------------------------------------------------------ */

/* Before Linux 6.15 overlayfs takes no detached mount as a layer, only paths (and before 6.5
 * only as a legacy option string, which it resolves at create). So a child of moat's, in a
 * mount namespace of its own with a tmpfs over /tmp, attaches each idmapped layer there and
 * makes the overlay of those paths: overlayfs keeps private clones of its layers, and the
 * overlay outlives the child and its namespace. It sends the overlay back as a detached mount.
 * Nothing is mounted where anyone else sees it. */
#define PATHS_DIR "/tmp"

static bool force_paths(void)
{
	const char *force = getenv("MOAT_TEST_FORCE_OVERLAY_PATHS");

	return force != NULL && strcmp(force, "1") == 0;
}

/* In the child: the clone fd (which o holds) attached at PATHS_DIR/name. */
static int attach_layer(int fd, const char *name, moat_error *err)
{
	_cleanup_free_ char *at = xasprintf(PATHS_DIR "/%s", name);

	if (mkdir(at, 0700) < 0)
		return moat_error_set(err, errno, "mkdir %s", at);
	if (move_mount(fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "attach a layer at %s", at);
	return 0;
}

/* In the child: upper's parent directory (which holds the workdir too, as set_upper needs it),
 * idmapped into *ret_fd, and the names of upperdir and workdir below it. */
static int clone_upper(struct overlay *o, int userns, int *ret_fd, char **ret_upper,
		       char **ret_work, moat_error *err)
{
	_cleanup_free_ char *parent = xstrdup(o->upper);
	char *slash = strrchr(parent, '/');

	if (slash == NULL || slash == parent || (*slash = '\0', !below(o->work, parent)))
		return moat_error_msg(err, EINVAL, "upperdir '%s' and workdir '%s'", o->upper,
				      o->work);
	if (make_workdir(o->work, err) < 0)
		return moat_error_ret(err);
	*ret_fd = idmapped_clone(o, parent, userns, err);
	if (*ret_fd < 0)
		return moat_error_ret(err);
	*ret_upper = xasprintf(PATHS_DIR "/up/%s", slash + 1);
	*ret_work = xasprintf(PATHS_DIR "/up/%s/" MOAT_WORKDIR, o->work + strlen(parent) + 1);
	return 0;
}

/* In the child: the overlay of o's layers, attached by path, into *ret_fd. The layers are
 * cloned before the tmpfs covers PATHS_DIR, where they may well be. The child exits after, so
 * what it opened is not closed on errors. */
static int paths_overlay(struct overlay *o, int userns, uid_t root_id, int *ret_fd,
			 moat_error *err)
{
	_cleanup_free_ int *fds = xcalloc(o->n_lower, sizeof(int));
	_cleanup_free_ char *lower = xstrdup(""), *upper = NULL, *work = NULL;
	int fsfd, upfd = -1;
	char name[32];
	size_t i;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return moat_error_set(err, errno, "a mount namespace for the layers");
	for (i = 0; i < o->n_lower; i++)
		if ((fds[i] = idmapped_clone(o, o->lower[i], userns, err)) < 0)
			return moat_error_ret(err);
	if (o->upper != NULL && clone_upper(o, userns, &upfd, &upper, &work, err) < 0)
		return moat_error_ret(err);
	if (mount("tmpfs", PATHS_DIR, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
		return moat_error_set(err, errno, "a tmpfs on " PATHS_DIR " for the layers");
	for (i = 0; i < o->n_lower; i++) {
		char *next;

		snprintf(name, sizeof(name), "l%zu", i);
		if (attach_layer(fds[i], name, err) < 0)
			return moat_error_ret(err);
		next = xasprintf("%s%s" PATHS_DIR "/%s", lower, i ? ":" : "", name);
		free(lower);
		lower = next;
	}
	if (upfd >= 0 && attach_layer(upfd, "up", err) < 0)
		return moat_error_ret(err);
	fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return moat_error_set(err, errno, "fsopen");
	if (fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir", lower, 0) < 0)
		return moat_error_set(err, errno, "lowerdir '%s'", lower);
	if (upper != NULL && (fsconfig(fsfd, FSCONFIG_SET_STRING, "upperdir", upper, 0) < 0 ||
			      fsconfig(fsfd, FSCONFIG_SET_STRING, "workdir", work, 0) < 0))
		return moat_error_set(err, errno, "upperdir '%s'", o->upper);
	return create_mount(fsfd, o, root_id, ret_fd, err);
}

static int moat_overlay_by_paths(struct overlay *o, int userns, uid_t root_id, int *ret_fd,
				 moat_error *err)
{
	int sp[2], status, fd = -1;
	struct moat_sync_msg m;
	pid_t pid;

	if (moat_sync_pair(sp, err) < 0)
		return moat_error_ret(err);
	pid = fork();
	if (pid == 0) {
		moat_error e = MOAT_ERROR_INIT;
		int mfd = -1;

		close(sp[0]);
		if (paths_overlay(o, userns, root_id, &mfd, &e) < 0) {
			moat_sync_send_error(sp[1], &e);
			_exit(1);
		}
		_exit(moat_sync_send_fd(sp[1], MOAT_SYNC_MOUNT_FD, 0, mfd, &e) < 0);
	}
	close(sp[1]);
	if (pid < 0) {
		close(sp[0]);
		return moat_error_set(err, errno, "fork");
	}
	if (moat_sync_recv(sp[0], &m, &fd, err) == 0 &&
	    (m.type != MOAT_SYNC_MOUNT_FD || fd < 0)) {
		if (fd >= 0)
			close(fd);
		fd = -1;
		moat_error_msg(err, EPROTO, "the layers' child sent message %d", m.type);
	}
	close(sp[0]);
	waitpid(pid, &status, 0);
	if (fd < 0)
		return moat_error_prefix(err, "with layers by path (before Linux 6.15)");
	*ret_fd = fd;
	return 0;
}

static int make_overlay(struct overlay *o, int userns, uid_t root_id, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fsfd = -1;
	size_t i;
	int layer;

	if (force_paths())
		return moat_overlay_by_paths(o, userns, root_id, ret_fd, err);
	fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return moat_error_set(err, errno, "fsopen");
	for (i = 0; i < o->n_lower; i++) {
		layer = idmapped_clone(o, o->lower[i], userns, err);
		if (layer < 0)
			return moat_error_ret(err);
		/* a kernel that takes no layer by fd says so for the first: EINVAL, or
		 * EOPNOTSUPP from overlayfs's legacy options before Linux 6.5 */
		if (i == 0 && fsconfig(fsfd, FSCONFIG_SET_FD, "lowerdir+", NULL, layer) == 0)
			continue;
		if (i == 0 && (errno == EINVAL || errno == EOPNOTSUPP))
			return moat_overlay_by_paths(o, userns, root_id, ret_fd, err);
		if (set_fd(fsfd, "lowerdir+", layer, o->lower[i], err) < 0)
			return moat_error_ret(err);
	}
	if (o->upper != NULL && set_upper(fsfd, o, userns, err) < 0)
		return moat_error_ret(err);
	return create_mount(fsfd, o, root_id, ret_fd, err);
}

int moat_overlay_idmap(const char *path, int userns, uid_t root_id, int *ret_fd, moat_error *err)
{
	struct overlay o = { 0 };
	char real[PATH_MAX];
	int r;

	if (realpath(path, real) == NULL)
		return moat_error_set(err, errno, "overlay '%s'", path);
	r = read_overlay(real, &o, err);
	if (r == 0)
		r = make_overlay(&o, userns, root_id, ret_fd, err);
	overlay_free(&o);
	if (r < 0)
		return moat_error_prefix(err, "overlay '%s'", real);
	return 0;
}
