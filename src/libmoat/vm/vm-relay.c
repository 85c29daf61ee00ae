/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the supervisor's conversation with the guest agent (vm-relay.h). */
#include "vm-relay.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/param.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "utils.h"
#include "vm-guest-spec.h"
#include "vm-socket.h"

/* What the supervisor buffers towards the guest before it stops reading stdin: a few DATA
 * frames. */
#define RELAY_OUT_HIGH (4 * (MOAT_PROTO_MAX_DATA + 64))
/* After the workload's EXITED: how long the guest gets to power off after SHUTDOWN. */
#define RELAY_SHUTDOWN_MS 3000
/* The workload and the clients' processes alive at once. */
#define RELAY_MAX_PROCS (1 + MOAT_VM_MAX_CLIENTS)

/* One process in the guest (or a client whose request is still to come) and the host fds it
 * talks through. */
struct proc {
	uint32_t id;               /* 0: free slot */
	int in_fd, out_fd, err_fd; /* -1: none */
	int conn;                  /* a client's connection; -1 for the workload */
	bool pending;              /* conn is accepted, its request not read yet */
	bool owns_fds;             /* the fds came from the client */
	bool terminal, started, stdin_open;
	int64_t window;    /* stdin bytes the agent still takes */
	struct winsize ws; /* the size last sent (terminal) */
	char *member;      /* CONTAINER: the pod member's id; its container's first process */
	struct moat_proto_process filter; /* CONTAINER: only its seccomp fields, which the
					   * processes exec'd into the member get */
	bool freezing;                    /* a FREEZE request waits for FROZEN on freeze_conn */
	int freeze_conn;
	bool freeze_want; /* what it asked */
	bool updating;    /* an UPDATE request waits for UPDATED on update_conn */
	int update_conn;
	bool stating; /* a STATS request waits for USAGE on stats_conn */
	int stats_conn;
};

struct relay {
	struct moat_vm_relay *r;
	struct moat_buf in, out; /* frames from and to the agent */
	int sigfd;
	bool ready, exited;
	bool heard; /* a message came from the agent */
	uint32_t next_id;
	struct proc procs[RELAY_MAX_PROCS];
	int code;
	moat_error *err;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long QEMU's most delayed thread has waited, runnable, for a CPU (its run_delay in
 * /proc/PID/task/TID/schedstat), in ms; 0 when the kernel does not keep it. Under TCG a
 * guest boots on the host's CPUs, and on a loaded host (twenty VMs booting on two cores)
 * that wait can be most of a boot: the boot deadline does not count it. */
static long long vmm_cpu_wait_ms(pid_t vmm)
{
	_cleanup_closedir_ DIR *d = NULL;
	unsigned long long run, delay, most = 0;
	struct dirent *de;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)vmm);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		_cleanup_fclose_ FILE *f = NULL;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/schedstat", (int)vmm, de->d_name);
		if ((f = fopen(path, "re")) != NULL && fscanf(f, "%llu %llu", &run, &delay) == 2)
			most = MAX(most, delay);
	}
	return (long long)(most / 1000000);
}

static struct proc *find(struct relay *s, uint32_t id)
{
	for (size_t i = 0; id != 0 && i < RELAY_MAX_PROCS; i++)
		if (s->procs[i].id == id)
			return &s->procs[i];
	return NULL;
}

/* The workload's UPDATE request hears how it went. */
static void update_answer(struct proc *p, bool ok, int errnum, const char *why)
{
	if (!p->updating)
		return;
	moat_vm_reply_send(p->update_conn, ok ? MOAT_VM_REPLY_DONE : MOAT_VM_REPLY_ERROR,
			   ok ? 0 : errnum, why);
	close(p->update_conn);
	p->updating = false;
}

/* A STATS request hears what the guest counted (u), or why not. */
static void stats_answer(struct proc *p, const struct moat_msg_usage *u, int errnum,
			 const char *why)
{
	if (!p->stating)
		return;
	if (u != NULL)
		moat_vm_reply_usage(p->stats_conn, u);
	else
		moat_vm_reply_send(p->stats_conn, MOAT_VM_REPLY_ERROR, errnum, why);
	close(p->stats_conn);
	p->stating = false;
}

/* Whether a FREEZE, UPDATE or STATS request about p waits for the guest: the guest's ERROR
 * names the container, not the request, so only one may. */
static bool answer_pending(const struct proc *p)
{
	return p->freezing || p->updating || p->stating;
}

static void proc_release(struct proc *p)
{
	if (p->freezing) {
		moat_vm_reply_send(p->freeze_conn, MOAT_VM_REPLY_ERROR, ESRCH,
				   "the container ended");
		close(p->freeze_conn);
	}
	update_answer(p, false, ESRCH, "the container ended");
	stats_answer(p, NULL, ESRCH, "the container ended");
	free(p->member);
	free(p->filter.seccomp);
	if (p->owns_fds) {
		if (p->in_fd >= 0)
			close(p->in_fd);
		if (p->out_fd >= 0)
			close(p->out_fd);
		if (p->err_fd >= 0 && p->err_fd != p->out_fd)
			close(p->err_fd);
	}
	if (p->conn >= 0)
		close(p->conn);
	*p = (struct proc){ 0 };
}

static int send_msg(struct relay *s, const struct moat_msg *m)
{
	if (moat_proto_encode(MOAT_PEER_HOST, m, &s->out, s->err) < 0)
		return moat_error_prefix(s->err, "microvm: %s", moat_proto_type_name(m->type));
	return 0;
}

static int vmm_died(struct relay *s, int status);

/* The guest's end closed: QEMU is gone or going, and how it ended says more than EPIPE. */
static int guest_closed(struct relay *s, int e)
{
	int status;

	for (int i = 0; i < 40 && s->r->vmm > 0; i++) {
		if (waitpid(s->r->vmm, &status, WNOHANG) == s->r->vmm) {
			s->r->vmm = 0;
			return vmm_died(s, status);
		}
		usleep(50 * 1000);
	}
	return moat_error_set(s->err, e, "microvm: write to the guest");
}

static int flush_out(struct relay *s)
{
	while (s->out.len > 0) {
		ssize_t n = write(s->r->agent_fd, s->out.data, s->out.len);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return guest_closed(s, errno);
		if (n < 0)
			return moat_error_set(s->err, errno, "microvm: write to the guest");
		moat_buf_consume(&s->out, (size_t)n);
	}
	return 0;
}

/* A terminal's size follows the host side's: sent when it changed (SIGWINCH for the
 * workload's, polled for an exec's, whose pty is not ours). */
static int sync_size(struct relay *s, struct proc *p)
{
	struct winsize ws;
	struct moat_msg m = { .type = MOAT_MSG_RESIZE, .id = p->id };

	if (!p->terminal || !p->started || p->in_fd < 0 || ioctl(p->in_fd, TIOCGWINSZ, &ws) < 0)
		return 0;
	if (ws.ws_row == p->ws.ws_row && ws.ws_col == p->ws.ws_col)
		return 0;
	p->ws = ws;
	m.u.resize.winsize = (struct moat_proto_winsize){ ws.ws_row, ws.ws_col };
	return send_msg(s, &m);
}

static void reply(struct proc *p, uint32_t type, int32_t value, const char *msg)
{
	if (p->conn < 0)
		return;
	if (moat_vm_reply_send(p->conn, type, value, msg) < 0) {
		close(p->conn); /* the client went away: the process runs on */
		p->conn = -1;
	}
}

/* A member's FREEZE request hears how it went. */
static void freeze_answer(struct proc *p, bool ok, const char *why)
{
	if (!p->freezing)
		return;
	moat_vm_reply_send(p->freeze_conn, ok ? MOAT_VM_REPLY_DONE : MOAT_VM_REPLY_ERROR,
			   ok ? 0 : EIO, why);
	close(p->freeze_conn);
	p->freezing = false;
}

static int write_output(struct relay *s, struct proc *p, const struct moat_msg_data *d)
{
	int fd = d->stream == MOAT_STREAM_STDERR ? p->err_fd : p->out_fd;

	if (d->len == 0 || fd < 0)
		return 0;
	/* A reader that went away loses the output, as a pipe's writer would. */
	if (write_all(fd, d->data, d->len) < 0 && errno != EPIPE && errno != EIO)
		return moat_error_set(s->err, errno, "microvm: write process %u's output", p->id);
	return 0;
}

static int on_exited(struct relay *s, struct proc *p, const struct moat_msg_exited *e)
{
	int code = moat_proto_exit_code(e);

	if (p == &s->procs[0]) { /* the workload */
		s->exited = true;
		s->code = code;
		update_answer(p, false, ESRCH, "the workload ended");
		stats_answer(p, NULL, ESRCH, "the workload ended");
		return 0;
	}
	reply(p, MOAT_VM_REPLY_EXITED, code, NULL);
	proc_release(p);
	return 0;
}

static int on_error(struct relay *s, struct proc *p, uint32_t id, const struct moat_msg_error *e)
{
	if (p != NULL && p->freezing) {
		freeze_answer(p, false, e->message);
		return 0;
	}
	if (p != NULL && p->updating) {
		update_answer(p, false, e->has_errno ? (int)e->errnum : EIO, e->message);
		return 0;
	}
	if (p != NULL && p->stating) {
		stats_answer(p, NULL, e->has_errno ? (int)e->errnum : EIO, e->message);
		return 0;
	}
	if (p != NULL && p != &s->procs[0]) { /* a client's process: its client hears of it */
		reply(p, MOAT_VM_REPLY_ERROR, e->has_errno ? (int32_t)e->errnum : 0, e->message);
		if (!p->started)
			proc_release(p);
		return 0;
	}
	if (p != NULL && !p->started)
		s->code = e->has_errno && e->errnum == ENOENT ? 127 : 126;
	if (id != 0 && p == NULL)
		return 0; /* about a process already gone */
	return moat_error_msg(s->err, e->has_errno ? (int)e->errnum : EIO, "microvm: %s",
			      e->message);
}

static int on_ready(struct relay *s)
{
	struct moat_msg start = { .type = MOAT_MSG_START, .id = MOAT_VM_WORKLOAD_ID };

	if (s->ready)
		return moat_error_msg(s->err, EPROTO, "microvm: the guest sent READY twice");
	s->ready = true;
	moat_fault_step("vm:ready");
	start.u.start = *s->r->start;
	return send_msg(s, &start);
}

static int on_message(struct relay *s, struct moat_msg *m)
{
	struct proc *p = find(s, m->id);

	s->heard = true;
	if (m->type == MOAT_MSG_READY)
		return on_ready(s);
	if (!s->ready)
		return moat_error_msg(s->err, EPROTO, "microvm: the guest sent %s before READY",
				      moat_proto_type_name(m->type));
	if (m->type == MOAT_MSG_ERROR)
		return on_error(s, p, m->id, &m->u.error);
	if (p == NULL)
		return 0; /* a process that is gone, or an id the guest made up: ignore it */
	switch (m->type) {
	case MOAT_MSG_STARTED:
		p->started = true;
		reply(p, MOAT_VM_REPLY_STARTED, (int32_t)m->u.started.pid, NULL);
		return sync_size(s, p);
	case MOAT_MSG_OUTPUT: return write_output(s, p, &m->u.data);
	case MOAT_MSG_CREDIT:
		p->window = MIN(p->window + m->u.credit.bytes, MOAT_PROTO_STDIN_WINDOW);
		return 0;
	case MOAT_MSG_EXITED: return on_exited(s, p, &m->u.exited);
	case MOAT_MSG_FROZEN:
		freeze_answer(p, m->u.freeze.frozen == p->freeze_want,
			      "the guest could not freeze or thaw the container");
		return 0;
	case MOAT_MSG_UPDATED: update_answer(p, true, 0, NULL); return 0;
	case MOAT_MSG_USAGE: stats_answer(p, &m->u.usage, 0, NULL); return 0;
	default:
		return moat_error_msg(s->err, EPROTO,
				      "microvm: the guest sent %s, which it may not",
				      moat_proto_type_name(m->type));
	}
}

static int read_agent(struct relay *s, bool *ret_eof)
{
	uint8_t buf[64 << 10];
	ssize_t n = read(s->r->agent_fd, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0)
		return moat_error_set(s->err, errno, "microvm: read from the guest");
	*ret_eof = n == 0;
	moat_buf_append(&s->in, buf, (size_t)n);
	for (;;) {
		struct moat_msg m;
		size_t used = 0;
		int r = moat_proto_decode(MOAT_PEER_GUEST, s->in.data, s->in.len, &used, &m,
					  s->err);

		if (r == 0)
			return 0;
		if (r < 0)
			return moat_error_prefix(s->err, "microvm: from the guest");
		moat_buf_consume(&s->in, used);
		r = on_message(s, &m);
		moat_msg_clear(&m);
		if (r < 0)
			return r;
	}
}

/* A process's stdin, within the agent's window; EOF closes it in the guest. */
static int read_stdin(struct relay *s, struct proc *p)
{
	uint8_t buf[MOAT_PROTO_MAX_DATA];
	size_t want = (size_t)MIN((int64_t)sizeof(buf), p->window);
	struct moat_msg m = { .type = MOAT_MSG_STDIN, .id = p->id };
	ssize_t n = read(p->in_fd, buf, want);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		p->stdin_open = false;
	m.u.data = (struct moat_msg_data){ .data = buf, .len = n > 0 ? (size_t)n : 0 };
	p->window -= (int64_t)m.u.data.len;
	return send_msg(s, &m);
}

/* A signal for the supervisor goes to the workload (SIGWINCH: its terminal's size). */
static int read_signal(struct relay *s)
{
	struct signalfd_siginfo si;
	struct proc *w = &s->procs[0];
	struct moat_msg m = { .type = MOAT_MSG_SIGNAL, .id = MOAT_VM_WORKLOAD_ID };

	if (read(s->sigfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGCHLD || si.ssi_signo == SIGPIPE)
		return 0; /* the loop checks the VMM */
	if (si.ssi_signo == SIGWINCH)
		return sync_size(s, w);
	if (!w->started)
		return 0; /* nothing runs yet to take it */
	m.u.signal.signo = si.ssi_signo;
	return send_msg(s, &m);
}

/* ---- the clients' requests (vm-socket.h) ---------------------------------------------------- */

/* The member whose container is name, running. */
static struct proc *find_member(struct relay *s, const char *name)
{
	for (size_t i = 1; i < RELAY_MAX_PROCS; i++)
		if (s->procs[i].id != 0 && s->procs[i].member != NULL &&
		    strcmp(s->procs[i].member, name) == 0)
			return &s->procs[i];
	return NULL;
}

/* The EXEC frame for a request, in the VM's own container or a member's (target); the
 * process gets that container's seccomp filter. */
static int start_exec(struct relay *s, struct proc *p, const char *json, const struct proc *target,
		      moat_error *err)
{
	struct moat_msg m = { .type = MOAT_MSG_EXEC, .id = p->id };
	const struct moat_proto_process *w = target ? &target->filter : &s->r->start->process;
	struct oci_process *op = NULL;
	_cleanup_free_ char *msg = NULL;
	int r = ocijson_parse_data(&oci_process_type, json, strlen(json), "exec process",
				   (void **)&op, &msg);

	if (r < 0)
		return moat_error_msg(err, -r, "%s", msg ? msg : "exec process");
	r = moat_vm_process_build(op, NULL, &m.u.exec.process, err);
	if (r == 0) {
		m.u.exec.process.seccomp = w->seccomp; /* borrowed for the encoding */
		m.u.exec.process.n_seccomp = w->n_seccomp;
		m.u.exec.process.has_seccomp_flags = w->has_seccomp_flags;
		m.u.exec.process.seccomp_flags = w->seccomp_flags;
		m.u.exec.container = target ? target->id : 0;
		p->terminal = op->terminal;
		r = send_msg(s, &m);
		m.u.exec.process.seccomp = NULL;
		moat_vm_process_free(&m.u.exec.process);
	}
	ocijson_free(&oci_process_type, op);
	return r;
}

static int request_exec(struct relay *s, struct proc *p, const char *name, const char *json,
			moat_error *err)
{
	struct proc *target = name[0] != '\0' ? find_member(s, name) : NULL;

	if (name[0] != '\0' && (target == NULL || !target->started))
		return moat_error_msg(err, ESRCH, "the pod has no running container %s", name);
	return start_exec(s, p, json, target, err);
}

/* A member's CONTAINER frame, as its init built it, with this id: its first process's. */
static int request_container(struct relay *s, struct proc *p, const char *name, const char *body,
			     size_t len, moat_error *err)
{
	struct moat_msg m;
	size_t used;
	int r = moat_proto_decode(MOAT_PEER_HOST, (const uint8_t *)body, len, &used, &m, err);

	if (r == 0 || (r > 0 && (used != len || m.type != MOAT_MSG_CONTAINER)))
		r = moat_error_msg(err, EPROTO, "not one CONTAINER frame");
	else if (r > 0 && strcmp(m.u.start.name, name) != 0)
		r = moat_error_msg(err, EPROTO, "CONTAINER %s for member %s", m.u.start.name, name);
	else if (r > 0 && find_member(s, name) != NULL)
		r = moat_error_msg(err, EEXIST, "the pod runs a container %s already", name);
	if (r > 0) {
		const struct moat_proto_process *mp = &m.u.start.process;

		m.id = p->id;
		p->terminal = mp->terminal;
		p->member = xstrdup(name);
		r = send_msg(s, &m);
		p->filter = (struct moat_proto_process){ .seccomp = mp->seccomp,
							 .n_seccomp = mp->n_seccomp,
							 .has_seccomp_flags = mp->has_seccomp_flags,
							 .seccomp_flags = mp->seccomp_flags };
		m.u.start.process.seccomp = NULL; /* p->filter has it */
	}
	moat_msg_clear(&m);
	return r < 0 ? r : 0;
}

/* A request that the guest answers later: the client's connection goes to the container it is
 * about (*conn, with *waiting set), and the client's slot is free again. */
static void hand_over(struct proc *p, bool *waiting, int *conn)
{
	*waiting = true;
	*conn = p->conn;
	p->conn = -1;
	proc_release(p);
}

/* FREEZE moves the client's connection to the member it is about, which answers once the
 * guest did it; the slot is free again. */
static int request_freeze(struct relay *s, struct proc *p, const char *name, bool frozen,
			  moat_error *err)
{
	struct proc *target = find_member(s, name);
	struct moat_msg m = { .type = MOAT_MSG_FREEZE, .u.freeze.frozen = frozen };

	if (target == NULL || !target->started)
		return moat_error_msg(err, ESRCH, "the pod has no running container %s", name);
	if (answer_pending(target))
		return moat_error_msg(err, EBUSY, "container %s has a request under way", name);
	m.id = target->id;
	if (send_msg(s, &m) < 0)
		return moat_error_ret(err);
	target->freeze_want = frozen;
	hand_over(p, &target->freezing, &target->freeze_conn);
	return 0;
}

/* UPDATE moves the client's connection to the container it is about (a member's, or the
 * workload's for name ""), which answers once the guest holds the new limits; the slot is
 * free again. */
static int request_update(struct relay *s, struct proc *p, const char *name, const char *body,
			  size_t len, moat_error *err)
{
	struct proc *target = name[0] == '\0' ? &s->procs[0] : find_member(s, name);
	struct moat_msg m;
	size_t used;
	int r = moat_proto_decode(MOAT_PEER_HOST, (const uint8_t *)body, len, &used, &m, err);

	if (r == 0 || (r > 0 && (used != len || m.type != MOAT_MSG_UPDATE)))
		r = moat_error_msg(err, EPROTO, "not one UPDATE frame");
	else if (r > 0 && (target == NULL || !target->started))
		r = moat_error_msg(err, ESRCH, "no running container %s in the guest",
				   name[0] == '\0' ? "of the workload" : name);
	else if (r > 0 && answer_pending(target))
		r = moat_error_msg(err, EBUSY, "another request about that container is under way");
	if (r > 0) {
		m.id = target->id;
		r = send_msg(s, &m);
	}
	moat_msg_clear(&m);
	if (r < 0)
		return moat_error_ret(err);
	hand_over(p, &target->updating, &target->update_conn);
	return 0;
}

/* STATS moves the client's connection to the container it is about (a member's, or the
 * workload's for name ""), which answers once the guest read its cgroup; the slot is free
 * again. */
static int request_stats(struct relay *s, struct proc *p, const char *name, moat_error *err)
{
	struct proc *target = name[0] == '\0' ? &s->procs[0] : find_member(s, name);
	struct moat_msg m = { .type = MOAT_MSG_STATS };

	if (target == &s->procs[0] && !target->started && !s->exited) {
		/* the guest boots for the first exec: nothing has run in it yet, and its counts
		 * are all 0 (a sandbox reads them before its command) */
		struct moat_msg_usage none = { .has_pids_peak = true, .has_memory_peak = true };

		moat_vm_reply_usage(p->conn, &none);
		proc_release(p);
		return 0;
	}
	if (target == NULL || !target->started)
		return moat_error_msg(err, ESRCH, "no running container %s in the guest",
				      name[0] == '\0' ? "of the workload" : name);
	if (answer_pending(target))
		return moat_error_msg(err, EBUSY,
				      "another request about that container is under way");
	m.id = target->id;
	if (send_msg(s, &m) < 0)
		return moat_error_ret(err);
	hand_over(p, &target->stating, &target->stats_conn);
	return 0;
}

/* A pending client's request: its process starts in the guest, or the client hears why not. */
static void read_request(struct relay *s, struct proc *p)
{
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *name = NULL, *body = NULL;
	struct moat_vm_request h;
	int fds[3], r;

	p->pending = false;
	if (moat_vm_request_recv(p->conn, &h, &name, &body, fds) < 0) {
		reply(p, MOAT_VM_REPLY_ERROR, EPROTO, "microvm: a malformed request");
		proc_release(p);
		return;
	}
	p->in_fd = fds[0];
	p->out_fd = fds[1];
	p->err_fd = fds[2];
	p->owns_fds = true;
	if (h.kind == MOAT_VM_REQ_FREEZE)
		r = request_freeze(s, p, name, h.value != 0, &err);
	else if (s->exited)
		r = moat_error_msg(&err, ESRCH, "the guest is not running");
	else if (h.kind == MOAT_VM_REQ_UPDATE)
		r = request_update(s, p, name, body, h.body_len, &err);
	else if (h.kind == MOAT_VM_REQ_STATS)
		r = request_stats(s, p, name, &err);
	else if (h.kind == MOAT_VM_REQ_CONTAINER)
		r = request_container(s, p, name, body, h.body_len, &err);
	else
		r = request_exec(s, p, name, body, &err);
	if (r < 0) {
		reply(p, MOAT_VM_REPLY_ERROR, err.code, err.msg);
		proc_release(p);
	}
	moat_error_clear(&err);
}

/* A client comes: it gets a slot and its request is read when it is there. */
static void accept_client(struct relay *s)
{
	int conn = accept4(s->r->exec_fd, NULL, NULL, SOCK_CLOEXEC);
	struct proc *p = NULL;

	if (conn < 0)
		return;
	for (size_t i = 1; i < RELAY_MAX_PROCS && p == NULL; i++)
		if (s->procs[i].id == 0)
			p = &s->procs[i];
	if (p == NULL || s->exited) {
		moat_vm_reply_send(conn, MOAT_VM_REPLY_ERROR, EAGAIN,
				   p == NULL ? "microvm: too many clients of the supervisor"
					     : "microvm: the guest is not running");
		close(conn);
		return;
	}
	*p = (struct proc){ .id = ++s->next_id,
			    .in_fd = -1,
			    .out_fd = -1,
			    .err_fd = -1,
			    .conn = conn,
			    .pending = true,
			    .stdin_open = true,
			    .window = MOAT_PROTO_STDIN_WINDOW };
}

/* A client's message: its request, or after STARTED a signal for its guest process. A
 * client gone without EXITED (killed, or a malformed message) takes its process with it, as
 * a killed host process would its work. */
static int read_client(struct relay *s, struct proc *p)
{
	struct moat_vm_signal sig;
	struct moat_msg m = { .type = MOAT_MSG_SIGNAL, .id = p->id };
	ssize_t n;

	if (p->pending) {
		read_request(s, p);
		return 0;
	}
	n = read(p->conn, &sig, sizeof(sig));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n != sizeof(sig) || sig.magic != MOAT_VM_SIGNAL_MAGIC || sig.signo <= 0 ||
	    sig.signo >= 65) {
		close(p->conn);
		p->conn = -1;
		sig.signo = SIGKILL;
	}
	m.u.signal.signo = (uint32_t)sig.signo;
	return send_msg(s, &m);
}

/* ---- the loop ----------------------------------------------------------------------------- */

static int vmm_died(struct relay *s, int status)
{
	/* a restore that fails (a damaged file, a QEMU that cannot load it) ends QEMU early */
	if (s->r->snapshot != NULL && !s->heard)
		return moat_error_msg(s->err, EIO,
				      "microvm: QEMU could not restore the guest from the snapshot "
				      "%s (it exited with status %d; delete the file, or set "
				      "annotations.moat.vm.boot=cold)",
				      s->r->snapshot,
				      WIFEXITED(status) ? WEXITSTATUS(status)
							: 128 + WTERMSIG(status));
	if (WIFSIGNALED(status))
		return moat_error_msg(s->err, EIO, "microvm: QEMU was killed by signal %d",
				      WTERMSIG(status));
	return moat_error_msg(s->err, EIO,
			      "microvm: QEMU exited with status %d before the "
			      "workload ended",
			      WEXITSTATUS(status));
}

/* Without virtiofsd the guest's root answers nothing: its processes would wait forever. */
static int virtiofsd_died(int status, moat_error *err)
{
	if (WIFSIGNALED(status))
		return moat_error_msg(err, EIO,
				      "microvm: virtiofsd, which serves the root, was killed by "
				      "signal %d before the workload ended",
				      WTERMSIG(status));
	return moat_error_msg(err, EIO,
			      "microvm: virtiofsd, which serves the root, exited with status %d "
			      "before the workload ended (a pids limit too low for its threads?)",
			      WEXITSTATUS(status));
}

static int no_answer(struct relay *s, long long waited)
{
	if (s->r->snapshot != NULL)
		return moat_error_msg(s->err, ETIMEDOUT,
				      "microvm: the guest restored from the snapshot %s did not "
				      "answer within %d ms (besides %lld ms QEMU waited for a "
				      "CPU): delete the file, or set "
				      "annotations.moat.vm.boot=cold",
				      s->r->snapshot, s->r->boot_timeout_ms, waited);
	return moat_error_msg(s->err, ETIMEDOUT,
			      "microvm: the guest agent did not answer within %d ms of boot "
			      "(besides %lld ms QEMU waited for a CPU)",
			      s->r->boot_timeout_ms, waited);
}

/* The poll set: the agent, the signals, the exec socket once the guest is up, each
 * process's stdin (up to *ret_stdin_end), then each exec client's connection. */
static size_t poll_set(struct relay *s, struct pollfd *p, struct proc **owner,
		       size_t *ret_stdin_end)
{
	size_t n = 0;

	p[n++] = (struct pollfd){ s->r->agent_fd, POLLIN | (s->out.len ? POLLOUT : 0), 0 };
	p[n++] = (struct pollfd){ s->sigfd, POLLIN, 0 };
	/* an exec that comes while the guest boots (an engine's exec right after start) waits
	 * in the socket's backlog until the agent is READY; poll skips a negative fd */
	p[n++] = (struct pollfd){ s->ready ? s->r->exec_fd : -1, POLLIN, 0 };
	for (size_t i = 0; i < RELAY_MAX_PROCS; i++) {
		struct proc *pr = &s->procs[i];

		if (pr->id == 0 || !pr->started || !pr->stdin_open || pr->in_fd < 0 ||
		    pr->window <= 0 || s->out.len >= RELAY_OUT_HIGH)
			continue;
		owner[n] = pr;
		p[n++] = (struct pollfd){ pr->in_fd, POLLIN, 0 };
	}
	*ret_stdin_end = n;
	/* then each client's connection: its request, its signals, or its going away */
	for (size_t i = 1; i < RELAY_MAX_PROCS; i++) {
		struct proc *pr = &s->procs[i];

		if (pr->id == 0 || (!pr->started && !pr->pending) || pr->conn < 0)
			continue;
		owner[n] = pr;
		p[n++] = (struct pollfd){ pr->conn, POLLIN, 0 };
	}
	return n;
}

static int loop(struct relay *s)
{
	long long boot_start = now_ms(), wait_start = vmm_cpu_wait_ms(s->r->vmm), waited = 0;
	struct pollfd p[3 + 2 * RELAY_MAX_PROCS];
	struct proc *owner[3 + 2 * RELAY_MAX_PROCS];
	size_t stdin_end;
	int status, r;
	bool eof = false;

	while (!s->exited) {
		size_t n = poll_set(s, p, owner, &stdin_end);

		if (poll(p, n, 200) < 0 && errno != EINTR)
			return moat_error_set(s->err, errno, "microvm: poll");
		if (p[1].revents && (r = read_signal(s)) < 0)
			return r;
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR) && (r = read_agent(s, &eof)) < 0)
			return r;
		if (eof && !s->exited)
			return moat_error_msg(s->err, EPIPE,
					      "microvm: the guest closed its port before "
					      "the workload ended");
		if (p[2].revents & POLLIN)
			accept_client(s);
		for (size_t i = 3; i < stdin_end; i++)
			if (p[i].revents && owner[i]->id != 0 && (r = read_stdin(s, owner[i])) < 0)
				return r;
		for (size_t i = stdin_end; i < n; i++)
			if (p[i].revents && owner[i]->id != 0 && owner[i]->conn == p[i].fd &&
			    (r = read_client(s, owner[i])) < 0)
				return r;
		for (size_t i = 1; i < RELAY_MAX_PROCS; i++)
			if (s->procs[i].id != 0 && (r = sync_size(s, &s->procs[i])) < 0)
				return r;
		if ((r = flush_out(s)) < 0)
			return r;
		if (!s->exited && waitpid(s->r->vmm, &status, WNOHANG) == s->r->vmm) {
			s->r->vmm = 0;
			return vmm_died(s, status);
		}
		if (!s->exited && s->r->virtiofsd > 0 &&
		    waitpid(s->r->virtiofsd, &status, WNOHANG) == s->r->virtiofsd) {
			s->r->virtiofsd = 0;
			return virtiofsd_died(status, s->err);
		}
		/* a cold guest's READY, or a restored guest's first answer to START: a guest
		 * that never answers (a snapshot saved broken) fails the run, it does not
		 * hang it */
		if ((!s->ready || (s->r->snapshot != NULL && !s->heard)) &&
		    now_ms() - boot_start > s->r->boot_timeout_ms &&
		    now_ms() - boot_start - (waited = vmm_cpu_wait_ms(s->r->vmm) - wait_start) >
			    s->r->boot_timeout_ms)
			return no_answer(s, MAX(waited, 0LL));
	}
	return 0;
}

/* After the workload's end: exec clients hear that their process is gone, the guest gets
 * SHUTDOWN and a moment to power off. */
static void shut_down(struct relay *s)
{
	struct moat_msg m = { .type = MOAT_MSG_SHUTDOWN, .id = 0 };
	long long deadline = now_ms() + RELAY_SHUTDOWN_MS;
	int status;

	for (size_t i = 1; i < RELAY_MAX_PROCS; i++) {
		if (s->procs[i].id == 0)
			continue;
		reply(&s->procs[i], MOAT_VM_REPLY_EXITED, 128 + SIGKILL, NULL);
		proc_release(&s->procs[i]);
	}
	if (s->r->vmm <= 0)
		return;
	if (send_msg(s, &m) == 0)
		flush_out(s);
	while (now_ms() < deadline) {
		if (waitpid(s->r->vmm, &status, WNOHANG) == s->r->vmm)
			return;
		usleep(10000);
	}
	kill(s->r->vmm, SIGKILL);
	waitpid(s->r->vmm, &status, 0);
}

int moat_vm_relay_run(struct moat_vm_relay *rl, int *ret_code, moat_error *err)
{
	struct relay s = {
		.r = rl, .sigfd = -1, .next_id = MOAT_VM_WORKLOAD_ID, .code = -1, .err = err
	};
	sigset_t all;
	int r;

	s.procs[0] = (struct proc){ .id = MOAT_VM_WORKLOAD_ID,
				    .in_fd = rl->in_fd,
				    .out_fd = rl->out_fd,
				    .err_fd = rl->err_fd,
				    .conn = -1,
				    .terminal = rl->terminal,
				    .stdin_open = rl->in_fd >= 0,
				    .window = MOAT_PROTO_STDIN_WINDOW };
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigprocmask(SIG_BLOCK, &all, NULL);
	s.sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sigfd < 0)
		return moat_error_set(err, errno, "microvm: signalfd");
	fcntl(rl->agent_fd, F_SETFL, fcntl(rl->agent_fd, F_GETFL) | O_NONBLOCK);
	if (rl->exec_fd >= 0)
		fcntl(rl->exec_fd, F_SETFL, fcntl(rl->exec_fd, F_GETFL) | O_NONBLOCK);
	/* a restored agent is where it was saved: READY sent, waiting for START */
	r = rl->snapshot != NULL ? on_ready(&s) : 0;
	if (r == 0)
		r = loop(&s);
	shut_down(&s);
	close(s.sigfd);
	moat_buf_free(&s.in);
	moat_buf_free(&s.out);
	if (s.code >= 0)
		*ret_code = s.code;
	return r < 0 ? r : 0;
}
