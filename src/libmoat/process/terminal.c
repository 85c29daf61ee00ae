/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: process.terminal. */
#include "terminal.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>

#include "utils.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

static int check_is_pty_master(int fd, moat_error *err)
{
	struct statfs sfs;
	struct stat sb;

	if (fstat(fd, &sb) < 0 || fstatfs(fd, &sfs) < 0)
		return moat_error_set(err, errno, "process.terminal: stat /dev/pts/ptmx");
	if (!S_ISCHR(sb.st_mode) || major(sb.st_rdev) != 5 || minor(sb.st_rdev) != 2 ||
	    sfs.f_type != DEVPTS_SUPER_MAGIC)
		return moat_error_msg(
			err, EXDEV,
			"process.terminal: /dev/pts/ptmx is not the devpts ptmx device");
	return 0;
}

int moat_terminal_create(const struct oci_process *p, int *ret_master, moat_error *err)
{
	_cleanup_close_ int master = -1, peer = -1;
	int unlock = 0, i;

	master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return moat_error_set(err, errno, "process.terminal: open /dev/pts/ptmx");
	if (check_is_pty_master(master, err) < 0)
		return moat_error_ret(err);
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return moat_error_set(err, errno, "process.terminal: unlock the pty");
	peer = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (peer < 0)
		return moat_error_set(err, errno, "process.terminal: open the pty peer");
	if (p->console_size != NULL) {
		struct winsize ws = { .ws_row = (unsigned short)p->console_size->height,
				      .ws_col = (unsigned short)p->console_size->width };
		if (ioctl(peer, TIOCSWINSZ, &ws) < 0)
			return moat_error_set(err, errno, "process.consoleSize");
	}
	if (fchown(peer, p->user->uid, (gid_t)-1) < 0)
		return moat_error_set(err, errno, "process.terminal: chown the pty to uid %u",
				      p->user->uid);
	if (ioctl(peer, TIOCSCTTY, 0) < 0)
		return moat_error_set(err, errno,
				      "process.terminal: make the pty the controlling tty");
	for (i = 0; i < 3; i++)
		if (dup2(peer, i) < 0)
			return moat_error_set(err, errno, "process.terminal: dup2");
	*ret_master = TAKE_FD(master);
	return 0;
}

/* Copy what is readable on from to to; -1 on EOF or error. */
static int pump(int from, int to)
{
	char buf[8192];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	if (write_all(to, buf, (size_t)n) < 0)
		return -1;
	return 0;
}

static void copy_winsize(int from, int to)
{
	struct winsize ws;

	if (ioctl(from, TIOCGWINSZ, &ws) == 0)
		ioctl(to, TIOCSWINSZ, &ws);
}

struct relay {
	int master, sfd;
	pid_t pid;
	bool stdin_open, exited;
	int wstatus;
};

static int relay_signal(struct relay *r)
{
	struct signalfd_siginfo si;

	if (read(r->sfd, &si, sizeof(si)) != sizeof(si))
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (si.ssi_signo == SIGWINCH)
		copy_winsize(STDIN_FILENO, r->master);
	else if (si.ssi_signo != SIGCHLD)
		kill(r->pid, (int)si.ssi_signo);
	if (!r->exited && waitpid(r->pid, &r->wstatus, WNOHANG) == r->pid)
		r->exited = true;
	return 0;
}

int moat_terminal_relay(int master, pid_t pid, const sigset_t *forward, int *ret_wstatus,
			moat_error *err)
{
	struct relay r = { .master = master, .pid = pid, .stdin_open = true };
	struct termios saved, raw;
	bool tty = tcgetattr(STDIN_FILENO, &saved) == 0;
	int rc = 0;

	r.sfd = signalfd(-1, forward, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r.sfd < 0)
		return moat_error_set(err, errno, "signalfd");
	if (tty) {
		raw = saved;
		cfmakeraw(&raw);
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		copy_winsize(STDIN_FILENO, master);
	}
	while (rc == 0) {
		struct pollfd p[3] = { { r.sfd, POLLIN, 0 },
				       { master, POLLIN, 0 },
				       { r.stdin_open ? STDIN_FILENO : -1, POLLIN, 0 } };

		if (poll(p, 3, r.exited ? 0 : -1) < 0 && errno != EINTR) {
			rc = moat_error_set(err, errno, "poll");
			break;
		}
		if ((p[0].revents & POLLIN) && relay_signal(&r) < 0)
			rc = moat_error_set(err, errno, "read signalfd");
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR) && pump(STDIN_FILENO, master) < 0)
			r.stdin_open = false;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (pump(master, STDOUT_FILENO) < 0 && r.exited)
				break;
		} else if (r.exited) {
			break; /* exited and nothing left to read */
		}
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	close(r.sfd);
	if (rc == 0 && !r.exited && waitpid(pid, &r.wstatus, 0) < 0)
		rc = moat_error_set(err, errno, "wait for the container");
	*ret_wstatus = r.wstatus;
	return rc;
}
