/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: what the command layer's files share (sandbox.c: run, create and the
 * options; sandbox-keeper.c: a session's keeper; sandbox-client.c: the commands that talk
 * to one). */
#ifndef MOAT_SANDBOX_CLI_H
#define MOAT_SANDBOX_CLI_H

#include <stdint.h>
#include <sys/types.h>

#include "moat.h"
#include "sandbox.h"

#define EXIT_TIMEOUT 124 /* as timeout(1) */
#define EXIT_SANDBOX_ERROR 125

/* Options: a one-line usage error (and a non-zero return) names cmd and flag. */
int sb_parse_duration(const char *cmd, const char *flag, const char *s, uint64_t *ret_ms);
int sb_parse_bytes(const char *cmd, const char *flag, const char *s, uint64_t min, uint64_t *ret);
int sb_parse_user(const char *cmd, const char *s, uid_t *ret_uid, gid_t *ret_gid);
int sb_parse_env(const char *cmd, char *arg, char ***env, size_t *n);

/* The exit status a result gives: the program's (128+N for signal N), 124 on timeout or
 * lifetime, 125 when moat failed or the program never started. */
int sb_exit_status(const struct moat_sandbox_result *r);

/* A command's reply on sock: its exit status, its result, and when that status is 125 the
 * result's message, for the client's stderr. */
void sb_reply_result(int sock, const struct moat_sandbox_result *r);

/* A keeper leaves its caller: its own session, /dev/null for stdio, none of the fds the
 * caller handed down (a pipe a test harness waits on), SIGPIPE ignored. */
int sb_detach(void);

/* Print a keeper's reply: the message to stderr, the body to result_path or stdout. */
int sb_print_reply(int status, const char *msg, const char *body, const char *result_path);

/* A session's keeper (sandbox-keeper.c): make the sandbox, say "ready" on link, serve
 * requests until the sandbox ends (rm, its lifetime, its idle timeout, its init gone). */
_Noreturn void sb_keeper_session(const struct moat_sandbox_opts *o, uint64_t lifetime_ms,
				 uint64_t idle_ms, int link);

/* The commands that talk to a session's keeper (sandbox-client.c). */
int sb_cmd_exec(struct moat_globals *g, int argc, char **argv);
int sb_cmd_cp(struct moat_globals *g, int argc, char **argv);
int sb_cmd_diff(struct moat_globals *g, int argc, char **argv);
int sb_cmd_ls(struct moat_globals *g, int argc, char **argv);
int sb_cmd_rm(struct moat_globals *g, int argc, char **argv);

#endif
