/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: OCI hooks (config.json "hooks"): the programs the runtime runs at
 * fixed points of a container's lifecycle.
 *
 * This module only runs them. Where a kind runs (which namespaces, which
 * side of pivot_root) and what a failure means (abort the operation or log a
 * warning) is the caller's decision; see the call sites in create.c, init.c
 * and container.c. Nothing here prints. */
#ifndef MOAT_HOOKS_H
#define MOAT_HOOKS_H

#include <stddef.h>

#include "error.h"
#include "oci-config.h"

/* Which hook list. The config name ("createRuntime") appears in errors:
 * "hooks.createRuntime[1] '/bin/x': exited with status 3". */
enum moat_hook_kind {
	MOAT_HOOK_PRESTART,
	MOAT_HOOK_CREATE_RUNTIME,
	MOAT_HOOK_CREATE_CONTAINER,
	MOAT_HOOK_START_CONTAINER,
	MOAT_HOOK_POSTSTART,
	MOAT_HOOK_POSTSTOP,
	MOAT_HOOK_KIND_COUNT,
};

/* "prestart", "createRuntime", ... as config.json spells the list. */
const char *moat_hook_kind_name(enum moat_hook_kind kind);

/* The hooks of that kind (NULL and 0 when hooks is NULL or has none). */
struct oci_hook *const *moat_hooks_list(const struct oci_hooks *hooks, enum moat_hook_kind kind,
					size_t *ret_n);

/* Check what can be checked before anything is created: every path is
 * absolute, as the spec requires. */
int moat_hooks_validate(const struct oci_hooks *hooks, moat_error *err);

/* Run the hooks of one kind, in order. Each is forked and execve'd with
 *   argv   hook.args (args[0] is argv[0]), or just { path } when absent;
 *   env    exactly hook.env when it is present (`"env": []` is an empty environment); when
 *          it is absent, moat's own environment, as runc and crun give it (but see
 *          moat_hooks_run_with_env);
 *   stdin  a pipe holding state_json and then EOF;
 *   stdout and stderr  the caller's fds 1 and 2;
 *   cwd    the given directory, or the caller's when cwd is NULL;
 *   no other fd, no blocked signal, every signal at its default action,
 *   its own process group.
 * With hook.timeout, a hook still running after that many seconds is killed
 * with SIGKILL, together with its process group. Whatever the hook leaves
 * running after it exits (a daemon) is not waited for.
 *
 * Failures name the kind, index and path and say what happened:
 *   "hooks.poststop[0] '/usr/bin/x': exited with status 3"   (ECANCELED)
 *   "...: killed by signal 9 (SIGKILL)"                       (ECANCELED)
 *   "...: timed out after 5 s: killed"                        (ETIMEDOUT)
 *   "...: exec: No such file or directory"                    (the errno)
 * For prestart, createRuntime, createContainer and startContainer the first
 * failure stops the list. For poststart and poststop (whose failures are
 * warnings) every hook runs and the error joins the failures with "; ".
 *
 * Safe to call from any process moat forks (no global state) provided it
 * is single-threaded. The hook is waited for with waitpid, so SIGCHLD must
 * not be ignored; a timeout also needs pidfd_open and ppoll. */
int moat_hooks_run(const struct oci_hooks *hooks, enum moat_hook_kind kind, const char *state_json,
		   const char *cwd, moat_error *err);
/* The same, but a hook without env gets env (env_len strings) instead of moat's environment.
 * The container's init runs createContainer and startContainer so, with process.env: those
 * run in the container's namespaces (startContainer as part of the container), and see what
 * its process would see, as under runc. */
int moat_hooks_run_with_env(const struct oci_hooks *hooks, enum moat_hook_kind kind,
			    const char *state_json, const char *cwd, char *const *env,
			    size_t env_len, moat_error *err);

#endif
