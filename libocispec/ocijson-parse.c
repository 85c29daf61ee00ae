/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ocijson: JSON text to C structs, in two passes (see ocijson.h for the rules).
 *
 * A streaming yajl pass checks syntax, UTF-8, "\u0000" and the nesting depth without
 * building anything; then yajl_tree_parse builds the tree, and a walk guided by the type's
 * table fills the struct, failing with the JSON path of the first bad field.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#include "ocijson-internal.h"

/* ---- syntax pre-pass: depth, UTF-8, comments, trailing garbage -------------------- */

struct scan {
	unsigned depth;
	bool too_deep;
	bool nul_in_string;
};

/* "\u0000" would decode to a NUL that silently truncates the C string: refuse it. */
static int scan_string(void *ctx, const unsigned char *s, size_t len)
{
	if (memchr(s, '\0', len) == NULL)
		return 1;
	((struct scan *)ctx)->nul_in_string = true;
	return 0;
}

static int scan_open(void *ctx)
{
	struct scan *s = ctx;

	if (++s->depth > OCIJSON_MAX_DEPTH) {
		s->too_deep = true;
		return 0;
	}
	return 1;
}

static int scan_close(void *ctx)
{
	((struct scan *)ctx)->depth--;
	return 1;
}

static const yajl_callbacks scan_callbacks = {
	.yajl_string = scan_string,
	.yajl_start_map = scan_open,
	.yajl_map_key = scan_string,
	.yajl_end_map = scan_close,
	.yajl_start_array = scan_open,
	.yajl_end_array = scan_close,
};

static unsigned line_of(const char *data, size_t offset)
{
	unsigned line = 1;

	for (size_t i = 0; i < offset; i++)
		if (data[i] == '\n')
			line++;
	return line;
}

/* yajl's short message, on one line: "parse error: premature EOF" */
static int scan_fail(yajl_handle h, const char *data, size_t offset, const char *source,
		     char **ret_err)
{
	unsigned char *raw = yajl_get_error(h, 0, NULL, 0);
	_cleanup_free_ char *msg = strdup(raw != NULL ? (char *)raw : "parse error");

	if (raw != NULL)
		yajl_free_error(h, raw);
	if (msg == NULL)
		return ocijson_set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	for (char *p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	for (size_t n = strlen(msg); n > 0 && msg[n - 1] == ' '; n--)
		msg[n - 1] = '\0';
	return ocijson_set_errf(ret_err, -EINVAL, "%s: line %u: %s", source, line_of(data, offset),
				msg);
}

static int scan_syntax(const char *data, size_t len, const char *source, char **ret_err)
{
	struct scan s = { 0 };
	yajl_handle h = yajl_alloc(&scan_callbacks, NULL, &s);

	if (h == NULL)
		return ocijson_set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	size_t offset = len;
	yajl_status st = yajl_parse(h, (const unsigned char *)data, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	else
		offset = yajl_get_bytes_consumed(h);
	int r = 0;
	if (s.too_deep)
		r = ocijson_set_errf(ret_err, -EINVAL, "%s: nesting deeper than %d levels", source,
				     OCIJSON_MAX_DEPTH);
	else if (s.nul_in_string)
		r = ocijson_set_errf(ret_err, -EINVAL, "%s: line %u: string contains \\u0000",
				     source, line_of(data, offset));
	else if (st != yajl_status_ok)
		r = scan_fail(h, data, offset, source, ret_err);
	yajl_free(h);
	return r;
}

/* ---- tree walk: scalars ------------------------------------------------------------- */

static const char *json_type_name(yajl_val v)
{
	if (v == NULL || YAJL_IS_NULL(v))
		return "null";
	if (YAJL_IS_STRING(v))
		return "string";
	if (YAJL_IS_NUMBER(v))
		return "number";
	if (YAJL_IS_OBJECT(v))
		return "object";
	if (YAJL_IS_ARRAY(v))
		return "array";
	return "boolean";
}

static const char *kind_type_name(enum ocijson_kind kind)
{
	switch (kind) {
	case OCIJSON_STRING:
	case OCIJSON_KEY: return "string";
	case OCIJSON_BOOL: return "boolean";
	case OCIJSON_ARRAY: return "array";
	case OCIJSON_OBJECT:
	case OCIJSON_STRING_MAP:
	case OCIJSON_OBJECT_MAP: return "object";
	default: return "integer";
	}
}

static const char *kind_c_name(enum ocijson_kind kind)
{
	switch (kind) {
	case OCIJSON_INT32: return "int32";
	case OCIJSON_INT64: return "int64";
	case OCIJSON_UINT16: return "uint16";
	case OCIJSON_UINT32: return "uint32";
	default: return "uint64";
	}
}

static int wrong_type(struct ctx *c, enum ocijson_kind kind, yajl_val v)
{
	return ocijson_ctx_fail(c, -EINVAL, "expected %s, got %s", kind_type_name(kind),
				json_type_name(v));
}

/* JSON integers only: optional '-', digits; no fraction, no exponent. */
static bool is_json_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int parse_signed(struct ctx *c, const char *raw, enum ocijson_kind kind, void *dst)
{
	errno = 0;
	long long x = strtoll(raw, NULL, 10);
	bool bad = errno == ERANGE;

	if (kind == OCIJSON_INT32) {
		if (bad || x < INT32_MIN || x > INT32_MAX)
			return ocijson_ctx_fail(c, -EINVAL, "%s out of range for int32", raw);
		*(int32_t *)dst = (int32_t)x;
		return 0;
	}
	if (bad)
		return ocijson_ctx_fail(c, -EINVAL, "%s out of range for int64", raw);
	*(int64_t *)dst = (int64_t)x;
	return 0;
}

static int parse_unsigned(struct ctx *c, const char *raw, enum ocijson_kind kind, void *dst)
{
	uint64_t max = kind == OCIJSON_UINT16   ? UINT16_MAX
		       : kind == OCIJSON_UINT32 ? UINT32_MAX
						: UINT64_MAX;
	bool neg = raw[0] == '-';

	errno = 0;
	unsigned long long x = neg ? 0 : strtoull(raw, NULL, 10);
	if (errno == ERANGE || x > max || (neg && strspn(raw + 1, "0") != strlen(raw + 1)))
		return ocijson_ctx_fail(c, -EINVAL, "%s out of range for %s", raw,
					kind_c_name(kind));
	if (kind == OCIJSON_UINT16)
		*(uint16_t *)dst = (uint16_t)x;
	else if (kind == OCIJSON_UINT32)
		*(uint32_t *)dst = (uint32_t)x;
	else
		*(uint64_t *)dst = (uint64_t)x;
	return 0;
}

static int parse_integer(struct ctx *c, enum ocijson_kind kind, yajl_val v, void *dst)
{
	if (!YAJL_IS_NUMBER(v) || v->u.number.r == NULL || !is_json_integer(v->u.number.r))
		return wrong_type(c, kind, v);
	if (kind == OCIJSON_INT32 || kind == OCIJSON_INT64)
		return parse_signed(c, v->u.number.r, kind, dst);
	return parse_unsigned(c, v->u.number.r, kind, dst);
}

static int parse_string(struct ctx *c, const char *const *values, yajl_val v, char **dst)
{
	if (!YAJL_IS_STRING(v))
		return wrong_type(c, OCIJSON_STRING, v);
	int r = ocijson_check_enum(c, v->u.string, values);
	if (r < 0)
		return r;
	*dst = strdup(v->u.string);
	return *dst == NULL ? ocijson_ctx_oom(c) : 0;
}

static int parse_scalar(struct ctx *c, enum ocijson_kind kind, const char *const *values,
			yajl_val v, void *dst)
{
	switch (kind) {
	case OCIJSON_STRING: return parse_string(c, values, v, dst);
	case OCIJSON_BOOL:
		if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
			return wrong_type(c, kind, v);
		*(bool *)dst = YAJL_IS_TRUE(v);
		return 0;
	default: return parse_integer(c, kind, v, dst);
	}
}

/* ---- tree walk: containers ---------------------------------------------------------- */

static int parse_object(struct ctx *c, const struct ocijson_type *type, yajl_val v, void *obj);

static int parse_new_object(struct ctx *c, const struct ocijson_type *type, yajl_val v, void **dst)
{
	if (!YAJL_IS_OBJECT(v))
		return wrong_type(c, OCIJSON_OBJECT, v);
	*dst = calloc(1, type->size);
	if (*dst == NULL)
		return ocijson_ctx_oom(c);
	return parse_object(c, type, v, *dst);
}

static int parse_array(struct ctx *c, const struct ocijson_field *f, yajl_val v, void *obj)
{
	void **slot = FIELD_PTR(obj, f->offset);
	size_t *len = FIELD_PTR(obj, f->len_offset);

	if (!YAJL_IS_ARRAY(v))
		return wrong_type(c, OCIJSON_ARRAY, v);
	size_t n = v->u.array.len, size = ocijson_elem_size(f->elem);
	/* never NULL, so that `[]` stays distinguishable from absent */
	*slot = calloc(n > 0 ? n : 1, size);
	if (*slot == NULL)
		return ocijson_ctx_oom(c);
	*len = n;
	for (size_t i = 0; i < n; i++) {
		size_t mark = ocijson_path_push_index(&c->path, i);
		void *dst = (char *)*slot + i * size;
		yajl_val item = v->u.array.values[i];
		int r = f->elem == OCIJSON_OBJECT ? parse_new_object(c, f->sub, item, dst)
						  : parse_scalar(c, f->elem, f->values, item, dst);
		if (r < 0)
			return r;
		ocijson_path_pop(&c->path, mark);
	}
	return 0;
}

static int cmp_key_ptr(const void *a, const void *b)
{
	return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

/* Rejects an object with the same key twice; sorting keeps a 100k-key map fast. */
static int check_duplicate_keys(struct ctx *c, yajl_val v)
{
	size_t n = v->u.object.len;
	const char **keys = v->u.object.keys;

	if (n < 2)
		return 0;
	const char ***ptrs = (const char ***)malloc(n * sizeof(*ptrs));
	if (ptrs == NULL)
		return ocijson_ctx_oom(c);
	for (size_t i = 0; i < n; i++)
		ptrs[i] = &keys[i];
	qsort(ptrs, n, sizeof(*ptrs), cmp_key_ptr);
	const char *dup = NULL;
	for (size_t i = 1; i < n && dup == NULL; i++)
		if (strcmp(*ptrs[i - 1], *ptrs[i]) == 0)
			dup = *ptrs[i];
	free(ptrs);
	if (dup == NULL)
		return 0;
	return ocijson_ctx_fail(c, -EINVAL, "duplicate key \"%s\"", dup);
}

static int parse_string_map(struct ctx *c, yajl_val v, struct oci_string_map **dst)
{
	if (!YAJL_IS_OBJECT(v))
		return wrong_type(c, OCIJSON_STRING_MAP, v);
	int r = check_duplicate_keys(c, v);
	if (r < 0)
		return r;
	size_t n = v->u.object.len;
	struct oci_string_map *m = *dst = calloc(1, sizeof(*m));
	if (m == NULL)
		return ocijson_ctx_oom(c);
	m->keys = calloc(n > 0 ? n : 1, sizeof(char *));
	m->values = calloc(n > 0 ? n : 1, sizeof(char *));
	if (m->keys == NULL || m->values == NULL)
		return ocijson_ctx_oom(c);
	m->len = n;
	for (size_t i = 0; i < n; i++) {
		size_t mark = ocijson_path_push_key(&c->path, v->u.object.keys[i]);
		r = parse_string(c, NULL, v->u.object.values[i], &m->values[i]);
		if (r < 0)
			return r;
		ocijson_path_pop(&c->path, mark);
		m->keys[i] = strdup(v->u.object.keys[i]);
		if (m->keys[i] == NULL)
			return ocijson_ctx_oom(c);
	}
	return 0;
}

static int parse_map_entry(struct ctx *c, const struct ocijson_type *type, const char *key,
			   yajl_val v, void **dst)
{
	const struct ocijson_field *kf = ocijson_key_field(type);

	if (!YAJL_IS_OBJECT(v))
		return wrong_type(c, OCIJSON_OBJECT, v);
	*dst = calloc(1, type->size);
	if (*dst == NULL)
		return ocijson_ctx_oom(c);
	if (kf != NULL) {
		int r = ocijson_check_enum(c, key, kf->values);
		if (r < 0)
			return r;
		char **kslot = FIELD_PTR(*dst, kf->offset);
		*kslot = strdup(key);
		if (*kslot == NULL)
			return ocijson_ctx_oom(c);
	}
	return parse_object(c, type, v, *dst);
}

static int parse_object_map(struct ctx *c, const struct ocijson_field *f, yajl_val v, void *obj)
{
	void ***slot = FIELD_PTR(obj, f->offset);
	size_t *len = FIELD_PTR(obj, f->len_offset);

	if (!YAJL_IS_OBJECT(v))
		return wrong_type(c, OCIJSON_OBJECT_MAP, v);
	int r = check_duplicate_keys(c, v);
	if (r < 0)
		return r;
	size_t n = v->u.object.len;
	*slot = calloc(n > 0 ? n : 1, sizeof(void *));
	if (*slot == NULL)
		return ocijson_ctx_oom(c);
	*len = n;
	for (size_t i = 0; i < n; i++) {
		size_t mark = ocijson_path_push_key(&c->path, v->u.object.keys[i]);
		r = parse_map_entry(c, f->sub, v->u.object.keys[i], v->u.object.values[i],
				    &(*slot)[i]);
		if (r < 0)
			return r;
		ocijson_path_pop(&c->path, mark);
	}
	return 0;
}

static int parse_field(struct ctx *c, const struct ocijson_field *f, yajl_val v, void *obj)
{
	void *dst = FIELD_PTR(obj, f->offset);

	switch (f->kind) {
	case OCIJSON_OBJECT: return parse_new_object(c, f->sub, v, dst);
	case OCIJSON_ARRAY: return parse_array(c, f, v, obj);
	case OCIJSON_STRING_MAP: return parse_string_map(c, v, dst);
	case OCIJSON_OBJECT_MAP: return parse_object_map(c, f, v, obj);
	case OCIJSON_KEY: return 0;
	default: {
		int r = parse_scalar(c, f->kind, f->values, v, dst);
		if (r == 0 && f->present_offset != OCIJSON_NO_OFFSET)
			*(bool *)FIELD_PTR(obj, f->present_offset) = true;
		return r;
	}
	}
}

static const struct ocijson_field *find_field(const struct ocijson_type *type, const char *name,
					      size_t *ret_index)
{
	for (size_t i = 0; i < type->n_fields; i++) {
		const struct ocijson_field *f = &type->fields[i];
		if (f->kind != OCIJSON_KEY && strcmp(f->name, name) == 0) {
			*ret_index = i;
			return f;
		}
	}
	return NULL;
}

static int check_required(struct ctx *c, const struct ocijson_type *type, uint64_t seen)
{
	for (size_t i = 0; i < type->n_fields; i++) {
		const struct ocijson_field *f = &type->fields[i];
		if (!(f->flags & OCIJSON_REQUIRED) || (seen & (UINT64_C(1) << i)))
			continue;
		ocijson_path_push_key(&c->path, f->name);
		return ocijson_ctx_fail(c, -EINVAL, "required field missing");
	}
	return 0;
}

static int parse_members(struct ctx *c, const struct ocijson_type *type, yajl_val v, void *obj,
			 uint64_t *seen)
{
	for (size_t i = 0; i < v->u.object.len; i++) {
		size_t idx;
		const struct ocijson_field *f = find_field(type, v->u.object.keys[i], &idx);
		if (f == NULL)
			continue; /* unknown members are ignored */
		size_t mark = ocijson_path_push_key(&c->path, f->name);
		if (*seen & (UINT64_C(1) << idx))
			return ocijson_ctx_fail(c, -EINVAL, "duplicate key");
		*seen |= UINT64_C(1) << idx;
		int r = parse_field(c, f, v->u.object.values[i], obj);
		if (r < 0)
			return r;
		ocijson_path_pop(&c->path, mark);
	}
	return 0;
}

static int parse_object(struct ctx *c, const struct ocijson_type *type, yajl_val v, void *obj)
{
	uint64_t seen = 0;

	if (type->n_fields > OCIJSON_MAX_FIELDS)
		return ocijson_ctx_fail(c, -EINVAL, "type %s has too many fields", type->name);
	int r = parse_members(c, type, v, obj, &seen);
	if (r == 0)
		r = check_required(c, type, seen);
	if (r == 0 && type->validate != NULL) {
		if (c->path.oom)
			return ocijson_ctx_oom(c);
		struct ocijson_where where = { .source = c->source,
					       .path = ocijson_path_str(&c->path) };
		r = type->validate(obj, &where, c->ret_err);
	}
	return r;
}

/* ---- parse entry points ------------------------------------------------------------ */

static int parse_tree(const struct ocijson_type *type, yajl_val tree, const char *source,
		      void **ret, char **ret_err)
{
	struct ctx c = { .source = source, .ret_err = ret_err };
	void *obj = NULL;

	int r = parse_new_object(&c, type, tree, &obj);
	free(c.path.buf);
	if (r < 0) {
		ocijson_free(type, obj);
		return r;
	}
	*ret = obj;
	return 0;
}

int ocijson_parse_data(const struct ocijson_type *type, const char *data, size_t len,
		       const char *source_name, void **ret, char **ret_err)
{
	const char *source = source_name != NULL ? source_name : type->name;
	char errbuf[256] = "";

	if (data == NULL)
		len = 0;
	if (len > 0 && memchr(data, '\0', len) != NULL)
		return ocijson_set_errf(ret_err, -EINVAL, "%s: contains a NUL byte", source);
	int r = scan_syntax(data != NULL ? data : "", len, source, ret_err);
	if (r < 0)
		return r;
	_cleanup_free_ char *copy = strndup(data != NULL ? data : "", len);
	if (copy == NULL)
		return ocijson_set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	yajl_val tree = yajl_tree_parse(copy, errbuf, sizeof(errbuf));
	if (tree == NULL) {
		errbuf[strcspn(errbuf, "\r\n")] = '\0';
		return ocijson_set_errf(ret_err, -EINVAL, "%s: %s", source,
					errbuf[0] ? errbuf : OOM_MESSAGE);
	}
	r = parse_tree(type, tree, source, ret, ret_err);
	yajl_tree_free(tree);
	return r;
}

/* Reads at most max + 1 bytes so that "too large" is detected without trusting st_size. */
static int read_bounded(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t cap = 64 * 1024, len = 0;
	_cleanup_free_ char *buf = malloc(cap);

	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap > max)
				break;
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nbuf = realloc(buf, cap);
			if (nbuf == NULL)
				return -ENOMEM;
			buf = nbuf;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_buf = steal_ptr(&buf);
	*ret_len = len;
	return 0;
}

int ocijson_parse_file(const struct ocijson_type *type, const char *path, void **ret,
		       char **ret_err)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL && slash[1] != '\0' ? slash + 1 : path;
	_cleanup_free_ char *data = NULL;
	size_t len = 0;

	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ocijson_set_errf(ret_err, -errno, "%s: open %s: %s", base, path,
					strerror(errno));
	int r = read_bounded(fd, OCIJSON_MAX_FILE_SIZE, &data, &len);
	close(fd);
	if (r < 0)
		return ocijson_set_errf(ret_err, r, "%s: read %s: %s", base, path, strerror(-r));
	if (len > OCIJSON_MAX_FILE_SIZE)
		return ocijson_set_errf(ret_err, -EFBIG, "%s: larger than %zu bytes", base,
					OCIJSON_MAX_FILE_SIZE);
	return ocijson_parse_data(type, data, len, base, ret, ret_err);
}
