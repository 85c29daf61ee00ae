#!/usr/bin/env bats
# process.terminal with --console-socket: moat sends the pty master over the
# socket (SCM_RIGHTS) and the container's stdio is the pty.

load helpers

# A tiny receiver for the console socket: listen on SOCKET, touch READY,
# accept one connection, take the fd passed with SCM_RIGHTS, report whether
# it is a terminal, then copy what the pty says to stdout until it closes.
build_receiver() {
	RECEIVER=$BATS_FILE_TMPDIR/console-receiver
	export RECEIVER
	[[ -x $RECEIVER ]] && return 0
	command -v cc >/dev/null || return 1
	cat >"$BATS_FILE_TMPDIR/console-receiver.c" <<-'EOF'
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
			union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } ctl;
			struct iovec iov = { data, sizeof(data) };
			struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
					      .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
			struct cmsghdr *h;
			int lfd, cfd, pty, rfd;
			ssize_t n;

			if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path))
				return 2;
			strcpy(addr.sun_path, argv[1]);
			lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
			    listen(lfd, 1) < 0)
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
	EOF
	cc -O2 -Wall -o "$RECEIVER" "$BATS_FILE_TMPDIR/console-receiver.c"
}

setup_file() {
	moat_setup_file
	build_receiver || true
}

setup() {
	moat_setup
	[[ -x ${RECEIVER:-} ]] || skip "no C compiler to build the console-socket receiver"
}

# start_receiver: listen on $TEST_DIR/console.sock; its output goes to
# $TEST_DIR/console.out and its pid to a pid file teardown will use.
start_receiver() {
	"$RECEIVER" "$TEST_DIR/console.sock" "$TEST_DIR/console.ready" \
		>"$TEST_DIR/console.out" 2>"$TEST_DIR/console.err" </dev/null 3>&- &
	echo "$!" >"$TEST_DIR/receiver.pid"
	wait_for_file_exists "$TEST_DIR/console.ready"
}

wait_for_file_exists() {
	retry test -e "$1"
}

@test "create --console-socket hands the container's pty to the socket" {
	make_bundle
	cfg_set '.process.terminal = true'
	cfg_sh 'test -t 0 && test -t 1 && test -t 2 && echo all-stdio-is-a-tty; tty; echo finished'
	start_receiver
	moat_create --console-socket "$TEST_DIR/console.sock"
	moat start "$CID"
	wait_for_output '^finished' "$TEST_DIR/console.out"
	run tr -d '\r' <"$TEST_DIR/console.out"
	assert_line --index 0 'received a-terminal'
	assert_line all-stdio-is-a-tty
	assert_line --regexp '^/dev/(pts/[0-9]+|console)$'
}

@test "run --detach --console-socket works the same way" {
	make_bundle
	cfg_set '.process.terminal = true'
	cfg_sh 'test -t 0 && echo stdin-is-a-tty; echo finished'
	start_receiver
	moat_run_detached --console-socket "$TEST_DIR/console.sock"
	wait_for_output '^finished' "$TEST_DIR/console.out"
	run tr -d '\r' <"$TEST_DIR/console.out"
	assert_line stdin-is-a-tty
}

@test "the pty belongs to the container user" {
	make_bundle
	cfg_set '.process.terminal = true | .process.user = {"uid": 1000, "gid": 1000}'
	cfg_sh 'stat -c "owner=%u" "$(tty)"; echo finished'
	start_receiver
	moat_create --console-socket "$TEST_DIR/console.sock"
	moat start "$CID"
	wait_for_output '^finished' "$TEST_DIR/console.out"
	run tr -d '\r' <"$TEST_DIR/console.out"
	assert_line owner=1000
}

@test "create with process.terminal and no --console-socket fails with one line" {
	make_bundle
	cfg_set '.process.terminal = true'
	run_moat create --bundle "$BUNDLE" --pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'console-socket|terminal'
	assert_no_residue "$CID"
}

@test "a --console-socket nobody listens on fails with one line" {
	make_bundle
	cfg_set '.process.terminal = true'
	run_moat create --bundle "$BUNDLE" --console-socket "$TEST_DIR/nobody.sock" \
		--pid-file "$(pid_file "$CID")" "$CID"
	assert_moat_error 'nobody\.sock'
	assert_no_residue "$CID"
}
