/* SPDX-License-Identifier: GPL-2.0-or-later */
/* console-receiver SOCKET READY: a receiver for --console-socket. Listen on SOCKET, create
 * READY, accept one connection, take the fd passed with SCM_RIGHTS, say whether it is a
 * terminal ("received a-terminal" or "received not-a-terminal"), then copy what the pty says
 * to stdout until it closes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char data[4096], buf[4096];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { data, sizeof(data) };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = ctl.b,
			      .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *h;
	int lfd, cfd, pty, rfd;
	ssize_t n;

	if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path))
		return 2;
	strcpy(addr.sun_path, argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 1) < 0)
		return perror("listen"), 1;
	rfd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (rfd < 0)
		return perror("ready file"), 1;
	close(rfd);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return perror("accept"), 1;
	n = recvmsg(cfd, &msg, MSG_CMSG_CLOEXEC);
	h = n < 0 ? NULL : CMSG_FIRSTHDR(&msg);
	if (h == NULL || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
		return fprintf(stderr, "no fd received\n"), 1;
	memcpy(&pty, CMSG_DATA(h), sizeof(pty));
	printf("received %s\n", isatty(pty) ? "a-terminal" : "not-a-terminal");
	fflush(stdout);
	while ((n = read(pty, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && write(1, buf, (size_t)n) != n)
			return 1;
	return 0;
}
