/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: bind sources opened with the host's credentials (see mount-host.h). */
#include "mount-host.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount-idmap.h"
#include "mount.h"
#include "sync.h"
#include "utils.h"

static bool wanted(const struct oci_config *cfg, const int *fds, size_t i)
{
	const struct oci_mount *m = cfg->mounts[i];

	return fds[i] < 0 && moat_mount_is_bind(m) && !moat_mount_wants_idmap(m);
}

static bool any_relative(const struct oci_config *cfg, const int *fds)
{
	size_t i;

	for (i = 0; i < cfg->mounts_len; i++)
		if (wanted(cfg, fds, i) && cfg->mounts[i]->source != NULL &&
		    cfg->mounts[i]->source[0] != '/')
			return true;
	return false;
}

static int join_mount_ns(pid_t init, moat_error *err)
{
	_cleanup_close_ int ns = -1;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)init);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return moat_error_set(err, errno, "open %s", path);
	if (setns(ns, CLONE_NEWNS) < 0)
		return moat_error_set(err, errno, "join the container's mount namespace");
	return 0;
}

/* The helper: in the init's mount namespace, every wanted source, one message each. */
static int open_and_send(int sock, pid_t init, const char *bundle, const struct oci_config *cfg,
			 const int *fds, moat_error *err)
{
	size_t i;

	if (join_mount_ns(init, err) < 0)
		return moat_error_ret(err);
	/* setns left the cwd at the namespace's root: relative sources are the bundle's (which
	 * a joined namespace may not show: only entered when a source needs it) */
	if (any_relative(cfg, fds) && chdir(bundle) < 0)
		return moat_error_set(err, errno, "enter the bundle '%s'", bundle);
	for (i = 0; i < cfg->mounts_len; i++) {
		struct moat_mount_src src;
		int r;

		if (!wanted(cfg, fds, i))
			continue;
		if (moat_mount_entry_prepare(cfg->mounts[i], i, -1, &src, err) < 0)
			return moat_error_ret(err);
		r = moat_sync_send_fd(sock, MOAT_SYNC_MOUNT_FD, (int64_t)i, src.fd, err);
		moat_mount_src_close(&src);
		if (r < 0)
			return r;
	}
	return moat_sync_send(sock, MOAT_SYNC_READY, 0, err);
}

__attribute__((noreturn)) static void opener(int sock, pid_t init, const char *bundle,
					     const struct oci_config *cfg, const int *fds)
{
	moat_error err = MOAT_ERROR_INIT;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (open_and_send(sock, init, bundle, cfg, fds, &err) < 0) {
		moat_sync_send_error(sock, &err);
		_exit(EXIT_FAILURE);
	}
	_exit(EXIT_SUCCESS);
}

/* Until READY: each fd into got[mounts[] index]. A message the helper has no reason to send
 * is a protocol error. */
static int receive(int sock, const struct oci_config *cfg, const int *fds, int *got,
		   moat_error *err)
{
	struct moat_sync_msg m;
	int fd;

	for (;;) {
		if (moat_sync_recv(sock, &m, &fd, err) < 0)
			return moat_error_ret(err);
		if (m.type == MOAT_SYNC_READY && fd < 0)
			return 0;
		if (m.type != MOAT_SYNC_MOUNT_FD || fd < 0 || m.value < 0 ||
		    (uint64_t)m.value >= cfg->mounts_len || got[m.value] >= 0 ||
		    !wanted(cfg, fds, (size_t)m.value)) {
			if (fd >= 0)
				close(fd);
			return moat_error_msg(err, EPROTO, "sync: unexpected message %d", m.type);
		}
		got[m.value] = fd;
	}
}

int moat_mount_host_sources(pid_t init, const char *bundle, const struct oci_config *cfg, int *fds,
			    moat_error *err)
{
	_cleanup_free_ int *got = NULL;
	size_t i, n = cfg->mounts_len;
	int sv[2], status, r;
	pid_t pid;

	for (i = 0; i < n && !wanted(cfg, fds, i); i++)
		;
	if (i == n)
		return 0;
	if (moat_sync_pair(sv, err) < 0)
		return moat_error_ret(err);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		opener(sv[1], init, bundle, cfg, fds);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return moat_error_set(err, errno, "fork");
	}
	got = xcalloc(n, sizeof(int));
	for (i = 0; i < n; i++)
		got[i] = -1;
	r = receive(sv[0], cfg, fds, got, err);
	close(sv[0]);
	if (r < 0)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	for (i = 0; i < n; i++) {
		if (r == 0 && got[i] >= 0)
			fds[i] = got[i];
		else if (got[i] >= 0)
			close(got[i]);
	}
	return r;
}
