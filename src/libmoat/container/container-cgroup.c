/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what is done to a container through its cgroup: pause, resume, its processes, and
 * changing its resources while it runs. */
#include "container.h"

#include <string.h>

#include "cgroup.h"
#include "container-internal.h"
#include "oci-cleanup.h"
#include "pod.h"
#include "policy.h"
#include "utils.h"
#include "vm-guest-spec.h"
#include "vm-jail.h"
#include "vm-pod.h"
#include "vm-select.h"
#include "vm-socket.h"

/* The opened container's cgroup; a container without one (rootless, no resources) cannot be
 * reached this way, and what asked is named. */
static int open_cgroup(const struct moat_opened *c, const char *what, struct moat_cgroup **ret,
		       moat_error *err)
{
	if (c->st->cgroup_path == NULL)
		return moat_error_msg(
			err, ENOTSUP,
			"%s: container '%s' has no cgroup (it was created with "
			"--cgroup-manager=disabled, or rootless without linux.resources)",
			what, c->st->id);
	if (moat_cgroup_open(c->st->cgroup_path, ret, err) < 0)
		return moat_error_prefix(err, "%s: container '%s'", what, c->st->id);
	return 0;
}

/* A pod member's container in its pod's guest (pod.h); nothing for any other. */
static int freeze_in_pod(const char *root, const struct moat_opened *c, bool frozen,
			 moat_error *err)
{
	_cleanup_close_ int dirfd = -1;
	const char *member;

	if (c->st->vm_pod == NULL)
		return 0;
	if (moat_pod_vm_dir(root, c->st, c->dirfd, &dirfd, &member, err) < 0 ||
	    moat_vm_freeze(dirfd, member, frozen, err) < 0) {
		/* thawing what the guest does not run (paused before start, or gone) is done */
		if (frozen || err->code != ESRCH)
			return moat_error_ret(err);
		moat_error_drop(err);
	}
	return 0;
}

static int set_frozen(const char *root, const char *id, bool frozen, moat_error *err)
{
	const char *what = frozen ? "pause" : "resume";
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	if (frozen && c.status != MOAT_STATUS_RUNNING && c.status != MOAT_STATUS_CREATED)
		return moat_error_msg(err, EINVAL,
				      "pause: container '%s' is %s: only a running or "
				      "created container can be paused",
				      id, moat_status_name(c.status));
	if (!frozen && c.status != MOAT_STATUS_PAUSED)
		return moat_error_msg(err, EINVAL, "resume: container '%s' is %s, not paused", id,
				      moat_status_name(c.status));
	if (open_cgroup(&c, what, &cg, err) < 0)
		return moat_error_ret(err);
	/* a pod member's processes are in its pod's guest: frozen before its init on the host,
	 * thawed after it (a member not started has none there yet) */
	if (frozen && c.status == MOAT_STATUS_RUNNING && freeze_in_pod(root, &c, true, err) < 0)
		return moat_error_prefix(err, "%s: container '%s'", what, id);
	if (moat_cgroup_freeze(cg, frozen, err) < 0)
		return moat_error_prefix(err, "%s: container '%s'", what, id);
	if (!frozen && freeze_in_pod(root, &c, false, err) < 0)
		return moat_error_prefix(err, "%s: container '%s'", what, id);
	return 0;
}

int moat_container_pause(const char *root, const char *id, moat_error *err)
{
	return set_frozen(root, id, true, err);
}

int moat_container_resume(const char *root, const char *id, moat_error *err)
{
	return set_frozen(root, id, false, err);
}

int moat_container_pids(const char *root, const char *id, pid_t **ret_pids, size_t *ret_n,
			moat_error *err)
{
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	if (c.status == MOAT_STATUS_STOPPED) {
		*ret_pids = NULL;
		*ret_n = 0;
		return 0;
	}
	if (open_cgroup(&c, "ps", &cg, err) < 0)
		return moat_error_ret(err);
	if (moat_cgroup_pids(cg, ret_pids, ret_n, err) < 0)
		return moat_error_prefix(err, "ps: container '%s'", id);
	return 0;
}

/* Record the new values in the saved config, so that later readers (exec, events, a second
 * update) see the resources in force. */
static int save_resources(const struct moat_opened *c, struct oci_resources *res, moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL;
	_cleanup_(oci_config_freep) struct oci_config *cfg = NULL;
	size_t len;
	int r;

	if (moat_state_read_config(c->dirfd, &cfg, err) < 0)
		return moat_error_ret(err);
	if (cfg->linux == NULL)
		cfg->linux = xcalloc(1, sizeof(*cfg->linux));
	if (cfg->linux->resources == NULL)
		cfg->linux->resources = xcalloc(1, sizeof(*cfg->linux->resources));
	ocijson_merge(&oci_resources_type, cfg->linux->resources, res);
	r = oci_config_generate(cfg, true, &json, &len, &msg);
	if (r < 0)
		return moat_error_msg(err, -r, "saved config: %s", msg ? msg : "generate");
	return write_file_atomic_at(c->dirfd, MOAT_CONFIG_FILE, json, len, 0600, err);
}

/* Add what the update wrote, and what it could not apply, to the record in state.json. */
static int save_applied(const struct moat_opened *c, const struct moat_cgroup *cg, moat_error *err)
{
	const struct oci_string_map *applied = moat_cgroup_applied(cg);
	const struct oci_string_map *ignored = moat_cgroup_ignored(cg);

	for (size_t i = 0; applied != NULL && i < applied->len; i++)
		oci_string_map_set(&c->st->cgroup_applied, applied->keys[i], applied->values[i]);
	for (size_t i = 0; ignored != NULL && i < ignored->len; i++)
		oci_string_map_set(&c->st->cgroup_ignored, ignored->keys[i], ignored->values[i]);
	return moat_state_write(c->dirfd, c->st, err);
}

/* New resources meet the policy's rules for resources (deny-devices), with the container's
 * relaxations (its annotations in the saved config). */
static int hold_to_policy(const struct oci_config *saved, const char *policy,
			  struct oci_resources *res, moat_error *err)
{
	struct oci_linux lx = { .resources = res };
	struct oci_config view = { 0 };
	_cleanup_(moat_policy_freep) struct moat_policy *p = NULL;

	view.annotations = saved->annotations;
	view.linux = &lx;
	if (moat_policy_load(policy, &p, err) < 0 ||
	    moat_policy_apply_rules(p, &view, MOAT_POLICY_UPDATE_RULES, err) < 0)
		return moat_error_prefix(err, "update");
	return 0;
}

static bool is_microvm(const struct moat_opened *c)
{
	return c->st->isolation != NULL &&
	       strcmp(c->st->isolation, moat_isolation_name(MOAT_ISOLATION_MICROVM)) == 0;
}

int moat_container_guest_usage(const char *root, const char *id, struct moat_msg_usage *ret,
			       moat_error *err)
{
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;
	_cleanup_close_ int dirfd = -1;
	const char *member = NULL;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	if (!is_microvm(&c))
		return 0;
	if (moat_pod_vm_dir(root, c.st, c.dirfd, &dirfd, &member, err) < 0 ||
	    moat_vm_stats(dirfd, member != NULL ? member : "", ret, err) < 0)
		return moat_error_prefix(err, "container '%s'", id);
	return 1;
}

/* A microVM's QEMU is charged to the cgroup beside the guest's memory: a memory limit below
 * both is refused (vm-select.h). The guest's memory is what create recorded in the state, so
 * an update after the saved config or the policy changed still knows it; a state written
 * before moat recorded it gets what create would compute from the saved config. A pod
 * member's host cgroup holds its init alone: its memory limit is its cgroup's in the guest. */
static int hold_to_vm(const struct moat_opened *c, const struct oci_config *saved,
		      const struct oci_resources *res, moat_error *err)
{
	uint32_t guest = c->st->vm_memory_mib;

	if (!is_microvm(c) || c->st->vm_pod != NULL)
		return 0;
	if (!c->st->vm_memory_mib_present && moat_vm_memory_of(saved, &guest, err) < 0)
		return moat_error_prefix(err, "update: the saved config");
	if (moat_vm_check_memory_update(guest, res, err) < 0)
		return moat_error_prefix(err, "update");
	return 0;
}

static bool is_kvm(const struct moat_opened *c)
{
	const char *accel = oci_string_map_get(c->st->annotations, MOAT_VM_ACCEL_ANNOTATION);

	return accel != NULL && strcmp(accel, moat_vm_accel_name(MOAT_VM_ACCEL_KVM)) == 0;
}

/* The cgroup update. A new device rule list allows again the devices create allowed after
 * the rules: those the saved config lists, or for a microVM, whose host cgroup holds its VMM,
 * the one its jail listed (vm-jail.h), never the guest's. A microVM's pids limit has room
 * for the VMM's tasks on the host, as create gave it; res keeps the limit asked for, which
 * the saved config and the guest get. */
static int update_cgroup(const struct moat_opened *c, const char *policy, struct oci_resources *res,
			 moat_error *err)
{
	const struct oci_linux *lx;
	_cleanup_(oci_config_freep) struct oci_config *saved = NULL;
	_cleanup_(moat_cgroup_freep) struct moat_cgroup *cg = NULL;
	struct oci_device jail_dev, *jail_list[1] = { &jail_dev };
	const struct oci_device *jail;
	struct oci_device *const *listed;
	struct oci_resources host;
	struct oci_pids host_pids;
	size_t n;

	if (moat_state_read_config(c->dirfd, &saved, err) < 0)
		return moat_error_ret(err);
	lx = saved->linux;
	if (hold_to_policy(saved, policy, res, err) < 0 || hold_to_vm(c, saved, res, err) < 0 ||
	    open_cgroup(c, "update", &cg, err) < 0)
		return moat_error_ret(err);
	host = *res;
	listed = lx ? lx->devices : NULL;
	n = lx ? lx->devices_len : 0;
	if (is_microvm(c)) {
		if (res->pids != NULL) {
			host_pids = (struct oci_pids){ .limit = moat_vm_host_pids_limit(
							       res->pids->limit) };
			host.pids = &host_pids;
		}
		jail = moat_vm_jail_device(c->st->vm_pod != NULL, is_kvm(c));
		if (jail != NULL)
			jail_dev = *jail;
		listed = jail != NULL ? jail_list : NULL;
		n = jail != NULL ? 1 : 0;
	}
	if (moat_cgroup_update(cg, &host, listed, n, err) < 0)
		return moat_error_ret(err);
	return save_applied(c, cg, err);
}

/* A microVM's guest holds its workload to the pids limit and the CPU quota itself (its own
 * cgroup there, vm-guest-spec.h), and a pod member to its memory limit too; the host's
 * cgroup holds QEMU, or a member's init alone. */
static bool touches_guest(const struct moat_opened *c, const struct oci_resources *res)
{
	const struct oci_cpu *cpu = res->cpu;

	if (!is_microvm(c))
		return false;
	if (c->st->vm_pod != NULL && res->memory != NULL && res->memory->limit_present)
		return true;
	return res->pids != NULL || (cpu != NULL && (cpu->quota_present || cpu->period_present));
}

/* The guest's part, once the saved config holds the update: its limits as START (or a
 * member's CONTAINER) would give them now, sent to the VM that runs it. Only a running
 * container hears it: a created one gets its limits when it starts from what create built,
 * and a paused one cannot answer. */
static int update_guest(const char *root, const struct moat_opened *c, moat_error *err)
{
	_cleanup_(oci_config_freep) struct oci_config *saved = NULL;
	_cleanup_close_ int vm_dirfd = -1;
	const char *member = NULL;
	struct moat_proto_resources g;
	int r = moat_state_read_config(c->dirfd, &saved, err);

	if (r == 0)
		r = c->st->vm_pod != NULL ? moat_vm_pod_resources(saved, &g, err)
					  : moat_vm_guest_resources(saved, &g, err);
	if (r == 0)
		r = moat_pod_vm_dir(root, c->st, c->dirfd, &vm_dirfd, &member, err);
	if (r == 0)
		r = moat_vm_update(vm_dirfd, member != NULL ? member : "", &g, err);
	if (r < 0)
		return moat_error_prefix(err, "update: the guest of microVM container '%s'",
					 c->st->id);
	return 0;
}

int moat_container_update(const char *root, const char *id, const char *policy,
			  struct oci_resources *res, moat_error *err)
{
	_cleanup_opened_ struct moat_opened c = MOAT_OPENED_INIT;
	_cleanup_(oci_resources_freep) struct oci_resources *owned = res;
	bool guest;

	if (moat_opened_open(root, id, &c, err) < 0)
		return moat_error_ret(err);
	if (c.status == MOAT_STATUS_STOPPED)
		return moat_error_msg(err, EINVAL, "update: container '%s' is stopped", id);
	guest = touches_guest(&c, res);
	if (guest && c.status != MOAT_STATUS_RUNNING)
		return moat_error_msg(err, EBUSY,
				      "update: microVM container '%s' is %s: the limits its guest "
				      "holds (pids, CPU quota, a pod member's memory) change only "
				      "while it runs",
				      id, moat_status_name(c.status));
	if (update_cgroup(&c, policy, res, err) < 0)
		return moat_error_ret(err);
	/* merged into the saved config */
	if (save_resources(&c, TAKE_PTR(owned), err) < 0)
		return moat_error_ret(err);
	return guest ? update_guest(root, &c, err) : 0;
}
