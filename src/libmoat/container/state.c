/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: where a container's state lives and what status it is in. */
#include "state.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "fault.h"
#include "oci-config.h"
#include "syscall-filter.h"
#include "userns-pool.h"
#include "vm-net.h"
#include "utils.h"

#define S struct moat_state
static const struct ocijson_field state_fields[] = {
	OCIJSON_STR(S, "ociVersion", oci_version, OCIJSON_REQUIRED),
	OCIJSON_STR(S, "id", id, OCIJSON_REQUIRED),
	OCIJSON_I64_REQ(S, "pid", pid),
	OCIJSON_U64_REQ(S, "pidStartTime", pid_start),
	OCIJSON_STR(S, "bundle", bundle, OCIJSON_REQUIRED),
	OCIJSON_STR(S, "rootfs", rootfs, OCIJSON_REQUIRED),
	OCIJSON_STR(S, "created", created, OCIJSON_REQUIRED),
	OCIJSON_U32_REQ(S, "owner", owner),
	OCIJSON_STR(S, "cgroupPath", cgroup_path, 0),
	OCIJSON_STR(S, "cgroupManager", cgroup_manager, 0),
	OCIJSON_STR_MAP(S, "cgroupApplied", cgroup_applied, 0),
	OCIJSON_STR_MAP(S, "cgroupIgnored", cgroup_ignored, 0),
	OCIJSON_STR(S, "isolation", isolation, 0),
	OCIJSON_U32_OPT(S, "vmMemoryMib", vm_memory_mib),
	OCIJSON_STR(S, "vmPod", vm_pod, 0),
	OCIJSON_STR_MAP(S, "annotations", annotations, 0),
	OCIJSON_STR_MAP(S, "policy", policy, 0),
	OCIJSON_BOOL_OPT(S, "lateHooks", late_hooks),
};
#undef S
const struct ocijson_type moat_state_type =
	OCIJSON_TYPE("moat-state", struct moat_state, state_fields, NULL);

static const char *const status_names[] = {
	[MOAT_STATUS_CREATING] = "creating", [MOAT_STATUS_CREATED] = "created",
	[MOAT_STATUS_RUNNING] = "running",   [MOAT_STATUS_PAUSED] = "paused",
	[MOAT_STATUS_STOPPED] = "stopped",
};

const char *moat_status_name(enum moat_status s)
{
	return status_names[s];
}

int moat_validate_id(const char *id, moat_error *err)
{
	const unsigned char *p;
	size_t len = strlen(id);

	if (len == 0)
		return moat_error_msg(err, EINVAL, "container ID: must not be empty");
	if (len > MOAT_ID_MAX)
		return moat_error_msg(err, EINVAL,
				      "container ID: %zu bytes, longer than the limit of %d (it "
				      "names a directory)",
				      len, MOAT_ID_MAX);
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return moat_error_msg(err, EINVAL, "container ID '%s': not allowed", id);
	if (strcmp(id, MOAT_SECCOMP_CACHE_DIR) == 0)
		return moat_error_msg(err, EINVAL,
				      "container ID '%s': reserved (moat's cache of compiled "
				      "seccomp filters)",
				      id);
	for (p = (const unsigned char *)id; *p; p++) {
		if (*p == '/')
			return moat_error_msg(err, EINVAL,
					      "container ID '%s': must not contain '/'", id);
		if (*p < 0x20 || *p == 0x7f)
			return moat_error_msg(err, EINVAL,
					      "container ID: must not contain control characters");
	}
	return 0;
}

int moat_validate_new_id(const char *id, moat_error *err)
{
	if (moat_validate_id(id, err) < 0)
		return moat_error_ret(err);
	if (id[0] == '.')
		return moat_error_msg(err, EINVAL,
				      "container ID '%s': must not start with '.' (the state root "
				      "keeps moat's own files under such names)",
				      id);
	return 0;
}

static int lock_dir(int dirfd, const char *id, moat_error *err)
{
	while (flock(dirfd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return moat_error_set(err, errno, "lock container '%s'", id);
	}
	return 0;
}

/* The directories of creates killed before their rename (moat_state_dir_create). */
static void sweep_new_dirs(int newfd);

/* The directory in MOAT_STATE_NEW_DIR of a create killed before its rename: its name starts
 * with the pid of the moat that made it, and that moat is gone. (One that is there may be
 * between its mkdir and its flock: the lock alone cannot tell.) */
static bool new_dir_abandoned(int newfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	long pid = strtol(name, NULL, 10);

	if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return false;
	fd = openat(newfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
}

void moat_state_sweep(const char *root)
{
	_cleanup_free_ char *path = xasprintf("%s/" MOAT_STATE_NEW_DIR, root);
	_cleanup_close_ int newfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (newfd >= 0)
		sweep_new_dirs(newfd);
}

static void sweep_new_dirs(int newfd)
{
	_cleanup_close_ int dupfd = openat(newfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
	struct dirent *de;

	if (d == NULL)
		return;
	dupfd = -1; /* the DIR owns it */
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && new_dir_abandoned(newfd, de->d_name))
			unlinkat(newfd, de->d_name, AT_REMOVEDIR);
	closedir(d);
}

/* The directory is made and locked under a name of its own in MOAT_STATE_NEW_DIR, then
 * renamed into place: nobody ever sees <root>/<id> unlocked without its state, so a locked-
 * but-stateless one is always an interrupted create (creating.h), never one starting. */
int moat_state_dir_create(const char *root, const char *id, int *ret_dirfd, moat_error *err)
{
	_cleanup_close_ int rootfd = -1, newfd = -1, dirfd = -1;
	char name[64];

	if (moat_validate_new_id(id, err) < 0)
		return moat_error_ret(err);
	if (mkdir_p(root, 0700, err) < 0)
		return moat_error_prefix(err, "--root");
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return moat_error_set(err, errno, "--root: open '%s'", root);
	if (mkdirat(rootfd, MOAT_STATE_NEW_DIR, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "create '%s/" MOAT_STATE_NEW_DIR "'", root);
	newfd = openat(rootfd, MOAT_STATE_NEW_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (newfd < 0)
		return moat_error_set(err, errno, "open '%s/" MOAT_STATE_NEW_DIR "'", root);
	sweep_new_dirs(newfd);
	snprintf(name, sizeof(name), "%d-%llx", (int)getpid(),
		 (unsigned long long)moat_monotonic_ms());
	if (mkdirat(newfd, name, 0700) < 0)
		return moat_error_set(err, errno, "create state directory '%s/%s'", root, id);
	dirfd = openat(newfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || lock_dir(dirfd, id, err) < 0) {
		int saved = errno;

		unlinkat(newfd, name, AT_REMOVEDIR);
		if (dirfd < 0)
			return moat_error_set(err, saved, "open state directory '%s/%s'", root, id);
		return moat_error_ret(err);
	}
	moat_fault_step("create:new-dir");
	if (renameat2(newfd, name, rootfd, id, RENAME_NOREPLACE) < 0) {
		int saved = errno;

		unlinkat(newfd, name, AT_REMOVEDIR);
		if (saved == EEXIST)
			return moat_error_msg(err, EEXIST, "container '%s' already exists", id);
		return moat_error_set(err, saved, "create state directory '%s/%s'", root, id);
	}
	*ret_dirfd = TAKE_FD(dirfd);
	return 0;
}

int moat_state_dir_open(const char *root, const char *id, int *ret_dirfd, moat_error *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int dirfd = -1;

	if (moat_validate_id(id, err) < 0)
		return moat_error_ret(err);
	path = xasprintf("%s/%s", root, id);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		if (errno == ENOENT)
			return moat_error_msg(err, ENOENT, "container '%s' does not exist", id);
		return moat_error_set(err, errno, "open state directory '%s'", path);
	}
	if (lock_dir(dirfd, id, err) < 0)
		return moat_error_ret(err);
	*ret_dirfd = TAKE_FD(dirfd);
	return 0;
}

/* The host ids an automatic user namespace borrowed go back to the pool with the state. */
static void return_host_ids(int rootfd, const char *root, const char *id)
{
	_cleanup_close_ int dirfd =
		openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *real = NULL, *path = NULL;

	if (dirfd < 0 || faccessat(dirfd, MOAT_IDPOOL_MARKER, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	real = realpath(root, NULL);
	if (real == NULL)
		return;
	path = xasprintf("%s/%s", real, id);
	moat_idpool_return(path, dirfd);
}

/* A microVM's interfaces get their addresses back with the state (vm-net.h). */
static int give_back_network(int rootfd, const char *id, moat_error *err)
{
	_cleanup_close_ int dirfd =
		openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dirfd < 0)
		return 0;
	return moat_vm_net_give_back(dirfd, err);
}

int moat_state_dir_remove(const char *root, const char *id, moat_error *err)
{
	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (rootfd < 0)
		return moat_error_set(err, errno, "open '%s'", root);
	if (give_back_network(rootfd, id, err) < 0)
		return moat_error_prefix(err, "delete '%s'", id);
	return_host_ids(rootfd, root, id);
	if (remove_tree_at(rootfd, id, err) < 0)
		return moat_error_prefix(err, "remove state of '%s'", id);
	return 0;
}

int moat_state_write(int dirfd, const struct moat_state *st, moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL;
	size_t len;
	int r;

	r = ocijson_generate(&moat_state_type, st, true, &json, &len, &msg);
	if (r < 0)
		return moat_error_set(err, -r, "state.json: %s", msg ? msg : "generate");
	return write_file_atomic_at(dirfd, MOAT_STATE_FILE, json, len, 0600, err);
}

int moat_state_read(int dirfd, struct moat_state **ret, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *msg = NULL;
	size_t len;
	void *st = NULL;
	int r;

	if (read_file_at(dirfd, MOAT_STATE_FILE, OCIJSON_MAX_FILE_SIZE, &data, &len, err) < 0)
		return moat_error_ret(err);
	r = ocijson_parse_data(&moat_state_type, data, len, MOAT_STATE_FILE, &st, &msg);
	if (r < 0)
		return moat_error_msg(err, EINVAL, "%s", msg ? msg : "state.json: invalid");
	*ret = st;
	return 0;
}

void moat_state_free(struct moat_state *st)
{
	ocijson_free(&moat_state_type, st);
}

uint64_t moat_pid_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	char state;
	int i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (p == NULL || (p = strrchr(buf, ')')) == NULL)
		return 0;
	/* After "pid (comm)": field 3 is the state; the 20th space after the
	 * ")" starts field 22, the start time. */
	if (sscanf(p + 1, " %c", &state) != 1 || state == 'Z' || state == 'X')
		return 0;
	for (i = 0; i < 20 && p; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p, " %llu", &start) != 1)
		return 0;
	return start;
}

bool moat_state_pid_alive(const struct moat_state *st)
{
	if (st->pid <= 0)
		return false;
	return moat_pid_start_time((pid_t)st->pid) == st->pid_start;
}

/* The container's cgroup is frozen (by `moat pause`). */
static bool frozen(const struct moat_state *st)
{
	moat_error ignored = MOAT_ERROR_INIT;
	struct moat_cgroup *cg = NULL;
	bool r = false;

	if (st->cgroup_path == NULL)
		return false;
	if (moat_cgroup_open_freezer(st->cgroup_path, &cg, &ignored) < 0 ||
	    moat_cgroup_is_frozen(cg, &r, &ignored) < 0)
		r = false;
	moat_cgroup_free(cg);
	moat_error_clear(&ignored);
	return r;
}

enum moat_status moat_state_status(int dirfd, const struct moat_state *st)
{
	struct stat sb;

	if (!moat_state_pid_alive(st))
		return MOAT_STATUS_STOPPED;
	if (frozen(st))
		return MOAT_STATUS_PAUSED;
	if (fstatat(dirfd, MOAT_EXEC_FIFO, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		return MOAT_STATUS_CREATED;
	return MOAT_STATUS_RUNNING;
}

char *moat_state_cgroup_ignored_note(const struct oci_string_map *m)
{
	char *note = NULL;

	for (size_t i = 0; m != NULL && i < m->len; i++) {
		char *more = xasprintf("%s%s%s: %s", note ? note : "", note ? "; " : "", m->keys[i],
				       m->values[i]);

		free(note);
		note = more;
	}
	return note;
}

int moat_state_read_config(int dirfd, struct oci_config **ret, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *msg = NULL;
	size_t len;
	int r;

	if (read_file_at(dirfd, MOAT_CONFIG_FILE, OCIJSON_MAX_FILE_SIZE, &data, &len, err) < 0)
		return moat_error_prefix(err, "saved config");
	r = oci_config_parse_data(data, len, MOAT_CONFIG_FILE, ret, &msg);
	if (r < 0)
		return moat_error_msg(err, -r, "saved config: %s", msg ? msg : MOAT_CONFIG_FILE);
	return 0;
}
