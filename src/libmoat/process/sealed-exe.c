/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: re-execute moat from a read-only overlay of its own binary, or from a
 * sealed memfd copy of it, so that no process that enters a container runs
 * from a file anyone can write (CVE-2019-5736). See sealed-exe.h. */
#include "sealed-exe.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mountinfo.h"
#include "utils.h"

/* Linux 6.3 ABI values; the uapi headers of older kernels lack them. */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* Every seal the copy carries, and the test for "already sealed": no write,
 * no growing, no shrinking (so no truncation), and no changing the seals. */
#define SEALED_EXE_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

#define SELF_EXE "/proc/self/exe"

extern char **environ;

static int open_self_exe(struct stat *ret_st, moat_error *err)
{
	int fd = open(SELF_EXE, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", SELF_EXE);
	if (fstat(fd, ret_st) < 0) {
		moat_error_set(err, errno, "fstat '%s'", SELF_EXE);
		close(fd);
		return moat_error_ret(err);
	}
	return fd;
}

/* 1 when fd is an unlinked regular file carrying every seal moat sets. A
 * file on disk has no seals (F_GET_SEALS fails with EINVAL); a tmpfs file or
 * a memfd made without MFD_ALLOW_SEALING has only F_SEAL_SEAL, so neither
 * can pass, and neither can ever gain the write seals. */
static int fd_is_sealed(int fd, const struct stat *st, moat_error *err)
{
	int seals;

	if (!S_ISREG(st->st_mode) || st->st_nlink != 0)
		return 0;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 && errno == EINVAL)
		return 0;
	if (seals < 0)
		return moat_error_set(err, errno, "fcntl F_GET_SEALS");
	return (seals & SEALED_EXE_SEALS) == SEALED_EXE_SEALS;
}

/* Whether the overlay whose superblock is device dev has an upper layer, as this mount
 * namespace's mountinfo shows it: false when it has none or is not there, true when it has
 * one or mountinfo cannot be read. */
static bool mountinfo_overlay_has_upper(dev_t dev)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	struct moat_mountinfo e;
	char want[32];
	size_t cap = 0;

	if (f == NULL)
		return true; /* cannot tell: not protected, moat re-executes */
	snprintf(want, sizeof(want), "%u:%u", major(dev), minor(dev));
	while (getline(&line, &cap, f) > 0)
		if (moat_mountinfo_parse(line, &e) && strcmp(e.dev, want) == 0)
			return strncmp(e.super, "upperdir=", 9) == 0 ||
			       strstr(e.super, ",upperdir=") != NULL;
	return false;
}

/* Whether the file open as fd, with st, is reachable by the path /proc/self/exe names: an
 * overlay mounted nowhere (the one moat re-executes from) is not, and /proc/self/exe then
 * names the file from that mount's root ("/moat"). */
static bool exe_attached(const struct stat *st)
{
	char path[PATH_MAX];
	ssize_t len = readlink(SELF_EXE, path, sizeof(path) - 1);
	struct stat at;

	if (len <= 0 || (size_t)len >= sizeof(path) - 1)
		return true;
	path[len] = '\0';
	return stat(path, &at) == 0 && at.st_dev == st->st_dev && at.st_ino == st->st_ino;
}

/* 1 when fd is on an overlayfs that cannot be written: read-only, and with no upper layer,
 * so that no remount can make it writable, and an open for writing fails with EROFS
 * whatever path reaches the file, /proc/<pid>/exe and an fd reopened through /proc
 * included. An overlay in this mount namespace (one an install mounted, docs/install.md)
 * is looked up in mountinfo; one mounted nowhere is the launcher's or moat's own, which have
 * none. */
static int fd_on_read_only_overlay(int fd, const struct stat *st, moat_error *err)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return moat_error_set(err, errno, "fstatfs '%s'", SELF_EXE);
	if (sfs.f_type != OVERLAYFS_SUPER_MAGIC || (sfs.f_flags & ST_RDONLY) == 0)
		return 0;
	return !exe_attached(st) || !mountinfo_overlay_has_upper(st->st_dev);
}

/* 1 when the image open as fd (/proc/self/exe) is one moat re-executes into. */
static int fd_is_protected(int fd, const struct stat *st, moat_error *err)
{
	int r = fd_is_sealed(fd, st, err);

	if (r != 0)
		return r;
	return fd_on_read_only_overlay(fd, st, err);
}

int moat_self_exe_is_sealed(moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open_self_exe(&st, err);
	if (fd < 0)
		return fd;
	return fd_is_protected(fd, &st, err);
}

/* A new filesystem of type fstype, configured with the key=value pairs in kv
 * (NULL-terminated), mounted nowhere: its mount's fd, or -1 with errno set. */
static int detached_mount(const char *fstype, const char *const *kv, unsigned int attrs)
{
	_cleanup_close_ int fs = fsopen(fstype, FSOPEN_CLOEXEC);

	if (fs < 0)
		return -1;
	for (; kv[0] != NULL; kv += 2)
		if (fsconfig(fs, FSCONFIG_SET_STRING, kv[0], kv[1], 0) < 0)
			return -1;
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	return fsmount(fs, FSMOUNT_CLOEXEC, attrs);
}

/* An overlay of dir with nothing above it, mounted nowhere. Without an upper
 * layer an overlay is read-only, but it wants two lower layers, and the same
 * directory twice is refused: the second is an empty tmpfs. Linux before 6.8
 * has no "lowerdir+", and its "lowerdir" splits at ':'. */
static int read_only_overlay(const char *dir)
{
	static const char *const empty_opts[] = { "size", "4k", "mode", "0555", NULL };
	_cleanup_close_ int empty = -1;
	char empty_path[64], both[PATH_MAX + 64];
	int mnt;

	empty = detached_mount("tmpfs", empty_opts, MOUNT_ATTR_RDONLY);
	if (empty < 0)
		return -1;
	snprintf(empty_path, sizeof(empty_path), "/proc/self/fd/%d", empty);
	mnt = detached_mount(
		"overlay", (const char *const[]){ "lowerdir+", dir, "lowerdir+", empty_path, NULL },
		MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mnt >= 0 || (errno != EINVAL && errno != EOPNOTSUPP) || strpbrk(dir, ":,\\") != NULL)
		return mnt;
	snprintf(both, sizeof(both), "%s:%s", dir, empty_path);
	return detached_mount("overlay", (const char *const[]){ "lowerdir", both, NULL },
			      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

/* moat's binary seen through a read-only overlay of its directory, as an
 * O_PATH fd to execveat(), or -1 where the kernel or the caller's privileges
 * allow no overlay (rootless moat, no overlay module, a path overlay cannot
 * take): the caller then makes a sealed copy. Checked to be the same file as
 * src_st. */
static int overlay_exe(const struct stat *src_st)
{
	_cleanup_close_ int mnt = -1, fd = -1;
	char path[PATH_MAX], *slash;
	struct stat st;
	ssize_t len;

	len = readlink(SELF_EXE, path, sizeof(path) - 1);
	if (len <= 0 || (size_t)len >= sizeof(path) - 1 || path[0] != '/')
		return -1;
	path[len] = '\0';
	slash = strrchr(path, '/');
	*slash = '\0';
	mnt = read_only_overlay(slash == path ? "/" : path);
	if (mnt < 0)
		return -1;
	fd = openat(mnt, slash + 1, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != src_st->st_ino ||
	    st.st_size != src_st->st_size)
		return -1;
	return TAKE_FD(fd);
}

/* An empty memfd that can be sealed and executed. With vm.memfd_noexec = 1
 * a memfd is non-executable unless MFD_EXEC asks otherwise; with 2 an
 * executable one is refused, and moat cannot run sealed. Kernels before 6.3
 * know no MFD_EXEC (EINVAL) and make every memfd executable. */
static int exec_memfd(moat_error *err)
{
	const unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd;

	fd = memfd_create(MOAT_SEALED_EXE_NAME, flags | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create(MOAT_SEALED_EXE_NAME, flags);
	if (fd < 0 && errno == EACCES)
		return moat_error_set(err, errno,
				      "memfd_create MFD_EXEC (vm.memfd_noexec = 2 forbids an "
				      "executable memfd)");
	if (fd < 0)
		return moat_error_set(err, errno, "memfd_create");
	return fd;
}

static int copy_exe(int dst, int src, off_t size, moat_error *err)
{
	off_t off = 0;
	ssize_t n;

	while (off < size) {
		n = sendfile(dst, src, &off, (size_t)(size - off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "copy '%s': sendfile", SELF_EXE);
		if (n == 0)
			return moat_error_msg(err, EIO, "copy '%s': ends at byte %lld of %lld",
					      SELF_EXE, (long long)off, (long long)size);
	}
	return 0;
}

/* The sealed copy of the binary open as src, as a close-on-exec memfd. The
 * seals are checked with the same test the new image applies to itself, so
 * the re-exec cannot repeat. */
static int sealed_copy(int src, const struct stat *src_st, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = exec_memfd(err);
	if (fd < 0)
		return fd;
	if (copy_exe(fd, src, src_st->st_size, err) < 0)
		return moat_error_ret(err);
	if (fcntl(fd, F_ADD_SEALS, SEALED_EXE_SEALS) < 0)
		return moat_error_set(err, errno, "fcntl F_ADD_SEALS on the memfd");
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "fstat the memfd");
	r = fd_is_sealed(fd, &st, err);
	if (r < 0)
		return r;
	if (r == 0)
		return moat_error_msg(err, EPERM, "the memfd lacks a seal after F_ADD_SEALS");
	return TAKE_FD(fd);
}

int moat_exec_sealed_self(char **argv, moat_error *err)
{
	_cleanup_close_ int self = -1, copy = -1;
	struct stat st;
	int r;

	self = open_self_exe(&st, err);
	if (self < 0)
		return moat_error_prefix(err, "run from a sealed copy of moat");
	r = fd_is_protected(self, &st, err);
	if (r < 0)
		return moat_error_prefix(err, "run from a sealed copy of moat");
	if (r > 0)
		return 0;
	copy = overlay_exe(&st);
	if (copy >= 0) {
		execveat(copy, "", argv, environ, AT_EMPTY_PATH);
		return moat_error_set(err, errno, "run from a read-only overlay of moat: execveat");
	}
	copy = sealed_copy(self, &st, err);
	if (copy < 0)
		return moat_error_prefix(err, "run from a sealed copy of moat");
	execveat(copy, "", argv, environ, AT_EMPTY_PATH);
	return moat_error_set(err, errno, "run from a sealed copy of moat: execveat");
}
