/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: cleanup helpers for libocispec's types (oci-config.h, oci-state.h), kept on moat's
 * side so that libocispec does not depend on libmoat:
 *   _cleanup_(oci_config_freep) struct oci_config *cfg = NULL; */
#ifndef MOAT_OCI_CLEANUP_H
#define MOAT_OCI_CLEANUP_H

#include "oci-config.h"
#include "utils.h"

MOAT_DEFINE_CLEANUP(struct oci_config, oci_config_free)
MOAT_DEFINE_CLEANUP(struct oci_process, oci_process_free)
MOAT_DEFINE_CLEANUP(struct oci_resources, oci_resources_free)
MOAT_DEFINE_CLEANUP(struct oci_string_map, oci_string_map_free)

#endif
