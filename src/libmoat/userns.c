/* moat: user namespace id maps. */
#include "userns.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "utils.h"

static int validate_maps(struct oci_id_mapping *const *maps, size_t n, const char *field,
			 moat_error *err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct oci_id_mapping *m = maps[i];

		if (m->size == 0)
			return moat_error_msg(err, EINVAL, "linux.%s[%zu].size: must be > 0", field, i);
		if ((uint64_t)m->container_id + m->size > UINT32_MAX ||
		    (uint64_t)m->host_id + m->size > UINT32_MAX)
			return moat_error_msg(err, EINVAL, "linux.%s[%zu]: range overflows 32 bits",
					      field, i);
	}
	return 0;
}

int moat_userns_validate(const struct oci_linux *lx, bool new_userns, moat_error *err)
{
	size_t nu = lx ? lx->uid_mappings_len : 0, ng = lx ? lx->gid_mappings_len : 0;

	if (!new_userns) {
		if (nu > 0 || ng > 0)
			return moat_error_msg(err, EINVAL,
					      "linux.uidMappings: set, but linux.namespaces creates no "
					      "user namespace");
		return 0;
	}
	if (nu == 0)
		return moat_error_msg(err, EINVAL,
				      "linux.uidMappings: required when a user namespace is created");
	if (ng == 0)
		return moat_error_msg(err, EINVAL,
				      "linux.gidMappings: required when a user namespace is created");
	if (validate_maps(lx->uid_mappings, nu, "uidMappings", err) < 0 ||
	    validate_maps(lx->gid_mappings, ng, "gidMappings", err) < 0)
		return moat_error_ret(err);
	return 0;
}

static int write_map(pid_t pid, const char *file, struct oci_id_mapping *const *maps, size_t n,
		     const char *field, moat_error *err)
{
	_cleanup_free_ char *buf = NULL, *path = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);

	if (out == NULL)
		return moat_error_set(err, errno, "%s", field);
	for (i = 0; i < n; i++)
		fprintf(out, "%u %u %u\n", maps[i]->container_id, maps[i]->host_id, maps[i]->size);
	fclose(out);
	path = xasprintf("/proc/%d/%s", (int)pid, file);
	if (write_file_at(AT_FDCWD, path, buf, len, err) < 0)
		return moat_error_prefix(err, "linux.%s", field);
	return 0;
}

int moat_userns_write_maps(pid_t pid, const struct oci_linux *lx, moat_error *err)
{
	/* An unprivileged parent may map only its own gid, and only once the
	 * namespace has given up setgroups (user_namespaces(7)). */
	if (geteuid() != 0) {
		_cleanup_free_ char *path = xasprintf("/proc/%d/setgroups", (int)pid);

		if (write_file_at(AT_FDCWD, path, "deny", 4, err) < 0)
			return moat_error_prefix(err, "linux.gidMappings");
	}
	if (write_map(pid, "uid_map", lx->uid_mappings, lx->uid_mappings_len, "uidMappings", err) <
		    0 ||
	    write_map(pid, "gid_map", lx->gid_mappings, lx->gid_mappings_len, "gidMappings", err) < 0)
		return moat_error_ret(err);
	return 0;
}

uint32_t moat_userns_to_host(struct oci_id_mapping *const *maps, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (id >= maps[i]->container_id && id - maps[i]->container_id < maps[i]->size)
			return maps[i]->host_id + (id - maps[i]->container_id);
	return UINT32_MAX;
}
