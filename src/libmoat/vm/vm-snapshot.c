/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the snapshot a microVM restores from, on the host's side (vm-snapshot.h). */
#include "vm-snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sha256.h"
#include "utils.h"
#include "vm-launch.h"

/* Part of every key: a change of what a snapshot holds or how it is restored changes it. */
#define KEY_VERSION "moat vm snapshot 2"

int moat_vm_boot_wanted(const struct oci_config *cfg, enum moat_vm_boot *ret, moat_error *err)
{
	const char *v = oci_string_map_get(cfg->annotations, MOAT_VM_BOOT_ANNOTATION);

	*ret = MOAT_VM_BOOT_AUTO;
	if (v == NULL)
		return 0;
	if (strcmp(v, "cold") == 0)
		*ret = MOAT_VM_BOOT_COLD;
	else if (strcmp(v, "snapshot") == 0)
		*ret = MOAT_VM_BOOT_SNAPSHOT;
	else
		return moat_error_msg(err, EINVAL,
				      "annotations." MOAT_VM_BOOT_ANNOTATION
				      ": '%s' is not cold or "
				      "snapshot",
				      v);
	return 0;
}

/* The cache's path (see vm-snapshot.h); NULL when an unprivileged user has no home. */
static char *cache_dir(void)
{
	const char *env = getenv(MOAT_VM_SNAPSHOT_DIR_ENV), *xdg, *home;

	if (env != NULL && env[0] == '/')
		return xstrdup(env);
	if (geteuid() == 0)
		return xstrdup("/var/cache/moat/vm-snapshots");
	xdg = getenv("XDG_CACHE_HOME");
	if (xdg != NULL && xdg[0] == '/')
		return xasprintf("%s/moat/vm-snapshots", xdg);
	home = getenv("HOME");
	if (home != NULL && home[0] == '/')
		return xasprintf("%s/.cache/moat/vm-snapshots", home);
	return NULL;
}

/* The cache, made if missing; it must be ours and writable by nobody else, since whoever can
 * write a snapshot there chooses the guest of every VM restored from it. */
static int open_cache(const char *dir, moat_error *err)
{
	_cleanup_free_ char *parent = xstrdup(dir);
	_cleanup_close_ int fd = -1;
	struct stat st;

	/* its parents as any cache's (/var/cache/moat holds others), itself private */
	*strrchr(parent, '/') = '\0';
	if ((parent[0] != '\0' && mkdir_p(parent, 0755, err) < 0))
		return moat_error_ret(err);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mkdir '%s'", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "open %s", dir);
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
		return moat_error_msg(err, EPERM,
				      "%s: not owned by uid %u, or writable by others: no snapshot "
				      "is restored from it",
				      dir, (unsigned)geteuid());
	return TAKE_FD(fd);
}

/* What the key remembers of a file: it is replaced when this changes. */
static void hash_identity(struct moat_sha256 *h, const struct stat *st)
{
	uint64_t id[] = { st->st_dev,
			  st->st_ino,
			  (uint64_t)st->st_size,
			  (uint64_t)st->st_mtim.tv_sec,
			  (uint64_t)st->st_mtim.tv_nsec,
			  (uint64_t)st->st_ctim.tv_sec,
			  (uint64_t)st->st_ctim.tv_nsec };

	moat_sha256_update(h, id, sizeof(id));
}

static int key_of(const struct moat_vm_assets *a, const struct moat_vm_session *s, char *key,
		  moat_error *err)
{
	const char *files[] = { a->kernel, a->initramfs };
	struct moat_vm_launch l;
	struct moat_sha256 h;
	struct utsname u;
	struct stat st;
	uint8_t digest[MOAT_SHA256_SIZE];
	char **argv;

	moat_sha256_init(&h);
	moat_sha256_update(&h, KEY_VERSION, sizeof(KEY_VERSION));
	moat_vm_session_launch(s, &l);
	l.snapshot_ram = true; /* as the save and every restore have it */
	argv = moat_vm_qemu_argv(&l);
	for (char **p = argv; *p != NULL; p++)
		moat_sha256_update(&h, *p, strlen(*p) + 1);
	moat_vm_argv_free(argv);
	if (fstat(a->qemu_fd, &st) < 0)
		return moat_error_set(err, errno, "stat QEMU");
	hash_identity(&h, &st);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (stat(files[i], &st) < 0)
			return moat_error_set(err, errno, "stat %s", files[i]);
		hash_identity(&h, &st);
	}
	/* under KVM the saved vCPUs are the host CPU's */
	if (uname(&u) == 0) {
		moat_sha256_update(&h, u.release, strlen(u.release) + 1);
		moat_sha256_update(&h, u.version, strlen(u.version) + 1);
	}
	moat_sha256_final(&h, digest);
	moat_sha256_hex(digest, key);
	return 0;
}

/* Whether s can be restored from a snapshot; for want SNAPSHOT, an error when not. */
static int can_restore(enum moat_vm_boot want, const struct moat_vm_session *s, bool *ret,
		       moat_error *err)
{
	const char *why = s->net.n > 0 ? "network interfaces"
			  : s->egress  ? "the egress tunnel"
				       : NULL;

	*ret = want != MOAT_VM_BOOT_COLD && why == NULL;
	if (want == MOAT_VM_BOOT_SNAPSHOT && why != NULL)
		return moat_error_msg(err, EINVAL,
				      "annotations." MOAT_VM_BOOT_ANNOTATION "=snapshot: a microVM "
				      "with %s boots cold (its devices are not in a snapshot); "
				      "remove the annotation",
				      why);
	return 0;
}

/* A named snapshot without a QEMU migration stream ("QEVM", version 3) after the guest's
 * RAM is refused before QEMU is given it. */
static int check_header(const struct moat_vm_session *s, moat_error *err)
{
	static const uint8_t magic[8] = { 'Q', 'E', 'V', 'M', 0, 0, 0, 3 };
	off_t stream = (off_t)s->vm.memory_mib << 20;
	uint8_t head[sizeof(magic)];

	if (pread(s->snapshot_fd, head, sizeof(head), stream) != (ssize_t)sizeof(head) ||
	    memcmp(head, magic, sizeof(magic)) != 0)
		return moat_error_msg(
			err, EINVAL,
			"microvm: the snapshot %s is damaged (no QEMU migration stream "
			"after the guest's memory): delete it, or set annotations." MOAT_VM_BOOT_ANNOTATION
			"=cold",
			s->snapshot_path);
	return 0;
}

/* Make the file (under the lock, none existing): unnamed, writable end for the init. */
static int make_file(struct moat_vm_snapshot *snap, struct moat_vm_session *s, moat_error *err)
{
	char proc[64];

	snap->made_fd = openat(snap->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0400);
	if (snap->made_fd < 0)
		return moat_error_set(err, errno, "a new file in the snapshot cache");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", snap->made_fd);
	s->snapshot_fd = open(proc, O_RDONLY | O_CLOEXEC);
	s->snapshot_save_fd = fcntl(snap->made_fd, F_DUPFD_CLOEXEC, 3);
	if (s->snapshot_fd < 0 || s->snapshot_save_fd < 0)
		return moat_error_set(err, errno, "reopen the new snapshot");
	return 0;
}

int moat_vm_snapshot_open(enum moat_vm_boot want, const struct moat_vm_assets *a,
			  struct moat_vm_session *s, struct moat_vm_snapshot *snap,
			  bool *ret_restore, moat_error *err)
{
	_cleanup_free_ char *dir = NULL, *lock = NULL;

	if (can_restore(want, s, ret_restore, err) < 0)
		return moat_error_ret(err);
	if (!*ret_restore)
		return 0;
	dir = cache_dir();
	if (dir == NULL)
		return moat_error_msg(err, ENOENT,
				      "microvm: no snapshot cache: set " MOAT_VM_SNAPSHOT_DIR_ENV
				      " or HOME, or annotations." MOAT_VM_BOOT_ANNOTATION "=cold");
	snap->dirfd = open_cache(dir, err);
	if (snap->dirfd < 0 || key_of(a, s, snap->key, err) < 0)
		return moat_error_prefix(err, "microvm: the snapshot cache");
	s->snapshot_path = xasprintf("%s/%s", dir, snap->key);
	s->snapshot_fd = openat(snap->dirfd, snap->key, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (s->snapshot_fd >= 0)
		return check_header(s, err);
	if (errno != ENOENT)
		return moat_error_set(err, errno, "microvm: open %s", s->snapshot_path);
	/* none: made once, by whoever takes the lock first; the others wait and open it */
	lock = xasprintf("%s.lock", snap->key);
	snap->lock_fd = openat(snap->dirfd, lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (snap->lock_fd < 0 || flock(snap->lock_fd, LOCK_EX) < 0)
		return moat_error_set(err, errno, "microvm: lock %s/%s", dir, lock);
	s->snapshot_fd = openat(snap->dirfd, snap->key, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (s->snapshot_fd >= 0) {
		close(snap->lock_fd);
		snap->lock_fd = -1;
		return check_header(s, err);
	}
	if (errno != ENOENT)
		return moat_error_set(err, errno, "microvm: open %s", s->snapshot_path);
	return make_file(snap, s, err);
}

void moat_vm_snapshot_evict(int dirfd, const char *keep)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct {
		char name[65];
		struct timespec mtime;
	} all[64];
	size_t n = 0, oldest;
	char lock[64 + sizeof(".lock")];
	struct dirent *e;
	struct stat st;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL && n < sizeof(all) / sizeof(all[0]))
		if (strlen(e->d_name) == 64 && strspn(e->d_name, "0123456789abcdef") == 64 &&
		    strcmp(e->d_name, keep) != 0 &&
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			memcpy(all[n].name, e->d_name, 65);
			all[n++].mtime = st.st_mtim;
		}
	closedir(d);
	while (n + 1 > MOAT_VM_SNAPSHOT_KEEP) {
		oldest = 0;
		for (size_t i = 1; i < n; i++)
			if (all[i].mtime.tv_sec < all[oldest].mtime.tv_sec ||
			    (all[i].mtime.tv_sec == all[oldest].mtime.tv_sec &&
			     all[i].mtime.tv_nsec < all[oldest].mtime.tv_nsec))
				oldest = i;
		unlinkat(dirfd, all[oldest].name, 0);
		/* a create that waits on it then makes a file nobody else waits for: at worst
		 * the same snapshot twice, the second link refused */
		snprintf(lock, sizeof(lock), "%.64s.lock", all[oldest].name);
		unlinkat(dirfd, lock, 0);
		all[oldest] = all[--n];
	}
}

int moat_vm_snapshot_commit(struct moat_vm_snapshot *snap, moat_error *err)
{
	char proc[64];

	if (snap->made_fd < 0)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", snap->made_fd);
	if (fsync(snap->made_fd) < 0)
		return moat_error_set(err, errno, "microvm: sync the new snapshot");
	if (linkat(AT_FDCWD, proc, snap->dirfd, snap->key, AT_SYMLINK_FOLLOW) < 0 &&
	    errno != EEXIST)
		return moat_error_set(err, errno, "microvm: name the new snapshot %s", snap->key);
	moat_vm_snapshot_evict(snap->dirfd, snap->key);
	moat_vm_snapshot_release(snap);
	return 0;
}

void moat_vm_snapshot_release(struct moat_vm_snapshot *snap)
{
	int *fds[] = { &snap->made_fd, &snap->lock_fd, &snap->dirfd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}
