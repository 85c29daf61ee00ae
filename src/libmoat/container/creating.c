/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what a create has made before its state is saved (creating.h). */
#include "creating.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cgroup.h"
#include "cgroup-systemd.h"
#include "ocijson.h"
#include "pod.h"
#include "state.h"
#include "utils.h"

#define S struct moat_creating
static const struct ocijson_field creating_fields[] = {
	OCIJSON_STR(S, "cgroupPath", cgroup_path, 0),
	OCIJSON_STR(S, "cgroupManager", cgroup_manager, 0),
	OCIJSON_U32_REQ(S, "owner", owner),
	OCIJSON_STR(S, "vmPod", vm_pod, 0),
};
#undef S
static const struct ocijson_type creating_type =
	OCIJSON_TYPE("moat-creating", struct moat_creating, creating_fields, NULL);

int moat_creating_write(int dirfd, const struct moat_creating *c, moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL;
	size_t len;
	int r = ocijson_generate(&creating_type, c, true, &json, &len, &msg);

	if (r < 0)
		return moat_error_set(err, -r, MOAT_CREATING_FILE ": %s", msg ? msg : "generate");
	return write_file_atomic_at(dirfd, MOAT_CREATING_FILE, json, len, 0600, err);
}

static int remove_cgroup(const struct moat_creating *c, moat_error *err)
{
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;

	if (c->cgroup_path == NULL)
		return 0;
	if (c->cgroup_manager != NULL && strcmp(c->cgroup_manager, MOAT_CGROUP_MANAGER_SYSTEMD) == 0 &&
	    moat_systemd_scope_stop(c->cgroup_path, c->owner != 0, err) < 0)
		return moat_error_ret(err);
	if (moat_cgroup_open(c->cgroup_path, &cg, err) < 0 || moat_cgroup_destroy(cg, err) < 0)
		return moat_error_prefix(err, "cgroup");
	return 0;
}

static int leave_pod(const char *root, const char *id, const struct moat_creating *c,
		     moat_error *err)
{
	struct moat_state member = { .id = (char *)id, .vm_pod = c->vm_pod };

	return moat_pod_leave(root, &member, err);
}

int moat_creating_undo(const char *root, const char *id, int dirfd, moat_error *err)
{
	_cleanup_free_ char *data = NULL, *msg = NULL;
	void *c = NULL;
	size_t len;
	int r;

	if (read_file_at(dirfd, MOAT_CREATING_FILE, OCIJSON_MAX_FILE_SIZE, &data, &len, err) < 0) {
		if (err->code != ENOENT)
			return moat_error_prefix(err, "delete '%s'", id);
		/* killed before it made anything outside its directory */
		moat_error_drop(err);
	} else {
		if (ocijson_parse_data(&creating_type, data, len, MOAT_CREATING_FILE, &c, &msg) < 0)
			return moat_error_msg(err, EINVAL, "delete '%s': %s", id,
					      msg ? msg : MOAT_CREATING_FILE ": invalid");
		r = remove_cgroup(c, err);
		if (r == 0)
			r = leave_pod(root, id, c, err);
		ocijson_free(&creating_type, c);
		if (r < 0)
			return moat_error_prefix(err, "delete '%s'", id);
	}
	return moat_state_dir_remove(root, id, err);
}
