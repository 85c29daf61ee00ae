/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ocijson's own seam: what its three files share, not part of the API (ocijson.h is).
 *
 *   ocijson.c        the value tree (string maps, free, merge), and what the other two
 *                    share: errors, JSON paths, errors naming the path, allowed values
 *   ocijson-parse.c  JSON text to structs: the syntax pre-pass, then the walk of yajl's tree
 *   ocijson-gen.c    structs to JSON text with yajl_gen, and clone
 */
#ifndef OCIJSON_INTERNAL_H
#define OCIJSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "ocijson.h"

#define OOM_MESSAGE "out of memory"

static inline void ocijson_freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(ocijson_freep)))

static inline void *steal_ptr(void *pp)
{
	void **p = pp;
	void *ret = *p;

	*p = NULL;
	return ret;
}

#define FIELD_PTR(obj, off) ((void *)((char *)(obj) + (off)))
#define FIELD_CPTR(obj, off) ((const void *)((const char *)(obj) + (off)))

/* Sets *ret_err to a copy of msg (or leaves it NULL when even that fails) and returns err. */
int ocijson_set_err(char **ret_err, int err, const char *msg);
/* The same with a formatted message (OOM_MESSAGE when formatting fails). */
int ocijson_set_errf(char **ret_err, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A growing "linux.namespaces[2].type" buffer; push returns the old length to pop back to.
 * A failed allocation sets oom and leaves the path as it was. */
struct path {
	char *buf;
	size_t len, cap;
	bool oom;
};

size_t ocijson_path_push_key(struct path *p, const char *key);
size_t ocijson_path_push_index(struct path *p, size_t i);
void ocijson_path_pop(struct path *p, size_t old);
/* The path so far; "" at the top level or after an allocation failure. */
const char *ocijson_path_str(const struct path *p);

/* One parse or generate: the message prefix (a file name or a type name), where it is. */
struct ctx {
	const char *source;
	struct path path;
	char **ret_err;
};

/* Sets "<source>: <path>: <message>" (no path at the top level) and returns err. */
int ocijson_ctx_fail(struct ctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ocijson_ctx_oom(struct ctx *c);

/* 0 when values is NULL or holds s; otherwise fails naming the allowed values. */
int ocijson_check_enum(struct ctx *c, const char *s, const char *const *values);
/* The OCIJSON_KEY row of an object-map entry's type, or NULL. */
const struct ocijson_field *ocijson_key_field(const struct ocijson_type *type);
/* The size of one array element of kind (a pointer for strings and objects). */
size_t ocijson_elem_size(enum ocijson_kind kind);

#endif
