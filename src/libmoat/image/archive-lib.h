/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libarchive, loaded when an image's tar is first read (base/dlib.h says why).
 *
 * image-unpack.c calls libarchive as sym_archive_*(), after image_archive_load().
 */
#ifndef MOAT_IMAGE_ARCHIVE_LIB_H
#define MOAT_IMAGE_ARCHIVE_LIB_H

#include <archive.h>
#include <archive_entry.h>

#include "dlib.h"

/* clang-format off */
#define IMAGE_ARCHIVE_SYMS(X) \
	X(archive_entry_filetype) \
	X(archive_entry_gid) \
	X(archive_entry_hardlink) \
	X(archive_entry_mtime) \
	X(archive_entry_mtime_is_set) \
	X(archive_entry_mtime_nsec) \
	X(archive_entry_pathname) \
	X(archive_entry_pathname_utf8) \
	X(archive_entry_perm) \
	X(archive_entry_size) \
	X(archive_entry_symlink) \
	X(archive_entry_uid) \
	X(archive_error_string) \
	X(archive_filter_count) \
	X(archive_libzstd_version) \
	X(archive_read_data_block) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_open) \
	X(archive_read_support_filter_gzip) \
	X(archive_read_support_filter_zstd) \
	X(archive_read_support_format_empty) \
	X(archive_read_support_format_raw) \
	X(archive_read_support_format_tar) \
	X(archive_set_error) \
	X(archive_zlib_version)
/* clang-format on */

IMAGE_ARCHIVE_SYMS(MOAT_DLIB_DECLARE)

/* libarchive's functions into sym_archive_*, once per process. */
int image_archive_load(moat_error *err);

#endif
