/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container lifecycle: create, start, run, kill, delete, state,
 * list. The command layer calls these and prints; nothing here prints. */
#ifndef MOAT_CONTAINER_H
#define MOAT_CONTAINER_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"
#include "state.h"

struct moat_create_opts {
	const char *root; /* state root (--root) */
	const char *id;
	const char *bundle;         /* NULL: the current directory */
	const char *pid_file;       /* NULL: none */
	const char *console_socket; /* NULL: none */
	bool no_pivot;
	bool no_new_keyring;
	bool systemd_cgroup;
	bool no_cgroup;  /* --cgroup-manager=disabled */
	bool foreground; /* run without --detach: the caller relays a terminal */
	bool rootless;   /* no cgroup unless linux.resources asks for one */
	int preserve_fds;
	int listen_fds;     /* socket activation: fds passed ahead of preserve_fds */
	const char *policy; /* --policy: the policy file (NULL: the default) */
	bool as_vm;         /* invoked as moat-vm: every container is a microVM */
	bool egress_tunnel; /* a microVM reaches the caller's egress proxy, which it serves on
			     * 127.0.0.1:MOAT_EGRESS_PORT in the container (egress.h) */
	bool die_with_parent; /* the created init dies with the calling process until start
			       * (a sandbox's keeper); otherwise it waits for start, as runc's */
};

/* Build the container and leave its init blocked before execve. With
 * process.terminal and no console socket, *ret_console receives the pty
 * master (else -1); ret_console may be NULL when the caller cannot relay. */
int moat_container_create(const struct moat_create_opts *o, pid_t *ret_pid, int *ret_console,
			  moat_error *err);
/* What create does before it makes anything, and nothing more: read the bundle's config,
 * apply the policy, check every field, compile linux.seccomp (through the cache under
 * o->root), choose the isolation. Nothing is made, no process started; for tests and
 * tests/fuzz/fuzz-config.c. */
int moat_container_check(const struct moat_create_opts *o, moat_error *err);
/* Let a created container's init exec the user program. */
int moat_container_start(const char *root, const char *id, moat_error *err);
/* How `run` runs a container. */
struct moat_run_opts {
	bool detach; /* return once the container runs */
	bool keep;   /* in the foreground: leave the container, stopped, once it exits (for
		      * state and delete); a create or start that fails is undone all the same */
};
/* create + start. In the foreground wait for the container, forward signals, delete it
 * afterwards (unless r->keep), and return its exit status (128+N when killed by signal N)
 * in *ret_status. */
int moat_container_run(const struct moat_create_opts *o, const struct moat_run_opts *r,
		       int *ret_status, moat_error *err);
int moat_container_kill(const char *root, const char *id, int sig, bool all, moat_error *err);
int moat_container_delete(const char *root, const char *id, bool force, moat_error *err);

/* Freeze and thaw the container's cgroup (v1 freezer or v2 cgroup.freeze); state then says
 * "paused". Pausing needs a running or created container, resuming a paused one. */
int moat_container_pause(const char *root, const char *id, moat_error *err);
int moat_container_resume(const char *root, const char *id, moat_error *err);
/* Every process of the container (host pids, sorted); none when it is stopped. */
int moat_container_pids(const char *root, const char *id, pid_t **ret_pids, size_t *ret_n,
			moat_error *err);
struct moat_msg_usage;
/* What a microVM container's own cgroup in the guest has counted (proto.h USAGE): its host
 * cgroup holds QEMU, whose OOM kills and refused forks are not the container's. 1 with *ret
 * filled; 0 when the container is not a microVM's. */
int moat_container_guest_usage(const char *root, const char *id, struct moat_msg_usage *ret,
			       moat_error *err);
/* Apply the fields res sets to the running container's cgroup and record them in its saved
 * config. They are first held to the policy (policy, or the default file when NULL): device
 * rules that open every device are refused as at create. Takes res over (it is freed). */
int moat_container_update(const char *root, const char *id, const char *policy,
			  struct oci_resources *res, moat_error *err);

/* Foreground helpers shared by run and exec: the signals passed on to the
 * container (block them before forking), waiting for pid while forwarding
 * them, and the shell's exit status for a wait status (128+N for signal N). */
void moat_forwarded_signals(sigset_t *set);
int moat_wait_foreground(pid_t pid, const sigset_t *set, int *ret_wstatus, moat_error *err);
int moat_exit_status(int wstatus);

/* The annotations a container's state shows, in `moat state` and to every hook, the seccomp
 * listener and the policy's changes alike: the config's own, then what is in force
 * (moat.isolation; moat.vm.accel for a microVM), then one moat.policy.<rule> per change the
 * policy made. isolation, accel and policy may be NULL (left as annotations has them). */
struct oci_string_map *moat_state_annotations(const struct oci_string_map *annotations,
					      const char *isolation, const char *accel,
					      const struct oci_string_map *policy);
/* The same for a saved state (its annotations, isolation and policy changes), with what of
 * linux.resources its cgroup could not apply (moat.cgroup.ignored). */
struct oci_string_map *moat_state_shown_annotations(const struct moat_state *st);

/* The state JSON `moat state` prints, as hooks receive it on stdin. */
char *moat_state_json(const char *oci_version, const char *id, pid_t pid, const char *status,
		      const char *bundle, const char *rootfs, const struct oci_string_map *ann);

/* What `state` prints and `list` shows. */
struct moat_report {
	char *oci_version;
	char *id;
	int64_t pid;
	char *status;
	char *bundle;
	char *rootfs;
	char *created;
	uint32_t owner;
	struct oci_string_map *annotations;
};
extern const struct ocijson_type moat_report_type;

int moat_container_report(const char *root, const char *id, struct moat_report **ret,
			  moat_error *err);
/* Every container under root, sorted by ID. */
int moat_container_list(const char *root, struct moat_report ***ret, size_t *ret_n,
			moat_error *err);
void moat_report_free(struct moat_report *r);

#endif
