/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: libarchive, loaded when an image's tar is first read (archive-lib.h). */
#include "archive-lib.h"

IMAGE_ARCHIVE_SYMS(MOAT_DLIB_DEFINE)

/* clang-format off */
static const struct moat_dlib_sym archive_syms[] = {
	IMAGE_ARCHIVE_SYMS(MOAT_DLIB_SYM)
	{ NULL, NULL },
};
/* clang-format on */

/* libarchive's soname has been libarchive.so.13 since libarchive 3.0 (2011). */
static struct moat_dlib archive_lib = { "libarchive.so.13", "libarchive13", archive_syms, NULL };

int image_archive_load(moat_error *err)
{
	return moat_dlib_load(&archive_lib, err);
}
