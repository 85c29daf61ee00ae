/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the processes that become the container. Stage 1 joins and creates
 * namespaces; stage 2 (the container init, PID 1 of a new PID namespace)
 * builds the root filesystem and the process, then waits on the exec fifo. Where
 * nothing is joined, moat clones the init into its new namespaces itself, and
 * there is no stage 1. */
#ifndef MOAT_INIT_H
#define MOAT_INIT_H

#include <stdbool.h>
#include <sys/types.h>

#include "namespaces.h"
#include "oci-config.h"

struct moat_cgroup;
struct moat_seccomp;

struct moat_vm_session;

struct moat_init_args {
	const char *id;
	const struct oci_config *cfg;
	const struct moat_ns_plan *ns;
	const char *rootfs;   /* absolute host path */
	const char *bundle;   /* absolute host path; the init's cwd during setup */
	int sync_fd;          /* child end of the sync socket */
	int parent_sync_fd;   /* moat's end of it: closed at once (sync.h moat_sync_child_attach) */
	pid_t parent;         /* moat's pid: stage 1 and the init die with it until COMMIT */
	bool die_with_parent; /* ... and the init after COMMIT too, until its execve */
	bool host_root;       /* moat is the host's root: its children are not dumpable from
			       * their start (the direct init, in its own user namespace from
			       * its first instruction, can no longer tell) */
	int lock_fd;          /* the parent's locked state directory: closed at once */
	int fifo_fd;          /* O_PATH fd of exec.fifo */
	bool no_pivot;
	bool no_new_keyring;
	int preserve_fds;
	int listen_fds;               /* LISTEN_FDS passed through: fds 3.. ahead of preserve_fds */
	pid_t host_pid;               /* the init's pid on the host, learned from moat */
	struct moat_seccomp *seccomp; /* linux.seccomp, prepared by moat; NULL: none */
	struct moat_vm_session *vm;   /* microVM mode: the init becomes the supervisor
				       * (vm-jail.h); NULL: it execs the program */
	/* What the hooks it runs see in the state, as `moat state` shows it: the user's rootfs
	 * (rootfs above is the jail in microVM mode) and the annotations. */
	const char *state_rootfs;
	const struct oci_string_map *annotations;
	struct moat_cgroup *cg; /* moat's handle of the container's cgroup: its directory fds
				 * are released at once, so no host directory is ever open in
				 * the container (the precondition of CVE-2024-21626) */
	bool join_cgroup_v1;    /* the first child joins cg's v1 hierarchies itself through
				 * the tasks files moat opened (cgroup.h moat_cgroup_join_v1);
				 * create decides, and adds the init only where it did not */
};

/* Load a prepared linux.seccomp into this process; with SCMP_ACT_NOTIFY the listener fd
 * goes to moat over sync_fd (MOAT_SYNC_SECCOMP_FD), which hands it to the listener socket.
 * sc NULL: nothing to do. Shared by the container's init and exec'd processes. */
int moat_init_load_seccomp(struct moat_seccomp *sc, int sync_fd, moat_error *err);

/* The last step before execve, after every syscall of moat's own: load sc (one without
 * SCMP_ACT_NOTIFY; NULL: none), then, without p's no_new_privs, give up the CAP_SYS_ADMIN
 * moat_process_become_user held for it. */
int moat_init_confine_last(struct moat_seccomp *sc, const struct oci_process *p, moat_error *err);

/* Stage 1: runs in the forked child, joins and creates the namespaces, clones the init with
 * CLONE_PARENT and exits; never returns. */
__attribute__((noreturn)) void moat_init_stage1(const struct moat_init_args *a);
/* Or the init itself, cloned by moat straight into the namespaces the config makes, where it
 * joins none and makes no time namespace (create.c init_direct says why): stage 1's work
 * without its process. It tells moat it is in the cgroups (MOAT_SYNC_INIT_PID, value 0), and
 * waits for its id maps (MOAT_SYNC_USERNS_MAPPED) when it has a user namespace; never
 * returns. */
__attribute__((noreturn)) void moat_init_direct(const struct moat_init_args *a);

#endif
