/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: who holds a sandbox, and collecting the sandboxes nobody holds.
 *
 * A keeper holds <root>/<uid>/.<name>.lock (a POSIX record lock, exclusive) from before it
 * makes the sandbox's state directory until after it removed it. A record lock is the
 * process's own, not shared with the children it forks (a command's runner, a session's
 * worker), so the lock is free the moment the keeper dies. A keeper killed dies with its
 * sandbox's processes (the init's parent-death signal) and its mounts (its own mount
 * namespace), but the state directory, the container's state, its cgroup and its
 * user-namespace loan stay: the next `moat sandbox` command of that uid finds the lock
 * free and removes them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"
#include "sandbox-internal.h"
#include "state.h"
#include "utils.h"

/* Take the lock on fd without waiting: 0, or -1 with errno (EAGAIN/EACCES: held). */
static int lock_now(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	return fcntl(fd, F_SETLK, &fl);
}

static char *lock_name(const char *name)
{
	return xasprintf(".%s.lock", name);
}

int sb_lock_take(int user_fd, const char *name, int *ret_fd, moat_error *err)
{
	_cleanup_free_ char *lock = lock_name(name);

	/* a collector may hold it for a moment, and unlink it once it is done */
	for (int tries = 0; tries < 50; tries++) {
		_cleanup_close_ int fd =
			openat(user_fd, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		struct stat st;

		if (fd < 0)
			return moat_error_set(err, errno, "sandbox '%s': lock", name);
		if (lock_now(fd) < 0) {
			if (errno != EAGAIN && errno != EACCES)
				return moat_error_set(err, errno, "sandbox '%s': lock", name);
			usleep(10000);
			continue;
		}
		if (fstat(fd, &st) == 0 && st.st_nlink > 0) {
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
	}
	return moat_error_msg(err, EBUSY, "sandbox '%s' is in use", name);
}

void sb_lock_release(int user_fd, const char *name, int fd)
{
	_cleanup_free_ char *lock = lock_name(name);

	if (fd < 0)
		return;
	unlinkat(user_fd, lock, 0);
	close(fd);
}

/* One sandbox whose lock was free: its container, then its state. */
static void collect_one(int user_fd, const char *name)
{
	_cleanup_free_ char *id = xasprintf("%u-%s", (unsigned)getuid(), name);
	_cleanup_free_ char *runtime = xasprintf("%s/.runtime", MOAT_SANDBOX_ROOT);
	moat_error e = MOAT_ERROR_INIT;
	int fd;

	if (sb_lock_take(user_fd, name, &fd, &e) < 0) {
		moat_error_clear(&e);
		return;
	}
	moat_container_delete(runtime, id, true, &e);
	moat_error_clear(&e);
	remove_tree_at(user_fd, name, &e);
	moat_error_clear(&e);
	sb_lock_release(user_fd, name, fd);
}

void moat_sandbox_collect(void)
{
	_cleanup_free_ char *user_dir = xasprintf("%s/%u", MOAT_SANDBOX_ROOT, (unsigned)getuid());
	_cleanup_closedir_ DIR *d = opendir(user_dir);
	struct dirent *e;

	moat_state_sweep(MOAT_SANDBOX_ROOT "/.runtime");
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		_cleanup_free_ char *lock = lock_name(e->d_name);
		_cleanup_close_ int fd = -1;

		if (e->d_name[0] == '.')
			continue;
		fd = openat(dirfd(d), lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		/* no lock file: a keeper that died between its unlink and its rmdir, or none */
		if (fd >= 0 && lock_now(fd) < 0)
			continue; /* held: its keeper lives */
		if (fd >= 0)
			close(TAKE_FD(fd));
		collect_one(dirfd(d), e->d_name);
	}
}
