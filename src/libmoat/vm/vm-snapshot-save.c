/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: making a snapshot, in the jail (vm-snapshot.h).
 *
 * QEMU boots the guest exactly as the supervisor would, with a QMP monitor on a socket of
 * ours besides and its RAM a memfd of ours. Once the agent's READY comes (the guest has
 * mounted nothing of any container's), the running guest is migrated into the file create
 * opened, past where its RAM goes: getfd passes the fd, `migrate fd:snapshot` writes the
 * stream (without the RAM: x-ignore-shared), query-migrate says when it is complete. The
 * guest, stopped now, is saved as running, so a restore runs it at once. Then its RAM is
 * written in front of the stream and QEMU is killed.
 */
#include "vm-snapshot.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utils.h"
#include "vm-launch.h"
#include "vm-qmp.h"

/* Under TCG a guest boots in about two seconds, more on a loaded machine. */
#define SAVE_TIMEOUT_MS 60000
/* query-migrate's period while the stream is written. */
#define POLL_MS 10

/* Frames from the agent until READY, which a guest at boot sends first. */
static int wait_ready(int agent, uint64_t deadline_ms, moat_error *err)
{
	struct moat_buf in = { 0 };
	int r;

	for (;;) {
		struct moat_msg m;
		size_t used;
		uint8_t chunk[512];
		ssize_t n;

		r = moat_proto_decode(MOAT_PEER_GUEST, in.data, in.len, &used, &m, err);
		if (r > 0) {
			bool ready = m.type == MOAT_MSG_READY;

			moat_msg_clear(&m);
			r = ready ? 0
				  : moat_error_msg(err, EPROTO,
						   "the agent's first message was "
						   "not READY");
			break;
		}
		if (r < 0)
			break;
		r = moat_vm_wait_fd(agent, POLLIN, deadline_ms, err);
		if (r < 0)
			break;
		n = read(agent, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? moat_error_set(err, errno, "read the agent's port")
				  : moat_error_msg(err, EPIPE,
						   "QEMU exited before the agent's READY");
			break;
		}
		moat_buf_append(&in, chunk, (size_t)n);
	}
	moat_buf_free(&in);
	return r;
}

/* Until query-migrate says completed (or failed). */
static int wait_migrated(struct moat_qmp *q, moat_error *err)
{
	for (;;) {
		const char *status_path[] = { "status", NULL };
		const char *desc_path[] = { "error-desc", NULL };
		__attribute__((cleanup(moat_qmp_freep))) yajl_val v = NULL;
		yajl_val st, desc;
		const char *status;

		if (moat_qmp_execute(q, "{\"execute\":\"query-migrate\"}", -1, &v, err) < 0)
			return moat_error_ret(err);
		st = yajl_tree_get(v, status_path, yajl_t_string);
		status = st != NULL ? YAJL_GET_STRING(st) : NULL;
		if (status != NULL && strcmp(status, "completed") == 0)
			return 0;
		if (status != NULL &&
		    (strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0)) {
			desc = yajl_tree_get(v, desc_path, yajl_t_string);
			return moat_error_msg(err, EIO, "the migration %s: %s", status,
					      desc ? YAJL_GET_STRING(desc) : "no reason given");
		}
		if (moat_monotonic_ms() >= q->deadline_ms)
			return moat_error_msg(err, ETIMEDOUT, "the migration did not end in time");
		usleep(POLL_MS * 1000);
	}
}

/* Over the monitor: fd becomes QEMU's "snapshot", and the guest is migrated into it after
 * its RAM, which is then written in front of the stream (vm-snapshot-ram.c). */
static int migrate(struct moat_qmp *q, int fd, int ram_fd, uint64_t ram_size, moat_error *err)
{
	__attribute__((cleanup(moat_qmp_freep))) yajl_val a = NULL, b = NULL, c = NULL;

	/* QEMU's copy of fd shares its offset: the stream goes after the RAM */
	if (lseek(fd, (off_t)ram_size, SEEK_SET) < 0)
		return moat_error_set(err, errno, "seek past the guest's memory");
	if (moat_vm_snapshot_ignore_shared(q, err) < 0 ||
	    moat_qmp_execute(q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"snapshot\"}}",
			     fd, &a, err) < 0 ||
	    /* QEMU's default is 32 MiB/s, a pause of a second for an idle guest's stream */
	    moat_qmp_execute(q,
			     "{\"execute\":\"migrate-set-parameters\","
			     "\"arguments\":{\"max-bandwidth\":10737418240}}",
			     -1, &b, err) < 0 ||
	    moat_qmp_execute(q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:snapshot\"}}",
			     -1, &c, err) < 0)
		return moat_error_ret(err);
	/* done, the guest stays stopped: its memory is what the stream's devices expect */
	if (wait_migrated(q, err) < 0)
		return moat_error_ret(err);
	return moat_vm_ram_store(ram_fd, fd, ram_size, err);
}

int moat_vm_snapshot_save(const struct moat_vm_session *s, int fd, moat_error *err)
{
	uint64_t deadline = moat_monotonic_ms() + SAVE_TIMEOUT_MS;
	uint64_t ram_size = (uint64_t)s->vm.memory_mib << 20;
	struct moat_qmp q = { .fd = -1 };
	struct moat_vm_launch l;
	int sp[2] = { -1, -1 }, qp[2] = { -1, -1 }, r = -1;
	_cleanup_close_ int ram_fd = -1;
	pid_t pid = -1;

	moat_vm_session_launch(s, &l);
	if (l.egress)
		return moat_error_msg(err, EINVAL,
				      "a VM with the egress tunnel is not snapshotted");
	ram_fd = moat_vm_ram_memfd(ram_size, err);
	if (ram_fd < 0)
		return moat_error_prefix(err, "microvm: saving a snapshot");
	l.snapshot_ram = true;
	l.ram_fd = ram_fd;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qp) < 0) {
		r = moat_error_set(err, errno, "socketpair");
		goto out;
	}
	l.agent_fd = sp[1];
	l.qmp = true;
	l.qmp_fd = qp[1];
	if (moat_vm_launch(&l, &pid, err) < 0)
		goto out;
	close(sp[1]);
	close(qp[1]);
	sp[1] = qp[1] = -1;
	if (wait_ready(sp[0], deadline, err) < 0)
		goto out;
	r = moat_qmp_open(&q, qp[0], deadline, err);
	qp[0] = -1; /* q has it, opened or not */
	if (r == 0)
		r = migrate(&q, fd, ram_fd, ram_size, err);
out:
	moat_qmp_close(&q);
	for (int i = 0; i < 2; i++) {
		if (sp[i] >= 0)
			close(sp[i]);
		if (qp[i] >= 0)
			close(qp[i]);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return r < 0 ? moat_error_prefix(err, "microvm: saving a snapshot") : 0;
}
