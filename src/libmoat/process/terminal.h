/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: process.terminal: the container's pty, and relaying it to the
 * caller's terminal when `run` stays in the foreground. */
#ifndef MOAT_TERMINAL_H
#define MOAT_TERMINAL_H

#include <signal.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"

/* In the container init, after the root is entered: open a pty from the
 * container's /dev/pts, open its peer by fd (never by a path the container
 * could swap, CVE-2025-52565), make the peer the controlling terminal and
 * stdio, hand it to uid/gid, and return the master. */
int moat_terminal_create(const struct oci_process *p, int *ret_master, moat_error *err);

/* Foreground relay: the caller's stdin to the master, the master to stdout,
 * SIGWINCH resizes, other signals in `forward` go to pid. Returns when pid
 * has exited (its wait status in *ret_wstatus) and the pty is drained. */
int moat_terminal_relay(int master, pid_t pid, const sigset_t *forward, int *ret_wstatus,
			moat_error *err);

#endif
