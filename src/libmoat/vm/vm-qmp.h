/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a QEMU Machine Protocol client, as much of one as saving and restoring a snapshot
 * need (vm-snapshot-save.c, vm-snapshot-ram.c): one command at a time over a connected socket, an fd passed with a
 * command (SCM_RIGHTS, for getfd), events skipped. QEMU writes one JSON object per line. */
#ifndef MOAT_VM_QMP_H
#define MOAT_VM_QMP_H

#include <poll.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "error.h"
#include "proto.h"

struct moat_qmp {
	int fd;
	uint64_t deadline_ms; /* moat_monotonic_ms(): every wait ends by then */
	struct moat_buf in;
};

/* Read QEMU's greeting on fd and leave capabilities negotiation (qmp_capabilities). */
int moat_qmp_open(struct moat_qmp *q, int fd, uint64_t deadline_ms, moat_error *err);
/* Run command (a JSON object: {"execute": ...}) with pass_fd (-1: none) and return its
 * "return" value in *ret (the caller frees it with yajl_tree_free); QEMU's "error" becomes
 * err, with QEMU's description. */
int moat_qmp_execute(struct moat_qmp *q, const char *command, int pass_fd, yajl_val *ret,
		     moat_error *err);
void moat_qmp_close(struct moat_qmp *q);
/* Wait until fd has events (POLLIN, POLLOUT), or fail at deadline_ms. */
int moat_vm_wait_fd(int fd, short events, uint64_t deadline_ms, moat_error *err);

/* For __attribute__((cleanup)): a parsed value, freed. */
void moat_qmp_freep(yajl_val *v);

#endif
