/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the guest agent, PID 1 of a moat microVM.
 *
 * It boots the guest's user space (devtmpfs, proc, sysfs), finds the
 * virtio-serial port `moat.0`, says READY, and then does what the host's
 * supervisor asks in the protocol of proto.h: set up the container's rootfs
 * and run its workload (START), make more containers of the pod beside it
 * (CONTAINER), run more processes in any of them (EXEC), freeze and thaw
 * them (FREEZE), relay their stdio, forward signals and terminal sizes,
 * report how they end, and power the guest off when the host says SHUTDOWN
 * (after the workload's EXITED) or closes its end.
 *
 * Files, one concern each:
 *   agent.c          main, the event loop, the host's messages, the processes
 *   agent-boot.c     the kernel command line, finding the port, powering off
 *   agent-io.c       the port: frames in and out; stdio relay; stdin credit
 *   agent-container.c the containers: namespaces, cgroups, making processes inside them
 *   agent-mounts.c   rootfs, the config's mounts, /dev, switching root
 *   agent-process.c  making a process as the spec says, up to execve
 *   agent-egress.c   the egress tunnel's guest end (src/proto/tunnel.h)
 *   agent-net.c      the container's interfaces on the guest's virtio-net devices
 *
 * The guest is the sandbox: the agent runs as root with every capability, in
 * the guest's own namespaces; the container's processes run in namespaces of
 * the container's (a mount namespace always, PID and cgroup ones when the
 * config has them), under the credentials, capabilities, limits and seccomp
 * filter the host sent.
 */
#ifndef MOAT_GUEST_AGENT_H
#define MOAT_GUEST_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "proto.h"

/* The agent's own limits, with their reasons. */
enum {
	/* Processes (the workload and exec'd ones) known at once: bounds the
	 * table and the fds polled; a container needing more execs at once
	 * is not one moat serves. */
	AGENT_MAX_PROCS = 256,
	/* Containers of a pod at once (the workload's and CONTAINER's): far above the
	 * containers of a real pod, and each holds a cgroup and a few fds. */
	AGENT_MAX_CTRS = 64,
	/* Output queued for the host above which the agent stops reading the
	 * processes' output: a host that does not read stops the workload at
	 * its next write instead of filling the guest's memory. (The port's
	 * virtqueue holds up to 128 writes of 32 KiB on top of this.) */
	AGENT_OUT_HIGH = 256 << 10,
	/* Above this (replies and errors only get past AGENT_OUT_HIGH) the
	 * agent stops reading the port too, so a host that sends but never
	 * reads cannot grow the queue without bound. */
	AGENT_OUT_LIMIT = 4 << 20,
	/* How long a process that has exited may keep its output open (a
	 * background child holding it) before EXITED is sent anyway. What it
	 * wrote before it exited is relayed first, however long the host
	 * takes to read it. */
	AGENT_DRAIN_MS = 2000,
	/* After SHUTDOWN: how long what is queued for the host may take to
	 * go before the guest powers off anyway. */
	AGENT_STOP_FLUSH_MS = 1000,
	/* How long to wait, at boot, for the host to connect to the port and for the port's
	 * device node. The host's boot deadline (vm-relay.c) is what ends a boot that does not
	 * come up; these only keep an agent from waiting forever. They are long: the guest's
	 * clock is the host's, and on a loaded host (twenty TCG guests on two cores) a guest
	 * may get a few seconds of CPU in a minute; an agent that gave up after 5 s powered
	 * its guest off mid-boot. */
	AGENT_CONNECT_WAIT_MS = 600000,
	AGENT_PORT_WAIT_MS = 600000,
	/* Stdin bytes consumed before a CREDIT is sent (also sent whenever a
	 * process's stdin queue empties). */
	AGENT_CREDIT_BATCH = 16 << 10,
};

enum agent_rootfs_type {
	ROOTFS_VIRTIOFS,
	ROOTFS_9P,
};

/* From the kernel command line (moat.*). */
struct agent_config {
	char port[256];                /* moat.port=PATH; empty: find `moat.0` by name */
	enum agent_rootfs_type rootfs; /* moat.rootfs=virtiofs|9p */
	char tag[64];                  /* moat.tag=, the rootfs share's tag; default moatroot */
	bool debugexit;                /* moat.debugexit=1: leave through isa-debug-exit */
	bool egress;                   /* moat.egress=1: a tunnel to the egress proxy */
	char error[256]; /* what went wrong at boot (a bad moat.* option, no port access
				  * for moat.debugexit, lo down): reported after READY; START
				  * fails with it */
};

/* A container: the workload's (START) or a member of its pod (CONTAINER). */
struct ctr {
	uint32_t id;     /* its first process's */
	int pidfd;       /* its first process, once made; -1 before */
	int clone;       /* the namespaces it has of its own, as CLONE_NEW* */
	int joins;       /* those an exec'd process joins: its own, and the pod's it shares */
	int cgroup_fd;   /* its cgroup in the guest */
	char cgroup[32]; /* the cgroup's name, below the guest's root */
	int devpts_fd;   /* its devpts, where its ptys come from; -1: none */
	bool frozen;
	bool over; /* its first process ended: everything else of it was killed */
};

struct proc {
	uint32_t id;
	pid_t pid;
	struct ctr *ctr; /* the container it runs in */
	bool first;      /* the container's first process: it ends with it */
	bool workload;   /* START's process: the guest ends with it */
	bool terminal;
	int err_fd;         /* the child's setup report; EOF: it reached execve */
	int out_fd[2];      /* stdout, stderr; with a terminal the pty master, -1 */
	int in_fd;          /* stdin's pipe, or a dup of the pty master; -1 when closed */
	int tty_fd;         /* the pty master, for RESIZE; -1 without a terminal */
	struct moat_buf in; /* stdin the process has not read yet */
	bool in_close;      /* close stdin once `in` is written */
	uint32_t credit;    /* stdin consumed and not yet acknowledged */
	bool started;       /* STARTED sent */
	bool failed;        /* setup failed: ERROR sent, and no EXITED */
	bool reaped;
	int status;         /* its wait status, once reaped */
	uint64_t reaped_at; /* monotonic ms */
	size_t pending[2];  /* output in the pipes when it was reaped, not relayed yet */
};

struct agent {
	struct agent_config cfg;
	int port;
	int sigfd;
	int cap_last;        /* the guest kernel's last capability */
	struct moat_buf out; /* frames for the host, not yet written */
	/* An OUTPUT frame whose data goes to the port by splice (agent-io.c): its prefix is
	 * written, and its `staged` bytes left, in the staging pipe, go before anything in
	 * `out`. */
	int stage[2];
	size_t staged;
	bool no_splice;      /* no staging pipe, or a splice failed: read and queue instead */
	struct moat_buf inb; /* bytes from the host, not yet a whole frame */
	struct proc *procs[AGENT_MAX_PROCS];
	size_t n_procs;
	bool started;       /* START was done */
	bool workload_over; /* the workload's EXITED (or ERROR) is queued */
	bool input_broken;  /* the host's stream lost its framing: ignore it */
	bool stopping;      /* SHUTDOWN, or the host went away */
	uint64_t deadline;  /* once stopping, power off at this time (ms) */
	int exit_code;      /* the workload's, for moat.debugexit */
	bool has_acpi;      /* the guest can power off (else it reboots) */
	int debug_port_fd;  /* /dev/port, for moat.debugexit without ioperm */
	int own_pidns;      /* the agent's PID namespace, where a container's own are made */
	int cgroup_root;    /* the guest's cgroup2 hierarchy; -1 before START */
	bool pod_mounted;   /* the pod's share is on AGENT_POD_DIR */
	struct ctr *ctrs[AGENT_MAX_CTRS]; /* ctrs[0]: the workload's, once START came */
	size_t n_ctrs;
};

/* Where the agent mounts the pod's share (MOAT_PROTO_POD_TAG), in its own view. */
#define AGENT_POD_DIR "/pod"

/* agent.c */
uint64_t agent_now_ms(void);
/* Something went wrong (always on the console). */
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What happens, for whoever boots without `quiet`. */
void agent_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* agent-boot.c: these look at the guest's own root, so they run at boot. */
void agent_sleep_ms(long ms);
void agent_fill_stdio(void);
/* moat.* options; a bad one is kept in cfg->error for the host. */
void agent_parse_cmdline(struct agent_config *cfg);
/* The port's fd (non-blocking), or -1 when it never appeared. */
int agent_open_port(const struct agent_config *cfg);
/* The virtio-serial port called name (at device when that is not empty), the same way. */
int agent_open_named_port(const char *name, const char *device);
int agent_wait_for_host(int port);
int agent_read_cap_last(void);
/* Bring the guest's lo up; a failure goes to cfg->error. */
void agent_loopback_up(struct agent_config *cfg);
/* agent-net.c: START's interfaces given to the guest's virtio-net devices. */
int agent_net_setup(const struct moat_msg_start *s, moat_error *err);
/* agent-entropy.c: START's seed credited to the guest's RNG, which is rekeyed from it. */
int agent_reseed(const uint8_t *seed, size_t len, moat_error *err);
/* agent-egress.c: with moat.egress=1, the tunnel's process; a failure goes to cfg->error. */
void agent_egress_start(struct agent_config *cfg);
/* How the guest will end; refuses moat.debugexit without port access. */
void agent_prepare_exit(struct agent *a);
/* Flush what the host may still take, kill everything, sync, and end the
 * guest (isa-debug-exit when asked). */
__attribute__((noreturn)) void agent_power_off(struct agent *a);

/* agent-io.c */
/* Queue a frame for the host (the agent only builds valid ones: a failure
 * is a bug, logged). */
void agent_send(struct agent *a, const struct moat_msg *m);
void agent_send_error(struct agent *a, uint32_t id, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Write what the port takes now. */
void agent_flush(struct agent *a);
/* Whether anything is still to go to the host: frames queued, or a splice's bytes. */
bool agent_queued(const struct agent *a);
/* The host is gone: whatever was to go to it is dropped. */
void agent_drop_queued(struct agent *a);
/* Read from the port into a->inb. 0: read or nothing there; -EPIPE: the
 * host is gone. */
int agent_read_port(struct agent *a);
/* Output became readable: relay it as DATA (or EOF as empty DATA). */
void agent_relay_output(struct agent *a, struct proc *p, int which);
/* Stdin for the process, from DATA. */
void agent_queue_stdin(struct agent *a, struct proc *p, const uint8_t *data, size_t len);
/* Write queued stdin the process can take now; send CREDIT. */
void agent_write_stdin(struct agent *a, struct proc *p);
void agent_close_fd(int *fd);

/* agent-container.c */
/* START (the first) or CONTAINER: a container of s's namespaces, with its cgroup and s's
 * limits, in the table. */
int agent_ctr_new(struct agent *a, uint32_t id, const struct moat_msg_start *s, struct ctr **ret,
		  moat_error *err);
struct ctr *agent_find_ctr(struct agent *a, uint32_t id);
/* Remove the containers that are over and have no process left. */
void agent_ctrs_collect(struct agent *a);
/* Kill every process of c (cgroup.kill). */
int agent_ctr_kill(struct ctr *c);
/* FREEZE: freeze or thaw every process of c, and wait until the kernel says so. */
int agent_ctr_freeze(struct ctr *c, bool frozen, moat_error *err);
/* UPDATE: c's pids.max, memory.max and cpu.max become r's (absent: no limit). */
int agent_ctr_update(struct ctr *c, const struct moat_proto_resources *r, moat_error *err);
/* What c's cgroup has counted, for USAGE (proto.h): OOM kills, forks refused at pids.max, its
 * peaks and CPU time. */
int agent_ctr_usage(const struct ctr *c, struct moat_msg_usage *u, moat_error *err);
/* Make a child in c: its first process in new namespaces (c->pidfd holds it), or an exec'd
 * process in c's PID namespace. fork's returns. */
pid_t agent_clone(struct agent *a, struct ctr *c, bool first, moat_error *err);
/* In an exec'd process: join c's other namespaces (its root with them). */
int agent_container_join(const struct agent *a, const struct ctr *c, moat_error *err);
/* In c's first process, before its rootfs: the pod's namespaces it shares, and the ones it
 * makes itself. */
int agent_container_unshare(const struct agent *a, const struct ctr *c, moat_error *err);
/* CONTAINER: the pod's share on AGENT_POD_DIR, once. */
int agent_pod_share(struct agent *a, moat_error *err);
/* The workload's setup done: its devpts and its pty master (each -1 when none) go to the
 * agent, which takes them with agent_recv_setup (-EPIPE: the setup failed instead). */
int agent_send_setup(int sock, int devpts, int master, moat_error *err);
int agent_recv_setup(int sock, int *ret_devpts, int *ret_master);

/* agent-mounts.c */
/* At boot: /dev, /proc, /sys of the guest itself. */
int agent_mount_base(moat_error *err);
/* START or CONTAINER, in the container's first process: the rootfs (the share, or for a
 * CONTAINER its directory in the pod's), its mounts and /dev, hostname; then switch root into
 * it. *ret_devpts: the container's devpts (O_PATH), or -1 when it has none at /dev/pts. */
int agent_setup_rootfs(const struct agent_config *cfg, const struct moat_msg_start *s,
		       int *ret_devpts, moat_error *err);

/* agent-process.c */
/* Check what the parent can check, then make the process in p->ctr: its first (start: its
 * START or CONTAINER) or an exec'd one (start NULL). The child reports its own failures on
 * p->err_fd. */
int agent_spawn(struct agent *a, struct proc *p, const struct moat_proto_process *spec,
		const struct moat_proto_winsize *ws, const struct moat_msg_start *start,
		moat_error *err);
/* Read the child's setup report (p->err_fd is readable): 0 when it reached
 * execve, 1 when it failed (msg and *ret_errno say why, errno 0 if none),
 * -EAGAIN when there is nothing to read yet. Closes p->err_fd when done. */
int agent_read_report(struct proc *p, char *msg, size_t size, int *ret_errno);

#endif
