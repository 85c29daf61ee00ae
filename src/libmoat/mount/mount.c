/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: making mounts on file descriptors (see mount.h).
 *
 * The first half is the mechanism (bind, new filesystem, attributes, propagation; new mount API
 * or mount(2) fallback); the second half is the config: one handler per filesystem type that
 * needs care, all others mounted as written.
 */
#include "mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "safe-path.h"
#include "strv.h"
#include "utils.h"

#ifndef ST_NOSYMFOLLOW
#define ST_NOSYMFOLLOW 0x2000
#endif

/* tmpcopyup: directory depth and copy buffer */
#define COPYUP_MAX_DEPTH 64
#define COPYUP_BUF 16384
/* The largest /proc/self/gid_map or /proc/self/cgroup moat reads. */
#define PROC_FILE_MAX (64 * 1024)

/* "/proc/self/fd/N": how the mount(2) fallback names an fd. */
struct fd_path {
	char s[32];
};

static struct fd_path fdp(int fd)
{
	struct fd_path p;

	snprintf(p.s, sizeof(p.s), "/proc/self/fd/%d", fd);
	return p;
}

static int new_api_state = -1;

bool moat_mount_new_api(void)
{
	const char *force = getenv("MOAT_TEST_FORCE_MOUNT_FALLBACK");

	if (force != NULL && strcmp(force, "1") == 0)
		return false;
	if (new_api_state < 0) {
		/* invalid arguments: the answer is EFAULT/EINVAL/EBADF, or ENOSYS */
		bool ok = fsopen(NULL, 0) < 0 && errno != ENOSYS;

		ok = ok && mount_setattr(-1, NULL, 0, NULL, 0) < 0 && errno != ENOSYS;
		new_api_state = ok;
	}
	return new_api_state;
}

/* ---- mount(2) fallback helpers ---------------------------------------------------------- */

/* Per-mount flags: MOUNT_ATTR_* <-> MS_* <-> ST_* (statvfs). The atime mode is apart. */
static const struct {
	uint64_t attr;
	unsigned long ms;
	unsigned long st;
} attr_ms_table[] = {
	{ MOUNT_ATTR_RDONLY, MS_RDONLY, ST_RDONLY },
	{ MOUNT_ATTR_NOSUID, MS_NOSUID, ST_NOSUID },
	{ MOUNT_ATTR_NODEV, MS_NODEV, ST_NODEV },
	{ MOUNT_ATTR_NOEXEC, MS_NOEXEC, ST_NOEXEC },
	{ MOUNT_ATTR_NODIRATIME, MS_NODIRATIME, ST_NODIRATIME },
	{ MOUNT_ATTR_NOSYMFOLLOW, MS_NOSYMFOLLOW, ST_NOSYMFOLLOW },
};

#define MS_ATIME_MASK (MS_NOATIME | MS_STRICTATIME | MS_RELATIME)

static unsigned long atime_ms(uint64_t mode)
{
	switch (mode & MOUNT_ATTR__ATIME) {
	case MOUNT_ATTR_NOATIME: return MS_NOATIME;
	case MOUNT_ATTR_STRICTATIME: return MS_STRICTATIME;
	default: return MS_RELATIME;
	}
}

/* MS_REMOUNT|MS_BIND replaces all per-mount flags: start from the current ones. */
static int legacy_remount(int fd, uint64_t set, uint64_t clr, moat_error *err)
{
	unsigned long ms = 0;
	struct statvfs sv;
	size_t i;

	if (fstatvfs(fd, &sv) < 0)
		return moat_error_set(err, errno, "statvfs");
	for (i = 0; i < MOAT_ARRAY_SIZE(attr_ms_table); i++) {
		if (sv.f_flag & attr_ms_table[i].st)
			ms |= attr_ms_table[i].ms;
		if (clr & attr_ms_table[i].attr)
			ms &= ~attr_ms_table[i].ms;
		if (set & attr_ms_table[i].attr)
			ms |= attr_ms_table[i].ms;
	}
	ms |= (sv.f_flag & ST_NOATIME) ? MS_NOATIME : (sv.f_flag & ST_RELATIME) ? MS_RELATIME : 0;
	if (clr & MOUNT_ATTR__ATIME)
		ms = (ms & ~MS_ATIME_MASK) | atime_ms(set);
	if (mount(NULL, fdp(fd).s, NULL, MS_REMOUNT | MS_BIND | ms, NULL) < 0)
		return moat_error_set(err, errno, "remount");
	return 0;
}

/* After mount(2) on "/proc/self/fd/N", the fd still names the covered directory: resolve the
 * path again to reach the new mount on top. */
static int legacy_top(const struct moat_mount_target *t, int *ret_fd, moat_error *err)
{
	return moat_safe_open(t->rootfd, t->path, O_PATH, 0, 0, ret_fd, err);
}

static int legacy_propagation(int fd, unsigned long prop, bool rec, moat_error *err)
{
	if (prop == 0)
		return 0;
	if (mount(NULL, fdp(fd).s, NULL, prop | (rec ? MS_REC : 0), NULL) < 0)
		return moat_error_set(err, errno, "set propagation");
	return 0;
}

/* ---- attributes and propagation ----------------------------------------------------------- */

static int setattr_fd(int fd, uint64_t set, uint64_t clr, unsigned long prop, bool rec,
		      moat_error *err)
{
	struct mount_attr a = { .attr_set = set, .attr_clr = clr, .propagation = prop };

	if (set == 0 && clr == 0 && prop == 0)
		return 0;
	if (mount_setattr(fd, "", AT_EMPTY_PATH | (rec ? AT_RECURSIVE : 0), &a, sizeof(a)) < 0)
		return moat_error_set(err, errno, "mount_setattr%s", rec ? " (recursive)" : "");
	return 0;
}

int moat_mount_setattr(const struct moat_mount_target *t, uint64_t set, uint64_t clr,
		       bool recursive, moat_error *err)
{
	if (moat_mount_new_api())
		return setattr_fd(t->fd, set, clr, 0, recursive, err);
	if (recursive && (set != 0 || clr != 0))
		return moat_error_msg(err, ENOSYS,
				      "recursive mount attributes need mount_setattr (Linux 5.12)");
	if (set == 0 && clr == 0)
		return 0;
	return legacy_remount(t->fd, set, clr, err);
}

int moat_mount_propagation(const struct moat_mount_target *t, unsigned long propagation,
			   bool recursive, moat_error *err)
{
	if (moat_mount_new_api())
		return setattr_fd(t->fd, 0, 0, propagation, recursive, err);
	return legacy_propagation(t->fd, propagation, recursive, err);
}

/* ---- bind --------------------------------------------------------------------------------- */

int moat_mount_src_open(int dirfd, const char *path, bool recursive, struct moat_mount_src *ret,
			moat_error *err)
{
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0) |
			 (path[0] == '\0' ? AT_EMPTY_PATH : 0);
	_cleanup_close_ int fd = -1;
	bool clone = moat_mount_new_api();
	struct stat st;

	if (clone)
		fd = open_tree(dirfd, path, flags);
	else if (path[0] == '\0')
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	else
		fd = openat(dirfd, path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "%s '%s'", recursive ? "rbind" : "bind", path);
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat '%s'", path);
	ret->fd = TAKE_FD(fd);
	ret->is_clone = clone;
	ret->recursive = recursive;
	ret->fmt = st.st_mode & S_IFMT;
	return 0;
}

void moat_mount_src_close(struct moat_mount_src *src)
{
	if (src->fd >= 0)
		close(src->fd);
	src->fd = -1;
}

static int legacy_bind(struct moat_mount_src *src, const struct moat_mount_target *t,
		       const struct moat_mount_opts *o, moat_error *err)
{
	_cleanup_close_ int top = -1;

	if (o->rec_attr_set != 0 || o->rec_attr_clr != 0)
		return moat_error_msg(err, ENOSYS,
				      "recursive mount attributes need mount_setattr (Linux 5.12)");
	if (mount(fdp(src->fd).s, fdp(t->fd).s, NULL, MS_BIND | (src->recursive ? MS_REC : 0),
		  NULL) < 0)
		return moat_error_set(err, errno, "mount");
	if (o->attr_set == 0 && o->attr_clr == 0 && o->propagation == 0)
		return 0;
	if (legacy_top(t, &top, err) < 0)
		return moat_error_ret(err);
	if ((o->attr_set != 0 || o->attr_clr != 0) &&
	    legacy_remount(top, o->attr_set, o->attr_clr, err) < 0)
		return moat_error_ret(err);
	return legacy_propagation(top, o->propagation, o->propagation_rec, err);
}

int moat_mount_bind(struct moat_mount_src *src, const struct moat_mount_target *t,
		    const struct moat_mount_opts *o, moat_error *err)
{
	_cleanup_close_ int tree = -1;

	if (src->fd < 0)
		return moat_error_msg(err, EBADF, "the bind source was already used");
	if (!moat_mount_new_api())
		return legacy_bind(src, t, o, err);
	if (src->is_clone) {
		tree = TAKE_FD(src->fd);
	} else {
		tree = open_tree(src->fd, "",
				 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					 (src->recursive ? AT_RECURSIVE : 0));
		if (tree < 0)
			return moat_error_set(err, errno, "open_tree");
	}
	if (setattr_fd(tree, o->attr_set, o->attr_clr, 0, false, err) < 0 ||
	    setattr_fd(tree, o->rec_attr_set, o->rec_attr_clr, 0, true, err) < 0)
		return moat_error_ret(err);
	if (move_mount(tree, "", t->fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "move_mount");
	return setattr_fd(tree, 0, 0, o->propagation, o->propagation_rec, err);
}

/* ---- new filesystems ---------------------------------------------------------------------- */

/* The fs context keeps the kernel's own words for a failure ("e tmpfs: Bad value for 'size'"). */
static int fs_error(int fsfd, int errnum, const char *fstype, const char *what, moat_error *err)
{
	char buf[256], last[256] = "";
	ssize_t n;

	while ((n = read(fsfd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (buf[0] == 'e' && buf[1] == ' ')
			snprintf(last, sizeof(last), "%s", buf + 2);
	}
	if (last[0] != '\0')
		return moat_error_set(err, errnum, "%s: %s (%s)", fstype, what, last);
	return moat_error_set(err, errnum, "%s: %s", fstype, what);
}

static int fs_set_option(int fsfd, const char *fstype, const char *opt, moat_error *err)
{
	_cleanup_free_ char *key = xstrdup(opt);
	char *value = strchr(key, '=');
	int r;

	if (value != NULL)
		*value++ = '\0';
	if (value != NULL)
		r = fsconfig(fsfd, FSCONFIG_SET_STRING, key, value, 0);
	else
		r = fsconfig(fsfd, FSCONFIG_SET_FLAG, key, NULL, 0);
	if (r < 0) {
		_cleanup_free_ char *what = xasprintf("option '%s'", opt);

		return fs_error(fsfd, errno, fstype, what, err);
	}
	return 0;
}

/* Hand source, superblock flags and data to an fs context, then run cmd. */
static int fs_configure(int fsfd, const char *fstype, const char *source,
			const struct moat_mount_opts *o, unsigned cmd, moat_error *err)
{
	size_t i;

	if (source != NULL && fsconfig(fsfd, FSCONFIG_SET_STRING, "source", source, 0) < 0)
		return fs_error(fsfd, errno, fstype, "source", err);
	for (i = 0; i < o->sb_flags_len; i++)
		if (fs_set_option(fsfd, fstype, o->sb_flags[i], err) < 0)
			return moat_error_ret(err);
	for (i = 0; i < o->data_len; i++)
		if (fs_set_option(fsfd, fstype, o->data[i], err) < 0)
			return moat_error_ret(err);
	if (fsconfig(fsfd, cmd, NULL, NULL, 0) < 0)
		return fs_error(fsfd, errno, fstype,
				cmd == FSCONFIG_CMD_CREATE ? "create" : "reconfigure", err);
	return 0;
}

/* On a new mount the whole tree is the mount: fold the recursive attributes in. */
static uint64_t fresh_attrs(const struct moat_mount_opts *o)
{
	uint64_t set = (o->attr_set & ~o->rec_attr_clr) | o->rec_attr_set;

	if (o->rec_attr_clr & MOUNT_ATTR__ATIME)
		set = (set & ~(uint64_t)MOUNT_ATTR__ATIME) | (o->rec_attr_set & MOUNT_ATTR__ATIME);
	return set;
}

/* Superblock flags: what mount(2) takes besides the per-mount ones. */
#define MS_SB_MASK (MS_SYNCHRONOUS | MS_DIRSYNC | MS_MANDLOCK | MS_LAZYTIME | MS_I_VERSION)

/* The MS_* flags of a new mount: per-mount ones from the attributes, superblock ones as given.
 * MS_RDONLY is left out: on a new mount it would make the superblock read-only; it goes on the
 * mount afterwards instead. */
static unsigned long fresh_ms(const struct moat_mount_opts *o)
{
	uint64_t set = fresh_attrs(o);
	unsigned long ms = (o->ms_set & MS_SB_MASK) | (o->silent ? MS_SILENT : 0);
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(attr_ms_table); i++)
		if (set & attr_ms_table[i].attr)
			ms |= attr_ms_table[i].ms;
	if ((o->attr_clr | o->rec_attr_clr) & MOUNT_ATTR__ATIME)
		ms |= atime_ms(set);
	return ms & ~MS_RDONLY;
}

static int legacy_fs(const char *fstype, const char *source, const struct moat_mount_opts *o,
		     const struct moat_mount_target *t, int *ret_mfd, moat_error *err)
{
	_cleanup_free_ char *joined = NULL;
	unsigned long ms = fresh_ms(o);
	uint64_t set = fresh_attrs(o);
	_cleanup_close_ int top = -1;
	const char *data = o->data_str;

	if (data == NULL && o->data_len > 0)
		data = joined = moat_mount_data_join(o->data, o->data_len);
	if (mount(source ? source : fstype, fdp(t->fd).s, fstype, ms, data) < 0)
		return moat_error_set(err, errno, "%s: mount", fstype);
	if (legacy_top(t, &top, err) < 0)
		return moat_error_ret(err);
	if ((set & MOUNT_ATTR_RDONLY) && legacy_remount(top, MOUNT_ATTR_RDONLY, 0, err) < 0)
		return moat_error_ret(err);
	if (legacy_propagation(top, o->propagation, o->propagation_rec, err) < 0)
		return moat_error_ret(err);
	if (ret_mfd != NULL)
		*ret_mfd = TAKE_FD(top);
	return 0;
}

int moat_mount_fs(const char *fstype, const char *source, const struct moat_mount_opts *o,
		  const struct moat_mount_target *t, int *ret_mfd, moat_error *err)
{
	_cleanup_close_ int fsfd = -1, mfd = -1;

	if (!moat_mount_new_api())
		return legacy_fs(fstype, source, o, t, ret_mfd, err);
	fsfd = fsopen(fstype, FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return moat_error_set(err, errno, "%s: fsopen", fstype);
	if (fs_configure(fsfd, fstype, source, o, FSCONFIG_CMD_CREATE, err) < 0)
		return moat_error_ret(err);
	mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, (unsigned)fresh_attrs(o));
	if (mfd < 0)
		return fs_error(fsfd, errno, fstype, "fsmount", err);
	if (move_mount(mfd, "", t->fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "%s: move_mount", fstype);
	if (setattr_fd(mfd, 0, 0, o->propagation, o->propagation_rec, err) < 0)
		return moat_error_ret(err);
	if (ret_mfd != NULL)
		*ret_mfd = TAKE_FD(mfd);
	return 0;
}

/* ---- phase 1: what the config's mounts need from the host --------------------------------- */

static bool is_bind(const struct oci_mount *m, const struct moat_mount_opts *o)
{
	return o->is_bind || (m->type != NULL && strcmp(m->type, "bind") == 0);
}

bool moat_mount_is_bind(const struct oci_mount *m)
{
	struct moat_mount_opts o;
	bool r;

	if (moat_mount_opts_parse(m->options, m->options_len, &o, NULL) < 0)
		return false;
	r = is_bind(m, &o);
	moat_mount_opts_release(&o);
	return r;
}

static bool has_type(const struct oci_config *cfg, const char *type)
{
	size_t i;

	for (i = 0; i < cfg->mounts_len; i++)
		if (cfg->mounts[i]->type != NULL && strcmp(cfg->mounts[i]->type, type) == 0)
			return true;
	return false;
}

static int read_gid_map(struct moat_mount_env *env, moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;

	if (read_file_at(AT_FDCWD, "/proc/self/gid_map", PROC_FILE_MAX, &buf, NULL, err) < 0)
		return moat_error_ret(err);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint32_t in, out, count;

		if (sscanf(line, "%u %u %u", &in, &out, &count) != 3)
			continue;
		env->gid_map =
			xrealloc(env->gid_map, (env->gid_map_len + 1) * sizeof(*env->gid_map));
		env->gid_map[env->gid_map_len][0] = in;
		env->gid_map[env->gid_map_len][1] = out;
		env->gid_map[env->gid_map_len++][2] = count;
	}
	return 0;
}

static bool gid_mapped(const struct moat_mount_env *env, uint32_t gid)
{
	size_t i;

	for (i = 0; i < env->gid_map_len; i++)
		if (gid >= env->gid_map[i][0] && gid - env->gid_map[i][0] < env->gid_map[i][2])
			return true;
	return false;
}

/* /proc/self/cgroup: "4:memory:/x", "9:name=systemd:/", "0::/" (the v2 hierarchy). */
static int read_cgroups(struct moat_mount_env *env, moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;
	size_t n = 0, n_path = 0;

	if (read_file_at(AT_FDCWD, "/proc/self/cgroup", PROC_FILE_MAX, &buf, NULL, err) < 0)
		return moat_error_ret(err);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctrl = strchr(line, ':'), *end;

		if (ctrl == NULL || (end = strchr(++ctrl, ':')) == NULL)
			continue;
		*end = '\0';
		if (ctrl[0] == '\0') {
			free(env->cgroup_unified);
			env->cgroup_unified = xstrdup(end + 1);
			continue;
		}
		strv_push(&env->cgroup_v1, &n, ctrl);
		strv_push(&env->cgroup_v1_path, &n_path, end + 1);
	}
	return 0;
}

int moat_mount_env_prepare(const struct oci_config *cfg, bool userns, struct moat_mount_env *ret,
			   moat_error *err)
{
	struct moat_mount_env env = { .userns = userns, .host_sys = MOAT_MOUNT_SRC_INIT };

	if (read_gid_map(&env, err) < 0)
		goto fail;
	if ((has_type(cfg, "cgroup") || has_type(cfg, "cgroup2")) && read_cgroups(&env, err) < 0)
		goto fail;
	if (userns && has_type(cfg, "sysfs") &&
	    moat_mount_src_open(AT_FDCWD, "/sys", true, &env.host_sys, err) < 0)
		goto fail;
	*ret = env;
	return 0;
fail:
	moat_mount_env_release(&env);
	return moat_error_ret(err);
}

void moat_mount_env_release(struct moat_mount_env *env)
{
	moat_mount_src_close(&env->host_sys);
	free(env->gid_map);
	strv_free(env->cgroup_v1);
	strv_free(env->cgroup_v1_path);
	free(env->cgroup_unified);
	memset(env, 0, sizeof(*env));
	env->host_sys.fd = -1;
}

/* A source made on the host side (mount-idmap.h, mount-host.h): a detached clone, or an
 * O_PATH fd without the new mount API, as moat_mount_src_open makes them. */
static int adopt_source(int fd, const struct moat_mount_opts *o, struct moat_mount_src *ret,
			moat_error *err)
{
	struct stat st;

	*ret = (struct moat_mount_src){ .fd = fd,
					.is_clone = moat_mount_new_api(),
					.recursive = o->is_recursive };
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "stat the source made on the host side");
	ret->fmt = st.st_mode & S_IFMT;
	return 0;
}

int moat_mount_entry_prepare(const struct oci_mount *m, size_t idx, int host_fd,
			     struct moat_mount_src *ret, moat_error *err)
{
	struct moat_mount_opts o;
	int r;

	*ret = (struct moat_mount_src)MOAT_MOUNT_SRC_INIT;
	r = moat_mount_opts_parse(m->options, m->options_len, &o, err);
	if (r < 0 && host_fd >= 0)
		close(host_fd);
	if (r == 0 && host_fd >= 0)
		r = adopt_source(host_fd, &o, ret, err);
	else if (r == 0 && (o.idmap || m->uid_mappings_len > 0 || m->gid_mappings_len > 0))
		r = moat_error_msg(err, EINVAL, "idmap: no idmapped source was made");
	else if (r == 0 && is_bind(m, &o) && m->source == NULL)
		r = moat_error_msg(err, EINVAL, "bind: source is required");
	else if (r == 0 && is_bind(m, &o))
		r = moat_mount_src_open(AT_FDCWD, m->source, o.is_recursive, ret, err);
	moat_mount_opts_release(&o);
	if (r < 0) {
		moat_mount_src_close(ret);
		return moat_error_prefix(err, "mounts[%zu] (%s)", idx, m->destination);
	}
	return 0;
}

/* ---- phase 2: one config mount ------------------------------------------------------------ */

struct entry {
	const struct oci_mount *m;
	struct moat_mount_opts o;
	struct moat_mount_target t;
	struct moat_mount_src *src;
	struct moat_mount_env *env;
	int rootfd;
};

static int mount_generic(struct entry *e, moat_error *err)
{
	if (e->m->type == NULL)
		return moat_error_msg(err, EINVAL, "type is required unless the mount is a bind");
	return moat_mount_fs(e->m->type, e->m->source, &e->o, &e->t, NULL, err);
}

static int mount_bind_entry(struct entry *e, moat_error *err)
{
	if (e->src == NULL || e->src->fd < 0)
		return moat_error_msg(err, EINVAL, "bind '%s': no source was prepared",
				      e->m->source ? e->m->source : "");
	if (moat_mount_bind(e->src, &e->t, &e->o, err) < 0)
		return moat_error_prefix(err, "bind '%s'", e->m->source);
	return 0;
}

static int mount_proc(struct entry *e, moat_error *err)
{
	_cleanup_close_ int mfd = -1;

	const char *source = e->m->source ? e->m->source : "proc";

	if (moat_mount_fs("proc", source, &e->o, &e->t, &mfd, err) < 0)
		return moat_error_ret(err);
	return moat_fd_check_fs(mfd, PROC_SUPER_MAGIC, e->m->destination, "procfs", err);
}

/* sysfs belongs to the network namespace: a user namespace that does not own it (a joined host
 * network namespace) may not mount it. Then the host /sys is bound, recursively read-only. */
static int mount_sysfs(struct entry *e, moat_error *err)
{
	struct moat_mount_opts ro = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						  MOUNT_ATTR_NOEXEC | MOUNT_ATTR_RDONLY,
				      .propagation = e->o.propagation,
				      .propagation_rec = e->o.propagation_rec };
	int r;

	r = moat_mount_fs("sysfs", e->m->source ? e->m->source : "sysfs", &e->o, &e->t, NULL, err);
	if (r != -EPERM || !e->env->userns || e->env->host_sys.fd < 0)
		return r;
	moat_error_drop(err);
	if (moat_mount_new_api())
		ro.rec_attr_set = ro.attr_set;
	if (moat_mount_bind(&e->env->host_sys, &e->t, &ro, err) < 0)
		return moat_error_prefix(err, "sysfs refused in this user namespace; "
					      "read-only rbind of the host /sys");
	return 0;
}

/* gid=5 (tty) is only valid when the group is mapped in the user namespace; otherwise the
 * option is dropped and the pty group is the creator's, as runc does. */
static int mount_devpts(struct entry *e, moat_error *err)
{
	const char *gid = moat_mount_opts_get_data(&e->o, "gid");

	if (gid != NULL && !gid_mapped(e->env, (uint32_t)strtoul(gid, NULL, 10)))
		moat_mount_opts_drop_data(&e->o, "gid");
	return mount_generic(e, err);
}

/* A refused cgroup mount is an error (never skipped): say what it needs. */
static int cgroup_hint(moat_error *err)
{
	if (err != NULL && err->code == EPERM)
		return moat_error_prefix(err, "cgroup mounts in a user namespace need a cgroup "
					      "namespace (linux.namespaces type cgroup)");
	return moat_error_ret(err);
}

/* The container's own cgroup, cgpath (its line of /proc/self/cgroup), of a hierarchy of fstype
 * at t. A fresh mount's root is the root of the init's cgroup namespace: in a namespace of its
 * own that is the container's cgroup, and the mount is kept. Without one (the host's, or a
 * joined one above the container) it would show every cgroup there, other containers' too:
 * then only the container's directory of it is bound at t, as runc binds it, and the whole
 * hierarchy is detached again (with mount(2), which cannot attach a detached clone, it stays
 * beneath, covered). */
static int mount_cgroup_fs(const char *fstype, const char *source, const struct moat_mount_opts *o,
			   const struct moat_mount_target *t, const char *cgpath, moat_error *err)
{
	const char *rel = cgpath ? cgpath + strspn(cgpath, "/") : "";
	struct moat_mount_src own = { -1, false, false, S_IFDIR };
	_cleanup_close_ int mfd = -1;
	int r;

	if (strncmp(rel, "..", 2) == 0)
		return moat_error_msg(err, EXDEV,
				      "the container's cgroup '%s' is outside its cgroup "
				      "namespace",
				      cgpath);
	if (moat_mount_fs(fstype, source, o, t, rel[0] != '\0' ? &mfd : NULL, err) < 0)
		return moat_error_ret(err);
	if (rel[0] == '\0')
		return 0;
	own.is_clone = moat_mount_new_api();
	if (own.is_clone)
		own.fd = open_tree(mfd, rel, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	else
		own.fd = openat(mfd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (own.fd < 0)
		return moat_error_set(err, errno, "the container's cgroup '%s'", cgpath);
	if (own.is_clone && umount2(fdp(mfd).s, MNT_DETACH) < 0) {
		moat_mount_src_close(&own);
		return moat_error_set(err, errno, "detach the whole hierarchy");
	}
	r = moat_mount_bind(&own, t, o, err);
	moat_mount_src_close(&own);
	return r < 0 ? moat_error_prefix(err, "bind the container's cgroup '%s'", cgpath) : 0;
}

/* A cgroup mount is read-only unless its options say rw: a writable cgroup lets the container
 * change its own limits. */
static void cgroup_default_ro(struct moat_mount_opts *o)
{
	if (!(o->attr_clr & MOUNT_ATTR_RDONLY))
		o->attr_set |= MOUNT_ATTR_RDONLY;
}

static int mount_cgroup2(struct entry *e, moat_error *err)
{
	cgroup_default_ro(&e->o);
	if (mount_cgroup_fs("cgroup2", e->m->source ? e->m->source : "cgroup2", &e->o, &e->t,
			    e->env->cgroup_unified, err) < 0)
		return cgroup_hint(err);
	return 0;
}

/* One hierarchy of type fstype at dirfd/name (dirfd: the cgroup tmpfs at the destination). */
static int mount_cgroup_at(struct entry *e, int dirfd, const char *name, const char *fstype,
			   char **data, size_t data_len, const char *cgpath, moat_error *err)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", e->m->destination, name);
	struct moat_mount_opts co = { .attr_set = e->o.attr_set,
				      .attr_clr = e->o.attr_clr,
				      .data = data,
				      .data_len = data_len };
	struct moat_mount_target sub = { -1, e->rootfd, path };
	int r;

	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mkdir '%s'", path);
	sub.fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub.fd < 0)
		return moat_error_set(err, errno, "open '%s'", path);
	r = mount_cgroup_fs(fstype, fstype, &co, &sub, cgpath, err);
	close(sub.fd);
	return r;
}

#define CGROUP_MAX_CONTROLLERS 16 /* per v1 hierarchy; the kernel has fewer than that */
/* The cgroup tmpfs holds a directory per hierarchy and a symlink per controller of a shared
 * one: fewer than 64 entries on any kernel. Bounded as every tmpfs moat makes (mount.h). */
#define CGROUP_TMPFS_KIB 256
#define CGROUP_TMPFS_INODES 64
MOAT_TMPFS_CHECK(CGROUP_TMPFS_KIB, CGROUP_TMPFS_INODES);

/* A v1 hierarchy ("cpu,cpuacct", "name=systemd"): its controllers are the mount options; each
 * controller of a shared hierarchy gets a symlink, as on the host. */
static int mount_cgroup_v1(struct entry *e, int dirfd, const char *hier, const char *cgpath,
			   moat_error *err)
{
	const char *name = strncmp(hier, "name=", 5) == 0 ? hier + 5 : hier;
	_cleanup_free_ char *list = xstrdup(hier);
	char *data[CGROUP_MAX_CONTROLLERS + 1], *tok, *save = NULL;
	size_t n = 0, i;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == CGROUP_MAX_CONTROLLERS)
			return moat_error_set(err, E2BIG, "hierarchy %s: too many controllers",
					      hier);
		data[n++] = tok;
	}
	data[n] = NULL;
	if (mount_cgroup_at(e, dirfd, name, "cgroup", data, n, cgpath, err) < 0)
		return moat_error_prefix(err, "hierarchy %s", hier);
	for (i = 0; n > 1 && i < n; i++)
		if (symlinkat(name, dirfd, data[i]) < 0 && errno != EEXIST)
			return moat_error_set(err, errno, "symlink '%s/%s'", e->m->destination,
					      data[i]);
	return 0;
}

/* type "cgroup": the host's layout. Pure v2: a cgroup2 mount. v1 or hybrid (this project's
 * machines): a tmpfs holding one cgroup mount per v1 hierarchy of /proc/self/cgroup and, for
 * hybrid, cgroup2 at "unified". Each shows the container's own cgroup (mount_cgroup_fs); the
 * tmpfs is made read-only at the end unless the options say rw. */
static int mount_cgroup(struct entry *e, moat_error *err)
{
	char *data[] = { (char *)"mode=755", (char *)MOAT_TMPFS_SIZE_OPT(CGROUP_TMPFS_KIB),
			 (char *)MOAT_TMPFS_INODES_OPT(CGROUP_TMPFS_INODES), NULL };
	struct moat_mount_opts tmp = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						   MOUNT_ATTR_NOEXEC,
				       .data = data,
				       .data_len = 3 };
	_cleanup_close_ int mfd = -1, dirfd = -1;
	struct moat_mount_target top;
	size_t i;

	if (e->env->cgroup_v1 == NULL)
		return mount_cgroup2(e, err);
	cgroup_default_ro(&e->o);
	if (moat_mount_fs("tmpfs", "cgroup", &tmp, &e->t, &mfd, err) < 0)
		return moat_error_ret(err);
	dirfd = openat(mfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return moat_error_set(err, errno, "open the cgroup tmpfs");
	for (i = 0; e->env->cgroup_v1[i] != NULL; i++)
		if (mount_cgroup_v1(e, dirfd, e->env->cgroup_v1[i], e->env->cgroup_v1_path[i],
				    err) < 0)
			return cgroup_hint(err);
	if (e->env->cgroup_unified != NULL && mount_cgroup_at(e, dirfd, "unified", "cgroup2", NULL,
							      0, e->env->cgroup_unified, err) < 0)
		return cgroup_hint(err);
	top = (struct moat_mount_target){ mfd, e->rootfd, e->m->destination };
	return moat_mount_setattr(&top, e->o.attr_set & MOUNT_ATTR_RDONLY, 0, false, err);
}

/* ---- tmpcopyup ---------------------------------------------------------------------------- */

static int copy_tree(int sdir, int ddir, const char *path, unsigned depth, moat_error *err);

static int copy_file(int sdir, int ddir, const char *name, const char *path, moat_error *err)
{
	_cleanup_close_ int in = -1, out = -1;
	char buf[COPYUP_BUF];
	ssize_t n;

	in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': open", path);
	out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': create", path);
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write_all(out, buf, (size_t)n) < 0)
			return moat_error_set(err, errno, "tmpcopyup '%s': copy", path);
	}
	return 0;
}

static int copy_dir(int sdir, int ddir, const char *name, const char *path, unsigned depth,
		    moat_error *err)
{
	_cleanup_close_ int s = -1, d = -1;

	if (depth >= COPYUP_MAX_DEPTH)
		return moat_error_msg(err, ELOOP, "tmpcopyup '%s': deeper than %d directories",
				      path, COPYUP_MAX_DEPTH);
	if (mkdirat(ddir, name, 0700) < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': mkdir", path);
	s = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0 || d < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': open", path);
	return copy_tree(s, d, path, depth + 1, err);
}

static int copy_entry(int sdir, int ddir, const char *name, const char *path, unsigned depth,
		      moat_error *err)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int r = 0;

	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': stat", path);
	if (S_ISDIR(st.st_mode)) {
		r = copy_dir(sdir, ddir, name, path, depth, err);
	} else if (S_ISREG(st.st_mode)) {
		r = copy_file(sdir, ddir, name, path, err);
	} else if (S_ISLNK(st.st_mode)) {
		n = readlinkat(sdir, name, target, sizeof(target) - 1);
		if (n < 0)
			return moat_error_set(err, errno, "tmpcopyup '%s': readlink", path);
		target[n] = '\0';
		if (symlinkat(target, ddir, name) < 0)
			return moat_error_set(err, errno, "tmpcopyup '%s': symlink", path);
	} else if (S_ISFIFO(st.st_mode)) {
		if (mknodat(ddir, name, S_IFIFO | 0600, 0) < 0)
			return moat_error_set(err, errno, "tmpcopyup '%s': mkfifo", path);
	} else {
		return moat_error_msg(err, ENOTSUP,
				      "tmpcopyup '%s': a device or socket is not copied", path);
	}
	if (r < 0)
		return r;
	if (fchownat(ddir, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': chown", path);
	if (!S_ISLNK(st.st_mode) && fchmodat(ddir, name, st.st_mode & 07777, 0) < 0)
		return moat_error_set(err, errno, "tmpcopyup '%s': chmod", path);
	return 0;
}

/* Copy the contents of sdir into ddir: files, directories, symlinks, fifos, with owner and
 * mode (not times or xattrs). path names sdir in errors. */
static int copy_tree(int sdir, int ddir, const char *path, unsigned depth, moat_error *err)
{
	int dup = fcntl(sdir, F_DUPFD_CLOEXEC, 3);
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (dup < 0 || (d = fdopendir(dup)) == NULL) {
		r = moat_error_set(err, errno, "tmpcopyup: read '%s'", path);
		if (dup >= 0)
			close(dup);
		return r;
	}
	while (r == 0 && (de = readdir(d)) != NULL) {
		_cleanup_free_ char *sub = NULL;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		sub = xasprintf("%s/%s", path, de->d_name);
		r = copy_entry(sdir, ddir, de->d_name, sub, depth, err);
	}
	closedir(d);
	return r;
}

/* tmpfs, and tmpcopyup: what the rootfs holds at the destination is copied into the tmpfs. The
 * directory is opened before the mount covers it. */
static int mount_tmpfs(struct entry *e, moat_error *err)
{
	_cleanup_close_ int old = -1, mfd = -1, new = -1;

	if (!e->o.tmpcopyup)
		return mount_generic(e, err);
	old = openat(e->t.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (old < 0)
		return moat_error_set(err, errno, "tmpcopyup: open '%s'", e->m->destination);
	if (moat_mount_fs("tmpfs", e->m->source, &e->o, &e->t, &mfd, err) < 0)
		return moat_error_ret(err);
	new = openat(mfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (new < 0)
		return moat_error_set(err, errno, "tmpcopyup: open the new tmpfs");
	return copy_tree(old, new, e->m->destination, 0, err);
}

/* ---- remount ------------------------------------------------------------------------------ */

/* "remount": change the mount already at the destination (it must be a mount's root). */
static int mount_remount(struct entry *e, moat_error *err)
{
	_cleanup_close_ int fsfd = -1;
	const struct moat_mount_opts *o = &e->o;

	if (!moat_mount_new_api()) {
		if (mount(NULL, fdp(e->t.fd).s, NULL, MS_REMOUNT | o->ms_set, o->data_str) < 0)
			return moat_error_set(err, errno, "remount");
		return legacy_propagation(e->t.fd, o->propagation, o->propagation_rec, err);
	}
	if (o->data_len > 0 || o->sb_flags_len > 0) {
		fsfd = fspick(e->t.fd, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC);
		if (fsfd < 0)
			return moat_error_set(err, errno, "remount: fspick");
		if (fs_configure(fsfd, "remount", NULL, o, FSCONFIG_CMD_RECONFIGURE, err) < 0)
			return moat_error_ret(err);
	}
	if (setattr_fd(e->t.fd, o->attr_set, o->attr_clr, 0, false, err) < 0 ||
	    setattr_fd(e->t.fd, o->rec_attr_set, o->rec_attr_clr, 0, true, err) < 0)
		return moat_error_ret(err);
	return setattr_fd(e->t.fd, 0, 0, o->propagation, o->propagation_rec, err);
}

/* ---- the destination ---------------------------------------------------------------------- */

enum target_kind { T_DIR, T_FILE, T_EXISTING };

static const struct fs_handler {
	const char *type;
	int (*mount)(struct entry *e, moat_error *err);
	unsigned resolve; /* MOAT_RESOLVE_* for the destination */
} fs_handlers[] = {
	/* /proc and /sys are named without symlinks: a symlink there is an attack */
	{ "proc", mount_proc, MOAT_RESOLVE_NO_SYMLINKS },
	{ "sysfs", mount_sysfs, MOAT_RESOLVE_NO_SYMLINKS },
	{ "devpts", mount_devpts, 0 },
	{ "tmpfs", mount_tmpfs, 0 },
	{ "cgroup", mount_cgroup, 0 },
	{ "cgroup2", mount_cgroup2, 0 },
};

static const struct fs_handler handler_bind = { "bind", mount_bind_entry, 0 };
static const struct fs_handler handler_remount = { "remount", mount_remount, 0 };
static const struct fs_handler handler_generic = { NULL, mount_generic, 0 };

static const struct fs_handler *find_handler(const struct entry *e)
{
	size_t i;

	if (e->o.remount)
		return &handler_remount;
	if (is_bind(e->m, &e->o))
		return &handler_bind;
	for (i = 0; e->m->type != NULL && i < MOAT_ARRAY_SIZE(fs_handlers); i++)
		if (strcmp(fs_handlers[i].type, e->m->type) == 0)
			return &fs_handlers[i];
	return &handler_generic;
}

static bool covers_root(const char *dest)
{
	const char *p;

	for (p = dest; *p != '\0'; p++)
		if (*p != '/' && !(*p == '.' && (p[1] == '/' || p[1] == '\0')))
			return false;
	return true;
}

static int open_target(struct entry *e, const struct fs_handler *h, int *ret_fd, moat_error *err)
{
	const char *dest = e->m->destination;
	_cleanup_close_ int fd = -1;
	int r;

	if (h == &handler_remount)
		return moat_safe_open(e->rootfd, dest, O_PATH, 0, 0, ret_fd, err);
	/* a destination that must be named without symlinks is checked before anything is made */
	if (h->resolve != 0) {
		r = moat_safe_open(e->rootfd, dest, O_PATH, 0, h->resolve, ret_fd, err);
		if (r != -ENOENT)
			return r;
		moat_error_drop(err);
	}
	if (h == &handler_bind && e->src != NULL && e->src->fd >= 0 && e->src->fmt != S_IFDIR)
		r = moat_safe_mkfile(e->rootfd, dest, 0644, &fd, err);
	else
		r = moat_safe_mkdir_p(e->rootfd, dest, 0755, &fd, err);
	if (r < 0 || h->resolve == 0) {
		*ret_fd = TAKE_FD(fd);
		return r;
	}
	close(TAKE_FD(fd));
	return moat_safe_open(e->rootfd, dest, O_PATH, 0, h->resolve, ret_fd, err);
}

static bool same_inode(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static bool fd_on_fs(int fd, long magic)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 && (long)sfs.f_type == magic;
}

/* "/proc/<pid>", "/proc/self", "/proc/thread-self" or below, or any "..": lexically. */
static bool names_proc_pid(const char *dest)
{
	_cleanup_free_ char *copy = xstrdup(dest);
	char *tok, *save = NULL;
	int i = 0;

	for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0)
			return true;
		if (i++ == 1 && (strspn(tok, "0123456789") == strlen(tok) ||
				 strcmp(tok, "self") == 0 || strcmp(tok, "thread-self") == 0))
			return true;
	}
	return false;
}

/* CVE-2019-16884 / CVE-2019-19921 class: a fake /proc would let the runtime write its LSM
 * labels and settings into a file the container controls. Only procfs may cover the
 * container's /proc; a mount inside procfs must be named without symlinks or "..", and not
 * under /proc/<pid>, /proc/self or /proc/thread-self. */
static int check_proc_target(struct entry *e, const struct fs_handler *h, moat_error *err)
{
	bool bind_src = h == &handler_bind && e->src != NULL && e->src->fd >= 0;
	bool procfs =
		h->mount == mount_proc || (bind_src && fd_on_fs(e->src->fd, PROC_SUPER_MAGIC));
	_cleanup_close_ int proc = -1, again = -1;

	if (procfs)
		return 0;
	if (moat_safe_open(e->rootfd, "/proc", O_PATH, 0, 0, &proc, NULL) == 0 &&
	    same_inode(proc, e->t.fd))
		return moat_error_msg(err, EPERM, "only procfs may be mounted on /proc");
	if (!fd_on_fs(e->t.fd, PROC_SUPER_MAGIC))
		return 0;
	if (names_proc_pid(e->m->destination) ||
	    moat_safe_open(e->rootfd, e->m->destination, O_PATH, 0, MOAT_RESOLVE_NO_SYMLINKS,
			   &again, NULL) < 0 ||
	    !same_inode(again, e->t.fd))
		return moat_error_msg(err, EPERM,
				      "a mount inside /proc must be named without symlinks or '..' "
				      "and not under /proc/<pid>, /proc/self or /proc/thread-self");
	return 0;
}

/* A tmpfs over a directory of the image takes that directory's mode unless its options give
 * mode=, as runc does; one moat made for it keeps tmpfs's own (1777). dir is what the
 * destination was before open_target (-1: nothing), the target must still be it. */
static void tmpfs_mode_from_dir(struct entry *e, int dir)
{
	struct stat before, target;
	char opt[32];

	if (dir < 0 || moat_mount_opts_get_data(&e->o, "mode") != NULL)
		return;
	if (fstat(dir, &before) < 0 || fstat(e->t.fd, &target) < 0 ||
	    before.st_dev != target.st_dev || before.st_ino != target.st_ino)
		return;
	snprintf(opt, sizeof(opt), "mode=%04o", (unsigned)(before.st_mode & 07777));
	moat_mount_opts_add_data(&e->o, opt);
}

static int entry_run(struct entry *e, int *ret_point, moat_error *err)
{
	const struct fs_handler *h = find_handler(e);
	_cleanup_close_ int tfd = -1, dir = -1;
	int r;

	if (covers_root(e->m->destination))
		return moat_error_msg(err, EINVAL, "a mount may not cover the container root");
	if (e->o.tmpcopyup && h->mount != mount_tmpfs)
		return moat_error_msg(err, EINVAL, "tmpcopyup: only a tmpfs mount can copy up");
	if (h->mount == mount_tmpfs)
		(void)moat_safe_open(e->rootfd, e->m->destination, O_PATH | O_DIRECTORY, 0, 0, &dir,
				     NULL);
	if (open_target(e, h, &tfd, err) < 0)
		return moat_error_ret(err);
	e->t = (struct moat_mount_target){ tfd, e->rootfd, e->m->destination };
	tmpfs_mode_from_dir(e, dir);
	if (check_proc_target(e, h, err) < 0)
		return moat_error_ret(err);
	r = h->mount(e, err);
	if (r == 0 && ret_point != NULL)
		*ret_point = TAKE_FD(tfd);
	return r;
}

int moat_mount_entry(int rootfd, const struct oci_mount *m, size_t idx, struct moat_mount_src *src,
		     struct moat_mount_env *env, int *ret_point, moat_error *err)
{
	struct entry e = { .m = m, .src = src, .env = env, .rootfd = rootfd };
	int r;

	r = moat_mount_opts_parse(m->options, m->options_len, &e.o, err);
	if (r == 0)
		r = entry_run(&e, ret_point, err);
	moat_mount_opts_release(&e.o);
	if (r < 0)
		return moat_error_prefix(err, "mounts[%zu] (%s)", idx, m->destination);
	return 0;
}
