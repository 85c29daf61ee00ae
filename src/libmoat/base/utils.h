/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: small helpers shared by every module: cleanup attributes, ownership
 * transfer, and file I/O that is bounded and atomic. */
#ifndef MOAT_UTILS_H
#define MOAT_UTILS_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "error.h"

static inline void moat_freep(void *p)
{
	free(*(void **)p);
}
static inline void moat_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void moat_fclosep(FILE **f)
{
	if (*f != NULL)
		fclose(*f);
}
static inline void moat_closedirp(DIR **d)
{
	if (*d != NULL)
		closedir(*d);
}
static inline void moat_error_clearp(moat_error *e)
{
	moat_error_clear(e);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(moat_freep)
#define _cleanup_close_ _cleanup_(moat_closep)
#define _cleanup_fclose_ _cleanup_(moat_fclosep)
#define _cleanup_closedir_ _cleanup_(moat_closedirp)
#define _cleanup_error_ _cleanup_(moat_error_clearp)

/* The cleanup helper of one of moat's own types, whose destructor func takes a pointer and
 * accepts NULL: MOAT_DEFINE_CLEANUP(struct moat_cgroup, moat_cgroup_free) in cgroup.h gives
 *   _cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;
 * Declared in the type's header, under its destructor. */
#define MOAT_DEFINE_CLEANUP(type, func)      \
	static inline void func##p(type **p) \
	{                                    \
		func(*p);                    \
	}

/* Take ownership out of a cleanup variable: returns the value and leaves the
 * variable empty, so the cleanup does nothing. */
#define TAKE_PTR(p)                            \
	({                                     \
		__typeof__(p) _moat_tmp = (p); \
		(p) = NULL;                    \
		_moat_tmp;                     \
	})
#define TAKE_FD(fd)                   \
	({                            \
		int _moat_tmp = (fd); \
		(fd) = -1;            \
		_moat_tmp;            \
	})

#define MOAT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Abort on allocation failure: a runtime that cannot allocate a few bytes
 * cannot clean up meaningfully either. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Read fd to its end (at most max_size bytes, NUL-terminated); name is for errors. */
int read_fd_all(int fd, const char *name, size_t max_size, char **ret, size_t *ret_len,
		moat_error *err);
/* Read a whole file (at most max_size bytes, NUL-terminated). */
int read_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_len,
		 moat_error *err);
/* Write data to dirfd/path atomically: a temp file in the same directory,
 * fsync-free (state is under tmpfs), then rename. */
int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode,
			 moat_error *err);
/* Write a short string to an existing file (for /proc and cgroup files). */
int write_file_at(int dirfd, const char *path, const char *data, size_t len, moat_error *err);

/* write(2)/read(2) retrying on EINTR and short counts. */
ssize_t write_all(int fd, const void *buf, size_t len);
ssize_t read_all(int fd, void *buf, size_t len);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t moat_monotonic_ms(void);

/* Every signal back to its default action, the ones libc reserves for
 * itself included (through the raw syscall): handlers go at execve anyway,
 * but an ignored signal would stay ignored in the program that follows. */
void moat_reset_signal_actions(void);

/* Remove a directory tree below dirfd/name without following symlinks. */
int remove_tree_at(int dirfd, const char *name, moat_error *err);

/* Create every missing directory of path (absolute), like mkdir -p. */
int mkdir_p(const char *path, mode_t mode, moat_error *err);

#endif
