/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: what the commands and a sandbox's keeper say to each other.
 *
 * A session's keeper listens on <state>/sock, a unix socket in its uid's own 0700 directory.
 * A command connects, sends one request (one line of JSON, with the host file or directory
 * of a copy passed along as an fd), and reads one reply: "STATUS\tMESSAGE\n" and a body,
 * until the keeper closes. STATUS is the exit status the command then has, MESSAGE moat's
 * own one-line error or nothing, the body a document (a result, a diff, a status) or
 * nothing. `sandbox run`'s keeper sends the same reply on its socket pair. */
#ifndef MOAT_SANDBOX_PROTO_H
#define MOAT_SANDBOX_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "utils.h"

#define SB_REQUEST_MAX (1u << 20)
#define SB_REPLY_MAX (256u << 20)

struct sb_request {
	char *op; /* "status", "exec", "cp-in", "cp-out", "diff", "rm" */
	/* exec: the command, and what it sets of its own (-1, NULL: the sandbox's) */
	char **argv, **env;
	int64_t timeout_ms, output_limit, uid, gid;
	int truncate; /* -1, or 0 or 1 */
	char *cwd;
	/* cp: the sandbox's path, the host side's name; rm: --force */
	char *path, *name;
	bool force;
	int fd; /* cp: the host file (in) or directory (out); -1: none */
};

void sb_request_init(struct sb_request *q);
/* Frees what q holds and closes its fd; usable as _cleanup_(sb_request_clear). */
void sb_request_clear(struct sb_request *q);

int sb_request_send(int sock, const struct sb_request *q, moat_error *err);
/* One request, within SB_REQUEST_MAX bytes; a malformed one is refused (EINVAL). */
int sb_request_recv(int sock, struct sb_request *q, moat_error *err);

/* Send the reply (errors ignored: the command may be gone). */
void sb_reply(int sock, int status, const char *msg, const char *body);
/* Read it: *ret_msg and *ret_body allocated ("" when none). who names the peer. */
int sb_reply_read(int sock, const char *who, int *ret_status, char **ret_msg, char **ret_body,
		  moat_error *err);

#endif
