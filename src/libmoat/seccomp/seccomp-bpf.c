/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the compiled seccomp program. libseccomp generates it once, when the profile is
 * prepared; moat loads it with seccomp(2) itself, and keeps it under the state root keyed by
 * the profile, so that the next container with the same profile skips libseccomp entirely.
 *
 * Generating the program is the expensive part of seccomp (libseccomp's binary-tree layout
 * of moat's ~300-rule default profile takes several milliseconds, more than the rest of
 * `moat run` takes to set up the namespaces); loading it is one system call.
 *
 * The cache: <state root>/.seccomp-cache/<64-bit FNV-1a of the key, hex>, where the key is
 * the profile as compact JSON after a line naming moat's and libseccomp's versions, the
 * seccomp API level and the native architecture (what the program depends on). A file holds
 * the key itself, compared byte for byte (the hash only names the file), the warnings
 * compiling gave, the load flags and the program. Anything unexpected in a file (size,
 * owner, mode, magic, key) makes it a miss, and the entry is written again.
 */
#include "syscall-filter-internal.h"

#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "utils.h"

#define CACHE_DIR MOAT_SECCOMP_CACHE_DIR
#define CACHE_MAGIC "MOATBPF1"
/* Entries kept before the cache is emptied: one per distinct profile in use. */
#define CACHE_MAX_ENTRIES 64
/* A key is a profile (bounded by the config's own 4 MiB) plus a line. */
#define CACHE_MAX_FILE ((size_t)8 << 20)

struct cache_header {
	char magic[8];
	uint32_t kernel_flags;
	uint32_t notify;
	uint32_t n_insns;
	uint32_t key_len;
	uint32_t warn_len;
	uint32_t reserved;
};

/* ---- generating and loading ------------------------------------------------------------- */

int moat_seccomp_bpf_export(struct moat_seccomp *sc, moat_error *err)
{
	_cleanup_close_ int fd = memfd_create("moat-seccomp", MFD_CLOEXEC);
	struct stat st;
	int r;

	if (fd < 0)
		return moat_error_set(err, errno, "linux.seccomp: memfd_create");
	r = seccomp_export_bpf(sc->ctx, fd);
	if (r < 0)
		return moat_error_set(err, -r, "linux.seccomp: generate the BPF program");
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "linux.seccomp: stat the BPF program");
	if (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    (size_t)st.st_size / sizeof(struct sock_filter) > MOAT_SECCOMP_MAX_INSNS)
		return moat_error_msg(err, E2BIG,
				      "linux.seccomp: the filter compiles to %lld "
				      "bytes, more than the kernel's %d instructions",
				      (long long)st.st_size, MOAT_SECCOMP_MAX_INSNS);
	free(sc->prog);
	sc->prog_len = (size_t)st.st_size / sizeof(struct sock_filter);
	sc->prog = xmalloc((size_t)st.st_size);
	if (pread(fd, sc->prog, (size_t)st.st_size, 0) != st.st_size)
		return moat_error_set(err, errno ? errno : EIO,
				      "linux.seccomp: read the BPF program");
	return 0;
}

const struct sock_filter *moat_seccomp_program(const struct moat_seccomp *sc, size_t *ret_len,
					       uint32_t *ret_flags)
{
	*ret_len = sc->prog_len;
	*ret_flags = sc->kernel_flags;
	return sc->prog;
}

static bool has_cap_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { { 0 } };

	return syscall(SYS_capget, &h, d) == 0 && (d[0].effective & (1u << CAP_SYS_ADMIN));
}

static int load_error(int errnum, moat_error *err)
{
	if (errnum == EACCES && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 && !has_cap_sys_admin())
		return moat_error_set(err, errnum,
				      "load the seccomp filter: the kernel takes one "
				      "only with no_new_privs set (process.noNewPrivileges) or "
				      "with CAP_SYS_ADMIN, and the process has neither");
	if (errnum == ESRCH)
		return moat_error_set(err, errnum,
				      "load the seccomp filter: a thread of the "
				      "process has a filter that SECCOMP_FILTER_FLAG_TSYNC cannot "
				      "replace");
	return moat_error_set(err, errnum, "load the seccomp filter");
}

int moat_seccomp_load(struct moat_seccomp *sc, int *ret_notify_fd, moat_error *err)
{
	struct sock_fprog prog = { .len = (unsigned short)sc->prog_len, .filter = sc->prog };
	unsigned int flags = sc->kernel_flags;
	long r;

	/* With a listener, TSYNC must report a thread it cannot sync as ESRCH: the return
	 * value is the listener fd. */
	if (sc->notify)
		flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER |
			 (flags & SECCOMP_FILTER_FLAG_TSYNC ? SECCOMP_FILTER_FLAG_TSYNC_ESRCH : 0);
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (r < 0)
		return load_error(errno, err);
	if (!sc->notify && r > 0)
		return load_error(ESRCH, err); /* TSYNC: r is the thread that could not follow */
	*ret_notify_fd = sc->notify ? (int)r : -1;
	return 0;
}

/* ---- the cache -------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* What the program depends on, then the profile as compact JSON. */
static int cache_key(const struct oci_seccomp *s, char **ret, size_t *ret_len)
{
	const struct scmp_version *v = seccomp_version();
	_cleanup_free_ char *json = NULL, *msg = NULL;
	size_t len = 0;
	int r = ocijson_generate(&oci_seccomp_type, s, false, &json, &len, &msg);

	if (r < 0)
		return r;
	*ret = xasprintf("moat %s libseccomp %u.%u.%u api %u arch %" PRIu32 "\n%s", PACKAGE_VERSION,
			 v->major, v->minor, v->micro, seccomp_api_get(), seccomp_arch_native(),
			 json);
	*ret_len = strlen(*ret);
	return 0;
}

/* The cache directory under root, made when create is set; -1 when there is none. */
static int open_cache(const char *root, bool create)
{
	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd;
	struct stat st;

	if (rootfd < 0)
		return -1;
	if (create && mkdirat(rootfd, CACHE_DIR, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = openat(rootfd, CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 &&
	    (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* An entry, if it is one moat wrote for exactly this key; its warnings go to err. */
static struct moat_seccomp *cache_read(int dirfd, const char *name, const char *key, size_t key_len,
				       moat_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *data = NULL;
	struct cache_header h;
	struct moat_seccomp *sc;
	struct stat st;
	size_t need;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size < (off_t)sizeof(h) ||
	    (size_t)st.st_size > CACHE_MAX_FILE)
		return NULL;
	data = xmalloc((size_t)st.st_size);
	if (read_all(fd, data, (size_t)st.st_size) != st.st_size)
		return NULL;
	memcpy(&h, data, sizeof(h));
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) != 0 || h.n_insns == 0 ||
	    h.n_insns > MOAT_SECCOMP_MAX_INSNS || h.key_len != key_len || h.warn_len > key_len)
		return NULL;
	need = sizeof(h) + h.key_len + h.warn_len + h.n_insns * sizeof(struct sock_filter);
	if ((size_t)st.st_size != need || memcmp(data + sizeof(h), key, key_len) != 0)
		return NULL;
	sc = xcalloc(1, sizeof(*sc));
	sc->notify = h.notify != 0;
	sc->kernel_flags = h.kernel_flags;
	sc->prog_len = h.n_insns;
	sc->prog = xmalloc(h.n_insns * sizeof(struct sock_filter));
	memcpy(sc->prog, data + sizeof(h) + h.key_len + h.warn_len,
	       h.n_insns * sizeof(struct sock_filter));
	if (h.warn_len > 0)
		moat_error_warn(err, "%.*s", (int)h.warn_len, data + sizeof(h) + h.key_len);
	return sc;
}

/* Past CACHE_MAX_ENTRIES, start again from an empty cache. */
static void cache_prune(int dirfd)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	size_t n = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	if (n >= CACHE_MAX_ENTRIES) {
		rewinddir(d);
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				unlinkat(dirfd, de->d_name, 0);
	}
	closedir(d);
}

/* Best effort: a cache that cannot be written only costs the next run the compile. */
static void cache_write(int dirfd, const char *name, const char *key, size_t key_len,
			const char *warn, const struct moat_seccomp *sc)
{
	moat_error ignored = MOAT_ERROR_INIT;
	size_t warn_len = warn ? strlen(warn) : 0;
	size_t prog_size = sc->prog_len * sizeof(struct sock_filter);
	struct cache_header h = { .kernel_flags = sc->kernel_flags,
				  .notify = sc->notify,
				  .n_insns = (uint32_t)sc->prog_len,
				  .key_len = (uint32_t)key_len,
				  .warn_len = (uint32_t)warn_len };
	size_t size = sizeof(h) + key_len + warn_len + prog_size;
	_cleanup_free_ char *data = NULL;

	if (warn_len > key_len)
		return; /* cannot happen: warnings name the profile's own syscalls */
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	data = xmalloc(size);
	memcpy(data, &h, sizeof(h));
	memcpy(data + sizeof(h), key, key_len);
	if (warn_len > 0)
		memcpy(data + sizeof(h) + key_len, warn, warn_len);
	memcpy(data + sizeof(h) + key_len + warn_len, sc->prog, prog_size);
	cache_prune(dirfd);
	write_file_atomic_at(dirfd, name, data, size, 0600, &ignored);
	moat_error_clear(&ignored);
}

int moat_seccomp_prepare_cached(const struct oci_seccomp *s, const char *root,
				struct moat_seccomp **ret, moat_error *err)
{
	moat_error local = MOAT_ERROR_INIT;
	_cleanup_free_ char *key = NULL;
	_cleanup_close_ int dirfd = -1;
	size_t key_len = 0;
	char name[17];
	int r;

	if (root == NULL || cache_key(s, &key, &key_len) < 0)
		return moat_seccomp_prepare(s, ret, err);
	snprintf(name, sizeof(name), "%016" PRIx64, fnv1a(key, key_len));
	dirfd = open_cache(root, false);
	if (dirfd >= 0 && (*ret = cache_read(dirfd, name, key, key_len, err)) != NULL)
		return 0;
	r = moat_seccomp_prepare(s, ret, &local);
	if (local.warn != NULL)
		moat_error_warn(err, "%s", local.warn);
	if (r < 0) {
		moat_error_msg(err, local.code > 0 ? local.code : EINVAL, "%s", local.msg);
		moat_error_clear(&local);
		return r;
	}
	if (dirfd < 0)
		dirfd = open_cache(root, true);
	if (dirfd >= 0)
		cache_write(dirfd, name, key, key_len, local.warn, *ret);
	moat_error_clear(&local);
	return 0;
}
