/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the VMM's jail (vm-jail.h). */
#include "vm-jail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"
#include "strv.h"
#include "utils.h"
#include "vm-pod.h"
#include "vm-seccomp.h"

#ifndef PKGLIBDIR
#define PKGLIBDIR "/usr/local/lib/moat"
#endif
#define VM_KERNEL_NAME "moat-guest-kernel"
#define VM_INITRAMFS_NAME "moat-initramfs"

/* ---- the host's files ------------------------------------------------------------------ */

int moat_vm_open_host_program(const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (faccessat(fd, "", X_OK, AT_EMPTY_PATH) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The host's QEMU, by fd: the supervisor executes this file, whatever a path in the jail
 * holds by then. */
static int open_qemu(int *ret_fd, moat_error *err)
{
	int r = moat_vm_open_host_program(MOAT_VM_HOST_QEMU, ret_fd);

	if (r < 0)
		return moat_error_set(err, -r, "microvm: %s (install Debian's qemu-system-x86)",
				      MOAT_VM_HOST_QEMU);
	return 0;
}

int moat_vm_assets_find(struct moat_vm_assets *ret, moat_error *err)
{
	const char *dir = getenv("MOAT_VM_DIR");
	struct moat_vm_assets a = { .qemu_fd = -1 };
	int r = 0;

	if (dir == NULL || dir[0] == '\0')
		dir = PKGLIBDIR;
	a.kernel = xasprintf("%s/" VM_KERNEL_NAME, dir);
	a.initramfs = xasprintf("%s/" VM_INITRAMFS_NAME, dir);
	if (open_qemu(&a.qemu_fd, err) < 0)
		r = moat_error_ret(err);
	else if (access(a.kernel, R_OK) < 0)
		r = moat_error_set(err, errno,
				   "microvm: the guest kernel %s (build it with `make "
				   "vm-kernel` and install moat)",
				   a.kernel);
	else if (access(a.initramfs, R_OK) < 0)
		r = moat_error_set(err, errno,
				   "microvm: the guest agent's initramfs %s (build and "
				   "install moat)",
				   a.initramfs);
	if (r < 0) {
		moat_vm_assets_free(&a);
		return r;
	}
	*ret = a;
	return 0;
}

void moat_vm_assets_free(struct moat_vm_assets *a)
{
	free(a->kernel);
	free(a->initramfs);
	if (a->qemu_fd >= 0)
		close(a->qemu_fd);
	*a = (struct moat_vm_assets){ .qemu_fd = -1 };
}

/* ---- the jail's root ------------------------------------------------------------------- */

/* The host's /bin, /lib... are symlinks into /usr on a merged-/usr system (Debian 12): the
 * jail gets the same links, and /usr itself by bind mount. */
static const char *const usr_links[] = { "bin", "sbin", "lib", "lib64", "lib32", "libx32" };
static const char *const jail_dirs[] = { "usr", "etc",    "dev",     "proc",
					 "tmp", "rootfs", "moat-vm", MOAT_VM_JAIL_POD + 1 };
static const char *const jail_files[] = { "etc/ld.so.cache", "moat-vm/kernel",
					  "moat-vm/initramfs" };

int moat_vm_jail_make_root(int state_dirfd, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	char target[64];

	if (mkdirat(state_dirfd, MOAT_VM_JAIL_DIR, 0755) < 0 ||
	    mkdirat(state_dirfd, MOAT_VM_POD_DIR, 0755) < 0)
		return moat_error_set(err, errno, "microvm: make the jail");
	fd = openat(state_dirfd, MOAT_VM_JAIL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "microvm: open the jail");
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(jail_dirs); i++)
		if (mkdirat(fd, jail_dirs[i], 0755) < 0)
			return moat_error_set(err, errno, "microvm: jail: mkdir %s", jail_dirs[i]);
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(jail_files); i++) {
		int f = openat(fd, jail_files[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

		if (f < 0)
			return moat_error_set(err, errno, "microvm: jail: create %s",
					      jail_files[i]);
		close(f);
	}
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(usr_links); i++) {
		_cleanup_free_ char *host = xasprintf("/%s", usr_links[i]);
		ssize_t n = readlink(host, target, sizeof(target) - 1);

		if (n <= 0)
			continue; /* absent, or a real directory: bound by the config below */
		target[n] = '\0';
		if (symlinkat(target, fd, usr_links[i]) < 0)
			return moat_error_set(err, errno, "microvm: jail: symlink %s",
					      usr_links[i]);
	}
	return 0;
}

/* ---- the jail's config ----------------------------------------------------------------- */

static struct oci_config *copy_config(const struct oci_config *cfg, moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL;
	struct oci_config *copy = NULL;
	size_t len = 0;
	int r = oci_config_generate(cfg, false, &json, &len, &msg);

	if (r == 0)
		r = oci_config_parse_data(json, len, "config", &copy, &msg);
	if (r < 0) {
		moat_error_msg(err, -r, "microvm: copy the config: %s", msg ? msg : "");
		return NULL;
	}
	return copy;
}

static void add_mount(struct oci_config *c, const char *dest, const char *type, const char *source,
		      const char *const *opts, size_t n_opts)
{
	struct oci_mount *m = xcalloc(1, sizeof(*m));

	m->destination = xstrdup(dest);
	m->type = xstrdup(type);
	m->source = xstrdup(source);
	m->options = strv_copy(opts, n_opts);
	m->options_len = n_opts;
	c->mounts = xrealloc(c->mounts, (c->mounts_len + 2) * sizeof(*c->mounts));
	c->mounts[c->mounts_len++] = m;
	c->mounts[c->mounts_len] = NULL;
}

#define ADD(c, dest, type, source, ...)                                    \
	do {                                                               \
		static const char *const o_[] = { __VA_ARGS__ };           \
		add_mount(c, dest, type, source, o_, MOAT_ARRAY_SIZE(o_)); \
	} while (0)

/* A bind of the workload's that cannot be written through. */
static bool bind_readonly(const struct oci_mount *m)
{
	moat_error ignored = MOAT_ERROR_INIT;
	struct moat_mount_opts o;
	bool ro;

	if (moat_mount_opts_parse(m->options, m->options_len, &o, &ignored) < 0) {
		moat_error_clear(&ignored);
		return false; /* create reports the bad option */
	}
	ro = ((o.attr_set | o.rec_attr_set) & MOUNT_ATTR_RDONLY) != 0;
	moat_mount_opts_release(&o);
	return ro;
}

/* The next component of *p ("" at the end), skipping empty and "." ones. */
static size_t next_component(const char **p)
{
	for (;;) {
		size_t n;

		while (**p == '/')
			(*p)++;
		n = strcspn(*p, "/");
		if (n == 1 && **p == '.') {
			(*p)++;
			continue;
		}
		return n;
	}
}

/* Whether path is dir or lies under it, component by component (".." is never under). */
static bool lexically_under(const char *path, const char *dir)
{
	for (;;) {
		size_t nd = next_component(&dir), np = next_component(&path);

		if (nd == 0)
			return true;
		if (np != nd || strncmp(path, dir, nd) != 0 ||
		    (nd == 2 && strncmp(dir, "..", 2) == 0))
			return false;
		path += np;
		dir += nd;
	}
}

/* Where the guest agent mounts filesystems of its own (/dev, and the config's mounts that are
 * not binds) on the rootfs itself, not inside an earlier mount: made on the host side, as
 * container mode makes them, by the init, which may write where QEMU may not (a root
 * directory of mode 0555, as Podman's images have: QEMU has no capability to override that)
 * and before the rootfs becomes read-only there. */
static char **guest_mount_points(const struct oci_config *user)
{
	char **dirs = xcalloc(user->mounts_len + 2, sizeof(*dirs));
	size_t n = 0;

	dirs[n++] = xstrdup("/dev");
	for (size_t i = 0; i < user->mounts_len; i++) {
		const char *dest = user->mounts[i]->destination;
		bool nested = false;

		if (moat_mount_is_bind(user->mounts[i]))
			continue;
		for (size_t j = 0; j < i && !nested; j++)
			nested = lexically_under(dest, user->mounts[j]->destination);
		for (size_t j = 0; j < n && !nested; j++)
			nested = lexically_under(dest, dirs[j]);
		if (!nested)
			dirs[n++] = xstrdup(dest);
	}
	return dirs;
}

/* The jail's tmpfs: /dev holds a few nodes and devpts, /tmp what QEMU may write there;
 * bounded as every tmpfs moat makes (mount.h). */
#define JAIL_DEV_KIB 64
#define JAIL_DEV_INODES 16
MOAT_TMPFS_CHECK(JAIL_DEV_KIB, JAIL_DEV_INODES);
#define JAIL_TMP_KIB 1024
#define JAIL_TMP_INODES 256
MOAT_TMPFS_CHECK(JAIL_TMP_KIB, JAIL_TMP_INODES);

/* QEMU, its libraries, the guest's kernel and initramfs, read-only; the pod's share, which
 * the guest may write into only where a member's root is mounted. */
static void vmm_mounts(struct oci_config *jail, const struct moat_vm_assets *a,
		       const struct moat_vm_session *s)
{
	ADD(jail, "/usr", "bind", "/usr", "rbind", "ro", "nosuid", "nodev");
	if (access("/etc/ld.so.cache", R_OK) == 0)
		ADD(jail, "/etc/ld.so.cache", "bind", "/etc/ld.so.cache", "bind", "ro", "nosuid",
		    "nodev", "noexec");
	ADD(jail, MOAT_VM_JAIL_KERNEL, "bind", a->kernel, "bind", "ro", "nosuid", "nodev",
	    "noexec");
	ADD(jail, MOAT_VM_JAIL_INITRAMFS, "bind", a->initramfs, "bind", "ro", "nosuid", "nodev",
	    "noexec");
	ADD(jail, MOAT_VM_JAIL_POD, "bind", s->pod_share, "bind", "ro", "nosuid", "nodev");
}

/* What QEMU needs, read-only, resolved in the jail's root; the pod's share; the rootfs; then
 * the user's bind mounts, with their own destinations: s->workload makes the init resolve
 * them inside the rootfs (rootfs.h), never in the jail. A pod member's jail runs no QEMU: it
 * has the rootfs and its binds, for moat to clone into the pod's share (vm-pod.h). */
static void jail_mounts(struct oci_config *jail, const struct oci_config *user, const char *rootfs,
			const struct moat_vm_assets *a, struct moat_vm_session *s)
{
	bool readonly = user->root != NULL && user->root->readonly;

	for (size_t i = 0; i < jail->mounts_len; i++)
		ocijson_free(&oci_mount_type, jail->mounts[i]);
	free(jail->mounts);
	jail->mounts = NULL;
	jail->mounts_len = 0;
	ADD(jail, "/proc", "proc", "proc", "nosuid", "noexec", "nodev");
	ADD(jail, "/dev", "tmpfs", "tmpfs", "nosuid", "noexec", "mode=755",
	    MOAT_TMPFS_SIZE_OPT(JAIL_DEV_KIB), MOAT_TMPFS_INODES_OPT(JAIL_DEV_INODES));
	/* process.terminal: the supervisor's side of the terminal (the guest has its own) */
	ADD(jail, "/dev/pts", "devpts", "devpts", "nosuid", "noexec", "newinstance",
	    "ptmxmode=0666", "mode=0620");
	ADD(jail, "/tmp", "tmpfs", "tmpfs", "nosuid", "nodev", "noexec", "mode=1777",
	    MOAT_TMPFS_SIZE_OPT(JAIL_TMP_KIB), MOAT_TMPFS_INODES_OPT(JAIL_TMP_INODES));
	if (!s->member)
		vmm_mounts(jail, a, s);
	ADD(jail, MOAT_VM_JAIL_ROOTFS, "bind", rootfs, "rbind", "nosuid", "nodev");
	s->workload_index = xcalloc(user->mounts_len + 1, sizeof(*s->workload_index));
	s->workload_landed = xcalloc(user->mounts_len + 1, sizeof(*s->workload_landed));
	s->workload = (struct moat_rootfs_inner){ .path = MOAT_VM_JAIL_ROOTFS,
						  .first = jail->mounts_len,
						  .index = s->workload_index,
						  .landed = s->workload_landed,
						  .readonly = readonly };
	for (size_t i = 0; i < user->mounts_len; i++) {
		const struct oci_mount *m = user->mounts[i];

		if (!moat_mount_is_bind(m))
			continue; /* the guest agent makes it */
		s->workload_index[jail->mounts_len - s->workload.first] = i;
		readonly = readonly && bind_readonly(m);
		add_mount(jail, m->destination, m->type ? m->type : "bind", m->source,
			  (const char *const *)m->options, m->options_len);
	}
	s->n_workload = jail->mounts_len - s->workload.first;
	s->share_readonly = readonly;
	s->guest_dirs = guest_mount_points(user);
	s->workload.dirs = s->guest_dirs;
}

/* The supervisor: root of the user namespace, no capabilities, no_new_privs. */
/* The VMM's ids in the container (moat.vm.vmm-user), 0:0 when unset. */
static int vmm_user(const struct oci_config *user, uint32_t *ret_uid, uint32_t *ret_gid,
		    moat_error *err)
{
	const char *v = oci_string_map_get(user->annotations, MOAT_VM_VMM_USER_ANNOTATION);
	unsigned long uid, gid;
	char *end;

	*ret_uid = *ret_gid = 0;
	if (v == NULL)
		return 0;
	errno = 0;
	uid = strtoul(v, &end, 10);
	if (errno == 0 && end != v && *end == ':' && end[1] >= '0' && end[1] <= '9')
		gid = strtoul(end + 1, &end, 10);
	else
		end = (char *)v;
	if (errno || end == v || *end != '\0' || v[0] == '-' || uid > UINT32_MAX - 1 ||
	    gid > UINT32_MAX - 1)
		return moat_error_msg(err, EINVAL, "annotations.%s: '%s' is not UID:GID (numbers)",
				      MOAT_VM_VMM_USER_ANNOTATION, v);
	*ret_uid = (uint32_t)uid;
	*ret_gid = (uint32_t)gid;
	return 0;
}

static void jail_process(struct oci_config *jail, uint32_t uid, uint32_t gid)
{
	struct oci_process *p = jail->process;
	static const char *const args[] = { "moat-vm-supervisor" };
	static const char *const env[] = { "PATH=/usr/bin" };

	for (size_t i = 0; i < p->args_len; i++)
		free(p->args[i]);
	free(p->args);
	p->args = strv_copy(args, 1);
	p->args_len = 1;
	for (size_t i = 0; i < p->env_len; i++)
		free(p->env[i]);
	free(p->env);
	p->env = strv_copy(env, 1);
	p->env_len = 1;
	free(p->cwd);
	p->cwd = xstrdup("/");
	if (p->user != NULL) {
		free(p->user->additional_gids);
		p->user->additional_gids = NULL;
		p->user->additional_gids_len = 0;
		p->user->uid = uid;
		p->user->gid = gid;
	}
	ocijson_free(&oci_capabilities_type, p->capabilities);
	p->capabilities = NULL;
	p->no_new_privileges = p->no_new_privileges_present = true;
	for (size_t i = 0; i < p->rlimits_len; i++)
		ocijson_free(&oci_rlimit_type, p->rlimits[i]);
	free(p->rlimits);
	p->rlimits = NULL;
	p->rlimits_len = 0;
}

int64_t moat_vm_host_pids_limit(int64_t limit)
{
	return limit > 0 ? limit + MOAT_VM_VMM_TASKS : limit;
}

const struct oci_device *moat_vm_jail_device(bool member, bool kvm)
{
	static const struct oci_device dev_kvm = { .type = "c",
						   .path = "/dev/kvm",
						   .major = 10,
						   .major_present = true,
						   .minor = 232,
						   .minor_present = true };

	return !member && kvm ? &dev_kvm : NULL;
}

/* The guest's filter is the agent's to load, and the VMM's own is this one's; the devices are
 * the guest's own, but for KVM's; the pids limit has room for the VMM's tasks. */
static int jail_linux(struct oci_linux *lx, const struct moat_vm_session *s, moat_error *err)
{
	const struct oci_device *kvm;

	if (lx->resources != NULL && lx->resources->pids != NULL)
		lx->resources->pids->limit = moat_vm_host_pids_limit(lx->resources->pids->limit);
	ocijson_free(&oci_seccomp_type, lx->seccomp);
	lx->seccomp = NULL;
	if (moat_vm_seccomp_profile(&lx->seccomp, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < lx->devices_len; i++)
		ocijson_free(&oci_device_type, lx->devices[i]);
	free(lx->devices);
	lx->devices = NULL;
	lx->devices_len = 0;
	ocijson_free(&oci_personality_type, lx->personality);
	lx->personality = NULL;
	kvm = moat_vm_jail_device(s->member, s->vm.accel == MOAT_VM_ACCEL_KVM);
	if (kvm != NULL) {
		lx->devices = xcalloc(2, sizeof(*lx->devices));
		lx->devices[0] = xcalloc(1, sizeof(**lx->devices));
		*lx->devices[0] = *kvm;
		lx->devices[0]->type = xstrdup(kvm->type);
		lx->devices[0]->path = xstrdup(kvm->path);
		lx->devices_len = 1;
	}
	return 0;
}

int moat_vm_jail_config(const struct oci_config *user, const char *rootfs, const char *jail_root,
			const struct moat_vm_assets *a, struct moat_vm_session *s,
			struct oci_config **ret, moat_error *err)
{
	struct oci_config *jail;
	uint32_t uid, gid;

	if (vmm_user(user, &uid, &gid, err) < 0)
		return moat_error_ret(err);
	jail = copy_config(user, err);
	if (jail == NULL)
		return moat_error_ret(err);
	free(jail->root->path);
	jail->root->path = xstrdup(jail_root);
	jail->root->readonly = jail->root->readonly_present = true;
	jail_mounts(jail, user, rootfs, a, s);
	jail_process(jail, uid, gid);
	if (jail->linux == NULL)
		jail->linux = xcalloc(1, sizeof(*jail->linux));
	if (jail_linux(jail->linux, s, err) < 0) {
		oci_config_free(jail);
		return moat_error_ret(err);
	}
	*ret = jail;
	return 0;
}
