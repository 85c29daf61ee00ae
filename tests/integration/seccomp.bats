#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# linux.seccomp: every action, every operator, defaultErrnoRet, architectures,
# flags, unknown names, the refusals, SCMP_ACT_NOTIFY with a listener, moat's
# default profile (contrib/seccomp/default.json), and `moat exec`, which gets
# the container's filter.
#
# src/libmoat/seccomp/syscall-filter.h says how moat reads a profile; contrib/seccomp/
# README.md what the default profile allows and which errno each denial gives.
#
# Most filters here allow everything and act on one syscall the busybox shell
# controls: mkdir (mkdir(2) on x86_64, the path is the shell's) and kill
# (`kill -N 99999`: arg1 is the signal number N; no pid 99999 exists in the
# container's new pid namespace, so an allowed call fails with "No such
# process" and a denied one with the filter's errno). The probes the shell
# cannot make (ioctl requests, socket families, the syscalls busybox has no
# applet for, other ABIs, threads, SIGSYS handlers) are a small C program
# built with `cc -static` into the test's own directory and copied into the
# rootfs; the SCMP_ACT_NOTIFY listener is a C program that runs on the host.
#
# jq 1.6 rounds integers above 2^53 to doubles, so the default profile goes
# into config.json as text, after every jq edit (seccomp_from_file): the test
# runs the file as it is, whatever numbers it holds.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the container's shell
# shellcheck disable=SC2154 # bats and run_moat set status, output, stderr, stderr_lines
load helpers

DEFAULT_PROFILE=$BATS_TEST_DIRNAME/../../contrib/seccomp/default.json

# What moat's init does after it loaded the filter (prctl, sendto to moat,
# open/write of the exec fifo, close, rt_sigaction, execve) and what busybox
# sh, echo, cat and ls need: under a deny-by-default filter, the ALLOW rule
# for these names is all that lets a container run.
BASE_ALLOW='["execve", "exit", "exit_group", "brk", "arch_prctl", "set_tid_address",
	"set_robust_list", "rseq", "mmap", "munmap", "mprotect", "prlimit64", "getrandom",
	"uname", "readlink", "read", "write", "writev", "close", "openat", "fstat",
	"newfstatat", "lseek", "ioctl", "fcntl", "dup2", "pipe", "pipe2", "getpid", "getppid",
	"getuid", "geteuid", "getgid", "getegid", "getcwd", "getdents64", "rt_sigaction",
	"rt_sigprocmask", "rt_sigreturn", "prctl", "sendto", "sendmsg", "clone", "fork",
	"vfork", "wait4"]'

setup_file() {
	moat_setup_file
	# Whether this host can build the static probe at all, checked once.
	STATIC_CC=no
	if command -v cc >/dev/null &&
		printf 'int main(void) { return 0; }\n' >"$BATS_FILE_TMPDIR/static-check.c" &&
		cc -static -O2 -o "$BATS_FILE_TMPDIR/static-check" "$BATS_FILE_TMPDIR/static-check.c" \
			2>/dev/null; then
		STATIC_CC=yes
	fi
	export STATIC_CC
}

# ---- helpers -------------------------------------------------------------

# with_filter JSON: linux.seccomp = JSON (integers below 2^53 only: jq).
with_filter() {
	cfg_set '.linux.seccomp = $s' --argjson s "$1"
}

# seccomp_from_file FILE: linux.seccomp = FILE's text, unchanged. Make it the
# last edit of the config: a later cfg_set would round any integer above 2^53.
seccomp_from_file() {
	local json profile
	cfg_set '.linux.seccomp = "@SECCOMP@"' || return 1
	json=$(<"$CONFIG")
	profile=$(<"$1")
	printf '%s\n' "${json/'"@SECCOMP@"'/"$profile"}" >"$CONFIG"
	jq -e '.linux.seccomp.defaultAction' "$CONFIG" >/dev/null
}

# run_bundle: `moat run` of $BUNDLE as it is, in the foreground, through
# run_moat ($status, $output, $stderr).
run_bundle() {
	run_moat run --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
}

# run_filtered FILTER SCRIPT: SCRIPT (sh -c, its stderr into its stdout, so
# $stderr holds moat's own messages only) in a foreground container whose
# linux.seccomp is the JSON FILTER; the bundle is made on first use.
run_filtered() {
	[[ -n $BUNDLE ]] || make_bundle
	cfg_sh "exec 2>&1; $2"
	with_filter "$1"
	run_bundle
}

# allow_all_but ACTION [MEMBERS]: a filter that allows everything but mkdir,
# which gets ACTION; MEMBERS (JSON object members) go into the rule.
allow_all_but() {
	echo "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"],
		\"action\": \"$1\"${2:+, $2}}]}"
}

# kill_filter OP VALUE [VALUE_TWO]: allow everything, but kill(2) whose signal
# (arg1) compares OP to VALUE fails with EXDEV.
kill_filter() {
	echo "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"kill\"],
		\"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 18, \"args\": [{\"index\": 1,
		\"value\": $2${3:+, \"valueTwo\": $3}, \"op\": \"$1\"}]}]}"
}

# kill_script SIGNALS: `kill -N 99999` for each N, one line "N allowed" (the
# kernel's ESRCH) or "N denied" (the filter's EXDEV).
kill_script() {
	echo "for s in $*; do
		case \$(kill -\$s 99999 2>&1) in
		*'No such process') echo \"\$s allowed\" ;;
		*'Invalid cross-device link') echo \"\$s denied\" ;;
		*) echo \"\$s unexpected: \$(kill -\$s 99999 2>&1)\" ;;
		esac
	done"
}

# assert_kill_verdicts OP VALUE VALUE_TWO -- SIGNALS (VALUE_TWO may be ''): run
# kill_script under kill_filter and compare with what bash's arithmetic says
# of each signal.
assert_kill_verdicts() {
	local op=$1 v=$2 v2=${3:-} s deny expected=''
	shift 3
	[[ $1 == -- ]] && shift
	run_filtered "$(kill_filter "$op" "$v" "$v2")" "$(kill_script "$@")"
	assert_success
	for s in "$@"; do
		case $op in
		SCMP_CMP_NE) deny=$((s != v)) ;;
		SCMP_CMP_LT) deny=$((s < v)) ;;
		SCMP_CMP_LE) deny=$((s <= v)) ;;
		SCMP_CMP_EQ) deny=$((s == v)) ;;
		SCMP_CMP_GE) deny=$((s >= v)) ;;
		SCMP_CMP_GT) deny=$((s > v)) ;;
		SCMP_CMP_MASKED_EQ) deny=$(((s & v) == v2)) ;;
		esac
		if ((deny)); then
			expected+="$s denied"$'\n'
		else
			expected+="$s allowed"$'\n'
		fi
	done
	assert_output "${expected%$'\n'}"
	assert_equal "$stderr" ''
}

need_static_cc() {
	[[ $STATIC_CC == yes ]] ||
		skip "cc -static is not available (no C compiler or no static libc): cannot build the probe"
}

# build_probe: $TEST_DIR/probe, static, installed as /bin/probe in $BUNDLE's
# rootfs (made here when there is none yet). `probe NAME...` makes each named
# call and prints "NAME: ok" or "NAME: <errno name>"; trap-mkdir and
# thread-mkdir print what they saw.
build_probe() {
	need_static_cc
	cat >"$TEST_DIR/probe.c" <<-'EOF'
		#define _GNU_SOURCE
		#include <errno.h>
		#include <fcntl.h>
		#include <linux/netlink.h>
		#include <pthread.h>
		#include <sched.h>
		#include <signal.h>
		#include <stdio.h>
		#include <stdlib.h>
		#include <string.h>
		#include <sys/ioctl.h>
		#include <sys/personality.h>
		#include <sys/socket.h>
		#include <sys/syscall.h>
		#include <sys/timex.h>
		#include <sys/wait.h>
		#include <unistd.h>

		#ifndef AF_VSOCK
		#define AF_VSOCK 40
		#endif

		static volatile sig_atomic_t trapped_code = -1, trapped_nr = -1;

		static void on_sigsys(int sig, siginfo_t *si, void *uc)
		{
			(void)sig;
			(void)uc;
			trapped_code = si->si_code;
			trapped_nr = si->si_syscall;
		}

		static void *mkdir_in_thread(void *arg)
		{
			(void)arg;
			syscall(SYS_mkdir, "/tmp/from-thread", 0700);
			return NULL;
		}

		/* clone(2) with flags; the child exits at once. */
		static long clone_flags(unsigned long flags)
		{
			long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);

			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid((pid_t)pid, NULL, 0);
			return pid < 0 ? -1 : 0;
		}

		static long sock(int family, int type, int proto)
		{
			int fd = socket(family, type, proto);

			if (fd >= 0)
				close(fd);
			return fd < 0 ? -1 : 0;
		}

		/* i386's getpid (20) through int 0x80: the pid, or -errno. */
		static long int80_getpid(void)
		{
			long ret = 20;

			__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
			return ret;
		}

		static long run(const char *name)
		{
			char zero[256] = { 0 };
			int p[2], n;

			/* Arguments no kernel accepts where that is enough: the filter's errno
			 * differs from the kernel's own answer. */
			if (!strcmp(name, "ptrace"))
				return syscall(SYS_ptrace, 2 /* PTRACE_PEEKDATA */, 1, 0, 0);
			if (!strcmp(name, "keyctl"))
				return syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0);
			if (!strcmp(name, "add_key"))
				return syscall(SYS_add_key, "user", "probe", "x", 1, -3);
			if (!strcmp(name, "bpf"))
				return syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, zero, 64);
			if (!strcmp(name, "io_uring_setup"))
				return syscall(SYS_io_uring_setup, 1, zero);
			if (!strcmp(name, "perf_event_open"))
				return syscall(SYS_perf_event_open, zero, 0, -1, -1, 0);
			if (!strcmp(name, "userfaultfd"))
				return syscall(SYS_userfaultfd, 0);
			if (!strcmp(name, "open_by_handle_at"))
				return syscall(SYS_open_by_handle_at, AT_FDCWD, zero, O_RDONLY);
			if (!strcmp(name, "clone3"))
				return syscall(SYS_clone3, NULL, 0);
			/* glibc's, which call clock_adjtime(CLOCK_REALTIME) */
			if (!strcmp(name, "adjtimex")) {
				struct timex tx = { .modes = 0 };
				return adjtimex(&tx) < 0 ? -1 : 0;
			}
			if (!strcmp(name, "ntp_gettime")) {
				struct ntptimeval tv;
				return ntp_gettime(&tv) < 0 ? -1 : 0;
			}
			if (!strcmp(name, "adjtimex-set")) {
				struct timex tx = { .modes = ADJ_OFFSET, .offset = 1 };
				return adjtimex(&tx) < 0 ? -1 : 0;
			}
			if (!strcmp(name, "clock_adjtime-monotonic")) {
				struct timex tx = { .modes = 0 };
				return syscall(SYS_clock_adjtime, 1 /* CLOCK_MONOTONIC */, &tx);
			}
			if (!strcmp(name, "clone"))
				return clone_flags(0);
			if (!strcmp(name, "clone-newuser"))
				return clone_flags(CLONE_NEWUSER);
			if (!strcmp(name, "clone-newns"))
				return clone_flags(CLONE_NEWNS);
			if (!strcmp(name, "personality-query"))
				return personality(0xffffffff) < 0 ? -1 : 0;
			if (!strcmp(name, "personality-addr-no-randomize"))
				return personality(ADDR_NO_RANDOMIZE) < 0 ? -1 : 0;
			if (!strcmp(name, "socket-unix"))
				return sock(AF_UNIX, SOCK_STREAM, 0);
			if (!strcmp(name, "socket-inet"))
				return sock(AF_INET, SOCK_DGRAM, 0);
			if (!strcmp(name, "socket-inet6"))
				return sock(AF_INET6, SOCK_DGRAM, 0);
			if (!strcmp(name, "socket-packet"))
				return sock(AF_PACKET, SOCK_RAW, 0);
			if (!strcmp(name, "socket-vsock"))
				return sock(AF_VSOCK, SOCK_STREAM, 0);
			if (!strcmp(name, "netlink-route"))
				return sock(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
			if (!strcmp(name, "netlink-audit"))
				return sock(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
			/* TIOCSTI (0x5412) as glibc passes it, sign-extended as musl does, and
			 * with other upper bits; the kernel reads only the low 32 bits. */
			if (!strcmp(name, "tiocsti"))
				return syscall(SYS_ioctl, 0, 0x5412UL, "x");
			if (!strcmp(name, "tiocsti-sign-extended"))
				return syscall(SYS_ioctl, 0, 0xffffffff00005412UL, "x");
			if (!strcmp(name, "tiocsti-upper-bits"))
				return syscall(SYS_ioctl, 0, 0x0000000100005412UL, "x");
			if (!strcmp(name, "ioctl-fionread")) {
				if (pipe(p) < 0)
					return -1;
				return ioctl(p[0], FIONREAD, &n);
			}
			if (!strcmp(name, "ioctl-fionread-upper-bits")) {
				if (pipe(p) < 0)
					return -1;
				return syscall(SYS_ioctl, p[0], 0x100000000UL | FIONREAD, &n);
			}
			if (!strcmp(name, "int80-getpid")) {
				long r = int80_getpid();

				if (r < 0) {
					errno = (int)-r;
					return -1;
				}
				return 0;
			}
			/* x32's getpid: x86_64's number with bit 30 set. */
			if (!strcmp(name, "x32-getpid"))
				return syscall(0x40000000 | SYS_getpid);
			/* mkdir under SCMP_ACT_TRAP: the handler runs and the program goes on. */
			if (!strcmp(name, "trap-mkdir")) {
				struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };

				sigaction(SIGSYS, &sa, NULL);
				syscall(SYS_mkdir, "/tmp/trapped", 0700);
				printf("SIGSYS si_code %d si_syscall %d\n", (int)trapped_code,
				       (int)trapped_nr);
				return 0;
			}
			/* mkdir in a second thread; the main thread says whether it runs on. */
			if (!strcmp(name, "thread-mkdir")) {
				pthread_t t;

				if (pthread_create(&t, NULL, mkdir_in_thread, NULL) != 0 ||
				    pthread_join(t, NULL) != 0)
					return -1;
				printf("the main thread runs on\n");
				return 0;
			}
			fprintf(stderr, "probe: unknown probe %s\n", name);
			exit(2);
		}

		int main(int argc, char **argv)
		{
			for (int i = 1; i < argc; i++) {
				long r;

				errno = 0;
				r = run(argv[i]);
				if (r < 0)
					printf("%s: %s\n", argv[i], strerrorname_np(errno));
				else
					printf("%s: ok\n", argv[i]);
				fflush(stdout);
			}
			return 0;
		}
	EOF
	cc -static -O2 -Wall -Wextra -pthread -o "$TEST_DIR/probe" "$TEST_DIR/probe.c" ||
		fail "the probe does not build"
	[[ -n $BUNDLE ]] || make_bundle
	install -m 0755 "$TEST_DIR/probe" "$BUNDLE/rootfs/bin/probe"
}

# build_listener: $TEST_DIR/listener, the runtime spec's seccomp agent side.
# `listener SOCKET DIR ERRNO` listens on SOCKET and creates DIR/ready; each
# connection brings the container process state (written to
# DIR/state-N.json) and a seccomp notify fd. Each notification (mkdir) is
# logged to DIR/notifications and answered after reading the path from the
# caller's memory: SECCOMP_USER_NOTIF_FLAG_CONTINUE for a path ending in
# "-continue", the errno ERRNO for any other.
build_listener() {
	command -v cc >/dev/null || skip "no C compiler to build the seccomp listener"
	cat >"$TEST_DIR/listener.c" <<-'EOF'
		#define _GNU_SOURCE
		#include <errno.h>
		#include <fcntl.h>
		#include <linux/seccomp.h>
		#include <poll.h>
		#include <stdio.h>
		#include <stdlib.h>
		#include <string.h>
		#include <sys/ioctl.h>
		#include <sys/socket.h>
		#include <sys/un.h>
		#include <unistd.h>

		#define MAX_FDS 16

		static int take_connection(int lfd, const char *dir, int n)
		{
			union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } ctl;
			static char buf[1 << 20];
			char path[4096];
			struct iovec iov = { buf, sizeof(buf) };
			struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
					    .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
			struct cmsghdr *h;
			size_t len;
			ssize_t r;
			int cfd, nfd = -1;
			FILE *f;

			cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (cfd < 0 || (r = recvmsg(cfd, &m, MSG_CMSG_CLOEXEC)) < 0)
				return -1;
			h = CMSG_FIRSTHDR(&m);
			if (h != NULL && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
				memcpy(&nfd, CMSG_DATA(h), sizeof(nfd));
			/* The rest of the JSON, up to EOF. */
			for (len = (size_t)r; len < sizeof(buf); len += (size_t)r)
				if ((r = read(cfd, buf + len, sizeof(buf) - len)) <= 0)
					break;
			close(cfd);
			snprintf(path, sizeof(path), "%s/state-%d.json", dir, n);
			f = fopen(path, "w");
			if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
				return -1;
			return nfd;
		}

		static void answer(int nfd, int n, int err, FILE *log)
		{
			struct seccomp_notif req;
			struct seccomp_notif_resp resp;
			char mem[64], path[256] = "";
			size_t len;
			int fd;

			memset(&req, 0, sizeof(req));
			if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
				return;
			snprintf(mem, sizeof(mem), "/proc/%u/mem", req.pid);
			fd = open(mem, O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && pread(fd, path, sizeof(path) - 1, (off_t)req.data.args[0]) < 0)
				path[0] = '\0';
			if (fd >= 0)
				close(fd);
			path[sizeof(path) - 1] = '\0';
			/* What was read is the caller's path only while it still waits. */
			if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0)
				return;
			len = strlen(path);
			memset(&resp, 0, sizeof(resp));
			resp.id = req.id;
			if (len >= 9 && strcmp(path + len - 9, "-continue") == 0)
				resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			else
				resp.error = -err;
			fprintf(log, "connection %d pid %u syscall %d path %s: %s\n", n, req.pid,
				req.data.nr, path, resp.flags ? "continue" : "errno");
			fflush(log);
			ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		}

		int main(int argc, char **argv)
		{
			struct sockaddr_un sa = { .sun_family = AF_UNIX };
			struct pollfd p[MAX_FDS];
			int conn[MAX_FDS], n = 1, conns = 0, i, err;
			char path[4096];
			FILE *log;

			if (argc != 4 || strlen(argv[1]) >= sizeof(sa.sun_path))
				return 2;
			err = atoi(argv[3]);
			strcpy(sa.sun_path, argv[1]);
			snprintf(path, sizeof(path), "%s/notifications", argv[2]);
			log = fopen(path, "a");
			p[0].fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			p[0].events = POLLIN;
			if (log == NULL || p[0].fd < 0 ||
			    bind(p[0].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(p[0].fd, 4) < 0)
				return 1;
			snprintf(path, sizeof(path), "%s/ready", argv[2]);
			close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
			for (;;) {
				if (poll(p, (nfds_t)n, -1) < 0) {
					if (errno == EINTR)
						continue;
					return 1;
				}
				for (i = n - 1; i > 0; i--) {
					if (p[i].revents & POLLIN) {
						answer(p[i].fd, conn[i], err, log);
					} else if (p[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
						/* Nothing uses that filter any more. */
						close(p[i].fd);
						n--;
						p[i] = p[n];
						conn[i] = conn[n];
					}
				}
				if ((p[0].revents & POLLIN) && n < MAX_FDS) {
					p[n].fd = take_connection(p[0].fd, argv[2], ++conns);
					p[n].events = POLLIN;
					conn[n] = conns;
					if (p[n].fd >= 0)
						n++;
				}
			}
		}
	EOF
	cc -O2 -Wall -Wextra -o "$TEST_DIR/listener" "$TEST_DIR/listener.c" ||
		fail "the listener does not build"
}

# start_listener ERRNO: the listener on $TEST_DIR/listener.sock, writing into
# $TEST_DIR/agent; its pid goes to a pid file teardown uses.
start_listener() {
	mkdir -p "$TEST_DIR/agent"
	"$TEST_DIR/listener" "$TEST_DIR/listener.sock" "$TEST_DIR/agent" "$1" \
		>"$TEST_DIR/agent/stdout" 2>&1 </dev/null 3>&- &
	echo "$!" >"$TEST_DIR/listener.pid"
	retry test -e "$TEST_DIR/agent/ready"
}

# notify_filter: mkdir goes to the listener, with metadata.
notify_filter() {
	echo "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"$TEST_DIR/listener.sock\",
		\"listenerMetadata\": \"agent=test;mode=notify\",
		\"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}"
}

# loopback_up: bring up lo in $CID's network namespace from the host, as an
# engine's network setup would (moat leaves it down; the container has no
# CAP_NET_ADMIN to do it).
loopback_up() {
	nsenter -t "$(host_pid)" -n ip link set lo up
}

# ---- actions ----------------------------------------------------------------

@test "SCMP_ACT_ERRNO fails the syscall with errnoRet, and with EPERM when errnoRet is absent" {
	run_filtered "$(allow_all_but SCMP_ACT_ERRNO '"errnoRet": 18')" \
		'mkdir /tmp/d; echo "mkdir $?"; ls -d /tmp/d; echo survived'
	assert_success
	assert_line "mkdir: can't create directory '/tmp/d': Invalid cross-device link"
	assert_line 'mkdir 1'
	assert_line 'ls: /tmp/d: No such file or directory'
	assert_line survived
	assert_equal "$stderr" ''

	run_filtered "$(allow_all_but SCMP_ACT_ERRNO)" 'mkdir /tmp/d; ls -d /tmp/d'
	assert_failure
	assert_line "mkdir: can't create directory '/tmp/d': Operation not permitted"
	assert_line 'ls: /tmp/d: No such file or directory'
}

# errnoRet 0 is in the range (0..4095): the syscall is skipped and "succeeds".
@test "SCMP_ACT_ERRNO with errnoRet 0 skips the syscall and returns 0" {
	run_filtered "$(allow_all_but SCMP_ACT_ERRNO '"errnoRet": 0')" \
		'mkdir /tmp/d && echo "mkdir returned 0"; ls -d /tmp/d'
	assert_failure
	assert_line 'mkdir returned 0'
	assert_line 'ls: /tmp/d: No such file or directory'
}

@test "SCMP_ACT_KILL kills the process with SIGSYS (status 159)" {
	make_bundle
	cfg_args /bin/mkdir /tmp/d
	with_filter "$(allow_all_but SCMP_ACT_KILL)"
	run_bundle
	assert_equal "$status" 159
	assert_equal "$stderr" ''
	assert_no_residue "$CID"
	# The same in a child of the shell, which goes on.
	run_filtered "$(allow_all_but SCMP_ACT_KILL)" 'mkdir /tmp/d; echo "mkdir $?"'
	assert_success
	assert_line 'mkdir 159'
}

@test "SCMP_ACT_KILL_THREAD kills the process with SIGSYS (status 159)" {
	make_bundle
	cfg_args /bin/mkdir /tmp/d
	with_filter "$(allow_all_but SCMP_ACT_KILL_THREAD)"
	run_bundle
	assert_equal "$status" 159
	assert_equal "$stderr" ''
	run_filtered "$(allow_all_but SCMP_ACT_KILL_THREAD)" 'mkdir /tmp/d; echo "mkdir $?"'
	assert_success
	assert_line 'mkdir 159'
}

@test "SCMP_ACT_KILL_PROCESS kills the process with SIGSYS (status 159)" {
	make_bundle
	cfg_args /bin/mkdir /tmp/d
	with_filter "$(allow_all_but SCMP_ACT_KILL_PROCESS)"
	run_bundle
	assert_equal "$status" 159
	assert_equal "$stderr" ''
	run_filtered "$(allow_all_but SCMP_ACT_KILL_PROCESS)" 'mkdir /tmp/d; echo "mkdir $?"'
	assert_success
	assert_line 'mkdir 159'
}

# The spec's SCMP_ACT_KILL is the thread kill (libseccomp's SCMP_ACT_KILL).
@test "SCMP_ACT_KILL and SCMP_ACT_KILL_THREAD end only the calling thread, SCMP_ACT_KILL_PROCESS every thread" {
	build_probe
	local action
	for action in SCMP_ACT_KILL SCMP_ACT_KILL_THREAD; do
		run_filtered "$(allow_all_but "$action")" \
			'probe thread-mkdir; echo "probe $?"; ls -d /tmp/from-thread'
		assert_line 'the main thread runs on'
		assert_line 'probe 0'
		assert_line 'ls: /tmp/from-thread: No such file or directory'
	done
	run_filtered "$(allow_all_but SCMP_ACT_KILL_PROCESS)" 'probe thread-mkdir; echo "probe $?"'
	assert_success
	refute_line 'the main thread runs on'
	assert_line 'probe 159'
}

@test "SCMP_ACT_TRAP delivers SIGSYS (SYS_SECCOMP, the syscall's number) to a handler, and the call is not made" {
	build_probe
	run_filtered "$(allow_all_but SCMP_ACT_TRAP)" 'probe trap-mkdir; ls -d /tmp/trapped'
	# si_code 1 is SYS_SECCOMP; 83 is mkdir on x86_64.
	assert_line 'SIGSYS si_code 1 si_syscall 83'
	assert_line 'trap-mkdir: ok'
	assert_line 'ls: /tmp/trapped: No such file or directory'
	# Without a handler, SIGSYS kills.
	run_filtered "$(allow_all_but SCMP_ACT_TRAP)" 'mkdir /tmp/d; echo "mkdir $?"'
	assert_line 'mkdir 159'
}

@test "SCMP_ACT_TRACE without a tracer fails the syscall with ENOSYS, whatever errnoRet says" {
	run_filtered "$(allow_all_but SCMP_ACT_TRACE)" 'mkdir /tmp/d; ls -d /tmp/d'
	assert_line "mkdir: can't create directory '/tmp/d': Function not implemented"
	assert_line 'ls: /tmp/d: No such file or directory'
	run_filtered "$(allow_all_but SCMP_ACT_TRACE '"errnoRet": 18')" 'mkdir /tmp/d'
	assert_line "mkdir: can't create directory '/tmp/d': Function not implemented"
}

@test "SCMP_ACT_LOG lets the syscall run" {
	run_filtered "$(allow_all_but SCMP_ACT_LOG)" 'mkdir /tmp/d && ls -d /tmp/d'
	assert_success
	assert_output /tmp/d
	assert_equal "$stderr" ''
}

@test "SCMP_ACT_ALLOW rules under a deny-by-default filter allow exactly what they name" {
	local filter
	filter="{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": $BASE_ALLOW,
		\"action\": \"SCMP_ACT_ALLOW\"}]}"
	run_filtered "$filter" 'echo allowed | cat; mkdir /tmp/d; ls -d /tmp/d'
	assert_failure
	assert_line allowed
	assert_line "mkdir: can't create directory '/tmp/d': Operation not permitted"
	assert_line 'ls: /tmp/d: No such file or directory'

	filter=$(jq -c '.syscalls[0].names += ["mkdir"]' <<<"$filter")
	run_filtered "$filter" 'echo allowed | cat; mkdir /tmp/d; ls -d /tmp/d'
	assert_success
	assert_output $'allowed\n/tmp/d'
}

@test "defaultErrnoRet is the errno of every syscall no rule names" {
	local filter
	filter="{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 18, \"syscalls\": [
		{\"names\": $BASE_ALLOW, \"action\": \"SCMP_ACT_ALLOW\"},
		{\"names\": [\"rmdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 31}]}"
	run_filtered "$filter" 'mkdir /tmp/d; rmdir /tmp; echo done'
	assert_success
	assert_line "mkdir: can't create directory '/tmp/d': Invalid cross-device link"
	assert_line "rmdir: '/tmp': Too many links"
	assert_line 'done'
}

# ---- operators: kill(2)'s signal number, arg1 --------------------------------

@test "SCMP_CMP_NE matches every value but its own" {
	assert_kill_verdicts SCMP_CMP_NE 9 '' -- 0 1 8 9 10 15 64
}

@test "SCMP_CMP_LT matches the values below it" {
	assert_kill_verdicts SCMP_CMP_LT 9 '' -- 0 1 8 9 10 15 64
}

@test "SCMP_CMP_LE matches the values up to it" {
	assert_kill_verdicts SCMP_CMP_LE 9 '' -- 0 1 8 9 10 15 64
}

@test "SCMP_CMP_EQ matches its value only" {
	assert_kill_verdicts SCMP_CMP_EQ 9 '' -- 0 1 8 9 10 15 64
}

@test "SCMP_CMP_GE matches the values from it on" {
	assert_kill_verdicts SCMP_CMP_GE 9 '' -- 0 1 8 9 10 15 64
}

@test "SCMP_CMP_GT matches the values above it" {
	assert_kill_verdicts SCMP_CMP_GT 9 '' -- 0 1 8 9 10 15 64
}

# value is the mask, valueTwo what the masked argument must equal.
@test "SCMP_CMP_MASKED_EQ matches (arg & value) == valueTwo" {
	assert_kill_verdicts SCMP_CMP_MASKED_EQ 3 1 -- 0 1 2 3 4 5 6 7 8 9 13 64
	assert_kill_verdicts SCMP_CMP_MASKED_EQ 12 0 -- 0 1 2 3 4 5 8 12 16 19 64
}

# syscall-filter.h: comparisons of different arguments must all hold;
# comparisons of the same argument are alternatives.
@test "args: comparisons of different arguments all apply, comparisons of one argument are alternatives" {
	local filter
	filter='{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["kill"],
		"action": "SCMP_ACT_ERRNO", "errnoRet": 18, "args": [
		{"index": 0, "value": 99999, "op": "SCMP_CMP_EQ"},
		{"index": 1, "value": 5, "op": "SCMP_CMP_EQ"},
		{"index": 1, "value": 7, "op": "SCMP_CMP_EQ"}]}]}'
	run_filtered "$filter" 'for t in "5 99999" "7 99999" "6 99999" "5 99998" "7 99998"; do
		set -- $t
		case $(kill -$1 $2 2>&1) in
		*"No such process") echo "$t allowed" ;;
		*"Invalid cross-device link") echo "$t denied" ;;
		*) echo "$t unexpected" ;;
		esac
	done'
	assert_success
	assert_output "5 99999 denied
7 99999 denied
6 99999 allowed
5 99998 allowed
7 99998 allowed"
}

# ---- the rest of the profile ---------------------------------------------

@test "architectures: a syscall of an ABI outside the filter kills the process; listed, it is filtered by name" {
	build_probe
	# The native architecture only: x32's getpid (bit 30) is a bad architecture.
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW"}' 'probe x32-getpid; echo "probe $?"'
	assert_success
	refute_line --partial 'x32-getpid:'
	assert_line 'probe 159'
	# With SCMP_ARCH_X32 the kernel answers (ENOSYS without CONFIG_X86_X32_ABI).
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW",
		"architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X32"]}' 'probe x32-getpid; echo "probe $?"'
	assert_line --regexp '^x32-getpid: (ok|ENOSYS)$'
	assert_line 'probe 0'
	# And a rule by name covers x32's number too.
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW",
		"architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X32"], "syscalls": [{"names": ["getpid"],
		"action": "SCMP_ACT_ERRNO", "errnoRet": 18}]}' 'probe x32-getpid'
	assert_line 'x32-getpid: EXDEV'
}

@test "architectures: i386 int 0x80 is killed unless SCMP_ARCH_X86 is listed" {
	build_probe
	local rc=0
	"$TEST_DIR/probe" int80-getpid >/dev/null 2>&1 || rc=$?
	if ((rc != 0)); then
		skip "this host's kernel does not run i386 int 0x80 even without a filter (the probe exits with status $rc)"
	fi
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW"}' 'probe int80-getpid; echo "probe $?"'
	assert_line 'probe 159'
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW",
		"architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"]}' 'probe int80-getpid'
	assert_line 'int80-getpid: ok'
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW",
		"architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"], "syscalls": [{"names": ["getpid"],
		"action": "SCMP_ACT_ERRNO", "errnoRet": 18}]}' 'probe int80-getpid'
	assert_line 'int80-getpid: EXDEV'
}

@test "flags: each flag moat features supports is accepted, the others are refused naming linux.seccomp.flags" {
	local features flag
	features=$("$MOAT_BINARY" features)
	# SECCOMP_FILTER_FLAG_LOG is in libseccomp since 2.4.
	jq -e '.linux.seccomp.supportedFlags | index("SECCOMP_FILTER_FLAG_LOG")' <<<"$features" >/dev/null
	for flag in $(jq -r '.linux.seccomp.knownFlags[]' <<<"$features"); do
		run_filtered "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": [\"$flag\"],
			\"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 18}]}" \
			'mkdir /tmp/d'
		if jq -e --arg f "$flag" '.linux.seccomp.supportedFlags | index($f)' <<<"$features" >/dev/null; then
			assert_output "mkdir: can't create directory '/tmp/d': Invalid cross-device link"
			assert_equal "$stderr" ''
		else
			assert_moat_error "^moat: linux\.seccomp\.flags\[0\]: $flag "
			assert_no_residue "$CID"
		fi
	done
	run_filtered "{\"defaultAction\": \"SCMP_ACT_ALLOW\",
		\"flags\": $(jq -c .linux.seccomp.supportedFlags <<<"$features")}" 'echo all flags'
	assert_success
	assert_output 'all flags'
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_LOG",
		"SECCOMP_FILTER_FLAG_BOGUS"]}' 'echo must-not-run'
	assert_moat_error '^moat: (config\.json: )?linux\.seccomp\.flags\[1\]: .*SECCOMP_FILTER_FLAG_BOGUS'
	assert_no_residue "$CID"
}

@test "an unknown syscall name is skipped with one warning line, and the entry's other names still apply" {
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["no_such_call",
		"mkdir", "another_fake"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18}]}' \
		'mkdir /tmp/d; echo ran'
	assert_success
	assert_output "mkdir: can't create directory '/tmp/d': Invalid cross-device link
ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" \
		'^moat: warning: linux\.seccomp\.syscalls\[0\]: skipped "no_such_call", "another_fake": '
}

# Issue 15: exec compiled the same profile (from the cache) and then cleared the error value
# its warnings were in, so a process added by exec got the filter without the word.
@test "moat exec repeats create's warning about the profile, under the same filter" {
	make_bundle
	with_filter '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["no_such_call",
		"mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18}]}'
	cfg_args sleep 300
	run_moat run --detach --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_success
	assert_regex "$stderr" '^moat: warning: linux\.seccomp\.syscalls\[0\]: skipped "no_such_call": '
	run_moat exec "$CID" sh -c 'mkdir /tmp/d 2>&1; echo ran'
	assert_success
	assert_output "mkdir: can't create directory '/tmp/d': Invalid cross-device link
ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" \
		'^moat: warning: linux\.seccomp\.syscalls\[0\]: skipped "no_such_call": '
}

# Docker's and Podman's profiles allow syscalls of other architectures by name; skipping
# those stops nothing the filter would have let through.
@test "an unknown name in an allow rule is skipped without a warning" {
	# (an allow rule under an allowing default is dropped before its names are read)
	run_filtered '{"defaultAction": "SCMP_ACT_LOG", "syscalls": [{"names": ["no_such_call", "pciconfig_iobase", "getpid"], "action": "SCMP_ACT_ALLOW"}]}' \
		'echo ran'
	assert_success
	assert_output ran
	assert_equal "$stderr" ''
}

# Engines run the runtime with the container's stdio and read its messages from --log:
# a warning on stderr would read as the workload's own output.
@test "with --log, a warning goes to the log only, not to the container's stderr" {
	make_bundle
	cfg_sh 'echo out; echo err >&2'
	with_filter '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["no_such_call"], "action": "SCMP_ACT_ERRNO"}]}'
	run_moat --log "$TEST_DIR/log.json" --log-format json run --bundle "$BUNDLE" --pid-file "$(pid_file)" "$CID"
	assert_success
	assert_output out
	assert_equal "$stderr" err
	run jq -r 'select(.level == "warning") | .msg' "$TEST_DIR/log.json"
	assert_output --regexp '^linux\.seccomp\.syscalls\[0\]: skipped "no_such_call": '
}

# Podman's default profile allows setns, then lists it again as EPERM "without
# CAP_SYS_ADMIN". libseccomp keeps the first of two such rules without a word
# (runc and crun run the profile that way); moat keeps the same rule and says so.
@test "two rules of one syscall with different actions: libseccomp's choice is kept, with a warning" {
	make_bundle
	run_filtered '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
		{"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18},
		{"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}' \
		'mkdir /tmp/d; echo ran'
	assert_success
	assert_output "mkdir: can't create directory '/tmp/d': Invalid cross-device link
ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "${stderr_lines[0]}" 'moat: warning: linux.seccomp.syscalls[1]: the rule for "mkdir" is ignored: syscalls[0] gives it another action first (libseccomp keeps that one, as under runc and crun)'
}

# Every refusal is one line naming the JSON path, before anything is made.
@test "invalid profiles are refused with one line naming the field, leaving nothing behind" {
	local filter regex
	make_bundle
	while IFS='|' read -r filter regex; do
		[[ -n $filter ]] || continue
		run_filtered "$filter" 'echo must-not-run'
		assert_moat_error "^moat: (config\.json: )?$regex"
		refute_output --partial must-not-run
		assert_no_residue "$CID"
	done <<-'EOF'
		{"defaultAction": "SCMP_ACT_FOO"}|linux\.seccomp\.defaultAction: .*"SCMP_ACT_FOO"
		{"syscalls": []}|linux\.seccomp\.defaultAction: required
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_BAR"}]}|linux\.seccomp\.syscalls\[0\]\.action: .*"SCMP_ACT_BAR"
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 1, "value": 5, "op": "SCMP_CMP_XX"}]}]}|linux\.seccomp\.syscalls\[0\]\.args\[0\]\.op: .*"SCMP_CMP_XX"
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 6, "value": 5, "op": "SCMP_CMP_EQ"}]}]}|linux\.seccomp\.syscalls\[0\]\.args\[0\]\.index: 6
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 1, "value": 5, "valueTwo": 3, "op": "SCMP_CMP_EQ"}]}]}|linux\.seccomp\.syscalls\[0\]\.args\[0\]\.valueTwo: only SCMP_CMP_MASKED_EQ
		{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_ALLOW", "errnoRet": 1}]}|linux\.seccomp\.syscalls\[0\]\.errnoRet: SCMP_ACT_ALLOW takes no errno
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_LOG", "errnoRet": 1}]}|linux\.seccomp\.syscalls\[0\]\.errnoRet: SCMP_ACT_LOG takes no errno
		{"defaultAction": "SCMP_ACT_ALLOW", "defaultErrnoRet": 1}|linux\.seccomp\.defaultErrnoRet: SCMP_ACT_ALLOW takes no errno
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 4096}]}|linux\.seccomp\.syscalls\[0\]\.errnoRet: 4096 is out of range
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_TRACE", "errnoRet": 65536}]}|linux\.seccomp\.syscalls\[0\]\.errnoRet: 65536 is out of range
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"}]}|linux\.seccomp\.listenerPath: required when an action is SCMP_ACT_NOTIFY
		{"defaultAction": "SCMP_ACT_NOTIFY", "listenerPath": "/run/x.sock"}|linux\.seccomp\.defaultAction: SCMP_ACT_NOTIFY
		{"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/run/x.sock", "syscalls": [{"names": ["sendmsg"], "action": "SCMP_ACT_NOTIFY"}]}|linux\.seccomp\.syscalls\[0\]\.names\[0\]: SCMP_ACT_NOTIFY cannot apply to sendmsg
		{"defaultAction": "SCMP_ACT_ALLOW", "listenerMetadata": "m"}|linux\.seccomp\.listenerMetadata: set without listenerPath
		{"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_BOGUS"]}|linux\.seccomp\.flags\[0\]: .*"SECCOMP_FILTER_FLAG_BOGUS"
		{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_NOPE"]}|linux\.seccomp\.architectures\[0\]: .*"SCMP_ARCH_NOPE"
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": [], "action": "SCMP_ACT_ERRNO"}]}|linux\.seccomp\.syscalls\[0\]\.names: no syscall named
		{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 1, "value": 9, "op": "SCMP_CMP_EQ"}]}, {"names": ["kill"], "action": "SCMP_ACT_LOG", "args": [{"index": 1, "value": 9, "op": "SCMP_CMP_EQ"}]}]}|linux\.seccomp\.syscalls\[1\]: "kill" with the same args has another action
	EOF
}

# ---- SCMP_ACT_NOTIFY ---------------------------------------------------------

@test "SCMP_ACT_NOTIFY: the listener gets the container process state and the fd, and answers each call" {
	build_listener
	start_listener 31
	make_bundle
	run_filtered "$(notify_filter)" \
		'mkdir /tmp/go-continue && echo made; mkdir /tmp/refused; ls -d /tmp/go-continue /tmp/refused'
	assert_line made
	assert_line "mkdir: can't create directory '/tmp/refused': Too many links"
	assert_line /tmp/go-continue
	assert_line 'ls: /tmp/refused: No such file or directory'
	assert_equal "$stderr" ''
	run grep -c . "$TEST_DIR/agent/notifications"
	assert_output 2
	run cat "$TEST_DIR/agent/notifications"
	assert_line --regexp '^connection 1 pid [0-9]+ syscall 83 path /tmp/go-continue: continue$'
	assert_line --regexp '^connection 1 pid [0-9]+ syscall 83 path /tmp/refused: errno$'

	local state=$TEST_DIR/agent/state-1.json pid
	pid=$(host_pid)
	[[ ! -e $TEST_DIR/agent/state-2.json ]] || fail "a second connection came: $(cat "$TEST_DIR/agent/state-2.json")"
	assert_equal "$(jq -r .ociVersion "$state")" "$(cfg_get .ociVersion)"
	assert_equal "$(jq -c .fds "$state")" '["seccompFd"]'
	assert_equal "$(jq -r .pid "$state")" "$pid"
	assert_equal "$(jq -r .metadata "$state")" 'agent=test;mode=notify'
	assert_equal "$(jq -r .state.id "$state")" "$CID"
	assert_equal "$(jq -r .state.pid "$state")" "$pid"
	assert_equal "$(jq -r .state.status "$state")" creating
	assert_equal "$(jq -r .state.bundle "$state")" "$BUNDLE"
}

@test "SCMP_ACT_NOTIFY: a moat exec'd process's filter goes to the listener too, with the process's own pid" {
	build_listener
	start_listener 31
	make_bundle
	cfg_args sleep 300
	with_filter "$(notify_filter)"
	moat_run_detached
	wait_for_file "$TEST_DIR/agent/state-1.json"
	run_moat exec --pid-file "$TEST_DIR/exec.pid" "$CID" sh -c \
		'exec 2>&1; mkdir /tmp/exec-continue && echo made; mkdir /tmp/exec-refused'
	assert_failure
	assert_line made
	assert_line "mkdir: can't create directory '/tmp/exec-refused': Too many links"
	assert_equal "$stderr" ''
	local state=$TEST_DIR/agent/state-2.json
	[[ -s $state ]] || fail "no second connection"
	assert_equal "$(jq -r .pid "$state")" "$(tr -cd 0-9 <"$TEST_DIR/exec.pid")"
	assert_equal "$(jq -c .fds "$state")" '["seccompFd"]'
	assert_equal "$(jq -r .metadata "$state")" 'agent=test;mode=notify'
	assert_equal "$(jq -r .state.id "$state")" "$CID"
	assert_equal "$(jq -r .state.pid "$state")" "$(host_pid)"
	assert_equal "$(jq -r .state.status "$state")" running
	run cat "$TEST_DIR/agent/notifications"
	assert_line --regexp '^connection 2 pid [0-9]+ syscall 83 path /tmp/exec-continue: continue$'
	assert_line --regexp '^connection 2 pid [0-9]+ syscall 83 path /tmp/exec-refused: errno$'
	refute_line --partial 'connection 1 '
}

# The message names listenerPath once, the socket and the cause.
@test "SCMP_ACT_NOTIFY: a listenerPath nobody listens on fails with one line, leaving nothing behind" {
	make_bundle
	run_filtered "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"$TEST_DIR/nobody.sock\",
		\"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}" 'echo must-not-run'
	assert_moat_error "linux\.seccomp\.listenerPath.*'$TEST_DIR/nobody\.sock': No such file or directory$"
	refute_output --partial must-not-run
	assert_no_residue "$CID"
	if [[ $stderr == *listenerPath*listenerPath* ]]; then
		fail "the message repeats its context: $stderr"
	fi
}

# processes_in_pidns PID: the host pids of the live processes in PID's pid namespace.
processes_in_pidns() {
	local ns f pid
	ns=$(readlink "/proc/$1/ns/pid")
	for f in /proc/[0-9]*/ns/pid; do
		pid=${f#/proc/}
		pid=${pid%%/*}
		[[ $(readlink "$f" 2>/dev/null) == "$ns" ]] && process_alive "$pid" && echo "$pid"
	done
	return 0
}

@test "SCMP_ACT_NOTIFY: moat exec fails with one line when the listener is gone, and its process does not run" {
	build_listener
	start_listener 31
	make_bundle
	cfg_args sleep 300
	with_filter "$(notify_filter)"
	moat_run_detached
	wait_for_file "$TEST_DIR/agent/state-1.json"
	kill "$(cat "$TEST_DIR/listener.pid")"
	rm -f "$TEST_DIR/listener.pid" "$TEST_DIR/listener.sock"
	run_moat exec "$CID" sh -c 'echo must-not-run; touch /tmp/ran'
	assert_moat_error "linux\.seccomp\.listenerPath.*'$TEST_DIR/listener\.sock': No such file or directory$"
	refute_output --partial must-not-run
	[[ ! -e /proc/$(host_pid)/root/tmp/ran ]] || fail "the exec'd process ran"
	assert_equal "$(processes_in_pidns "$(host_pid)")" "$(host_pid)"
	assert_equal "$(status_of)" running
	if [[ $stderr == *listenerPath*listenerPath* ]]; then
		fail "the message repeats its context: $stderr"
	fi
}

# ---- no_new_privs, moat exec -----------------------------------------------

# Without no_new_privs the kernel takes a filter only with CAP_SYS_ADMIN: moat
# loads it before the capabilities go. The hardened policy would set
# noNewPrivileges, so its rule no-new-privileges is off here.
@test "a container without noNewPrivileges still gets its filter" {
	use_policy_without no-new-privileges
	make_bundle
	cfg_set '.process.noNewPrivileges = false'
	run_filtered "$(allow_all_but SCMP_ACT_ERRNO '"errnoRet": 18')" \
		'grep -E "^(NoNewPrivs|Seccomp|Seccomp_filters|CapEff):" /proc/self/status; mkdir /tmp/d'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+0$'
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line --regexp '^Seccomp_filters:[[:space:]]+1$'
	assert_line --regexp '^CapEff:[[:space:]]+0000000000000000$'
	assert_line "mkdir: can't create directory '/tmp/d': Invalid cross-device link"
	# And an exec'd process of such a container.
	cfg_args sleep 300
	moat_run_detached
	run_moat exec "$CID" sh -c 'grep -E "^(NoNewPrivs|Seccomp_filters):" /proc/self/status; mkdir /tmp/d'
	assert_failure
	assert_line --regexp '^NoNewPrivs:[[:space:]]+0$'
	assert_line --regexp '^Seccomp_filters:[[:space:]]+1$'
	assert_equal "$stderr" "mkdir: can't create directory '/tmp/d': Invalid cross-device link"
}

# Issue 14: with noNewPrivileges false the filter was loaded before moat entered process.cwd
# (openat2, fchdir), and either way before the init waited for start (openat of the fifo).
@test "the filter comes after moat's own last syscall: a profile without openat2, openat and fchdir runs, with and without noNewPrivileges" {
	use_policy_without no-new-privileges
	make_bundle
	cfg_set '.linux.seccomp.syscalls |= map(.names -= ["openat2", "openat", "fchdir"])'
	for nnp in false true; do
		cfg_set '.process.noNewPrivileges = $n' --argjson n "$nnp"
		cfg_args /bin/echo "ran with noNewPrivileges $nnp"
		run_bundle
		assert_success
		assert_output "ran with noNewPrivileges $nnp"
		cfg_args /bin/sleep 300
		moat_run_detached
		run_moat exec "$CID" /bin/echo exec ran
		assert_success
		assert_output "exec ran"
		moat delete --force "$CID"
	done
}

@test "moat exec runs under the container's filter: the same calls fail the same way" {
	make_bundle
	cfg_args sleep 300
	with_filter "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [
		{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 18},
		{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 18,
		 \"args\": [{\"index\": 1, \"value\": 9, \"op\": \"SCMP_CMP_GE\"}]},
		{\"names\": [\"rmdir\"], \"action\": \"SCMP_ACT_KILL_PROCESS\"}]}"
	moat_run_detached
	run grep -E '^Seccomp(_filters)?:' "/proc/$(host_pid)/status"
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line --regexp '^Seccomp_filters:[[:space:]]+1$'
	run_moat exec "$CID" sh -c 'exec 2>&1
		grep -E "^Seccomp(_filters)?:" /proc/self/status
		mkdir /tmp/d; echo "mkdir $?"
		'"$(kill_script 8 9)"'
		rmdir /tmp; echo "rmdir $?"'
	assert_success
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line --regexp '^Seccomp_filters:[[:space:]]+1$'
	assert_line "mkdir: can't create directory '/tmp/d': Invalid cross-device link"
	assert_line 'mkdir 1'
	assert_line '8 allowed'
	assert_line '9 denied'
	assert_line 'rmdir 159'
	assert_equal "$stderr" ''
	# The exec'd program itself killed: moat exec reports 128+SIGSYS.
	run_moat exec "$CID" rmdir /tmp
	assert_equal "$status" 159
}

# ---- moat's default profile ------------------------------------------------

# What a busybox container does, under contrib/seccomp/default.json given in
# the config: the shell, pipes, files and links, jobs, sleep, date, ps, top,
# signals, exec, and TCP over loopback (wget to httpd, nc to nc -l).
@test "default profile: ordinary busybox work runs" {
	command -v nsenter >/dev/null && command -v ip >/dev/null ||
		skip "nsenter or ip missing on the host: cannot bring up the container's loopback"
	make_bundle
	cfg_sh 'exec 2>&1
		echo "shell $((6 * 7))"
		echo "pipe $(echo abc | tr a-c x-z | cat)"
		echo data >/tmp/f && echo "file $(cat /tmp/f)"
		mkdir /tmp/d && mv /tmp/f /tmp/d/g && ln -s g /tmp/d/sym && ln /tmp/d/g /tmp/d/hard &&
			echo "links $(cat /tmp/d/sym) $(stat -c %h /tmp/d/g)"
		chmod 0600 /tmp/d/g && echo "chmod $(stat -c %a /tmp/d/g)"
		rm -r /tmp/d && echo removed
		sleep 0.1 & wait $! && echo "waited for a background job"
		(sleep 300 & kill $!; wait $!; echo "killed a job: $?" >&3) 3>&1 2>/dev/null
		date +"date %Y"
		ps -o pid,comm | grep -q " ps$" && echo "ps lists itself"
		top -b -n1 | grep -q "^Mem:" && echo "top ran"
		mkdir /tmp/www && echo page >/tmp/www/index.html
		httpd -f -p 127.0.0.1:8080 -h /tmp/www &
		i=0; until wget -q -O - http://127.0.0.1:8080/index.html 2>/dev/null; do
			i=$((i + 1)); [ $i -lt 300 ] || break; sleep 0.1; done
		kill $!
		nc -l -p 8081 -e echo served &
		i=0; until nc 127.0.0.1 8081 </dev/null 2>/dev/null; do
			i=$((i + 1)); [ $i -lt 300 ] || break; sleep 0.1; done
		exec echo "exec works"'
	seccomp_from_file "$DEFAULT_PROFILE"
	moat_create
	loopback_up
	moat start "$CID"
	wait_for_status stopped
	run cat "$(out_file)"
	assert_output "shell 42
pipe xyz
file data
links data 2
chmod 600
removed
waited for a background job
killed a job: 143
date $(date -u +%Y)
ps lists itself
top ran
page
served
exec works"
}

@test "default profile: busybox's mount, unshare, nsenter, swapon, reboot, date -s, pivot_root fail with ENOSYS" {
	make_bundle
	cfg_sh 'exec 2>&1
		mount -t tmpfs tmpfs /mnt
		umount /proc
		unshare -U true
		unshare -n true
		nsenter -t 1 -u true
		touch /tmp/swap; swapon /tmp/swap; swapoff /tmp/swap
		reboot -f
		date -s 2000-01-01 >/dev/null
		mkdir /tmp/old; pivot_root /tmp /tmp/old
		arping -c 1 -I lo 127.0.0.1
		hostname other
		echo still here'
	seccomp_from_file "$DEFAULT_PROFILE"
	run_bundle
	assert_success
	assert_line --regexp '^mount: .*Function not implemented$'
	assert_line --regexp '^umount: .*Function not implemented$'
	assert_line 'unshare: unshare(0x10000000): Function not implemented'
	assert_line 'unshare: unshare(0x40000000): Function not implemented'
	assert_line --regexp "^nsenter: .*namespace 'uts': Function not implemented$"
	assert_line --regexp '^swapon: .*Function not implemented$'
	assert_line --regexp '^swapoff: .*Function not implemented$'
	assert_line --regexp '^reboot: .*Function not implemented$'
	assert_line "date: can't set date: Function not implemented"
	assert_line --regexp '^pivot_root: .*Function not implemented$'
	# AF_PACKET: the socket family's own errno.
	assert_line --regexp '^arping: socket.*Address family not supported by protocol$'
	# What no entry names: the default EPERM.
	assert_line 'hostname: sethostname: Operation not permitted'
	assert_line 'still here'
	assert_equal "$stderr" ''
}

# contrib/seccomp/README.md's table: ENOSYS for whole syscalls, the family's or
# protocol's errno for sockets, EIO for TIOCSTI (judged on the low 32 bits of the
# request; other requests pass whatever their upper bits), EPERM for argument refusals.
# Each denied probe gets a different answer without the filter (ESRCH, ok,
# EINVAL, ENOENT, ENOTTY, EPERM...).
@test "default profile: denied calls fail with the documented errno, their allowed forms work" {
	build_probe
	cfg_args /bin/probe \
		ptrace keyctl add_key bpf io_uring_setup perf_event_open userfaultfd open_by_handle_at \
		clone3 clone clone-newuser clone-newns personality-query personality-addr-no-randomize \
		socket-unix socket-inet socket-inet6 socket-packet socket-vsock netlink-route netlink-audit \
		tiocsti tiocsti-sign-extended tiocsti-upper-bits ioctl-fionread ioctl-fionread-upper-bits
	seccomp_from_file "$DEFAULT_PROFILE"
	run_bundle
	assert_success
	assert_equal "$stderr" ''
	assert_output 'ptrace: ENOSYS
keyctl: ENOSYS
add_key: ENOSYS
bpf: ENOSYS
io_uring_setup: ENOSYS
perf_event_open: ENOSYS
userfaultfd: ENOSYS
open_by_handle_at: ENOSYS
clone3: ENOSYS
clone: ok
clone-newuser: EPERM
clone-newns: EPERM
personality-query: ok
personality-addr-no-randomize: EPERM
socket-unix: ok
socket-inet: ok
socket-inet6: ok
socket-packet: EAFNOSUPPORT
socket-vsock: EAFNOSUPPORT
netlink-route: ok
netlink-audit: EPROTONOSUPPORT
tiocsti: EIO
tiocsti-sign-extended: EIO
tiocsti-upper-bits: EIO
ioctl-fionread: ok
ioctl-fionread-upper-bits: ok'
}

# Issue 14: glibc's adjtimex() and ntp_gettime() go through clock_adjtime, which the profile
# denied whole: they got ENOSYS, though only reading the clock state.
@test "default profile: glibc's adjtimex and ntp_gettime read the clock; setting it and other clocks stay refused" {
	build_probe
	cfg_args /bin/probe adjtimex ntp_gettime adjtimex-set clock_adjtime-monotonic
	seccomp_from_file "$DEFAULT_PROFILE"
	run_bundle
	assert_success
	assert_output 'adjtimex: ok
ntp_gettime: ok
adjtimex-set: EPERM
clock_adjtime-monotonic: ENOSYS'
}

@test "default profile: an x32 syscall kills the process with SIGSYS" {
	build_probe
	cfg_sh 'probe x32-getpid; echo "probe $?"'
	seccomp_from_file "$DEFAULT_PROFILE"
	run_bundle
	assert_success
	assert_output 'probe 159'
}

@test "default profile: an i386 int 0x80 syscall kills the process with SIGSYS" {
	build_probe
	local rc=0
	"$TEST_DIR/probe" int80-getpid >/dev/null 2>&1 || rc=$?
	if ((rc != 0)); then
		skip "this host's kernel does not run i386 int 0x80 even without a filter (the probe exits with status $rc)"
	fi
	cfg_sh 'probe int80-getpid; echo "probe $?"'
	seccomp_from_file "$DEFAULT_PROFILE"
	run_bundle
	assert_success
	assert_output 'probe 159'
}

@test "default profile: moat exec'd processes get it too" {
	build_probe
	cfg_args sleep 300
	seccomp_from_file "$DEFAULT_PROFILE"
	moat_run_detached
	run_moat exec "$CID" sh -c 'exec 2>&1; grep -E "^Seccomp(_filters)?:" /proc/self/status
		unshare -U true; probe tiocsti socket-packet io_uring_setup clone3 clone; mkdir /tmp/ok && echo mkdir works'
	assert_success
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line --regexp '^Seccomp_filters:[[:space:]]+1$'
	assert_line 'unshare: unshare(0x10000000): Function not implemented'
	assert_line 'tiocsti: EIO'
	assert_line 'socket-packet: EAFNOSUPPORT'
	assert_line 'io_uring_setup: ENOSYS'
	assert_line 'clone3: ENOSYS'
	assert_line 'clone: ok'
	assert_line 'mkdir works'
	run_moat exec "$CID" probe x32-getpid
	assert_equal "$status" 159
}

# contrib/policy/README.md, default-seccomp: the hardened policy gives a
# config without linux.seccomp the built-in copy of default.json; with that
# rule off the container has no filter at all.
@test "default profile: the hardened policy applies it to a config without linux.seccomp, its rule default-seccomp off does not" {
	make_bundle
	cfg_set 'del(.linux.seccomp)'
	local script='exec 2>&1; grep -E "^Seccomp(_filters)?:" /proc/self/status; unshare -U true; echo done'
	run_sh "$script"
	assert_success
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line --regexp '^Seccomp_filters:[[:space:]]+1$'
	assert_line 'unshare: unshare(0x10000000): Function not implemented'

	use_policy_without default-seccomp
	run_sh "$script"
	assert_success
	assert_line --regexp '^Seccomp:[[:space:]]+0$'
	refute_line --partial 'Function not implemented'
	assert_line 'done'
}

# ---- the compiled-filter cache under the state root (src/libmoat/seccomp/seccomp-bpf.c) --------

@test "cache: the compiled default profile is kept under the state root, reused, and a damaged entry is compiled again" {
	make_bundle
	local script='grep -E "^Seccomp:" /proc/self/status; unshare -U true 2>&1; echo done'
	run_sh "$script"
	assert_success
	assert_line 'unshare: unshare(0x10000000): Function not implemented'
	local cache=$MOAT_ROOT/.seccomp-cache entry
	entry=$(find "$cache" -type f)
	assert_equal "$(wc -l <<<"$entry")" 1
	assert_equal "$(stat -c '%u %a' "$entry")" "0 600"
	local first
	first=$(stat -c %i "$entry")
	# a hit: the same file, not rewritten (written entries are renamed into place)
	CID=$CID-2 run_sh "$script"
	assert_success
	assert_line 'unshare: unshare(0x10000000): Function not implemented'
	assert_equal "$(stat -c %i "$entry")" "$first"
	# a damaged entry is a miss: the container still gets its filter, the entry is rewritten
	truncate -s 100 "$entry"
	CID=$CID-3 run_sh "$script"
	assert_success
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line 'unshare: unshare(0x10000000): Function not implemented'
	[[ $(stat -c %i "$entry") != "$first" ]] || fail "the damaged entry was not rewritten"
	# an entry someone else may write is not trusted
	first=$(stat -c %i "$entry")
	chmod 0660 "$entry"
	CID=$CID-4 run_sh "$script"
	assert_success
	assert_line 'unshare: unshare(0x10000000): Function not implemented'
	[[ $(stat -c %i "$entry") != "$first" ]] || fail "the damaged entry was not rewritten"
	assert_equal "$(stat -c %a "$entry")" 600
}

@test "cache: another profile gets its own entry, and an unknown name warns on every run" {
	make_bundle
	cfg_set '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir", "no_such_call"], action: "SCMP_ACT_ERRNO", errnoRet: 38}]}'
	local i
	for i in 1 2; do
		CID=$CID-$i run_sh 'mkdir /tmp/x 2>&1'
		assert_failure
		assert_output --partial 'Function not implemented'
		[[ $stderr == *no_such_call* ]] || fail "no warning on run $i: $stderr"
	done
	assert_equal "$(find "$MOAT_ROOT/.seccomp-cache" -type f | wc -l)" 1
	make_bundle "$TEST_DIR/b2"
	CID=$CID-3 run_sh true
	assert_equal "$(find "$MOAT_ROOT/.seccomp-cache" -type f | wc -l)" 2
}
