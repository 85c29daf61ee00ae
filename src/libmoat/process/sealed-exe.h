/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: run from a view of moat's own binary that no one can write.
 *
 * CVE-2019-5736: a container process reached the runtime's binary through
 * /proc/<pid>/exe of a runtime process that had joined the container, kept
 * it open, and rewrote the host binary once the runtime exited. A moat
 * process that enters a container runs from one of the two views below.
 * The launcher (src/launcher/, docs/launcher.md) starts the runtime from the
 * first; the runtime started any other way re-executes itself from one:
 *
 * - its binary seen through an overlay of the binary's directory with no
 *   upper layer, mounted nowhere (fsmount, never attached). An overlay
 *   without an upper layer is read-only in its superblock: an open for
 *   writing fails with EROFS through any path, /proc/<pid>/exe and fds
 *   reopened through /proc included, and the mount is in no namespace a
 *   container could remount it in. It costs a few mount syscalls, not a
 *   copy: this is what moat tries first;
 * - where no overlay can be made (rootless, no overlayfs, a directory the
 *   kernel cannot stack on): a memfd holding a copy of the binary, sealed
 *   against writing, growing and shrinking (and against removing those
 *   seals).
 *
 * /proc/<pid>/exe of such a process names the overlay's file ("/moat") or
 * the memfd, never the host file, and no one can change the bytes behind
 * it, not even through an fd kept after moat has exited.
 */
#ifndef MOAT_SEALED_EXE_H
#define MOAT_SEALED_EXE_H

#include "error.h"

/* The memfd's name: /proc/<pid>/exe reads "/memfd:moat (deleted)". */
#define MOAT_SEALED_EXE_NAME "moat"

/* 1 when this process runs from a file no one can write: a sealed moat
 * memfd (an unlinked regular file that carries every seal moat sets) or a
 * file on a read-only overlayfs with no upper layer (the launcher's or
 * moat's own, mounted nowhere, or one an install mounted: docs/install.md);
 * 0 when it does not
 * (a read-only overlay with an upper layer could be remounted writable),
 * -errno when /proc/self/exe cannot be checked. Reads /proc/self/exe, not
 * anything the caller controls, such as the environment. */
int moat_self_exe_is_sealed(moat_error *err);

/* Unless this process already runs from a file no one can write:
 * execveat() /proc/self/exe's file through a read-only overlay, or else a
 * sealed memfd copy of it, with argv (NULL terminated, argv[0] included) and
 * the current environ. Open fds other than moat's own (all close-on-exec)
 * are passed on as they are.
 *
 * Returns 0 when already sealed; otherwise returns only on failure, with
 * -errno and err set. The caller must then stop: running on from the host
 * binary is what the re-exec exists to prevent. */
int moat_exec_sealed_self(char **argv, moat_error *err);

#endif
