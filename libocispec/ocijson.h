/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ocijson: a table-driven JSON <-> C struct engine on yajl.
 *
 * Each JSON object is a C struct described by a `struct ocijson_type`: its size and a
 * table of `struct ocijson_field` rows, one per JSON member, built with the OCIJSON_*
 * macros below (each row names the JSON key and the struct member; the macros check the
 * member's C type at compile time). The engine parses, validates, generates and frees any
 * struct so described; libocispec's config, state and features types are tables, and moat
 * declares its own internal types the same way.
 *
 * Memory conventions (what the engine allocates, and what it frees):
 *   strings        char *m;                 NULL = absent, malloc'd
 *   bool / number  T m; bool m_present;     the flag follows every optional scalar;
 *                                           required scalars have no flag
 *   object         struct x *m;             NULL = absent, malloc'd
 *   array          E *m; size_t m_len;      NULL = absent; non-NULL with m_len 0 = `[]`
 *                                           (E is char *, a number type, or struct x *)
 *   string map     struct oci_string_map *m;          NULL = absent; insertion order kept
 *   object map     struct x **m; size_t m_len;        JSON {"k": {...}}; the key is stored
 *                                                     in the member that struct x's table
 *                                                     marks with OCIJSON_KEY()
 * Anything built by hand and handed to ocijson_free() must follow the same rules (every
 * pointer malloc'd, every array of pointers holding non-NULL entries).
 *
 * Parsing is strict: wrong JSON types (explicit null included), missing required fields,
 * numbers out of range for the C type (integers only: no fraction, no exponent), strings
 * outside a field's allowed values, a known member given twice and a map key given twice
 * fail with the JSON path of the field. Unknown members are ignored, whatever they hold.
 * Input is limited to OCIJSON_MAX_DEPTH levels of nesting, checked before any tree is built;
 * it must be UTF-8 JSON without comments, raw NUL bytes or "\u0000" in strings.
 *
 * Errors: functions return 0 or a negative errno (-EINVAL for invalid input, -EFBIG for a
 * file over OCIJSON_MAX_FILE_SIZE, -ENOMEM, or the errno of a failed I/O call) and set
 * *ret_err (when ret_err is not NULL) to a malloc'd one-line message such as
 * "config.json: mounts[2].destination: required field missing". Generation errors are
 * prefixed with the type's name instead ("config: process.cwd: required field missing").
 * Out-parameters are left untouched on failure.
 */
#ifndef OCIJSON_H
#define OCIJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCIJSON_MAX_DEPTH 64                    /* yajl_tree_free recurses */
#define OCIJSON_MAX_FILE_SIZE ((size_t)4 << 20) /* ocijson_parse_file refuses more */
#define OCIJSON_MAX_FIELDS 64                   /* rows per type (duplicate-key bitmap) */
#define OCIJSON_NO_OFFSET ((size_t)-1)

/* An ordered string -> string map (annotations, sysctl, cgroup v2 unified, ...). */
struct oci_string_map {
	char **keys;
	char **values;
	size_t len;
};

/* Returns the value for key, or NULL. Linear search; maps here are small. */
const char *oci_string_map_get(const struct oci_string_map *map, const char *key);
/* Sets key to value (copies both), replacing an existing entry in place or appending.
 * Allocates *map when it is NULL. Returns 0 or -ENOMEM. */
int oci_string_map_set(struct oci_string_map **map, const char *key, const char *value);
void oci_string_map_free(struct oci_string_map *map);

enum ocijson_kind {
	OCIJSON_STRING,     /* char * */
	OCIJSON_BOOL,       /* bool */
	OCIJSON_INT32,      /* int32_t */
	OCIJSON_INT64,      /* int64_t */
	OCIJSON_UINT16,     /* uint16_t */
	OCIJSON_UINT32,     /* uint32_t */
	OCIJSON_UINT64,     /* uint64_t */
	OCIJSON_OBJECT,     /* struct x * */
	OCIJSON_ARRAY,      /* elements of kind `elem`, length at len_offset */
	OCIJSON_STRING_MAP, /* struct oci_string_map * */
	OCIJSON_OBJECT_MAP, /* struct x **, length at len_offset; key in the OCIJSON_KEY member */
	OCIJSON_KEY,        /* char *: the map key of an object-map entry, not a JSON member */
};

enum ocijson_flags {
	OCIJSON_REQUIRED = 1u << 0, /* parse fails if absent; generate fails if NULL */
};

struct ocijson_field {
	const char *name; /* JSON key (NULL for OCIJSON_KEY) */
	enum ocijson_kind kind;
	enum ocijson_kind elem;         /* element kind, for OCIJSON_ARRAY */
	size_t offset;                  /* of the member */
	size_t present_offset;          /* of the bool m_present, or OCIJSON_NO_OFFSET */
	size_t len_offset;              /* of the size_t m_len, or OCIJSON_NO_OFFSET */
	const struct ocijson_type *sub; /* for objects, object arrays and object maps */
	const char *const *values;      /* NULL-terminated allowed strings, or NULL (any) */
	unsigned flags;                 /* enum ocijson_flags */
};

/* Context handed to a type's validate hook: where the object sits in the document. */
struct ocijson_where {
	const char *source; /* "config.json" */
	const char *path;   /* "linux.namespaces[1]"; "" for the top level */
};

struct ocijson_type {
	const char *name; /* "config", used in generator error messages */
	size_t size;
	const struct ocijson_field *fields;
	size_t n_fields;
	/* Optional cross-field checks, run after the object's members were parsed or generated
	 * (so required members are set). Report failures with ocijson_fail(). */
	int (*validate)(const void *obj, const struct ocijson_where *where, char **ret_err);
};

/* Formats "<source>: <path>[.<sub>]: <message>" into *ret_err and returns -EINVAL.
 * sub may be NULL (the object itself) or start with '[' (no dot is added). */
int ocijson_fail(const struct ocijson_where *where, const char *sub, char **ret_err,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* True if s is one of the NULL-terminated values. */
bool ocijson_in_list(const char *s, const char *const *values);

int ocijson_parse_data(const struct ocijson_type *type, const char *data, size_t len,
		       const char *source_name, void **ret, char **ret_err);
/* Reads at most OCIJSON_MAX_FILE_SIZE bytes; the message prefix is the basename of path. */
int ocijson_parse_file(const struct ocijson_type *type, const char *path, void **ret,
		       char **ret_err);
/* Emits present members only, in table order; NUL-terminated, *ret_len excludes the NUL.
 * ret_len may be NULL. pretty: tab-indented, empty containers as [] and {}, final newline.
 * Fails (-EINVAL) on what parsing would refuse: a required pointer member that is NULL, a
 * string outside its allowed values, invalid UTF-8, a failing validate hook. */
int ocijson_generate(const struct ocijson_type *type, const void *obj, bool pretty, char **ret_json,
		     size_t *ret_len, char **ret_err);
/* Deep copy through generate + parse. */
int ocijson_clone(const struct ocijson_type *type, const void *obj, void **ret, char **ret_err);
/* Overlays what src has onto dst and frees src: each present scalar, string, array and map
 * of src replaces dst's; objects present in both are merged member by member (arrays are
 * replaced whole, not merged). Used to apply a partial update such as `moat update`'s. */
void ocijson_merge(const struct ocijson_type *type, void *dst, void *src);
/* Frees obj and everything it owns; accepts NULL. */
void ocijson_free(const struct ocijson_type *type, void *obj);

/* ---- table rows -------------------------------------------------------------------
 * T is the struct type, K the JSON key, M the member. Optional scalars need a
 * `bool M_present` member, arrays and object maps a `size_t M_len` member. The
 * OCIJSON_CHECK_ term is zero and only makes the compiler check the member's C type.
 */
/* clang-format off */
#define OCIJSON_CHECK_(T, M, CT) (0 * sizeof(_Generic(((T *) 0)->M, CT: 1)))
#define OCIJSON_OFF_(T, M, CT) (offsetof(T, M) + OCIJSON_CHECK_(T, M, CT))
#define OCIJSON_PRESENT_(T, M) OCIJSON_OFF_(T, M##_present, bool)
#define OCIJSON_LEN_(T, M) OCIJSON_OFF_(T, M##_len, size_t)

#define OCIJSON_ROW_(K, KIND, ELEM, OFF, POFF, LOFF, SUB, VALS, FL) \
	{ .name = (K), .kind = (KIND), .elem = (ELEM), .offset = (OFF), .present_offset = (POFF), \
	  .len_offset = (LOFF), .sub = (SUB), .values = (VALS), .flags = (FL) }
/* clang-format on */

#define OCIJSON_SCALAR_(T, K, M, KIND, CT, POFF, FL) \
	OCIJSON_ROW_(K, KIND, KIND, OCIJSON_OFF_(T, M, CT), POFF, OCIJSON_NO_OFFSET, NULL, NULL, FL)

/* char *; F is 0 or OCIJSON_REQUIRED */
#define OCIJSON_STR(T, K, M, F) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_STRING, char *, OCIJSON_NO_OFFSET, F)
/* char * restricted to the NULL-terminated list V */
#define OCIJSON_ENUM(T, K, M, V, F)                                                 \
	OCIJSON_ROW_(K, OCIJSON_STRING, OCIJSON_STRING, OCIJSON_OFF_(T, M, char *), \
		     OCIJSON_NO_OFFSET, OCIJSON_NO_OFFSET, NULL, V, F)

/* optional bool / numbers, with M_present */
#define OCIJSON_BOOL_OPT(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_BOOL, bool, OCIJSON_PRESENT_(T, M), 0)
#define OCIJSON_I32_OPT(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_INT32, int32_t, OCIJSON_PRESENT_(T, M), 0)
#define OCIJSON_I64_OPT(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_INT64, int64_t, OCIJSON_PRESENT_(T, M), 0)
#define OCIJSON_U16_OPT(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_UINT16, uint16_t, OCIJSON_PRESENT_(T, M), 0)
#define OCIJSON_U32_OPT(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_UINT32, uint32_t, OCIJSON_PRESENT_(T, M), 0)
#define OCIJSON_U64_OPT(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_UINT64, uint64_t, OCIJSON_PRESENT_(T, M), 0)

/* required bool / numbers, no present flag */
#define OCIJSON_BOOL_REQ(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_BOOL, bool, OCIJSON_NO_OFFSET, OCIJSON_REQUIRED)
#define OCIJSON_I32_REQ(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_INT32, int32_t, OCIJSON_NO_OFFSET, OCIJSON_REQUIRED)
#define OCIJSON_I64_REQ(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_INT64, int64_t, OCIJSON_NO_OFFSET, OCIJSON_REQUIRED)
#define OCIJSON_U16_REQ(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_UINT16, uint16_t, OCIJSON_NO_OFFSET, OCIJSON_REQUIRED)
#define OCIJSON_U32_REQ(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_UINT32, uint32_t, OCIJSON_NO_OFFSET, OCIJSON_REQUIRED)
#define OCIJSON_U64_REQ(T, K, M) \
	OCIJSON_SCALAR_(T, K, M, OCIJSON_UINT64, uint64_t, OCIJSON_NO_OFFSET, OCIJSON_REQUIRED)

/* struct ST *M; S is the ocijson_type describing ST */
#define OCIJSON_OBJ(T, K, M, ST, S, F)                                            \
	OCIJSON_ROW_(K, OCIJSON_OBJECT, OCIJSON_OBJECT, OCIJSON_OFF_(T, M, ST *), \
		     OCIJSON_NO_OFFSET, OCIJSON_NO_OFFSET, S, NULL, F)

/* arrays: char **M (optionally restricted to V), number *M, struct ST **M; all with M_len */
#define OCIJSON_STR_ARRAY(T, K, M, F)                                               \
	OCIJSON_ROW_(K, OCIJSON_ARRAY, OCIJSON_STRING, OCIJSON_OFF_(T, M, char **), \
		     OCIJSON_NO_OFFSET, OCIJSON_LEN_(T, M), NULL, NULL, F)
#define OCIJSON_ENUM_ARRAY(T, K, M, V, F)                                           \
	OCIJSON_ROW_(K, OCIJSON_ARRAY, OCIJSON_STRING, OCIJSON_OFF_(T, M, char **), \
		     OCIJSON_NO_OFFSET, OCIJSON_LEN_(T, M), NULL, V, F)
#define OCIJSON_NUM_ARRAY(T, K, M, KIND, CT, F)                                           \
	OCIJSON_ROW_(K, OCIJSON_ARRAY, KIND, OCIJSON_OFF_(T, M, CT *), OCIJSON_NO_OFFSET, \
		     OCIJSON_LEN_(T, M), NULL, NULL, F)
#define OCIJSON_OBJ_ARRAY(T, K, M, ST, S, F)                                      \
	OCIJSON_ROW_(K, OCIJSON_ARRAY, OCIJSON_OBJECT, OCIJSON_OFF_(T, M, ST **), \
		     OCIJSON_NO_OFFSET, OCIJSON_LEN_(T, M), S, NULL, F)

/* maps: struct oci_string_map *M; struct ST **M with M_len */
#define OCIJSON_STR_MAP(T, K, M, F)                                                  \
	OCIJSON_ROW_(K, OCIJSON_STRING_MAP, OCIJSON_STRING,                          \
		     OCIJSON_OFF_(T, M, struct oci_string_map *), OCIJSON_NO_OFFSET, \
		     OCIJSON_NO_OFFSET, NULL, NULL, F)
#define OCIJSON_OBJ_MAP(T, K, M, ST, S, F)                                             \
	OCIJSON_ROW_(K, OCIJSON_OBJECT_MAP, OCIJSON_OBJECT, OCIJSON_OFF_(T, M, ST **), \
		     OCIJSON_NO_OFFSET, OCIJSON_LEN_(T, M), S, NULL, F)
/* in an object-map entry's table: char *M receives the map key (restricted to V if set) */
#define OCIJSON_KEY(T, M, V)                                                        \
	OCIJSON_ROW_(NULL, OCIJSON_KEY, OCIJSON_STRING, OCIJSON_OFF_(T, M, char *), \
		     OCIJSON_NO_OFFSET, OCIJSON_NO_OFFSET, NULL, V, 0)

/* Defines the usual typed entry points for a struct described by TYPE:
 *   int P_parse_file(const char *path, CT **ret, char **ret_err);
 *   int P_parse_data(const char *data, size_t len, const char *source_name, CT **ret,
 *                    char **ret_err);
 *   int P_generate(const CT *obj, bool pretty, char **ret_json, size_t *ret_len,
 *                  char **ret_err);
 *   void P_free(CT *obj);
 * (declare them in the header yourself; the macro only writes the definitions) */
#define OCIJSON_DEFINE_API(P, CT, TYPE)                                                     \
	int P##_parse_file(const char *path, CT **ret, char **ret_err)                      \
	{                                                                                   \
		void *obj = NULL;                                                           \
		int r = ocijson_parse_file(&(TYPE), path, &obj, ret_err);                   \
		if (r == 0)                                                                 \
			*ret = obj;                                                         \
		return r;                                                                   \
	}                                                                                   \
	int P##_parse_data(const char *data, size_t len, const char *source_name, CT **ret, \
			   char **ret_err)                                                  \
	{                                                                                   \
		void *obj = NULL;                                                           \
		int r = ocijson_parse_data(&(TYPE), data, len, source_name, &obj, ret_err); \
		if (r == 0)                                                                 \
			*ret = obj;                                                         \
		return r;                                                                   \
	}                                                                                   \
	int P##_generate(const CT *obj, bool pretty, char **ret_json, size_t *ret_len,      \
			 char **ret_err)                                                    \
	{                                                                                   \
		return ocijson_generate(&(TYPE), obj, pretty, ret_json, ret_len, ret_err);  \
	}                                                                                   \
	void P##_free(CT *obj)                                                              \
	{                                                                                   \
		ocijson_free(&(TYPE), obj);                                                 \
	}

#define OCIJSON_N_(A) (sizeof(A) / sizeof((A)[0]))
/* const struct ocijson_type NAME = OCIJSON_TYPE("name", struct x, rows, validate); */
/* clang-format off */
#define OCIJSON_TYPE(N, T, ROWS, V) \
	{ .name = (N), .size = sizeof(T), .fields = (ROWS), .n_fields = OCIJSON_N_(ROWS), \
	  .validate = (V) }
/* clang-format on */

#endif
