/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat agent: make a process as its spec says, up to execve.
 *
 * The parent allocates the stdio (a pty, or three pipes) and makes the child inside the
 * container (agent-container.c): a container's first process in namespaces of its own,
 * where it first sets up the container (the rootfs and its mounts, and its terminal, whose
 * master it sends the agent with the container's devpts); an exec'd process in its
 * container's namespaces, which it joins first. Then the child applies, in this order (runc's, so that a profile written
 * for runc behaves the same): session and stdio, rlimits, bounding set, seccomp when
 * no_new_privs is off (it needs CAP_SYS_ADMIN, so before the user change), groups and ids
 * keeping capabilities, the capability sets, umask, cwd, no_new_privs, seccomp when
 * no_new_privs is on, execve. A failure is written to the report pipe as errno and a
 * message, and the child exits 127; the pipe is close-on-exec, so EOF means execve happened.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "process.h" /* MOAT_DEFAULT_PATH */
#include "safe-path.h"
#include "utils.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* What the child sends back when it fails. */
struct child_report {
	int32_t errnum;
	int32_t complete; /* msg says it all (the cause is in it): no strerror to add */
	char msg[500];
};

/* ---- in the child ------------------------------------------------------------------------- */

static __attribute__((noreturn, format(printf, 3, 4))) void child_fail(int report_fd, int errnum,
								       const char *fmt, ...)
{
	struct child_report r = { .errnum = errnum };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
	va_end(ap);
	if (write(report_fd, &r, sizeof(r)) < 0) {
		/* nothing left to tell anyone */
	}
	_exit(127);
}

static __attribute__((noreturn)) void child_fail_error(int report_fd, const moat_error *err)
{
	struct child_report r = { .errnum = err->code, .complete = 1 };

	snprintf(r.msg, sizeof(r.msg), "%s", err->msg ? err->msg : "process setup failed");
	if (write(report_fd, &r, sizeof(r)) < 0) {
		/* nothing left to tell anyone */
	}
	_exit(127);
}

static void set_rlimits(const struct moat_proto_process *p, int rfd)
{
	for (size_t i = 0; i < p->n_rlimits; i++) {
		struct rlimit rl = { p->rlimits[i].soft, p->rlimits[i].hard };

		if (setrlimit((int)p->rlimits[i].type, &rl) < 0)
			child_fail(rfd, errno, "setrlimit %u", p->rlimits[i].type);
	}
}

static void drop_bounding(uint64_t keep, int cap_last, int rfd)
{
	for (int c = 0; c <= cap_last; c++) {
		if (keep & (UINT64_C(1) << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			child_fail(rfd, errno, "drop capability %d from the bounding set", c);
	}
}

static void set_ids(const struct moat_proto_process *p, int rfd)
{
	_cleanup_free_ gid_t *groups = xcalloc(p->n_groups, sizeof(gid_t));

	for (size_t i = 0; i < p->n_groups; i++)
		groups[i] = p->groups[i];
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		child_fail(rfd, errno, "prctl(PR_SET_KEEPCAPS)");
	if (setgroups(p->n_groups, groups) < 0)
		child_fail(rfd, errno, "setgroups");
	if (setresgid(p->gid, p->gid, p->gid) < 0)
		child_fail(rfd, errno, "setresgid %u", p->gid);
	if (setresuid(p->uid, p->uid, p->uid) < 0)
		child_fail(rfd, errno, "setresuid %u", p->uid);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		child_fail(rfd, errno, "prctl(PR_SET_KEEPCAPS)");
}

static void set_caps(const struct moat_proto_process *p, int cap_last, int rfd)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ (uint32_t)p->cap_effective, (uint32_t)p->cap_permitted,
		  (uint32_t)p->cap_inheritable },
		{ (uint32_t)(p->cap_effective >> 32), (uint32_t)(p->cap_permitted >> 32),
		  (uint32_t)(p->cap_inheritable >> 32) },
	};

	if (syscall(SYS_capset, &hdr, data) < 0)
		child_fail(rfd, errno, "capset");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		child_fail(rfd, errno, "clear the ambient capabilities");
	for (int c = 0; c <= cap_last; c++)
		if ((p->cap_ambient & (UINT64_C(1) << c)) &&
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0)
			child_fail(rfd, errno, "raise ambient capability %d", c);
}

static void set_seccomp(const struct moat_proto_process *p, int rfd)
{
	struct sock_fprog prog = { (unsigned short)p->n_seccomp, p->seccomp };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, p->seccomp_flags, &prog) < 0)
		child_fail(rfd, errno, "seccomp: load the filter");
}

static const char *env_get(const struct moat_proto_process *p, const char *name)
{
	size_t n = strlen(name);
	const char *v = NULL;

	/* The last one wins, as in a shell's export. */
	for (size_t i = 0; i < p->n_env; i++)
		if (strncmp(p->env[i], name, n) == 0 && p->env[i][n] == '=')
			v = p->env[i] + n + 1;
	return v;
}

/* The file to execve: args[0] itself when it has a slash, else the first
 * executable regular file of that name along the spec's PATH. */
static char *find_program(const struct moat_proto_process *p, int rfd)
{
	const char *name = p->args[0], *path = env_get(p, "PATH");
	int saved = ENOENT;

	if (name[0] == '\0')
		child_fail(rfd, ENOENT, "exec \"\"");
	if (strchr(name, '/') != NULL)
		return xstrdup(name);
	if (path == NULL)
		path = MOAT_DEFAULT_PATH;
	while (true) {
		const char *end = strchrnul(path, ':');
		int dlen = (int)(end - path);
		_cleanup_free_ char *cand =
			xasprintf("%.*s%s%s", dlen, path, dlen ? "/" : "./", name);
		struct stat st;

		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(cand, X_OK) == 0)
				return TAKE_PTR(cand);
			saved = EACCES;
		}
		if (*end == '\0')
			break;
		path = end + 1;
	}
	child_fail(rfd, saved, "exec %s", name);
}

/* process.cwd, resolved inside the root as every path of the rootfs is (safe-path.h), as
 * container mode's enter_cwd: neither a symlink nor a magic link such as /proc/self/fd/N
 * (on an fd the agent holds, CVE-2024-21626) or /proc/self/root leads anywhere else. 0 or
 * a negative errno. */
static int enter_cwd(const char *cwd)
{
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -1;
	int r;

	if (root < 0)
		return -errno;
	r = moat_safe_open(root, cwd, O_PATH | O_DIRECTORY, 0, 0, &fd, NULL);
	if (r < 0)
		return r;
	if (fchdir(fd) < 0)
		return -errno;
	return 0;
}

struct stdio {
	int fd[3]; /* what becomes 0, 1 and 2 */
	bool tty;  /* fd[0] is the pty's slave: make it the controlling tty */
};

static __attribute__((noreturn)) void child(const struct moat_proto_process *p,
					    const struct stdio *io, int rfd, int cap_last)
{
	sigset_t none;
	_cleanup_free_ char *prog = NULL;
	_cleanup_free_ char **env = NULL;

	moat_reset_signal_actions();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		child_fail(rfd, errno, "setsid");
	for (int i = 0; i < 3; i++)
		if (dup2(io->fd[i], i) < 0)
			child_fail(rfd, errno, "dup2 stdio");
	if (io->tty && ioctl(0, TIOCSCTTY, 0) < 0)
		child_fail(rfd, errno, "make the pty the controlling terminal");
	/* Everything the agent holds is close-on-exec; make sure of it. */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(rfd, errno, "close_range");

	set_rlimits(p, rfd);
	drop_bounding(p->cap_bounding, cap_last, rfd);
	if (p->seccomp != NULL && !p->no_new_privs)
		set_seccomp(p, rfd);
	/* cwd first as root, as runc does (a cwd only root can reach still
	 * works), and again as the user if root was refused (root_squash). */
	bool cwd_done = enter_cwd(p->cwd) == 0;
	int r;

	set_ids(p, rfd);
	set_caps(p, cap_last, rfd);
	umask(p->has_umask ? p->umask : 022);
	if (!cwd_done && (r = enter_cwd(p->cwd)) < 0)
		child_fail(rfd, -r, "process.cwd '%s'", p->cwd);
	prog = find_program(p, rfd);
	if (p->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(rfd, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
	if (p->seccomp != NULL && p->no_new_privs)
		set_seccomp(p, rfd);

	env = xcalloc(p->n_env + 1, sizeof(char *));
	memcpy(env, p->env, p->n_env * sizeof(char *));
	/* args is NULL-terminated by the caller (see agent_spawn). */
	execve(prog, p->args, env);
	child_fail(rfd, errno, "exec %s", prog);
}

/* ---- in the agent ------------------------------------------------------------------------- */

/* The pty master, from the container's devpts (agent.h): never by a path inside the rootfs,
 * where the workload may have put anything (a /dev/ptmx leading to /dev/null). */
static int open_ptmx(int devpts, moat_error *err)
{
	struct open_how how = { .flags = O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
				.resolve =
					RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV };
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (devpts < 0)
		return moat_error_msg(err, ENOENT,
				      "process.terminal: the container has no devpts "
				      "mounted on /dev/pts");
	fd = (int)syscall(SYS_openat2, devpts, "ptmx", &how, sizeof(how));
	if (fd < 0)
		return moat_error_set(err, errno, "process.terminal: open /dev/pts/ptmx");
	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2))
		return moat_error_msg(err, EXDEV,
				      "process.terminal: /dev/pts/ptmx is not the "
				      "devpts ptmx device");
	return TAKE_FD(fd);
}

static int open_pty(int devpts, const struct moat_proto_process *spec,
		    const struct moat_proto_winsize *ws, int *ret_master, int *ret_slave,
		    moat_error *err)
{
	_cleanup_close_ int master = -1, slave = -1;
	int unlock = 0;

	master = open_ptmx(devpts, err);
	if (master < 0)
		return master;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return moat_error_set(err, errno, "unlock the pty");
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return moat_error_set(err, errno, "open the pty's slave");
	/* The process owns its terminal, as a login would give it. */
	if (fchown(slave, spec->uid, (gid_t)-1) < 0)
		return moat_error_set(err, errno, "chown the pty to %u", spec->uid);
	if (ws != NULL) {
		struct winsize w = { .ws_row = ws->rows, .ws_col = ws->cols };

		if (ioctl(master, TIOCSWINSZ, &w) < 0)
			return moat_error_set(err, errno, "set the terminal size");
	}
	*ret_master = TAKE_FD(master);
	*ret_slave = TAKE_FD(slave);
	return 0;
}

static int check_caps(const struct moat_proto_process *s, int cap_last, moat_error *err)
{
	uint64_t known = cap_last >= 63 ? UINT64_MAX : (UINT64_C(1) << (cap_last + 1)) - 1;
	static const struct {
		const char *name;
		size_t off;
	} sets[] = {
		{ "effective", offsetof(struct moat_proto_process, cap_effective) },
		{ "permitted", offsetof(struct moat_proto_process, cap_permitted) },
		{ "inheritable", offsetof(struct moat_proto_process, cap_inheritable) },
		{ "ambient", offsetof(struct moat_proto_process, cap_ambient) },
	};

	/* Bounding bits the kernel does not have are dropped already; asking
	 * for more in a set the process holds is an error, not a quiet no. */
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(sets); i++) {
		uint64_t v = *(const uint64_t *)((const char *)s + sets[i].off);

		if (v & ~known)
			return moat_error_msg(
				err, EINVAL,
				"capabilities: %s set has capability %d, the guest kernel's last is %d",
				sets[i].name, 63 - __builtin_clzll(v & ~known), cap_last);
	}
	return 0;
}

static int make_pipe(int fds[2], int flags, moat_error *err)
{
	if (pipe2(fds, O_CLOEXEC | flags) < 0)
		return moat_error_set(err, errno, "pipe");
	return 0;
}

/* The fds of a process being made: the parent's ends become the proc's. */
struct spawn_fds {
	int in[2], out[2], err[2]; /* stdio pipes, without a terminal */
	int master, slave;         /* the pty, with one */
	int rep[2];                /* the child's report */
	int setup[2];              /* the first process's devpts and pty master, to the agent */
};

/* clang-format off */
#define SPAWN_FDS_INIT                                                                   \
	{ { -1, -1 }, { -1, -1 }, { -1, -1 }, -1, -1, { -1, -1 }, { -1, -1 } }
/* clang-format on */

static void close_spawn_fds(struct spawn_fds *f)
{
	agent_close_fd(&f->master);
	agent_close_fd(&f->slave);
	for (int i = 0; i < 2; i++) {
		agent_close_fd(&f->in[i]);
		agent_close_fd(&f->out[i]);
		agent_close_fd(&f->err[i]);
		agent_close_fd(&f->rep[i]);
		agent_close_fd(&f->setup[i]);
	}
}

/* Stdio, the report pipe and, for a container's first process, the setup socket. That one's
 * pty is made by itself once its devpts is mounted; an exec'd process's here. */
static int make_fds(const struct ctr *c, const struct moat_proto_process *spec,
		    const struct moat_proto_winsize *ws, bool first, struct spawn_fds *f,
		    moat_error *err)
{
	int r = 0;

	if (spec->terminal && !first)
		r = open_pty(c->devpts_fd, spec, ws, &f->master, &f->slave, err);
	else if (!spec->terminal && (r = make_pipe(f->in, 0, err)) == 0 &&
		 (r = make_pipe(f->out, 0, err)) == 0)
		r = make_pipe(f->err, 0, err);
	/* The report fits a pipe's buffer: non-blocking costs the child nothing. */
	if (r == 0)
		r = make_pipe(f->rep, O_NONBLOCK, err);
	if (r == 0 && first && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f->setup) < 0)
		r = moat_error_set(err, errno, "socketpair");
	return r;
}

/* In the child: the container's namespaces and, for its first process, the container
 * itself; then the process. */
static __attribute__((noreturn)) void in_child(struct agent *a, const struct ctr *c,
					       const struct moat_proto_process *s,
					       const struct moat_msg_start *start,
					       const struct moat_proto_winsize *ws,
					       struct spawn_fds *f)
{
	moat_error err = MOAT_ERROR_INIT;
	struct stdio io = { { f->in[0], f->out[1], f->err[1] }, false };
	_cleanup_close_ int devpts = -1, master = -1;
	int rfd = f->rep[1];

	if (start == NULL) {
		if (agent_container_join(a, c, &err) < 0)
			child_fail_error(rfd, &err);
		if (s->terminal)
			io = (struct stdio){ { f->slave, f->slave, f->slave }, true };
		child(s, &io, rfd, a->cap_last);
	}
	if (agent_container_unshare(a, c, &err) < 0 ||
	    agent_setup_rootfs(&a->cfg, start, &devpts, &err) < 0 ||
	    (s->terminal && open_pty(devpts, s, ws, &master, &f->slave, &err) < 0) ||
	    agent_send_setup(f->setup[1], devpts, master, &err) < 0)
		child_fail_error(rfd, &err);
	if (s->terminal)
		io = (struct stdio){ { f->slave, f->slave, f->slave }, true };
	child(s, &io, rfd, a->cap_last);
}

/* The proc takes the parent's ends. On a terminal, one fd per role, so each closes on its
 * own: output reaches EOF, stdin is closed by the host, and RESIZE works to the end. */
static int take_fds(struct proc *p, struct spawn_fds *f, moat_error *err)
{
	p->err_fd = TAKE_FD(f->rep[0]);
	if (!p->terminal) {
		p->in_fd = TAKE_FD(f->in[1]);
		p->out_fd[0] = TAKE_FD(f->out[0]);
		p->out_fd[1] = TAKE_FD(f->err[0]);
		for (int i = 0; i < 2; i++)
			fcntl(p->out_fd[i], F_SETFL, O_NONBLOCK);
		fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
		return 0;
	}
	if ((p->out_fd[0] = fcntl(f->master, F_DUPFD_CLOEXEC, 3)) < 0 ||
	    (p->in_fd = fcntl(f->master, F_DUPFD_CLOEXEC, 3)) < 0)
		return moat_error_set(err, errno, "dup the pty master");
	p->tty_fd = TAKE_FD(f->master);
	return 0;
}

int agent_spawn(struct agent *a, struct proc *p, const struct moat_proto_process *spec,
		const struct moat_proto_winsize *ws, const struct moat_msg_start *start,
		moat_error *err)
{
	struct spawn_fds f = SPAWN_FDS_INIT;
	struct moat_proto_process s = *spec;
	_cleanup_free_ char **argv = NULL;
	bool first = start != NULL;
	pid_t pid;
	int r;

	r = check_caps(spec, a->cap_last, err);
	if (r == 0)
		r = make_fds(p->ctr, spec, ws, first, &f, err);
	if (r < 0)
		goto out;
	argv = xcalloc(spec->n_args + 1, sizeof(char *));
	memcpy(argv, spec->args, spec->n_args * sizeof(char *));
	s.args = argv;

	pid = agent_clone(a, p->ctr, first, err);
	if (pid < 0) {
		r = (int)pid;
		goto out;
	}
	if (pid == 0) {
		agent_close_fd(&f.rep[0]);
		agent_close_fd(&f.setup[0]);
		in_child(a, p->ctr, &s, start, ws, &f);
	}
	p->pid = pid;
	p->terminal = spec->terminal;
	if (first) {
		/* The setup is the agent's own code in the child: wait for it. */
		agent_close_fd(&f.setup[1]);
		r = agent_recv_setup(f.setup[0], &p->ctr->devpts_fd, &f.master);
		if (r == -EPIPE) {
			/* It failed, and its report says why; no output will come. */
			p->err_fd = TAKE_FD(f.rep[0]);
			r = 0;
			goto out;
		}
		if (r < 0)
			moat_error_msg(err, -r,
				       "the container's setup sent the agent a bad message");
	}
	if (r == 0)
		r = take_fds(p, &f, err);
	if (r < 0)
		kill(pid, SIGKILL); /* reaped as one the agent does not know */
out:
	close_spawn_fds(&f);
	return r;
}

int agent_read_report(struct proc *p, char *msg, size_t size, int *ret_errno)
{
	struct child_report r;
	ssize_t n = read(p->err_fd, &r, sizeof(r));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -EAGAIN;
	agent_close_fd(&p->err_fd);
	if (n <= 0)
		return 0; /* EOF: execve closed it */
	if ((size_t)n != sizeof(r)) {
		snprintf(msg, size, "process setup: short report");
		*ret_errno = 0;
		return 1;
	}
	r.msg[sizeof(r.msg) - 1] = '\0';
	if (r.errnum > 0 && r.errnum <= MOAT_PROTO_MAX_ERRNO && !r.complete)
		snprintf(msg, size, "%s: %s", r.msg, strerror(r.errnum));
	else
		snprintf(msg, size, "%s", r.msg);
	*ret_errno = r.errnum > 0 && r.errnum <= MOAT_PROTO_MAX_ERRNO ? r.errnum : 0;
	return 1;
}
