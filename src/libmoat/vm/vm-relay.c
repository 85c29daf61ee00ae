/* moat: the supervisor's conversation with the guest agent (vm-relay.h). */
#include "vm-relay.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/param.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

/* What the supervisor buffers towards the guest before it stops reading the container's
 * stdin: a few DATA frames. */
#define RELAY_OUT_HIGH (4 * (MOAT_PROTO_MAX_DATA + 64))
/* After the workload's EXITED: how long the guest gets to power off after SHUTDOWN. */
#define RELAY_SHUTDOWN_MS 3000

enum { P_AGENT, P_STDIN, P_SIGNAL, P_COUNT };

struct relay {
	struct moat_vm_relay *r;
	struct moat_buf in, out;   /* frames from and to the agent */
	int sigfd;
	bool ready, started, exited, stdin_open;
	int64_t window;            /* stdin bytes the agent still takes */
	int code;
	moat_error *err;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_msg(struct relay *s, const struct moat_msg *m)
{
	if (moat_proto_encode(MOAT_PEER_HOST, m, &s->out, s->err) < 0)
		return moat_error_prefix(s->err, "microvm: %s", moat_proto_type_name(m->type));
	return 0;
}

static int flush_out(struct relay *s)
{
	while (s->out.len > 0) {
		ssize_t n = write(s->r->agent_fd, s->out.data, s->out.len);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0)
			return moat_error_set(s->err, errno, "microvm: write to the guest");
		moat_buf_consume(&s->out, (size_t)n);
	}
	return 0;
}

static int send_resize(struct relay *s)
{
	struct winsize ws;
	struct moat_msg m = { .type = MOAT_MSG_RESIZE, .id = MOAT_VM_WORKLOAD_ID };

	if (!s->r->terminal || !s->started || ioctl(s->r->in_fd, TIOCGWINSZ, &ws) < 0)
		return 0;
	m.u.resize.winsize = (struct moat_proto_winsize){ ws.ws_row, ws.ws_col };
	return send_msg(s, &m);
}

/* Output of the workload to the container's stdout or stderr. */
static int write_output(struct relay *s, const struct moat_msg_data *d)
{
	int fd = d->stream == MOAT_STREAM_STDERR ? s->r->err_fd : s->r->out_fd;

	if (d->len == 0 || fd < 0)
		return 0;
	/* A reader that went away loses the output, as a pipe's writer would; the workload
	 * runs on. */
	if (write_all(fd, d->data, d->len) < 0 && errno != EPIPE)
		return moat_error_set(s->err, errno, "microvm: write the workload's output");
	return 0;
}

static int exit_code_of_error(const struct moat_msg_error *e)
{
	return e->has_errno && e->errnum == ENOENT ? 127 : 126;
}

static int on_message(struct relay *s, struct moat_msg *m)
{
	if (m->type == MOAT_MSG_READY) {
		struct moat_msg start = { .type = MOAT_MSG_START, .id = MOAT_VM_WORKLOAD_ID };

		if (s->ready)
			return moat_error_msg(s->err, EPROTO, "microvm: the guest sent READY twice");
		s->ready = true;
		start.u.start = *s->r->start;
		return send_msg(s, &start);
	}
	if (!s->ready)
		return moat_error_msg(s->err, EPROTO, "microvm: the guest sent %s before READY",
				      moat_proto_type_name(m->type));
	if (m->id != MOAT_VM_WORKLOAD_ID && m->id != 0)
		return 0; /* no exec'd process of this session has that id: ignore it */
	switch (m->type) {
	case MOAT_MSG_STARTED:
		s->started = true;
		return send_resize(s);
	case MOAT_MSG_OUTPUT:
		return write_output(s, &m->u.data);
	case MOAT_MSG_CREDIT:
		s->window = MIN(s->window + m->u.credit.bytes, MOAT_PROTO_STDIN_WINDOW);
		return 0;
	case MOAT_MSG_EXITED:
		if (m->id != MOAT_VM_WORKLOAD_ID)
			return 0;
		s->exited = true;
		s->code = moat_proto_exit_code(&m->u.exited);
		return 0;
	case MOAT_MSG_ERROR:
		if (m->id == MOAT_VM_WORKLOAD_ID && !s->started)
			s->code = exit_code_of_error(&m->u.error);
		return moat_error_msg(s->err, m->u.error.has_errno ? (int)m->u.error.errnum : EIO,
				      "microvm: %s", m->u.error.message);
	default:
		return moat_error_msg(s->err, EPROTO, "microvm: the guest sent %s, which it may not",
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
		int r = moat_proto_decode(MOAT_PEER_GUEST, s->in.data, s->in.len, &used, &m, s->err);

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

/* The container's stdin, within the agent's window; EOF closes the workload's stdin. */
static int read_stdin(struct relay *s)
{
	uint8_t buf[MOAT_PROTO_MAX_DATA];
	size_t want = (size_t)MIN((int64_t)sizeof(buf), s->window);
	struct moat_msg m = { .type = MOAT_MSG_STDIN, .id = MOAT_VM_WORKLOAD_ID };
	ssize_t n = read(s->r->in_fd, buf, want);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		s->stdin_open = false; /* EOF, or an error: the workload sees its stdin end */
	m.u.data = (struct moat_msg_data){ .data = buf, .len = n > 0 ? (size_t)n : 0 };
	s->window -= m.u.data.len;
	return send_msg(s, &m);
}

/* A signal for the supervisor: to the workload (SIGWINCH becomes a resize). */
static int read_signal(struct relay *s)
{
	struct signalfd_siginfo si;
	struct moat_msg m = { .type = MOAT_MSG_SIGNAL, .id = MOAT_VM_WORKLOAD_ID };

	if (read(s->sigfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGCHLD)
		return 0; /* the loop checks the VMM */
	if (si.ssi_signo == SIGWINCH)
		return send_resize(s);
	if (!s->started)
		return 0; /* nothing runs yet to take it */
	m.u.signal.signo = si.ssi_signo;
	return send_msg(s, &m);
}

/* The VMM has gone: the session is over, the workload's status known or not. */
static bool vmm_gone(struct relay *s, int *ret_status)
{
	return waitpid(s->r->vmm, ret_status, WNOHANG) == s->r->vmm;
}

static int vmm_died(struct relay *s, int status)
{
	if (WIFSIGNALED(status))
		return moat_error_msg(s->err, EIO, "microvm: QEMU was killed by signal %d",
				      WTERMSIG(status));
	return moat_error_msg(s->err, EIO, "microvm: QEMU exited with status %d before the "
			      "workload ended", WEXITSTATUS(status));
}

static int loop(struct relay *s)
{
	long long boot_deadline = now_ms() + s->r->boot_timeout_ms;
	struct pollfd p[P_COUNT];
	int status, r;
	bool eof = false;

	while (!s->exited) {
		p[P_AGENT] = (struct pollfd){ s->r->agent_fd,
					      POLLIN | (s->out.len ? POLLOUT : 0), 0 };
		p[P_STDIN] = (struct pollfd){ s->stdin_open && s->started && s->window > 0 &&
							      s->out.len < RELAY_OUT_HIGH
						      ? s->r->in_fd
						      : -1,
					      POLLIN, 0 };
		p[P_SIGNAL] = (struct pollfd){ s->sigfd, POLLIN, 0 };
		r = poll(p, P_COUNT, 200);
		if (r < 0 && errno != EINTR)
			return moat_error_set(s->err, errno, "microvm: poll");
		if (p[P_SIGNAL].revents && read_signal(s) < 0)
			return -1;
		if (p[P_AGENT].revents & (POLLIN | POLLHUP | POLLERR) && read_agent(s, &eof) < 0)
			return -1;
		if (eof && !s->exited)
			return moat_error_msg(s->err, EPIPE, "microvm: the guest closed its port before "
					      "the workload ended");
		if (p[P_STDIN].revents && read_stdin(s) < 0)
			return -1;
		if (flush_out(s) < 0)
			return -1;
		if (!s->exited && vmm_gone(s, &status)) {
			s->r->vmm = 0;
			return vmm_died(s, status);
		}
		if (!s->ready && now_ms() > boot_deadline)
			return moat_error_msg(s->err, ETIMEDOUT, "microvm: the guest agent did not "
					      "answer within %d ms of boot",
					      s->r->boot_timeout_ms);
	}
	return 0;
}

/* After the workload's end: SHUTDOWN, then the VMM gets a moment to power off. */
static void shut_down(struct relay *s)
{
	struct moat_msg m = { .type = MOAT_MSG_SHUTDOWN, .id = 0 };
	long long deadline = now_ms() + RELAY_SHUTDOWN_MS;
	int status;

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
	struct relay s = { .r = rl, .sigfd = -1, .stdin_open = rl->in_fd >= 0,
			   .window = MOAT_PROTO_STDIN_WINDOW, .code = -1, .err = err };
	sigset_t all;
	int r;

	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigprocmask(SIG_BLOCK, &all, NULL);
	s.sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sigfd < 0)
		return moat_error_set(err, errno, "microvm: signalfd");
	fcntl(rl->agent_fd, F_SETFL, fcntl(rl->agent_fd, F_GETFL) | O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);
	r = loop(&s);
	shut_down(&s);
	close(s.sigfd);
	moat_buf_free(&s.in);
	moat_buf_free(&s.out);
	if (s.code >= 0)
		*ret_code = s.code;
	return r < 0 ? moat_error_ret(err) : 0;
}
