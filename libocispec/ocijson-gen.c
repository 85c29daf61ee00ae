/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ocijson: C structs to JSON text with yajl_gen, present members in table order, refusing
 * what parsing would refuse (see ocijson.h); and clone, a generate and a parse.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>

#include "ocijson-internal.h"

/* ---- generate ------------------------------------------------------------------------ */

static int gen_object(struct ctx *c, yajl_gen g, const struct ocijson_type *type, const void *obj);

static int gen_check(struct ctx *c, yajl_gen_status st)
{
	if (st == yajl_gen_status_ok)
		return 0;
	if (st == yajl_gen_invalid_string)
		return ocijson_ctx_fail(c, -EINVAL, "invalid UTF-8 in string");
	return ocijson_ctx_fail(c, -EINVAL, "JSON generator error %d", (int)st);
}

static int gen_string(struct ctx *c, yajl_gen g, const char *s, const char *const *values)
{
	if (s == NULL)
		return ocijson_ctx_fail(c, -EINVAL, "NULL string in array or map");
	int r = ocijson_check_enum(c, s, values);
	if (r < 0)
		return r;
	return gen_check(c, yajl_gen_string(g, (const unsigned char *)s, strlen(s)));
}

static int gen_scalar(struct ctx *c, yajl_gen g, enum ocijson_kind kind, const char *const *values,
		      const void *src)
{
	char buf[32];

	switch (kind) {
	case OCIJSON_STRING: return gen_string(c, g, *(char *const *)src, values);
	case OCIJSON_BOOL: return gen_check(c, yajl_gen_bool(g, *(const bool *)src));
	case OCIJSON_INT32: return gen_check(c, yajl_gen_integer(g, *(const int32_t *)src));
	case OCIJSON_INT64: return gen_check(c, yajl_gen_integer(g, *(const int64_t *)src));
	case OCIJSON_UINT16: return gen_check(c, yajl_gen_integer(g, *(const uint16_t *)src));
	case OCIJSON_UINT32: return gen_check(c, yajl_gen_integer(g, *(const uint32_t *)src));
	default:
		/* yajl_gen_integer takes long long: format uint64 ourselves */
		snprintf(buf, sizeof(buf), "%" PRIu64, *(const uint64_t *)src);
		return gen_check(c, yajl_gen_number(g, buf, strlen(buf)));
	}
}

static int gen_sub_object(struct ctx *c, yajl_gen g, const struct ocijson_type *type,
			  const void *obj)
{
	if (obj == NULL)
		return ocijson_ctx_fail(c, -EINVAL, "NULL object in array or map");
	return gen_object(c, g, type, obj);
}

static int gen_array(struct ctx *c, yajl_gen g, const struct ocijson_field *f, const void *obj)
{
	const char *arr = *(const char *const *)FIELD_CPTR(obj, f->offset);
	size_t n = *(const size_t *)FIELD_CPTR(obj, f->len_offset);
	size_t size = ocijson_elem_size(f->elem);
	int r = gen_check(c, yajl_gen_array_open(g));

	for (size_t i = 0; r == 0 && i < n; i++) {
		size_t mark = ocijson_path_push_index(&c->path, i);
		const void *src = arr + i * size;
		if (f->elem == OCIJSON_OBJECT)
			r = gen_sub_object(c, g, f->sub, *(const void *const *)src);
		else
			r = gen_scalar(c, g, f->elem, f->values, src);
		if (r == 0)
			ocijson_path_pop(&c->path, mark);
	}
	return r < 0 ? r : gen_check(c, yajl_gen_array_close(g));
}

static int gen_string_map(struct ctx *c, yajl_gen g, const struct oci_string_map *m)
{
	int r = gen_check(c, yajl_gen_map_open(g));

	for (size_t i = 0; r == 0 && i < m->len; i++) {
		r = gen_string(c, g, m->keys[i], NULL);
		if (r < 0)
			return r;
		size_t mark = ocijson_path_push_key(&c->path, m->keys[i]);
		r = gen_string(c, g, m->values[i], NULL);
		if (r == 0)
			ocijson_path_pop(&c->path, mark);
	}
	return r < 0 ? r : gen_check(c, yajl_gen_map_close(g));
}

static int gen_object_map(struct ctx *c, yajl_gen g, const struct ocijson_field *f, const void *obj)
{
	const void *const *arr = *(const void *const *const *)FIELD_CPTR(obj, f->offset);
	size_t n = *(const size_t *)FIELD_CPTR(obj, f->len_offset);
	const struct ocijson_field *kf = ocijson_key_field(f->sub);
	int r = gen_check(c, yajl_gen_map_open(g));

	for (size_t i = 0; r == 0 && i < n; i++) {
		if (arr[i] == NULL || kf == NULL)
			return ocijson_ctx_fail(c, -EINVAL, "NULL entry or key in map");
		const char *key = *(const char *const *)FIELD_CPTR(arr[i], kf->offset);
		r = gen_string(c, g, key, kf->values);
		if (r < 0)
			return r;
		size_t mark = ocijson_path_push_key(&c->path, key);
		r = gen_object(c, g, f->sub, arr[i]);
		if (r == 0)
			ocijson_path_pop(&c->path, mark);
	}
	return r < 0 ? r : gen_check(c, yajl_gen_map_close(g));
}

static bool field_present(const struct ocijson_field *f, const void *obj)
{
	switch (f->kind) {
	case OCIJSON_STRING:
	case OCIJSON_OBJECT:
	case OCIJSON_ARRAY:
	case OCIJSON_STRING_MAP:
	case OCIJSON_OBJECT_MAP: return *(const void *const *)FIELD_CPTR(obj, f->offset) != NULL;
	case OCIJSON_KEY: return false;
	default:
		return f->present_offset == OCIJSON_NO_OFFSET ||
		       *(const bool *)FIELD_CPTR(obj, f->present_offset);
	}
}

static int gen_field(struct ctx *c, yajl_gen g, const struct ocijson_field *f, const void *obj)
{
	const void *src = FIELD_CPTR(obj, f->offset);

	switch (f->kind) {
	case OCIJSON_OBJECT: return gen_object(c, g, f->sub, *(const void *const *)src);
	case OCIJSON_ARRAY: return gen_array(c, g, f, obj);
	case OCIJSON_STRING_MAP:
		return gen_string_map(c, g, *(const struct oci_string_map *const *)src);
	case OCIJSON_OBJECT_MAP: return gen_object_map(c, g, f, obj);
	default: return gen_scalar(c, g, f->kind, f->values, src);
	}
}

static int gen_members(struct ctx *c, yajl_gen g, const struct ocijson_type *type, const void *obj)
{
	for (size_t i = 0; i < type->n_fields; i++) {
		const struct ocijson_field *f = &type->fields[i];
		bool present = field_present(f, obj);
		if (!present && !(f->flags & OCIJSON_REQUIRED))
			continue;
		if (f->kind == OCIJSON_KEY)
			continue;
		size_t mark = ocijson_path_push_key(&c->path, f->name);
		if (!present)
			return ocijson_ctx_fail(c, -EINVAL, "required field missing");
		int r = gen_check(
			c, yajl_gen_string(g, (const unsigned char *)f->name, strlen(f->name)));
		if (r == 0)
			r = gen_field(c, g, f, obj);
		if (r < 0)
			return r;
		ocijson_path_pop(&c->path, mark);
	}
	return 0;
}

/* The validate hook runs after the members, as when parsing: it may rely on required
 * members being set. */
static int gen_object(struct ctx *c, yajl_gen g, const struct ocijson_type *type, const void *obj)
{
	int r = gen_check(c, yajl_gen_map_open(g));

	if (r == 0)
		r = gen_members(c, g, type, obj);
	if (r == 0 && type->validate != NULL) {
		if (c->path.oom)
			return ocijson_ctx_oom(c);
		struct ocijson_where where = { .source = c->source,
					       .path = ocijson_path_str(&c->path) };
		r = type->validate(obj, &where, c->ret_err);
	}
	return r < 0 ? r : gen_check(c, yajl_gen_map_close(g));
}

static yajl_gen gen_new(bool pretty)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	if (g == NULL)
		return NULL;
	yajl_gen_config(g, yajl_gen_validate_utf8, 1);
	if (pretty) {
		yajl_gen_config(g, yajl_gen_beautify, 1);
		yajl_gen_config(g, yajl_gen_indent_string, "\t");
	}
	return g;
}

/* yajl's beautifier prints an empty container as "[\n\n\t]"; fold those to "[]" and "{}".
 * Raw whitespace inside strings cannot occur (yajl escapes control characters), but
 * brackets can, so string state is tracked. */
static size_t fold_empty_containers(char *buf, size_t len)
{
	size_t out = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];
		buf[out++] = ch;
		if (in_string) {
			if (ch == '\\' && i + 1 < len)
				buf[out++] = buf[++i];
			else if (ch == '"')
				in_string = false;
			continue;
		}
		if (ch == '"') {
			in_string = true;
			continue;
		}
		if (ch != '[' && ch != '{')
			continue;
		size_t j = i + 1;
		while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\n'))
			j++;
		if (j < len && buf[j] == (ch == '[' ? ']' : '}')) {
			buf[out++] = buf[j];
			i = j;
		}
	}
	buf[out] = '\0';
	return out;
}

int ocijson_generate(const struct ocijson_type *type, const void *obj, bool pretty, char **ret_json,
		     size_t *ret_len, char **ret_err)
{
	struct ctx c = { .source = type->name, .ret_err = ret_err };
	const unsigned char *buf;
	size_t len;

	if (obj == NULL)
		return ocijson_set_errf(ret_err, -EINVAL, "%s: nothing to generate", type->name);
	yajl_gen g = gen_new(pretty);
	if (g == NULL)
		return ocijson_set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	int r = gen_object(&c, g, type, obj);
	free(c.path.buf);
	if (r == 0)
		r = gen_check(&c, yajl_gen_get_buf(g, &buf, &len));
	char *out = r == 0 ? strndup((const char *)buf, len) : NULL;
	if (r == 0 && out == NULL)
		r = ocijson_set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	if (r == 0 && pretty)
		len = fold_empty_containers(out, len);
	if (r == 0) {
		*ret_json = out;
		if (ret_len != NULL)
			*ret_len = len;
	}
	yajl_gen_free(g);
	return r;
}

int ocijson_clone(const struct ocijson_type *type, const void *obj, void **ret, char **ret_err)
{
	_cleanup_free_ char *json = NULL;
	size_t len;

	int r = ocijson_generate(type, obj, false, &json, &len, ret_err);
	if (r < 0)
		return r;
	return ocijson_parse_data(type, json, len, type->name, ret, ret_err);
}
