/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat agent: PID 1 of the microVM. main, the one event loop, the host's
 * messages and the table of processes (see agent.h). */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

static int log_fd = -1;

uint64_t agent_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* To the kernel log: it reaches the console whatever the agent's stdio is. */
static __attribute__((format(printf, 2, 0))) void log_at(int level, const char *fmt, va_list ap)
{
	char line[600];
	int n;

	n = snprintf(line, sizeof(line), "<%d>moat-agent: ", level);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (write(log_fd >= 0 ? log_fd : 2, line, strlen(line)) < 0) {
		/* no one to tell */
	}
}

void agent_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_at(3, fmt, ap); /* KERN_ERR: shown on the console even with `quiet` */
	va_end(ap);
}

void agent_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_at(5, fmt, ap); /* KERN_NOTICE: hidden by `quiet` */
	va_end(ap);
}

/* ---- processes ---------------------------------------------------------------------------------- */

static struct proc *find_proc(struct agent *a, uint32_t id)
{
	for (size_t i = 0; i < a->n_procs; i++)
		if (a->procs[i]->id == id)
			return a->procs[i];
	return NULL;
}

static struct proc *new_proc(struct agent *a, uint32_t id, struct ctr *c, bool first)
{
	struct proc *p = xcalloc(1, sizeof(*p));

	p->id = id;
	p->ctr = c;
	p->first = first;
	p->workload = first && c == a->ctrs[0];
	p->err_fd = p->in_fd = p->tty_fd = -1;
	p->out_fd[0] = p->out_fd[1] = -1;
	a->procs[a->n_procs++] = p;
	return p;
}

static void free_proc(struct agent *a, struct proc *p)
{
	for (size_t i = 0; i < a->n_procs; i++)
		if (a->procs[i] == p) {
			a->procs[i] = a->procs[--a->n_procs];
			break;
		}
	agent_close_fd(&p->err_fd);
	agent_close_fd(&p->out_fd[0]);
	agent_close_fd(&p->out_fd[1]);
	agent_close_fd(&p->in_fd);
	agent_close_fd(&p->tty_fd);
	moat_buf_free(&p->in);
	free(p);
}

/* The guest now waits for SHUTDOWN: it cannot see when the host has read
 * what sits in the port's virtqueue, so it does not power off on its own. */
static void workload_ended(struct agent *a, int code)
{
	a->workload_over = true;
	a->exit_code = code;
}

/* A container's first process ended (or never started): the container is over, and
 * whatever else runs in it goes. The workload's takes the whole guest (reap). */
static void container_ended(struct agent *a, struct ctr *c)
{
	if (c->over)
		return;
	c->over = true;
	if (c != a->ctrs[0])
		agent_ctr_kill(c);
}

/* start: the container's START or CONTAINER, for its first process; NULL for an exec'd one. */
static void run_process(struct agent *a, uint32_t id, struct ctr *c,
			const struct moat_proto_process *spec, const struct moat_proto_winsize *ws,
			const struct moat_msg_start *start)
{
	moat_error err = MOAT_ERROR_INIT;
	struct proc *p = new_proc(a, id, c, start != NULL);

	if (agent_spawn(a, p, spec, ws, start, &err) < 0) {
		agent_send_error(a, id, err.code, "%s", err.msg ? err.msg : "spawn failed");
		if (p->workload)
			workload_ended(a, 127);
		if (p->first)
			container_ended(a, c);
		free_proc(a, p);
	}
	moat_error_clear(&err);
}

static void reap(struct agent *a)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;

	while (read(a->sigfd, &si, sizeof(si)) > 0)
		;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < a->n_procs; i++) {
			struct proc *p = a->procs[i];

			if (p->pid != pid)
				continue;
			p->reaped = true;
			p->status = status;
			p->reaped_at = agent_now_ms();
			/* What it wrote is all in the pipes now: that much is
			 * relayed before EXITED, however slow the host. */
			for (int w = 0; w < 2; w++) {
				int n = 0;

				if (p->out_fd[w] >= 0 && ioctl(p->out_fd[w], FIONREAD, &n) == 0 &&
				    n > 0)
					p->pending[w] = (size_t)n;
			}
			/* The guest ends with its workload, a container with its first
			 * process: what is left goes. */
			if (p->workload)
				kill(-1, SIGKILL);
			else if (p->first)
				container_ended(a, p->ctr);
		}
		/* Anyone else was an orphan the kernel gave PID 1. */
	}
}

static void check_report(struct agent *a, struct proc *p)
{
	char msg[MOAT_PROTO_MAX_MESSAGE];
	int errnum = 0, r = agent_read_report(p, msg, sizeof(msg), &errnum);

	if (r == -EAGAIN)
		return;
	if (r == 1) {
		p->failed = true;
		agent_send_error(a, p->id, errnum, "%s", msg);
		return;
	}
	p->started = true;
	struct moat_msg m = { .type = MOAT_MSG_STARTED,
			      .id = p->id,
			      .u.started.pid = (uint32_t)p->pid };

	agent_send(a, &m);
}

/* A process is done once reaped and its output has ended (or had its
 * time): EXITED goes after its last DATA. One that failed to start goes
 * without EXITED. */
static void finish_processes(struct agent *a)
{
	uint64_t now = agent_now_ms();

	for (size_t i = 0; i < a->n_procs;) {
		struct proc *p = a->procs[i];
		bool open_out = p->out_fd[0] >= 0 || p->out_fd[1] >= 0;

		if (p->reaped && p->err_fd >= 0)
			check_report(a, p); /* the child is gone: its report is all there */
		if (!p->reaped || p->err_fd >= 0) {
			i++;
			continue;
		}
		if (p->failed) {
			if (p->workload)
				workload_ended(a, 127);
			if (p->first)
				container_ended(a, p->ctr);
			free_proc(a, p);
			continue;
		}
		if (open_out &&
		    (now < p->reaped_at + AGENT_DRAIN_MS || p->pending[0] || p->pending[1])) {
			i++;
			continue;
		}
		for (int w = 0; w < 2; w++)
			if (p->out_fd[w] >= 0) {
				struct moat_msg eof = { .type = MOAT_MSG_OUTPUT, .id = p->id };

				eof.u.data.stream = (uint8_t)(w + 1);
				agent_send(a, &eof);
			}
		struct moat_msg m = { .type = MOAT_MSG_EXITED, .id = p->id };
		if (WIFSIGNALED(p->status)) {
			m.u.exited.has_signal = true;
			m.u.exited.signal = (uint32_t)WTERMSIG(p->status);
		} else {
			m.u.exited.has_status = true;
			m.u.exited.status = (uint32_t)WEXITSTATUS(p->status);
		}
		agent_send(a, &m);
		if (p->workload)
			workload_ended(a, moat_proto_exit_code(&m.u.exited));
		free_proc(a, p);
	}
}

/* ---- the host's messages ------------------------------------------------------------------------- */

static void on_start(struct agent *a, struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;
	struct ctr *ctr;

	if (a->started) {
		agent_send_error(a, m->id, EBUSY, "START: the container was started already");
		return;
	}
	a->started = true;
	if (a->cfg.error[0] != '\0') {
		agent_send_error(a, m->id, EINVAL, "START: %s", a->cfg.error);
		workload_ended(a, 127);
		return;
	}
	/* first: a restored guest's RNG is every other restore's until then */
	if (m->u.start.seed != NULL &&
	    agent_reseed(m->u.start.seed, m->u.start.seed_len, &err) < 0) {
		agent_send_error(a, m->id, err.code, "START: the seed: %s", err.msg);
		moat_error_clear(&err);
		workload_ended(a, 127);
		return;
	}
	/* no RTC: the guest's clock starts at the epoch until the host's time comes */
	if (m->u.start.has_realtime) {
		struct timespec t = { .tv_sec = (time_t)(m->u.start.realtime_ns / 1000000000u),
				      .tv_nsec = (long)(m->u.start.realtime_ns % 1000000000u) };

		if (clock_settime(CLOCK_REALTIME, &t) < 0)
			agent_log("set the clock: %m");
	}
	if (agent_net_setup(&m->u.start, &err) < 0) {
		agent_send_error(a, m->id, err.code, "START: %s", err.msg);
		moat_error_clear(&err);
		workload_ended(a, 127);
		return;
	}
	if (agent_ctr_new(a, m->id, &m->u.start, &ctr, &err) < 0) {
		agent_send_error(a, m->id, err.code, "START: the container's cgroup: %s", err.msg);
		moat_error_clear(&err);
		workload_ended(a, 127);
		return;
	}
	run_process(a, m->id, ctr, &m->u.start.process,
		    m->u.start.has_winsize ? &m->u.start.winsize : NULL, &m->u.start);
}

/* Why a new process (EXEC or CONTAINER) with this id cannot be made now, or NULL. */
static const char *refuse_new(struct agent *a, uint32_t id, int *ret_errno)
{
	*ret_errno = ESRCH;
	if (!a->started || a->workload_over || a->stopping)
		return "the container is not running";
	*ret_errno = EEXIST;
	if (find_proc(a, id) != NULL || agent_find_ctr(a, id) != NULL)
		return "the id is in use";
	*ret_errno = EAGAIN;
	if (a->n_procs >= AGENT_MAX_PROCS)
		return "too many processes";
	return NULL;
}

static void on_container(struct agent *a, struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;
	struct ctr *ctr;
	int errnum;
	const char *why = refuse_new(a, m->id, &errnum);

	if (why != NULL) {
		agent_send_error(a, m->id, errnum, "CONTAINER %u: %s", m->id, why);
		return;
	}
	if (agent_pod_share(a, &err) < 0 || agent_ctr_new(a, m->id, &m->u.start, &ctr, &err) < 0) {
		agent_send_error(a, m->id, err.code, "CONTAINER %s: %s", m->u.start.name, err.msg);
		moat_error_clear(&err);
		return;
	}
	run_process(a, m->id, ctr, &m->u.start.process,
		    m->u.start.has_winsize ? &m->u.start.winsize : NULL, &m->u.start);
}

static void on_exec(struct agent *a, struct moat_msg *m)
{
	uint32_t in = m->u.exec.container;
	struct ctr *c = in != 0 ? agent_find_ctr(a, in) : a->n_ctrs > 0 ? a->ctrs[0] : NULL;
	int errnum;
	const char *why = refuse_new(a, m->id, &errnum);

	if (why != NULL)
		agent_send_error(a, m->id, errnum, "EXEC %u: %s", m->id, why);
	else if (c == NULL || c->over || c->pidfd < 0)
		agent_send_error(a, m->id, ESRCH, "EXEC: container %u is not running", in);
	else
		run_process(a, m->id, c, &m->u.exec.process,
			    m->u.exec.has_winsize ? &m->u.exec.winsize : NULL, NULL);
}

static void on_freeze(struct agent *a, struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;
	struct ctr *c = agent_find_ctr(a, m->id);
	struct moat_msg done = { .type = MOAT_MSG_FROZEN, .id = m->id };

	if (c == NULL || c->over) {
		agent_send_error(a, m->id, ESRCH, "FREEZE: container %u is not running", m->id);
		return;
	}
	/* FROZEN says what is so: the host tells a failure from the answer */
	if (agent_ctr_freeze(c, m->u.freeze.frozen, &err) < 0) {
		agent_log("FREEZE %u: %s", m->id, err.msg);
		moat_error_clear(&err);
	}
	done.u.freeze.frozen = c->frozen;
	agent_send(a, &done);
}

static void on_update(struct agent *a, struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;
	struct ctr *c = agent_find_ctr(a, m->id);
	struct moat_msg done = { .type = MOAT_MSG_UPDATED, .id = m->id };

	if (c == NULL || c->over) {
		agent_send_error(a, m->id, ESRCH, "UPDATE: container %u is not running", m->id);
		return;
	}
	if (agent_ctr_update(c, &m->u.update.resources, &err) < 0) {
		agent_send_error(a, m->id, err.code > 0 ? err.code : EIO, "UPDATE: %s", err.msg);
		moat_error_clear(&err);
		return;
	}
	agent_send(a, &done);
}

static void on_stats(struct agent *a, struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;
	struct ctr *c = agent_find_ctr(a, m->id);
	struct moat_msg usage = { .type = MOAT_MSG_USAGE, .id = m->id };

	/* (a container whose first process ended keeps its cgroup until it is collected: what
	 * it counted is still there to read) */
	if (c == NULL) {
		agent_send_error(a, m->id, ESRCH, "STATS: no container %u", m->id);
		return;
	}
	if (agent_ctr_usage(c, &usage.u.usage, &err) < 0) {
		agent_send_error(a, m->id, err.code > 0 ? err.code : EIO, "STATS: %s", err.msg);
		moat_error_clear(&err);
		return;
	}
	agent_send(a, &usage);
}

static void on_process_message(struct agent *a, struct moat_msg *m)
{
	const char *what = moat_proto_type_name(m->type);
	struct proc *p = find_proc(a, m->id);

	if (p == NULL || p->failed) {
		/* Stdin for a process that just ended is no one's fault. */
		if (m->type != MOAT_MSG_STDIN)
			agent_send_error(a, m->id, ESRCH, "%s: no process %u", what, m->id);
		return;
	}
	switch (m->type) {
	case MOAT_MSG_STDIN: agent_queue_stdin(a, p, m->u.data.data, m->u.data.len); break;
	case MOAT_MSG_SIGNAL:
		if (!p->reaped && kill(p->pid, (int)m->u.signal.signo) < 0)
			agent_send_error(a, m->id, errno, "SIGNAL %u to process %u: %s",
					 m->u.signal.signo, m->id, strerror(errno));
		break;
	case MOAT_MSG_RESIZE: {
		struct winsize w = { .ws_row = m->u.resize.winsize.rows,
				     .ws_col = m->u.resize.winsize.cols };

		if (p->tty_fd < 0)
			agent_send_error(a, m->id, ENOTTY, "RESIZE: process %u has no terminal",
					 m->id);
		else if (ioctl(p->tty_fd, TIOCSWINSZ, &w) < 0)
			agent_send_error(a, m->id, errno, "RESIZE: %s", strerror(errno));
		break;
	}
	default: break;
	}
}

static void stop(struct agent *a)
{
	if (a->stopping)
		return;
	a->stopping = true;
	a->deadline = agent_now_ms() + AGENT_STOP_FLUSH_MS;
	kill(-1, SIGKILL);
}

static void dispatch(struct agent *a, struct moat_msg *m)
{
	switch (m->type) {
	case MOAT_MSG_START: on_start(a, m); break;
	case MOAT_MSG_EXEC: on_exec(a, m); break;
	case MOAT_MSG_CONTAINER: on_container(a, m); break;
	case MOAT_MSG_FREEZE: on_freeze(a, m); break;
	case MOAT_MSG_UPDATE: on_update(a, m); break;
	case MOAT_MSG_STATS: on_stats(a, m); break;
	case MOAT_MSG_SHUTDOWN: stop(a); break;
	default: on_process_message(a, m); break;
	}
}

/* Every whole frame in a->inb. */
static void handle_input(struct agent *a)
{
	if (a->input_broken)
		a->inb.len = 0;
	while (a->inb.len > 0) {
		moat_error err = MOAT_ERROR_INIT;
		struct moat_msg m;
		size_t used;
		int r = moat_proto_decode(MOAT_PEER_HOST, a->inb.data, a->inb.len, &used, &m, &err);

		if (r == 0)
			return;
		if (r < 0) {
			agent_send_error(a, 0, 0, "%s", err.msg);
			moat_error_clear(&err);
			if (used == 0) {
				/* The framing is lost: nothing the host sends can be
				 * read any more, SHUTDOWN included. The workload goes;
				 * the guest goes when the host closes its end. */
				a->inb.len = 0;
				a->input_broken = true;
				kill(-1, SIGKILL);
				return;
			}
		} else {
			dispatch(a, &m);
			moat_msg_clear(&m);
		}
		moat_buf_consume(&a->inb, used);
	}
}

/* ---- the loop ------------------------------------------------------------------------------------ */

enum role { ROLE_PORT, ROLE_SIGNALS, ROLE_REPORT, ROLE_STDOUT, ROLE_STDERR, ROLE_STDIN };

struct watch {
	struct proc *p;
	enum role role;
};

#define MAX_WATCHES (2 + 4 * AGENT_MAX_PROCS)

static void add_watch(struct pollfd *pfd, struct watch *w, size_t *n, int fd, short events,
		      struct proc *p, enum role role)
{
	pfd[*n] = (struct pollfd){ fd, events, 0 };
	w[*n] = (struct watch){ p, role };
	(*n)++;
}

static size_t build_watches(struct agent *a, struct pollfd *pfd, struct watch *w)
{
	size_t n = 0;
	short port_events = 0;

	if (a->out.len < AGENT_OUT_LIMIT)
		port_events |= POLLIN;
	if (agent_queued(a))
		port_events |= POLLOUT;
	add_watch(pfd, w, &n, a->port, port_events, NULL, ROLE_PORT);
	add_watch(pfd, w, &n, a->sigfd, POLLIN, NULL, ROLE_SIGNALS);
	for (size_t i = 0; i < a->n_procs; i++) {
		struct proc *p = a->procs[i];

		if (p->err_fd >= 0) {
			/* Output only after STARTED: the report comes first. */
			add_watch(pfd, w, &n, p->err_fd, POLLIN, p, ROLE_REPORT);
			continue;
		}
		if (a->out.len < AGENT_OUT_HIGH) {
			if (p->out_fd[0] >= 0)
				add_watch(pfd, w, &n, p->out_fd[0], POLLIN, p, ROLE_STDOUT);
			if (p->out_fd[1] >= 0)
				add_watch(pfd, w, &n, p->out_fd[1], POLLIN, p, ROLE_STDERR);
		}
		if (p->in_fd >= 0 && p->in.len > 0)
			add_watch(pfd, w, &n, p->in_fd, POLLOUT, p, ROLE_STDIN);
	}
	return n;
}

/* The next time something is due: a drain that ends, or the power off. */
static int next_timeout(struct agent *a)
{
	uint64_t now = agent_now_ms(), next = UINT64_MAX;

	if (a->stopping)
		next = a->deadline;
	/* A drain that is over but still has bytes to relay waits on its fd. */
	for (size_t i = 0; i < a->n_procs; i++) {
		uint64_t t = a->procs[i]->reaped_at + AGENT_DRAIN_MS;

		if (a->procs[i]->reaped && t > now && t < next)
			next = t;
	}
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now + 1);
}

/* Stopping: once everyone is gone and all is written, or time is up. */
static bool done(struct agent *a)
{
	if (!a->stopping)
		return false;
	return agent_now_ms() >= a->deadline || (a->n_procs == 0 && !agent_queued(a));
}

static void handle_events(struct agent *a, struct pollfd *pfd, struct watch *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct proc *p = w[i].p;
		short re = pfd[i].revents;

		if (re == 0)
			continue;
		switch (w[i].role) {
		case ROLE_PORT:
			if ((re & (POLLIN | POLLHUP)) && agent_read_port(a) < 0) {
				agent_log("the host closed the port");
				agent_drop_queued(a);
				stop(a);
				a->deadline = agent_now_ms();
			}
			handle_input(a);
			if (re & POLLOUT)
				agent_flush(a);
			break;
		case ROLE_SIGNALS: reap(a); break;
		case ROLE_REPORT: check_report(a, p); break;
		case ROLE_STDOUT:
		case ROLE_STDERR:
			/* Others in this pass may have filled the queue: wait. */
			if (a->out.len < AGENT_OUT_HIGH)
				agent_relay_output(a, p, w[i].role == ROLE_STDOUT ? 0 : 1);
			break;
		case ROLE_STDIN: agent_write_stdin(a, p); break;
		}
	}
}

/* Processes are freed only in finish_processes, between passes, so every
 * watch of a pass points at a live one (a message may close one of its fds:
 * the handlers look at the process's fds, not the watch's). */
static void loop(struct agent *a)
{
	static struct pollfd pfd[MAX_WATCHES];
	static struct watch w[MAX_WATCHES];

	while (!done(a)) {
		size_t n = build_watches(a, pfd, w);
		int r = poll(pfd, n, next_timeout(a));

		if (r < 0 && errno != EINTR) {
			agent_log("poll: %m");
			agent_sleep_ms(10);
		}
		if (r > 0)
			handle_events(a, pfd, w, n);
		finish_processes(a);
		agent_ctrs_collect(a);
		agent_flush(a);
	}
}

static int setup_signals(void)
{
	sigset_t set;

	/* PID 1 gets no signal it has no handler for; SIGCHLD comes through a
	 * signalfd, and a write to a closed pipe is an error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void send_ready(struct agent *a)
{
	struct utsname u;
	char release[MOAT_PROTO_MAX_RELEASE + 1];
	struct moat_msg m = { .type = MOAT_MSG_READY, .u.ready.version = MOAT_PROTO_VERSION };

	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "unknown");
	moat_proto_sanitize_text(release, sizeof(release), u.release);
	m.u.ready.release = release[0] ? release : "unknown";
	agent_send(a, &m);
}

int main(void)
{
	static struct agent a = {
		.port = -1, .sigfd = -1, .debug_port_fd = -1, .own_pidns = -1, .cgroup_root = -1
	};
	moat_error err = MOAT_ERROR_INIT;

	if (getpid() != 1) {
		fprintf(stderr, "moat-agent: runs only as PID 1 of a moat microVM\n");
		return 1;
	}
	umask(0);
	/* /proc/1/fd (the port) stays out of reach of a container's root
	 * without CAP_SYS_PTRACE; processes it starts are dumpable again
	 * after their execve. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (agent_mount_base(&err) < 0) {
		agent_log("%s", err.msg);
		agent_power_off(&a);
	}
	log_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	agent_fill_stdio();
	agent_parse_cmdline(&a.cfg);
	agent_prepare_exit(&a);
	agent_loopback_up(&a.cfg);
	agent_egress_start(&a.cfg);
	a.cap_last = agent_read_cap_last();
	a.own_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (a.own_pidns < 0)
		snprintf(a.cfg.error, sizeof(a.cfg.error), "open /proc/self/ns/pid: %s",
			 strerror(errno));
	a.sigfd = setup_signals();
	if (a.sigfd < 0) {
		agent_log("signalfd: %m");
		agent_power_off(&a);
	}
	/* output's way to the port without a copy (agent-io.c); without it, copies */
	if (pipe2(a.stage, O_NONBLOCK | O_CLOEXEC) < 0)
		a.no_splice = true;
	a.port = agent_open_port(&a.cfg);
	if (a.port < 0 || agent_wait_for_host(a.port) < 0)
		agent_power_off(&a);
	send_ready(&a);
	/* START will be refused with it too; the host decides what next. */
	if (a.cfg.error[0] != '\0')
		agent_send_error(&a, 0, EINVAL, "%s", a.cfg.error);
	agent_flush(&a);
	loop(&a);
	agent_note("powering off (queued %zu bytes, %zu processes)", a.out.len, a.n_procs);
	agent_power_off(&a);
}
