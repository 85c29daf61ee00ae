/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container's filesystem view, in two phases (see rootfs.h). */
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devices.h"
#include "mount.h"
#include "safe-path.h"
#include "utils.h"

struct moat_rootfs {
	int rootfd; /* O_PATH: the root of the rootfs bind mount */
	struct moat_rootfs_opts opts;
	unsigned long root_propagation; /* applied to the root once entered; 0: none */
	bool root_propagation_rec;
	struct moat_mount_src *srcs; /* one per cfg->mounts[i]; fd -1 when not a bind */
	size_t n_srcs;
	struct moat_mount_env env;
	struct moat_devices *dev;
};

/* linux.rootfsPropagation. Whatever it says, the inherited tree becomes rslave (rprivate for
 * the private forms) in phase 1, so no container mount ever propagates to the host; the shared
 * and unbindable forms then apply to the container root once it is entered, where "shared"
 * makes a peer group of the container's own. */
static const struct {
	const char *name; /* NULL: the field is absent */
	unsigned long host;
	unsigned long root;
	bool root_rec;
} propagation_table[] = {
	{ NULL, MS_SLAVE, 0, false },
	{ "slave", MS_SLAVE, 0, false },
	{ "rslave", MS_SLAVE, 0, false },
	{ "private", MS_PRIVATE, 0, false },
	{ "rprivate", MS_PRIVATE, 0, false },
	{ "shared", MS_SLAVE, MS_SHARED, false },
	{ "rshared", MS_SLAVE, MS_SHARED, true },
	{ "unbindable", MS_SLAVE, MS_UNBINDABLE, false },
	{ "runbindable", MS_SLAVE, MS_UNBINDABLE, true },
};

static int find_propagation(const struct oci_config *cfg, size_t *ret, moat_error *err)
{
	const char *name = cfg->linux ? cfg->linux->rootfs_propagation : NULL;
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(propagation_table); i++) {
		const char *row = propagation_table[i].name;

		if ((row == NULL && name == NULL) || (row && name && strcmp(row, name) == 0)) {
			*ret = i;
			return 0;
		}
	}
	return moat_error_msg(err, EINVAL, "linux.rootfsPropagation: unknown value '%s'", name);
}

/* ---- phase 1 ------------------------------------------------------------------------------ */

/* "/dev", "//dev/", "/./dev": lexically the container's /dev. */
static bool is_dev(const char *path)
{
	const char *p = path;

	while (*p == '/' || (p[0] == '.' && p[1] == '/'))
		p++;
	if (strncmp(p, "dev", 3) != 0)
		return false;
	for (p += 3; *p == '/'; p++)
		;
	return *p == '\0';
}

/* When the config binds something over /dev (the host's /dev, a prepared directory), its
 * devices are that directory's business: moat creates none there, as runc and crun do. */
static bool dev_is_bound(const struct oci_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->mounts_len; i++)
		if (is_dev(cfg->mounts[i]->destination) && moat_mount_is_bind(cfg->mounts[i]))
			return true;
	return false;
}

static int make_tree_private(unsigned long propagation, moat_error *err)
{
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct moat_mount_target t = { root, root, "/" };

	if (root < 0)
		return moat_error_set(err, errno, "open /");
	if (moat_mount_propagation(&t, propagation, true, err) < 0)
		return moat_error_prefix(err, "make the mount tree %s",
					 propagation == MS_PRIVATE ? "rprivate" : "rslave");
	return 0;
}

static int mount_id(int fd, uint64_t *ret)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -ENOSYS;
	*ret = stx.stx_mnt_id;
	return 0;
}

/* Bind the rootfs onto itself (recursively) and open the new mount: the root of what follows,
 * and a mount point for pivot_root. path is the caller's, so it is opened by path; the result
 * must be a different mount of the same directory. idmapped (taken over): an idmapped clone
 * of the rootfs made by moat on the host side, bound instead; -1 for none. */
static int bind_rootfs(const char *path, int idmapped, int *ret_fd, moat_error *err)
{
	struct moat_mount_src src = MOAT_MOUNT_SRC_INIT;
	struct moat_mount_opts none = { 0 };
	_cleanup_close_ int under = -1, host = -1, fd = -1;
	uint64_t id_under = 0, id_top = 0;
	int r;

	if (idmapped >= 0)
		src = (struct moat_mount_src){
			.fd = idmapped, .is_clone = true, .recursive = true, .fmt = S_IFDIR
		};
	under = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (under < 0 || host < 0) {
		moat_mount_src_close(&src);
		return moat_error_set(err, errno, "open the rootfs '%s'", path);
	}
	if (idmapped < 0 && moat_mount_src_open(under, "", true, &src, err) < 0)
		return moat_error_ret(err);
	r = moat_mount_bind(&src, &(struct moat_mount_target){ under, host, path }, &none, err);
	moat_mount_src_close(&src);
	if (r < 0)
		return moat_error_prefix(err, "bind the rootfs '%s' onto itself", path);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "open the rootfs '%s'", path);
	r = mount_id(under, &id_under);
	if (r == 0)
		r = mount_id(fd, &id_top);
	if (r == 0 && id_under == id_top)
		r = -EXDEV;
	if (r < 0 && r != -ENOSYS)
		return moat_error_set(err, -r, "the rootfs '%s' changed while it was bound", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* A symlinked /dev is refused before anything is made (devices.h). */
static int check_dev(int rootfd, moat_error *err)
{
	if (moat_devices_check_dev(rootfd, err) < 0)
		return moat_error_prefix(err, "root.path");
	return 0;
}

static int prepare_sources(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err)
{
	size_t i;

	r->srcs = xcalloc(cfg->mounts_len, sizeof(*r->srcs));
	for (i = 0; i < cfg->mounts_len; i++)
		r->srcs[i].fd = -1;
	r->n_srcs = cfg->mounts_len;
	for (i = 0; i < cfg->mounts_len; i++) {
		int idmapped = r->opts.idmapped ? TAKE_FD(r->opts.idmapped[i]) : -1;

		if (moat_mount_entry_prepare(cfg->mounts[i], i, idmapped, &r->srcs[i], err) < 0)
			return moat_error_ret(err);
	}
	return 0;
}

static int take_rootfs_idmapped(struct moat_rootfs *r, const struct oci_config *cfg)
{
	return r->opts.idmapped ? TAKE_FD(r->opts.idmapped[cfg->mounts_len]) : -1;
}

int moat_rootfs_prepare(const struct oci_config *cfg, const char *rootfs_path,
			const struct moat_rootfs_opts *opts, struct moat_rootfs **ret,
			moat_error *err)
{
	struct moat_rootfs *r = xcalloc(1, sizeof(*r));
	size_t prop = 0;

	r->rootfd = -1;
	r->env.host_sys.fd = -1;
	r->opts = *opts;
	if (find_propagation(cfg, &prop, err) < 0)
		goto fail;
	r->root_propagation = propagation_table[prop].root;
	r->root_propagation_rec = propagation_table[prop].root_rec;
	if (make_tree_private(propagation_table[prop].host, err) < 0 ||
	    bind_rootfs(rootfs_path, take_rootfs_idmapped(r, cfg), &r->rootfd, err) < 0 ||
	    check_dev(r->rootfd, err) < 0 ||
	    moat_mount_env_prepare(cfg, opts->userns, &r->env, err) < 0 ||
	    prepare_sources(r, cfg, err) < 0)
		goto fail;
	if (!dev_is_bound(cfg) && moat_devices_prepare(cfg->linux, opts->userns, &r->dev, err) < 0)
		goto fail;
	*ret = r;
	return 0;
fail:
	moat_rootfs_free(r);
	return moat_error_ret(err);
}

void moat_rootfs_free(struct moat_rootfs *r)
{
	size_t i;

	if (r == NULL)
		return;
	if (r->rootfd >= 0)
		close(r->rootfd);
	for (i = 0; i < r->n_srcs; i++)
		moat_mount_src_close(&r->srcs[i]);
	free(r->srcs);
	moat_mount_env_release(&r->env);
	moat_devices_free(r->dev);
	free(r);
}

/* ---- phase 2 ------------------------------------------------------------------------------ */

/* pivot_root(".", ".") stacks the old root on the new one; it is made rslave so that its
 * lazy unmount cannot reach the host, then detached. */
static int pivot(moat_error *err)
{
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return moat_error_set(err, errno, "pivot_root");
	if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		return moat_error_set(err, errno, "make the old root rslave");
	if (umount2(".", MNT_DETACH) < 0)
		return moat_error_set(err, errno, "detach the old root");
	return 0;
}

/* --no-pivot: move the rootfs mount over "/" and chroot into it. The host's mounts stay
 * reachable from a chroot escape; that is why pivot_root is the default. */
static int move_chroot(moat_error *err)
{
	if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
		return moat_error_set(err, errno, "move the rootfs onto /");
	if (chroot(".") < 0)
		return moat_error_set(err, errno, "chroot");
	return 0;
}

static int enter_root(struct moat_rootfs *r, moat_error *err)
{
	if (fchdir(r->rootfd) < 0)
		return moat_error_set(err, errno, "enter the rootfs");
	if ((r->opts.no_pivot ? move_chroot(err) : pivot(err)) < 0)
		return moat_error_ret(err);
	if (chdir("/") < 0)
		return moat_error_set(err, errno, "chdir /");
	return 0;
}

/* CVE-2025-31133: /dev/null must be the 1:3 character device before it is bound over anything;
 * the check and the bind use the same fd. */
static int open_dev_null(int rootfd, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (moat_safe_open(rootfd, "/dev/null", O_PATH | O_NOFOLLOW, 0, 0, &fd, err) < 0)
		return moat_error_ret(err);
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat /dev/null");
	if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
		return moat_error_msg(err, EPERM, "/dev/null is not the 1:3 character device");
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The path, resolved inside the root; 0 with *ret_fd -1 when it does not exist. */
static int open_existing(int rootfd, const char *path, int *ret_fd, moat_error *err)
{
	int r = moat_safe_open(rootfd, path, O_PATH, 0, 0, ret_fd, err);

	if (r == -ENOENT) {
		moat_error_drop(err);
		*ret_fd = -1;
		return 0;
	}
	return r;
}

/* A masked directory's tmpfs: empty, one page and its root's inode (mount.h). */
#define MASK_TMPFS_KIB 4
#define MASK_TMPFS_INODES 1
MOAT_TMPFS_CHECK(MASK_TMPFS_KIB, MASK_TMPFS_INODES);

static int mask_one(int rootfd, int null, const char *path, moat_error *err)
{
	/* a directory is covered by an empty read-only tmpfs */
	char *limits[] = { (char *)MOAT_TMPFS_SIZE_OPT(MASK_TMPFS_KIB),
			   (char *)MOAT_TMPFS_INODES_OPT(MASK_TMPFS_INODES), NULL };
	struct moat_mount_opts ro_tmpfs = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
							MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
					    .data = limits,
					    .data_len = 2 };
	struct moat_mount_opts none = { 0 };
	struct moat_mount_src src = { -1, false, false, S_IFCHR };
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (open_existing(rootfd, path, &fd, err) < 0)
		return moat_error_ret(err);
	if (fd < 0)
		return 0; /* nothing to mask or protect */
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat");
	if (S_ISDIR(st.st_mode))
		return moat_mount_fs("tmpfs", "tmpfs", &ro_tmpfs,
				     &(struct moat_mount_target){ fd, rootfd, path }, NULL, err);
	src.fd = fcntl(null, F_DUPFD_CLOEXEC, 3);
	if (src.fd < 0)
		return moat_error_set(err, errno, "dup /dev/null");
	r = moat_mount_bind(&src, &(struct moat_mount_target){ fd, rootfd, path }, &none, err);
	moat_mount_src_close(&src);
	return r < 0 ? moat_error_prefix(err, "bind /dev/null") : 0;
}

static int mask_paths(int rootfd, const struct oci_linux *lx, moat_error *err)
{
	_cleanup_close_ int null = -1;
	size_t i;

	if (lx == NULL || lx->masked_paths_len == 0)
		return 0;
	if (open_dev_null(rootfd, &null, err) < 0)
		return moat_error_prefix(err, "linux.maskedPaths");
	for (i = 0; i < lx->masked_paths_len; i++)
		if (mask_one(rootfd, null, lx->masked_paths[i], err) < 0)
			return moat_error_prefix(err, "linux.maskedPaths[%zu] (%s)", i,
						 lx->masked_paths[i]);
	return 0;
}

/* Bind the path onto itself, with its submounts, read-only throughout (only the top mount
 * without mount_setattr). */
static int readonly_one(int rootfd, const char *path, moat_error *err)
{
	struct moat_mount_opts ro = { .attr_set = MOUNT_ATTR_RDONLY };
	struct moat_mount_src src = { -1, false, true, 0 };
	_cleanup_close_ int fd = -1;
	int r;

	if (open_existing(rootfd, path, &fd, err) < 0)
		return moat_error_ret(err);
	if (fd < 0)
		return 0; /* nothing to mask or protect */
	if (moat_mount_new_api())
		ro.rec_attr_set = MOUNT_ATTR_RDONLY;
	src.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (src.fd < 0)
		return moat_error_set(err, errno, "dup");
	r = moat_mount_bind(&src, &(struct moat_mount_target){ fd, rootfd, path }, &ro, err);
	moat_mount_src_close(&src);
	return r;
}

static int readonly_paths(int rootfd, const struct oci_linux *lx, moat_error *err)
{
	size_t i;

	for (i = 0; lx != NULL && i < lx->readonly_paths_len; i++)
		if (readonly_one(rootfd, lx->readonly_paths[i], err) < 0)
			return moat_error_prefix(err, "linux.readonlyPaths[%zu] (%s)", i,
						 lx->readonly_paths[i]);
	return 0;
}

/* A mount's own propagation ("shared", "rslave"...), applied again once the root's is: the
 * root's recursive one (rslave when the config says nothing) would override it. The mount is
 * found by its destination inside the entered root, as the paths above are. */
static int mount_propagation(int root, const struct oci_mount *m, size_t idx, moat_error *err)
{
	struct moat_mount_opts o;
	_cleanup_close_ int fd = -1;
	int r;

	if (moat_mount_opts_parse(m->options, m->options_len, &o, err) < 0)
		return moat_error_prefix(err, "mounts[%zu] (%s)", idx, m->destination);
	r = o.propagation == 0 ? 0 : moat_safe_open(root, m->destination, O_PATH, 0, 0, &fd, err);
	if (r == 0 && o.propagation != 0)
		r = moat_mount_propagation(&(struct moat_mount_target){ fd, root, m->destination },
					   o.propagation, o.propagation_rec, err);
	moat_mount_opts_release(&o);
	if (r < 0)
		return moat_error_prefix(err, "mounts[%zu] (%s): propagation", idx, m->destination);
	return 0;
}

/* Inside the entered root: paths, the root's propagation, root.readonly. */
static int finish_root(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err)
{
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct moat_mount_target t = { root, root, "/" };

	if (root < 0)
		return moat_error_set(err, errno, "open /");
	if (readonly_paths(root, cfg->linux, err) < 0 || mask_paths(root, cfg->linux, err) < 0)
		return moat_error_ret(err);
	if (r->root_propagation != 0 &&
	    moat_mount_propagation(&t, r->root_propagation, r->root_propagation_rec, err) < 0)
		return moat_error_prefix(err, "linux.rootfsPropagation");
	/* (the workload's mounts in a VM's jail are the guest's to see, not the jail's) */
	for (size_t i = 0; i < (r->opts.inner ? r->opts.inner->first : cfg->mounts_len); i++)
		if (mount_propagation(root, cfg->mounts[i], i, err) < 0)
			return moat_error_ret(err);
	if (cfg->root != NULL && cfg->root->readonly &&
	    moat_mount_setattr(&t, MOUNT_ATTR_RDONLY, 0, false, err) < 0)
		return moat_error_prefix(err, "root.readonly");
	return 0;
}

/* The inner root, once the mounts before it made it: an O_PATH fd of its mount's root. */
static int open_inner(const struct moat_rootfs *r, int *ret_fd, moat_error *err)
{
	const struct moat_rootfs_inner *in = r->opts.inner;
	uint64_t id_root = 0, id_inner = 0;
	_cleanup_close_ int fd = -1;

	if (moat_safe_open(r->rootfd, in->path, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0,
			   MOAT_RESOLVE_NO_SYMLINKS, &fd, err) < 0)
		return moat_error_prefix(err, "open %s", in->path);
	if (mount_id(r->rootfd, &id_root) == 0 && mount_id(fd, &id_inner) == 0 &&
	    id_root == id_inner)
		return moat_error_msg(err, EXDEV, "%s is not a mount of its own", in->path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Where the mount on point was made, as a path inside the inner root innerfd: the two fds'
 * paths, the first a prefix of the second. Anything else (which the resolution inside the
 * inner root rules out) is an error, so that no mount outside it goes unnoticed. */
static int landed_at(int innerfd, int point, char **ret, moat_error *err)
{
	char inner[PATH_MAX], at[PATH_MAX], link[64];
	ssize_t ni, na;
	size_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", innerfd);
	ni = readlink(link, inner, sizeof(inner) - 1);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", point);
	na = readlink(link, at, sizeof(at) - 1);
	if (ni < 0 || na < 0)
		return moat_error_set(err, errno, "find where the mount was made");
	inner[ni] = at[na] = '\0';
	n = strcmp(inner, "/") == 0 ? 0 : (size_t)ni;
	if (strncmp(at, inner, n) != 0 || (at[n] != '/' && at[n] != '\0'))
		return moat_error_msg(err, EXDEV, "made on %s, outside %s", at, inner);
	*ret = xstrdup(at[n] == '\0' ? "/" : at + n);
	return 0;
}

/* cfg->mounts in order; with an inner root, its mounts inside it, which then becomes
 * read-only when asked. */
static int make_mounts(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err)
{
	const struct moat_rootfs_inner *in = r->opts.inner;
	size_t first = in ? in->first : cfg->mounts_len;
	_cleanup_close_ int inner = -1;
	size_t i;

	for (i = 0; i < cfg->mounts_len; i++) {
		_cleanup_close_ int point = -1;

		if (i == first && open_inner(r, &inner, err) < 0)
			return moat_error_ret(err);
		if (i < first) {
			if (moat_mount_entry(r->rootfd, cfg->mounts[i], i, &r->srcs[i], &r->env,
					     NULL, err) < 0)
				return moat_error_ret(err);
			continue;
		}
		if (moat_mount_entry(inner, cfg->mounts[i], in->index[i - first], &r->srcs[i],
				     &r->env, &point, err) < 0)
			return moat_error_ret(err);
		if (landed_at(inner, point, &in->landed[i - first], err) < 0)
			return moat_error_prefix(err, "mounts[%zu] (%s)", in->index[i - first],
						 cfg->mounts[i]->destination);
	}
	if (in == NULL || (!in->readonly && in->dirs == NULL))
		return 0;
	if (inner < 0 && open_inner(r, &inner, err) < 0)
		return moat_error_ret(err);
	for (i = 0; in->dirs != NULL && in->dirs[i] != NULL; i++) {
		_cleanup_close_ int dir = -1;

		if (moat_safe_mkdir_p(inner, in->dirs[i], 0755, &dir, err) < 0)
			return moat_error_prefix(err, "make the mount point %s", in->dirs[i]);
	}
	if (!in->readonly)
		return 0;
	if (moat_mount_setattr(&(struct moat_mount_target){ inner, r->rootfd, in->path },
			       MOUNT_ATTR_RDONLY, 0, false, err) < 0)
		return moat_error_prefix(err, "root.readonly");
	return 0;
}

/* process.cwd, made inside the root when it is missing (runc and crun do so), the directory
 * it names given to the process's user. An existing one is left as it is (entering it comes
 * later, and reports what is wrong with it). */
static int make_cwd(int rootfd, const struct oci_process *p, moat_error *err)
{
	moat_error ignored = MOAT_ERROR_INIT;
	_cleanup_close_ int fd = -1;
	int r;

	if (p == NULL || p->cwd == NULL)
		return 0;
	r = moat_safe_open(rootfd, p->cwd, O_PATH, 0, 0, &fd, &ignored);
	moat_error_clear(&ignored);
	if (r != -ENOENT)
		return 0;
	if (moat_safe_mkdir_p(rootfd, p->cwd, 0755, &fd, err) < 0)
		return moat_error_prefix(err, "process.cwd '%s'", p->cwd);
	if (p->user != NULL && fchownat(fd, "", p->user->uid, p->user->gid, AT_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "process.cwd '%s': give it to uid %u", p->cwd,
				      p->user->uid);
	return 0;
}

int moat_rootfs_mount(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err)
{
	if (cfg->mounts_len != r->n_srcs ||
	    (r->opts.inner != NULL && r->opts.inner->first > cfg->mounts_len))
		return moat_error_msg(err, EINVAL, "the config changed between the rootfs phases");
	if (make_mounts(r, cfg, err) < 0)
		return moat_error_ret(err);
	/* r->dev is NULL when the config binds something over /dev */
	if (r->dev != NULL && (moat_devices_create(r->dev, r->rootfd, err) < 0 ||
			       moat_devices_symlinks(r->rootfd, err) < 0))
		return moat_error_ret(err);
	return make_cwd(r->rootfd, cfg->process, err);
}

int moat_rootfs_enter(struct moat_rootfs *r, const struct oci_config *cfg, moat_error *err)
{
	if (enter_root(r, err) < 0)
		return moat_error_prefix(err, "enter the container root");
	return finish_root(r, cfg, err);
}
