/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what a made sandbox does (sandbox.h): run a command in it, copy files in and out,
 * tell what changed.
 *
 * A command of a one-shot run and a session's are one thing: a fresh baseline of the upper
 * layer, the command run and watched (sandbox-command.c), and the files it changed. They
 * differ in what a kill reaches. A run's kill is the whole sandbox, which ends with it; a
 * session's spares the sandbox's init (container mode), so the session outlives a command
 * killed at its timeout, while a microVM's is the guest itself, torn down. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "oci-cleanup.h"
#include "sandbox-internal.h"
#include "utils.h"

int moat_sandbox_exec(struct moat_sandbox *s, const struct moat_sandbox_opts *cmd, int abort_fd,
		      struct moat_sandbox_result **ret, moat_error *err)
{
	_cleanup_(sb_baseline_freep) struct sb_baseline *fresh = NULL;
	_cleanup_(oci_process_freep) struct oci_process *proc = NULL;
	struct sb_target t = sb_target_of(s);
	struct moat_sandbox_result *r;
	const struct sb_baseline *base = s->baseline;
	struct timespec t0, done;
	off_t log_from = sb_egress_mark(s);
	int rc;

	if (cmd->argv == NULL || cmd->argv[0] == NULL)
		return moat_error_msg(err, EINVAL, "sandbox: no program to run (after --)");
	if (!cmd->session)
		t.spare = 0;
	t.fresh = !cmd->session || cmd->first_command;
	clock_gettime(CLOCK_REALTIME, &t0);
	r = sb_result_new(s, cmd->argv);
	r->created = t0; /* this command's beginning; a run sets its sandbox's */
	/* a session's command: what it changed, not what the commands before it did */
	if (cmd->session && sb_baseline_take(&s->layer, &fresh, err) < 0)
		goto failed;
	if (fresh != NULL)
		base = fresh;
	if (sb_command_process(cmd, &proc, err) < 0)
		goto failed;
	rc = sb_command_run(&t, cmd, proc, &s->layer, abort_fd, r, err);
	if (rc < 0)
		goto failed;
	/* a run is over: nothing of it keeps going while the files are read */
	if (!cmd->session)
		sb_kill(&t);
	if (sb_diff(&s->layer, base, r, err) < 0)
		sb_result_fail(r, err);
	sb_egress_collect(s, log_from, r);
	goto out;
failed:
	sb_result_fail(r, err);
	if (r->ended.tv_sec == 0)
		clock_gettime(CLOCK_REALTIME, &r->ended);
out:
	clock_gettime(CLOCK_REALTIME, &done);
	r->setup_ms = r->started.tv_sec ? sb_ms_between(&t0, &r->started) : 0;
	r->run_ms = r->started.tv_sec ? sb_ms_between(&r->started, &r->ended) : 0;
	r->teardown_ms = sb_ms_between(&r->ended, &done);
	*ret = r;
	return 0;
}

void moat_sandbox_stop(struct moat_sandbox *s)
{
	struct sb_target t = sb_target_of(s);

	sb_kill(&t);
}

int moat_sandbox_copy_in(struct moat_sandbox *s, int src_fd, const char *src_name, const char *path,
			 moat_error *err)
{
	_cleanup_free_ char *arg = xasprintf("%s %s:%s", src_name, s->name, path);
	struct sb_copy c = { .o = &s->o, .flag = "cp", .arg = arg };

	return sb_copy_in_fd(&c, s->root_fd, src_fd, src_name, path, err);
}

int moat_sandbox_copy_out(struct moat_sandbox *s, const char *path, int dst_dir,
			  const char *dst_name, moat_error *err)
{
	_cleanup_free_ char *arg = xasprintf("%s:%s", s->name, path);
	struct sb_copy c = { .o = &s->o, .flag = "cp", .arg = arg };

	return sb_copy_out_fd(&c, s->root_fd, path, dst_dir, dst_name, err);
}

int moat_sandbox_diff(struct moat_sandbox *s, struct moat_sandbox_result **ret, moat_error *err)
{
	_cleanup_(moat_sandbox_result_freep) struct moat_sandbox_result *r = sb_result_new(s, NULL);

	if (sb_diff(&s->layer, s->baseline, r, err) < 0)
		return moat_error_ret(err);
	*ret = TAKE_PTR(r);
	return 0;
}
