/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: one command in a sandbox, run, watched and collected.
 *
 * A runner (a child of the keeper) execs the command into the sandbox's container, in the
 * foreground, with stdin on /dev/null and stdout and stderr on pipes; it reports the exec's
 * outcome on a third pipe and exits. The keeper reads the two streams as they come, keeps
 * at most the output limit of each (never more in memory), and counts the rest. It kills on
 * the deadline, on an output limit passed (unless truncating), and when its caller hangs up:
 * the kill goes to every process of the container (`moat kill --all KILL`: the cgroup, or
 * the guest), so a setsid daemon ignoring SIGTERM goes too. Then the cgroup's counters say
 * why the command ended: an OOM kill, the pids limit hit, the writable layer full. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "events.h"
#include "exec.h"
#include "proto.h"
#include "sandbox-internal.h"
#include "utils.h"

#define SAMPLE_MS 100 /* how often pids.current is read for the peak */

struct report {
	int r;       /* moat_container_exec's return */
	int wstatus; /* when r is 0 */
	char msg[512];
};

struct counters {
	/* pids_now: pids.peak where the kernel has it, else pids.current */
	uint64_t oom_kills, pids_hits, cpu_user_ns, cpu_system_ns, pids_now, mem_peak;
	bool have, pids_peak; /* pids_peak: pids_now is the kernel's own peak */
};

static int take_counters(const struct moat_event *ev, void *data, moat_error *err)
{
	struct counters *c = data;
	const struct moat_cgroup_stats *s = ev->stats;

	(void)err;
	if (ev->type != MOAT_EVENT_STATS)
		return 0;
	c->have = true;
	c->oom_kills = s->memory.oom_kill.value;
	c->pids_hits = s->pids.failcnt.value;
	c->cpu_user_ns = s->cpu.user.value;
	c->cpu_system_ns = s->cpu.kernel.value;
	c->pids_peak = s->pids.peak.present;
	c->pids_now = c->pids_peak ? s->pids.peak.value : s->pids.current.value;
	c->mem_peak = s->memory.usage.max.value;
	return 0;
}

/* A microVM's come from its guest: the host's cgroup holds QEMU, and an OOM kill or a
 * refused fork in the guest never shows there. */
static void read_guest_counters(const struct sb_target *t, struct counters *c)
{
	struct moat_msg_usage u;
	moat_error e = MOAT_ERROR_INIT;

	if (moat_container_guest_usage(t->root, t->id, &u, &e) == 1) {
		c->have = true;
		c->oom_kills = u.oom_kills;
		c->pids_hits = u.pids_max;
		c->cpu_user_ns = u.cpu_user_us * 1000;
		c->cpu_system_ns = u.cpu_system_us * 1000;
		c->pids_peak = u.has_pids_peak;
		c->pids_now = u.has_pids_peak ? u.pids_peak : 0;
		c->mem_peak = u.has_memory_peak ? u.memory_peak : 0;
	}
	moat_error_clear(&e);
}

static void read_counters(const struct sb_target *t, struct counters *c)
{
	struct moat_events_opts eo = { .once = true };
	moat_error e = MOAT_ERROR_INIT;

	c->have = false;
	if (t->microvm)
		read_guest_counters(t, c);
	else if (moat_container_events(t->root, t->id, &eo, take_counters, c, &e) < 0)
		c->have = false;
	moat_error_clear(&e);
}

static _Noreturn void runner(const struct sb_target *t, const struct oci_process *process, int out,
			     int errfd, int status)
{
	struct moat_exec_opts eo = {
		.root = t->root, .id = t->id, .process = process, .policy = t->policy
	};
	struct report rep = { 0 };
	moat_error e = MOAT_ERROR_INIT;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC), code;

	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(127);
	eo.ret_wstatus = &rep.wstatus;
	rep.r = moat_container_exec(&eo, &code, &e);
	if (rep.r < 0)
		snprintf(rep.msg, sizeof(rep.msg), "%s", e.msg ? e.msg : strerror(-rep.r));
	write_all(status, &rep, sizeof(rep));
	_exit(0);
}

struct watch {
	const struct sb_target *t;
	const struct moat_sandbox_opts *o;
	struct moat_sandbox_result *r;
	struct counters before, last; /* last: the latest read while the command ran */
	uint64_t pids_peak;
	bool killed, timed_out, lifetime_hit, output_hit;
};

static void sample(struct watch *w)
{
	read_counters(w->t, &w->last);
	if (w->last.have && w->last.pids_now > w->pids_peak)
		w->pids_peak = w->last.pids_now;
}

/* How many processes of the sandbox are not t->spare; their pids are killed when kill. */
static size_t others(const struct sb_target *t, bool kill_them)
{
	_cleanup_free_ pid_t *pids = NULL;
	moat_error e = MOAT_ERROR_INIT;
	size_t n = 0, left = 0;

	if (moat_container_pids(t->root, t->id, &pids, &n, &e) < 0) {
		moat_error_clear(&e);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (pids[i] != t->spare) {
			left++;
			if (kill_them)
				kill(pids[i], SIGKILL);
		}
	return left;
}

void sb_kill(const struct sb_target *t)
{
	moat_error e = MOAT_ERROR_INIT;

	if (t->spare <= 0) {
		moat_container_kill(t->root, t->id, SIGKILL, true, &e);
		moat_error_clear(&e);
		return;
	}
	/* frozen, nothing forks between the listing and the kill; thawed, the killed die */
	for (int round = 0; round < 100; round++) {
		bool frozen = moat_container_pause(t->root, t->id, &e) == 0;

		moat_error_clear(&e);
		others(t, true);
		if (frozen)
			moat_container_resume(t->root, t->id, &e);
		moat_error_clear(&e);
		for (int wait = 0; wait < 10 && others(t, false) > 0; wait++)
			usleep(2000);
		if (others(t, false) == 0)
			return;
	}
}

/* The counters are read first: a sandbox killed whole has no cgroup to read after. */
static void kill_all(struct watch *w)
{
	if (!w->killed) {
		sample(w);
		sb_kill(w->t);
	}
	w->killed = true;
}

/* Read what fd has; false at end of stream. */
static bool take_output(struct watch *w, int fd, struct moat_sandbox_stream *s)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	s->bytes += (uint64_t)n;
	if (s->kept < w->o->output_limit) {
		size_t room = (size_t)(w->o->output_limit - s->kept);
		size_t k = (size_t)n < room ? (size_t)n : room;

		s->data = xrealloc(s->data, s->kept + k + 1);
		memcpy(s->data + s->kept, buf, k);
		s->kept += k;
		s->data[s->kept] = '\0';
	}
	if (s->bytes > w->o->output_limit) {
		s->truncated = true;
		if (!w->o->truncate_output && !w->output_hit) {
			w->output_hit = true;
			kill_all(w);
		}
	}
	return true;
}

/* Poll the streams, the runner's report and the caller until the report comes. */
static int watch_loop(struct watch *w, int fds[3], int abort_fd, struct report *rep)
{
	uint64_t start = moat_monotonic_ms(), next_sample = start, deadline = w->o->timeout_ms;
	bool open_[2] = { true, true };

	/* the lifetime bounds the command as its timeout does, when it comes first */
	if (w->o->lifetime_left_ms > 0 && (deadline == 0 || w->o->lifetime_left_ms < deadline))
		deadline = w->o->lifetime_left_ms;

	for (;;) {
		struct pollfd p[4] = { { fds[0], POLLIN, 0 },
				       { fds[1], POLLIN, 0 },
				       { fds[2], POLLIN, 0 },
				       { abort_fd, 0, 0 } };
		uint64_t now = moat_monotonic_ms(), wait = SAMPLE_MS;

		if (deadline > 0 && !w->killed) {
			if (now - start >= deadline) {
				w->timed_out = deadline == w->o->timeout_ms;
				w->lifetime_hit = !w->timed_out;
				kill_all(w);
			} else if (deadline - (now - start) < wait)
				wait = deadline - (now - start);
		}
		/* a kernel with pids.peak keeps the peak itself: no need to sample it */
		if (!w->before.pids_peak && now >= next_sample) {
			sample(w);
			next_sample = now + SAMPLE_MS;
		}
		p[0].fd = open_[0] ? fds[0] : -1;
		p[1].fd = open_[1] ? fds[1] : -1;
		if (poll(p, abort_fd >= 0 ? 4 : 3, (int)wait) < 0 && errno != EINTR)
			return -errno;
		if (p[3].revents & (POLLHUP | POLLERR | POLLIN)) {
			kill_all(w);
			return -ECANCELED;
		}
		for (int i = 0; i < 2; i++)
			if (p[i].revents != 0)
				open_[i] = take_output(w, fds[i], i == 0 ? &w->r->out : &w->r->err);
		if (p[2].revents != 0)
			return read_all(fds[2], rep, sizeof(*rep)) == (ssize_t)sizeof(*rep) ? 0
											    : -EIO;
	}
}

/* After the report: what is left in the pipes now (a daemon may hold them open). */
static void drain(struct watch *w, int fds[3])
{
	for (int i = 0; i < 2; i++)
		while (take_output(w, fds[i], i == 0 ? &w->r->out : &w->r->err)) {
			struct pollfd p = { fds[i], POLLIN, 0 };

			if (poll(&p, 1, 0) <= 0)
				break;
		}
}

/* The last line of buf[0..*n) (its end cut off, so a second call gives the one before), its
 * control characters made spaces; "" when none is left. */
static char *pop_line(char *buf, ssize_t *n)
{
	static char none[] = "";
	char *line;

	while (*n > 0 && buf[*n - 1] == '\n')
		buf[--*n] = '\0';
	if (*n <= 0)
		return none;
	line = strrchr(buf, '\n');
	if (line != NULL) {
		*line++ = '\0';
		*n = line - buf - 1;
	} else {
		line = buf;
		*n = 0;
	}
	for (char *c = line; *c != '\0'; c++)
		if ((unsigned char)*c < ' ')
			*c = ' ';
	return line;
}

/* msg, and after it the last line the init wrote to its stderr (sb_target.init_log), when
 * there is one: why a microVM's supervisor ended, where the exec only saw it hang up. When
 * QEMU's own line comes right before it (QEMU failed), that one too: it holds the cause. */
static char *with_init_word(const char *msg, int init_log)
{
	char buf[2048], *line, *qemu;
	struct stat st; /* not the offset: the init writes through the same open file */
	off_t size = init_log >= 0 && fstat(init_log, &st) == 0 ? st.st_size : -1;
	off_t from = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = size > 0 ? pread(init_log, buf, sizeof(buf) - 1, from) : -1;

	if (n <= 0)
		return xstrdup(msg);
	buf[n] = '\0';
	line = pop_line(buf, &n);
	if (strncmp(line, "moat: ", 6) == 0)
		line += 6;
	if (*line == '\0' || strstr(msg, line) != NULL)
		return xstrdup(msg);
	qemu = pop_line(buf, &n);
	if (strncmp(qemu, "qemu-system-", 12) == 0 && strstr(line, "QEMU") != NULL)
		return xasprintf("%s: %s (%s)", msg, line, qemu);
	return xasprintf("%s: %s", msg, line);
}

/* A CPU time between two reads, in µs: none when it went backwards (a guest's counters are
 * only as honest as the guest). */
static int64_t delta_us(uint64_t after_ns, uint64_t before_ns)
{
	return after_ns >= before_ns ? (int64_t)((after_ns - before_ns) / 1000) : 0;
}

/* The exec's own fork refused (EAGAIN) while the pids limit refused forks: the sandbox was
 * full, so the limit, not moat, kept the program from starting. A session's command finds
 * it so when one before it left a fork bomb running. */
static bool pids_refused_start(const struct watch *w, const struct counters *after,
			       const struct report *rep)
{
	return rep->r == -EAGAIN && after->have && w->before.have &&
	       after->pids_hits > w->before.pids_hits;
}

static void settle_reason(struct watch *w, const struct sb_layer *l, const struct report *rep)
{
	struct moat_sandbox_result *r = w->r;
	struct counters after;
	bool failed;

	read_counters(w->t, &after);
	if (!after.have)
		after = w->last;
	if (after.have && w->before.have) {
		r->usage.cpu_user_us = delta_us(after.cpu_user_ns, w->before.cpu_user_ns);
		r->usage.cpu_system_us = delta_us(after.cpu_system_ns, w->before.cpu_system_ns);
		r->usage.memory_peak = (int64_t)after.mem_peak;
		r->usage.pids_peak =
			(int64_t)(after.pids_now > w->pids_peak ? after.pids_now : w->pids_peak);
	}
	if (rep->r < 0 && w->killed && (w->timed_out || w->lifetime_hit || w->output_hit)) {
		/* a microVM killed whole: its exec ends without the guest's word */
		r->signo = SIGKILL;
		r->reason = w->timed_out      ? MOAT_SANDBOX_TIMEOUT
			    : w->lifetime_hit ? MOAT_SANDBOX_LIFETIME
					      : MOAT_SANDBOX_OUTPUT_LIMIT_HIT;
		return;
	}
	if (rep->r < 0 && pids_refused_start(w, &after, rep)) {
		r->reason = MOAT_SANDBOX_PIDS_LIMIT;
		r->message = xasprintf("the program could not start: the sandbox's processes, "
				       "those earlier commands left running among them, fill "
				       "its pids limit (%s)",
				       rep->msg);
		return;
	}
	if (rep->r < 0) {
		r->reason = MOAT_SANDBOX_ERROR;
		r->message = with_init_word(rep->msg, w->t->init_log);
		return;
	}
	if (WIFSIGNALED(rep->wstatus))
		r->signo = WTERMSIG(rep->wstatus);
	else
		r->code = WEXITSTATUS(rep->wstatus);
	failed = r->signo != 0 || r->code != 0;
	if (w->timed_out)
		r->reason = MOAT_SANDBOX_TIMEOUT;
	else if (w->lifetime_hit)
		r->reason = MOAT_SANDBOX_LIFETIME;
	else if (w->output_hit)
		r->reason = MOAT_SANDBOX_OUTPUT_LIMIT_HIT;
	else if (after.have && w->before.have && after.oom_kills > w->before.oom_kills)
		r->reason = MOAT_SANDBOX_OOM;
	else if (after.have && w->before.have && after.pids_hits > w->before.pids_hits)
		r->reason = MOAT_SANDBOX_PIDS_LIMIT;
	else if (failed && sb_layer_full(l))
		r->reason = MOAT_SANDBOX_DISK_FULL;
	else
		r->reason = r->signo != 0 ? MOAT_SANDBOX_SIGNALED : MOAT_SANDBOX_EXITED;
}

int sb_command_run(const struct sb_target *t, const struct moat_sandbox_opts *o,
		   const struct oci_process *process, const struct sb_layer *l, int abort_fd,
		   struct moat_sandbox_result *r, moat_error *err)
{
	struct watch w = { .t = t, .o = o, .r = r };
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, st[2] = { -1, -1 };
	struct report rep = { .r = -EIO };
	pid_t pid;
	int rc;

	/* A microVM's guest that boots for this command has counted nothing; asking would wait
	 * for the boot, which belongs to the command's run_ms, not to its setup. */
	if (t->microvm && t->fresh)
		w.before = (struct counters){ .have = true, .pids_peak = true };
	else
		read_counters(t, &w.before);
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
		rc = moat_error_set(err, errno, "sandbox: pipe");
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &r->started);
	pid = fork();
	if (pid < 0) {
		rc = moat_error_set(err, errno, "sandbox: fork the runner");
		goto out;
	}
	if (pid == 0)
		runner(t, process, out[1], errp[1], st[1]);
	close(TAKE_FD(out[1]));
	close(TAKE_FD(errp[1]));
	close(TAKE_FD(st[1]));
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	rc = watch_loop(&w, (int[3]){ out[0], errp[0], st[0] }, abort_fd, &rep);
	if (rc == -ECANCELED)
		rep.r = rc;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	drain(&w, (int[3]){ out[0], errp[0], st[0] });
	clock_gettime(CLOCK_REALTIME, &r->ended);
	if (rc == -ECANCELED) {
		rc = moat_error_msg(err, ECANCELED, "sandbox: the caller went away");
		goto out;
	}
	if (rc < 0)
		snprintf(rep.msg, sizeof(rep.msg), "sandbox: the runner's report: %s",
			 strerror(-rc));
	settle_reason(&w, l, &rep);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (st[i] >= 0)
			close(st[i]);
	}
	return rc;
}
