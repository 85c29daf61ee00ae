/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: starting the VMM (vm-launch.h). */
#include "vm-launch.h"

#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proto.h"
#include "strv.h"
#include "tunnel.h"
#include "utils.h"

/* QEMU's whole environment. */
static char *const qemu_env[] = { "PATH=/usr/bin", NULL };

/* In the child: exec l's QEMU, by its fd when it has one. */
static void exec_qemu(const struct moat_vm_launch *l, int qemu_fd, char **argv)
{
	if (qemu_fd >= 0)
		syscall(SYS_execveat, qemu_fd, "", argv, qemu_env, AT_EMPTY_PATH);
	else
		execve(l->qemu, argv, qemu_env);
}

struct argv_builder {
	char **v;
	size_t n;
};

static void add(struct argv_builder *b, const char *s)
{
	strv_push(&b->v, &b->n, s);
}

static void __attribute__((format(printf, 2, 3))) addf(struct argv_builder *b, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	add(b, s);
	free(s);
}

/* QEMU's option syntax doubles a comma inside a value. */
static char *qemu_escape(const char *s)
{
	size_t n = strlen(s), commas = 0;
	char *r, *w;

	for (size_t i = 0; i < n; i++)
		commas += s[i] == ',';
	r = w = xmalloc(n + commas + 1);
	for (size_t i = 0; i < n; i++) {
		*w++ = s[i];
		if (s[i] == ',')
			*w++ = ',';
	}
	*w = '\0';
	return r;
}

/* The machine: accelerator, CPUs, memory, nothing by default, QEMU's own seccomp filter. */
static void add_machine(struct argv_builder *b, const struct moat_vm_launch *l)
{
	bool kvm = l->vm->accel == MOAT_VM_ACCEL_KVM;

	add(b, "-M");
	/* virtio-fs: vhost-user needs the guest's memory shared with virtiofsd; a snapshot's
	 * is kept apart from the stream (vm-snapshot-ram.c) */
	addf(b, "microvm,acpi=off,x-option-roms=off,rtc=off%s",
	     l->virtiofs_socket || l->snapshot_ram ? ",memory-backend=mem" : "");
	add(b, "-accel");
	add(b, kvm ? "kvm" : "tcg");
	add(b, "-cpu");
	/* erms=off under TCG: with ERMS the guest kernel copies and clears memory with `rep
	 * movsb`/`rep stosb`, which TCG runs one byte an iteration; without it, `rep movsq`, 8
	 * bytes an iteration. A workload's output relayed 2.6 times faster, and dd to /dev/null
	 * in the guest 3 times (contrib/bench/relay-bench.sh). A real CPU does `rep movsb` fast:
	 * KVM keeps the host's. */
	add(b, kvm ? "host" : "max,erms=off");
	add(b, "-smp");
	addf(b, "%u", l->vm->cpus);
	add(b, "-m");
	addf(b, "%uM", l->vm->memory_mib);
	if (l->virtiofs_socket) {
		add(b, "-object");
		addf(b, "memory-backend-memfd,id=mem,size=%uM,share=on", l->vm->memory_mib);
	} else if (l->snapshot_ram) {
		add(b, "-object");
		addf(b, "memory-backend-file,id=mem,size=%uM,share=on,mem-path=/proc/self/fd/%d",
		     l->vm->memory_mib, MOAT_VM_QEMU_RAM_FD);
	}
	add(b, "-nodefaults");
	add(b, "-no-user-config");
	add(b, "-nographic");
	add(b, "-no-reboot");
	/* QEMU's own filter: no obsolete syscalls, no setuid and friends, no fork/exec, no
	 * scheduler or resource changes. */
	add(b, "-sandbox");
	add(b, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
}

/* The guest kernel, the agent's initramfs, and what the kernel's command line tells both. */
static void add_kernel(struct argv_builder *b, const struct moat_vm_launch *l)
{
	char tsc[40] = "";

	add(b, "-kernel");
	add(b, l->kernel);
	add(b, "-initrd");
	add(b, l->initramfs);
	add(b, "-append");
	/* no_timer_check: at boot Linux counts timer ticks during a 10-tick busy wait and
	 * panics ("IO-APIC + timer doesn't work!") when fewer than 4 arrive. Under TCG on a
	 * host whose CPUs are busy, QEMU's vCPU thread can be starved for that long, and the
	 * guest died before its console was up: QEMU exited 0, the run was lost. The timer
	 * is QEMU's own and known to work.
	 * tsc=reliable, under TCG: the kernel's clocksource watchdog compares the TSC with
	 * jiffies, and when a busy host delays the vCPU's ticks it declares the TSC unstable
	 * and falls back to jiffies. Such a guest saved as a snapshot hung every guest restored
	 * from it (the restored kernel spun and never answered START; microvm-snapshot.bats,
	 * clocksource-watchdog). TCG's TSC is the host's, which runs steadily.
	 * tsc_early_khz: its rate, which the guest would otherwise measure against the PIT, and
	 * that fails on a busy host too (vm-tsc.h). */
	if (l->tsc_khz > 0)
		snprintf(tsc, sizeof(tsc), " tsc_early_khz=%" PRIu32, l->tsc_khz);
	addf(b, "console=hvc0%s panic=-1 reboot=t no_timer_check%s%s moat.rootfs=%s%s%s",
	     l->kernel_messages ? "" : " quiet",
	     l->vm->accel == MOAT_VM_ACCEL_KVM ? "" : " tsc=reliable", tsc,
	     l->virtiofs_socket ? "virtiofs" : "9p", l->debug_exit ? " moat.debugexit=1" : "",
	     l->egress ? " moat.egress=1" : "");
	if (l->debug_exit) {
		add(b, "-device");
		add(b, "isa-debug-exit,iobase=0xf4,iosize=0x04");
	}
}

/* The console (to the log, or nowhere), the agent's port on the inherited socket, and the
 * egress tunnel's port on the other. */
static void add_ports(struct argv_builder *b, const struct moat_vm_launch *l)
{
	_cleanup_free_ char *log = l->console_log ? qemu_escape(l->console_log) : NULL;

	add(b, "-device");
	addf(b, "virtio-serial-device,max_ports=%d", l->egress ? 3 : 2);
	add(b, "-chardev");
	if (log)
		addf(b, "file,id=con,path=%s", log);
	else
		add(b, "null,id=con");
	add(b, "-device");
	add(b, "virtconsole,chardev=con");
	add(b, "-chardev");
	addf(b, "socket,id=agent,fd=%d", MOAT_VM_QEMU_AGENT_FD);
	add(b, "-device");
	add(b, "virtserialport,chardev=agent,name=moat.0");
	if (!l->egress)
		return;
	add(b, "-chardev");
	addf(b, "socket,id=egress,fd=%d", MOAT_VM_QEMU_EGRESS_FD);
	add(b, "-device");
	add(b, "virtserialport,chardev=egress,name=" MOAT_TUNNEL_PORT_NAME);
}

/* A virtio-net device per tap, on virtio-mmio like everything else, with the interface's
 * MAC. */
static void add_nics(struct argv_builder *b, const struct moat_vm_launch *l)
{
	for (size_t i = 0; i < l->n_nics; i++) {
		const uint8_t *m = l->nic_macs[i];

		add(b, "-netdev");
		addf(b, "tap,id=net%zu,fd=%d", i, MOAT_VM_QEMU_NIC_FD(i));
		add(b, "-device");
		addf(b, "virtio-net-device,netdev=net%zu,mac=%02x:%02x:%02x:%02x:%02x:%02x", i,
		     m[0], m[1], m[2], m[3], m[4], m[5]);
	}
}

/* The root, tag moatroot: rootfs over 9p, or virtiofsd's share over virtio-fs. */
static void add_share(struct argv_builder *b, const struct moat_vm_launch *l)
{
	_cleanup_free_ char *path = NULL;

	if (l->virtiofs_socket) {
		path = qemu_escape(l->virtiofs_socket);
		/* virtiofsd refuses microvm's default legacy virtio-mmio */
		add(b, "-global");
		add(b, "virtio-mmio.force-legacy=false");
		add(b, "-chardev");
		addf(b, "socket,id=vfs,path=%s", path);
		add(b, "-device");
		add(b, "vhost-user-fs-device,chardev=vfs,tag=moatroot");
		return;
	}
	path = qemu_escape(l->rootfs);
	add(b, "-fsdev");
	/* multidevs=remap: the share holds the config's bind mounts, other filesystems, whose
	 * inode numbers must not collide in the guest */
	addf(b, "local,id=root,path=%s,security_model=none,multidevs=remap%s", path,
	     l->rootfs_readonly ? ",readonly=on" : "");
	add(b, "-device");
	add(b, "virtio-9p-device,fsdev=root,mount_tag=moatroot");
}

/* The pod's share (vm-pod.h), tag MOAT_PROTO_POD_TAG: its members' roots, each with the
 * filesystems of its binds. */
static void add_pod_share(struct argv_builder *b, const struct moat_vm_launch *l)
{
	_cleanup_free_ char *path = NULL;

	if (l->pod_share == NULL)
		return;
	path = qemu_escape(l->pod_share);
	add(b, "-fsdev");
	addf(b, "local,id=pod,path=%s,security_model=none,multidevs=remap", path);
	add(b, "-device");
	add(b, "virtio-9p-device,fsdev=pod,mount_tag=" MOAT_PROTO_POD_TAG);
}

/* A snapshot's ends (vm-snapshot.h): the stream to restore, which resumes the guest as it was
 * saved (running: QEMU starts it once loaded), and the monitor a restore or a save goes
 * through. Neither is a device: a guest saved by one command line restores under the other. */
static void add_snapshot(struct argv_builder *b, const struct moat_vm_launch *l)
{
	/* the stream's fd is named over the monitor, after x-ignore-shared is set */
	if (l->incoming) {
		add(b, "-incoming");
		add(b, "defer");
	}
	if (l->qmp) {
		add(b, "-chardev");
		addf(b, "socket,id=qmp,fd=%d", MOAT_VM_QEMU_QMP_FD);
		add(b, "-mon");
		add(b, "chardev=qmp,mode=control");
	}
}

char **moat_vm_qemu_argv(const struct moat_vm_launch *l)
{
	struct argv_builder b = { 0 };

	add(&b, l->qemu);
	add_machine(&b, l);
	add_kernel(&b, l);
	add_ports(&b, l);
	add_nics(&b, l);
	add_share(&b, l);
	add_pod_share(&b, l);
	add_snapshot(&b, l);
	return b.v;
}

void moat_vm_argv_free(char **argv)
{
	strv_free(argv);
}

#define FIXED_END (MOAT_VM_QEMU_RAM_FD + 1)

/* fd, moved above every number QEMU finds something at (-1 stays -1). */
static int above_fixed(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, FIXED_END);
}

/* The taps at their numbers (taps[i] already above them all). */
static int place_nics(const struct moat_vm_launch *l, const int *taps)
{
	for (size_t i = 0; i < l->n_nics; i++)
		if (taps[i] < 0 || dup2(taps[i], MOAT_VM_QEMU_NIC_FD(i)) < 0)
			return -1;
	return 0;
}

/* fd (above them all already) at number, if wanted; -1 when that failed. */
static int place(bool wanted, int fd, int number)
{
	if (wanted)
		return fd < 0 ? -1 : dup2(fd, number);
	close(number);
	return 0;
}

/* In the child: the agent's (and the egress tunnel's, the taps', the snapshot's) fds at their
 * numbers, nothing else but stdio and the error pipe, then QEMU; an exec failure goes up the
 * pipe. */
static _Noreturn void child_exec(const struct moat_vm_launch *l, char **argv, int err_fd)
{
	int qemu_fd = above_fixed(l->qemu_fd), agent_fd = above_fixed(l->agent_fd);
	int egress_fd = l->egress ? above_fixed(l->egress_fd) : -1;
	int incoming_fd = l->incoming ? above_fixed(l->incoming_fd) : -1;
	int qmp_fd = l->qmp ? above_fixed(l->qmp_fd) : -1;
	int ram_fd = l->snapshot_ram ? above_fixed(l->ram_fd) : -1;
	int child_errno, taps[MOAT_VM_MAX_NICS];

	if (l->n_nics > MOAT_VM_MAX_NICS)
		_exit(127);
	for (size_t i = 0; i < l->n_nics; i++)
		taps[i] = above_fixed(l->nic_fds[i]);
	err_fd = above_fixed(err_fd);
	if ((l->qemu_fd >= 0 && qemu_fd < 0) || agent_fd < 0 || err_fd < 0 ||
	    dup2(agent_fd, MOAT_VM_QEMU_AGENT_FD) < 0 ||
	    place(l->egress, egress_fd, MOAT_VM_QEMU_EGRESS_FD) < 0 || place_nics(l, taps) < 0 ||
	    place(l->incoming, incoming_fd, MOAT_VM_QEMU_INCOMING_FD) < 0 ||
	    place(l->qmp, qmp_fd, MOAT_VM_QEMU_QMP_FD) < 0 ||
	    place(l->snapshot_ram, ram_fd, MOAT_VM_QEMU_RAM_FD) < 0)
		_exit(127);
	if (MOAT_VM_QEMU_NIC_FD(l->n_nics) < MOAT_VM_QEMU_INCOMING_FD)
		close_range((unsigned)MOAT_VM_QEMU_NIC_FD(l->n_nics), MOAT_VM_QEMU_INCOMING_FD - 1,
			    0);
	close_range(FIXED_END, ~0U, CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC);
	exec_qemu(l, qemu_fd, argv);
	child_errno = errno;
	write_all(err_fd, &child_errno, sizeof(child_errno));
	_exit(127);
}

int moat_vm_launch(const struct moat_vm_launch *l, pid_t *ret_pid, moat_error *err)
{
	char **argv = moat_vm_qemu_argv(l);
	int e[2];
	pid_t pid;
	ssize_t n;
	int child_errno = 0;

	if (pipe2(e, O_CLOEXEC) < 0) {
		moat_vm_argv_free(argv);
		return moat_error_set(err, errno, "microvm: pipe");
	}
	pid = fork();
	if (pid == 0) {
		close(e[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		child_exec(l, argv, e[1]);
	}
	close(e[1]);
	if (pid < 0) {
		close(e[0]);
		moat_vm_argv_free(argv);
		return moat_error_set(err, errno, "microvm: fork");
	}
	n = read_all(e[0], &child_errno, sizeof(child_errno));
	close(e[0]);
	if (n == sizeof(child_errno)) {
		moat_error_set(err, child_errno, "microvm: exec %s", argv[0]);
		moat_vm_argv_free(argv);
		return -child_errno;
	}
	moat_vm_argv_free(argv);
	*ret_pid = pid;
	return 0;
}
