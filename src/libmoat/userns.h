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

/* Write /proc/<pid>/uid_map and gid_map (from the parent, which holds
 * CAP_SETUID/CAP_SETGID over the new namespace). */
int moat_userns_write_maps(pid_t pid, const struct oci_linux *lx, moat_error *err);

/* Map a container id to the host through maps (UINT32_MAX if unmapped). */
uint32_t moat_userns_to_host(struct oci_id_mapping *const *maps, size_t n, uint32_t id);

#endif
