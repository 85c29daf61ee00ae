/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: agent-smoke, a developer's check of the guest agent in a real VM.
 *
 * It builds a busybox rootfs, boots QEMU's microvm with moat's kernel and
 * initramfs once per case, on the command line moat's supervisor uses
 * (vm-launch.h: virtio-fs or 9p, a debug-exit device for the cases that want
 * one), speaks the protocol of proto.h to the agent as the supervisor will,
 * and checks what comes back. TAP output.
 *
 *   agent-smoke --kernel K --initrd I [--fs virtiofs|9p|both] [--busybox B]
 *               [--only NAME] [--verbose]
 *
 * Needs root (virtiofsd, 9p with security_model=none), qemu-system-x86_64
 * and busybox (static). Each VM's files (console log, QEMU's output) are
 * kept under $TMPDIR/moat-smoke.* when its case fails.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "utils.h"
#include "vm-launch.h"

#define QEMU "qemu-system-x86_64"
#define VIRTIOFSD "/usr/lib/qemu/virtiofsd"
#define MAX_IDS 8
#define BOOT_TIMEOUT_MS 30000
#define STEP_TIMEOUT_MS 20000

struct opts {
	const char *kernel, *initrd, *busybox, *only, *fs;
	char rootfs[256];
	bool verbose;
};

struct result {
	struct moat_buf out[2]; /* stdout, stderr */
	bool eof[2];
	bool started;
	bool exited;
	int code;
	char error[MOAT_PROTO_MAX_MESSAGE + 1];
	int64_t window; /* stdin the agent will still take */
};

struct vm {
	const struct opts *o;
	const char *fs;
	pid_t qemu, vfsd;
	int sock;
	char dir[128];
	struct moat_buf in, out;
	bool ready, closed;
	char release[MOAT_PROTO_MAX_RELEASE + 1];
	char agent_error[MOAT_PROTO_MAX_MESSAGE + 1];
	struct result r[MAX_IDS];
	int qemu_status;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* ---- the rootfs ------------------------------------------------------------------------------ */

static int run_cmd(char *const argv[], const char *out_file)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (out_file) {
			int fd = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			dup2(fd, 1);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* bin/busybox and a link per applet; a file to bind; a symlink that
 * tries to lead a mount out of the rootfs. */
static int make_rootfs(struct opts *o)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[512], list[300];
	FILE *f;
	char line[128];

	snprintf(o->rootfs, sizeof(o->rootfs), "%s/moat-smoke-root.XXXXXX", tmp);
	if (mkdtemp(o->rootfs) == NULL)
		return -1;
	chmod(o->rootfs, 0755);
	static const char *dirs[] = { "bin", "etc", "etc/moat-data", "proc",
				      "sys", "dev", "tmp",           "mnt" };
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", o->rootfs, dirs[i]);
		mkdir(path, 0755);
	}
	snprintf(path, sizeof(path), "%s/bin/busybox", o->rootfs);
	char *cp[] = { "cp", (char *)o->busybox, path, NULL };
	if (run_cmd(cp, NULL) != 0)
		return -1;
	snprintf(list, sizeof(list), "%s/applets", o->rootfs);
	char *ls[] = { path, "--list", NULL };
	if (run_cmd(ls, list) != 0)
		return -1;
	f = fopen(list, "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0' || strcmp(line, "busybox") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/bin/%s", o->rootfs, line);
		if (symlink("busybox", path) < 0 && errno != EEXIST)
			return -1;
	}
	if (f)
		fclose(f);
	unlink(list);
	snprintf(path, sizeof(path), "%s/etc/moat-data/hello", o->rootfs);
	write_text(path, "hello-from-bind\n");
	snprintf(path, sizeof(path), "%s/escape", o->rootfs);
	if (symlink("../../../../../mnt", path) < 0)
		return -1;
	return 0;
}

/* ---- the VM ---------------------------------------------------------------------------------- */

/* Fork and exec argv with stdin from /dev/null and its output to log; agent_fd (unless -1)
 * goes where QEMU's command line names the agent's socket. */
static pid_t spawn_logged(char *const argv[], const char *log, int agent_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* out of the way of the fds opened next */
		int agent = agent_fd < 0 ? -1 : fcntl(agent_fd, F_DUPFD, 10);
		int in = open("/dev/null", O_RDONLY),
		    out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		if (agent >= 0)
			dup2(agent, MOAT_VM_QEMU_AGENT_FD);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static bool wait_path(const char *path, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (access(path, F_OK) != 0) {
		if (now_ms() > end)
			return false;
		sleep_ms(5);
	}
	return true;
}

/* virtiofsd, sharing the rootfs on vsock; its output in virtiofsd.log. */
static int start_virtiofsd(struct vm *vm, const char *vsock)
{
	char src[300], sockarg[300], vlog[256];

	snprintf(vlog, sizeof(vlog), "%s/virtiofsd.log", vm->dir);
	snprintf(src, sizeof(src), "source=%s", vm->o->rootfs);
	snprintf(sockarg, sizeof(sockarg), "--socket-path=%s", vsock);
	char *vargv[] = { VIRTIOFSD, sockarg,          "-o", src, "-o", "cache=auto",
			  "-o",      "sandbox=chroot", NULL };
	vm->vfsd = spawn_logged(vargv, vlog, -1);
	return wait_path(vsock, 5000) ? 0 : -1;
}

/* MOAT_SMOKE_QEMU_DEBUG=1: argv and QEMU's log of resets and guest errors in
 * qemu-debug.log. */
static char **with_debug_log(char **argv, const char *dir)
{
	size_t n = 0;

	if (getenv("MOAT_SMOKE_QEMU_DEBUG") == NULL)
		return argv;
	while (argv[n])
		n++;
	argv = xrealloc(argv, (n + 5) * sizeof(*argv));
	argv[n++] = xstrdup("-d");
	argv[n++] = xstrdup("cpu_reset,guest_errors");
	argv[n++] = xstrdup("-D");
	argv[n++] = xasprintf("%s/qemu-debug.log", dir);
	argv[n] = NULL;
	return argv;
}

/* QEMU on the command line moat's supervisor uses (vm-launch.h), one vCPU under TCG, the
 * root through vsock's virtiofsd or else 9p; the guest's console in console.log (with the
 * kernel's messages under --verbose), QEMU's output in qemu.log. vm->sock is the agent's. */
static int start_qemu(struct vm *vm, const char *vsock, bool debugexit)
{
	const char *mem = getenv("MOAT_SMOKE_MEM");
	struct moat_vm_choice choice = { MOAT_ISOLATION_MICROVM, MOAT_VM_ACCEL_TCG,
					 mem ? (uint32_t)strtoul(mem, NULL, 10) : 256, 1 };
	char console[256], qlog[256];
	struct moat_vm_launch l = { .qemu = QEMU,
				    .qemu_fd = -1,
				    .kernel = vm->o->kernel,
				    .initramfs = vm->o->initrd,
				    .rootfs = vm->o->rootfs,
				    .console_log = console,
				    .vm = &choice,
				    .virtiofs_socket = vsock,
				    .debug_exit = debugexit,
				    .kernel_messages = vm->o->verbose };
	char **argv;
	int sp[2];

	snprintf(console, sizeof(console), "%s/console.log", vm->dir);
	snprintf(qlog, sizeof(qlog), "%s/qemu.log", vm->dir);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	argv = with_debug_log(moat_vm_qemu_argv(&l), vm->dir);
	vm->qemu = spawn_logged(argv, qlog, sp[1]);
	moat_vm_argv_free(argv);
	close(sp[1]);
	vm->sock = sp[0];
	fcntl(vm->sock, F_SETFL, O_NONBLOCK);
	return vm->qemu < 0 ? -1 : 0;
}

static int vm_boot(struct vm *vm, const struct opts *o, const char *fs, bool debugexit)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	bool vfs = strcmp(fs, "virtiofs") == 0;
	char vsock[256];

	memset(vm, 0, sizeof(*vm));
	vm->o = o;
	vm->fs = fs;
	vm->sock = -1;
	for (int i = 0; i < MAX_IDS; i++)
		vm->r[i].window = MOAT_PROTO_STDIN_WINDOW;
	snprintf(vm->dir, sizeof(vm->dir), "%s/moat-smoke.XXXXXX", tmp);
	if (mkdtemp(vm->dir) == NULL)
		return -1;
	snprintf(vsock, sizeof(vsock), "%s/vfs.sock", vm->dir);
	if (vfs && start_virtiofsd(vm, vsock) < 0)
		return -1;
	return start_qemu(vm, vfs ? vsock : NULL, debugexit);
}

static void handle(struct vm *vm, struct moat_msg *m)
{
	struct result *r = m->id < MAX_IDS ? &vm->r[m->id] : NULL;

	if (vm->o->verbose)
		fprintf(stderr, "# <- %s id %u\n", moat_proto_type_name(m->type), m->id);
	switch (m->type) {
	case MOAT_MSG_READY:
		vm->ready = true;
		snprintf(vm->release, sizeof(vm->release), "%s", m->u.ready.release);
		return;
	case MOAT_MSG_ERROR:
		if (m->id == 0 || r == NULL)
			snprintf(vm->agent_error, sizeof(vm->agent_error), "%s",
				 m->u.error.message);
		else
			snprintf(r->error, sizeof(r->error), "%s", m->u.error.message);
		if (vm->o->verbose)
			fprintf(stderr, "#    error: %s\n", m->u.error.message);
		return;
	default: break;
	}
	if (r == NULL)
		return;
	switch (m->type) {
	case MOAT_MSG_STARTED: r->started = true; break;
	case MOAT_MSG_OUTPUT:
		if (m->u.data.len == 0)
			r->eof[m->u.data.stream - 1] = true;
		else
			moat_buf_append(&r->out[m->u.data.stream - 1], m->u.data.data,
					m->u.data.len);
		break;
	case MOAT_MSG_EXITED:
		r->exited = true;
		r->code = moat_proto_exit_code(&m->u.exited);
		break;
	case MOAT_MSG_CREDIT: r->window += m->u.credit.bytes; break;
	default: break;
	}
}

/* Move bytes both ways for up to ms, handling what arrives. */
static void pump(struct vm *vm, int ms)
{
	struct pollfd pfd = { vm->sock, POLLIN, 0 };
	uint8_t buf[65536];

	if (vm->closed) {
		sleep_ms(ms);
		return;
	}
	if (vm->out.len)
		pfd.events |= POLLOUT;
	if (poll(&pfd, 1, ms) <= 0)
		return;
	if (pfd.revents & POLLOUT) {
		ssize_t w = write(vm->sock, vm->out.data, vm->out.len);

		if (w > 0)
			moat_buf_consume(&vm->out, (size_t)w);
	}
	if (pfd.revents & (POLLIN | POLLHUP)) {
		ssize_t n = read(vm->sock, buf, sizeof(buf));

		if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
			if (vm->o->verbose)
				fprintf(stderr, "# socket closed: %s\n",
					n == 0 ? "end of file" : strerror(errno));
			vm->closed = true;
			return;
		}
		if (n > 0)
			moat_buf_append(&vm->in, buf, (size_t)n);
	}
	while (vm->in.len) {
		moat_error err = MOAT_ERROR_INIT;
		struct moat_msg m;
		size_t used;
		int r = moat_proto_decode(MOAT_PEER_GUEST, vm->in.data, vm->in.len, &used, &m,
					  &err);

		if (r == 0)
			break;
		if (r < 0) {
			fprintf(stderr, "# bad frame from the guest: %s\n", err.msg);
			moat_error_clear(&err);
			if (used == 0) {
				vm->closed = true;
				return;
			}
		} else {
			handle(vm, &m);
			moat_msg_clear(&m);
		}
		moat_buf_consume(&vm->in, used);
	}
}

#define WAIT_FOR(vm, cond, ms)                                      \
	({                                                          \
		uint64_t _end = now_ms() + (ms);                    \
		while (!(cond) && !(vm)->closed && now_ms() < _end) \
			pump((vm), 20);                             \
		(cond);                                             \
	})

static void vm_send(struct vm *vm, const struct moat_msg *m)
{
	moat_error err = MOAT_ERROR_INIT;

	if (vm->o->verbose)
		fprintf(stderr, "# -> %s id %u\n", moat_proto_type_name(m->type), m->id);
	if (moat_proto_encode(MOAT_PEER_HOST, m, &vm->out, &err) < 0) {
		fprintf(stderr, "# encode: %s\n", err.msg);
		moat_error_clear(&err);
	}
	pump(vm, 0);
}

static void send_simple(struct vm *vm, uint16_t type, uint32_t id, uint32_t arg1, uint32_t arg2)
{
	struct moat_msg m = { .type = type, .id = id };

	if (type == MOAT_MSG_SIGNAL)
		m.u.signal.signo = arg1;
	if (type == MOAT_MSG_RESIZE) {
		m.u.resize.winsize.rows = (uint16_t)arg1;
		m.u.resize.winsize.cols = (uint16_t)arg2;
	}
	vm_send(vm, &m);
}

/* Stdin within the agent's window; len 0 closes it. */
static bool send_stdin(struct vm *vm, uint32_t id, const uint8_t *data, size_t len)
{
	struct result *r = &vm->r[id];
	size_t off = 0;

	do {
		size_t n = len - off;

		if (n > MOAT_PROTO_MAX_DATA)
			n = MOAT_PROTO_MAX_DATA;
		if (!WAIT_FOR(vm, r->window >= (int64_t)n, STEP_TIMEOUT_MS))
			return false;
		struct moat_msg m = { .type = MOAT_MSG_STDIN, .id = id };
		m.u.data.data = (uint8_t *)data + off;
		m.u.data.len = n;
		vm_send(vm, &m);
		r->window -= (int64_t)n;
		off += n;
		/* Keep the socket moving so output does not back up meanwhile. */
		while (vm->out.len > (1 << 20) && !vm->closed)
			pump(vm, 20);
	} while (off < len);
	return true;
}

/* SHUTDOWN, then QEMU's exit status (-1 if it had to be killed). */
static int vm_finish(struct vm *vm)
{
	uint64_t end;
	int status = 0;

	if (vm->sock >= 0 && !vm->closed) {
		send_simple(vm, MOAT_MSG_SHUTDOWN, 0, 0, 0);
		WAIT_FOR(vm, vm->out.len == 0, 2000);
	}
	end = now_ms() + 10000;
	if (vm->qemu > 0)
		vm->qemu_status = -1; /* else a case reaped it and set it */
	while (vm->qemu > 0 && now_ms() < end) {
		if (waitpid(vm->qemu, &status, WNOHANG) == vm->qemu) {
			vm->qemu_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			if (vm->o->verbose)
				fprintf(stderr, "# QEMU: wait status 0x%x\n", status);
			vm->qemu = 0;
			break;
		}
		pump(vm, 20);
	}
	if (vm->qemu > 0) {
		fprintf(stderr, "# QEMU did not exit: killed\n");
		kill(vm->qemu, SIGKILL);
		waitpid(vm->qemu, NULL, 0);
	}
	if (vm->vfsd > 0) {
		kill(vm->vfsd, SIGTERM);
		waitpid(vm->vfsd, NULL, 0);
	}
	if (vm->sock >= 0)
		close(vm->sock);
	vm->sock = -1;
	return vm->qemu_status;
}

/* The VM's files go when its case passed. */
static void vm_cleanup(struct vm *vm, bool passed)
{
	if (passed) {
		char *rm[] = { "rm", "-rf", vm->dir, NULL };

		run_cmd(rm, NULL);
	} else {
		fprintf(stderr, "# VM files kept in %s\n", vm->dir);
	}
	for (int i = 0; i < MAX_IDS; i++) {
		moat_buf_free(&vm->r[i].out[0]);
		moat_buf_free(&vm->r[i].out[1]);
	}
	moat_buf_free(&vm->in);
	moat_buf_free(&vm->out);
}

/* ---- specs ------------------------------------------------------------------------------------ */

static char *base_env[] = { "PATH=/bin", "HOME=/", "TERM=xterm" };

/* Docker's default capabilities. */
#define DEFAULT_CAPS                                                                             \
	((1ULL << 0) | (1ULL << 1) | (1ULL << 3) | (1ULL << 4) | (1ULL << 5) | (1ULL << 6) |     \
	 (1ULL << 7) | (1ULL << 8) | (1ULL << 10) | (1ULL << 13) | (1ULL << 18) | (1ULL << 27) | \
	 (1ULL << 29) | (1ULL << 31))

static struct moat_proto_process spec(char **args)
{
	struct moat_proto_process p = { 0 };

	for (p.args = args; args[p.n_args] != NULL;)
		p.n_args++;
	p.env = base_env;
	p.n_env = MOAT_ARRAY_SIZE(base_env);
	p.cwd = "/";
	p.cap_bounding = p.cap_effective = p.cap_permitted = DEFAULT_CAPS;
	return p;
}

static struct moat_proto_mount default_mounts[] = {
	{ "proc", "proc", "/proc", 0x2 | 0x4 | 0x8, NULL }, /* nosuid nodev noexec */
	{ "tmpfs", "tmpfs", "/dev", 0x2 | (1 << 24),
	  "mode=755,size=65536k" }, /* nosuid strictatime */
	{ "devpts", "devpts", "/dev/pts", 0x2 | 0x8, "newinstance,ptmxmode=0666,mode=0620" },
	{ "tmpfs", "shm", "/dev/shm", 0x2 | 0x4 | 0x8, "mode=1777,size=65536k" },
	{ "mqueue", "mqueue", "/dev/mqueue", 0x2 | 0x4 | 0x8, NULL },
	{ "sysfs", "sysfs", "/sys", 0x1 | 0x2 | 0x4 | 0x8, NULL },
	{ "tmpfs", "tmpfs", "/tmp", 0x2 | 0x4, NULL },
};

static void send_start(struct vm *vm, uint32_t id, struct moat_proto_process p,
		       struct moat_proto_mount *mounts, size_t n_mounts, bool ro,
		       const struct moat_proto_winsize *ws)
{
	struct moat_msg m = { .type = MOAT_MSG_START, .id = id };

	m.u.start.process = p;
	m.u.start.mounts = mounts ? mounts : default_mounts;
	m.u.start.n_mounts = mounts ? n_mounts : MOAT_ARRAY_SIZE(default_mounts);
	m.u.start.hostname = "smokebox";
	m.u.start.root_readonly = ro;
	if (ws) {
		m.u.start.has_winsize = true;
		m.u.start.winsize = *ws;
	}
	vm_send(vm, &m);
}

static void send_exec(struct vm *vm, uint32_t id, struct moat_proto_process p)
{
	struct moat_msg m = { .type = MOAT_MSG_EXEC, .id = id };

	m.u.exec.process = p;
	vm_send(vm, &m);
}

/* ---- checks ----------------------------------------------------------------------------------- */

static int failures;

static bool out_has(struct result *r, int stream, const char *s)
{
	struct moat_buf *b = &r->out[stream];

	return b->len > 0 && memmem(b->data, b->len, s, strlen(s)) != NULL;
}

static void show(struct vm *vm)
{
	for (int i = 1; i < MAX_IDS; i++) {
		struct result *r = &vm->r[i];

		if (!r->started && !r->error[0] && !r->out[0].len)
			continue;
		fprintf(stderr, "#  id %d: started=%d exited=%d code=%d error=\"%s\"\n", i,
			r->started, r->exited, r->code, r->error);
		for (int s = 0; s < 2; s++)
			if (r->out[s].len)
				fprintf(stderr, "#   %s: %.*s\n", s ? "stderr" : "stdout",
					(int)(r->out[s].len > 400 ? 400 : r->out[s].len),
					(char *)r->out[s].data);
	}
	if (vm->agent_error[0])
		fprintf(stderr, "#  agent error: %s\n", vm->agent_error);
}

#define CHECK(vm, cond)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			show(vm);                                                                  \
			return false;                                                              \
		}                                                                                  \
	} while (0)

#define EXITED(vm, id) WAIT_FOR(vm, (vm)->r[id].exited, STEP_TIMEOUT_MS)

/* ---- the cases ------------------------------------------------------------------------------- */

static bool case_exit_status(struct vm *vm)
{
	char *args[] = { "sh", "-c", "echo out; echo err >&2; cat /proc/1/comm; exit 3", NULL };

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].started);
	CHECK(vm, vm->r[1].code == 3);
	CHECK(vm, out_has(&vm->r[1], 0, "out\n"));
	CHECK(vm, out_has(&vm->r[1], 0, "init\n"));
	CHECK(vm, vm->r[1].out[1].len == 4 && memcmp(vm->r[1].out[1].data, "err\n", 4) == 0);
	CHECK(vm, vm->r[1].eof[0] && vm->r[1].eof[1]);
	return true;
}

static bool case_signal_kill(struct vm *vm)
{
	char *args[] = { "sh", "-c", "echo ready; exec sleep 100", NULL };

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, out_has(&vm->r[1], 0, "ready"), STEP_TIMEOUT_MS));
	send_simple(vm, MOAT_MSG_SIGNAL, 1, 9, 0);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 128 + 9);
	return true;
}

static bool case_user_caps_limits(struct vm *vm)
{
	char *args[] = {
		"sh", "-c",
		"id; grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status; ulimit -n; umask; pwd",
		NULL
	};
	static uint32_t groups[] = { 10, 20 };
	static struct moat_proto_rlimit rl[] = { { 7, 123, 456 } };
	struct moat_proto_process p = spec(args);
	uint64_t caps = (1ULL << 0) | (1ULL << 10); /* CHOWN, NET_BIND_SERVICE */

	p.uid = 1000;
	p.gid = 1001;
	p.groups = groups;
	p.n_groups = 2;
	p.cap_bounding = p.cap_effective = p.cap_permitted = p.cap_inheritable = p.cap_ambient =
		caps;
	p.rlimits = rl;
	p.n_rlimits = 1;
	p.has_umask = true;
	p.umask = 027;
	p.cwd = "/tmp";
	send_start(vm, 1, p, NULL, 0, false, NULL);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 0);
	CHECK(vm, out_has(&vm->r[1], 0, "uid=1000 gid=1001 groups=10,20"));
	CHECK(vm, out_has(&vm->r[1], 0, "CapInh:\t0000000000000401"));
	CHECK(vm, out_has(&vm->r[1], 0, "CapPrm:\t0000000000000401"));
	CHECK(vm, out_has(&vm->r[1], 0, "CapEff:\t0000000000000401"));
	CHECK(vm, out_has(&vm->r[1], 0, "CapBnd:\t0000000000000401"));
	CHECK(vm, out_has(&vm->r[1], 0, "CapAmb:\t0000000000000401"));
	CHECK(vm, out_has(&vm->r[1], 0, "NoNewPrivs:\t0"));
	CHECK(vm, out_has(&vm->r[1], 0, "\n123\n0027\n/tmp\n"));
	return true;
}

/* x86_64 only; mkdir and mkdirat fail with EPERM, everything else runs. */
static struct sock_filter no_mkdir[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdir, 1, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdirat, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static bool seccomp_case(struct vm *vm, bool nnp, uint32_t uid)
{
	char *args[] = { "sh", "-c",
			 "mkdir /tmp/d; echo rc=$?; touch /tmp/f && echo touch-ok; "
			 "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status",
			 NULL };
	struct moat_proto_process p = spec(args);

	p.uid = uid;
	p.gid = uid;
	p.no_new_privs = nnp;
	p.seccomp = no_mkdir;
	p.n_seccomp = MOAT_ARRAY_SIZE(no_mkdir);
	send_start(vm, 1, p, NULL, 0, false, NULL);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 0);
	CHECK(vm, out_has(&vm->r[1], 0, "rc=1"));
	CHECK(vm, out_has(&vm->r[1], 1, "Operation not permitted"));
	CHECK(vm, out_has(&vm->r[1], 0, "touch-ok"));
	CHECK(vm, out_has(&vm->r[1], 0, nnp ? "NoNewPrivs:\t1" : "NoNewPrivs:\t0"));
	CHECK(vm, out_has(&vm->r[1], 0, "Seccomp:\t2"));
	return true;
}

static bool case_seccomp_nnp(struct vm *vm)
{
	return seccomp_case(vm, true, 1000);
}

static bool case_seccomp_privileged(struct vm *vm)
{
	return seccomp_case(vm, false, 1000);
}

static bool case_exec(struct vm *vm)
{
	char *args[] = { "sh", "-c", "echo up; exec sleep 100", NULL };
	char *eargs[] = { "sh", "-c", "echo exec-ok; hostname; echo to-err >&2; exit 4", NULL };
	char *bad[] = { "/bin/nope", NULL };
	char *nopath[] = { "nope-either", NULL };

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, out_has(&vm->r[1], 0, "up"), STEP_TIMEOUT_MS));
	send_exec(vm, 2, spec(eargs));
	CHECK(vm, EXITED(vm, 2));
	CHECK(vm, vm->r[2].started && vm->r[2].code == 4);
	CHECK(vm, out_has(&vm->r[2], 0, "exec-ok\nsmokebox\n"));
	CHECK(vm, out_has(&vm->r[2], 1, "to-err"));
	send_exec(vm, 3, spec(bad));
	CHECK(vm, WAIT_FOR(vm, vm->r[3].error[0], STEP_TIMEOUT_MS));
	CHECK(vm, strcmp(vm->r[3].error, "exec /bin/nope: No such file or directory") == 0);
	send_exec(vm, 4, spec(nopath));
	CHECK(vm, WAIT_FOR(vm, vm->r[4].error[0], STEP_TIMEOUT_MS));
	CHECK(vm, strcmp(vm->r[4].error, "exec nope-either: No such file or directory") == 0);
	/* An id in use is refused. */
	send_exec(vm, 1, spec(eargs));
	CHECK(vm, WAIT_FOR(vm, vm->r[1].error[0], STEP_TIMEOUT_MS));
	CHECK(vm, strstr(vm->r[1].error, "exists already") != NULL);
	/* A background child keeps stdout open: EXITED comes anyway, after the
	 * agent's drain limit, with both streams ended. */
	char *bg[] = { "sh", "-c", "sleep 30 & echo bg; exit 6", NULL };
	uint64_t t = now_ms();
	send_exec(vm, 5, spec(bg));
	CHECK(vm, EXITED(vm, 5));
	CHECK(vm, vm->r[5].code == 6 && out_has(&vm->r[5], 0, "bg"));
	CHECK(vm, vm->r[5].eof[0] && vm->r[5].eof[1]);
	CHECK(vm, now_ms() - t >= 1900 && now_ms() - t < 10000);
	send_simple(vm, MOAT_MSG_SIGNAL, 1, 15, 0);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 128 + 15);
	CHECK(vm, !vm->r[3].started && !vm->r[3].exited);
	return true;
}

static bool case_terminal(struct vm *vm)
{
	char *args[] = { "sh", "-c", "stty size; tty; read x; stty size; echo got:$x; exit 5",
			 NULL };
	struct moat_proto_process p = spec(args);
	struct moat_proto_winsize ws = { 24, 80 };

	p.terminal = true;
	p.uid = 1000;
	p.gid = 1000;
	send_start(vm, 1, p, NULL, 0, false, &ws);
	CHECK(vm, WAIT_FOR(vm, out_has(&vm->r[1], 0, "/dev/pts/0"), STEP_TIMEOUT_MS));
	CHECK(vm, out_has(&vm->r[1], 0, "24 80"));
	send_simple(vm, MOAT_MSG_RESIZE, 1, 50, 132);
	CHECK(vm, send_stdin(vm, 1, (const uint8_t *)"go\n", 3));
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 5);
	CHECK(vm, out_has(&vm->r[1], 0, "50 132"));
	CHECK(vm, out_has(&vm->r[1], 0, "got:go"));
	CHECK(vm, vm->r[1].out[1].len == 0);
	return true;
}

static bool case_stdin_credit(struct vm *vm)
{
	char *args[] = { "sh", "-c", "cat; echo done >&2", NULL };
	size_t n = 700 * 1024;
	uint8_t *data = xmalloc(n);

	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, vm->r[1].started, STEP_TIMEOUT_MS));
	CHECK(vm, send_stdin(vm, 1, data, n));
	CHECK(vm, send_stdin(vm, 1, NULL, 0));
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 0);
	CHECK(vm, vm->r[1].out[0].len == n && memcmp(vm->r[1].out[0].data, data, n) == 0);
	CHECK(vm, out_has(&vm->r[1], 1, "done"));
	/* Every byte acknowledged: the whole window is back. */
	CHECK(vm, vm->r[1].window == MOAT_PROTO_STDIN_WINDOW);
	free(data);
	return true;
}

static bool case_output_flood(struct vm *vm)
{
	char *args[] = { "sh", "-c", "yes 0123456789abcdef | head -c 6000000; echo end >&2", NULL };
	uint64_t end;

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	/* Read nothing for two seconds: the guest must wait, not drop or die. */
	sleep_ms(2000);
	end = now_ms() + 60000;
	while (!vm->r[1].exited && !vm->closed && now_ms() < end)
		pump(vm, 20);
	CHECK(vm, vm->r[1].exited && vm->r[1].code == 0);
	CHECK(vm, vm->r[1].out[0].len == 6000000);
	/* 352940 whole lines of 17 bytes, then "012". */
	CHECK(vm, memcmp(vm->r[1].out[0].data + 5999980, "0123456789abcdef\n012", 20) == 0);
	CHECK(vm, out_has(&vm->r[1], 1, "end"));
	return true;
}

static bool case_mounts(struct vm *vm)
{
	char *args[] = {
		"sh", "-c",
		"cat /mnt/data/hello; touch /mnt/data/x; touch /newfile; "
		"touch /tmp/ok && echo tmp-ok; ls /dev; grep -c ' /mnt/escaped ' /proc/self/mountinfo; "
		"ls -ld /dev/shm; echo mq=$(grep -c ' /dev/mqueue mqueue ' /proc/self/mounts)",
		NULL
	};
	struct moat_proto_mount mounts[MOAT_ARRAY_SIZE(default_mounts) + 2];

	memcpy(mounts, default_mounts, sizeof(default_mounts));
	mounts[MOAT_ARRAY_SIZE(default_mounts)] =
		(struct moat_proto_mount){ "bind", "/etc/moat-data", "/mnt/data",
					   0x1000 | 0x4000 | 1, NULL };
	/* "/escape" is a symlink to ../../../../../mnt: it must resolve inside the rootfs. */
	mounts[MOAT_ARRAY_SIZE(default_mounts) + 1] =
		(struct moat_proto_mount){ "tmpfs", "tmpfs", "/escape/escaped", 0, NULL };
	send_start(vm, 1, spec(args), mounts, MOAT_ARRAY_SIZE(mounts), true, NULL);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, out_has(&vm->r[1], 0, "hello-from-bind"));
	CHECK(vm, out_has(&vm->r[1], 1, "touch: /mnt/data/x: Read-only file system"));
	CHECK(vm, out_has(&vm->r[1], 1, "touch: /newfile: Read-only file system"));
	CHECK(vm, out_has(&vm->r[1], 0, "tmp-ok"));
	static const char *devs[] = { "null", "zero", "full", "random", "urandom", "tty",   "ptmx",
				      "pts",  "shm",  "fd",   "stdin",  "stdout",  "stderr" };
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(devs); i++) {
		char line[32];

		/* After the bind's line, one name a line. */
		snprintf(line, sizeof(line), "\n%s\n", devs[i]);
		CHECK(vm, out_has(&vm->r[1], 0, line));
	}
	CHECK(vm, out_has(&vm->r[1], 0, "\n1\n"));
	CHECK(vm, out_has(&vm->r[1], 0, "drwxrwxrwt"));
	CHECK(vm, out_has(&vm->r[1], 0, "mq=1"));
	return true;
}

static bool case_start_failures(struct vm *vm)
{
	char *args[] = { "/bin/nope", NULL };

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, vm->r[1].error[0], STEP_TIMEOUT_MS));
	CHECK(vm, strcmp(vm->r[1].error, "exec /bin/nope: No such file or directory") == 0);
	CHECK(vm, !vm->r[1].started);
	return true;
}

static bool case_mount_failure(struct vm *vm)
{
	char *args[] = { "true", NULL };
	struct moat_proto_mount bad[] = { { "nosuchfs", "x", "/x", 0, NULL } };

	send_start(vm, 1, spec(args), bad, 1, false, NULL);
	CHECK(vm, WAIT_FOR(vm, vm->r[1].error[0], STEP_TIMEOUT_MS));
	CHECK(vm, strcmp(vm->r[1].error, "mount nosuchfs on /x: mount: No such device") == 0);
	return true;
}

static bool case_bad_frame(struct vm *vm)
{
	/* An unknown message type: the agent says so and goes on. */
	static const uint8_t junk[] = { 0, 0, 0, 0, 0x77, 0, 1, 0, 0, 0 };
	char *args[] = { "sh", "-c", "exit 0", NULL };

	moat_buf_append(&vm->out, junk, sizeof(junk));
	pump(vm, 0);
	CHECK(vm, WAIT_FOR(vm, vm->agent_error[0], STEP_TIMEOUT_MS));
	CHECK(vm, strcmp(vm->agent_error, "unknown message type 0x77") == 0);
	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, vm->r[1].code == 0);
	return true;
}

/* A host that reads slowly: the workload ends while its last output is
 * still in the pipe behind a full queue; none of it may be lost. */
static bool case_slow_reader(struct vm *vm)
{
	char *args[] = { "sh", "-c", "head -c 2000000 /dev/zero | tr '\\0' x; echo wrote >&2",
			 NULL };
	uint64_t end = now_ms() + 60000;

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	while (!vm->r[1].exited && !vm->closed && now_ms() < end) {
		/* At most 64 KiB every 150 ms: well below what the guest
		 * produces, and slow enough that the workload ends with output
		 * still in its pipe behind a full queue and virtqueue. */
		pump(vm, 0);
		sleep_ms(150);
	}
	CHECK(vm, vm->r[1].exited && vm->r[1].code == 0);
	CHECK(vm, vm->r[1].out[0].len == 2000000);
	CHECK(vm, out_has(&vm->r[1], 1, "wrote"));
	return true;
}

/* After the workload's EXITED the guest waits for SHUTDOWN (it cannot
 * know what the host has read yet), then goes at once. */
static bool case_waits_for_shutdown(struct vm *vm)
{
	char *args[] = { "true", NULL };
	uint64_t t;

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, EXITED(vm, 1));
	CHECK(vm, !WAIT_FOR(vm, vm->closed, 4000));
	t = now_ms();
	send_simple(vm, MOAT_MSG_SHUTDOWN, 0, 0, 0);
	CHECK(vm, WAIT_FOR(vm, vm->closed, 10000));
	CHECK(vm, now_ms() - t < 3000);
	return true;
}

/* The host's end closes: the guest powers off, workload or not. */
static bool case_host_gone(struct vm *vm)
{
	char *args[] = { "sh", "-c", "echo up; exec sleep 100", NULL };
	uint64_t end;
	int status = 0;
	pid_t got = 0;

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, out_has(&vm->r[1], 0, "up"), STEP_TIMEOUT_MS));
	close(vm->sock);
	vm->sock = -1;
	vm->closed = true;
	end = now_ms() + 5000;
	while (now_ms() < end && (got = waitpid(vm->qemu, &status, WNOHANG)) == 0)
		sleep_ms(20);
	CHECK(vm, got == vm->qemu);
	vm->qemu = 0;
	vm->qemu_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return true;
}

/* SHUTDOWN with the workload running ends it all at once. */
static bool case_shutdown_running(struct vm *vm)
{
	char *args[] = { "sh", "-c", "echo up; exec sleep 100", NULL };
	uint64_t t;

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, out_has(&vm->r[1], 0, "up"), STEP_TIMEOUT_MS));
	t = now_ms();
	send_simple(vm, MOAT_MSG_SHUTDOWN, 0, 0, 0);
	CHECK(vm, WAIT_FOR(vm, vm->closed, 10000));
	CHECK(vm, now_ms() - t < 3000);
	return true;
}

/* Orphans are reparented to the agent, which reaps them; an EXEC on a
 * terminal of its own. */
static bool case_orphans_and_exec_tty(struct vm *vm)
{
	char *args[] = {
		"sh", "-c",
		"for i in 1 2 3; do sh -c 'sleep 0.2 &'; done; sleep 1; "
		"echo zombies=$(ps -o stat | grep -c '^Z') init=$(ps -o pid,comm | grep -c '^ *1 init$'); "
		"exec sleep 100",
		NULL
	};
	char *targs[] = { "sh", "-c", "tty; stty size", NULL };
	struct moat_msg m = { .type = MOAT_MSG_EXEC, .id = 2 };

	send_start(vm, 1, spec(args), NULL, 0, false, NULL);
	CHECK(vm, WAIT_FOR(vm, out_has(&vm->r[1], 0, "zombies="), STEP_TIMEOUT_MS));
	/* ps sees the processes (the agent as PID 1), and no zombie among them. */
	CHECK(vm, out_has(&vm->r[1], 0, "zombies=0 init=1"));
	m.u.exec.process = spec(targs);
	m.u.exec.process.terminal = true;
	m.u.exec.has_winsize = true;
	m.u.exec.winsize.rows = 10;
	m.u.exec.winsize.cols = 20;
	vm_send(vm, &m);
	CHECK(vm, EXITED(vm, 2));
	CHECK(vm, out_has(&vm->r[2], 0, "/dev/pts/0"));
	CHECK(vm, out_has(&vm->r[2], 0, "10 20"));
	CHECK(vm, vm->r[2].code == 0);
	return true;
}

struct smoke_case {
	const char *name;
	bool (*run)(struct vm *vm);
	int debugexit_code; /* -1: not checked; else QEMU's expected exit code */
};

static const struct smoke_case cases[] = {
	{ "exit-status-and-output", case_exit_status, -1 },
	/* QEMU exits with (3 << 1) | 1 through isa-debug-exit. */
	{ "exit-status-through-debug-exit", case_exit_status, (3 << 1) | 1 },
	{ "signal-kill", case_signal_kill, -1 },
	{ "user-caps-rlimits-umask-cwd", case_user_caps_limits, -1 },
	{ "seccomp-with-no-new-privs", case_seccomp_nnp, -1 },
	{ "seccomp-installed-privileged", case_seccomp_privileged, -1 },
	{ "exec-while-running", case_exec, -1 },
	{ "terminal-and-resize", case_terminal, -1 },
	{ "stdin-with-credit", case_stdin_credit, -1 },
	{ "output-flood-back-pressure", case_output_flood, -1 },
	{ "slow-reader-loses-nothing", case_slow_reader, -1 },
	{ "mounts-dev-readonly-root", case_mounts, -1 },
	{ "workload-exec-failure", case_start_failures, -1 },
	{ "mount-failure", case_mount_failure, -1 },
	{ "bad-frame-is-skipped", case_bad_frame, -1 },
	{ "waits-for-shutdown", case_waits_for_shutdown, -1 },
	{ "powers-off-when-host-gone", case_host_gone, -1 },
	{ "shutdown-while-running", case_shutdown_running, -1 },
	{ "orphans-reaped-exec-on-tty", case_orphans_and_exec_tty, -1 },
};

static bool run_case(const struct opts *o, const struct smoke_case *c, const char *fs, double *secs)
{
	struct vm vm;
	uint64_t t0 = now_ms();
	bool ok;
	int status;

	if (vm_boot(&vm, o, fs, c->debugexit_code >= 0) < 0) {
		fprintf(stderr, "# boot: %s\n", strerror(errno));
		vm_finish(&vm);
		vm_cleanup(&vm, false);
		return false;
	}
	ok = WAIT_FOR(&vm, vm.ready, BOOT_TIMEOUT_MS);
	if (!ok)
		fprintf(stderr, "# no READY from the agent\n");
	if (ok && vm.agent_error[0]) {
		fprintf(stderr, "# agent: %s\n", vm.agent_error);
		ok = false;
	}
	if (ok)
		ok = c->run(&vm);
	status = vm_finish(&vm);
	if (ok && c->debugexit_code >= 0 && status != c->debugexit_code) {
		char cmd[400];

		fprintf(stderr, "# QEMU exited %d, expected %d (isa-debug-exit); the agent said:\n",
			status, c->debugexit_code);
		snprintf(cmd, sizeof(cmd),
			 "grep -o 'moat.debugexit:.*' %s/console.log | sed 's/^/#   /' >&2",
			 vm.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "#   nothing\n");
		ok = false;
	}
	if (ok && c->debugexit_code < 0 && status != 0) {
		fprintf(stderr, "# QEMU exited %d, expected 0 (the agent's reboot)\n", status);
		ok = false;
	}
	vm_cleanup(&vm, ok);
	*secs = (double)(now_ms() - t0) / 1000.0;
	if (ok && o->verbose)
		fprintf(stderr, "# guest kernel %s\n", vm.release);
	return ok;
}

int main(int argc, char **argv)
{
	struct opts o = { .busybox = "/bin/busybox", .fs = "both" };
	const char *fss[2];
	int n_fs = 0, n = 0;

	for (int i = 1; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--kernel") == 0 && next)
			o.kernel = argv[++i];
		else if (strcmp(argv[i], "--initrd") == 0 && next)
			o.initrd = argv[++i];
		else if (strcmp(argv[i], "--busybox") == 0 && next)
			o.busybox = argv[++i];
		else if (strcmp(argv[i], "--fs") == 0 && next)
			o.fs = argv[++i];
		else if (strcmp(argv[i], "--only") == 0 && next)
			o.only = argv[++i];
		else if (strcmp(argv[i], "--verbose") == 0)
			o.verbose = true;
		else {
			fprintf(stderr,
				"usage: agent-smoke --kernel K --initrd I [--fs virtiofs|9p|both] "
				"[--busybox B] [--only NAME] [--verbose]\n");
			return 2;
		}
	}
	if (o.kernel == NULL || o.initrd == NULL) {
		fprintf(stderr, "agent-smoke: --kernel and --initrd are needed\n");
		return 2;
	}
	if (strcmp(o.fs, "both") == 0 || strcmp(o.fs, "virtiofs") == 0)
		fss[n_fs++] = "virtiofs";
	if (strcmp(o.fs, "both") == 0 || strcmp(o.fs, "9p") == 0)
		fss[n_fs++] = "9p";
	signal(SIGPIPE, SIG_IGN);
	if (make_rootfs(&o) < 0) {
		fprintf(stderr, "agent-smoke: make the rootfs: %s\n", strerror(errno));
		return 1;
	}
	for (int f = 0; f < n_fs; f++)
		for (size_t i = 0; i < MOAT_ARRAY_SIZE(cases); i++)
			if (!o.only || strcmp(o.only, cases[i].name) == 0)
				n++;
	printf("1..%d\n", n);
	n = 0;
	for (int f = 0; f < n_fs; f++)
		for (size_t i = 0; i < MOAT_ARRAY_SIZE(cases); i++) {
			double secs = 0;
			bool ok;

			if (o.only && strcmp(o.only, cases[i].name) != 0)
				continue;
			ok = run_case(&o, &cases[i], fss[f], &secs);
			failures += !ok;
			printf("%s %d - %s (%s) %.1fs\n", ok ? "ok" : "not ok", ++n, cases[i].name,
			       fss[f], secs);
			fflush(stdout);
		}
	{
		char *rm[] = { "rm", "-rf", o.rootfs, NULL };

		run_cmd(rm, NULL);
	}
	return failures ? 1 : 0;
}
