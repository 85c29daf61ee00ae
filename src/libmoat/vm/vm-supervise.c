/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the supervisor the container init becomes in microVM mode (vm-supervise.h). */
#include "vm-supervise.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "strv.h"
#include "utils.h"
#include "vm-egress.h"
#include "vm-guest-spec.h"
#include "vm-jail.h"
#include "vm-launch.h"
#include "vm-pod.h"
#include "vm-relay.h"
#include "vm-snapshot.h"
#include "vm-virtiofs.h"

/* Under TCG a guest boots in about a second; on a loaded machine several. */
#define VM_BOOT_TIMEOUT_MS 60000

void moat_vm_session_free(struct moat_vm_session *s)
{
	if (s == NULL)
		return;
	if (s->exec_fd >= 0)
		close(s->exec_fd);
	if (s->pod_conn >= 0)
		close(s->pod_conn);
	if (s->snapshot_fd >= 0)
		close(s->snapshot_fd);
	if (s->snapshot_save_fd >= 0)
		close(s->snapshot_save_fd);
	if (s->virtiofsd_fd >= 0)
		close(s->virtiofsd_fd);
	free(s->snapshot_path);
	free(s->pod_share);
	moat_vm_net_start_free(&s->start);
	moat_vm_start_free(&s->start);
	moat_vm_net_clear(&s->net);
	free(s->workload_index);
	strv_free_n(s->workload_landed, s->n_workload);
	strv_free(s->guest_dirs);
	free(s);
}

static bool listed(char **v, const char *s)
{
	for (size_t i = 0; v[i] != NULL; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

int moat_vm_check_network(const struct moat_vm_session *s, moat_error *err)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	_cleanup_(strv_freep) char **carried = moat_vm_net_names(&s->net);
	int r = 0;

	if (ifs == NULL)
		return moat_error_set(err, errno, "microvm: list the network interfaces");
	for (i = ifs; i->if_index != 0 && r == 0; i++)
		if (strcmp(i->if_name, "lo") != 0 && !listed(carried, i->if_name))
			r = moat_error_msg(
				err, EOPNOTSUPP,
				"microvm: interface %s appeared after create took the "
				"namespace's interfaces into the guest (an engine's "
				"prestart hook adds one so, as Docker's does); the guest "
				"cannot have it",
				i->if_name);
	if_freenameindex(ifs);
	return r;
}

/* On a terminal the guest's pty does the line discipline: this side passes bytes through. */
static void raw_terminal(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
}

struct moat_msg_start moat_vm_start_message(const struct moat_vm_session *s)
{
	struct moat_msg_start m = s->start;

	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME, &now) == 0 && now.tv_sec > 0) {
		m.has_realtime = true;
		m.realtime_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	}
	m.mounts = xcalloc(m.n_mounts + 1, sizeof(*m.mounts));
	memcpy(m.mounts, s->start.mounts, m.n_mounts * sizeof(*m.mounts));
	for (size_t k = 0; k < s->n_workload; k++) {
		size_t i = s->workload_index[k];

		if (i < m.n_mounts && s->workload_landed[k] != NULL &&
		    strcmp(m.mounts[i].type, MOAT_PROTO_SHARE_MOUNT) == 0)
			m.mounts[i].dest = s->workload_landed[k];
	}
	return m;
}

void moat_vm_start_message_free(struct moat_msg_start *m)
{
	free(m->mounts);
	m->mounts = NULL;
}

/* The taps and their MACs, into fds and macs, for QEMU. */
static void add_nics(struct moat_vm_launch *l, const struct moat_vm_net *net, int *fds,
		     uint8_t (*macs)[6])
{
	l->n_nics = net->n < MOAT_VM_MAX_NICS ? net->n : MOAT_VM_MAX_NICS;
	for (size_t i = 0; i < l->n_nics; i++) {
		fds[i] = net->nics[i].tap_fd;
		memcpy(macs[i], net->nics[i].link.mac, 6);
	}
	l->nic_fds = fds;
	l->nic_macs = (const uint8_t(*)[6])macs;
}

void moat_vm_session_launch(const struct moat_vm_session *s, struct moat_vm_launch *ret)
{
	*ret = (struct moat_vm_launch){ .qemu = MOAT_VM_JAIL_QEMU,
					.qemu_fd = s->qemu_fd,
					.kernel = MOAT_VM_JAIL_KERNEL,
					.initramfs = MOAT_VM_JAIL_INITRAMFS,
					.rootfs = MOAT_VM_JAIL_ROOTFS,
					.rootfs_readonly = s->share_readonly,
					.virtiofs_socket =
						s->virtiofs ? MOAT_VM_JAIL_VIRTIOFS_SOCKET : NULL,
					.pod_share = MOAT_VM_JAIL_POD,
					.vm = &s->vm,
					.tsc_khz = s->tsc_khz,
					.egress = s->egress };
}

/* A restore's QEMU: the guest's RAM copied from the snapshot into a memfd of its own
 * (*ram_fd), the stream, and a monitor (qp) to name the stream on (vm-snapshot.h). */
static int restore_ends(const struct moat_vm_session *s, struct moat_vm_launch *l, int *ram_fd,
			int qp[2], moat_error *err)
{
	*ram_fd = moat_vm_ram_load(s->snapshot_fd, (uint64_t)s->vm.memory_mib << 20, err);
	if (*ram_fd < 0)
		return moat_error_prefix(err, "microvm: the snapshot %s", s->snapshot_path);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qp) < 0)
		return moat_error_set(err, errno, "microvm: socketpair for QEMU's monitor");
	l->snapshot_ram = true;
	l->ram_fd = *ram_fd;
	l->incoming = true;
	l->incoming_fd = s->snapshot_fd;
	l->qmp = true;
	l->qmp_fd = qp[1];
	return 0;
}

/* Once QEMU runs: the monitor starts the restore, and QEMU alone holds the RAM. */
static int restore_start(const struct moat_vm_session *s, int *ram_fd, int qp[2], moat_error *err)
{
	int monitor = qp[0];

	close(*ram_fd);
	close(qp[1]);
	*ram_fd = qp[0] = qp[1] = -1;
	if (moat_vm_snapshot_incoming(monitor, moat_monotonic_ms() + VM_BOOT_TIMEOUT_MS, err) < 0)
		return moat_error_prefix(err,
					 "microvm: QEMU could not restore the guest from the "
					 "snapshot %s (delete the file, or set "
					 "annotations." MOAT_VM_BOOT_ANNOTATION "=cold)",
					 s->snapshot_path);
	return 0;
}

int moat_vm_supervise(const struct moat_vm_session *s, bool terminal)
{
	struct moat_msg_start start = moat_vm_start_message(s);
	moat_error err = MOAT_ERROR_INIT;
	struct moat_vm_launch l;
	struct moat_vm_relay r = { .in_fd = 0,
				   .out_fd = 1,
				   .err_fd = 2,
				   .terminal = terminal,
				   .start = &start,
				   .exec_fd = s->exec_fd,
				   .virtiofsd = s->virtiofsd,
				   .boot_timeout_ms = VM_BOOT_TIMEOUT_MS };
	int sp[2], ep[2] = { -1, -1 }, qp[2] = { -1, -1 }, code = -1, nic_fds[MOAT_VM_MAX_NICS];
	_cleanup_close_ int ram_fd = -1;
	uint8_t nic_macs[MOAT_VM_MAX_NICS][6], seed[MOAT_PROTO_SEED_SIZE];
	pid_t tunnel;

	/* every restore of a snapshot starts with one RNG state: the agent reseeds it with this */
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
		moat_error_set(&err, errno, "microvm: getrandom for the guest's seed");
		goto fail;
	}
	start.seed = seed;
	start.seed_len = sizeof(seed);
	moat_vm_session_launch(s, &l);
	if (s->snapshot_fd >= 0) {
		if (restore_ends(s, &l, &ram_fd, qp, &err) < 0)
			goto fail;
		r.snapshot = s->snapshot_path;
	}
	/* QEMU runs as the same uid: it may not ptrace or read the supervisor, which holds the
	 * exec clients' fds and speaks for the container. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		moat_error_set(&err, errno, "microvm: socketpair");
		goto fail;
	}
	l.agent_fd = sp[1];
	if (s->egress && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ep) < 0) {
		moat_error_set(&err, errno, "microvm: socketpair for the egress tunnel");
		goto fail;
	}
	l.egress_fd = ep[1];
	add_nics(&l, &s->net, nic_fds, nic_macs);
	if (moat_vm_launch(&l, &r.vmm, &err) < 0)
		goto fail;
	moat_fault_step("vm:launched");
	close(sp[1]);
	if (s->snapshot_fd >= 0 && restore_start(s, &ram_fd, qp, &err) < 0)
		goto fail;
	if (s->egress) {
		close(ep[1]);
		if (moat_vm_egress_start(ep[0], &tunnel, &err) < 0)
			goto fail;
	}
	r.agent_fd = sp[0];
	if (terminal)
		raw_terminal(0);
	if (moat_vm_relay_run(&r, &code, &err) < 0)
		goto fail;
	moat_vm_start_message_free(&start);
	return code;
fail:
	for (int i = 0; i < 2; i++)
		if (qp[i] >= 0)
			close(qp[i]);
	fprintf(stderr, "moat: %s\n", err.msg ? err.msg : "microvm: failed");
	moat_error_clear(&err);
	moat_vm_start_message_free(&start);
	return code >= 0 ? code : 125;
}
