/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: user namespace id maps. */
#include "userns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utils.h"

int moat_userns_validate_maps(struct oci_id_mapping *const *maps, size_t n, const char *field,
			      moat_error *err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct oci_id_mapping *m = maps[i];

		if (m->size == 0)
			return moat_error_msg(err, EINVAL, "%s[%zu].size: must be > 0", field, i);
		if ((uint64_t)m->container_id + m->size > UINT32_MAX ||
		    (uint64_t)m->host_id + m->size > UINT32_MAX)
			return moat_error_msg(err, EINVAL, "%s[%zu]: range overflows 32 bits",
					      field, i);
	}
	return 0;
}

int moat_userns_validate(const struct oci_linux *lx, bool new_userns, moat_error *err)
{
	size_t nu = lx ? lx->uid_mappings_len : 0, ng = lx ? lx->gid_mappings_len : 0;

	if (!new_userns) {
		if (nu > 0 || ng > 0)
			return moat_error_msg(
				err, EINVAL,
				"linux.uidMappings: set, but linux.namespaces creates no "
				"user namespace");
		return 0;
	}
	if (nu == 0)
		return moat_error_msg(
			err, EINVAL,
			"linux.uidMappings: required when a user namespace is created");
	if (ng == 0)
		return moat_error_msg(
			err, EINVAL,
			"linux.gidMappings: required when a user namespace is created");
	if (moat_userns_validate_maps(lx->uid_mappings, nu, "linux.uidMappings", err) < 0 ||
	    moat_userns_validate_maps(lx->gid_mappings, ng, "linux.gidMappings", err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* The mappings as the kernel takes them ("ID HOST SIZE" lines), or for a message on one line
 * ("ID HOST SIZE, ID HOST SIZE"). NULL when out of memory. */
static char *map_text(struct oci_id_mapping *const *maps, size_t n, bool one_line, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);

	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		fprintf(out, "%s%u %u %u%s", one_line && i > 0 ? ", " : "", maps[i]->container_id,
			maps[i]->host_id, maps[i]->size, one_line ? "" : "\n");
	fclose(out);
	*ret_len = len;
	return buf;
}

/* One write, as the kernel wants it. A refusal is one line naming the field, the file and
 * the mappings. */
static int write_map(pid_t pid, const char *file, struct oci_id_mapping *const *maps, size_t n,
		     const char *field, moat_error *err)
{
	_cleanup_free_ char *buf = NULL, *shown = NULL, *path = NULL;
	_cleanup_close_ int fd = -1;
	size_t len = 0, shown_len;
	int saved;

	buf = map_text(maps, n, false, &len);
	if (buf == NULL)
		return moat_error_set(err, errno, "%s", field);
	path = xasprintf("/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return moat_error_set(err, errno, "%s: open '%s'", field, path);
	if (write_all(fd, buf, len) >= 0)
		return 0;
	saved = errno;
	shown = map_text(maps, n, true, &shown_len);
	return moat_error_set(err, saved, "%s: write '%s' to '%s'", field, shown ? shown : "",
			      path);
}

/* Both maps of pid's user namespace; fields name them in errors ("linux.uidMappings"). */
static int write_both(pid_t pid, struct oci_id_mapping *const *uid, size_t nu,
		      struct oci_id_mapping *const *gid, size_t ng, const char *ufield,
		      const char *gfield, moat_error *err)
{
	/* An unprivileged parent may map only its own gid, and only once the
	 * namespace has given up setgroups (user_namespaces(7)). */
	if (geteuid() != 0) {
		_cleanup_free_ char *path = xasprintf("/proc/%d/setgroups", (int)pid);

		if (write_file_at(AT_FDCWD, path, "deny", 4, err) < 0)
			return moat_error_prefix(err, "%s", gfield);
	}
	if (write_map(pid, "uid_map", uid, nu, ufield, err) < 0 ||
	    write_map(pid, "gid_map", gid, ng, gfield, err) < 0)
		return moat_error_ret(err);
	return 0;
}

int moat_userns_write_maps(pid_t pid, const struct oci_linux *lx, moat_error *err)
{
	return write_both(pid, lx->uid_mappings, lx->uid_mappings_len, lx->gid_mappings,
			  lx->gid_mappings_len, "linux.uidMappings", "linux.gidMappings", err);
}

int moat_userns_open_mapped(struct oci_id_mapping *const *uid, size_t nu,
			    struct oci_id_mapping *const *gid, size_t ng, const char *ufield,
			    const char *gfield, int *ret_fd, moat_error *err)
{
	_cleanup_free_ char *path = NULL;
	int hold[2], status, fd = -1, r;
	pid_t pid;
	char c;

	if (moat_userns_validate_maps(uid, nu, ufield, err) < 0 ||
	    moat_userns_validate_maps(gid, ng, gfield, err) < 0)
		return moat_error_ret(err);
	if (pipe2(hold, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "%s: pipe", ufield);
	/* The child only lives in the namespace until we hold an fd of it: it
	 * waits for EOF on the pipe, which also comes if we die. */
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		close(hold[1]);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(hold[0]);
	if (pid < 0) {
		close(hold[1]);
		return moat_error_set(err, errno, "%s: create a user namespace for the mappings",
				      ufield);
	}
	r = write_both(pid, uid, nu, gid, ng, ufield, gfield, err);
	if (r == 0) {
		path = xasprintf("/proc/%d/ns/user", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			r = moat_error_set(err, errno, "%s: open %s", ufield, path);
	}
	close(hold[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0)
		*ret_fd = fd;
	return r;
}

uint32_t moat_userns_to_host(struct oci_id_mapping *const *maps, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (id >= maps[i]->container_id && id - maps[i]->container_id < maps[i]->size)
			return maps[i]->host_id + (id - maps[i]->container_id);
	return UINT32_MAX;
}

int moat_userns_root_host_id(pid_t pid, uid_t *ret, moat_error *err)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/uid_map", (int)pid), *map = NULL;
	unsigned long inside, outside, count;
	char *line, *save = NULL;

	if (read_file_at(AT_FDCWD, path, 64 * 1024, &map, NULL, err) < 0)
		return moat_error_ret(err);
	for (line = strtok_r(map, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0) {
			*ret = (uid_t)outside;
			return 0;
		}
	}
	return moat_error_msg(err, EINVAL, "%s: container uid 0 is not mapped", path);
}
