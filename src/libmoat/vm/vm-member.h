/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what a pod member's init becomes (vm-pod.h).
 *
 * A member's container runs in its pod's guest, so its init on the host holds no program of
 * the user's: built in a jail like a VMM's (without a VMM), it waits for start like any init,
 * then sends the pod's supervisor the member's CONTAINER (vm-socket.h), with its stdin,
 * stdout and stderr: the engine's pipes, or its terminal. From then on it stands for the
 * container on the host, as a supervisor does for its VM: every signal it gets goes to the
 * container's first process in the guest, it lives as long as that process does, and it
 * exits with that process's exit code (128 + N for signal N). SIGKILL ends it alone, and with
 * it the connection: the supervisor then kills the whole container in the guest.
 */
#ifndef MOAT_VM_MEMBER_H
#define MOAT_VM_MEMBER_H

#include <stdbool.h>

#include "vm-supervise.h"

/* Be the member's relay; returns its exit code (a failure prints one line to stderr first:
 * 127 when the program was not found, 126 when anything else kept it from starting, 125 when
 * the pod's supervisor could not be reached). Run by the init once the container starts;
 * started_fd is the exec fifo `moat start` waits on, written and closed once the guest said
 * whether the process runs. */
int moat_vm_member_run(const struct moat_vm_session *s, bool terminal, int started_fd);

#endif
