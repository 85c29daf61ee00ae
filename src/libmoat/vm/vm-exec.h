/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: `moat exec` into a microVM.
 *
 * The guest's processes have no host pid and no host namespaces to join, so exec asks the
 * container's supervisor (vm-socket.h: an EXEC request with its stdin, stdout and stderr):
 * the supervisor runs the process in the guest (an EXEC frame) and relays between those fds
 * and the guest for as long as it lives. A pod member's exec goes to the supervisor of its
 * pod's VM, naming the member: the process runs in the member's container there.
 *
 * With --detach, a small host process (a child of `moat exec`, so an engine's subreaper
 * adopts it) waits for the guest process and exits with its code: its pid is what
 * --pid-file records, as engines expect of an exec'd process.
 *
 * Signals sent to the client (the foreground `moat exec`, or that host process) reach the
 * guest process. A client that goes away without EXITED (killed) takes the guest process
 * with it (SIGKILL).
 */
#ifndef MOAT_VM_EXEC_H
#define MOAT_VM_EXEC_H

#include "error.h"
#include "exec.h"

/* The client: run o->process in the microVM whose state directory is dirfd; member: the pod
 * member to run it in (its id), NULL for the VM's own container. */
int moat_vm_exec(const struct moat_exec_opts *o, int state_dirfd, const char *member,
		 int *ret_status, moat_error *err);

#endif
