/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the container's process: everything between a finished root
 * filesystem and execve of the user program. */
#ifndef MOAT_PROCESS_H
#define MOAT_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "namespaces.h"
#include "oci-config.h"

/* The PATH a program is looked up in when the environment has none (execvp's), and the one
 * `moat spec` writes; the guest agent looks up the same. */
#define MOAT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Reject what can be judged before anything is created: sysctls the
 * container's namespaces do not own, hostname without a UTS namespace,
 * unknown rlimits and capabilities. Errors name the field. */
int moat_process_validate(const struct oci_config *cfg, const struct moat_ns_plan *ns,
			  moat_error *err);

/* The checks of moat_process_validate that concern the process alone
 * (args, rlimits, capabilities, cwd): shared with `exec`. */
/* The kernel raises an ambient capability only if it is inheritable and permitted too: leave
 * the others out of p with a warning, as runc and crun do (configs from `runc spec` list
 * ambient capabilities without inheritable ones). Leaving one out only takes away. */
void moat_process_drop_unraisable_ambient(struct oci_process *p, moat_error *err);
int moat_process_validate_one(const struct oci_process *p, moat_error *err);

/* rlimits and umask. */
/* The RLIMIT_* number of an OCI rlimit type ("RLIMIT_NOFILE"), or -1. */
int moat_process_rlimit_resource(const char *name);

int moat_process_set_limits(const struct oci_process *p, moat_error *err);
/* Inside a user namespace nothing can raise a hard rlimit: that takes CAP_SYS_RESOURCE in
 * the initial one. So the parent, outside, raises the hard limits of the child pid to what p
 * asks wherever that is higher, before the child sets p's limits itself. Where the parent
 * cannot either (no CAP_SYS_RESOURCE, rootless), nothing changes and the child's own
 * setrlimit fails naming the field. */
void moat_process_raise_hard_limits(pid_t pid, const struct oci_process *p);

/* Kernel settings written through a private procfs instance, before the
 * container's own /proc exists and before its read-only paths apply:
 * linux.sysctl (as root of the container's user namespace, which the
 * namespaces' sysctls belong to) and process.oomScoreAdj (before that switch:
 * moat's processes are not dumpable, so their /proc files are the host root's). */
int moat_process_write_sysctl(const struct oci_config *cfg, moat_error *err);

/* A procfs instance of the caller's pid namespace, mounted nowhere (an fsmount fd): moat's
 * own view, whatever the container's /proc is or whether it has one. */
int moat_process_private_procfs(int *ret_fd, moat_error *err);
int moat_process_write_oom_score_adj(const struct oci_process *p, moat_error *err);

/* In the container root, before the identity switch: hostname, domainname,
 * session keyring, then moat_process_set_limits. */
int moat_process_setup_env(const struct oci_config *cfg, const struct moat_ns_plan *ns,
			   bool no_new_keyring, moat_error *err);

/* Resolve args[0] through the container's PATH now, so a missing program
 * fails `create` rather than `start`. Builds the final environment (HOME
 * added from /etc/passwd when unset). */
struct moat_exec {
	char *path;
	char **argv; /* NULL-terminated; the strings are the config's */
	char **envp; /* owned */
};
/* With listen_fds > 0 the environment says so to the program (sd_listen_fds(3)):
 * LISTEN_FDS=listen_fds, LISTEN_PID=our pid (as the program will see it), and moat's own
 * LISTEN_FDNAMES if it has one; the config's values of these are replaced. */
int moat_process_prepare_exec(const struct oci_process *p, int listen_fds, struct moat_exec *ret,
			      moat_error *err);
void moat_exec_free(struct moat_exec *e);

/* cwd (resolved inside the root), groups, gid, uid, capabilities,
 * no_new_privs. After this the process holds only what the config grants, but with
 * hold_sys_admin: CAP_SYS_ADMIN stays effective and permitted (in no other set, so nothing
 * exec'd gets it), for a seccomp filter loaded without no_new_privs as the last step before
 * execve; moat_process_release_sys_admin then gives it up. */
int moat_process_become_user(const struct oci_process *p, bool hold_sys_admin, moat_error *err);
int moat_process_release_sys_admin(const struct oci_process *p, moat_error *err);

/* Mark every fd from 3 + preserve_fds up close-on-exec. */
int moat_process_close_fds(int preserve_fds, moat_error *err);

#endif
