/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: device nodes in the container (see devices.h). */
#include "devices.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mount.h"
#include "safe-path.h"
#include "utils.h"

/* The kernel's dev_t: 12-bit major, 20-bit minor. */
#define DEV_MAJOR_MAX 0xfffu
#define DEV_MINOR_MAX 0xfffffu

/* clang-format off */
const struct moat_device_spec moat_default_devices[] = {
	{ "/dev/null", 'c', 1, 3, 0666, 0, 0 },
	{ "/dev/zero", 'c', 1, 5, 0666, 0, 0 },
	{ "/dev/full", 'c', 1, 7, 0666, 0, 0 },
	{ "/dev/random", 'c', 1, 8, 0666, 0, 0 },
	{ "/dev/urandom", 'c', 1, 9, 0666, 0, 0 },
	{ "/dev/tty", 'c', 5, 0, 0666, 0, 0 },
};
/* clang-format on */
const size_t moat_default_devices_len = MOAT_ARRAY_SIZE(moat_default_devices);

/* clang-format off */
static const struct {
	const char *name;   /* in /dev */
	const char *target;
	bool replace;       /* replace what is there (else an existing entry is kept) */
} dev_symlinks[] = {
	{ "fd", "/proc/self/fd", false },
	{ "stdin", "/proc/self/fd/0", false },
	{ "stdout", "/proc/self/fd/1", false },
	{ "stderr", "/proc/self/fd/2", false },
	{ "ptmx", "pts/ptmx", true },
};
/* clang-format on */

struct dev_entry {
	struct moat_device_spec spec; /* spec.path is path */
	char *path;                   /* owned: the table's, or the config's cleaned */
	char *field;                  /* "linux.devices[2]" or "default device" */
	struct moat_mount_src host;   /* the host node under a user namespace; fd -1 otherwise */
};

struct moat_devices {
	struct dev_entry *e;
	size_t n;
};

static mode_t type_fmt(char type)
{
	switch (type) {
	case 'c':
	case 'u': return S_IFCHR;
	case 'b': return S_IFBLK;
	case 'p': return S_IFIFO;
	default: return 0;
	}
}

/* linux.devices[].path as runc takes it (its secure join cleans the path): repeated and
 * trailing slashes dropped, so "/dev/foo/" is /dev/foo, since a device node is never a
 * directory; the default device an entry replaces is found by this form too. NULL when
 * nothing is left but the root ("", "/"). */
static char *clean_dev_path(const char *path)
{
	char *out = xmalloc(strlen(path) + 1), *o = out;
	const char *p;

	for (p = path; *p != '\0'; p++)
		if (*p != '/' || o == out || o[-1] != '/')
			*o++ = *p;
	while (o > out && o[-1] == '/')
		o--;
	*o = '\0';
	if (out[0] == '\0') {
		free(out);
		return NULL;
	}
	return out;
}

/* ret->path is the cleaned path, *ret_path (allocated). */
static int spec_from_oci(const struct oci_device *d, size_t i, struct moat_device_spec *ret,
			 char **ret_path, moat_error *err)
{
	struct moat_device_spec s = { .type = d->type ? d->type[0] : '\0', .mode = 0666 };
	_cleanup_free_ char *path = clean_dev_path(d->path);

	if (path == NULL)
		return moat_error_msg(err, EINVAL,
				      "linux.devices[%zu].path: '%s' names the "
				      "container root, not a device",
				      i, d->path);
	if (d->type == NULL || d->type[1] != '\0' || type_fmt(s.type) == 0)
		return moat_error_msg(err, EINVAL, "linux.devices[%zu].type: expected c, u, b or p",
				      i);
	if (s.type != 'p' && (!d->major_present || !d->minor_present))
		return moat_error_msg(err, EINVAL,
				      "linux.devices[%zu]: major and minor are required", i);
	if (d->major < 0 || d->major > DEV_MAJOR_MAX || d->minor < 0 || d->minor > DEV_MINOR_MAX)
		return moat_error_msg(err, ERANGE, "linux.devices[%zu]: %lld:%lld is out of range",
				      i, (long long)d->major, (long long)d->minor);
	s.major = (uint32_t)d->major;
	s.minor = (uint32_t)d->minor;
	if (d->file_mode_present)
		s.mode = d->file_mode & 07777;
	s.uid = d->uid_present ? d->uid : 0;
	s.gid = d->gid_present ? d->gid : 0;
	s.path = *ret_path = TAKE_PTR(path);
	*ret = s;
	return 0;
}

static bool overridden(const struct oci_linux *lx, const char *path)
{
	size_t i;

	for (i = 0; lx != NULL && i < lx->devices_len; i++) {
		_cleanup_free_ char *clean = clean_dev_path(lx->devices[i]->path);

		if (clean != NULL && strcmp(clean, path) == 0)
			return true;
	}
	return false;
}

static struct dev_entry *add_entry(struct moat_devices *d, const struct moat_device_spec *s,
				   char *field)
{
	struct dev_entry *e;

	d->e = xrealloc(d->e, (d->n + 1) * sizeof(*d->e));
	e = &d->e[d->n++];
	e->spec = *s;
	e->path = xstrdup(s->path);
	e->spec.path = e->path;
	e->field = field;
	e->host = (struct moat_mount_src)MOAT_MOUNT_SRC_INIT;
	return e;
}

static bool is_node(const struct stat *st, mode_t fmt, dev_t rdev)
{
	return (st->st_mode & S_IFMT) == fmt && st->st_rdev == rdev;
}

/* A node of the host's /dev (or of a directory in it: /dev/net/tun) that is fmt rdev, as
 * "/dev/name" or "/dev/dir/name" in ret; false when there is none. */
static bool find_host_node(mode_t fmt, dev_t rdev, char *ret, size_t size)
{
	_cleanup_closedir_ DIR *dev = opendir("/dev");
	struct dirent *de;
	struct stat st;

	while (dev != NULL && (de = readdir(dev)) != NULL) {
		if (de->d_name[0] == '.' ||
		    fstatat(dirfd(dev), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (is_node(&st, fmt, rdev)) {
			snprintf(ret, size, "/dev/%s", de->d_name);
			return true;
		}
		if (S_ISDIR(st.st_mode) && strcmp(de->d_name, "pts") != 0 &&
		    strcmp(de->d_name, "shm") != 0 && strcmp(de->d_name, "mqueue") != 0) {
			_cleanup_free_ char *sub = xasprintf("/dev/%s", de->d_name);
			_cleanup_closedir_ DIR *d = opendir(sub);
			struct dirent *e;

			while (d != NULL && (e = readdir(d)) != NULL)
				if (e->d_name[0] != '.' &&
				    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    is_node(&st, fmt, rdev)) {
					snprintf(ret, size, "%s/%s", sub, e->d_name);
					return true;
				}
		}
	}
	return false;
}

/* Under a user namespace: the host node at the same path, which must be that device; for a
 * device the config renames (docker run --device /dev/null:/dev/mynull), the host's node of
 * that type and number. */
static int take_host_node(struct dev_entry *e, moat_error *err)
{
	struct stat st;
	dev_t want = makedev(e->spec.major, e->spec.minor);
	mode_t fmt = type_fmt(e->spec.type);
	char found[PATH_MAX];
	const char *path = e->spec.path;

	if (stat(path, &st) < 0 || !is_node(&st, fmt, want)) {
		if (find_host_node(fmt, want, found, sizeof(found)))
			path = found;
		else
			return moat_error_msg(err, ENODEV,
					      "the host has no node of the %c %u:%u "
					      "device, at '%s' or in /dev, to bind in a user "
					      "namespace",
					      e->spec.type, e->spec.major, e->spec.minor, path);
	}
	if (moat_mount_src_open(AT_FDCWD, path, false, &e->host, err) < 0)
		return moat_error_ret(err);
	if (fstat(e->host.fd, &st) < 0)
		return moat_error_set(err, errno, "stat the host's '%s'", path);
	if (!is_node(&st, fmt, want))
		return moat_error_msg(err, ENODEV, "the host's '%s' is not the %c %u:%u device",
				      path, e->spec.type, e->spec.major, e->spec.minor);
	return 0;
}

static int plan_entry(struct moat_devices *d, const struct moat_device_spec *s, char *field,
		      bool userns, moat_error *err)
{
	struct dev_entry *e = add_entry(d, s, field);

	if (!userns || s->type == 'p')
		return 0;
	if (take_host_node(e, err) < 0)
		return moat_error_prefix(err, "%s (%s)", field, s->path);
	return 0;
}

int moat_devices_prepare(const struct oci_linux *lx, bool userns, struct moat_devices **ret,
			 moat_error *err)
{
	struct moat_devices *d = xcalloc(1, sizeof(*d));
	size_t i;

	for (i = 0; i < moat_default_devices_len; i++) {
		if (overridden(lx, moat_default_devices[i].path))
			continue;
		if (plan_entry(d, &moat_default_devices[i], xstrdup("default device"), userns,
			       err) < 0)
			goto fail;
	}
	for (i = 0; lx != NULL && i < lx->devices_len; i++) {
		_cleanup_free_ char *path = NULL;
		struct moat_device_spec s;

		if (spec_from_oci(lx->devices[i], i, &s, &path, err) < 0 ||
		    plan_entry(d, &s, xasprintf("linux.devices[%zu]", i), userns, err) < 0)
			goto fail;
	}
	*ret = d;
	return 0;
fail:
	moat_devices_free(d);
	return moat_error_ret(err);
}

int moat_devices_check_dev(int rootfd, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int r;

	r = moat_safe_open(rootfd, "/dev", O_PATH | O_NOFOLLOW, 0, MOAT_RESOLVE_NO_SYMLINKS, &fd,
			   err);
	if (r == -ENOENT) {
		moat_error_drop(err);
		return 0; /* made as a directory */
	}
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat '/dev' in the container root");
	if (S_ISDIR(st.st_mode))
		return 0;
	if (!S_ISLNK(st.st_mode))
		return moat_error_msg(err, ENOTDIR, "/dev is not a directory");
	n = readlinkat(fd, "", target, sizeof(target) - 1);
	target[n < 0 ? 0 : n] = '\0';
	return moat_error_msg(err, ELOOP,
			      "/dev is a symlink (to '%s'): moat mounts /dev and makes "
			      "its device nodes there, and follows no link for it",
			      target);
}

/* A host node bound in a user namespace: nosuid and noexec, as crun binds them (a device is
 * neither a program nor a set-id file; only its node is wanted). */
static int bind_node(struct dev_entry *e, int rootfd, moat_error *err)
{
	struct moat_mount_opts node = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC };
	struct moat_mount_target t = { -1, rootfd, e->spec.path };
	int r;

	if (moat_safe_mkfile(rootfd, e->spec.path, 0644, &t.fd, err) < 0)
		return moat_error_ret(err);
	r = moat_mount_bind(&e->host, &t, &node, err);
	close(t.fd);
	return r < 0 ? moat_error_prefix(err, "bind the host's '%s'", e->spec.path) : 0;
}

/* Make name in dir the node spec describes, replacing anything else there but a directory. */
static int make_node(int dir, const char *name, const struct moat_device_spec *s, moat_error *err)
{
	mode_t fmt = type_fmt(s->type);
	dev_t rdev = fmt == S_IFIFO ? 0 : makedev(s->major, s->minor);
	struct stat st;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    ((st.st_mode & S_IFMT) != fmt || st.st_rdev != rdev)) {
		if (S_ISDIR(st.st_mode))
			return moat_error_msg(err, EISDIR, "'%s' is a directory", s->path);
		if (unlinkat(dir, name, 0) < 0)
			return moat_error_set(err, errno, "remove '%s'", s->path);
	}
	if (mknodat(dir, name, fmt | s->mode, rdev) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mknod '%s'", s->path);
	if (fchownat(dir, name, s->uid, s->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return moat_error_set(err, errno, "chown '%s' to %u:%u", s->path, (unsigned)s->uid,
				      (unsigned)s->gid);
	/* mknod applied the umask; a device node is never a symlink, so no follow here */
	if (fchmodat(dir, name, s->mode, 0) < 0)
		return moat_error_set(err, errno, "chmod '%s'", s->path);
	return 0;
}

static int mknod_entry(struct dev_entry *e, int rootfd, moat_error *err)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *name = NULL;

	if (moat_safe_open_parent(rootfd, e->spec.path, &dir, &name, err) < 0)
		return moat_error_ret(err);
	return make_node(dir, name, &e->spec, err);
}

int moat_devices_create(struct moat_devices *d, int rootfd, moat_error *err)
{
	size_t i;

	if (moat_devices_check_dev(rootfd, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < d->n; i++) {
		struct dev_entry *e = &d->e[i];
		int r = e->host.fd >= 0 ? bind_node(e, rootfd, err) : mknod_entry(e, rootfd, err);

		if (r < 0)
			return moat_error_prefix(err, "%s (%s)", e->field, e->spec.path);
	}
	return 0;
}

static bool link_is(int dir, const char *name, const char *target)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dir, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, target) == 0;
}

int moat_devices_symlinks(int rootfd, moat_error *err)
{
	_cleanup_close_ int dev = -1;
	size_t i;

	if (moat_devices_check_dev(rootfd, err) < 0 ||
	    moat_safe_mkdir_p(rootfd, "/dev", 0755, &dev, err) < 0)
		return moat_error_ret(err);
	for (i = 0; i < MOAT_ARRAY_SIZE(dev_symlinks); i++) {
		const char *name = dev_symlinks[i].name, *target = dev_symlinks[i].target;

		if (dev_symlinks[i].replace && !link_is(dev, name, target) &&
		    unlinkat(dev, name, 0) < 0 && errno != ENOENT)
			return moat_error_set(err, errno, "remove /dev/%s", name);
		if (symlinkat(target, dev, name) < 0 && errno != EEXIST)
			return moat_error_set(err, errno, "symlink /dev/%s -> %s", name, target);
	}
	return 0;
}

void moat_devices_free(struct moat_devices *d)
{
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < d->n; i++) {
		moat_mount_src_close(&d->e[i].host);
		free(d->e[i].path);
		free(d->e[i].field);
	}
	free(d->e);
	free(d);
}
