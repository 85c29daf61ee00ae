/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what a create has made before its state is saved, so that a create whose moat was
 * killed half-way can be undone.
 *
 * create holds the state directory's flock from the moment the directory appears (under
 * its final name) until state.json is written. Before it makes anything outside the
 * directory that no process of its own ends by itself, it records it in creating.json: the
 * cgroup (its path and manager). A directory that can be locked but has no state.json is
 * therefore an interrupted create, and moat_creating_undo() removes everything it made.
 * (The processes need no record: until create sends COMMIT they end when moat does,
 * sync.h moat_sync_child_attach; the user-namespace loan and a microVM's interfaces have
 * their own files in the directory, which moat_state_dir_remove() gives back.)
 */
#ifndef MOAT_CREATING_H
#define MOAT_CREATING_H

#include <stdint.h>

#include "error.h"

#define MOAT_CREATING_FILE "creating.json"

struct moat_creating {
	char *cgroup_path;    /* as resolved from linux.cgroupsPath */
	char *cgroup_manager; /* MOAT_CGROUP_MANAGER_SYSTEMD, or NULL: moat's own */
	uint32_t owner;       /* uid of the moat that created it: a systemd scope of a user
			       * other than root is in that user's manager */
	char *vm_pod;         /* a microVM pod's member: the sandbox whose share gets its root */
};

/* Record c in dirfd (atomically). */
int moat_creating_write(int dirfd, const struct moat_creating *c, moat_error *err);
/* Undo the interrupted create of <root>/<id>, whose directory is open and locked as dirfd:
 * remove the cgroup creating.json names (killing what is in it) and a member's root from its
 * pod's share, then the directory. */
int moat_creating_undo(const char *root, const char *id, int dirfd, moat_error *err);

#endif
