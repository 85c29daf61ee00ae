/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: running OCI hooks. */
#include "hooks.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "signals.h"
#include "utils.h"

extern char **environ;

/* One row per hook list: its config name, where it lives in struct
 * oci_hooks, and whether a failure is only a warning, so that the hooks
 * after it still run (runtime-spec 1.0-1.2, runtime.md "Lifecycle"). */
struct kind_info {
	const char *name;
	size_t list_off;
	size_t len_off;
	bool run_all;
};

#define KIND(e, n, m, all) \
	[e] = { n, offsetof(struct oci_hooks, m), offsetof(struct oci_hooks, m##_len), all }
static const struct kind_info kinds[MOAT_HOOK_KIND_COUNT] = {
	KIND(MOAT_HOOK_PRESTART, "prestart", prestart, false),
	KIND(MOAT_HOOK_CREATE_RUNTIME, "createRuntime", create_runtime, false),
	KIND(MOAT_HOOK_CREATE_CONTAINER, "createContainer", create_container, false),
	KIND(MOAT_HOOK_START_CONTAINER, "startContainer", start_container, false),
	KIND(MOAT_HOOK_POSTSTART, "poststart", poststart, true),
	KIND(MOAT_HOOK_POSTSTOP, "poststop", poststop, true),
};
#undef KIND

/* What the forked child reports when it fails before execve. After a
 * successful execve the report pipe (O_CLOEXEC) reads as empty. */
enum child_step {
	STEP_FDS = 1,
	STEP_CWD,
	STEP_EXEC,
};

struct child_report {
	int32_t step;
	int32_t errnum;
};

/* Everything the child needs, prepared before fork: it only makes
 * async-signal-safe calls. */
struct spawn_args {
	const char *path;
	char **argv;
	char **envp;
	const char *cwd;
	int stdin_fd;
	int report_fd;
};

const char *moat_hook_kind_name(enum moat_hook_kind kind)
{
	return kind < MOAT_HOOK_KIND_COUNT ? kinds[kind].name : "unknown";
}

struct oci_hook *const *moat_hooks_list(const struct oci_hooks *hooks, enum moat_hook_kind kind,
					size_t *ret_n)
{
	const char *base = (const char *)hooks;

	*ret_n = 0;
	if (hooks == NULL || kind >= MOAT_HOOK_KIND_COUNT)
		return NULL;
	*ret_n = *(const size_t *)(base + kinds[kind].len_off);
	return *(struct oci_hook * *const *)(base + kinds[kind].list_off);
}

static int check_path(const struct oci_hook *h, moat_error *err)
{
	if (h->path == NULL || h->path[0] != '/')
		return moat_error_msg(err, EINVAL, "path: must be absolute");
	return 0;
}

int moat_hooks_validate(const struct oci_hooks *hooks, moat_error *err)
{
	for (int k = 0; k < MOAT_HOOK_KIND_COUNT; k++) {
		size_t n;
		struct oci_hook *const *list = moat_hooks_list(hooks, (enum moat_hook_kind)k, &n);

		for (size_t i = 0; i < n; i++) {
			if (check_path(list[i], err) < 0)
				return moat_error_prefix(err, "hooks.%s[%zu] '%s'", kinds[k].name,
							 i, list[i]->path ? list[i]->path : "");
		}
	}
	return 0;
}

/* --- the child ------------------------------------------------------------ */

__attribute__((noreturn)) static void child_fail(int report_fd, enum child_step step)
{
	struct child_report rep = { .step = step, .errnum = errno };

	write_all(report_fd, &rep, sizeof(rep));
	_exit(127);
}

/* stdin is the state pipe; fds 1 and 2 stay; everything else closes at
 * execve. (A dup2 onto itself would keep O_CLOEXEC, hence the fcntl.) */
static int setup_fds(int stdin_fd)
{
	if (stdin_fd == STDIN_FILENO) {
		if (fcntl(STDIN_FILENO, F_SETFD, 0) < 0)
			return -1;
	} else if (dup2(stdin_fd, STDIN_FILENO) < 0) {
		return -1;
	}
	return (int)syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
}

__attribute__((noreturn)) static void child_exec(const struct spawn_args *a)
{
	int report = a->report_fd;
	sigset_t none;

	moat_reset_signal_actions();
	/* Keep the report pipe clear of fds 0-2, which are about to change. */
	if (report <= STDERR_FILENO && (report = fcntl(report, F_DUPFD_CLOEXEC, 3)) < 0)
		_exit(127);
	if (setup_fds(a->stdin_fd) < 0)
		child_fail(report, STEP_FDS);
	if (a->cwd != NULL && chdir(a->cwd) < 0)
		child_fail(report, STEP_CWD);
	/* Its own process group, so a timeout can kill what it started. */
	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(a->path, a->argv, a->envp);
	child_fail(report, STEP_EXEC);
}

/* --- the parent ----------------------------------------------------------- */

/* A hook's environment when it has no env: n strings, or until NULL when n is SIZE_MAX. */
struct hook_env {
	char *const *env;
	size_t n;
};

/* argv: hook.args, or { path } when absent. envp: hook.env when present (even empty), else
 * the default. Both NULL-terminated arrays of borrowed strings. */
static void build_vectors(const struct oci_hook *h, const struct hook_env *dflt, char ***ret_argv,
			  char ***ret_envp)
{
	char *const *env = h->env != NULL ? h->env : dflt->env;
	size_t n = h->env != NULL ? h->env_len : dflt->n, i;
	char **argv = xcalloc(h->args_len + 2, sizeof(char *));
	char **envp;

	if (n == SIZE_MAX)
		for (n = 0; env != NULL && env[n] != NULL; n++)
			;
	envp = xcalloc(n + 1, sizeof(char *));
	if (h->args_len == 0)
		argv[0] = h->path;
	for (i = 0; i < h->args_len; i++)
		argv[i] = h->args[i];
	for (i = 0; i < n; i++)
		envp[i] = env[i];
	*ret_argv = argv;
	*ret_envp = envp;
}

/* A pipe that already holds the whole state and is closed for writing, so
 * the hook reads it to EOF and nothing here blocks on a hook that does not
 * read. Returns 1 when the state does not fit in a pipe. */
static int stdin_pipe(const char *json, size_t len, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int rfd = -1, wfd = -1;
	int fds[2], size;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "stdin pipe");
	rfd = fds[0];
	wfd = fds[1];
	size = fcntl(wfd, F_GETPIPE_SZ);
	if (size < 0)
		return moat_error_set(err, errno, "stdin pipe");
	if (len > (size_t)size && (len > INT32_MAX || fcntl(wfd, F_SETPIPE_SZ, (int)len) < 0))
		return 1;
	/* Non-blocking: should the sums above be wrong, fail rather than hang. */
	if (fcntl(wfd, F_SETFL, O_NONBLOCK) < 0 || write_all(wfd, json, len) < 0)
		return moat_error_set(err, errno, "write the state to the stdin pipe");
	*ret_fd = TAKE_FD(rfd);
	return 0;
}

/* A state larger than a pipe takes (annotations can be megabytes): an
 * anonymous file, read from its start. */
static int stdin_memfd(const char *json, size_t len, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = memfd_create("moat-hook-state", MFD_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "memfd_create for the state");
	if (write_all(fd, json, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return moat_error_set(err, errno, "write the state to a memfd");
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int make_stdin(const char *json, int *ret_fd, moat_error *err)
{
	size_t len = json ? strlen(json) : 0;
	int r = stdin_pipe(json ? json : "", len, ret_fd, err);

	if (r <= 0)
		return r;
	return stdin_memfd(json, len, ret_fd, err);
}

static int fork_child(const struct spawn_args *a, pid_t *ret_pid, moat_error *err)
{
	sigset_t all, saved;
	pid_t pid;
	int saved_errno;

	/* No handler of the caller's may run in the child before execve. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &saved);
	pid = fork();
	if (pid == 0)
		child_exec(a);
	saved_errno = errno;
	sigprocmask(SIG_SETMASK, &saved, NULL);
	if (pid < 0)
		return moat_error_set(err, saved_errno, "fork");
	/* The child does this too; whoever runs first makes the group. */
	setpgid(pid, pid);
	*ret_pid = pid;
	return 0;
}

/* Start the hook. *ret_report_fd reads its pre-execve failure, if any. */
static int spawn(const struct oci_hook *h, const char *json, const char *cwd,
		 const struct hook_env *dflt, pid_t *ret_pid, int *ret_report_fd, moat_error *err)
{
	_cleanup_free_ char **argv = NULL, **envp = NULL;
	_cleanup_close_ int stdin_fd = -1, report_r = -1, report_w = -1;
	struct spawn_args a = { .path = h->path, .cwd = cwd };
	int fds[2];

	if (make_stdin(json, &stdin_fd, err) < 0)
		return moat_error_ret(err);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "report pipe");
	report_r = fds[0];
	report_w = fds[1];
	build_vectors(h, dflt, &argv, &envp);
	a.argv = argv;
	a.envp = envp;
	a.stdin_fd = stdin_fd;
	a.report_fd = report_w;
	if (fork_child(&a, ret_pid, err) < 0)
		return moat_error_ret(err);
	*ret_report_fd = TAKE_FD(report_r);
	return 0;
}

static bool time_left(const struct timespec *deadline, struct timespec *ret)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ret->tv_sec = deadline->tv_sec - now.tv_sec;
	ret->tv_nsec = deadline->tv_nsec - now.tv_nsec;
	if (ret->tv_nsec < 0) {
		ret->tv_nsec += 1000000000L;
		ret->tv_sec--;
	}
	return ret->tv_sec > 0 || (ret->tv_sec == 0 && ret->tv_nsec > 0);
}

/* Wait on the pidfd until the hook exits (*ret_exited) or time runs out. */
static int wait_until(pid_t pid, int32_t seconds, bool *ret_exited, moat_error *err)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	struct timespec deadline, left;

	if (pidfd < 0)
		return moat_error_set(err, errno, "pidfd_open");
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	*ret_exited = false;
	while (time_left(&deadline, &left)) {
		int r = ppoll(&p, 1, &left, NULL);

		if (r > 0) {
			*ret_exited = true;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return moat_error_set(err, errno, "poll the hook's pidfd");
	}
	return 0;
}

/* The hook is an unreaped child: its pid, and so its group id, cannot
 * have been reused. */
static void kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

static int reap(pid_t pid, int *ret_wstatus, moat_error *err)
{
	while (waitpid(pid, ret_wstatus, 0) < 0) {
		if (errno != EINTR)
			return moat_error_set(err, errno, "wait for the hook");
	}
	return 0;
}

/* Wait for the hook, within its timeout if it has one. Always reaps it. */
static int wait_hook(const struct oci_hook *h, pid_t pid, int *ret_wstatus, bool *ret_timed_out,
		     moat_error *err)
{
	bool exited = true;
	int r = 0;

	if (h->timeout_present)
		r = wait_until(pid, h->timeout, &exited, err);
	if (r < 0 || !exited)
		kill_group(pid);
	*ret_timed_out = r == 0 && !exited;
	if (reap(pid, ret_wstatus, r < 0 ? NULL : err) < 0 && r == 0)
		r = moat_error_ret(err);
	return r;
}

static int report_error(const struct child_report *rep, const char *cwd, moat_error *err)
{
	int e = rep->errnum > 0 ? rep->errnum : EIO;

	switch (rep->step) {
	case STEP_FDS: return moat_error_set(err, e, "set up its file descriptors");
	case STEP_CWD: return moat_error_set(err, e, "enter '%s'", cwd ? cwd : "");
	default: return moat_error_set(err, e, "exec");
	}
}

/* Turn what happened to the hook into 0 or an error. */
static int judge(const struct oci_hook *h, int report_fd, int wstatus, bool timed_out,
		 const char *cwd, moat_error *err)
{
	struct child_report rep;
	const char *name;
	int sig;

	if (timed_out)
		return moat_error_msg(err, ETIMEDOUT, "timed out after %d s: killed",
				      (int)h->timeout);
	if (read_all(report_fd, &rep, sizeof(rep)) == (ssize_t)sizeof(rep))
		return report_error(&rep, cwd, err);
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
		return 0;
	if (WIFEXITED(wstatus))
		return moat_error_msg(err, ECANCELED, "exited with status %d",
				      WEXITSTATUS(wstatus));
	sig = WTERMSIG(wstatus);
	name = moat_signal_name(sig);
	if (name == NULL)
		return moat_error_msg(err, ECANCELED, "killed by signal %d", sig);
	return moat_error_msg(err, ECANCELED, "killed by signal %d (%s)", sig, name);
}

static int run_one(const struct oci_hook *h, const char *json, const char *cwd,
		   const struct hook_env *dflt, moat_error *err)
{
	_cleanup_close_ int report_fd = -1;
	bool timed_out = false;
	int wstatus = 0;
	pid_t pid = -1;

	if (check_path(h, err) < 0 || spawn(h, json, cwd, dflt, &pid, &report_fd, err) < 0)
		return moat_error_ret(err);
	if (wait_hook(h, pid, &wstatus, &timed_out, err) < 0)
		return moat_error_ret(err);
	return judge(h, report_fd, wstatus, timed_out, cwd, err);
}

/* Add one hook's failure to err: the first sets it, later ones append. */
static void add_failure(moat_error *err, const moat_error *one, bool first)
{
	_cleanup_free_ char *prev = NULL;

	if (err == NULL)
		return;
	if (first) {
		moat_error_msg(err, one->code, "%s", one->msg);
		return;
	}
	prev = xstrdup(err->msg);
	moat_error_msg(err, err->code, "%s; %s", prev, one->msg);
}

static int run_kind(const struct oci_hooks *hooks, enum moat_hook_kind kind, const char *state_json,
		    const char *cwd, const struct hook_env *dflt, moat_error *err)
{
	struct oci_hook *const *list;
	size_t n, failed = 0;

	list = moat_hooks_list(hooks, kind, &n);
	for (size_t i = 0; i < n; i++) {
		_cleanup_error_ moat_error one = MOAT_ERROR_INIT;

		if (run_one(list[i], state_json, cwd, dflt, &one) == 0)
			continue;
		moat_error_prefix(&one, "hooks.%s[%zu] '%s'", kinds[kind].name, i,
				  list[i]->path ? list[i]->path : "");
		add_failure(err, &one, failed++ == 0);
		if (!kinds[kind].run_all)
			break;
	}
	return failed > 0 ? moat_error_ret(err) : 0;
}

int moat_hooks_run(const struct oci_hooks *hooks, enum moat_hook_kind kind, const char *state_json,
		   const char *cwd, moat_error *err)
{
	const struct hook_env runtime = { environ, SIZE_MAX };

	return run_kind(hooks, kind, state_json, cwd, &runtime, err);
}

int moat_hooks_run_with_env(const struct oci_hooks *hooks, enum moat_hook_kind kind,
			    const char *state_json, const char *cwd, char *const *env,
			    size_t env_len, moat_error *err)
{
	const struct hook_env dflt = { env, env_len };

	return run_kind(hooks, kind, state_json, cwd, &dflt, err);
}
