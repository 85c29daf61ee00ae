/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: run from a sealed, anonymous copy of moat's own binary.
 *
 * CVE-2019-5736: a container process reached the runtime's binary through
 * /proc/<pid>/exe of a runtime process that had joined the container, kept
 * it open, and rewrote the host binary once the runtime exited. A moat
 * process that enters a container first re-executes itself from a memfd
 * holding a copy of its binary, sealed against writing, growing and
 * shrinking (and against removing those seals). /proc/<pid>/exe of such a
 * process names the memfd, never the host file, and no one can change the
 * memfd's bytes, not even through an fd kept after moat has exited.
 */
#ifndef MOAT_SEALED_EXE_H
#define MOAT_SEALED_EXE_H

#include "error.h"

/* The memfd's name: /proc/<pid>/exe reads "/memfd:moat (deleted)". */
#define MOAT_SEALED_EXE_NAME "moat"

/* 1 when this process runs from a sealed moat memfd (an unlinked regular
 * file that carries every seal moat sets), 0 when it does not, -errno when
 * /proc/self/exe cannot be checked. Reads /proc/self/exe, not anything the
 * caller controls, such as the environment. */
int moat_self_exe_is_sealed(moat_error *err);

/* Unless this process already runs from a sealed moat memfd: copy
 * /proc/self/exe into a new memfd, seal it and execveat() it with argv (NULL
 * terminated, argv[0] included) and the current environ. Open fds other than
 * moat's own (all close-on-exec) are passed on as they are.
 *
 * Returns 0 when already sealed; otherwise returns only on failure, with
 * -errno and err set. The caller must then stop: running on from the host
 * binary is what the re-exec exists to prevent. */
int moat_exec_sealed_self(char **argv, moat_error *err);

#endif
