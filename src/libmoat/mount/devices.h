/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: device nodes in the container.
 *
 * Every container gets the default devices (the table in devices.c) plus linux.devices; an
 * entry of linux.devices with the same path replaces the default one. Without a user namespace
 * each node is made with mknodat and given its owner and mode. In a user namespace mknod of a
 * device is not allowed, so the host's node at the same path is bind-mounted instead (taken in
 * phase 1, checked to be the device the config names); its owner and mode stay the host's.
 * FIFOs (type p) are made with mknodat in both cases. Paths are resolved inside the root by fd
 * and may be anywhere, as the runtime-spec allows.
 */
#ifndef MOAT_DEVICES_H
#define MOAT_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "oci-config.h"

struct moat_device_spec {
	const char *path; /* inside the container */
	char type;        /* 'c' (or 'u'), 'b', 'p' */
	uint32_t major;
	uint32_t minor;
	mode_t mode; /* permission bits */
	uid_t uid;
	gid_t gid;
};

/* null 1:3, zero 1:5, full 1:7, random 1:8, urandom 1:9, tty 5:0; all 0666 root:root. */
extern const struct moat_device_spec moat_default_devices[];
extern const size_t moat_default_devices_len;

struct moat_devices;

/* Phase 1: plan the devices from lx (may be NULL) and, under a user namespace, take the host
 * nodes. Errors name the field: "linux.devices[2] (/dev/fuse): bind '/dev/fuse': ...". */
int moat_devices_prepare(const struct oci_linux *lx, bool userns, struct moat_devices **ret,
			 moat_error *err);

/* The image's /dev, where moat mounts and makes device nodes, must be a directory or missing
 * (then it is made): a symlink there is refused, naming its target, as a symlinked /proc or
 * /sys is, whether it points inside the root or not. moat_devices_create and
 * moat_devices_symlinks check it too. */
int moat_devices_check_dev(int rootfd, moat_error *err);

/* Phase 2: create every planned device inside rootfd (before the root is entered). */
int moat_devices_create(struct moat_devices *d, int rootfd, moat_error *err);

/* Phase 2: the /dev symlinks: fd -> /proc/self/fd, stdin/stdout/stderr -> /proc/self/fd/0..2,
 * ptmx -> pts/ptmx (replacing whatever /dev/ptmx was). */
int moat_devices_symlinks(int rootfd, moat_error *err);

void moat_devices_free(struct moat_devices *d);

#endif
