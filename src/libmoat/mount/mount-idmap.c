/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: idmapped bind mounts, made on the host side (see mount-idmap.h). */
#include "mount-idmap.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>

#include "mount-options.h"
#include "overlay-idmap.h"
#include "userns.h"
#include "utils.h"

bool moat_mount_wants_idmap(const struct oci_mount *m)
{
	struct moat_mount_opts o;
	bool r;

	if (m->uid_mappings_len > 0 || m->gid_mappings_len > 0)
		return true;
	if (moat_mount_opts_parse(m->options, m->options_len, &o, NULL) < 0)
		return false;
	r = o.idmap;
	moat_mount_opts_release(&o);
	return r;
}

/* The user namespace the ids are mapped through: the mount's own, or the container's. */
static int mapping_userns(const struct oci_mount *m, int container_userns, int *ret_fd,
			  moat_error *err)
{
	if (m->uid_mappings_len == 0 && m->gid_mappings_len == 0) {
		if (container_userns < 0)
			return moat_error_msg(
				err, EINVAL,
				"idmap: the container has no user namespace to map "
				"through; give the mount uidMappings and gidMappings");
		*ret_fd = fcntl(container_userns, F_DUPFD_CLOEXEC, 3);
		if (*ret_fd < 0)
			return moat_error_set(err, errno, "idmap: dup");
		return 0;
	}
	if (m->uid_mappings_len == 0 || m->gid_mappings_len == 0)
		return moat_error_msg(err, EINVAL,
				      "%s: uidMappings and gidMappings must be given together",
				      m->uid_mappings_len == 0 ? "uidMappings" : "gidMappings");
	return moat_userns_open_mapped(m->uid_mappings, m->uid_mappings_len, m->gid_mappings,
				       m->gid_mappings_len, "uidMappings", "gidMappings", ret_fd,
				       err);
}

/* Map an opened clone through userns; what names it in errors. */
static int map_clone(struct moat_mount_src *src, int userns, bool recursive, const char *what,
		     moat_error *err)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns };
	unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
	int e;

	if (mount_setattr(src->fd, "", flags, &a, sizeof(a)) == 0)
		return 0;
	e = errno;
	moat_mount_src_close(src);
	if (e == EINVAL)
		return moat_error_msg(err, e,
				      "idmap '%s': the filesystem does not support "
				      "idmapped mounts%s",
				      what, recursive ? " (nor may any submount)" : "");
	return moat_error_set(err, e, "idmap '%s'%s", what,
			      e == EPERM ? ": needs privilege over the source filesystem "
					   "(root on the host)"
					 : "");
}

int moat_mount_idmap_clone(int dirfd, const char *path, int userns, bool recursive, int *ret_fd,
			   moat_error *err)
{
	struct moat_mount_src src = MOAT_MOUNT_SRC_INIT;

	if (moat_mount_src_open(dirfd, path, recursive, &src, err) < 0 ||
	    map_clone(&src, userns, recursive, path, err) < 0)
		return moat_error_ret(err);
	*ret_fd = src.fd;
	return 0;
}

/* The mount asks for an idmap itself (not only auto-userns for it). */
static bool asked(const struct oci_mount *m, const struct moat_mount_opts *o)
{
	return o->idmap || m->uid_mappings_len > 0 || m->gid_mappings_len > 0;
}

static int make_source(int dirfd, const struct oci_mount *m, const struct moat_mount_opts *o,
		       int container_userns, uid_t root_id, int *ret_fd, moat_error *err)
{
	struct moat_mount_src src = MOAT_MOUNT_SRC_INIT;
	_cleanup_close_ int userns = -1;
	/* forced (auto-userns) on a mount that asks for nothing: as deep as its bind */
	bool recursive = asked(m, o) ? o->idmap_recursive : o->is_recursive;
	int r;

	if (!moat_mount_is_bind(m))
		return moat_error_msg(err, EINVAL, "idmap: only bind mounts can be idmapped");
	if (m->source == NULL)
		return moat_error_msg(err, EINVAL, "bind: source is required");
	if (!moat_mount_new_api())
		return moat_error_msg(err, ENOSYS, "idmap: needs the new mount API (Linux 5.12)");
	/* forced on an engine's overlay (a microVM's rootfs is a bind in its jail) */
	if (!asked(m, o) && m->source[0] == '/' && moat_overlay_is_root(m->source))
		return moat_overlay_idmap(m->source, container_userns, root_id, ret_fd, err);
	if (mapping_userns(m, container_userns, &userns, err) < 0 ||
	    moat_mount_src_open(dirfd, m->source, o->is_recursive, &src, err) < 0)
		return moat_error_ret(err);
	r = map_clone(&src, userns, recursive, m->source, err);
	if (r == -EINVAL && !asked(m, o)) {
		/* what auto-userns would have idmapped, on a filesystem that cannot be (ramfs;
		 * tmpfs before Linux 6.3: an engine's /dev/shm, or its run directory's files):
		 * bound as it is. The container keeps its user namespace; inside, the owners of
		 * those files show as nobody, and what it makes there has its own ids */
		moat_error_drop(err);
		moat_error_warn(err,
				"auto-userns: '%s' is bound without an idmap: its filesystem does "
				"not support idmapped mounts, so its owners show as nobody inside",
				m->source);
		return 0;
	}
	if (r < 0)
		return r;
	*ret_fd = src.fd;
	return 0;
}

int moat_mount_idmap_source(int dirfd, const struct oci_mount *m, size_t idx, int container_userns,
			    bool force, uid_t root_id, int *ret_fd, moat_error *err)
{
	struct moat_mount_opts o;
	int r;

	*ret_fd = -1;
	if (!moat_mount_wants_idmap(m) && !(force && moat_mount_is_bind(m)))
		return 0;
	r = moat_mount_opts_parse(m->options, m->options_len, &o, err);
	if (r == 0)
		r = make_source(dirfd, m, &o, container_userns, root_id, ret_fd, err);
	moat_mount_opts_release(&o);
	if (r < 0)
		return moat_error_prefix(err, "mounts[%zu] (%s)", idx, m->destination);
	return 0;
}

int moat_mount_idmap_rootfs(const char *path, int container_userns, uid_t root_id, int *ret_fd,
			    moat_error *err)
{
	if (!moat_mount_new_api())
		return moat_error_msg(err, ENOSYS,
				      "root.path: idmap: needs the new mount API (Linux 5.12)");
	/* an engine's rootfs: an overlay cannot be idmapped, its layers can */
	if (moat_overlay_is_root(path))
		return moat_overlay_idmap(path, container_userns, root_id, ret_fd, err) < 0
			       ? moat_error_prefix(err, "root.path")
			       : 0;
	if (moat_mount_idmap_clone(AT_FDCWD, path, container_userns, true, ret_fd, err) < 0)
		return moat_error_prefix(err, "root.path");
	return 0;
}
