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
#include "vm-socket.h"

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

/* Request, STARTED; then EXITED's code. */
static int converse(const struct moat_exec_opts *o, int dirfd, const char *member, int ready_fd,
		    int *ret_code, moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL;
	_cleanup_close_ int conn = -1;
	struct moat_vm_reply r;
	int fds[3], slave = -1, rc;
	size_t len = 0;
	sigset_t set;

	rc = ocijson_generate(&oci_process_type, o->process, false, &json, &len, &msg);
	if (rc < 0)
		return moat_error_msg(err, -rc, "exec: process: %s", msg ? msg : "generate");
	if (moat_vm_socket_connect(dirfd, &conn, err) < 0 || stdio_fds(o, fds, &slave, err) < 0)
		return moat_error_prefix(err, "exec");
	rc = moat_vm_request_send(conn, MOAT_VM_REQ_EXEC, member, json, len, 0, fds, 3, err);
	if (slave >= 0)
		close(slave);
	if (rc < 0 || moat_vm_reply_read(conn, &r, err) < 0)
		return moat_error_prefix(err, "exec");
	if (r.type == MOAT_VM_REPLY_ERROR) /* with the guest's errno when it sent one */
		return moat_error_msg(err, r.value > 0 ? r.value : EINVAL, "exec: %s", r.message);
	if (r.type != MOAT_VM_REPLY_STARTED)
		return moat_error_msg(err, EPROTO, "exec: unexpected reply from the supervisor");
	if (ready_fd >= 0) { /* detached: our parent may go */
		write_all(ready_fd, "", 1);
		close(ready_fd);
	}
	sigemptyset(&set);
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	if (moat_vm_reply_wait(conn, &set, &r, err) < 0)
		return moat_error_prefix(err, "exec");
	if (r.type == MOAT_VM_REPLY_ERROR)
		return moat_error_msg(err, EIO, "exec: %s", r.message);
	*ret_code = r.value;
	return 0;
}

/* --detach: a child waits for the guest process and exits with its code; we return once it
 * runs, with the child's pid in --pid-file. */
static int detach(const struct moat_exec_opts *o, int dirfd, const char *member, moat_error *err)
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
		if (converse(o, dirfd, member, p[1], &code, &e) < 0) {
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
int moat_vm_exec(const struct moat_exec_opts *o, int state_dirfd, const char *member,
		 int *ret_status, moat_error *err)
{
	struct termios saved;
	bool raw = false;
	int r, code = 0;

	if (o->detach)
		return detach(o, state_dirfd, member, err);
	if (o->process->terminal && o->console_socket == NULL && tcgetattr(0, &saved) == 0) {
		struct termios t = saved;

		cfmakeraw(&t);
		raw = tcsetattr(0, TCSANOW, &t) == 0;
	}
	r = converse(o, state_dirfd, member, -1, &code, err);
	if (raw)
		tcsetattr(0, TCSANOW, &saved);
	if (r == 0)
		*ret_status = code;
	return r;
}
