/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: which microVM a new container joins as a member of its pod (pod.h). */
#include "pod.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"
#include "state.h"
#include "utils.h"
#include "vm-select.h"

const char *moat_config_joined_netns(const struct oci_config *cfg)
{
	const struct oci_linux *lx = cfg->linux;

	for (size_t i = 0; lx != NULL && i < lx->namespaces_len; i++)
		if (strcmp(lx->namespaces[i]->type, "network") == 0 && lx->namespaces[i]->path &&
		    lx->namespaces[i]->path[0] != '\0')
			return lx->namespaces[i]->path;
	return NULL;
}

static bool same_inode(const struct stat *a, const char *path)
{
	struct stat b;

	return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* The state of container name in root, when it is a microVM sandbox alive whose network
 * namespace is net's. Read without the container's lock: the state is replaced whole, by
 * rename, and a sandbox made or deleted meanwhile is simply not one. */
static struct moat_state *sandbox_state(int rootfd, const char *name, const struct stat *net)
{
	_cleanup_close_ int dirfd =
		openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	moat_error ignored = MOAT_ERROR_INIT;
	struct moat_state *st = NULL;
	char path[64];

	if (dirfd < 0 || moat_state_read(dirfd, &st, &ignored) < 0) {
		moat_error_clear(&ignored);
		return NULL;
	}
	snprintf(path, sizeof(path), "/proc/%lld/ns/net", (long long)st->pid);
	if (st->isolation == NULL ||
	    strcmp(st->isolation, moat_isolation_name(MOAT_ISOLATION_MICROVM)) != 0 ||
	    st->vm_pod != NULL || !moat_state_pid_alive(st) || !same_inode(net, path)) {
		moat_state_free(st);
		return NULL;
	}
	return st;
}

bool moat_pod_find(const char *root, const struct oci_config *cfg, struct moat_vm_pod *ret)
{
	const char *netns = moat_config_joined_netns(cfg);
	_cleanup_(moat_state_freep) struct moat_state *st = NULL;
	_cleanup_close_ int rootfd = -1;
	char real[PATH_MAX];
	struct dirent *de;
	struct stat net;
	DIR *d;

	*ret = (struct moat_vm_pod){ 0 };
	/* no namespace to compare: create reports the bad path when it joins it */
	if (netns == NULL || stat(netns, &net) < 0 || realpath(root, real) == NULL)
		return false;
	rootfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = rootfd < 0 ? NULL : fdopendir(dup(rootfd));
	if (d == NULL)
		return false; /* no state root yet: no sandbox in it */
	while (st == NULL && (de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && de->d_type == DT_DIR)
			st = sandbox_state(rootfd, de->d_name, &net);
	closedir(d);
	if (st == NULL)
		return false;
	ret->sandbox = xstrdup(st->id);
	ret->pid = (pid_t)st->pid;
	ret->pid_start = st->pid_start;
	ret->state_dir = xasprintf("%s/%s", real, st->id);
	ret->accel = xstrdup(oci_string_map_get(st->annotations, MOAT_VM_ACCEL_ANNOTATION)
				     ?: moat_vm_accel_name(MOAT_VM_ACCEL_KVM));
	return true;
}

void moat_pod_of(const char *root, const char *sandbox, struct moat_vm_pod *ret)
{
	_cleanup_(moat_state_freep) struct moat_state *st = NULL;
	moat_error ignored = MOAT_ERROR_INIT;
	char real[PATH_MAX];
	_cleanup_close_ int dirfd = -1;

	*ret = (struct moat_vm_pod){ .sandbox = xstrdup(sandbox) };
	ret->state_dir = realpath(root, real) != NULL ? xasprintf("%s/%s", real, sandbox)
						      : xasprintf("%s/%s", root, sandbox);
	dirfd = open(ret->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || moat_state_read(dirfd, &st, &ignored) < 0) {
		moat_error_clear(&ignored);
		return;
	}
	if (moat_state_pid_alive(st)) {
		ret->pid = (pid_t)st->pid;
		ret->pid_start = st->pid_start;
	}
}

int moat_pod_leave(const char *root, const struct moat_state *member, moat_error *err)
{
	struct moat_vm_pod pod;
	int r;

	if (member->vm_pod == NULL)
		return 0;
	moat_pod_of(root, member->vm_pod, &pod);
	r = moat_vm_pod_detach(&pod, member->id, err);
	moat_vm_pod_clear(&pod);
	return r;
}

int moat_pod_vm_dir(const char *root, const struct moat_state *st, int own_dirfd, int *ret_dirfd,
		    const char **ret_member, moat_error *err)
{
	struct moat_vm_pod pod;
	int fd;

	if (st->vm_pod == NULL) {
		fd = openat(own_dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		*ret_member = NULL;
	} else {
		moat_pod_of(root, st->vm_pod, &pod);
		fd = pod.pid > 0 ? open(pod.state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (pod.pid <= 0)
			errno = ESRCH;
		moat_vm_pod_clear(&pod);
		*ret_member = st->id;
	}
	if (fd < 0)
		return moat_error_set(err, errno, "container '%s': its microVM%s%s", st->id,
				      st->vm_pod ? ", the pod's sandbox " : "",
				      st->vm_pod ? st->vm_pod : "");
	*ret_dirfd = fd;
	return 0;
}
