/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a cgroup's path: cgroupsPath checked and normalized, the systemd "slice:prefix:name"
 * form expanded, and the directory of each level of it opened in a hierarchy. */
#include "cgroup-internal.h"

#include <fcntl.h>
#include <string.h>

#include "utils.h"

#define DEFAULT_SLICE "system.slice" /* systemd form with an empty slice */

/* ---- paths ------------------------------------------------------------------------------ */

static int check_component(const char *c, size_t len, const char *whole, moat_error *err)
{
	size_t i;

	if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
		return moat_error_msg(err, EINVAL, "'%.*s' is not allowed in '%s'", (int)len, c,
				      whole);
	if (len > NAME_MAX)
		return moat_error_msg(err, EINVAL, "a component of '%s' is longer than %d bytes",
				      whole, NAME_MAX);
	for (i = 0; i < len; i++)
		if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
			return moat_error_msg(err, EINVAL, "control character in '%s'", whole);
	return 0;
}

/* "/a//b/" -> "/a/b"; refuses ".", "..", control characters and the root itself. */
int cg_normalize_path(const char *in, char **ret, moat_error *err)
{
	_cleanup_free_ char *out = xmalloc(strlen(in) + 2);
	const char *p = in;
	size_t n = 0;

	if (*p != '/')
		return moat_error_msg(err, EINVAL, "'%s' is not an absolute path", in);
	while (*p) {
		size_t len;

		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 0)
			break;
		if (check_component(p, len, in, err) < 0)
			return moat_error_ret(err);
		out[n++] = '/';
		memcpy(out + n, p, len);
		n += len;
		p += len;
	}
	if (n == 0)
		return moat_error_msg(err, EINVAL,
				      "'%s' is the root cgroup, not one for a container", in);
	out[n] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

static int check_id(const char *id, moat_error *err)
{
	if (id == NULL || *id == '\0' || strchr(id, '/') != NULL ||
	    check_component(id, strlen(id), id, err) < 0)
		return moat_error_msg(err, EINVAL, "container id '%s' cannot name a cgroup",
				      id ? id : "(null)");
	return 0;
}

/* "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" -> "" (the root). */
static int expand_slice(const char *slice, char **ret, moat_error *err)
{
	size_t len = strlen(slice), base, i;
	_cleanup_free_ char *out = NULL;

	if (len < 6 || strcmp(slice + len - 6, ".slice") != 0)
		return moat_error_msg(err, EINVAL, "'%s' is not a slice (name.slice)", slice);
	base = len - 6;
	if (base == 1 && slice[0] == '-') {
		*ret = xstrdup("");
		return 0;
	}
	if (base == 0 || strchr(slice, '/') != NULL || slice[0] == '-' || slice[base - 1] == '-' ||
	    strstr(slice, "--") != NULL)
		return moat_error_msg(err, EINVAL, "'%s' is not a valid slice name", slice);
	out = xstrdup("");
	for (i = 0; i <= base; i++) {
		char *next;

		if (i < base && slice[i] != '-')
			continue;
		next = xasprintf("%s/%.*s.slice", out, (int)i, slice);
		free(out);
		out = next;
	}
	*ret = TAKE_PTR(out);
	return 0;
}

/* "slice:prefix:name" -> "<slice path>/<prefix>-<name>.scope" */
static int resolve_systemd(const char *spec, const char *id, char **ret, moat_error *err)
{
	_cleanup_free_ char *dflt = NULL, *copy = NULL, *slice_path = NULL, *unit = NULL;
	_cleanup_free_ char *raw = NULL;
	char *slice, *prefix, *name;

	if (spec == NULL || *spec == '\0') {
		if (check_id(id, err) < 0)
			return moat_error_ret(err);
		spec = dflt = xasprintf("%s:moat:%s", DEFAULT_SLICE, id);
	}
	copy = xstrdup(spec);
	slice = copy;
	prefix = strchr(slice, ':');
	name = prefix ? strchr(prefix + 1, ':') : NULL;
	if (name == NULL || strchr(name + 1, ':') != NULL || name[1] == '\0')
		return moat_error_msg(
			err, EINVAL,
			"expected \"slice:prefix:name\" with systemd cgroups, got '%s'", spec);
	*prefix++ = '\0';
	*name++ = '\0';
	if (strchr(prefix, '/') != NULL || strchr(name, '/') != NULL)
		return moat_error_msg(err, EINVAL, "'/' in '%s'", spec);
	if (expand_slice(*slice ? slice : DEFAULT_SLICE, &slice_path, err) < 0)
		return moat_error_ret(err);
	if (strlen(name) > 6 && strcmp(name + strlen(name) - 6, ".slice") == 0)
		unit = xstrdup(name);
	else if (*prefix)
		unit = xasprintf("%s-%s.scope", prefix, name);
	else
		unit = xasprintf("%s.scope", name);
	raw = xasprintf("%s/%s", slice_path, unit);
	return cg_normalize_path(raw, ret, err);
}

int moat_cgroup_resolve_path(const char *cgroups_path, const char *id, bool systemd,
			     char **ret_path, moat_error *err)
{
	_cleanup_free_ char *raw = NULL;
	int r;

	if (systemd)
		r = resolve_systemd(cgroups_path, id, ret_path, err);
	else if (cgroups_path != NULL && cgroups_path[0] == '/')
		r = cg_normalize_path(cgroups_path, ret_path, err);
	else if (cgroups_path != NULL && cgroups_path[0] != '\0')
		r = cg_normalize_path(raw = xasprintf("/%s/%s", CG_DEFAULT_PARENT, cgroups_path),
				      ret_path, err);
	else if ((r = check_id(id, err)) == 0)
		r = cg_normalize_path(raw = xasprintf("/%s/%s", CG_DEFAULT_PARENT, id), ret_path,
				      err);
	if (r < 0)
		return moat_error_prefix(err, "linux.cgroupsPath");
	return 0;
}

size_t cg_path_levels(const char *path)
{
	size_t n = 0;

	for (; *path; path++)
		if (*path == '/')
			n++;
	return n;
}

/* The first n components of a normalized path, relative: "a/b"; "." for none. */
static char *path_prefix(const char *path, size_t n)
{
	const char *p = path;

	if (n == 0)
		return xstrdup(".");
	while (n-- > 0)
		p = strchrnul(p + 1, '/');
	return xstrndup(path + 1, (size_t)(p - path - 1));
}

/* Component i (0-based) of a normalized path. */
char *cg_path_component(const char *path, size_t i)
{
	const char *p = path + 1;

	while (i-- > 0)
		p = strchr(p, '/') + 1;
	return xstrndup(p, strcspn(p, "/"));
}

/* The directory of level n (its first n components) of path in h; *ret_dir names it. */
int cg_open_level(const struct cg_hier *h, const char *path, size_t n, char **ret_dir,
		  moat_error *err)
{
	_cleanup_free_ char *rel = path_prefix(path, n);
	int fd = openat(AT_FDCWD, h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int lfd;

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", h->mnt);
	lfd = openat(fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	if (lfd < 0)
		return moat_error_set(err, errno, "open '%s/%s'", h->mnt, rel);
	if (ret_dir != NULL)
		*ret_dir = n == 0 ? xstrdup(h->mnt) : xasprintf("%s/%s", h->mnt, rel);
	return lfd;
}
