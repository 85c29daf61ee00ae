/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: a session's keeper, the process that holds a sandbox made by `create`.
 *
 * It makes the sandbox, tells its caller it is ready, and then serves the session's commands
 * on <state>/sock, one connection at a time: status, exec, cp-in, cp-out, diff, rm. An exec
 * runs in a worker, a child of the keeper, so the keeper answers the others (ls, rm --force)
 * meanwhile; one command runs at a time. The worker watches the exec's connection: when the
 * command's caller goes away, the command is killed.
 *
 * The keeper enforces the session's bounds itself, needing no caller alive: at the end of
 * the lifetime the sandbox is destroyed (a command running then ends first, with reason
 * lifetime), and after the idle timeout with no command running and no exec, cp or diff.
 * The sandbox also ends when its init does, and when the keeper gets TERM, INT or HUP.
 * Killing the keeper (KILL) kills the init (PR_SET_PDEATHSIG) and leaves the state to the
 * next command's collector. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox-cli.h"
#include "sandbox-json.h"
#include "sandbox-proto.h"
#include "strv.h"
#include "utils.h"

#define RECV_TIMEOUT_S 5     /* a connection that says nothing for this long is dropped */
#define WORKER_GRACE_MS 5000 /* a worker past its bound (or told to stop) gets this long */

struct session {
	const struct moat_sandbox_opts *o;
	struct moat_sandbox *s;
	uint64_t born, lifetime_ms, idle_ms, last; /* CLOCK_MONOTONIC ms */
	int listen_fd, init_fd, worker_fd, signal_fd;
	sigset_t mask; /* the signal mask before the keeper blocked TERM, INT and HUP */
	pid_t keeper, worker;
	unsigned long commands;
};

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Milliseconds since t, a realtime clock reading. */
static int64_t real_ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)(now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* A realtime clock reading ms from now (monotonic). */
static struct timespec real_at(uint64_t mono_deadline)
{
	struct timespec now;
	int64_t d = (int64_t)mono_deadline - (int64_t)moat_monotonic_ms();

	clock_gettime(CLOCK_REALTIME, &now);
	now.tv_sec += d / 1000;
	now.tv_nsec += (d % 1000) * 1000000;
	if (now.tv_nsec < 0) {
		now.tv_nsec += 1000000000;
		now.tv_sec--;
	} else if (now.tv_nsec >= 1000000000) {
		now.tv_nsec -= 1000000000;
		now.tv_sec++;
	}
	return now;
}

static int listen_on(const char *path, moat_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= sizeof(sa.sun_path))
		return moat_error_msg(err, ENAMETOOLONG, "sandbox: socket path %s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return moat_error_set(err, errno, "sandbox: listen on %s", path);
	return TAKE_FD(fd);
}

/* Wait for the worker (killing it after the grace) and reap it. */
static void reap_worker(struct session *ss, bool wait_grace)
{
	struct pollfd p = { ss->worker_fd, POLLIN, 0 };

	if (ss->worker <= 0)
		return;
	if (!wait_grace || poll(&p, 1, WORKER_GRACE_MS) <= 0)
		kill(ss->worker, SIGKILL);
	while (waitpid(ss->worker, NULL, 0) < 0 && errno == EINTR)
		;
	close(ss->worker_fd);
	ss->worker = 0;
	ss->worker_fd = -1;
	ss->last = moat_monotonic_ms();
}

static _Noreturn void end(struct session *ss)
{
	close(ss->listen_fd); /* from now on a command finds no sandbox */
	if (ss->worker > 0) {
		moat_sandbox_stop(ss->s);
		reap_worker(ss, true);
	}
	moat_sandbox_destroy(ss->s);
	_exit(0);
}

static char *status_json(const struct session *ss)
{
	const struct moat_sandbox_info *i = moat_sandbox_info(ss->s);
	struct moat_sandbox_status st = { .name = i->name,
					  .isolation = i->isolation,
					  .accel = i->accel,
					  .created = i->created,
					  .expires = i->created,
					  .busy = ss->worker > 0,
					  .commands = ss->commands,
					  .keeper_pid = (long)getpid() };

	st.expires.tv_sec += (time_t)(ss->lifetime_ms / 1000);
	st.expires.tv_nsec += (long)(ss->lifetime_ms % 1000) * 1000000;
	if (st.expires.tv_nsec >= 1000000000) {
		st.expires.tv_nsec -= 1000000000;
		st.expires.tv_sec++;
	}
	if (ss->idle_ms > 0 && ss->worker <= 0)
		st.idle_expires = real_at(ss->last + ss->idle_ms);
	return moat_sandbox_status_json(&st);
}

/* The create's environment, with the exec's K=V over it. */
static char **merge_env(char *const *base, char *const *more)
{
	char **out = NULL;
	size_t n = 0;

	for (size_t i = 0; base != NULL && base[i] != NULL; i++) {
		size_t k = strcspn(base[i], "=") + 1;
		bool over = false;

		for (size_t j = 0; more != NULL && more[j] != NULL && !over; j++)
			over = strncmp(base[i], more[j], k) == 0;
		if (!over)
			strv_push(&out, &n, base[i]);
	}
	for (size_t j = 0; more != NULL && more[j] != NULL; j++)
		strv_push(&out, &n, more[j]);
	return out;
}

/* The worker: run the command, send its result, exit. */
static _Noreturn void worker(struct session *ss, struct sb_request *q, int conn)
{
	_cleanup_(moat_sandbox_result_freep) struct moat_sandbox_result *r = NULL;
	struct moat_sandbox_opts cmd = *ss->o;
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_(strv_freep) char **env = merge_env(ss->o->env, q->env);
	uint64_t now = moat_monotonic_ms(), end_at = ss->born + ss->lifetime_ms;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != ss->keeper)
		_exit(1);
	close(ss->listen_fd);
	close(ss->signal_fd);
	sigprocmask(SIG_SETMASK, &ss->mask, NULL); /* the command's own, not the keeper's */
	cmd.argv = q->argv;
	cmd.env = env;
	cmd.session = true;
	cmd.first_command = ss->commands == 0; /* (counted by the keeper once we are forked) */
	cmd.lifetime_left_ms = end_at > now ? end_at - now : 1;
	if (q->timeout_ms >= 0)
		cmd.timeout_ms = (uint64_t)q->timeout_ms;
	if (q->output_limit >= 0)
		cmd.output_limit = (uint64_t)q->output_limit;
	if (q->truncate >= 0)
		cmd.truncate_output = q->truncate;
	if (q->uid >= 0)
		cmd.uid = (uid_t)q->uid;
	if (q->gid >= 0)
		cmd.gid = (gid_t)q->gid;
	if (q->cwd != NULL)
		cmd.workdir = q->cwd;
	if (moat_sandbox_exec(ss->s, &cmd, conn, &r, &err) < 0) {
		sb_reply(conn, EXIT_SANDBOX_ERROR, err.msg ? err.msg : "sandbox: exec", NULL);
		_exit(0);
	}
	sb_reply_result(conn, r);
	_exit(0);
}

static void start_worker(struct session *ss, struct sb_request *q, int conn)
{
	const char *name = moat_sandbox_info(ss->s)->name;
	pid_t pid;

	if (ss->worker > 0) {
		_cleanup_free_ char *msg = xasprintf("sandbox '%s' is running a command", name);

		sb_reply(conn, EXIT_SANDBOX_ERROR, msg, NULL);
		return;
	}
	if (q->argv == NULL || q->argv[0] == NULL) {
		sb_reply(conn, EXIT_SANDBOX_ERROR, "sandbox: exec without a program", NULL);
		return;
	}
	moat_sandbox_keep_egress(ss->s); /* the proxy is the keeper's child, not the worker's */
	pid = fork();
	if (pid < 0) {
		sb_reply(conn, EXIT_SANDBOX_ERROR, "sandbox: fork the command's worker", NULL);
		return;
	}
	if (pid == 0)
		worker(ss, q, conn);
	ss->worker = pid;
	ss->worker_fd = pidfd_of(pid);
	ss->commands++;
}

/* cp-in, cp-out, diff: done here, answered at once. */
static void files_op(struct session *ss, struct sb_request *q, int conn)
{
	_cleanup_(moat_sandbox_result_freep) struct moat_sandbox_result *r = NULL;
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *json = NULL;
	int rc = -EINVAL;

	if (strcmp(q->op, "diff") == 0) {
		rc = moat_sandbox_diff(ss->s, &r, &err);
		if (rc == 0)
			json = moat_sandbox_diff_json(r);
	} else if (q->fd < 0 || q->path == NULL || q->name == NULL)
		moat_error_msg(&err, EINVAL, "sandbox: %s without its file, path and name", q->op);
	else if (strcmp(q->op, "cp-in") == 0)
		rc = moat_sandbox_copy_in(ss->s, q->fd, q->name, q->path, &err);
	else
		rc = moat_sandbox_copy_out(ss->s, q->path, q->fd, q->name, &err);
	if (rc < 0)
		sb_reply(conn, EXIT_SANDBOX_ERROR, err.msg ? err.msg : "sandbox: failed", NULL);
	else
		sb_reply(conn, 0, "", json);
	moat_error_clear(&err);
}

/* rm: refused while a command runs, unless forced; answered once the sandbox is gone. */
static void remove_op(struct session *ss, struct sb_request *q, int conn)
{
	if (ss->worker > 0 && !q->force) {
		_cleanup_free_ char *msg =
			xasprintf("sandbox '%s' is running a command (rm --force kills it)",
				  moat_sandbox_info(ss->s)->name);

		sb_reply(conn, EXIT_SANDBOX_ERROR, msg, NULL);
		return;
	}
	close(ss->listen_fd);
	if (ss->worker > 0) {
		moat_sandbox_stop(ss->s);
		reap_worker(ss, true);
	}
	moat_sandbox_destroy(ss->s);
	sb_reply(conn, 0, "", NULL);
	_exit(0);
}

static void serve(struct session *ss, int conn)
{
	_cleanup_(sb_request_clear) struct sb_request q;
	struct timeval tv = { RECV_TIMEOUT_S, 0 };
	moat_error err = MOAT_ERROR_INIT;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	sb_request_init(&q);
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid())
		return; /* another uid's: not its sandbox */
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sb_request_recv(conn, &q, &err) < 0) {
		sb_reply(conn, EXIT_SANDBOX_ERROR, err.msg, NULL);
		moat_error_clear(&err);
		return;
	}
	if (strcmp(q.op, "status") == 0) {
		_cleanup_free_ char *json = status_json(ss);

		sb_reply(conn, 0, "", json);
		return;
	}
	if (strcmp(q.op, "rm") == 0) {
		remove_op(ss, &q, conn); /* returns only when refused */
		return;
	}
	if (strcmp(q.op, "exec") != 0 && strcmp(q.op, "cp-in") != 0 &&
	    strcmp(q.op, "cp-out") != 0 && strcmp(q.op, "diff") != 0) {
		sb_reply(conn, EXIT_SANDBOX_ERROR, "sandbox: an unknown request", NULL);
		return;
	}
	ss->last = moat_monotonic_ms(); /* activity: exec, cp, diff */
	if (strcmp(q.op, "exec") == 0)
		start_worker(ss, &q, conn);
	else
		files_op(ss, &q, conn);
}

/* How long until the next bound; ends the session when one is reached. */
static int next_wait(struct session *ss)
{
	uint64_t now = moat_monotonic_ms(), life = ss->born + ss->lifetime_ms, wait;

	if (ss->worker > 0) {
		/* the worker ends its command at the lifetime; past the grace, it is killed */
		if (now >= life + WORKER_GRACE_MS)
			reap_worker(ss, false);
		else
			return (int)(life + WORKER_GRACE_MS - now);
	}
	if (now >= life || (ss->idle_ms > 0 && now >= ss->last + ss->idle_ms))
		end(ss);
	wait = life - now;
	if (ss->idle_ms > 0 && ss->last + ss->idle_ms - now < wait)
		wait = ss->last + ss->idle_ms - now;
	return wait > INT32_MAX ? INT32_MAX : (int)wait;
}

static void loop(struct session *ss)
{
	for (;;) {
		int wait = next_wait(ss);
		struct pollfd p[4] = { { ss->listen_fd, POLLIN, 0 },
				       { ss->init_fd, POLLIN, 0 },
				       { ss->worker_fd, POLLIN, 0 },
				       { ss->signal_fd, POLLIN, 0 } };

		if (poll(p, 4, wait) < 0 && errno != EINTR)
			end(ss);
		/* the init gone takes the sandbox with it; TERM, INT, HUP: an orderly end */
		if (p[1].revents != 0 || p[3].revents != 0)
			end(ss);
		if (p[2].revents != 0)
			reap_worker(ss, false);
		if (p[0].revents & POLLIN) {
			_cleanup_close_ int conn = accept4(ss->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (conn >= 0)
				serve(ss, conn);
		}
	}
}

_Noreturn void sb_keeper_session(const struct moat_sandbox_opts *o, uint64_t lifetime_ms,
				 uint64_t idle_ms, int link)
{
	struct session ss = { .o = o,
			      .lifetime_ms = lifetime_ms,
			      .idle_ms = idle_ms,
			      .listen_fd = -1,
			      .init_fd = -1,
			      .worker_fd = -1,
			      .signal_fd = -1,
			      .keeper = getpid() };
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *sock = NULL;
	sigset_t stop;

	if (sb_detach() < 0)
		_exit(EXIT_SANDBOX_ERROR);
	if (moat_sandbox_make(o, &ss.s, &err) < 0) {
		sb_reply(link, EXIT_SANDBOX_ERROR, err.msg ? err.msg : "sandbox: failed", NULL);
		_exit(EXIT_SANDBOX_ERROR);
	}
	/* the bounds count from the sandbox's creation; idle, from its being ready */
	ss.born =
		moat_monotonic_ms() - (uint64_t)(real_ms_since(&moat_sandbox_info(ss.s)->created));
	ss.last = moat_monotonic_ms();
	sock = xasprintf("%s/%u/%s/sock", MOAT_SANDBOX_ROOT, (unsigned)getuid(), o->name);
	ss.listen_fd = listen_on(sock, &err);
	ss.init_fd = pidfd_of(moat_sandbox_info(ss.s)->init);
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, &ss.mask);
	ss.signal_fd = signalfd(-1, &stop, SFD_CLOEXEC);
	if (ss.listen_fd < 0 || ss.init_fd < 0 || ss.signal_fd < 0) {
		sb_reply(link, EXIT_SANDBOX_ERROR, err.msg ? err.msg : "sandbox: pidfd_open", NULL);
		moat_sandbox_destroy(ss.s);
		_exit(EXIT_SANDBOX_ERROR);
	}
	/* the caller gone before it heard: nobody knows of the sandbox, so it goes */
	if (write_all(link, "0\t\n", 3) < 0)
		end(&ss);
	close(link);
	loop(&ss);
	end(&ss);
}
