/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: `moat exec` into a microVM (vm-exec.h). */
#include "vm-exec.h"

#include <fcntl.h>
#include <pty.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "sync.h"
#include "utils.h"

static int socket_path(int dirfd, struct sockaddr_un *ret, moat_error *err)
{
	*ret = (struct sockaddr_un){ .sun_family = AF_UNIX };
	/* through the directory's fd: however long the state root's path is */
	if ((size_t)snprintf(ret->sun_path, sizeof(ret->sun_path), "/proc/self/fd/%d/%s", dirfd,
			     MOAT_VM_EXEC_SOCKET) >= sizeof(ret->sun_path))
		return moat_error_msg(err, ENAMETOOLONG, "microvm: exec socket path");
	return 0;
}

int moat_vm_exec_listen(int state_dirfd, int *ret_fd, moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;

	if (fd < 0)
		return moat_error_set(err, errno, "microvm: exec socket");
	if (socket_path(state_dirfd, &sa, err) < 0)
		return moat_error_ret(err);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return moat_error_set(err, errno, "microvm: bind the exec socket");
	/* only root on the host (moat exec) connects; the supervisor holds the listening fd */
	fchmodat(state_dirfd, MOAT_VM_EXEC_SOCKET, 0600, 0);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* ---- the client --------------------------------------------------------------------------- */

static int send_request(int conn, const struct oci_process *p, const int fds[3], moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL;
	size_t len = 0;
	int r = ocijson_generate(&oci_process_type, p, false, &json, &len, &msg);
	struct moat_vm_exec_request h = { .magic = MOAT_VM_EXEC_MAGIC };
	char cbuf[CMSG_SPACE(3 * sizeof(int))] = { 0 };
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	if (r < 0)
		return moat_error_msg(err, -r, "exec: process: %s", msg ? msg : "generate");
	if (len > MOAT_VM_EXEC_MAX_REQUEST)
		return moat_error_msg(err, E2BIG, "exec: the process is larger than %d bytes",
				      MOAT_VM_EXEC_MAX_REQUEST);
	h.json_len = (uint32_t)len;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
	if (sendmsg(conn, &mh, MSG_NOSIGNAL) != sizeof(h) || write_all(conn, json, len) < 0)
		return moat_error_set(err, errno, "exec: send the request to the supervisor");
	return 0;
}

/* The supervisor's next reply; its message is text from a less trusted process: cut and
 * cleaned before anyone prints it. */
static int read_reply(int conn, struct moat_vm_exec_reply *r, moat_error *err)
{
	ssize_t n = read_all(conn, r, sizeof(*r));

	if (n != sizeof(*r))
		return moat_error_msg(err, EPIPE, "exec: the microVM's supervisor hung up");
	r->message[sizeof(r->message) - 1] = '\0';
	for (char *c = r->message; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return 0;
}

static int connect_supervisor(int dirfd, int *ret, moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;

	if (fd < 0)
		return moat_error_set(err, errno, "exec: socket");
	if (socket_path(dirfd, &sa, err) < 0)
		return moat_error_ret(err);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_set(err, errno, "exec: connect to the microVM's supervisor");
	*ret = TAKE_FD(fd);
	return 0;
}

/* The fds the guest process talks through: ours, or with --console-socket the slave of a
 * pty whose master goes there (the guest has the real terminal; this one passes bytes). */
static int stdio_fds(const struct moat_exec_opts *o, int fds[3], int *ret_slave, moat_error *err)
{
	const struct oci_console_size *cs = o->process->console_size;
	struct winsize ws = { .ws_row = cs ? (unsigned short)cs->height : 24,
			      .ws_col = cs ? (unsigned short)cs->width : 80 };
	struct termios t;
	int master = -1, slave = -1;

	*ret_slave = -1;
	if (!o->process->terminal || o->console_socket == NULL) {
		for (int i = 0; i < 3; i++)
			fds[i] = i;
		return 0;
	}
	if (openpty(&master, &slave, NULL, NULL, &ws) < 0)
		return moat_error_set(err, errno, "exec: openpty");
	if (tcgetattr(slave, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(slave, TCSANOW, &t);
	}
	if (moat_send_fd_to_socket(o->console_socket, master, "/dev/ptmx", err) < 0) {
		close(master);
		close(slave);
		return moat_error_ret(err);
	}
	close(master);
	fds[0] = fds[1] = fds[2] = *ret_slave = slave;
	return 0;
}

/* The signals a client passes on to its guest process; the rest keep their meaning here. */
static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

/* Until the supervisor's next reply other than STARTED, each forwarded signal this process
 * gets goes to the guest process. */
static int wait_forwarding(int conn, struct moat_vm_exec_reply *r, moat_error *err)
{
	sigset_t set, old;
	_cleanup_close_ int sfd = -1;
	int rc = 0;

	sigemptyset(&set);
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0 || (sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
		return moat_error_set(err, errno, "exec: signalfd");
	for (;;) {
		struct pollfd p[2] = { { conn, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = moat_error_set(err, errno, "exec: poll");
			break;
		}
		if (p[1].revents && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			struct moat_vm_exec_signal m = { MOAT_VM_EXEC_SIGNAL_MAGIC,
							 (int32_t)si.ssi_signo };

			write_all(conn, &m, sizeof(m)); /* a supervisor gone shows as a hang-up */
		}
		if (!p[0].revents)
			continue;
		if (read_reply(conn, r, err) < 0) {
			rc = -1;
			break;
		}
		if (r->type != MOAT_VM_REPLY_STARTED)
			break;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Request, STARTED; then with wait, EXITED's code. */
static int converse(const struct moat_exec_opts *o, int dirfd, int ready_fd, int *ret_code,
		    moat_error *err)
{
	_cleanup_close_ int conn = -1;
	struct moat_vm_exec_reply r;
	int fds[3], slave = -1, rc;

	if (connect_supervisor(dirfd, &conn, err) < 0 || stdio_fds(o, fds, &slave, err) < 0)
		return moat_error_ret(err);
	rc = send_request(conn, o->process, fds, err);
	if (slave >= 0)
		close(slave);
	if (rc < 0 || read_reply(conn, &r, err) < 0)
		return moat_error_ret(err);
	if (r.type == MOAT_VM_REPLY_ERROR)
		return moat_error_msg(err, EINVAL, "exec: %s", r.message);
	if (r.type != MOAT_VM_REPLY_STARTED)
		return moat_error_msg(err, EPROTO, "exec: unexpected reply from the supervisor");
	if (ready_fd >= 0) { /* detached: our parent may go */
		write_all(ready_fd, "", 1);
		close(ready_fd);
	}
	if (wait_forwarding(conn, &r, err) < 0)
		return moat_error_ret(err);
	if (r.type == MOAT_VM_REPLY_ERROR)
		return moat_error_msg(err, EIO, "exec: %s", r.message);
	*ret_code = r.value;
	return 0;
}

/* --detach: a child waits for the guest process and exits with its code; we return once it
 * runs, with the child's pid in --pid-file. */
static int detach(const struct moat_exec_opts *o, int dirfd, moat_error *err)
{
	int p[2], code = 0;
	pid_t pid;
	char c = '\0';

	if (pipe2(p, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "exec: pipe");
	pid = fork();
	if (pid == 0) {
		moat_error e = MOAT_ERROR_INIT;

		close(p[0]);
		if (converse(o, dirfd, p[1], &code, &e) < 0) {
			write_all(p[1], e.msg, strlen(e.msg) + 1);
			_exit(126);
		}
		_exit(code & 0xff);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return moat_error_set(err, errno, "exec: fork");
	}
	if (read(p[0], &c, 1) != 1 || c != '\0') {
		char msg[600] = { 0 };
		ssize_t n = c != '\0' ? read(p[0], msg + 1, sizeof(msg) - 2) : 0;

		msg[0] = c;
		msg[n > 0 ? n + 1 : 1] = '\0';
		close(p[0]);
		waitpid(pid, &code, 0);
		return moat_error_msg(err, EINVAL, "%s", msg[0] ? msg : "exec: failed");
	}
	close(p[0]);
	if (o->pid_file != NULL) {
		char buf[32];
		size_t len = (size_t)snprintf(buf, sizeof(buf), "%d", (int)pid);

		if (write_file_atomic_at(AT_FDCWD, o->pid_file, buf, len, 0644, err) < 0)
			return moat_error_prefix(err, "--pid-file");
	}
	return 0;
}

/* Foreground on our own terminal: raw while the guest's pty runs the show. */
int moat_vm_exec(const struct moat_exec_opts *o, int state_dirfd, int *ret_status, moat_error *err)
{
	struct termios saved;
	bool raw = false;
	int r, code = 0;

	if (o->detach)
		return detach(o, state_dirfd, err);
	if (o->process->terminal && o->console_socket == NULL && tcgetattr(0, &saved) == 0) {
		struct termios t = saved;

		cfmakeraw(&t);
		raw = tcsetattr(0, TCSANOW, &t) == 0;
	}
	r = converse(o, state_dirfd, -1, &code, err);
	if (raw)
		tcsetattr(0, TCSANOW, &saved);
	if (r == 0)
		*ret_status = code;
	return r;
}
