/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: small helpers shared by every module. */
#include "config.h"
#include "utils.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		abort();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

char *xstrdup(const char *s)
{
	char *p;

	if (s == NULL)
		return NULL;
	p = strdup(s);
	if (p == NULL)
		abort();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (p == NULL)
		abort();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	va_end(ap);
	return p;
}

ssize_t write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int read_fd_all(int fd, const char *name, size_t max_size, char **ret, size_t *ret_len,
		moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 4096;

	buf = xmalloc(cap + 1);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap > max_size)
				return moat_error_msg(err, EFBIG,
						      "read '%s': larger than %zu bytes", name,
						      max_size);
			cap *= 2;
			buf = xrealloc(buf, cap + 1);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return moat_error_set(err, errno, "read '%s'", name);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max_size)
		return moat_error_msg(err, EFBIG, "read '%s': larger than %zu bytes", name,
				      max_size);
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_len,
		 moat_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", path);
	return read_fd_all(fd, path, max_size, ret, ret_len, err);
}

int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode,
			 moat_error *err)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	_cleanup_close_ int fd = -1;

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return moat_error_set(err, errno, "create '%s'", tmp);
	if (write_all(fd, data, len) < 0) {
		int saved = errno;
		unlinkat(dirfd, tmp, 0);
		return moat_error_set(err, saved, "write '%s'", tmp);
	}
	if (renameat(dirfd, tmp, dirfd, path) < 0) {
		int saved = errno;
		unlinkat(dirfd, tmp, 0);
		return moat_error_set(err, saved, "rename '%s' to '%s'", tmp, path);
	}
	return 0;
}

int write_file_at(int dirfd, const char *path, const char *data, size_t len, moat_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", path);
	if (write_all(fd, data, len) < 0)
		return moat_error_set(err, errno, "write '%.*s' to '%s'",
				      (int)(len > 64 ? 64 : len), data, path);
	return 0;
}

int remove_tree_at(int parentfd, const char *name, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;

	if (unlinkat(parentfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return moat_error_set(err, errno, "remove '%s'", name);
	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", name);
	d = fdopendir(fd);
	if (d == NULL)
		return moat_error_set(err, errno, "read '%s'", name);
	fd = -1; /* owned by d now */
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (remove_tree_at(dirfd(d), de->d_name, err) < 0) {
			closedir(d);
			return moat_error_prefix(err, "remove '%s'", name);
		}
	}
	closedir(d);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return moat_error_set(err, errno, "remove '%s'", name);
	return 0;
}

int mkdir_p(const char *path, mode_t mode, moat_error *err)
{
	_cleanup_free_ char *copy = xstrdup(path);
	char *p;

	for (p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			return moat_error_set(err, errno, "mkdir '%s'", copy);
		*p = '/';
	}
	if (mkdir(copy, mode) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "mkdir '%s'", copy);
	return 0;
}

void moat_reset_signal_actions(void)
{
	/* The kernel's struct sigaction for rt_sigaction(2). */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} dfl = { .handler = SIG_DFL };
	int sig;

	for (sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
}

uint64_t moat_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
