/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The red team's workload: run as a container's (or a microVM's) program, it tries the
 * attacks named on its command line and prints one line for each:
 *
 *   CASE: tried WHAT; contained: HOW
 *   CASE: tried WHAT; ESCAPED: WHAT HAPPENED
 *
 * It exits 0 once every case ran, whatever their outcome: the tests read the lines. Built
 * static (tests/redteam/redteam.bash), so it runs in a busybox root. Each case is one
 * attempt at one thing moat's default policy is meant to stop, and says what stopped it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/un.h>
#include <linux/vm_sockets.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

struct outcome {
	char tried[160];
	char said[240];
	bool escaped;
};

static void tried(struct outcome *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->tried, sizeof(o->tried), fmt, ap);
	va_end(ap);
}

static void verdict(struct outcome *o, bool escaped, const char *fmt, ...)
{
	va_list ap;

	o->escaped = escaped;
	va_start(ap, fmt);
	vsnprintf(o->said, sizeof(o->said), fmt, ap);
	va_end(ap);
}

/* A call that must fail: contained with its errno, escaped when it succeeded. */
static void refused(struct outcome *o, long rc, const char *what)
{
	if (rc < 0)
		verdict(o, false, "%s", strerrorname_np(errno) ? strerrorname_np(errno) : "error");
	else
		verdict(o, true, "%s succeeded", what);
}

/* ---- host reach --------------------------------------------------------------------------- */

/* The directory ".." leads to from PATH, to the top: the container's root, unless PATH is
 * somewhere else (pivot_root and chroot stop ".." at the root). */
static bool top_is(const char *path, const struct stat *root)
{
	struct stat st, up;
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC), next, i;

	if (fd < 0)
		return true; /* not ours to see */
	for (i = 0; i < 256 && fstat(fd, &st) == 0; i++) {
		next = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0 || fstat(next, &up) < 0)
			break;
		close(fd);
		fd = next;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break;
	}
	close(fd);
	return st.st_dev == root->st_dev && st.st_ino == root->st_ino;
}

/* Every process the container sees has the container's root as its root, and its cwd under
 * it: a /proc/PID/root or cwd that leads elsewhere would be a way out. */
static void proc_roots(struct outcome *o)
{
	static const char *const links[] = { "root", "cwd" };
	struct stat self;
	struct dirent *de;
	DIR *d = opendir("/proc");
	int n = 0;
	size_t l;
	char p[300];

	tried(o, "every /proc/*/root and /proc/*/cwd for a way out of the root");
	if (d == NULL || stat("/", &self) < 0) {
		verdict(o, false, "/proc unreadable (%s)", strerrorname_np(errno));
		if (d != NULL)
			closedir(d);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		for (l = 0; l < 2; l++) {
			snprintf(p, sizeof(p), "/proc/%s/%s", de->d_name, links[l]);
			if (!top_is(p, &self)) {
				verdict(o, true, "%s leads to another root", p);
				closedir(d);
				return;
			}
		}
		n++;
	}
	closedir(d);
	verdict(o, false, "all %d processes seen lead only to the container's root", n);
}

/* The host's disk file system, mounted whole, would show in mountinfo with "/" as its root. */
static void mountinfo_host_fs(struct outcome *o)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024], root[512], point[512], fstype[64];
	int n = 0;

	tried(o, "mountinfo for a host disk file system mounted whole");
	if (f == NULL) {
		verdict(o, false, "mountinfo unreadable (%s)", strerrorname_np(errno));
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *dash = strstr(line, " - ");

		if (dash == NULL || sscanf(line, "%*s %*s %*s %511s %511s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s", fstype) != 1)
			continue;
		n++;
		if (strcmp(root, "/") == 0 &&
		    (strncmp(fstype, "ext", 3) == 0 || strcmp(fstype, "xfs") == 0 ||
		     strcmp(fstype, "btrfs") == 0)) {
			verdict(o, true, "%s is a whole %s", point, fstype);
			fclose(f);
			return;
		}
	}
	fclose(f);
	verdict(o, false, "none of %d mounts is a whole disk file system", n);
}

/* Any cgroup.procs the container can reach, its own or a parent's, taken for writing. */
static bool writable_procs_under(const char *dir, char *found, size_t len, int depth)
{
	struct dirent *de;
	DIR *d;
	char p[512];
	int fd;
	bool hit = false;

	if (depth > 6 || (d = opendir(dir)) == NULL)
		return false;
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) >= 0) {
		close(fd);
		snprintf(found, len, "%s", p);
		hit = true;
	}
	while (!hit && (de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		hit = writable_procs_under(p, found, len, depth + 1);
	}
	closedir(d);
	return hit;
}

static void cgroup_procs(struct outcome *o)
{
	char found[512];

	tried(o, "to open any cgroup.procs under /sys/fs/cgroup, or a parent's, for writing");
	if (writable_procs_under("/sys/fs/cgroup", found, sizeof(found), 0) ||
	    writable_procs_under("/sys/fs/cgroup/..", found, sizeof(found), 5))
		verdict(o, true, "%s opened for writing", found);
	else
		verdict(o, false, "no cgroup.procs opens for writing");
}

/* Each file of a list opened with FLAGS: contained when none opens, or when an open one
 * reads empty (a path masked with /dev/null or an empty tmpfs). */
static void files_closed(struct outcome *o, const char *what, int flags, const char *const *paths)
{
	size_t i;
	int fd;
	char buf[64];

	tried(o, "%s", what);
	for (i = 0; paths[i] != NULL; i++) {
		fd = open(paths[i], flags | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (flags == O_RDONLY) {
			struct stat st;
			ssize_t n = 0;

			if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
				DIR *d = fdopendir(fd);
				struct dirent *de;

				while (d != NULL && (de = readdir(d)) != NULL)
					n += de->d_name[0] != '.';
				if (d != NULL)
					closedir(d);
				else
					close(fd);
			} else {
				n = read(fd, buf, sizeof(buf));
				close(fd);
			}
			if (n <= 0)
				continue;
			verdict(o, true, "%s opened and gave %zd bytes or entries", paths[i], n);
			return;
		}
		close(fd);
		verdict(o, true, "%s opened for writing", paths[i]);
		return;
	}
	verdict(o, false, "none opens%s", flags == O_RDONLY ? " with anything in it" : "");
}

static void sys_writes(struct outcome *o)
{
	static const char *const p[] = { "/sys/kernel/uevent_helper", "/sys/kernel/mm/ksm/run",
					 "/sys/class/net/lo/mtu", "/sys/power/state", NULL };

	files_closed(o, "to open files of /sys for writing", O_WRONLY, p);
}

static void core_pattern(struct outcome *o)
{
	static const char *const p[] = { "/proc/sys/kernel/core_pattern", NULL };

	files_closed(o, "to open /proc/sys/kernel/core_pattern for writing", O_WRONLY, p);
}

static void sysrq(struct outcome *o)
{
	static const char *const p[] = { "/proc/sysrq-trigger", NULL };

	files_closed(o, "to open /proc/sysrq-trigger for writing", O_WRONLY, p);
}

static void kernel_reads(struct outcome *o)
{
	static const char *const p[] = { "/proc/kcore", "/proc/keys", "/proc/timer_list",
					 "/proc/sched_debug", "/sys/firmware", NULL };

	files_closed(o, "to read /proc/kcore, /proc/keys, /proc/timer_list, /proc/sched_debug "
			"and /sys/firmware", O_RDONLY, p);
}

static void interrupts(struct outcome *o)
{
	static const char *const p[] = { "/proc/interrupts", NULL };

	files_closed(o, "to read /proc/interrupts", O_RDONLY, p);
}

static void kmsg(struct outcome *o)
{
	tried(o, "to open /dev/kmsg, and to read the kernel log with syslog(2)");
	if (open("/dev/kmsg", O_RDONLY | O_CLOEXEC | O_NONBLOCK) >= 0) {
		verdict(o, true, "/dev/kmsg opened");
		return;
	}
	/* SYSLOG_ACTION_SIZE_BUFFER */
	refused(o, syscall(SYS_syslog, 10, NULL, 0), "syslog(SIZE_BUFFER)");
}

/* Device nodes in /dev and its subdirectories beyond the standard ones: a disk, a virtio
 * port or console of the VM's (vport*, hvc*), vsock, kvm, mem. */
static void dev_scan(struct outcome *o)
{
	static const char *const allowed[] = { "null", "zero", "full", "random", "urandom", "tty",
					       "ptmx", "console", NULL };
	struct dirent *de;
	DIR *d = opendir("/dev");
	int n = 0;

	tried(o, "/dev for device nodes beyond null, zero, full, random, urandom, tty, ptmx and "
		 "console");
	while (d != NULL && (de = readdir(d)) != NULL) {
		struct stat st;
		char p[300];
		size_t i;

		snprintf(p, sizeof(p), "/dev/%s", de->d_name);
		if (lstat(p, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
			continue;
		for (i = 0; allowed[i] != NULL && strcmp(allowed[i], de->d_name) != 0; i++)
			;
		if (allowed[i] == NULL) {
			verdict(o, true, "%s is a device %u:%u", p, major(st.st_rdev),
				minor(st.st_rdev));
			closedir(d);
			return;
		}
		n++;
	}
	if (d != NULL)
		closedir(d);
	verdict(o, false, "only the %d standard devices", n);
}

/* ---- privilege ---------------------------------------------------------------------------- */

static void mknod_char(struct outcome *o)
{
	tried(o, "mknod of char 1:1 (/dev/mem) in /tmp");
	refused(o, mknod("/tmp/mem", S_IFCHR | 0600, makedev(1, 1)), "mknod c 1:1");
}

static void mknod_block(struct outcome *o)
{
	tried(o, "mknod of block 8:0 (/dev/sda) in /tmp");
	refused(o, mknod("/tmp/sda", S_IFBLK | 0600, makedev(8, 0)), "mknod b 8:0");
}

static void do_mount(struct outcome *o)
{
	mkdir("/tmp/m", 0700);
	tried(o, "mount(2) of a tmpfs on /tmp/m");
	refused(o, mount("none", "/tmp/m", "tmpfs", 0, NULL), "mount tmpfs");
}

static void do_fsopen(struct outcome *o)
{
	tried(o, "fsopen(\"tmpfs\")");
	refused(o, syscall(SYS_fsopen, "tmpfs", 0), "fsopen");
}

static void do_open_tree(struct outcome *o)
{
	tried(o, "open_tree(/, OPEN_TREE_CLONE)");
	refused(o, syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */), "open_tree");
}

static void unshare_user(struct outcome *o)
{
	tried(o, "unshare(CLONE_NEWUSER), as unshare -Ur does");
	refused(o, unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)");
}

static void clone3_user(struct outcome *o)
{
	struct {
		unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack,
			stack_size, tls;
	} args = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
	long rc;

	tried(o, "clone3 with CLONE_NEWUSER");
	rc = syscall(SYS_clone3, &args, sizeof(args));
	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	refused(o, rc, "clone3(CLONE_NEWUSER)");
}

static void do_setns(struct outcome *o)
{
	int fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);

	tried(o, "setns into PID 1's mount namespace");
	if (fd < 0) {
		verdict(o, false, "open: %s", strerrorname_np(errno));
		return;
	}
	refused(o, setns(fd, 0), "setns");
	close(fd);
}

/* A sibling: a child that sleeps. */
static pid_t sibling(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void end_sibling(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void do_ptrace(struct outcome *o)
{
	pid_t pid = sibling();

	tried(o, "ptrace(PTRACE_ATTACH) of a sibling process");
	refused(o, syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, pid, 0, 0), "PTRACE_ATTACH");
	end_sibling(pid);
}

static void vm_readv(struct outcome *o)
{
	static char secret[16] = "sibling";
	char buf[16];
	struct iovec local = { buf, sizeof(buf) }, remote = { secret, sizeof(secret) };
	pid_t pid = sibling();

	tried(o, "process_vm_readv of a sibling's memory");
	refused(o, syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0),
		"process_vm_readv");
	end_sibling(pid);
}

static void keys(struct outcome *o)
{
	long a, k;

	tried(o, "add_key and keyctl(KEYCTL_GET_KEYRING_ID)");
	a = syscall(SYS_add_key, "user", "redteam", "x", 1, -2 /* KEY_SPEC_PROCESS_KEYRING */);
	if (a >= 0) {
		verdict(o, true, "add_key made key %ld", a);
		return;
	}
	k = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
	refused(o, k, "keyctl");
}

static void module(struct outcome *o)
{
	int fd = open("/attack", O_RDONLY | O_CLOEXEC);

	tried(o, "finit_module of a file");
	refused(o, syscall(SYS_finit_module, fd, "", 0), "finit_module");
	if (fd >= 0)
		close(fd);
}

static void kernel_surfaces(struct outcome *o)
{
	char attr[128] = { 0 };
	long rc;

	tried(o, "bpf(BPF_PROG_LOAD), perf_event_open, userfaultfd and io_uring_setup");
	if ((rc = syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, attr, sizeof(attr))) >= 0 ||
	    (rc = syscall(SYS_perf_event_open, attr, 0, -1, -1, 0)) >= 0 ||
	    (rc = syscall(SYS_userfaultfd, 0)) >= 0 ||
	    (rc = syscall(SYS_io_uring_setup, 1, attr)) >= 0) {
		verdict(o, true, "a call returned %ld", rc);
		return;
	}
	/* the first three may fail on their bad arguments; what errno says is that they ran */
	refused(o, -1, "");
}

static void do_clock(struct outcome *o)
{
	struct timespec now;
	struct timex tx = { .modes = ADJ_OFFSET, .offset = 1 };

	tried(o, "clock_settime(CLOCK_REALTIME) and adjtimex(ADJ_OFFSET)");
	clock_gettime(CLOCK_REALTIME, &now);
	if (clock_settime(CLOCK_REALTIME, &now) == 0) {
		verdict(o, true, "clock_settime succeeded");
		return;
	}
	refused(o, adjtimex(&tx), "adjtimex(ADJ_OFFSET)");
}

static void hostname(struct outcome *o)
{
	tried(o, "sethostname");
	refused(o, sethostname("redteam", 7), "sethostname");
}

/* A setuid-root (or file-capability) binary, exec'd: it must run as the caller, uid 1000,
 * with no capability, or not run at all. */
static void exec_gains(struct outcome *o, const char *path, const char *what)
{
	char line[128];
	FILE *f;
	int pipefd[2], status;
	pid_t pid;

	tried(o, "%s", what);
	if (access(path, X_OK) != 0) {
		verdict(o, true, "%s is missing: the test did not prepare it", path);
		return;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		verdict(o, true, "pipe or fork: %s", strerrorname_np(errno));
		return;
	}
	if (pid == 0) {
		dup2(pipefd[1], 1);
		execl(path, path, "ids", (char *)NULL);
		printf("exec refused (%s)\n", strerrorname_np(errno));
		_exit(127);
	}
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	if (f == NULL || fgets(line, sizeof(line), f) == NULL)
		snprintf(line, sizeof(line), "nothing");
	line[strcspn(line, "\n")] = '\0';
	if (f != NULL)
		fclose(f);
	waitpid(pid, &status, 0);
	/* a refused exec gains nothing either */
	verdict(o, strcmp(line, "euid=1000 caps=0") != 0 && strncmp(line, "exec refused", 12) != 0,
		"the child says %s", line);
}

static void setuid_root(struct outcome *o)
{
	exec_gains(o, "/attack-suid", "exec of a setuid-root copy of this program, as uid 1000");
}

static void file_caps(struct outcome *o)
{
	exec_gains(o, "/attack-fcaps", "exec of a copy with every file capability, as uid 1000");
}

/* ---- sockets and network ------------------------------------------------------------------ */

static void odd_families(struct outcome *o)
{
	static const struct {
		int family, type, proto;
		const char *name;
	} f[] = {
		{ AF_ALG, SOCK_SEQPACKET, 0, "AF_ALG" },
		{ AF_PACKET, SOCK_RAW, 0, "AF_PACKET" },
		{ AF_VSOCK, SOCK_STREAM, 0, "AF_VSOCK" },
		{ AF_NETLINK, SOCK_RAW, NETLINK_XFRM, "NETLINK_XFRM" },
		{ AF_KEY, SOCK_RAW, 2, "AF_KEY" },
		{ AF_TIPC, SOCK_RDM, 0, "AF_TIPC" },
		{ AF_RDS, SOCK_SEQPACKET, 0, "AF_RDS" },
		{ AF_BLUETOOTH, SOCK_RAW, 0, "AF_BLUETOOTH" },
		{ AF_CAN, SOCK_RAW, 1, "AF_CAN" },
		{ AF_INET, SOCK_RAW, IPPROTO_RAW, "AF_INET raw" },
		{ AF_INET6, SOCK_PACKET, 0, "SOCK_PACKET" },
	};
	size_t i;
	int fd;

	tried(o, "socket() of AF_ALG, AF_PACKET, AF_VSOCK, NETLINK_XFRM, AF_KEY, AF_TIPC, "
		 "AF_RDS, AF_BLUETOOTH, AF_CAN and raw IP");
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		fd = socket(f[i].family, f[i].type | SOCK_CLOEXEC, f[i].proto);
		if (fd >= 0) {
			close(fd);
			verdict(o, true, "a %s socket was made", f[i].name);
			return;
		}
	}
	verdict(o, false, "every one refused");
}

static void only_lo(struct outcome *o)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	char names[160] = "";

	tried(o, "to list the network interfaces");
	if (ifs == NULL) {
		verdict(o, false, "if_nameindex: %s", strerrorname_np(errno));
		return;
	}
	for (i = ifs; i->if_index != 0; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 names[0] ? "," : "", i->if_name);
	if_freenameindex(ifs);
	verdict(o, strcmp(names, "lo") != 0, "interfaces: %s", names);
}

/* A UDP connect asks the routing table and sends nothing. */
static void route_to(struct outcome *o, const char *addr, int port, const char *what)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	tried(o, "%s", what);
	inet_pton(AF_INET, addr, &sin.sin_addr);
	if (fd < 0) {
		verdict(o, false, "socket: %s", strerrorname_np(errno));
		return;
	}
	refused(o, connect(fd, (struct sockaddr *)&sin, sizeof(sin)), "a route");
	close(fd);
}

static void metadata(struct outcome *o)
{
	route_to(o, "169.254.169.254", 80, "a route to 169.254.169.254 (UDP connect, nothing sent)");
}

static void dns(struct outcome *o)
{
	route_to(o, "10.0.0.53", 53, "a route to a DNS server at 10.0.0.53 (UDP connect, nothing sent)");
}

/* ---- exhaustion --------------------------------------------------------------------------- */

/* Children that wait on a pipe and end when it closes, until fork fails. */
static void fork_bomb(struct outcome *o)
{
	int p[2], n = 0, e = 0;
	char c;

	tried(o, "to fork 100000 processes");
	if (pipe2(p, O_CLOEXEC) < 0) {
		verdict(o, true, "pipe: %s", strerrorname_np(errno));
		return;
	}
	for (; n < 100000; n++) {
		pid_t pid = fork();

		if (pid == 0) {
			close(p[1]);
			(void)!read(p[0], &c, 1);
			_exit(0);
		}
		if (pid < 0) {
			e = errno;
			break;
		}
	}
	close(p[0]);
	close(p[1]);
	while (wait(NULL) > 0)
		;
	verdict(o, e != EAGAIN, "fork failed with %s after %d children", e ? strerrorname_np(e) : "-",
		n);
}

static void *parked(void *arg)
{
	pause();
	return arg;
}

static void thread_bomb(struct outcome *o)
{
	pthread_attr_t a;
	pthread_t t;
	int n = 0, e = 0;
	pid_t pid;
	int status;
	char line[96] = "";
	int p[2];

	tried(o, "to start 100000 threads");
	if (pipe(p) < 0 || (pid = fork()) < 0) {
		verdict(o, true, "pipe or fork: %s", strerrorname_np(errno));
		return;
	}
	if (pid == 0) {
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 65536);
		for (; n < 100000; n++)
			if ((e = pthread_create(&t, &a, parked, NULL)) != 0)
				break;
		dprintf(p[1], "%d %d\n", n, e);
		_exit(0);
	}
	close(p[1]);
	(void)!read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	waitpid(pid, &status, 0);
	if (sscanf(line, "%d %d", &n, &e) != 2)
		verdict(o, false, "the thread starter died (status %#x)", status);
	else
		verdict(o, e != EAGAIN, "pthread_create failed with %s after %d threads",
			e ? strerrorname_np(e) : "-", n);
}

/* A child touches memory until something stops it: contained when the kernel kills it (OOM in
 * its own cgroup) and this process, its neighbour in the cgroup, lives on. */
static void memory_bomb(struct outcome *o)
{
	int status;
	pid_t pid;

	tried(o, "to touch 8 GiB of memory in a child");
	pid = fork();
	if (pid == 0) {
		for (size_t i = 0; i < 8192; i++) {
			char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (m == MAP_FAILED)
				_exit(3);
			memset(m, 0x5a, 1 << 20);
		}
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		verdict(o, true, "fork or wait: %s", strerrorname_np(errno));
		return;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		verdict(o, false, "the child was killed (SIGKILL), its neighbour lives");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		verdict(o, false, "mmap failed (ENOMEM)");
	else
		verdict(o, true, "the child ended with status %#x", status);
}

/* Files of 512 KiB (under the 1 MiB RLIMIT_FSIZE the test sets) until the file system refuses:
 * contained when it says it is full. */
static void disk_bomb(struct outcome *o)
{
	static char block[1 << 16];
	long long total = 0;
	int files = 0, e = 0, fd, i;
	char p[64];

	tried(o, "to write 8 GiB into /tmp, in files of 512 KiB");
	mkdir("/tmp/disk", 0700);
	while (e == 0 && total < (8LL << 30)) {
		snprintf(p, sizeof(p), "/tmp/disk/%d", files++);
		if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
			e = errno;
			break;
		}
		for (i = 0; i < 8 && e == 0; i++) {
			ssize_t n = write(fd, block, sizeof(block));

			if (n > 0)
				total += n;
			else
				e = n < 0 ? errno : ENOSPC;
		}
		close(fd);
	}
	verdict(o, e != ENOSPC, "%s after %lld MiB", e ? strerrorname_np(e) : "no error", total >> 20);
	while (files-- > 0) {
		snprintf(p, sizeof(p), "/tmp/disk/%d", files);
		unlink(p);
	}
	rmdir("/tmp/disk");
}

static void inode_bomb(struct outcome *o)
{
	char p[64];
	int n, e = 0, fd;

	tried(o, "to make 10000000 empty files in /tmp");
	mkdir("/tmp/inodes", 0700);
	for (n = 0; n < 10000000; n++) {
		snprintf(p, sizeof(p), "/tmp/inodes/%d", n);
		if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
			e = errno;
			break;
		}
		close(fd);
	}
	verdict(o, e != ENOSPC, "open failed with %s after %d files", e ? strerrorname_np(e) : "-", n);
	while (n-- > 0) {
		snprintf(p, sizeof(p), "/tmp/inodes/%d", n);
		unlink(p);
	}
	rmdir("/tmp/inodes");
}

static void root_readonly(struct outcome *o)
{
	tried(o, "to create /etc/bomb and /bin/bomb in the root");
	if (open("/etc/bomb", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0) {
		verdict(o, true, "/etc/bomb was made");
		return;
	}
	refused(o, open("/bin/bomb", O_WRONLY | O_CREAT | O_CLOEXEC, 0600), "/bin/bomb made");
}

static void nofile(struct outcome *o)
{
	int n = 0, e = 0, fd;

	tried(o, "to open 1000000 files");
	for (; n < 1000000; n++)
		if ((fd = open("/", O_PATH | O_CLOEXEC)) < 0) {
			e = errno;
			break;
		}
	verdict(o, e != EMFILE, "open failed with %s after %d", e ? strerrorname_np(e) : "-", n);
	close_range(3, ~0U, 0);
}

/* Past RLIMIT_FSIZE a write fails with EFBIG (SIGXFSZ, ignored here, would end us). */
static void fsize(struct outcome *o)
{
	static char block[1 << 16];
	long long total = 0;
	ssize_t n;
	int fd = open("/tmp/big", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), e;

	tried(o, "to write a 64 MiB file past RLIMIT_FSIZE");
	signal(SIGXFSZ, SIG_IGN);
	while (fd >= 0 && total < (64LL << 20) && (n = write(fd, block, sizeof(block))) > 0)
		total += n;
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink("/tmp/big");
	verdict(o, e != EFBIG, "write failed with %s after %lld KiB", strerrorname_np(e),
		total >> 10);
}

/* ---- isolation between sandboxes ---------------------------------------------------------- */

/* What "hold" leaves for a neighbour to find: a SysV shared memory segment and message queue
 * of this key, a file in /dev/shm, an abstract unix socket, and a process of this name. */
#define PEER_KEY 0x5eed
#define PEER_SHM "/dev/shm/redteam-peer"
#define PEER_SOCKET "redteam-peer"
#define PEER_ARG "redteam-peer-holder"

static socklen_t abstract_addr(struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, PEER_SOCKET, strlen(PEER_SOCKET));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(PEER_SOCKET));
}

static int hold(void)
{
	struct sockaddr_un sun;
	socklen_t len = abstract_addr(&sun);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (shmget(PEER_KEY, 4096, IPC_CREAT | 0666) < 0 || msgget(PEER_KEY, IPC_CREAT | 0666) < 0 ||
	    close(open(PEER_SHM, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) < 0 || fd < 0 ||
	    bind(fd, (struct sockaddr *)&sun, len) < 0 || listen(fd, 1) < 0) {
		printf("hold: %s\n", strerror(errno));
		return 1;
	}
	printf("holding\n");
	for (;;)
		pause();
}

static void peer_procs(struct outcome *o)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	char p[300], cmd[256];

	tried(o, "to find the neighbour's process in /proc");
	while (d != NULL && (de = readdir(d)) != NULL) {
		FILE *f;
		size_t n;

		snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
		if ((f = fopen(p, "re")) == NULL)
			continue;
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		cmd[n] = '\0';
		for (size_t i = 0; i < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		if (strstr(cmd, PEER_ARG) != NULL) {
			verdict(o, true, "process %s is the neighbour's", de->d_name);
			closedir(d);
			return;
		}
	}
	if (d != NULL)
		closedir(d);
	verdict(o, false, "no process of the neighbour's");
}

static void peer_sysv(struct outcome *o)
{
	tried(o, "shmget and msgget of the neighbour's key %#x", PEER_KEY);
	if (shmget(PEER_KEY, 0, 0) >= 0) {
		verdict(o, true, "the neighbour's shared memory segment was found");
		return;
	}
	refused(o, msgget(PEER_KEY, 0), "the neighbour's message queue found");
}

static void peer_shm(struct outcome *o)
{
	tried(o, "to open the neighbour's " PEER_SHM);
	refused(o, open(PEER_SHM, O_RDONLY | O_CLOEXEC), "open");
}

static void peer_abstract(struct outcome *o)
{
	struct sockaddr_un sun;
	socklen_t len = abstract_addr(&sun);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	tried(o, "to connect to the neighbour's abstract socket @" PEER_SOCKET);
	refused(o, connect(fd, (struct sockaddr *)&sun, len), "connect");
	close(fd);
}

/* ---- the VMM's side: ports and sockets ---------------------------------------------------- */

/* PATH opens for reading and writing: the verdict says so. */
static bool opens(struct outcome *o, const char *path)
{
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	verdict(o, true, "%s opened", path);
	return true;
}

/* Every virtio-serial port and hvc console the kernel has is out of reach: the agent holds
 * the guest's ports, and the workload's /dev has none of them, nor may it make one. */
static void vport_scan(struct outcome *o)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *de;
	char p[300], dev[32];
	unsigned maj, min, listed = 0;

	tried(o, "to open each virtio port and hvc console (/sys/class/virtio-ports, /dev/vport*, "
		 "/dev/hvc0-7), and to mknod each port's number");
	while (d != NULL && (de = readdir(d)) != NULL) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		listed++;
		snprintf(p, sizeof(p), "/dev/%s", de->d_name);
		if (opens(o, p)) {
			closedir(d);
			return;
		}
		snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/dev", de->d_name);
		if ((f = fopen(p, "re")) == NULL)
			continue;
		if (fgets(dev, sizeof(dev), f) != NULL && sscanf(dev, "%u:%u", &maj, &min) == 2 &&
		    mknod("/tmp/redteam-vport", S_IFCHR | 0600, makedev(maj, min)) == 0) {
			unlink("/tmp/redteam-vport");
			fclose(f);
			closedir(d);
			verdict(o, true, "mknod of %s's number %u:%u", de->d_name, maj, min);
			return;
		}
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	for (int i = 0; i < 8; i++) {
		snprintf(p, sizeof(p), "/dev/hvc%d", i);
		if (opens(o, p))
			return;
	}
	verdict(o, false, "%u ports listed, none opened or made", listed);
}

/* No vsock: moat's guests have none (the agent talks over virtio-serial), and a container
 * may not make the socket; if one were made, no port of the host or the guest answers. */
static void vsock_scan(struct outcome *o)
{
	struct sockaddr_vm svm = { .svm_family = AF_VSOCK };
	static const unsigned cids[] = { VMADDR_CID_HOST, VMADDR_CID_LOCAL, VMADDR_CID_ANY };
	int fd;

	tried(o, "AF_VSOCK connects to ports 0-255 of the host (CID 2), CID 1 and any CID");
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		verdict(o, false, "no vsock socket: %s", strerrorname_np(errno));
		return;
	}
	close(fd);
	for (size_t c = 0; c < sizeof(cids) / sizeof(cids[0]); c++)
		for (unsigned port = 0; port < 256; port++) {
			struct timeval wait = { 0, 20000 };
			bool connected;

			svm.svm_cid = cids[c];
			svm.svm_port = port;
			if ((fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
				continue;
			setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT_NEW, &wait, sizeof(wait));
			connected = connect(fd, (struct sockaddr *)&svm, sizeof(svm)) == 0;
			close(fd);
			if (connected) {
				verdict(o, true, "connected to CID %u port %u", cids[c], port);
				return;
			}
		}
	verdict(o, false, "a socket was made, but no port answered");
}

/* A stream, a datagram and a seqpacket socket connect to the unix address SUN of LEN bytes:
 * true if one connected. */
static bool connect_unix(const struct sockaddr_un *sun, socklen_t len)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		int fd = socket(AF_UNIX, types[t] | SOCK_CLOEXEC, 0), rc;

		if (fd < 0)
			continue;
		rc = connect(fd, (const struct sockaddr *)sun, len);
		close(fd);
		if (rc == 0)
			return true;
	}
	return false;
}

static bool connect_path(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sun.sun_path))
		return false;
	memcpy(sun.sun_path, path, strlen(path));
	return connect_unix(&sun, sizeof(sun));
}

/* A socket file under DIR (not /proc, /sys or /dev) that connects, into FOUND. */
static bool socket_file_under(const char *dir, char *found, size_t len, int depth)
{
	DIR *d;
	struct dirent *de;
	char p[512];
	bool hit = false;

	if (depth > 8 || strcmp(dir, "/proc") == 0 || strcmp(dir, "/sys") == 0 ||
	    strcmp(dir, "/dev") == 0 || (d = opendir(dir)) == NULL)
		return false;
	while (!hit && (de = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, de->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISSOCK(st.st_mode) && connect_path(p)) {
			snprintf(found, len, "%s", p);
			hit = true;
		} else if (S_ISDIR(st.st_mode)) {
			hit = socket_file_under(p, found, len, depth + 1);
		}
	}
	closedir(d);
	return hit;
}

/* The host's sockets (the supervisor's, named in REDTEAM_SOCKETS by the test), any socket
 * file the workload can see, and every abstract socket of its network namespace
 * (/proc/net/unix) refuse a connection: none is the VMM's, the supervisor's or the agent's. */
static void host_sockets(struct outcome *o)
{
	char list[1024], found[512] = "", line[512];
	const char *env = getenv("REDTEAM_SOCKETS");
	unsigned abstract = 0;
	FILE *f;

	tried(o, "to connect to the supervisor's socket by its host path, to every socket file "
		 "under /, and to every abstract socket in /proc/net/unix");
	snprintf(list, sizeof(list), "%s", env != NULL ? env : "");
	for (char *save = NULL, *p = strtok_r(list, ":", &save); p != NULL;
	     p = strtok_r(NULL, ":", &save))
		if (connect_path(p)) {
			verdict(o, true, "connected to %s", p);
			return;
		}
	if (socket_file_under("/", found, sizeof(found), 0)) {
		verdict(o, true, "connected to %s", found);
		return;
	}
	f = fopen("/proc/net/unix", "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		char *at = strchr(line, '@');
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		size_t n;

		if (at == NULL)
			continue;
		at[strcspn(at, "\n")] = '\0';
		n = strlen(at + 1);
		if (n >= sizeof(sun.sun_path) - 1)
			continue;
		abstract++;
		memcpy(sun.sun_path + 1, at + 1, n);
		if (connect_unix(&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
			fclose(f);
			verdict(o, true, "connected to the abstract socket %s", at);
			return;
		}
	}
	if (f != NULL)
		fclose(f);
	verdict(o, false, "no socket connected (%u abstract ones listed)", abstract);
}

/* ---- the table ---------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(struct outcome *);
} cases[] = {
	{ "proc-roots", proc_roots },
	{ "mountinfo", mountinfo_host_fs },
	{ "cgroup-procs", cgroup_procs },
	{ "sys-write", sys_writes },
	{ "core-pattern", core_pattern },
	{ "sysrq", sysrq },
	{ "kernel-reads", kernel_reads },
	{ "interrupts", interrupts },
	{ "kmsg", kmsg },
	{ "dev-scan", dev_scan },
	{ "mknod-char", mknod_char },
	{ "mknod-block", mknod_block },
	{ "mount", do_mount },
	{ "fsopen", do_fsopen },
	{ "open-tree", do_open_tree },
	{ "unshare-user", unshare_user },
	{ "clone3-user", clone3_user },
	{ "setns", do_setns },
	{ "ptrace", do_ptrace },
	{ "vm-readv", vm_readv },
	{ "keys", keys },
	{ "module", module },
	{ "kernel-surfaces", kernel_surfaces },
	{ "clock", do_clock },
	{ "hostname", hostname },
	{ "setuid", setuid_root },
	{ "file-caps", file_caps },
	{ "families", odd_families },
	{ "only-lo", only_lo },
	{ "metadata", metadata },
	{ "dns", dns },
	{ "fork-bomb", fork_bomb },
	{ "thread-bomb", thread_bomb },
	{ "memory-bomb", memory_bomb },
	{ "disk-bomb", disk_bomb },
	{ "inode-bomb", inode_bomb },
	{ "root-readonly", root_readonly },
	{ "nofile", nofile },
	{ "fsize", fsize },
	{ "peer-procs", peer_procs },
	{ "peer-sysv", peer_sysv },
	{ "peer-shm", peer_shm },
	{ "peer-abstract", peer_abstract },
	{ "vport-scan", vport_scan },
	{ "vsock-scan", vsock_scan },
	{ "host-sockets", host_sockets },
};

/* "ids": what a setuid or file-capability copy prints of itself. */
static int print_ids(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = ~0ULL;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		sscanf(line, "CapEff: %llx", &eff);
	if (f != NULL)
		fclose(f);
	printf("euid=%u caps=%llx\n", (unsigned)geteuid(), eff);
	return 0;
}

/* "probe N": N sleeps of 1 ms, and how late each woke: a neighbour's view of a CPU hog. */
static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static int probe(int n)
{
	long *late = n > 0 ? calloc((size_t)n, sizeof(*late)) : NULL;
	struct timespec ms = { 0, 1000000 }, t0, t1;

	if (late == NULL)
		return 1;
	for (int i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		late[i] = ((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec - 1000000) /
			  1000;
	}
	qsort(late, (size_t)n, sizeof(*late), cmp_long);
	printf("probe: %d sleeps of 1 ms woke late by p50 %ld us, p99 %ld us, max %ld us\n", n,
	       late[n / 2], late[n * 99 / 100], late[n - 1]);
	free(late);
	return 0;
}

int main(int argc, char **argv)
{
	int i;
	size_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "ids") == 0)
		return print_ids();
	if (argc == 3 && strcmp(argv[1], "hold") == 0 && strcmp(argv[2], PEER_ARG) == 0)
		return hold();
	if (argc == 3 && strcmp(argv[1], "probe") == 0)
		return probe(atoi(argv[2]));
	for (i = 1; i < argc; i++) {
		struct outcome o = { "", "", false };

		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
			if (strcmp(cases[c].name, argv[i]) == 0)
				break;
		if (c == sizeof(cases) / sizeof(cases[0])) {
			printf("%s: no such case\n", argv[i]);
			continue;
		}
		cases[c].fn(&o);
		printf("%s: tried %s; %s: %s\n", argv[i], o.tried, o.escaped ? "ESCAPED" : "contained",
		       o.said);
	}
	return 0;
}
