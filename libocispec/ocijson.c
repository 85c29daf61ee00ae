/* ocijson: parse, validate, generate and free C structs described by field tables.
 *
 * Parsing runs in two passes: a streaming yajl pass that checks syntax, UTF-8 and nesting
 * depth without building anything, then yajl_tree_parse and a walk of the tree guided by
 * the type's table. Generation walks the struct with yajl_gen. See ocijson.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#include "ocijson.h"

#define OOM_MESSAGE "out of memory"

/* ---- small helpers -------------------------------------------------------------- */

static void freep(void *p)
{
	free(*(void **) p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

static void *steal_ptr(void *pp)
{
	void **p = pp;
	void *ret = *p;

	*p = NULL;
	return ret;
}

/* Sets *ret_err to a copy of msg (or leaves it NULL when even that fails) and returns err. */
static int set_err(char **ret_err, int err, const char *msg)
{
	if (ret_err != NULL)
		*ret_err = strdup(msg);
	return err;
}

__attribute__((format(printf, 3, 0))) static int vset_errf(char **ret_err, int err,
							  const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (ret_err == NULL)
		return err;
	if (vasprintf(&msg, fmt, ap) < 0)
		return set_err(ret_err, err, OOM_MESSAGE);
	*ret_err = msg;
	return err;
}

__attribute__((format(printf, 3, 4))) static int set_errf(char **ret_err, int err,
							 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = vset_errf(ret_err, err, fmt, ap);
	va_end(ap);
	return err;
}

#define FIELD_PTR(obj, off) ((void *) ((char *) (obj) + (off)))
#define FIELD_CPTR(obj, off) ((const void *) ((const char *) (obj) + (off)))

bool ocijson_in_list(const char *s, const char *const *values)
{
	for (; *values != NULL; values++)
		if (strcmp(s, *values) == 0)
			return true;
	return false;
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

/* ---- JSON paths ---------------------------------------------------------------------
 * A growing "linux.namespaces[2].type" buffer; push returns the old length to pop back to. */

struct path {
	char *buf;
	size_t len, cap;
	bool oom;
};

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

static size_t path_push_key(struct path *p, const char *key)
{
	size_t old = p->len;

	if (p->len > 0)
		path_append(p, ".", 1);
	path_append(p, key, strlen(key));
	return old;
}

static size_t path_push_index(struct path *p, size_t i)
{
	size_t old = p->len;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "[%zu]", i);

	path_append(p, buf, (size_t) n);
	return old;
}

static void path_pop(struct path *p, size_t old)
{
	if (p->oom || p->buf == NULL)
		return;
	p->len = old;
	p->buf[old] = '\0';
}

static const char *path_str(const struct path *p)
{
	return p->buf != NULL && !p->oom ? p->buf : "";
}

/* ---- errors with paths ----------------------------------------------------------- */

struct ctx {
	const char *source;
	struct path path;
	char **ret_err;
};

__attribute__((format(printf, 3, 4))) static int ctx_fail(struct ctx *c, int err,
							 const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;

	if (c->ret_err == NULL)
		return err;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return set_err(c->ret_err, -ENOMEM, OOM_MESSAGE);
	const char *path = path_str(&c->path);
	if (*path == '\0')
		return set_errf(c->ret_err, err, "%s: %s", c->source, msg);
	return set_errf(c->ret_err, err, "%s: %s: %s", c->source, path, msg);
}

static int ctx_oom(struct ctx *c)
{
	return set_err(c->ret_err, -ENOMEM, OOM_MESSAGE);
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
		return set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	const char *path = where->path != NULL ? where->path : "";
	const char *dot = (*path != '\0' && sub != NULL && *sub != '[') ? "." : "";
	if (sub == NULL)
		sub = "";
	if (*path == '\0' && *sub == '\0')
		return set_errf(ret_err, -EINVAL, "%s: %s", where->source, msg);
	return set_errf(ret_err, -EINVAL, "%s: %s%s%s: %s", where->source, path, dot, sub, msg);
}

/* ---- free -------------------------------------------------------------------------- */

static size_t elem_size(enum ocijson_kind kind)
{
	switch (kind) {
	case OCIJSON_BOOL:
		return sizeof(bool);
	case OCIJSON_INT32:
		return sizeof(int32_t);
	case OCIJSON_INT64:
		return sizeof(int64_t);
	case OCIJSON_UINT16:
		return sizeof(uint16_t);
	case OCIJSON_UINT32:
		return sizeof(uint32_t);
	case OCIJSON_UINT64:
		return sizeof(uint64_t);
	default:
		return sizeof(void *);
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
	case OCIJSON_KEY:
		free(*slot);
		break;
	case OCIJSON_OBJECT:
		ocijson_free(f->sub, *slot);
		break;
	case OCIJSON_STRING_MAP:
		oci_string_map_free(*slot);
		break;
	case OCIJSON_ARRAY:
	case OCIJSON_OBJECT_MAP:
		if (f->elem == OCIJSON_STRING || f->elem == OCIJSON_OBJECT)
			free_pointer_array(f, *slot, *(size_t *) FIELD_PTR(obj, f->len_offset));
		free(*slot);
		break;
	default:
		return;
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

static size_t scalar_size(enum ocijson_kind k)
{
	switch (k) {
	case OCIJSON_BOOL: return sizeof(bool);
	case OCIJSON_INT32: return sizeof(int32_t);
	case OCIJSON_INT64: return sizeof(int64_t);
	case OCIJSON_UINT16: return sizeof(uint16_t);
	case OCIJSON_UINT32: return sizeof(uint32_t);
	case OCIJSON_UINT64: return sizeof(uint64_t);
	default: return 0;
	}
}

static void merge_field(const struct ocijson_field *f, void *dst, void *src)
{
	void **d = FIELD_PTR(dst, f->offset), **s = FIELD_PTR(src, f->offset);
	size_t n = scalar_size(f->kind);

	if (n > 0) {
		bool *present = f->present_offset == OCIJSON_NO_OFFSET
					? NULL
					: (bool *) FIELD_PTR(src, f->present_offset);

		if (present != NULL && !*present)
			return;
		memcpy(d, s, n);
		if (present != NULL)
			*(bool *) FIELD_PTR(dst, f->present_offset) = true;
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
		memcpy(FIELD_PTR(dst, f->len_offset), FIELD_PTR(src, f->len_offset), sizeof(size_t));
}

void ocijson_merge(const struct ocijson_type *type, void *dst, void *src)
{
	if (src == NULL)
		return;
	for (size_t i = 0; i < type->n_fields; i++)
		merge_field(&type->fields[i], dst, src);
	ocijson_free(type, src);
}

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
	((struct scan *) ctx)->nul_in_string = true;
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
	((struct scan *) ctx)->depth--;
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
	_cleanup_free_ char *msg = strdup(raw != NULL ? (char *) raw : "parse error");

	if (raw != NULL)
		yajl_free_error(h, raw);
	if (msg == NULL)
		return set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	for (char *p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	for (size_t n = strlen(msg); n > 0 && msg[n - 1] == ' '; n--)
		msg[n - 1] = '\0';
	return set_errf(ret_err, -EINVAL, "%s: line %u: %s", source, line_of(data, offset), msg);
}

static int scan_syntax(const char *data, size_t len, const char *source, char **ret_err)
{
	struct scan s = { 0 };
	yajl_handle h = yajl_alloc(&scan_callbacks, NULL, &s);

	if (h == NULL)
		return set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	size_t offset = len;
	yajl_status st = yajl_parse(h, (const unsigned char *) data, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	else
		offset = yajl_get_bytes_consumed(h);
	int r = 0;
	if (s.too_deep)
		r = set_errf(ret_err, -EINVAL, "%s: nesting deeper than %d levels", source,
			     OCIJSON_MAX_DEPTH);
	else if (s.nul_in_string)
		r = set_errf(ret_err, -EINVAL, "%s: line %u: string contains \\u0000", source,
			     line_of(data, offset));
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
	case OCIJSON_KEY:
		return "string";
	case OCIJSON_BOOL:
		return "boolean";
	case OCIJSON_ARRAY:
		return "array";
	case OCIJSON_OBJECT:
	case OCIJSON_STRING_MAP:
	case OCIJSON_OBJECT_MAP:
		return "object";
	default:
		return "integer";
	}
}

static const char *kind_c_name(enum ocijson_kind kind)
{
	switch (kind) {
	case OCIJSON_INT32:
		return "int32";
	case OCIJSON_INT64:
		return "int64";
	case OCIJSON_UINT16:
		return "uint16";
	case OCIJSON_UINT32:
		return "uint32";
	default:
		return "uint64";
	}
}

static int wrong_type(struct ctx *c, enum ocijson_kind kind, yajl_val v)
{
	return ctx_fail(c, -EINVAL, "expected %s, got %s", kind_type_name(kind), json_type_name(v));
}

static int check_enum(struct ctx *c, const char *s, const char *const *values)
{
	char list[512] = "";
	size_t used = 0;

	if (values == NULL || ocijson_in_list(s, values))
		return 0;
	for (; *values != NULL && used < sizeof(list); values++) {
		int n = snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", *values);
		if (n < 0)
			break;
		used += (size_t) n;
	}
	return ctx_fail(c, -EINVAL, "invalid value \"%s\" (expected one of: %s)", s, list);
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
			return ctx_fail(c, -EINVAL, "%s out of range for int32", raw);
		*(int32_t *) dst = (int32_t) x;
		return 0;
	}
	if (bad)
		return ctx_fail(c, -EINVAL, "%s out of range for int64", raw);
	*(int64_t *) dst = (int64_t) x;
	return 0;
}

static int parse_unsigned(struct ctx *c, const char *raw, enum ocijson_kind kind, void *dst)
{
	uint64_t max = kind == OCIJSON_UINT16 ? UINT16_MAX
		       : kind == OCIJSON_UINT32 ? UINT32_MAX : UINT64_MAX;
	bool neg = raw[0] == '-';

	errno = 0;
	unsigned long long x = neg ? 0 : strtoull(raw, NULL, 10);
	if (errno == ERANGE || x > max || (neg && strspn(raw + 1, "0") != strlen(raw + 1)))
		return ctx_fail(c, -EINVAL, "%s out of range for %s", raw, kind_c_name(kind));
	if (kind == OCIJSON_UINT16)
		*(uint16_t *) dst = (uint16_t) x;
	else if (kind == OCIJSON_UINT32)
		*(uint32_t *) dst = (uint32_t) x;
	else
		*(uint64_t *) dst = (uint64_t) x;
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
	int r = check_enum(c, v->u.string, values);
	if (r < 0)
		return r;
	*dst = strdup(v->u.string);
	return *dst == NULL ? ctx_oom(c) : 0;
}

static int parse_scalar(struct ctx *c, enum ocijson_kind kind, const char *const *values,
			yajl_val v, void *dst)
{
	switch (kind) {
	case OCIJSON_STRING:
		return parse_string(c, values, v, dst);
	case OCIJSON_BOOL:
		if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
			return wrong_type(c, kind, v);
		*(bool *) dst = YAJL_IS_TRUE(v);
		return 0;
	default:
		return parse_integer(c, kind, v, dst);
	}
}

/* ---- tree walk: containers ---------------------------------------------------------- */

static int parse_object(struct ctx *c, const struct ocijson_type *type, yajl_val v, void *obj);

static int parse_new_object(struct ctx *c, const struct ocijson_type *type, yajl_val v,
			    void **dst)
{
	if (!YAJL_IS_OBJECT(v))
		return wrong_type(c, OCIJSON_OBJECT, v);
	*dst = calloc(1, type->size);
	if (*dst == NULL)
		return ctx_oom(c);
	return parse_object(c, type, v, *dst);
}

static int parse_array(struct ctx *c, const struct ocijson_field *f, yajl_val v, void *obj)
{
	void **slot = FIELD_PTR(obj, f->offset);
	size_t *len = FIELD_PTR(obj, f->len_offset);

	if (!YAJL_IS_ARRAY(v))
		return wrong_type(c, OCIJSON_ARRAY, v);
	size_t n = v->u.array.len, size = elem_size(f->elem);
	/* never NULL, so that `[]` stays distinguishable from absent */
	*slot = calloc(n > 0 ? n : 1, size);
	if (*slot == NULL)
		return ctx_oom(c);
	*len = n;
	for (size_t i = 0; i < n; i++) {
		size_t mark = path_push_index(&c->path, i);
		void *dst = (char *) *slot + i * size;
		yajl_val item = v->u.array.values[i];
		int r = f->elem == OCIJSON_OBJECT ? parse_new_object(c, f->sub, item, dst)
						  : parse_scalar(c, f->elem, f->values, item, dst);
		if (r < 0)
			return r;
		path_pop(&c->path, mark);
	}
	return 0;
}

static int cmp_key_ptr(const void *a, const void *b)
{
	return strcmp(**(const char *const *const *) a, **(const char *const *const *) b);
}

/* Rejects an object with the same key twice; sorting keeps a 100k-key map fast. */
static int check_duplicate_keys(struct ctx *c, yajl_val v)
{
	size_t n = v->u.object.len;
	const char **keys = v->u.object.keys;

	if (n < 2)
		return 0;
	const char ***ptrs = (const char ***) malloc(n * sizeof(*ptrs));
	if (ptrs == NULL)
		return ctx_oom(c);
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
	return ctx_fail(c, -EINVAL, "duplicate key \"%s\"", dup);
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
		return ctx_oom(c);
	m->keys = calloc(n > 0 ? n : 1, sizeof(char *));
	m->values = calloc(n > 0 ? n : 1, sizeof(char *));
	if (m->keys == NULL || m->values == NULL)
		return ctx_oom(c);
	m->len = n;
	for (size_t i = 0; i < n; i++) {
		size_t mark = path_push_key(&c->path, v->u.object.keys[i]);
		r = parse_string(c, NULL, v->u.object.values[i], &m->values[i]);
		if (r < 0)
			return r;
		path_pop(&c->path, mark);
		m->keys[i] = strdup(v->u.object.keys[i]);
		if (m->keys[i] == NULL)
			return ctx_oom(c);
	}
	return 0;
}

static const struct ocijson_field *key_field(const struct ocijson_type *type)
{
	for (size_t i = 0; i < type->n_fields; i++)
		if (type->fields[i].kind == OCIJSON_KEY)
			return &type->fields[i];
	return NULL;
}

static int parse_map_entry(struct ctx *c, const struct ocijson_type *type, const char *key,
			   yajl_val v, void **dst)
{
	const struct ocijson_field *kf = key_field(type);

	if (!YAJL_IS_OBJECT(v))
		return wrong_type(c, OCIJSON_OBJECT, v);
	*dst = calloc(1, type->size);
	if (*dst == NULL)
		return ctx_oom(c);
	if (kf != NULL) {
		int r = check_enum(c, key, kf->values);
		if (r < 0)
			return r;
		char **kslot = FIELD_PTR(*dst, kf->offset);
		*kslot = strdup(key);
		if (*kslot == NULL)
			return ctx_oom(c);
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
		return ctx_oom(c);
	*len = n;
	for (size_t i = 0; i < n; i++) {
		size_t mark = path_push_key(&c->path, v->u.object.keys[i]);
		r = parse_map_entry(c, f->sub, v->u.object.keys[i], v->u.object.values[i],
				    &(*slot)[i]);
		if (r < 0)
			return r;
		path_pop(&c->path, mark);
	}
	return 0;
}

static int parse_field(struct ctx *c, const struct ocijson_field *f, yajl_val v, void *obj)
{
	void *dst = FIELD_PTR(obj, f->offset);

	switch (f->kind) {
	case OCIJSON_OBJECT:
		return parse_new_object(c, f->sub, v, dst);
	case OCIJSON_ARRAY:
		return parse_array(c, f, v, obj);
	case OCIJSON_STRING_MAP:
		return parse_string_map(c, v, dst);
	case OCIJSON_OBJECT_MAP:
		return parse_object_map(c, f, v, obj);
	case OCIJSON_KEY:
		return 0;
	default: {
		int r = parse_scalar(c, f->kind, f->values, v, dst);
		if (r == 0 && f->present_offset != OCIJSON_NO_OFFSET)
			*(bool *) FIELD_PTR(obj, f->present_offset) = true;
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
		path_push_key(&c->path, f->name);
		return ctx_fail(c, -EINVAL, "required field missing");
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
		size_t mark = path_push_key(&c->path, f->name);
		if (*seen & (UINT64_C(1) << idx))
			return ctx_fail(c, -EINVAL, "duplicate key");
		*seen |= UINT64_C(1) << idx;
		int r = parse_field(c, f, v->u.object.values[i], obj);
		if (r < 0)
			return r;
		path_pop(&c->path, mark);
	}
	return 0;
}

static int parse_object(struct ctx *c, const struct ocijson_type *type, yajl_val v, void *obj)
{
	uint64_t seen = 0;

	if (type->n_fields > OCIJSON_MAX_FIELDS)
		return ctx_fail(c, -EINVAL, "type %s has too many fields", type->name);
	int r = parse_members(c, type, v, obj, &seen);
	if (r == 0)
		r = check_required(c, type, seen);
	if (r == 0 && type->validate != NULL) {
		if (c->path.oom)
			return ctx_oom(c);
		struct ocijson_where where = { .source = c->source, .path = path_str(&c->path) };
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
		return set_errf(ret_err, -EINVAL, "%s: contains a NUL byte", source);
	int r = scan_syntax(data != NULL ? data : "", len, source, ret_err);
	if (r < 0)
		return r;
	_cleanup_free_ char *copy = strndup(data != NULL ? data : "", len);
	if (copy == NULL)
		return set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	yajl_val tree = yajl_tree_parse(copy, errbuf, sizeof(errbuf));
	if (tree == NULL) {
		errbuf[strcspn(errbuf, "\r\n")] = '\0';
		return set_errf(ret_err, -EINVAL, "%s: %s", source, errbuf[0] ? errbuf : OOM_MESSAGE);
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
		len += (size_t) n;
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
		return set_errf(ret_err, -errno, "%s: open %s: %s", base, path, strerror(errno));
	int r = read_bounded(fd, OCIJSON_MAX_FILE_SIZE, &data, &len);
	close(fd);
	if (r < 0)
		return set_errf(ret_err, r, "%s: read %s: %s", base, path, strerror(-r));
	if (len > OCIJSON_MAX_FILE_SIZE)
		return set_errf(ret_err, -EFBIG, "%s: larger than %zu bytes", base,
				OCIJSON_MAX_FILE_SIZE);
	return ocijson_parse_data(type, data, len, base, ret, ret_err);
}

/* ---- generate ------------------------------------------------------------------------ */

static int gen_object(struct ctx *c, yajl_gen g, const struct ocijson_type *type,
		      const void *obj);

static int gen_check(struct ctx *c, yajl_gen_status st)
{
	if (st == yajl_gen_status_ok)
		return 0;
	if (st == yajl_gen_invalid_string)
		return ctx_fail(c, -EINVAL, "invalid UTF-8 in string");
	return ctx_fail(c, -EINVAL, "JSON generator error %d", (int) st);
}

static int gen_string(struct ctx *c, yajl_gen g, const char *s, const char *const *values)
{
	if (s == NULL)
		return ctx_fail(c, -EINVAL, "NULL string in array or map");
	int r = check_enum(c, s, values);
	if (r < 0)
		return r;
	return gen_check(c, yajl_gen_string(g, (const unsigned char *) s, strlen(s)));
}

static int gen_scalar(struct ctx *c, yajl_gen g, enum ocijson_kind kind,
		      const char *const *values, const void *src)
{
	char buf[32];

	switch (kind) {
	case OCIJSON_STRING:
		return gen_string(c, g, *(char *const *) src, values);
	case OCIJSON_BOOL:
		return gen_check(c, yajl_gen_bool(g, *(const bool *) src));
	case OCIJSON_INT32:
		return gen_check(c, yajl_gen_integer(g, *(const int32_t *) src));
	case OCIJSON_INT64:
		return gen_check(c, yajl_gen_integer(g, *(const int64_t *) src));
	case OCIJSON_UINT16:
		return gen_check(c, yajl_gen_integer(g, *(const uint16_t *) src));
	case OCIJSON_UINT32:
		return gen_check(c, yajl_gen_integer(g, *(const uint32_t *) src));
	default:
		/* yajl_gen_integer takes long long: format uint64 ourselves */
		snprintf(buf, sizeof(buf), "%" PRIu64, *(const uint64_t *) src);
		return gen_check(c, yajl_gen_number(g, buf, strlen(buf)));
	}
}

static int gen_sub_object(struct ctx *c, yajl_gen g, const struct ocijson_type *type,
			  const void *obj)
{
	if (obj == NULL)
		return ctx_fail(c, -EINVAL, "NULL object in array or map");
	return gen_object(c, g, type, obj);
}

static int gen_array(struct ctx *c, yajl_gen g, const struct ocijson_field *f, const void *obj)
{
	const char *arr = *(const char *const *) FIELD_CPTR(obj, f->offset);
	size_t n = *(const size_t *) FIELD_CPTR(obj, f->len_offset), size = elem_size(f->elem);
	int r = gen_check(c, yajl_gen_array_open(g));

	for (size_t i = 0; r == 0 && i < n; i++) {
		size_t mark = path_push_index(&c->path, i);
		const void *src = arr + i * size;
		if (f->elem == OCIJSON_OBJECT)
			r = gen_sub_object(c, g, f->sub, *(const void *const *) src);
		else
			r = gen_scalar(c, g, f->elem, f->values, src);
		if (r == 0)
			path_pop(&c->path, mark);
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
		size_t mark = path_push_key(&c->path, m->keys[i]);
		r = gen_string(c, g, m->values[i], NULL);
		if (r == 0)
			path_pop(&c->path, mark);
	}
	return r < 0 ? r : gen_check(c, yajl_gen_map_close(g));
}

static int gen_object_map(struct ctx *c, yajl_gen g, const struct ocijson_field *f,
			  const void *obj)
{
	const void *const *arr = *(const void *const *const *) FIELD_CPTR(obj, f->offset);
	size_t n = *(const size_t *) FIELD_CPTR(obj, f->len_offset);
	const struct ocijson_field *kf = key_field(f->sub);
	int r = gen_check(c, yajl_gen_map_open(g));

	for (size_t i = 0; r == 0 && i < n; i++) {
		if (arr[i] == NULL || kf == NULL)
			return ctx_fail(c, -EINVAL, "NULL entry or key in map");
		const char *key = *(const char *const *) FIELD_CPTR(arr[i], kf->offset);
		r = gen_string(c, g, key, kf->values);
		if (r < 0)
			return r;
		size_t mark = path_push_key(&c->path, key);
		r = gen_object(c, g, f->sub, arr[i]);
		if (r == 0)
			path_pop(&c->path, mark);
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
	case OCIJSON_OBJECT_MAP:
		return *(const void *const *) FIELD_CPTR(obj, f->offset) != NULL;
	case OCIJSON_KEY:
		return false;
	default:
		return f->present_offset == OCIJSON_NO_OFFSET ||
		       *(const bool *) FIELD_CPTR(obj, f->present_offset);
	}
}

static int gen_field(struct ctx *c, yajl_gen g, const struct ocijson_field *f, const void *obj)
{
	const void *src = FIELD_CPTR(obj, f->offset);

	switch (f->kind) {
	case OCIJSON_OBJECT:
		return gen_object(c, g, f->sub, *(const void *const *) src);
	case OCIJSON_ARRAY:
		return gen_array(c, g, f, obj);
	case OCIJSON_STRING_MAP:
		return gen_string_map(c, g, *(const struct oci_string_map *const *) src);
	case OCIJSON_OBJECT_MAP:
		return gen_object_map(c, g, f, obj);
	default:
		return gen_scalar(c, g, f->kind, f->values, src);
	}
}

static int gen_members(struct ctx *c, yajl_gen g, const struct ocijson_type *type,
		       const void *obj)
{
	for (size_t i = 0; i < type->n_fields; i++) {
		const struct ocijson_field *f = &type->fields[i];
		bool present = field_present(f, obj);
		if (!present && !(f->flags & OCIJSON_REQUIRED))
			continue;
		if (f->kind == OCIJSON_KEY)
			continue;
		size_t mark = path_push_key(&c->path, f->name);
		if (!present)
			return ctx_fail(c, -EINVAL, "required field missing");
		int r = gen_check(c, yajl_gen_string(g, (const unsigned char *) f->name,
						     strlen(f->name)));
		if (r == 0)
			r = gen_field(c, g, f, obj);
		if (r < 0)
			return r;
		path_pop(&c->path, mark);
	}
	return 0;
}

/* The validate hook runs after the members, as when parsing: it may rely on required
 * members being set. */
static int gen_object(struct ctx *c, yajl_gen g, const struct ocijson_type *type,
		      const void *obj)
{
	int r = gen_check(c, yajl_gen_map_open(g));

	if (r == 0)
		r = gen_members(c, g, type, obj);
	if (r == 0 && type->validate != NULL) {
		if (c->path.oom)
			return ctx_oom(c);
		struct ocijson_where where = { .source = c->source, .path = path_str(&c->path) };
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

int ocijson_generate(const struct ocijson_type *type, const void *obj, bool pretty,
		     char **ret_json, size_t *ret_len, char **ret_err)
{
	struct ctx c = { .source = type->name, .ret_err = ret_err };
	const unsigned char *buf;
	size_t len;

	if (obj == NULL)
		return set_errf(ret_err, -EINVAL, "%s: nothing to generate", type->name);
	yajl_gen g = gen_new(pretty);
	if (g == NULL)
		return set_err(ret_err, -ENOMEM, OOM_MESSAGE);
	int r = gen_object(&c, g, type, obj);
	free(c.path.buf);
	if (r == 0)
		r = gen_check(&c, yajl_gen_get_buf(g, &buf, &len));
	char *out = r == 0 ? strndup((const char *) buf, len) : NULL;
	if (r == 0 && out == NULL)
		r = set_err(ret_err, -ENOMEM, OOM_MESSAGE);
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
