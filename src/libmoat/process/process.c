/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container's process, from a finished root to execve. */
#include "process.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "caps.h"
#include "strv.h"
#include "utils.h"

/* clang-format off */
static const struct {
	const char *name;
	int resource;
} rlimit_table[] = {
	{ "RLIMIT_AS", RLIMIT_AS },	      { "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },	      { "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },     { "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK }, { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },	      { "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },     { "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO },   { "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING }, { "RLIMIT_STACK", RLIMIT_STACK },
};
/* clang-format on */

/* Which namespace must belong to the container for a sysctl to be safe. */
/* clang-format off */
static const struct {
	const char *key; /* exact key, or a prefix ending in '.' */
	enum moat_ns ns;
} sysctl_table[] = {
	{ "kernel.msgmax", MOAT_NS_IPC },     { "kernel.msgmnb", MOAT_NS_IPC },
	{ "kernel.msgmni", MOAT_NS_IPC },     { "kernel.sem", MOAT_NS_IPC },
	{ "kernel.shmall", MOAT_NS_IPC },     { "kernel.shmmax", MOAT_NS_IPC },
	{ "kernel.shmmni", MOAT_NS_IPC },     { "kernel.shm_rmid_forced", MOAT_NS_IPC },
	{ "fs.mqueue.", MOAT_NS_IPC },	      { "net.", MOAT_NS_NET },
	{ "kernel.hostname", MOAT_NS_UTS },   { "kernel.domainname", MOAT_NS_UTS },
};
/* clang-format on */

int moat_process_rlimit_resource(const char *name)
{
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(rlimit_table); i++)
		if (strcmp(rlimit_table[i].name, name) == 0)
			return rlimit_table[i].resource;
	return -1;
}

static int sysctl_owner(const char *key)
{
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(sysctl_table); i++) {
		const char *k = sysctl_table[i].key;
		size_t n = strlen(k);

		if (k[n - 1] == '.' ? strncmp(key, k, n) == 0 : strcmp(key, k) == 0)
			return (int)sysctl_table[i].ns;
	}
	return -1;
}

static int validate_sysctl(const struct oci_string_map *sysctl, const struct moat_ns_plan *ns,
			   moat_error *err)
{
	size_t i;

	for (i = 0; sysctl != NULL && i < sysctl->len; i++) {
		const char *key = sysctl->keys[i];
		int owner = sysctl_owner(key);

		if (strstr(key, "..") != NULL || strchr(key, '/') != NULL || owner < 0)
			return moat_error_msg(
				err, EPERM,
				"linux.sysctl: '%s' is not namespaced; setting it would "
				"change the host",
				key);
		if (!ns->create[owner] && ns->join_fd[owner] < 0)
			return moat_error_msg(
				err, EPERM,
				"linux.sysctl: '%s' needs the container's own %s namespace", key,
				moat_ns_oci_name(owner));
	}
	return 0;
}

int moat_process_validate_one(const struct oci_process *p, moat_error *err)
{
	const struct oci_capabilities *c = p->capabilities;
	uint64_t mask;
	size_t i;

	if (p->args_len == 0)
		return moat_error_msg(err, EINVAL, "process.args: must not be empty");
	for (i = 0; i < p->rlimits_len; i++)
		if (moat_process_rlimit_resource(p->rlimits[i]->type) < 0)
			return moat_error_msg(err, EINVAL,
					      "process.rlimits[%zu].type: unknown '%s'", i,
					      p->rlimits[i]->type);
	if (c != NULL && (moat_caps_parse(c->bounding, c->bounding_len,
					  "process.capabilities.bounding", &mask, err) < 0 ||
			  moat_caps_parse(c->effective, c->effective_len,
					  "process.capabilities.effective", &mask, err) < 0 ||
			  moat_caps_parse(c->inheritable, c->inheritable_len,
					  "process.capabilities.inheritable", &mask, err) < 0 ||
			  moat_caps_parse(c->permitted, c->permitted_len,
					  "process.capabilities.permitted", &mask, err) < 0 ||
			  moat_caps_parse(c->ambient, c->ambient_len,
					  "process.capabilities.ambient", &mask, err) < 0))
		return moat_error_ret(err);
	if (p->cwd == NULL || p->cwd[0] != '/')
		return moat_error_msg(err, EINVAL, "process.cwd: must be an absolute path");
	return 0;
}

void moat_process_drop_unraisable_ambient(struct oci_process *p, moat_error *err)
{
	struct oci_capabilities *c = p ? p->capabilities : NULL;
	uint64_t inh = 0, prm = 0, one;
	size_t i, n = 0;

	if (c == NULL || c->ambient_len == 0 ||
	    moat_caps_parse(c->inheritable, c->inheritable_len, "inheritable", &inh, NULL) < 0 ||
	    moat_caps_parse(c->permitted, c->permitted_len, "permitted", &prm, NULL) < 0)
		return;
	for (i = 0; i < c->ambient_len; i++) {
		if (moat_caps_parse(&c->ambient[i], 1, "ambient", &one, NULL) < 0 ||
		    (one & inh & prm) == one) {
			c->ambient[n++] = c->ambient[i];
			continue;
		}
		moat_error_warn(err,
				"process.capabilities.ambient: %s left out: an ambient "
				"capability must also be inheritable and permitted",
				c->ambient[i]);
		free(c->ambient[i]);
	}
	c->ambient_len = n;
}

int moat_process_validate(const struct oci_config *cfg, const struct moat_ns_plan *ns,
			  moat_error *err)
{
	/* a joined one is the container's too: runc and crun set the names in it */
	bool own_uts = ns->create[MOAT_NS_UTS] || ns->join_fd[MOAT_NS_UTS] >= 0;

	if (cfg->process == NULL)
		return moat_error_msg(err, EINVAL, "process: required to create a container");
	if (moat_process_validate_one(cfg->process, err) < 0)
		return moat_error_ret(err);
	if (cfg->hostname != NULL && *cfg->hostname && !own_uts)
		return moat_error_msg(
			err, EINVAL,
			"hostname: needs a uts namespace of the container's own (new or joined)");
	if (cfg->domainname != NULL && *cfg->domainname && !own_uts)
		return moat_error_msg(
			err, EINVAL,
			"domainname: needs a uts namespace of the container's own (new or joined)");
	return validate_sysctl(cfg->linux ? cfg->linux->sysctl : NULL, ns, err);
}

/* A procfs instance of our own, not reachable from the container's mounts. */
int moat_process_private_procfs(int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fsfd = -1, mfd = -1;
	struct statfs sfs;

	fsfd = (int)syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return moat_error_set(err, errno, "fsopen proc");
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return moat_error_set(err, errno, "create a procfs instance");
	mfd = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mfd < 0)
		return moat_error_set(err, errno, "fsmount proc");
	if (fstatfs(mfd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
		return moat_error_msg(err, EXDEV, "private /proc is not procfs");
	*ret_fd = TAKE_FD(mfd);
	return 0;
}

static int proc_write(int procfd, const char *rel, const char *value, moat_error *err)
{
	struct open_how how = { .flags = O_WRONLY | O_CLOEXEC | O_NOCTTY,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, procfd, rel, &how, sizeof(how));

	if (fd < 0)
		return moat_error_set(err, errno, "open /proc/%s", rel);
	if (write_all(fd, value, strlen(value)) < 0)
		return moat_error_set(err, errno, "write '%s' to /proc/%s", value, rel);
	return 0;
}

int moat_process_write_sysctl(const struct oci_config *cfg, moat_error *err)
{
	const struct oci_string_map *sysctl = cfg->linux ? cfg->linux->sysctl : NULL;
	_cleanup_close_ int procfd = -1;

	if (sysctl == NULL || sysctl->len == 0)
		return 0;
	if (moat_process_private_procfs(&procfd, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < sysctl->len; i++) {
		_cleanup_free_ char *rel = xasprintf("sys/%s", sysctl->keys[i]);

		for (char *c = rel + 4; *c; c++)
			if (*c == '.')
				*c = '/';
		if (proc_write(procfd, rel, sysctl->values[i], err) < 0)
			return moat_error_prefix(err, "linux.sysctl '%s'", sysctl->keys[i]);
	}
	return 0;
}

int moat_process_write_oom_score_adj(const struct oci_process *p, moat_error *err)
{
	_cleanup_close_ int procfd = -1;
	char buf[16], rel[32];
	bool rootless = geteuid() != 0;
	int r;

	if (!p->oom_score_adj_present)
		return 0;
	if (moat_process_private_procfs(&procfd, err) < 0)
		return moat_error_ret(err);
	/* By our pid in this procfs ("self" is a symlink, which the write refuses). */
	snprintf(rel, sizeof(rel), "%d/oom_score_adj", (int)getpid());
	snprintf(buf, sizeof(buf), "%d", p->oom_score_adj);
	/* Not being dumpable hands our /proc files to the host's root, which a root moat
	 * still is here; a rootless one is dumpable for this one write (a tracer would need
	 * its uid, and no process of the container exists yet). */
	if (rootless)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	r = proc_write(procfd, rel, buf, err);
	if (rootless)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (r < 0)
		return moat_error_prefix(err, "process.oomScoreAdj %d%s", p->oom_score_adj,
					 err->code == EACCES || err->code == EPERM
						 ? " (lowering it needs CAP_SYS_RESOURCE)"
						 : "");
	return 0;
}

static int set_rlimits(const struct oci_process *p, moat_error *err)
{
	size_t i;

	for (i = 0; i < p->rlimits_len; i++) {
		const struct oci_rlimit *rl = p->rlimits[i];
		struct rlimit lim = { .rlim_cur = rl->soft, .rlim_max = rl->hard };
		struct rlimit cur;
		int res = moat_process_rlimit_resource(rl->type);

		if (setrlimit(res, &lim) == 0)
			continue;
		if (errno == EPERM && getrlimit(res, &cur) == 0 && rl->hard > cur.rlim_max)
			return moat_error_msg(
				err, EPERM,
				"process.rlimits[%zu] (%s): hard limit %llu is above the "
				"current %llu; raising it needs CAP_SYS_RESOURCE",
				i, rl->type, (unsigned long long)rl->hard,
				(unsigned long long)cur.rlim_max);
		return moat_error_set(err, errno, "process.rlimits[%zu] (%s soft %llu hard %llu)",
				      i, rl->type, (unsigned long long)rl->soft,
				      (unsigned long long)rl->hard);
	}
	return 0;
}

int moat_process_setup_env(const struct oci_config *cfg, const struct moat_ns_plan *ns,
			   bool no_new_keyring, moat_error *err)
{
	const struct oci_process *p = cfg->process;

	if (cfg->hostname && *cfg->hostname &&
	    sethostname(cfg->hostname, strlen(cfg->hostname)) < 0)
		return moat_error_set(err, errno, "hostname '%s'", cfg->hostname);
	if (cfg->domainname && *cfg->domainname &&
	    setdomainname(cfg->domainname, strlen(cfg->domainname)) < 0)
		return moat_error_set(err, errno, "domainname '%s'", cfg->domainname);
	if (moat_process_set_limits(p, err) < 0)
		return moat_error_ret(err);
	/* A fresh session keyring, so the container cannot reach the caller's keys.
	 * ENOSYS: the kernel has no keyrings, so there is nothing to reach. */
	if (!no_new_keyring && syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, NULL) < 0 &&
	    errno != ENOSYS)
		return moat_error_set(err, errno,
				      "create a session keyring (--no-new-keyring skips it)");
	(void)ns;
	return 0;
}

void moat_process_raise_hard_limits(pid_t pid, const struct oci_process *p)
{
	for (size_t i = 0; p != NULL && i < p->rlimits_len; i++) {
		const struct oci_rlimit *rl = p->rlimits[i];
		int res = moat_process_rlimit_resource(rl->type);
		struct rlimit cur, raised;

		if (res < 0 || prlimit(pid, res, NULL, &cur) < 0 || rl->hard <= cur.rlim_max)
			continue;
		raised = (struct rlimit){ .rlim_cur = cur.rlim_cur, .rlim_max = rl->hard };
		(void)prlimit(pid, res, &raised, NULL);
	}
}

int moat_process_set_limits(const struct oci_process *p, moat_error *err)
{
	if (set_rlimits(p, err) < 0)
		return moat_error_ret(err);
	umask(p->user->umask_present ? p->user->umask & 0777 : 022);
	return 0;
}

static const char *env_get(char *const *env, size_t n, const char *name)
{
	size_t len = strlen(name), i;

	for (i = 0; i < n; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return env[i] + len + 1;
	return NULL;
}

static bool is_executable_file(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0111);
}

static int find_program(const struct oci_process *p, char **ret, moat_error *err)
{
	const char *arg0 = p->args[0], *path = env_get(p->env, p->env_len, "PATH");
	_cleanup_free_ char *copy = NULL;
	char *dir, *save = NULL;

	if (strchr(arg0, '/') != NULL) {
		if (!is_executable_file(arg0))
			return moat_error_set(err, errno ? errno : EACCES, "process.args[0] '%s'",
					      arg0);
		*ret = xstrdup(arg0);
		return 0;
	}
	copy = xstrdup(path ? path : MOAT_DEFAULT_PATH);
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *cand = xasprintf("%s/%s", *dir ? dir : ".", arg0);

		if (is_executable_file(cand)) {
			*ret = TAKE_PTR(cand);
			return 0;
		}
	}
	return moat_error_msg(err, ENOENT,
			      "process.args[0] '%s': executable file not found in $PATH", arg0);
}

/* HOME of uid from the container's /etc/passwd; "/" if it has none. */
static char *home_of(uid_t uid)
{
	_cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
	char line[1024];

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		char *fields[7], *s = line, *save = NULL;
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		for (char *t = strsep(&s, ":"); t != NULL && n < 7; t = strsep(&s, ":"))
			fields[n++] = t;
		(void)save;
		if (n >= 6 && strtoul(fields[2], NULL, 10) == uid && fields[5][0] == '/')
			return xstrdup(fields[5]);
	}
	return xstrdup("/");
}

static bool is_listen_var(const char *entry)
{
	return strncmp(entry, "LISTEN_FDS=", 11) == 0 || strncmp(entry, "LISTEN_PID=", 11) == 0 ||
	       strncmp(entry, "LISTEN_FDNAMES=", 15) == 0;
}

int moat_process_prepare_exec(const struct oci_process *p, int listen_fds, struct moat_exec *ret,
			      moat_error *err)
{
	_cleanup_free_ char *path = NULL;
	const char *names = getenv("LISTEN_FDNAMES");
	size_t i, n = 0;
	char **envp;

	if (find_program(p, &path, err) < 0)
		return moat_error_ret(err);
	envp = xcalloc(p->env_len + 5, sizeof(char *));
	for (i = 0; i < p->env_len; i++)
		if (listen_fds == 0 || !is_listen_var(p->env[i]))
			envp[n++] = xstrdup(p->env[i]);
	if (listen_fds > 0) {
		envp[n++] = xasprintf("LISTEN_FDS=%d", listen_fds);
		envp[n++] = xasprintf("LISTEN_PID=%d", (int)getpid());
		if (names != NULL)
			envp[n++] = xasprintf("LISTEN_FDNAMES=%s", names);
	}
	if (env_get(p->env, p->env_len, "HOME") == NULL) {
		_cleanup_free_ char *home = home_of(p->user->uid);
		envp[n++] = xasprintf("HOME=%s", home);
	}
	ret->path = TAKE_PTR(path);
	ret->argv = xcalloc(p->args_len + 1, sizeof(char *));
	for (i = 0; i < p->args_len; i++)
		ret->argv[i] = p->args[i];
	ret->envp = envp;
	return 0;
}

void moat_exec_free(struct moat_exec *e)
{
	free(e->path);
	free(e->argv);
	strv_free(e->envp);
	e->path = NULL;
	e->argv = NULL;
	e->envp = NULL;
}

static int enter_cwd(const char *cwd, moat_error *err)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = -1;

	if (rootfd < 0)
		return moat_error_set(err, errno, "open /");
	/* Resolved inside the root, so neither a leaked fd nor a symlink can
	 * put the process outside it (CVE-2024-21626). */
	fd = (int)syscall(SYS_openat2, rootfd, cwd, &how, sizeof(how));
	if (fd < 0)
		return moat_error_set(err, errno, "process.cwd '%s'", cwd);
	if (fchdir(fd) < 0)
		return moat_error_set(err, errno, "process.cwd '%s'", cwd);
	return 0;
}

static int parse_caps(const struct oci_capabilities *c, struct moat_caps *caps, moat_error *err)
{
	memset(caps, 0, sizeof(*caps));
	if (c == NULL)
		return 0;
	if (moat_caps_parse(c->bounding, c->bounding_len, "process.capabilities.bounding",
			    &caps->bounding, err) < 0 ||
	    moat_caps_parse(c->effective, c->effective_len, "process.capabilities.effective",
			    &caps->effective, err) < 0 ||
	    moat_caps_parse(c->inheritable, c->inheritable_len, "process.capabilities.inheritable",
			    &caps->inheritable, err) < 0 ||
	    moat_caps_parse(c->permitted, c->permitted_len, "process.capabilities.permitted",
			    &caps->permitted, err) < 0 ||
	    moat_caps_parse(c->ambient, c->ambient_len, "process.capabilities.ambient",
			    &caps->ambient, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* True when the user namespace was made by an unprivileged user, who had
 * to give up setgroups(2) to write its gid map. */
static bool setgroups_denied(void)
{
	char buf[16] = "";
	_cleanup_fclose_ FILE *f = fopen("/proc/self/setgroups", "re");

	return f != NULL && fgets(buf, sizeof(buf), f) != NULL && strncmp(buf, "deny", 4) == 0;
}

static int switch_ids(const struct oci_user *u, moat_error *err)
{
	gid_t *groups = (gid_t *)u->additional_gids;

	if (u->additional_gids_len == 0 && setgroups_denied()) {
		/* setgroups is denied (rootless): the caller keeps its own
		 * supplementary groups, seen as nobody inside, as with runc. */
	} else if (setgroups(u->additional_gids_len, u->additional_gids_len ? groups : NULL) < 0) {
		return moat_error_set(err, errno, "process.user.additionalGids%s",
				      setgroups_denied()
					      ? " (setgroups is denied in a rootless user "
						"namespace)"
					      : "");
	}
	if (setresgid(u->gid, u->gid, u->gid) < 0)
		return moat_error_set(err, errno, "process.user.gid %u%s", u->gid,
				      errno == EINVAL ? " is not mapped in the user namespace"
						      : "");
	if (setresuid(u->uid, u->uid, u->uid) < 0)
		return moat_error_set(err, errno, "process.user.uid %u%s", u->uid,
				      errno == EINVAL ? " is not mapped in the user namespace"
						      : "");
	return 0;
}

#define CAP_SYS_ADMIN_BIT (UINT64_C(1) << CAP_SYS_ADMIN)

int moat_process_become_user(const struct oci_process *p, bool hold_sys_admin, moat_error *err)
{
	struct moat_caps caps;

	_Static_assert(sizeof(gid_t) == sizeof(uint32_t), "gid_t is 32 bits");
	if (parse_caps(p->capabilities, &caps, err) < 0)
		return moat_error_ret(err);
	if (hold_sys_admin) {
		caps.effective |= CAP_SYS_ADMIN_BIT;
		caps.permitted |= CAP_SYS_ADMIN_BIT;
	}
	if (moat_caps_keep(err) < 0 || switch_ids(p->user, err) < 0)
		return moat_error_ret(err);
	if (moat_caps_apply(&caps, err) < 0)
		return moat_error_ret(err);
	if (enter_cwd(p->cwd, err) < 0)
		return moat_error_ret(err);
	if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "process.noNewPrivileges");
	return 0;
}

int moat_process_release_sys_admin(const struct oci_process *p, moat_error *err)
{
	struct moat_caps caps;

	if (parse_caps(p->capabilities, &caps, err) < 0 ||
	    moat_caps_set(caps.effective, caps.permitted, caps.inheritable, err) < 0)
		return moat_error_prefix(err, "give up CAP_SYS_ADMIN");
	return 0;
}

int moat_process_close_fds(int preserve_fds, moat_error *err)
{
	unsigned int first = 3 + (unsigned int)(preserve_fds > 0 ? preserve_fds : 0);

	if (syscall(SYS_close_range, first, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) < 0)
		return moat_error_set(err, errno, "close_range");
	return 0;
}
