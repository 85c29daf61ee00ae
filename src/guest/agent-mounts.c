/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat agent: the guest's own mounts at boot, and the container's rootfs.
 *
 * For START, in the workload's process before its execve, in the container's
 * mount namespace (agent-container.c): the shared rootfs is mounted on
 * /rootfs (virtio-fs or 9p); for CONTAINER, its directory in the pod's share
 * is bound there instead, and the rest of the pod's share (the other members'
 * roots) is detached from its view. Then a tmpfs /dev goes in unless the config mounts
 * one, then the config's mounts in order, the minimal /dev, the readonly and
 * masked paths, the read-only remount, the hostname; last the rootfs moves over / and the process
 * chroots into it (the initramfs is the kernel's rootfs, which pivot_root
 * cannot leave; what it holds is hidden under the new root and nothing in it
 * is reachable). Whoever joins that mount namespace later gets the rootfs as
 * its root (setns looks through the mounts stacked on the namespace's root).
 *
 * Every path inside the rootfs is resolved from the rootfs's fd by container
 * mode's own code, safe-path.h (openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS),
 * or its walk where openat2 is missing), and mounts are made on /proc/self/fd/N
 * of what was resolved: a symlink in the rootfs cannot send a mount outside it.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "safe-path.h"
#include "utils.h"

#define ROOTFS_DIR "/rootfs"

/* The flags a mount may carry. MS_MOVE and MS_REMOUNT are the agent's own
 * business, and the rest are not mount options. */
#define PROPAGATION_FLAGS (MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE)
#define ALLOWED_FLAGS                                                                           \
	(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS | MS_MANDLOCK |          \
	 MS_DIRSYNC | MS_NOATIME | MS_NODIRATIME | MS_BIND | MS_REC | MS_SILENT | MS_RELATIME | \
	 MS_STRICTATIME | MS_LAZYTIME | PROPAGATION_FLAGS)
/* What a bind mount takes from a second, remounting, call. */
#define BIND_REMOUNT_FLAGS                                                                         \
	(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME | \
	 MS_STRICTATIME)

/* ---- the guest's own mounts --------------------------------------------------------------- */

static const struct {
	const char *type, *target;
	unsigned long flags;
} base_mounts[] = {
	{ "devtmpfs", "/dev", MS_NOSUID },
	{ "proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC },
	{ "sysfs", "/sys", MS_NOSUID | MS_NODEV | MS_NOEXEC },
};

int agent_mount_base(moat_error *err)
{
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(base_mounts); i++) {
		mkdir(base_mounts[i].target, 0755);
		/* EBUSY: the kernel mounted devtmpfs already (DEVTMPFS_MOUNT). */
		if (mount(base_mounts[i].type, base_mounts[i].target, base_mounts[i].type,
			  base_mounts[i].flags, NULL) < 0 &&
		    errno != EBUSY)
			return moat_error_set(err, errno, "mount %s on %s", base_mounts[i].type,
					      base_mounts[i].target);
	}
	return 0;
}

/* ---- paths inside the rootfs ----------------------------------------------------------------- */

/* An O_PATH fd of path (inside the rootfs), made when missing as container mode makes a mount
 * destination (safe-path.h): the parents as directories (0755), the last component as an
 * empty file (0644) when as_file, else as a directory. */
static int make_path_in_root(int rootfd, const char *path, bool as_file, moat_error *err)
{
	int fd = -1, r;

	if (as_file)
		r = moat_safe_mkfile(rootfd, path, 0644, &fd, err);
	else
		r = moat_safe_mkdir_p(rootfd, path, 0755, &fd, err);
	return r < 0 ? r : fd;
}

static void fd_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

/* mount(2) on what dest resolves to now (after an earlier mount there, that
 * is the new mount). */
static int mount_at(int rootfd, const char *dest, const char *source, const char *type,
		    unsigned long flags, const char *data, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	char target[64];
	int r = moat_safe_open(rootfd, dest, O_PATH, 0, 0, &fd, NULL);

	if (r < 0)
		return moat_error_set(err, -r, "open %s", dest);
	fd_path(target, sizeof(target), fd);
	if (mount(source, target, type, flags, data) < 0)
		return moat_error_set(err, errno, "mount");
	return 0;
}

/* ---- the config's mounts ---------------------------------------------------------------------- */

static bool is_bind(const struct moat_proto_mount *m)
{
	return strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0 ||
	       (m->flags & MS_BIND);
}

static int do_bind(int rootfd, const struct moat_proto_mount *m, moat_error *err)
{
	_cleanup_close_ int src = -1, dst = -1;
	unsigned long rec = (m->flags & MS_REC) || strcmp(m->type, "rbind") == 0 ? MS_REC : 0;
	char source[64];
	struct stat st;
	int r;

	if (m->source == NULL)
		return moat_error_msg(err, EINVAL, "a bind mount needs a source");
	r = moat_safe_open(rootfd, m->source, O_PATH, 0, 0, &src, NULL);
	if (r == 0 && fstat(src, &st) < 0)
		r = -errno;
	if (r < 0)
		return moat_error_set(err, -r, "open the source %s", m->source);
	dst = make_path_in_root(rootfd, m->dest, !S_ISDIR(st.st_mode), err);
	if (dst < 0)
		return dst;
	fd_path(source, sizeof(source), src);
	{
		char target[64];

		fd_path(target, sizeof(target), dst);
		if (mount(source, target, NULL, MS_BIND | rec, NULL) < 0)
			return moat_error_set(err, errno, "mount");
	}
	if (m->flags & BIND_REMOUNT_FLAGS) {
		r = mount_at(rootfd, m->dest, NULL, NULL,
			     MS_REMOUNT | MS_BIND | (m->flags & BIND_REMOUNT_FLAGS), NULL, err);
		if (r < 0)
			return moat_error_prefix(err, "remount");
	}
	return 0;
}

static int do_mount(int rootfd, const struct moat_proto_mount *m, moat_error *err)
{
	_cleanup_close_ int dst = -1;
	unsigned long flags = m->flags & ~(PROPAGATION_FLAGS | MS_REC | MS_BIND);
	int r;

	if (m->flags & ~(uint64_t)ALLOWED_FLAGS)
		return moat_error_msg(err, EINVAL, "unsupported flags 0x%llx",
				      (unsigned long long)(m->flags & ~(uint64_t)ALLOWED_FLAGS));
	if (strspn(m->dest, "/") == strlen(m->dest))
		return moat_error_msg(err, EINVAL, "cannot mount over the rootfs itself");
	if (is_bind(m)) {
		r = do_bind(rootfd, m, err);
	} else {
		dst = make_path_in_root(rootfd, m->dest, false, err);
		if (dst < 0)
			return dst;
		r = mount_at(rootfd, m->dest, m->source ? m->source : m->type, m->type, flags,
			     m->data, err);
	}
	if (r < 0)
		return r;
	if (m->flags & PROPAGATION_FLAGS) {
		r = mount_at(rootfd, m->dest, NULL, NULL, m->flags & (PROPAGATION_FLAGS | MS_REC),
			     NULL, err);
		if (r < 0)
			return moat_error_prefix(err, "set propagation");
	}
	return 0;
}

/* ---- the host's binds ------------------------------------------------------------------------ */

/* What a bind's options say that the guest's view of it keeps. */
#define SHARE_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

static bool is_share(const struct moat_proto_mount *m)
{
	return strcmp(m->type, MOAT_PROTO_SHARE_MOUNT) == 0;
}

/* What the share holds at each bind the host made (fds[i] for s->mounts[i], -1 for the
 * others), opened before the guest mounts anything over it. A bind missing from the share
 * is an error: the guest never runs without a mount it was given. */
static int open_shares(int rootfd, const struct moat_msg_start *s, int *fds, moat_error *err)
{
	for (size_t i = 0; i < s->n_mounts; i++)
		fds[i] = -1;
	for (size_t i = 0; i < s->n_mounts; i++) {
		if (!is_share(&s->mounts[i]))
			continue;
		int r = moat_safe_open(rootfd, s->mounts[i].dest, O_PATH, 0, 0, &fds[i], NULL);

		if (r < 0)
			return moat_error_set(err, -r,
					      "the host's bind mount at %s is not in the "
					      "share",
					      s->mounts[i].dest);
	}
	return 0;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* The host's bind at m->dest, seen through the share as fd: when a guest mount made since
 * covers it, bind it again on top, as container mode stacks mounts in the config's order. */
static int expose_share(int rootfd, const struct moat_proto_mount *m, int fd, moat_error *err)
{
	_cleanup_close_ int now = -1, dst = -1;
	char source[64], target[64];
	struct stat st;

	if (moat_safe_open(rootfd, m->dest, O_PATH, 0, 0, &now, NULL) == 0 && same_file(now, fd))
		return 0;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat the share's %s", m->dest);
	dst = make_path_in_root(rootfd, m->dest, !S_ISDIR(st.st_mode), err);
	if (dst < 0)
		return dst;
	fd_path(source, sizeof(source), fd);
	fd_path(target, sizeof(target), dst);
	/* not MS_REC: the guest's mounts made since over the same place are under fd, and
	 * would come along (the host's mounts inside the bind are the share's, not the guest's) */
	if (mount(source, target, NULL, MS_BIND, NULL) < 0)
		return moat_error_set(err, errno, "bind it again over the guest's mount");
	if ((m->flags & SHARE_FLAGS) &&
	    mount_at(rootfd, m->dest, NULL, NULL, MS_REMOUNT | MS_BIND | (m->flags & SHARE_FLAGS),
		     NULL, err) < 0)
		return moat_error_prefix(err, "remount");
	return 0;
}

static void close_shares(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
}

static bool mounts_dev(const struct moat_msg_start *s)
{
	for (size_t i = 0; i < s->n_mounts; i++) {
		const char *d = s->mounts[i].dest;

		if (strncmp(d, "/dev", 4) == 0 && strspn(d + 4, "/") == strlen(d + 4))
			return true;
	}
	return false;
}

/* ---- /dev ---------------------------------------------------------------------------------- */

/* clang-format off */
static const struct {
	const char *name;
	unsigned int major, minor;
} dev_nodes[] = {
	{ "null", 1, 3 }, { "zero", 1, 5 },    { "full", 1, 7 },
	{ "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
};
/* clang-format on */

/* clang-format off */
static const struct {
	const char *name, *target;
} dev_links[] = {
	{ "ptmx", "pts/ptmx" },
	{ "fd", "/proc/self/fd" },
	{ "stdin", "/proc/self/fd/0" },
	{ "stdout", "/proc/self/fd/1" },
	{ "stderr", "/proc/self/fd/2" },
};
/* clang-format on */

static int populate_dev(int rootfd, moat_error *err)
{
	_cleanup_close_ int dev = make_path_in_root(rootfd, "/dev", false, err);

	if (dev < 0)
		return moat_error_prefix(err, "/dev");
	/* What the config made already stays as it is. */
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(dev_nodes); i++)
		if (mknodat(dev, dev_nodes[i].name, S_IFCHR | 0666,
			    makedev(dev_nodes[i].major, dev_nodes[i].minor)) < 0 &&
		    errno != EEXIST)
			return moat_error_set(err, errno, "mknod /dev/%s", dev_nodes[i].name);
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(dev_links); i++)
		if (symlinkat(dev_links[i].target, dev, dev_links[i].name) < 0 && errno != EEXIST)
			return moat_error_set(err, errno, "symlink /dev/%s", dev_links[i].name);
	if (mkdirat(dev, "pts", 0755) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mkdir /dev/pts");
	if (mkdirat(dev, "shm", 01777) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mkdir /dev/shm");
	return 0;
}

/* The container's devpts, the config's mount at /dev/pts, opened before anything of the
 * container runs: the agent makes every pty from it (agent-process.c), never through a path
 * the workload can change later (its /dev/ptmx, its /dev/pts). -1 when /dev/pts is not a
 * devpts. */
static int open_devpts(int rootfd)
{
	_cleanup_close_ int fd = -1;
	struct statfs sfs;

	if (moat_safe_open(rootfd, "/dev/pts", O_PATH | O_DIRECTORY, 0, 0, &fd, NULL) < 0 ||
	    fstatfs(fd, &sfs) < 0 || sfs.f_type != DEVPTS_SUPER_MAGIC)
		return -1;
	return TAKE_FD(fd);
}

/* ---- START ------------------------------------------------------------------------------------ */

static int mount_rootfs(const struct agent_config *cfg, moat_error *err)
{
	const char *type = cfg->rootfs == ROOTFS_9P ? "9p" : "virtiofs";
	/* 9p: the protocol dialect with Linux semantics; 256 KiB messages
	 * instead of 8 KiB, or every read is a round trip per page. */
	const char *data =
		cfg->rootfs == ROOTFS_9P ? "trans=virtio,version=9p2000.L,msize=262144" : NULL;

	mkdir(ROOTFS_DIR, 0755);
	if (mount(cfg->tag, ROOTFS_DIR, type, 0, data) < 0)
		return moat_error_set(err, errno, "mount the rootfs (%s, tag %s)", type, cfg->tag);
	return 0;
}

/* A member's rootfs: its directory in the pod's share, which the agent mounted before the
 * container's mount namespace was made; the share itself leaves the container's view. */
static int bind_member_rootfs(const char *name, moat_error *err)
{
	_cleanup_close_ int pod = open(AGENT_POD_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -1;
	char source[64];

	if (pod < 0)
		return moat_error_set(err, errno, "open the pod's share");
	fd = openat(pod, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "the pod's share has no directory %s", name);
	fd_path(source, sizeof(source), fd);
	mkdir(ROOTFS_DIR, 0755);
	if (mount(source, ROOTFS_DIR, NULL, MS_BIND | MS_REC, NULL) < 0)
		return moat_error_set(err, errno, "bind the rootfs from the pod's share");
	agent_close_fd(&fd);
	agent_close_fd(&pod);
	if (umount2(AGENT_POD_DIR, MNT_DETACH) < 0)
		return moat_error_set(err, errno, "detach the pod's share");
	return 0;
}

static int switch_root(moat_error *err)
{
	if (chdir(ROOTFS_DIR) < 0)
		return moat_error_set(err, errno, "chdir %s", ROOTFS_DIR);
	if (mount(ROOTFS_DIR, "/", NULL, MS_MOVE, NULL) < 0)
		return moat_error_set(err, errno, "move the rootfs over /");
	if (chroot(".") < 0)
		return moat_error_set(err, errno, "chroot into the rootfs");
	if (chdir("/") < 0)
		return moat_error_set(err, errno, "chdir /");
	return 0;
}

/* /dev (unless the config mounts one), then the config's mounts in order. */
static int make_mounts(int rootfd, const struct moat_msg_start *s, const int *shares,
		       moat_error *err)
{
	int r;

	if (!mounts_dev(s)) {
		/* nr_inodes: one inode per page of size=, as every tmpfs moat makes
		 * (MOAT_TMPFS_BYTES_PER_INODE, src/libmoat/mount/mount.h) */
		static const struct moat_proto_mount dev = {
			"tmpfs", "tmpfs", "/dev", MS_NOSUID | MS_STRICTATIME,
			"mode=755,size=65536k,nr_inodes=16384"
		};

		r = do_mount(rootfd, &dev, err);
		if (r < 0)
			return moat_error_prefix(err, "mount tmpfs on /dev");
	}
	for (size_t i = 0; i < s->n_mounts; i++) {
		const struct moat_proto_mount *m = &s->mounts[i];

		r = is_share(m) ? expose_share(rootfd, m, shares[i], err)
				: do_mount(rootfd, m, err);
		if (r < 0)
			return moat_error_prefix(err, "mount %s on %s", m->type, m->dest);
	}
	return 0;
}

/* ---- linux.readonlyPaths and linux.maskedPaths --------------------------------------------- */

/* The path, resolved inside the rootfs; 0 with *ret_fd -1 when it does not exist. */
static int open_existing(int rootfd, const char *path, int *ret_fd, moat_error *err)
{
	int r = moat_safe_open(rootfd, path, O_PATH, 0, 0, ret_fd, NULL);

	if (r == -ENOENT) {
		*ret_fd = -1;
		return 0;
	}
	return r < 0 ? moat_error_set(err, -r, "open") : 0;
}

/* Bound onto itself with its submounts, the top mount read-only, as container mode does
 * without mount_setattr. */
static int readonly_one(int rootfd, const char *path, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	char target[64];

	if (open_existing(rootfd, path, &fd, err) < 0)
		return moat_error_ret(err);
	if (fd < 0)
		return 0;
	fd_path(target, sizeof(target), fd);
	if (mount(target, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		return moat_error_set(err, errno, "bind");
	return mount_at(rootfd, path, NULL, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL, err);
}

/* A directory under an empty read-only tmpfs, anything else under the guest's /dev/null. */
static int mask_one(int rootfd, const char *path, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	char target[64];
	struct stat st;

	if (open_existing(rootfd, path, &fd, err) < 0)
		return moat_error_ret(err);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat");
	fd_path(target, sizeof(target), fd);
	if (S_ISDIR(st.st_mode)
		    ? mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			    "size=4k,nr_inodes=1") < 0
		    : mount("/dev/null", target, NULL, MS_BIND, NULL) < 0)
		return moat_error_set(err, errno, "mount");
	return 0;
}

static int protect_paths(int rootfd, const struct moat_msg_start *s, moat_error *err)
{
	for (size_t i = 0; i < s->n_readonly; i++)
		if (readonly_one(rootfd, s->readonly[i], err) < 0)
			return moat_error_prefix(err, "linux.readonlyPaths[%zu] (%s)", i,
						 s->readonly[i]);
	for (size_t i = 0; i < s->n_masked; i++)
		if (mask_one(rootfd, s->masked[i], err) < 0)
			return moat_error_prefix(err, "linux.maskedPaths[%zu] (%s)", i,
						 s->masked[i]);
	return 0;
}

int agent_setup_rootfs(const struct agent_config *cfg, const struct moat_msg_start *s,
		       int *ret_devpts, moat_error *err)
{
	_cleanup_close_ int rootfd = -1, devpts = -1;
	int *shares = xcalloc(s->n_mounts + 1, sizeof(int));
	int r;

	r = s->name != NULL ? bind_member_rootfs(s->name, err) : mount_rootfs(cfg, err);
	if (r == 0 && (rootfd = open(ROOTFS_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = moat_error_set(err, errno, "open %s", ROOTFS_DIR);
	if (r == 0)
		r = open_shares(rootfd, s, shares, err);
	if (r == 0)
		r = make_mounts(rootfd, s, shares, err);
	close_shares(shares, s->n_mounts);
	if (r < 0)
		return r;
	r = populate_dev(rootfd, err);
	if (r == 0)
		r = protect_paths(rootfd, s, err);
	if (r < 0)
		return r;
	devpts = open_devpts(rootfd);
	if (s->root_readonly &&
	    mount(NULL, ROOTFS_DIR, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return moat_error_set(err, errno, "remount the rootfs read-only");
	if (s->hostname != NULL && sethostname(s->hostname, strlen(s->hostname)) < 0)
		return moat_error_set(err, errno, "sethostname %s", s->hostname);
	r = switch_root(err);
	if (r < 0)
		return r;
	*ret_devpts = TAKE_FD(devpts);
	return 0;
}
