/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the auto-userns pool (see userns-pool.h). */
#include "userns-pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utils.h"

/* A loan file names a state directory: a path, so PATH_MAX-ish bounds it. */
#define LOAN_MAX 4096

struct range {
	uint64_t start;
	uint64_t count;
};

int moat_idpool_check(const struct moat_idpool *pool, const char *field, moat_error *err)
{
	uint64_t end = (uint64_t)pool->host_start + (uint64_t)pool->ids * pool->containers;

	if (pool->ids == 0)
		return moat_error_msg(err, EINVAL, "%s.idsPerContainer: must be > 0", field);
	if (pool->containers == 0)
		return moat_error_msg(err, EINVAL, "%s.containers: must be > 0", field);
	if (pool->host_start == 0)
		return moat_error_msg(err, EINVAL,
				      "%s.hostStart: must not be 0 (the pool would hand out host "
				      "root)",
				      field);
	if (end > UINT32_MAX)
		return moat_error_msg(err, EINVAL,
				      "%s: hostStart + idsPerContainer * containers passes the "
				      "last valid id (4294967294)",
				      field);
	return 0;
}

static bool parse_range(const char *name, struct range *ret)
{
	char *end;
	unsigned long long s, c;

	if (name[0] < '0' || name[0] > '9')
		return false;
	s = strtoull(name, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9')
		return false;
	c = strtoull(end + 1, &end, 10);
	if (*end != '\0' || s > UINT32_MAX || c == 0 || c > UINT32_MAX)
		return false;
	*ret = (struct range){ s, c };
	return true;
}

/* The pool directory, made if missing, root's alone, locked. */
static int open_pool(int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat sb;

	if (mkdir(MOAT_IDPOOL_DIR, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "auto-userns: create %s", MOAT_IDPOOL_DIR);
	fd = open(MOAT_IDPOOL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "auto-userns: open %s", MOAT_IDPOOL_DIR);
	if (fstat(fd, &sb) < 0)
		return moat_error_set(err, errno, "auto-userns: stat %s", MOAT_IDPOOL_DIR);
	if (sb.st_uid != 0 || (sb.st_mode & (S_IWGRP | S_IWOTH)))
		return moat_error_msg(err, EPERM,
				      "auto-userns: %s must belong to root and be writable by no "
				      "one else",
				      MOAT_IDPOOL_DIR);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return moat_error_set(err, errno, "auto-userns: lock %s", MOAT_IDPOOL_DIR);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The one line a loan or marker file holds, without its newline (NULL if unreadable). */
static char *read_line(int dirfd, const char *name, size_t max)
{
	moat_error ignored = MOAT_ERROR_INIT;
	char *data = NULL;
	size_t len = 0;

	if (read_file_at(dirfd, name, max, &data, &len, &ignored) < 0) {
		moat_error_clear(&ignored);
		return NULL;
	}
	if (len > 0 && data[len - 1] == '\n')
		data[len - 1] = '\0';
	return data;
}

/* The state directory a loan names. */
static char *loan_owner(int poolfd, const char *name)
{
	return read_line(poolfd, name, LOAN_MAX);
}

/* The range recorded in a state directory, as its loan's name. */
static char *marker_at(int dirfd)
{
	return read_line(dirfd, MOAT_IDPOOL_MARKER, 64);
}

/* A loan is live while its state directory exists and records the same range. */
static bool loan_live(int poolfd, const char *name)
{
	_cleanup_free_ char *owner = loan_owner(poolfd, name), *marker = NULL;
	_cleanup_close_ int dirfd = -1;

	if (owner == NULL || owner[0] != '/')
		return false;
	dirfd = open(owner, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return errno != ENOENT && errno != ENOTDIR; /* unsure: keep it */
	marker = marker_at(dirfd);
	return marker != NULL && strcmp(marker, name) == 0;
}

/* Every live loan; stale ones and stray files are removed on the way. */
static int live_loans(int poolfd, struct range **ret, size_t *ret_n, moat_error *err)
{
	int fd = fcntl(poolfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct range *v = NULL, r;
	struct dirent *de;
	size_t n = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return moat_error_set(err, errno, "auto-userns: read %s", MOAT_IDPOOL_DIR);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (parse_range(de->d_name, &r) && loan_live(poolfd, de->d_name)) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = r;
		} else {
			unlinkat(poolfd, de->d_name, 0);
		}
	}
	closedir(d);
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool overlaps(const struct range *used, size_t n, uint64_t start, uint64_t count)
{
	for (size_t i = 0; i < n; i++)
		if (start < used[i].start + used[i].count && used[i].start < start + count)
			return true;
	return false;
}

static int record(int poolfd, int state_dirfd, const char *state_dir, uint64_t start,
		  uint32_t count, moat_error *err)
{
	_cleanup_free_ char *name = xasprintf("%" PRIu64 "-%" PRIu32, start, count);
	_cleanup_free_ char *marker = xasprintf("%s\n", name);
	_cleanup_free_ char *owner = xasprintf("%s\n", state_dir);

	if (write_file_atomic_at(state_dirfd, MOAT_IDPOOL_MARKER, marker, strlen(marker), 0600,
				 err) < 0 ||
	    write_file_atomic_at(poolfd, name, owner, strlen(owner), 0600, err) < 0) {
		unlinkat(state_dirfd, MOAT_IDPOOL_MARKER, 0);
		return moat_error_prefix(err, "auto-userns: record the loan of %s", name);
	}
	return 0;
}

int moat_idpool_lend(const struct moat_idpool *pool, const char *pool_source, const char *state_dir,
		     int state_dirfd, uint32_t *ret_host, moat_error *err)
{
	_cleanup_close_ int poolfd = -1;
	_cleanup_free_ struct range *used = NULL;
	size_t n = 0;

	if (moat_idpool_check(pool, "autoUserns", err) < 0 || open_pool(&poolfd, err) < 0 ||
	    live_loans(poolfd, &used, &n, err) < 0)
		return moat_error_ret(err);
	for (uint32_t slot = 0; slot < pool->containers; slot++) {
		uint64_t start = pool->host_start + (uint64_t)slot * pool->ids;

		if (overlaps(used, n, start, pool->ids))
			continue;
		if (record(poolfd, state_dirfd, state_dir, start, pool->ids, err) < 0)
			return moat_error_ret(err);
		*ret_host = (uint32_t)start;
		return 0;
	}
	return moat_error_msg(err, EBUSY,
			      "auto-userns: every range of the pool is in use (%" PRIu32
			      " containers of %" PRIu32 " ids from host id %" PRIu32
			      "); raise autoUserns.containers in %s",
			      pool->containers, pool->ids, pool->host_start, pool_source);
}

int moat_idpool_find_lent(uint64_t start, uint64_t count, uint64_t *ret_start, uint64_t *ret_count,
			  moat_error *err)
{
	_cleanup_close_ int poolfd = -1;
	_cleanup_free_ struct range *used = NULL;
	size_t n = 0;

	if (open_pool(&poolfd, err) < 0 || live_loans(poolfd, &used, &n, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < n; i++) {
		if (overlaps(&used[i], 1, start, count)) {
			*ret_start = used[i].start;
			*ret_count = used[i].count;
			return 1;
		}
	}
	return 0;
}

void moat_idpool_return(const char *state_dir, int state_dirfd)
{
	moat_error ignored = MOAT_ERROR_INIT;
	_cleanup_free_ char *name = marker_at(state_dirfd), *owner = NULL;
	_cleanup_close_ int poolfd = -1;
	struct range r;

	if (name == NULL || !parse_range(name, &r))
		return;
	if (open_pool(&poolfd, &ignored) < 0) {
		moat_error_clear(&ignored);
		return;
	}
	owner = loan_owner(poolfd, name);
	if (owner != NULL && strcmp(owner, state_dir) == 0)
		unlinkat(poolfd, name, 0);
	unlinkat(state_dirfd, MOAT_IDPOOL_MARKER, 0);
}
