/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: running another process in an existing container (`moat exec`). */
#ifndef MOAT_EXEC_H
#define MOAT_EXEC_H

#include <stdbool.h>

#include "error.h"
#include "oci-config.h"

struct moat_exec_opts {
	const char *root;
	const char *id;
	/* The process to run, complete (from --process, or built by
	 * moat_exec_default_process and the flags). Borrowed. */
	const struct oci_process *process;
	const char *console_socket; /* with process->terminal: where the pty goes */
	const char *pid_file;
	bool detach;
	int preserve_fds;
	const char *policy; /* --policy, or NULL for the default (policy.h): the process is held
			     * to its capability-ceiling and no-new-privileges rules */
	/* --cgroup: the sub-cgroups of the container's cgroup the process goes into, in
	 * runc's syntax (cgroup-sub.h); none: the container's cgroup itself */
	char *const *cgroups;
	size_t n_cgroups;
	/* --ignore-paused: exec into a paused container too. The process joins the frozen
	 * cgroup and runs nothing until the container is resumed: moat exec (--detach too)
	 * returns only then. Without it a paused container is refused, as by runc. */
	bool ignore_paused;
	/* In the foreground, also the process's wait status (NULL: not wanted); a microVM's
	 * guest reports an exit code, 128+N standing for signal N. */
	int *ret_wstatus;
};

/* The container's own process (from its saved config), as the base that
 * exec flags modify: env, user, cwd, capabilities, rlimits, no_new_privs.
 * Release with oci_process_free. */
int moat_exec_default_process(const char *root, const char *id, struct oci_process **ret,
			      moat_error *err);

/* Join every namespace of the container and its cgroup, apply process, and
 * run it. In the foreground wait for it (relaying its terminal, forwarding
 * signals) and return its status (128+N when killed by signal N) in
 * *ret_status; with detach return once it runs. */
int moat_container_exec(const struct moat_exec_opts *o, int *ret_status, moat_error *err);

#endif
