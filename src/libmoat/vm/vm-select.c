/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: which isolation a container gets, and whether this host can give it (vm-select.h). */
#include "vm-select.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <unistd.h>

#include "policy.h"
#include "utils.h"

/* vCPUs: QEMU microvm's limit is far above what a container asks for. */
#define VM_MAX_CPUS 64

static const char *const isolation_names[] = { "container", "microvm" };
static const char *const accel_names[] = { "kvm", "tcg" };

const char *moat_isolation_name(enum moat_isolation i)
{
	return isolation_names[i];
}

const char *moat_vm_accel_name(enum moat_vm_accel a)
{
	return accel_names[a];
}

bool moat_vm_invoked_as_vm(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0;
	return base != NULL && strcmp(base, MOAT_VM_RUNTIME_NAME) == 0;
}

static const char *annotation(const struct oci_config *cfg, const char *key)
{
	return oci_string_map_get(cfg->annotations, key);
}

/* A whole number in 1..max from annotation key; *ret untouched when it is absent. */
static int annotation_number(const struct oci_config *cfg, const char *key, unsigned long max,
			     uint32_t *ret, moat_error *err)
{
	const char *v = annotation(cfg, key);
	unsigned long n;
	char *end;

	if (v == NULL)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || n == 0 || n > max)
		return moat_error_msg(err, EINVAL, "annotations.%s: '%s' is not a number in 1..%lu",
				      key, v, max);
	*ret = (uint32_t)n;
	return 0;
}

static int choose_isolation(const struct oci_config *cfg, bool as_vm,
			    const struct moat_vm_defaults *d, enum moat_isolation *ret,
			    moat_error *err)
{
	const char *v = annotation(cfg, MOAT_ISOLATION_ANNOTATION);

	*ret = d->microvm ? MOAT_ISOLATION_MICROVM : MOAT_ISOLATION_CONTAINER;
	if (v != NULL && strcmp(v, "microvm") == 0)
		*ret = MOAT_ISOLATION_MICROVM;
	else if (v != NULL && strcmp(v, "container") == 0)
		*ret = MOAT_ISOLATION_CONTAINER;
	else if (v != NULL)
		return moat_error_msg(err, EINVAL,
				      "annotations." MOAT_ISOLATION_ANNOTATION ": '%s' "
				      "is not container or microvm",
				      v);
	if (as_vm)
		*ret = MOAT_ISOLATION_MICROVM; /* the runtime's name outranks the config */
	return 0;
}

static int choose_accel(const struct oci_config *cfg, const struct moat_vm_defaults *d,
			enum moat_vm_accel *ret, moat_error *err)
{
	const char *v = annotation(cfg, MOAT_VM_ACCEL_ANNOTATION);

	*ret = d->accel;
	if (v == NULL)
		return 0;
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(accel_names); i++) {
		if (strcmp(v, accel_names[i]) == 0) {
			*ret = (enum moat_vm_accel)i;
			return 0;
		}
	}
	return moat_error_msg(err, EINVAL,
			      "annotations." MOAT_VM_ACCEL_ANNOTATION ": '%s' is not "
			      "kvm or tcg",
			      v);
}

/* Guest memory: moat.vm.memory_mib, else the container's memory limit less what the VMM
 * needs (the VMM is charged to the same cgroup), else the default. */
static int choose_memory(const struct oci_config *cfg, uint32_t *ret, moat_error *err)
{
	const struct oci_resources *r = cfg->linux ? cfg->linux->resources : NULL;
	bool limited = r && r->memory && r->memory->limit_present && r->memory->limit > 0;
	uint64_t limit_mib = limited ? (uint64_t)r->memory->limit >> 20 : 0;
	bool asked = annotation(cfg, MOAT_VM_MEMORY_ANNOTATION) != NULL;
	uint32_t mib = MOAT_VM_DEFAULT_MEMORY_MIB;
	char besides[64] = "";

	if (limited)
		mib = limit_mib <= MOAT_VM_OVERHEAD_MIB
			      ? 0
			      : (uint32_t)MIN(limit_mib - MOAT_VM_OVERHEAD_MIB, UINT32_MAX);
	if (annotation_number(cfg, MOAT_VM_MEMORY_ANNOTATION, 1UL << 20, &mib, err) < 0)
		return moat_error_ret(err);
	if (!asked)
		snprintf(besides, sizeof(besides), " besides the VMM's own %d MiB",
			 MOAT_VM_OVERHEAD_MIB);
	if (mib < MOAT_VM_MIN_MEMORY_MIB)
		return moat_error_msg(err, EINVAL,
				      "%s: the guest would get %u MiB; it needs at least "
				      "%d MiB%s",
				      asked ? "annotations." MOAT_VM_MEMORY_ANNOTATION
					    : "linux.resources.memory.limit",
				      mib, MOAT_VM_MIN_MEMORY_MIB, besides);
	if (limited && (uint64_t)mib + MOAT_VM_OVERHEAD_MIB > limit_mib)
		return moat_error_msg(err, EINVAL,
				      "annotations." MOAT_VM_MEMORY_ANNOTATION ": %u MiB and the "
				      "VMM's %d MiB do not fit in linux.resources.memory.limit "
				      "(%llu MiB)",
				      mib, MOAT_VM_OVERHEAD_MIB, (unsigned long long)limit_mib);
	*ret = mib;
	return 0;
}

int moat_vm_memory_of(const struct oci_config *cfg, uint32_t *ret_mib, moat_error *err)
{
	return choose_memory(cfg, ret_mib, err);
}

int moat_vm_check_memory_update(uint32_t guest_mib, const struct oci_resources *res,
				moat_error *err)
{
	const struct oci_memory *m = res ? res->memory : NULL;
	uint64_t need_mib = (uint64_t)guest_mib + MOAT_VM_OVERHEAD_MIB;
	char limit[64];

	/* -1 is no limit; a limit is in bytes */
	if (m == NULL || !m->limit_present || m->limit < 0 || (uint64_t)m->limit >= need_mib << 20)
		return 0;
	if (m->limit % (1 << 20) == 0)
		snprintf(limit, sizeof(limit), "%lld MiB", (long long)(m->limit >> 20));
	else
		snprintf(limit, sizeof(limit), "%lld bytes", (long long)m->limit);
	return moat_error_msg(
		err, EINVAL,
		"linux.resources.memory.limit %s is below what this microVM needs: its "
		"guest has %u MiB and QEMU takes %d MiB beside it (%llu MiB)",
		limit, guest_mib, MOAT_VM_OVERHEAD_MIB, (unsigned long long)need_mib);
}

/* vCPUs: moat.vm.cpus, else the CPU quota rounded up, else 1. */
static int choose_cpus(const struct oci_config *cfg, uint32_t *ret, moat_error *err)
{
	const struct oci_resources *r = cfg->linux ? cfg->linux->resources : NULL;
	const struct oci_cpu *c = r ? r->cpu : NULL;

	*ret = 1;
	if (c != NULL && c->quota_present && c->quota > 0 && c->period_present && c->period > 0) {
		uint64_t n = ((uint64_t)c->quota + c->period - 1) / c->period;

		*ret = n > VM_MAX_CPUS ? VM_MAX_CPUS : (uint32_t)n;
	}
	return annotation_number(cfg, MOAT_VM_CPUS_ANNOTATION, VM_MAX_CPUS, ret, err);
}

int moat_vm_choose(const struct oci_config *cfg, bool as_vm, const struct moat_vm_defaults *d,
		   struct moat_vm_choice *ret, moat_error *err)
{
	struct moat_vm_choice c = { 0 };

	if (choose_isolation(cfg, as_vm, d, &c.isolation, err) < 0)
		return moat_error_ret(err);
	if (c.isolation == MOAT_ISOLATION_MICROVM &&
	    (choose_accel(cfg, d, &c.accel, err) < 0 ||
	     choose_memory(cfg, &c.memory_mib, err) < 0 || choose_cpus(cfg, &c.cpus, err) < 0))
		return moat_error_ret(err);
	*ret = c;
	return 0;
}

/* The CPU flags line of /proc/cpuinfo has vmx (Intel VT-x) or svm (AMD-V). */
static bool cpu_virtualizes(void)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		found = strstr(line, " vmx") != NULL || strstr(line, " svm") != NULL;
		break;
	}
	fclose(f);
	return found;
}

int moat_vm_accel_check(enum moat_vm_accel accel, moat_error *err)
{
	int fd;

	if (accel == MOAT_VM_ACCEL_TCG)
		return 0;
	if (access("/sys/module/kvm_pvm", F_OK) == 0 || !cpu_virtualizes())
		return moat_error_msg(
			err, ENODEV,
			"annotations." MOAT_VM_ACCEL_ANNOTATION "=kvm: this host's CPU "
			"has no hardware virtualization (no vmx or svm flag%s); ask "
			"for " MOAT_VM_ACCEL_ANNOTATION "=tcg (emulation, much slower)",
			access("/sys/module/kvm_pvm", F_OK) == 0
				? ", and /dev/kvm is KVM-PVM, a software nested hypervisor"
				: "");
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno,
				      "annotations." MOAT_VM_ACCEL_ANNOTATION "=kvm: open /dev/kvm "
				      "(or ask for " MOAT_VM_ACCEL_ANNOTATION "=tcg)");
	close(fd);
	return 0;
}
