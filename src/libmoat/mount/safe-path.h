/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: paths inside a container's root, resolved through file descriptors.
 *
 * Every path the config names inside the rootfs (mount destinations, devices, masked and
 * read-only paths) is resolved relative to an fd of the root as if that directory were "/":
 * absolute symlinks restart at the root, ".." stops at the root, magic links
 * (/proc/<pid>/fd/..., /proc/<pid>/root) are refused. The result is an fd, so a path is never
 * resolved twice (CVE-2021-30465: a mount target swapped for a symlink between check and use;
 * CVE-2019-18837; a container /dev that is a symlink to the host's /dev).
 *
 * The kernel does this with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS). Where openat2
 * is missing (ENOSYS), or when the environment has MOAT_TEST_FORCE_OPENAT_FALLBACK=1, moat
 * walks the path itself: one openat(O_PATH | O_NOFOLLOW) per component, a stack of directory
 * fds for "..", symlinks read with readlinkat on the fd that was opened and spliced into the
 * rest of the path, at most MOAT_MAXSYMLINKS of them.
 */
#ifndef MOAT_SAFE_PATH_H
#define MOAT_SAFE_PATH_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

#define MOAT_MAXSYMLINKS 40 /* as the kernel's own limit for one lookup */

/* flags for moat_safe_open's resolve argument */
enum {
	MOAT_RESOLVE_NO_SYMLINKS = 1 << 0, /* fail with ELOOP on any symlink (for /proc, /sys) */
};

/* Open path (absolute or relative: both start at the root) inside rootfd. flags and mode are
 * open(2)'s; O_CLOEXEC is always added. With O_CREAT, only the last component is created;
 * a trailing symlink is followed inside the root unless flags has O_NOFOLLOW or O_EXCL.
 * On success *ret_fd is the new fd. On failure returns -errno and err says
 * "open '<path>' in the container root: <cause>"; a failure with ENOENT is normal for callers
 * that create what is missing. */
int moat_safe_open(int rootfd, const char *path, int flags, mode_t mode, unsigned resolve,
		   int *ret_fd, moat_error *err);

/* Make sure path exists inside rootfd as a directory, creating each missing component with
 * mkdirat(mode) on its parent's fd and re-opening it with O_NOFOLLOW; a component that is a
 * dangling symlink gets its target created, inside the root. *ret_fd is an O_PATH fd of the
 * directory. */
int moat_safe_mkdir_p(int rootfd, const char *path, mode_t mode, int *ret_fd, moat_error *err);

/* Make sure path exists inside rootfd: when it does not, its parent directories are created as
 * moat_safe_mkdir_p does (0755) and the last component as an empty regular file with mode; a
 * last component that is a dangling symlink gets its target created the same way (directories
 * too), inside the root. An existing path of any type is left as it is. *ret_fd is an O_PATH
 * fd of it. */
int moat_safe_mkfile(int rootfd, const char *path, mode_t mode, int *ret_fd, moat_error *err);

/* Open the parent directory of path inside rootfd, creating missing directories as
 * moat_safe_mkdir_p does (0755), for an operation on the last component by name (mknodat,
 * symlinkat, unlinkat). The last component must be a plain name, not "." or "..".
 * *ret_dirfd is an O_PATH fd; *ret_name is allocated. */
int moat_safe_open_parent(int rootfd, const char *path, int *ret_dirfd, char **ret_name,
			  moat_error *err);

/* Whether the openat(2) fallback is in use (openat2 missing or forced by the environment). */
bool moat_safe_path_fallback(void);

/* Check that fd is on a filesystem with the given statfs magic (PROC_SUPER_MAGIC, ...).
 * Fails with EXDEV and "'<what>' is not <fsname>" otherwise. */
int moat_fd_check_fs(int fd, long magic, const char *what, const char *fsname, moat_error *err);

#endif
