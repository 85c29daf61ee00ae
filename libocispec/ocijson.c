/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ocijson: the value tree (string maps, free, merge) and what parsing and generating share:
 * JSON paths, errors that name them, allowed-value checks. ocijson-parse.c reads JSON text
 * into the structs, ocijson-gen.c writes them out; ocijson-internal.h is the seam.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocijson-internal.h"

/* ---- errors ------------------------------------------------------------------------ */

int ocijson_set_err(char **ret_err, int err, const char *msg)
{
	if (ret_err != NULL)
		*ret_err = strdup(msg);
	return err;
}

__attribute__((format(printf, 3, 0))) static int vset_errf(char **ret_err, int err, const char *fmt,
							   va_list ap)
{
	char *msg = NULL;

	if (ret_err == NULL)
		return err;
	if (vasprintf(&msg, fmt, ap) < 0)
		return ocijson_set_err(ret_err, err, OOM_MESSAGE);
	*ret_err = msg;
	return err;
}

int ocijson_set_errf(char **ret_err, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = vset_errf(ret_err, err, fmt, ap);
	va_end(ap);
	return err;
}

/* ---- string maps ----------------------------------------------------------------- */

const char *oci_string_map_get(const struct oci_string_map *map, const char *key)
{
	if (map == NULL)
		return NULL;
	for (size_t i = 0; i < map->len; i++)
		if (strcmp(map->keys[i], key) == 0)
			return map->values[i];
	return NULL;
}

void oci_string_map_free(struct oci_string_map *map)
{
	if (map == NULL)
		return;
	for (size_t i = 0; i < map->len; i++) {
		free(map->keys[i]);
		free(map->values[i]);
	}
	free(map->keys);
	free(map->values);
	free(map);
}

static int string_map_append(struct oci_string_map *m, char *key, char *value)
{
	char **keys = reallocarray(m->keys, m->len + 1, sizeof(char *));

	if (keys == NULL)
		return -ENOMEM;
	m->keys = keys;
	char **values = reallocarray(m->values, m->len + 1, sizeof(char *));
	if (values == NULL)
		return -ENOMEM;
	m->values = values;
	m->keys[m->len] = key;
	m->values[m->len] = value;
	m->len++;
	return 0;
}

int oci_string_map_set(struct oci_string_map **map, const char *key, const char *value)
{
	_cleanup_free_ char *v = strdup(value);

	if (v == NULL)
		return -ENOMEM;
	if (*map == NULL) {
		*map = calloc(1, sizeof(**map));
		if (*map == NULL)
			return -ENOMEM;
	}
	struct oci_string_map *m = *map;
	for (size_t i = 0; i < m->len; i++) {
		if (strcmp(m->keys[i], key) == 0) {
			free(m->values[i]);
			m->values[i] = steal_ptr(&v);
			return 0;
		}
	}
	_cleanup_free_ char *k = strdup(key);
	if (k == NULL || string_map_append(m, k, v) < 0)
		return -ENOMEM;
	k = NULL;
	v = NULL;
	return 0;
}

/* ---- JSON paths (ocijson-internal.h) ---------------------------------------------- */

static void path_append(struct path *p, const char *s, size_t n)
{
	if (p->oom)
		return;
	if (p->len + n + 1 > p->cap) {
		size_t cap = (p->len + n + 1) * 2;
		char *buf = realloc(p->buf, cap);
		if (buf == NULL) {
			p->oom = true;
			return;
		}
		p->buf = buf;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

size_t ocijson_path_push_key(struct path *p, const char *key)
{
	size_t old = p->len;

	if (p->len > 0)
		path_append(p, ".", 1);
	path_append(p, key, strlen(key));
	return old;
}

size_t ocijson_path_push_index(struct path *p, size_t i)
{
	size_t old = p->len;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "[%zu]", i);

	path_append(p, buf, (size_t)n);
	return old;
}

void ocijson_path_pop(struct path *p, size_t old)
{
	if (p->oom || p->buf == NULL)
		return;
	p->len = old;
	p->buf[old] = '\0';
}

const char *ocijson_path_str(const struct path *p)
{
	return p->buf != NULL && !p->oom ? p->buf : "";
}

/* ---- errors with paths ----------------------------------------------------------- */

int ocijson_ctx_fail(struct ctx *c, int err, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;

	if (c->ret_err == NULL)
		return err;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return ocijson_set_err(c->ret_err, -ENOMEM, OOM_MESSAGE);
	const char *path = ocijson_path_str(&c->path);
	if (*path == '\0')
		return ocijson_set_errf(c->ret_err, err, "%s: %s", c->source, msg);
	return ocijson_set_errf(c->ret_err, err, "%s: %s: %s", c->source, path, msg);
}

int ocijson_ctx_oom(struct ctx *c)
{
	return ocijson_set_err(c->ret_err, -ENOMEM, OOM_MESSAGE);
}

int ocijson_fail(const struct ocijson_where *where, const char *sub, char **ret_err,
		 const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return ocijson_set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	const char *path = where->path != NULL ? where->path : "";
	const char *dot = (*path != '\0' && sub != NULL && *sub != '[') ? "." : "";
	if (sub == NULL)
		sub = "";
	if (*path == '\0' && *sub == '\0')
		return ocijson_set_errf(ret_err, -EINVAL, "%s: %s", where->source, msg);
	return ocijson_set_errf(ret_err, -EINVAL, "%s: %s%s%s: %s", where->source, path, dot, sub,
				msg);
}

/* ---- shared by parsing and generating ---------------------------------------------- */

bool ocijson_in_list(const char *s, const char *const *values)
{
	for (; *values != NULL; values++)
		if (strcmp(s, *values) == 0)
			return true;
	return false;
}

int ocijson_check_enum(struct ctx *c, const char *s, const char *const *values)
{
	char list[512] = "";
	size_t used = 0;

	if (values == NULL || ocijson_in_list(s, values))
		return 0;
	for (; *values != NULL && used < sizeof(list); values++) {
		int n = snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "",
				 *values);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return ocijson_ctx_fail(c, -EINVAL, "invalid value \"%s\" (expected one of: %s)", s, list);
}

const struct ocijson_field *ocijson_key_field(const struct ocijson_type *type)
{
	for (size_t i = 0; i < type->n_fields; i++)
		if (type->fields[i].kind == OCIJSON_KEY)
			return &type->fields[i];
	return NULL;
}

/* ---- free -------------------------------------------------------------------------- */

size_t ocijson_elem_size(enum ocijson_kind kind)
{
	switch (kind) {
	case OCIJSON_BOOL: return sizeof(bool);
	case OCIJSON_INT32: return sizeof(int32_t);
	case OCIJSON_INT64: return sizeof(int64_t);
	case OCIJSON_UINT16: return sizeof(uint16_t);
	case OCIJSON_UINT32: return sizeof(uint32_t);
	case OCIJSON_UINT64: return sizeof(uint64_t);
	default: return sizeof(void *);
	}
}

static void free_pointer_array(const struct ocijson_field *f, void **arr, size_t len)
{
	for (size_t i = 0; arr != NULL && i < len; i++) {
		if (f->elem == OCIJSON_OBJECT)
			ocijson_free(f->sub, arr[i]);
		else
			free(arr[i]);
	}
}

static void free_field(const struct ocijson_field *f, void *obj)
{
	void **slot = FIELD_PTR(obj, f->offset);

	switch (f->kind) {
	case OCIJSON_STRING:
	case OCIJSON_KEY: free(*slot); break;
	case OCIJSON_OBJECT: ocijson_free(f->sub, *slot); break;
	case OCIJSON_STRING_MAP: oci_string_map_free(*slot); break;
	case OCIJSON_ARRAY:
	case OCIJSON_OBJECT_MAP:
		if (f->elem == OCIJSON_STRING || f->elem == OCIJSON_OBJECT)
			free_pointer_array(f, *slot, *(size_t *)FIELD_PTR(obj, f->len_offset));
		free(*slot);
		break;
	default: return;
	}
	*slot = NULL;
}

void ocijson_free(const struct ocijson_type *type, void *obj)
{
	if (obj == NULL)
		return;
	for (size_t i = 0; i < type->n_fields; i++)
		free_field(&type->fields[i], obj);
	free(obj);
}

/* ---- merge -------------------------------------------------------------------------- */

/* A number or a bool: its size; 0 for a pointer kind. */
static size_t scalar_size(enum ocijson_kind k)
{
	return k >= OCIJSON_BOOL && k <= OCIJSON_UINT64 ? ocijson_elem_size(k) : 0;
}

static void merge_field(const struct ocijson_field *f, void *dst, void *src)
{
	void **d = FIELD_PTR(dst, f->offset), **s = FIELD_PTR(src, f->offset);
	size_t n = scalar_size(f->kind);

	if (n > 0) {
		bool *present = f->present_offset == OCIJSON_NO_OFFSET
					? NULL
					: (bool *)FIELD_PTR(src, f->present_offset);

		if (present != NULL && !*present)
			return;
		memcpy(d, s, n);
		if (present != NULL)
			*(bool *)FIELD_PTR(dst, f->present_offset) = true;
		return;
	}
	if (*s == NULL || f->kind == OCIJSON_KEY)
		return;
	if (f->kind == OCIJSON_OBJECT && *d != NULL) {
		ocijson_merge(f->sub, *d, *s);
		*s = NULL;
		return;
	}
	free_field(f, dst);
	*d = *s;
	*s = NULL;
	if (f->len_offset != OCIJSON_NO_OFFSET)
		memcpy(FIELD_PTR(dst, f->len_offset), FIELD_PTR(src, f->len_offset),
		       sizeof(size_t));
}

void ocijson_merge(const struct ocijson_type *type, void *dst, void *src)
{
	if (src == NULL)
		return;
	for (size_t i = 0; i < type->n_fields; i++)
		merge_field(&type->fields[i], dst, src);
	ocijson_free(type, src);
}
