/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat agent: from boot to READY, and the way out.
 *
 * Everything that depends on the guest's own root (the kernel command line,
 * the port's name in sysfs, ACPI, /dev/port) is settled here, at boot, while
 * nothing of the container is there yet.
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

/* QEMU's isa-debug-exit device, where moat's test VMs place it. */
#define DEBUG_EXIT_PORT 0xf4
#define PORT_NAME "moat.0"
#define DEFAULT_TAG "moatroot"

void agent_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The kernel gives init /dev/console as stdio when it can; when it cannot,
 * 0-2 are closed and must be filled, or the first fds opened would become
 * them. */
void agent_fill_stdio(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			agent_log("open /dev/null: %m");
}

/* ---- the kernel command line ------------------------------------------------------------------ */

struct option_def {
	const char *name;
	int (*set)(struct agent_config *cfg, const char *value);
};

static int set_port(struct agent_config *cfg, const char *v)
{
	if (v[0] != '/' || strlen(v) >= sizeof(cfg->port))
		return -1;
	snprintf(cfg->port, sizeof(cfg->port), "%s", v);
	return 0;
}

static int set_rootfs(struct agent_config *cfg, const char *v)
{
	if (strcmp(v, "virtiofs") == 0)
		cfg->rootfs = ROOTFS_VIRTIOFS;
	else if (strcmp(v, "9p") == 0)
		cfg->rootfs = ROOTFS_9P;
	else
		return -1;
	return 0;
}

static int set_tag(struct agent_config *cfg, const char *v)
{
	if (v[0] == '\0' || strlen(v) >= sizeof(cfg->tag))
		return -1;
	snprintf(cfg->tag, sizeof(cfg->tag), "%s", v);
	return 0;
}

/* "0" or "1" into *ret. */
static int set_flag(bool *ret, const char *v)
{
	if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
		return -1;
	*ret = v[0] == '1';
	return 0;
}

static int set_debugexit(struct agent_config *cfg, const char *v)
{
	return set_flag(&cfg->debugexit, v);
}

static int set_egress(struct agent_config *cfg, const char *v)
{
	return set_flag(&cfg->egress, v);
}

static const struct option_def options[] = {
	{ "moat.port", set_port },           /* the port's device, instead of finding moat.0 */
	{ "moat.rootfs", set_rootfs },       /* virtiofs (default) or 9p */
	{ "moat.tag", set_tag },             /* the rootfs share's tag, default moatroot */
	{ "moat.debugexit", set_debugexit }, /* 1: leave through isa-debug-exit at 0xf4 */
	{ "moat.egress", set_egress },       /* 1: the egress tunnel's port is there */
};

void agent_parse_cmdline(struct agent_config *cfg)
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;
	size_t len;
	moat_error err = MOAT_ERROR_INIT;

	snprintf(cfg->tag, sizeof(cfg->tag), DEFAULT_TAG);
	if (read_file_at(AT_FDCWD, "/proc/cmdline", 4096, &text, &len, &err) < 0) {
		snprintf(cfg->error, sizeof(cfg->error), "%s", err.msg);
		moat_error_clear(&err);
		return;
	}
	for (char *w = strtok_r(text, " \t\n", &save); w != NULL;
	     w = strtok_r(NULL, " \t\n", &save)) {
		char *eq = strchr(w, '=');
		size_t i;

		if (strncmp(w, "moat.", 5) != 0)
			continue;
		if (eq != NULL)
			*eq = '\0';
		for (i = 0; i < MOAT_ARRAY_SIZE(options); i++)
			if (strcmp(w, options[i].name) == 0)
				break;
		if (i == MOAT_ARRAY_SIZE(options))
			snprintf(cfg->error, sizeof(cfg->error),
				 "kernel command line: unknown option %s", w);
		else if (eq == NULL || options[i].set(cfg, eq + 1) < 0)
			snprintf(cfg->error, sizeof(cfg->error),
				 "kernel command line: bad value for %s", w);
	}
}

/* ---- the port ---------------------------------------------------------------------------------- */

static void closedirp(DIR **d)
{
	if (*d != NULL)
		closedir(*d);
}

/* /dev/vportNpM whose /sys/class/virtio-ports/vportNpM/name is port. */
static int find_port(const char *port, char *path, size_t size)
{
	_cleanup_(closedirp) DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;

	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		_cleanup_free_ char *name = NULL;
		char file[320];
		size_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/sys/class/virtio-ports/%s/name", e->d_name);
		if (read_file_at(AT_FDCWD, file, 256, &name, &len, NULL) < 0)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, port) == 0) {
			snprintf(path, size, "/dev/%s", e->d_name);
			return 0;
		}
	}
	return -ENOENT;
}

int agent_open_named_port(const char *name, const char *device)
{
	uint64_t end = agent_now_ms() + AGENT_PORT_WAIT_MS;
	char path[300];

	/* The device may still be probing when init starts. */
	while (true) {
		int fd = -1;

		if (device[0] != '\0')
			snprintf(path, sizeof(path), "%s", device);
		if ((device[0] != '\0' || find_port(name, path, sizeof(path)) == 0) &&
		    (fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) >= 0)
			return fd;
		if (agent_now_ms() > end) {
			agent_log("no virtio-serial port named %s%s%s", name,
				  device[0] ? " at " : "", device);
			return -1;
		}
		agent_sleep_ms(10);
	}
}

int agent_open_port(const struct agent_config *cfg)
{
	return agent_open_named_port(PORT_NAME, cfg->port);
}

/* The port says POLLHUP until the host's end is open. */
int agent_wait_for_host(int port)
{
	uint64_t end = agent_now_ms() + AGENT_CONNECT_WAIT_MS;

	while (agent_now_ms() < end) {
		struct pollfd pfd = { port, POLLOUT, 0 };

		if (poll(&pfd, 1, 100) > 0 && !(pfd.revents & POLLHUP) && (pfd.revents & POLLOUT))
			return 0;
		agent_sleep_ms(5);
	}
	agent_log("the host did not open the port within %d ms", AGENT_CONNECT_WAIT_MS);
	return -1;
}

int agent_read_cap_last(void)
{
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 32, &text, &len, NULL) < 0)
		return 40; /* CAP_CHECKPOINT_RESTORE, the last one in Linux 6.1 */
	return atoi(text);
}

/* ---- the network -------------------------------------------------------------------------------- */

/* The kernel leaves lo down in a new network namespace, the guest's included: without it
 * nothing reaches 127.0.0.1 ("Network is unreachable"). Up, it gets 127.0.0.1/8 by itself. */
void agent_loopback_up(struct agent_config *cfg)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo" };
	const char *what = "open a socket";

	if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		what = "set its flags";
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) == 0)
			return;
	} else if (fd >= 0) {
		what = "read its flags";
	}
	/* the first problem found is the one reported */
	if (cfg->error[0] == '\0')
		snprintf(cfg->error, sizeof(cfg->error),
			 "bring the loopback interface lo up: %s: %s", what, strerror(errno));
}

/* ---- the way out ------------------------------------------------------------------------------- */

/* How the guest will end, decided while the guest's own /sys and /dev are
 * in view. isa-debug-exit needs port access: ioperm (CONFIG_X86_IOPL_IOPERM),
 * checked and given back at once so that no process forked later inherits
 * it, or else /dev/port (CONFIG_DEVPORT), kept open by the agent only. */
void agent_prepare_exit(struct agent *a)
{
	a->has_acpi = access("/sys/firmware/acpi", F_OK) == 0;
	a->debug_port_fd = -1;
	if (!a->cfg.debugexit)
		return;
	if (ioperm(DEBUG_EXIT_PORT, 4, 1) == 0) {
		ioperm(DEBUG_EXIT_PORT, 4, 0);
		return;
	}
	int ioperm_errno = errno;

	a->debug_port_fd = open("/dev/port", O_WRONLY | O_CLOEXEC);
	if (a->debug_port_fd < 0 && a->cfg.error[0] == '\0')
		snprintf(a->cfg.error, sizeof(a->cfg.error),
			 "moat.debugexit: no port access (ioperm: %s; /dev/port: %s)",
			 strerror(ioperm_errno), strerror(errno));
}

/* QEMU exits with (value << 1) | 1: codes up to 127 come out whole. */
static void debug_exit(struct agent *a)
{
	unsigned char v = (unsigned char)a->exit_code;

	if (a->debug_port_fd >= 0) {
		if (pwrite(a->debug_port_fd, &v, 1, DEBUG_EXIT_PORT) != 1)
			agent_log("moat.debugexit: write /dev/port: %m");
	} else if (ioperm(DEBUG_EXIT_PORT, 4, 1) == 0) {
		outb(v, DEBUG_EXIT_PORT);
	} else {
		agent_log("moat.debugexit: ioperm 0x%x: %m", DEBUG_EXIT_PORT);
	}
	/* Still here: the device is missing. Let the console show why. */
	agent_sleep_ms(100);
}

void agent_power_off(struct agent *a)
{
	uint64_t end = agent_now_ms() + 1000;

	/* What is queued for the host still goes, for a little while. */
	while (a->port >= 0 && agent_queued(a) && agent_now_ms() < end) {
		struct pollfd pfd = { a->port, POLLOUT, 0 };

		if (poll(&pfd, 1, 50) > 0 && (pfd.revents & POLLHUP))
			break;
		agent_flush(a);
	}
	kill(-1, SIGKILL);
	sync();
	if (a->cfg.debugexit)
		debug_exit(a);
	/* Without ACPI (QEMU microvm, acpi=off) there is no powering off: the
	 * kernel would halt and QEMU stay. moat's VMs run with -no-reboot, where
	 * a reboot ends QEMU. */
	if (a->has_acpi)
		reboot(RB_POWER_OFF);
	reboot(RB_AUTOBOOT);
	agent_log("reboot: %m");
	for (;;)
		pause();
}
