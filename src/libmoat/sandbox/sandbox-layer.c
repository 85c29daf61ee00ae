/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a sandbox's writable layer (a tmpfs of the disk size) and its overlay root. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "safe-path.h"
#include "sandbox-internal.h"
#include "utils.h"

extern const char moat_sandbox_init_blob[], moat_sandbox_init_blob_end[];

/* A path the overlay's option string can carry as it is. */
static int check_base_path(const char *path, moat_error *err)
{
	if (path[0] != '/')
		return moat_error_msg(err, EINVAL, "--rootfs: '%s' is not an absolute path", path);
	if (strpbrk(path, ":,\\ \t\n") != NULL)
		return moat_error_msg(err, EINVAL,
				      "--rootfs: '%s': a base path may not contain ':', ',', '\\' "
				      "or white space (the overlay's option syntax)",
				      path);
	return 0;
}

static int write_init(int layer_fd, moat_error *err)
{
	size_t len = (size_t)(moat_sandbox_init_blob_end - moat_sandbox_init_blob);
	_cleanup_close_ int dirfd = -1, fd = -1;

	if (mkdirat(layer_fd, "init", 0755) < 0 || mkdirat(layer_fd, "init/.moat", 0755) < 0)
		return moat_error_set(err, errno, "sandbox layer: mkdir init/.moat");
	dirfd = openat(layer_fd, "init/.moat", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return moat_error_set(err, errno, "sandbox layer: open init/.moat");
	fd = openat(dirfd, "init", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
	if (fd < 0 || write_all(fd, moat_sandbox_init_blob, len) < 0 || fchmod(fd, 0755) < 0)
		return moat_error_set(err, errno, "sandbox layer: write the idle init");
	return 0;
}

/* The workdir in the upper layer, owned by the sandbox's user (its parents by root). */
static int make_workdir(const struct moat_sandbox_opts *o, int upper_fd, moat_error *err)
{
	_cleanup_close_ int fd = -1;

	if (moat_safe_mkdir_p(upper_fd, o->workdir, 0755, &fd, err) < 0)
		return moat_error_prefix(err, "--workdir '%s'", o->workdir);
	if (fchownat(fd, "", o->uid, o->gid, AT_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "--workdir '%s': chown", o->workdir);
	return 0;
}

/* The mount points of /proc, /dev and /sys, where the base lacks them: made now, they are
 * part of the layer before the command, not changes of its (a microVM's agent makes them
 * late, and through a VMM that may not own /). */
static int make_mount_points(const struct sb_layer *l)
{
	static const char *const dirs[] = { "proc", "dev", "sys" };

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(dirs); i++) {
		struct stat st;

		if (fstatat(l->base_fd, dirs[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (mkdirat(l->upper_fd, dirs[i], 0755) < 0 && errno != EEXIST)
			return -1;
	}
	return 0;
}

int sb_layer_make(const struct moat_sandbox_opts *o, const char *dir, int state_fd,
		  struct sb_layer *l, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *path = NULL;
	_cleanup_close_ int layer_fd = -1;
	struct stat st;

	l->dir = dir;
	l->state_fd = state_fd;
	l->upper_fd = l->base_fd = -1;
	if (check_base_path(o->rootfs, err) < 0)
		return moat_error_ret(err);
	l->base_fd = open(o->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (l->base_fd < 0)
		return moat_error_set(err, errno, "--rootfs '%s'", o->rootfs);
	if (fstat(l->base_fd, &st) < 0)
		return moat_error_set(err, errno, "--rootfs '%s'", o->rootfs);
	if (mkdirat(state_fd, "layer", 0700) < 0 || mkdirat(state_fd, "rootfs", 0755) < 0)
		return moat_error_set(err, errno, "sandbox: mkdir layer, rootfs");
	path = xasprintf("/proc/self/fd/%d/layer", state_fd);
	/* inodes: one per 4 KiB of disk, so an inode bomb ends where a block bomb does */
	data = xasprintf("size=%llu,nr_inodes=%llu,mode=0755", (unsigned long long)o->disk,
			 (unsigned long long)(o->disk / 4096 + 64));
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, data) < 0)
		return moat_error_set(err, errno, "--disk %llu: mount the writable layer",
				      (unsigned long long)o->disk);
	l->layer_mounted = true;
	layer_fd = openat(state_fd, "layer", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (layer_fd < 0)
		return moat_error_set(err, errno, "sandbox: open the writable layer");
	if (mkdirat(layer_fd, "upper", 0755) < 0 || mkdirat(layer_fd, "work", 0700) < 0)
		return moat_error_set(err, errno, "sandbox layer: mkdir upper, work");
	if (write_init(layer_fd, err) < 0)
		return moat_error_ret(err);
	l->upper_fd = openat(layer_fd, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l->upper_fd < 0)
		return moat_error_set(err, errno, "sandbox layer: open upper");
	return make_mount_points(l) < 0 ? moat_error_set(err, errno, "sandbox layer: mount points")
					: make_workdir(o, l->upper_fd, err);
}

int sb_layer_mount(const struct moat_sandbox_opts *o, struct sb_layer *l, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *target = NULL, *layer = NULL;

	/* paths, not /proc/self/fd links: create reads them back from mountinfo to make the
	 * container's own (idmapped) overlay of the same layers */
	layer = xasprintf("%s/layer", l->dir);
	target = xasprintf("%s/rootfs", l->dir);
	data = xasprintf("lowerdir=%s/init:%s,upperdir=%s/upper,workdir=%s/work", layer, o->rootfs,
			 layer, layer);
	if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, data) < 0)
		return moat_error_set(err, errno, "--rootfs '%s': mount the sandbox's overlay",
				      o->rootfs);
	l->rootfs_mounted = true;
	return 0;
}

bool sb_layer_full(const struct sb_layer *l)
{
	struct statvfs sv;

	if (l->upper_fd < 0 || fstatvfs(l->upper_fd, &sv) < 0)
		return false;
	/* the few blocks a failed write leaves are not room for the next one */
	return sv.f_bavail <= 4 || sv.f_favail <= 2;
}

void sb_layer_release(struct sb_layer *l)
{
	if (l->rootfs_mounted) {
		_cleanup_free_ char *p = xasprintf("/proc/self/fd/%d/rootfs", l->state_fd);

		if (umount2(p, MNT_DETACH) == 0)
			l->rootfs_mounted = false;
	}
	if (l->upper_fd >= 0)
		close(l->upper_fd);
	if (l->base_fd >= 0)
		close(l->base_fd);
	l->upper_fd = l->base_fd = -1;
	if (l->layer_mounted) {
		_cleanup_free_ char *p = xasprintf("/proc/self/fd/%d/layer", l->state_fd);

		if (umount2(p, MNT_DETACH) == 0)
			l->layer_mounted = false;
	}
}
