/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: user namespace id maps. */
#ifndef MOAT_USERNS_H
#define MOAT_USERNS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"

/* Check the maps against the namespaces: a new user namespace needs both
 * maps, maps without a new user namespace are an error, sizes are > 0 and
 * ranges do not overflow. Errors name linux.uidMappings[i]. */
int moat_userns_validate(const struct oci_linux *lx, bool new_userns, moat_error *err);

/* Sizes > 0, ranges within 32 bits; errors name field[i] ("linux.uidMappings[1].size"). */
int moat_userns_validate_maps(struct oci_id_mapping *const *maps, size_t n, const char *field,
			      moat_error *err);

/* Write /proc/<pid>/uid_map and gid_map (from the parent, which holds
 * CAP_SETUID/CAP_SETGID over the new namespace). */
int moat_userns_write_maps(pid_t pid, const struct oci_linux *lx, moat_error *err);

/* An fd of a new user namespace that holds nothing but these maps: what an idmapped mount
 * with its own mappings maps through. ufield and gfield name the maps in errors. */
int moat_userns_open_mapped(struct oci_id_mapping *const *uid, size_t nu,
			    struct oci_id_mapping *const *gid, size_t ng, const char *ufield,
			    const char *gfield, int *ret_fd, moat_error *err);

/* Map a container id to the host through maps (UINT32_MAX if unmapped). */
uint32_t moat_userns_to_host(struct oci_id_mapping *const *maps, size_t n, uint32_t id);

/* The host uid that uid 0 of pid's user namespace is. */
int moat_userns_root_host_id(pid_t pid, uid_t *ret, moat_error *err);

#endif
