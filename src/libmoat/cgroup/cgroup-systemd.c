/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the systemd cgroup driver (cgroup-systemd.h). */
#include "cgroup-systemd.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup-internal.h"
#include "utils.h"

bool moat_systemd_booted(void)
{
	/* sd_booted()'s test, without needing libsystemd for it */
	return access("/run/systemd/system/", F_OK) == 0;
}

#ifndef HAVE_SYSTEMD

bool moat_systemd_supported(void)
{
	return false;
}

static int unsupported(moat_error *err)
{
	return moat_error_msg(err, ENOTSUP,
			      "--systemd-cgroup: systemd is PID 1 here, and this moat was built "
			      "without libsystemd to ask it for the container's scope (rebuild "
			      "with Debian's libsystemd-dev)");
}

int moat_systemd_scope_start(const char *path, pid_t pid, const struct oci_resources *res,
			     bool user, moat_error *err)
{
	(void)path, (void)pid, (void)res, (void)user;
	return unsupported(err);
}

int moat_systemd_scope_stop(const char *path, bool user, moat_error *err)
{
	(void)path, (void)user;
	return unsupported(err);
}

int moat_systemd_user_cgroup(char **ret, moat_error *err)
{
	(void)ret;
	return unsupported(err);
}

#else

#include "sd-bus-lib.h"

/* How long systemd gets to start or stop a scope: its jobs for a scope are immediate. */
#define SD_JOB_TIMEOUT_USEC (30ULL * 1000 * 1000)
/* CPUs and memory nodes a bitmask holds: the kernel's NR_CPUS default on x86_64. */
#define SD_MAX_CPUS 8192
/* systemd takes CPUQuotaPerSecUSec in whole 10 ms, as runc rounds it (up). */
#define SD_QUOTA_STEP_USEC 10000

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"

bool moat_systemd_supported(void)
{
	return true;
}

/* "/a.slice/a-b.slice/p-n.scope" -> slice "a-b.slice", unit "p-n.scope": the scope's
 * parent directory is its slice (the root's is -.slice). */
static int unit_of(const char *path, char **ret_slice, char **ret_unit, moat_error *err)
{
	const char *unit = strrchr(path, '/'), *slice;
	size_t n;

	if (unit == NULL || strlen(unit) < 8 || strcmp(unit + strlen(unit) - 6, ".scope") != 0)
		return moat_error_msg(err, EINVAL,
				      "--systemd-cgroup: cgroup '%s' is not a systemd scope", path);
	for (slice = unit; slice > path && slice[-1] != '/'; slice--)
		;
	n = (size_t)(unit - slice);
	if (n > 0 && (n < 7 || strncmp(unit - 6, ".slice", 6) != 0))
		return moat_error_msg(err, EINVAL,
				      "--systemd-cgroup: the parent of scope '%s' is not a slice",
				      path);
	*ret_slice = n ? xstrndup(slice, n) : xstrdup("-.slice");
	*ret_unit = xstrdup(unit + 1);
	return 0;
}

/* ---- properties ---------------------------------------------------------------------------- */

/* "0-3,7" -> a bitmask, byte i bit j for CPU 8i+j; -1 on a malformed list. */
static int cpu_mask(const char *list, uint8_t *mask, size_t *ret_len)
{
	size_t len = 0;
	const char *p = list;

	memset(mask, 0, SD_MAX_CPUS / 8);
	while (*p != '\0') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return -1;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p)
				return -1;
		}
		if (a > b || b >= SD_MAX_CPUS)
			return -1;
		for (unsigned long c = a; c <= b; c++)
			mask[c / 8] |= (uint8_t)(1u << (c % 8));
		len = b / 8 + 1 > len ? b / 8 + 1 : len;
		p = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			return -1;
	}
	*ret_len = len;
	return 0;
}

static int add_u64(sd_bus_message *m, const char *name, uint64_t v)
{
	return sym_sd_bus_message_append(m, "(sv)", name, "t", v);
}

static int add_mask(sd_bus_message *m, const char *name, const char *list)
{
	uint8_t mask[SD_MAX_CPUS / 8];
	size_t len;
	int r;

	if (cpu_mask(list, mask, &len) < 0)
		return -EINVAL;
	if ((r = sym_sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
	    (r = sym_sd_bus_message_append(m, "s", name)) < 0 ||
	    (r = sym_sd_bus_message_open_container(m, 'v', "ay")) < 0 ||
	    (r = sym_sd_bus_message_append_array(m, 'y', mask, len)) < 0 ||
	    (r = sym_sd_bus_message_close_container(m)) < 0)
		return r;
	return sym_sd_bus_message_close_container(m);
}

/* OCI's -1 (no limit) is systemd's infinity. */
static uint64_t limit_of(int64_t v)
{
	return v < 0 ? UINT64_MAX : (uint64_t)v;
}

static int memory_properties(sd_bus_message *m, const struct oci_memory *mem)
{
	int r = 0;

	if (mem->limit_present && mem->limit != 0)
		r = add_u64(m, "MemoryMax", limit_of(mem->limit));
	if (r >= 0 && mem->reservation_present && mem->reservation > 0)
		r = add_u64(m, "MemoryLow", (uint64_t)mem->reservation);
	/* OCI's swap is memory and swap together; systemd's, swap alone */
	if (r >= 0 && mem->swap_present && mem->swap < 0)
		r = add_u64(m, "MemorySwapMax", UINT64_MAX);
	else if (r >= 0 && mem->swap_present && mem->limit_present && mem->swap >= mem->limit &&
		 mem->limit > 0)
		r = add_u64(m, "MemorySwapMax", (uint64_t)(mem->swap - mem->limit));
	return r;
}

static int cpu_properties(sd_bus_message *m, const struct oci_cpu *cpu)
{
	int r = 0;

	if (cpu->shares_present && cpu->shares > 0)
		r = add_u64(m, "CPUWeight", cg_v2_cpu_weight(cpu->shares));
	if (r >= 0 && cpu->quota_present && cpu->quota > 0) {
		uint64_t period = cpu->period_present && cpu->period > 0 ? cpu->period : 100000;
		uint64_t per_sec = (uint64_t)cpu->quota * 1000000 / period;

		per_sec = (per_sec + SD_QUOTA_STEP_USEC - 1) / SD_QUOTA_STEP_USEC *
			  SD_QUOTA_STEP_USEC;
		r = add_u64(m, "CPUQuotaPerSecUSec", per_sec);
		if (r >= 0)
			r = add_u64(m, "CPUQuotaPeriodUSec", period);
	}
	if (r >= 0 && cpu->cpus != NULL && cpu->cpus[0] != '\0')
		r = add_mask(m, "AllowedCPUs", cpu->cpus);
	if (r >= 0 && cpu->mems != NULL && cpu->mems[0] != '\0')
		r = add_mask(m, "AllowedMemoryNodes", cpu->mems);
	return r;
}

/* The resources systemd has properties for; the rest (and these again) go to the files. */
static int resource_properties(sd_bus_message *m, const struct oci_resources *res)
{
	int r = 0;

	if (res == NULL)
		return 0;
	if (res->memory != NULL)
		r = memory_properties(m, res->memory);
	if (r >= 0 && res->cpu != NULL)
		r = cpu_properties(m, res->cpu);
	if (r >= 0 && res->pids != NULL && res->pids->limit != 0)
		r = add_u64(m, "TasksMax", limit_of(res->pids->limit));
	if (r >= 0 && res->block_io != NULL && res->block_io->weight_present &&
	    res->block_io->weight >= 10 && res->block_io->weight <= 1000)
		r = add_u64(m, "IOWeight", cg_v2_io_weight(res->block_io->weight));
	return r;
}

/* ---- talking to systemd ---------------------------------------------------------------------- */

struct job_wait {
	const char *path; /* the job's object path */
	char *result;     /* JobRemoved's result, once it came */
};

static int on_job_removed(sd_bus_message *m, void *data, sd_bus_error *ret_error)
{
	struct job_wait *w = data;
	const char *path = NULL, *unit = NULL, *result = NULL;
	uint32_t id;

	(void)ret_error;
	if (sym_sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0 || w->path == NULL ||
	    strcmp(path, w->path) != 0)
		return 0;
	w->result = xstrdup(result);
	return 0;
}

static int open_bus(bool user, sd_bus **ret, moat_error *err)
{
	int r;

	if (cgroup_sd_bus_load(err) < 0)
		return moat_error_prefix(err, "--systemd-cgroup");
	r = user ? sym_sd_bus_open_user(ret) : sym_sd_bus_open_system(ret);
	if (r < 0)
		return moat_error_set(err, -r,
				      "--systemd-cgroup: systemd is PID 1, but its %s cannot be "
				      "reached",
				      user ? "user's session bus (Debian's dbus-user-session)"
					   : "system bus");
	return 0;
}

/* Call METHOD of the manager (built by fill) and wait until the job it returns is removed;
 * its result is "done" when it worked. */
static int run_job(sd_bus *bus, const char *method, const char *unit,
		   int (*fill)(sd_bus_message *, const void *), const void *data, moat_error *err)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_slot *slot = NULL;
	struct job_wait w = { 0 };
	const char *job;
	int r;

	/* JobRemoved reaches subscribers: subscribe, and match it before the job exists */
	r = sym_sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &e, NULL, NULL);
	if (r >= 0)
		r = sym_sd_bus_match_signal(bus, &slot, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved",
					    on_job_removed, &w);
	if (r >= 0)
		r = sym_sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
						       method);
	if (r >= 0)
		r = fill(m, data);
	if (r >= 0)
		r = sym_sd_bus_call(bus, m, SD_JOB_TIMEOUT_USEC, &e, &reply);
	if (r >= 0)
		r = sym_sd_bus_message_read(reply, "o", &job);
	if (r >= 0) {
		w.path = job;
		while (w.result == NULL && (r = sym_sd_bus_process(bus, NULL)) >= 0)
			if (r == 0 && (r = sym_sd_bus_wait(bus, SD_JOB_TIMEOUT_USEC)) <= 0) {
				r = r == 0 ? -ETIMEDOUT : r;
				break;
			}
	}
	if (r < 0)
		moat_error_msg(err, -r, "--systemd-cgroup: %s %s: %s", method, unit,
			       e.message ? e.message : strerror(-r));
	else if (strcmp(w.result, "done") != 0)
		r = moat_error_msg(err, EIO, "--systemd-cgroup: %s %s: the job's result is '%s'",
				   method, unit, w.result);
	free(w.result);
	sym_sd_bus_error_free(&e);
	sym_sd_bus_message_unref(m);
	sym_sd_bus_message_unref(reply);
	sym_sd_bus_slot_unref(slot);
	return r < 0 ? r : 0;
}

struct start {
	const char *unit, *slice;
	pid_t pid;
	const struct oci_resources *res;
};

static int fill_start(sd_bus_message *m, const void *data)
{
	const struct start *s = data;
	int r;

	if ((r = sym_sd_bus_message_append(m, "ss", s->unit, "fail")) < 0 ||
	    (r = sym_sd_bus_message_open_container(m, 'a', "(sv)")) < 0 ||
	    (r = sym_sd_bus_message_append(m, "(sv)", "Description", "s", "moat container")) < 0 ||
	    (r = sym_sd_bus_message_append(m, "(sv)", "Slice", "s", s->slice)) < 0 ||
	    (r = sym_sd_bus_message_append(m, "(sv)", "Delegate", "b", 1)) < 0 ||
	    (r = sym_sd_bus_message_append(m, "(sv)", "DefaultDependencies", "b", 0)) < 0 ||
	    (r = sym_sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t)s->pid)) < 0 ||
	    (r = resource_properties(m, s->res)) < 0 ||
	    (r = sym_sd_bus_message_close_container(m)) < 0)
		return r;
	return sym_sd_bus_message_append(m, "a(sa(sv))", 0);
}

static int fill_stop(sd_bus_message *m, const void *data)
{
	return sym_sd_bus_message_append(m, "ss", (const char *)data, "replace");
}

int moat_systemd_scope_start(const char *path, pid_t pid, const struct oci_resources *res,
			     bool user, moat_error *err)
{
	_cleanup_free_ char *slice = NULL, *unit = NULL;
	sd_bus *bus = NULL;
	struct start s;
	int r;

	if (unit_of(path, &slice, &unit, err) < 0 || open_bus(user, &bus, err) < 0)
		return moat_error_ret(err);
	s = (struct start){ unit, slice, pid, res };
	r = run_job(bus, "StartTransientUnit", unit, fill_start, &s, err);
	sym_sd_bus_flush_close_unref(bus);
	return r;
}

int moat_systemd_user_cgroup(char **ret, moat_error *err)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	char *cg = NULL;
	int r;

	if (open_bus(true, &bus, err) < 0)
		return moat_error_ret(err);
	r = sym_sd_bus_get_property_string(bus, SD_DEST, SD_PATH, SD_MANAGER, "ControlGroup", &e,
					   &cg);
	if (r < 0)
		moat_error_msg(err, -r, "--systemd-cgroup: the user's manager's cgroup: %s",
			       e.message ? e.message : strerror(-r));
	else if (cg[0] != '/' || strcmp(cg, "/") == 0)
		r = moat_error_msg(err, EINVAL,
				   "--systemd-cgroup: the user's manager is in cgroup '%s'", cg);
	sym_sd_bus_error_free(&e);
	sym_sd_bus_flush_close_unref(bus);
	if (r < 0) {
		free(cg);
		return r;
	}
	*ret = cg;
	return 0;
}

int moat_systemd_scope_stop(const char *path, bool user, moat_error *err)
{
	_cleanup_free_ char *slice = NULL, *unit = NULL;
	sd_bus *bus = NULL;
	int r;

	if (unit_of(path, &slice, &unit, err) < 0 || open_bus(user, &bus, err) < 0)
		return moat_error_ret(err);
	r = run_job(bus, "StopUnit", unit, fill_stop, unit, err);
	/* a scope that ended with its last process is unloaded: nothing to stop */
	if (r < 0 && err->msg != NULL && strstr(err->msg, "not loaded") != NULL) {
		moat_error_drop(err);
		r = 0;
	}
	sym_sd_bus_flush_close_unref(bus);
	return r;
}

#endif
