/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci-config: field tables and value checks for the OCI runtime-spec config.json.
 * One table per JSON object, rows in the order the spec documents them (the generator
 * emits that order). Cross-field rules live in the small validate functions below. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "oci-config.h"

/* ---- allowed values (runtime-spec 1.2 config.md, config-linux.md) ------------------ */

static const char *const namespace_types[] = {
	"pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time", NULL,
};
static const char *const device_types[] = { "c", "b", "u", "p", NULL };
static const char *const device_cgroup_types[] = { "a", "b", "c", NULL };
/* the spec names the first four; runc and crun also take the recursive spellings */
/* clang-format off */
static const char *const propagations[] = {
	"private", "shared", "slave", "unbindable",
	"rprivate", "rshared", "rslave", "runbindable", NULL,
};
static const char *const rlimit_types[] = {
	"RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE",
	"RLIMIT_LOCKS", "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_NOFILE",
	"RLIMIT_NPROC", "RLIMIT_RSS", "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING",
	"RLIMIT_STACK", NULL,
};
static const char *const sched_policies[] = {
	"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH", "SCHED_ISO", "SCHED_IDLE",
	"SCHED_DEADLINE", NULL,
};
static const char *const sched_flags[] = {
	"SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_RECLAIM", "SCHED_FLAG_DL_OVERRUN",
	"SCHED_FLAG_KEEP_POLICY", "SCHED_FLAG_KEEP_PARAMS", "SCHED_FLAG_UTIL_CLAMP_MIN",
	"SCHED_FLAG_UTIL_CLAMP_MAX", NULL,
};
static const char *const ioprio_classes[] = {
	"IOPRIO_CLASS_RT", "IOPRIO_CLASS_BE", "IOPRIO_CLASS_IDLE", NULL,
};
static const char *const time_offset_clocks[] = { "monotonic", "boottime", NULL };
static const char *const seccomp_actions[] = {
	"SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
	"SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG",
	"SCMP_ACT_NOTIFY", NULL,
};
static const char *const seccomp_operators[] = {
	"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE",
	"SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ", NULL,
};
static const char *const seccomp_archs[] = {
	"SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_ARM",
	"SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32",
	"SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
	"SCMP_ARCH_PPC64", "SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390", "SCMP_ARCH_S390X",
	"SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64", "SCMP_ARCH_LOONGARCH64",
	"SCMP_ARCH_M68K", "SCMP_ARCH_SH", "SCMP_ARCH_SHEB", NULL,
};
static const char *const seccomp_flags[] = {
	"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
	"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", NULL,
};
static const char *const personality_domains[] = { "LINUX", "LINUX32", NULL };
static const char *const mpol_modes[] = {
	"MPOL_DEFAULT", "MPOL_BIND", "MPOL_INTERLEAVE", "MPOL_WEIGHTED_INTERLEAVE",
	"MPOL_PREFERRED", "MPOL_PREFERRED_MANY", "MPOL_LOCAL", NULL,
};
static const char *const mpol_flags[] = {
	"MPOL_F_NUMA_BALANCING", "MPOL_F_RELATIVE_NODES", "MPOL_F_STATIC_NODES", NULL,
};
/* clang-format on */

/* ---- cross-field checks -------------------------------------------------------------- */

static int validate_process(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_process *p = obj;
	char sub[64];

	if (p->oom_score_adj_present && (p->oom_score_adj < -1000 || p->oom_score_adj > 1000))
		return ocijson_fail(w, "oomScoreAdj", ret_err, "%d outside -1000..1000",
				    (int)p->oom_score_adj);
	for (size_t i = 0; i < p->rlimits_len; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(p->rlimits[i]->type, p->rlimits[j]->type) != 0)
				continue;
			snprintf(sub, sizeof(sub), "rlimits[%zu].type", i);
			return ocijson_fail(w, sub, ret_err,
					    "duplicate rlimit %s (also rlimits[%zu])",
					    p->rlimits[i]->type, j);
		}
	}
	return 0;
}

static int validate_io_priority(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_io_priority *io = obj;

	if (io->priority_present && (io->priority < 0 || io->priority > 7))
		return ocijson_fail(w, "priority", ret_err, "%d outside 0..7", (int)io->priority);
	return 0;
}

static int validate_hook(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_hook *h = obj;

	if (h->timeout_present && h->timeout <= 0)
		return ocijson_fail(w, "timeout", ret_err, "must be greater than zero, got %d",
				    (int)h->timeout);
	return 0;
}

static int validate_device(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_device *d = obj;

	if (strcmp(d->type, "p") == 0)
		return 0;
	if (!d->major_present)
		return ocijson_fail(w, "major", ret_err, "required for device type %s", d->type);
	if (!d->minor_present)
		return ocijson_fail(w, "minor", ret_err, "required for device type %s", d->type);
	return 0;
}

static int validate_device_cgroup(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_device_cgroup *d = obj;

	if (d->access != NULL && d->access[strspn(d->access, "rwm")] != '\0')
		return ocijson_fail(w, "access", ret_err,
				    "invalid value \"%s\" (expected letters from \"rwm\")",
				    d->access);
	return 0;
}

static int validate_linux(const void *obj, const struct ocijson_where *w, char **ret_err)
{
	const struct oci_linux *l = obj;
	char sub[64];

	for (size_t i = 0; i < l->namespaces_len; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(l->namespaces[i]->type, l->namespaces[j]->type) != 0)
				continue;
			snprintf(sub, sizeof(sub), "namespaces[%zu].type", i);
			return ocijson_fail(w, sub, ret_err,
					    "duplicate namespace type %s (also namespaces[%zu])",
					    l->namespaces[i]->type, j);
		}
	}
	return 0;
}

/* ---- process ------------------------------------------------------------------------- */

#define T struct oci_console_size
static const struct ocijson_field console_size_fields[] = {
	OCIJSON_U32_REQ(T, "height", height),
	OCIJSON_U32_REQ(T, "width", width),
};
const struct ocijson_type oci_console_size_type =
	OCIJSON_TYPE("consoleSize", T, console_size_fields, NULL);
#undef T

#define T struct oci_user
static const struct ocijson_field user_fields[] = {
	OCIJSON_U32_REQ(T, "uid", uid),
	OCIJSON_U32_REQ(T, "gid", gid),
	OCIJSON_U32_OPT(T, "umask", umask),
	OCIJSON_NUM_ARRAY(T, "additionalGids", additional_gids, OCIJSON_UINT32, uint32_t, 0),
	OCIJSON_STR(T, "username", username, 0),
};
const struct ocijson_type oci_user_type = OCIJSON_TYPE("user", T, user_fields, NULL);
#undef T

#define T struct oci_capabilities
static const struct ocijson_field capabilities_fields[] = {
	OCIJSON_STR_ARRAY(T, "bounding", bounding, 0),
	OCIJSON_STR_ARRAY(T, "effective", effective, 0),
	OCIJSON_STR_ARRAY(T, "inheritable", inheritable, 0),
	OCIJSON_STR_ARRAY(T, "permitted", permitted, 0),
	OCIJSON_STR_ARRAY(T, "ambient", ambient, 0),
};
const struct ocijson_type oci_capabilities_type =
	OCIJSON_TYPE("capabilities", T, capabilities_fields, NULL);
#undef T

#define T struct oci_rlimit
static const struct ocijson_field rlimit_fields[] = {
	OCIJSON_ENUM(T, "type", type, rlimit_types, OCIJSON_REQUIRED),
	OCIJSON_U64_REQ(T, "hard", hard),
	OCIJSON_U64_REQ(T, "soft", soft),
};
const struct ocijson_type oci_rlimit_type = OCIJSON_TYPE("rlimit", T, rlimit_fields, NULL);
#undef T

#define T struct oci_scheduler
static const struct ocijson_field scheduler_fields[] = {
	OCIJSON_ENUM(T, "policy", policy, sched_policies, OCIJSON_REQUIRED),
	OCIJSON_I32_OPT(T, "nice", nice),
	OCIJSON_I32_OPT(T, "priority", priority),
	OCIJSON_ENUM_ARRAY(T, "flags", flags, sched_flags, 0),
	OCIJSON_U64_OPT(T, "runtime", runtime),
	OCIJSON_U64_OPT(T, "deadline", deadline),
	OCIJSON_U64_OPT(T, "period", period),
};
const struct ocijson_type oci_scheduler_type = OCIJSON_TYPE("scheduler", T, scheduler_fields, NULL);
#undef T

#define T struct oci_io_priority
static const struct ocijson_field io_priority_fields[] = {
	OCIJSON_ENUM(T, "class", class, ioprio_classes, OCIJSON_REQUIRED),
	OCIJSON_I32_OPT(T, "priority", priority),
};
const struct ocijson_type oci_io_priority_type =
	OCIJSON_TYPE("ioPriority", T, io_priority_fields, validate_io_priority);
#undef T

#define T struct oci_cpu_affinity
static const struct ocijson_field cpu_affinity_fields[] = {
	OCIJSON_STR(T, "initial", initial, 0),
	OCIJSON_STR(T, "final", final, 0),
};
const struct ocijson_type oci_cpu_affinity_type =
	OCIJSON_TYPE("execCPUAffinity", T, cpu_affinity_fields, NULL);
#undef T

#define T struct oci_process
static const struct ocijson_field process_fields[] = {
	OCIJSON_BOOL_OPT(T, "terminal", terminal),
	OCIJSON_OBJ(T, "consoleSize", console_size, struct oci_console_size, &oci_console_size_type,
		    0),
	OCIJSON_OBJ(T, "user", user, struct oci_user, &oci_user_type, OCIJSON_REQUIRED),
	OCIJSON_STR_ARRAY(T, "args", args, 0),
	OCIJSON_STR(T, "commandLine", command_line, 0),
	OCIJSON_STR_ARRAY(T, "env", env, 0),
	OCIJSON_STR(T, "cwd", cwd, OCIJSON_REQUIRED),
	OCIJSON_OBJ(T, "capabilities", capabilities, struct oci_capabilities,
		    &oci_capabilities_type, 0),
	OCIJSON_OBJ_ARRAY(T, "rlimits", rlimits, struct oci_rlimit, &oci_rlimit_type, 0),
	OCIJSON_BOOL_OPT(T, "noNewPrivileges", no_new_privileges),
	OCIJSON_STR(T, "apparmorProfile", apparmor_profile, 0),
	OCIJSON_I32_OPT(T, "oomScoreAdj", oom_score_adj),
	OCIJSON_OBJ(T, "scheduler", scheduler, struct oci_scheduler, &oci_scheduler_type, 0),
	OCIJSON_STR(T, "selinuxLabel", selinux_label, 0),
	OCIJSON_OBJ(T, "ioPriority", io_priority, struct oci_io_priority, &oci_io_priority_type, 0),
	OCIJSON_OBJ(T, "execCPUAffinity", exec_cpu_affinity, struct oci_cpu_affinity,
		    &oci_cpu_affinity_type, 0),
};
const struct ocijson_type oci_process_type =
	OCIJSON_TYPE("process", T, process_fields, validate_process);
#undef T

/* ---- root, mounts, hooks ---------------------------------------------------------------- */

#define T struct oci_root
static const struct ocijson_field root_fields[] = {
	OCIJSON_STR(T, "path", path, OCIJSON_REQUIRED),
	OCIJSON_BOOL_OPT(T, "readonly", readonly),
};
const struct ocijson_type oci_root_type = OCIJSON_TYPE("root", T, root_fields, NULL);
#undef T

#define T struct oci_id_mapping
static const struct ocijson_field id_mapping_fields[] = {
	OCIJSON_U32_REQ(T, "containerID", container_id),
	OCIJSON_U32_REQ(T, "hostID", host_id),
	OCIJSON_U32_REQ(T, "size", size),
};
const struct ocijson_type oci_id_mapping_type =
	OCIJSON_TYPE("idMapping", T, id_mapping_fields, NULL);
#undef T

#define T struct oci_mount
static const struct ocijson_field mount_fields[] = {
	OCIJSON_STR(T, "destination", destination, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "type", type, 0),
	OCIJSON_STR(T, "source", source, 0),
	OCIJSON_STR_ARRAY(T, "options", options, 0),
	OCIJSON_OBJ_ARRAY(T, "uidMappings", uid_mappings, struct oci_id_mapping,
			  &oci_id_mapping_type, 0),
	OCIJSON_OBJ_ARRAY(T, "gidMappings", gid_mappings, struct oci_id_mapping,
			  &oci_id_mapping_type, 0),
};
const struct ocijson_type oci_mount_type = OCIJSON_TYPE("mount", T, mount_fields, NULL);
#undef T

#define T struct oci_hook
static const struct ocijson_field hook_fields[] = {
	OCIJSON_STR(T, "path", path, OCIJSON_REQUIRED),
	OCIJSON_STR_ARRAY(T, "args", args, 0),
	OCIJSON_STR_ARRAY(T, "env", env, 0),
	OCIJSON_I32_OPT(T, "timeout", timeout),
};
const struct ocijson_type oci_hook_type = OCIJSON_TYPE("hook", T, hook_fields, validate_hook);
#undef T

#define T struct oci_hooks
#define HOOKS(K, M) OCIJSON_OBJ_ARRAY(T, K, M, struct oci_hook, &oci_hook_type, 0)
static const struct ocijson_field hooks_fields[] = {
	HOOKS("prestart", prestart),
	HOOKS("createRuntime", create_runtime),
	HOOKS("createContainer", create_container),
	HOOKS("startContainer", start_container),
	HOOKS("poststart", poststart),
	HOOKS("poststop", poststop),
};
#undef HOOKS
const struct ocijson_type oci_hooks_type = OCIJSON_TYPE("hooks", T, hooks_fields, NULL);
#undef T

/* ---- linux: namespaces, devices ----------------------------------------------------------- */

#define T struct oci_namespace
static const struct ocijson_field namespace_fields[] = {
	OCIJSON_ENUM(T, "type", type, namespace_types, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "path", path, 0),
};
const struct ocijson_type oci_namespace_type = OCIJSON_TYPE("namespace", T, namespace_fields, NULL);
#undef T

#define T struct oci_time_offset
static const struct ocijson_field time_offset_fields[] = {
	OCIJSON_KEY(T, name, time_offset_clocks),
	OCIJSON_I64_OPT(T, "secs", secs),
	OCIJSON_U32_OPT(T, "nanosecs", nanosecs),
};
const struct ocijson_type oci_time_offset_type =
	OCIJSON_TYPE("timeOffset", T, time_offset_fields, NULL);
#undef T

#define T struct oci_device
static const struct ocijson_field device_fields[] = {
	OCIJSON_ENUM(T, "type", type, device_types, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "path", path, OCIJSON_REQUIRED),
	OCIJSON_I64_OPT(T, "major", major),
	OCIJSON_I64_OPT(T, "minor", minor),
	OCIJSON_U32_OPT(T, "fileMode", file_mode),
	OCIJSON_U32_OPT(T, "uid", uid),
	OCIJSON_U32_OPT(T, "gid", gid),
};
const struct ocijson_type oci_device_type =
	OCIJSON_TYPE("device", T, device_fields, validate_device);
#undef T

#define T struct oci_net_device
static const struct ocijson_field net_device_fields[] = {
	OCIJSON_KEY(T, key, NULL),
	OCIJSON_STR(T, "name", name, 0),
};
const struct ocijson_type oci_net_device_type =
	OCIJSON_TYPE("netDevice", T, net_device_fields, NULL);
#undef T

/* ---- linux.resources ------------------------------------------------------------------- */

#define T struct oci_device_cgroup
static const struct ocijson_field device_cgroup_fields[] = {
	OCIJSON_BOOL_REQ(T, "allow", allow), OCIJSON_ENUM(T, "type", type, device_cgroup_types, 0),
	OCIJSON_I64_OPT(T, "major", major),  OCIJSON_I64_OPT(T, "minor", minor),
	OCIJSON_STR(T, "access", access, 0),
};
const struct ocijson_type oci_device_cgroup_type =
	OCIJSON_TYPE("deviceCgroup", T, device_cgroup_fields, validate_device_cgroup);
#undef T

#define T struct oci_memory
static const struct ocijson_field memory_fields[] = {
	OCIJSON_I64_OPT(T, "limit", limit),
	OCIJSON_I64_OPT(T, "reservation", reservation),
	OCIJSON_I64_OPT(T, "swap", swap),
	OCIJSON_I64_OPT(T, "kernel", kernel),
	OCIJSON_I64_OPT(T, "kernelTCP", kernel_tcp),
	OCIJSON_U64_OPT(T, "swappiness", swappiness),
	OCIJSON_BOOL_OPT(T, "disableOOMKiller", disable_oom_killer),
	OCIJSON_BOOL_OPT(T, "useHierarchy", use_hierarchy),
	OCIJSON_BOOL_OPT(T, "checkBeforeUpdate", check_before_update),
};
const struct ocijson_type oci_memory_type = OCIJSON_TYPE("memory", T, memory_fields, NULL);
#undef T

#define T struct oci_cpu
static const struct ocijson_field cpu_fields[] = {
	OCIJSON_U64_OPT(T, "shares", shares),
	OCIJSON_I64_OPT(T, "quota", quota),
	OCIJSON_U64_OPT(T, "burst", burst),
	OCIJSON_U64_OPT(T, "period", period),
	OCIJSON_I64_OPT(T, "realtimeRuntime", realtime_runtime),
	OCIJSON_U64_OPT(T, "realtimePeriod", realtime_period),
	OCIJSON_STR(T, "cpus", cpus, 0),
	OCIJSON_STR(T, "mems", mems, 0),
	OCIJSON_I64_OPT(T, "idle", idle),
};
const struct ocijson_type oci_cpu_type = OCIJSON_TYPE("cpu", T, cpu_fields, NULL);
#undef T

#define T struct oci_pids
static const struct ocijson_field pids_fields[] = {
	OCIJSON_I64_REQ(T, "limit", limit),
};
const struct ocijson_type oci_pids_type = OCIJSON_TYPE("pids", T, pids_fields, NULL);
#undef T

#define T struct oci_weight_device
static const struct ocijson_field weight_device_fields[] = {
	OCIJSON_I64_REQ(T, "major", major),
	OCIJSON_I64_REQ(T, "minor", minor),
	OCIJSON_U16_OPT(T, "weight", weight),
	OCIJSON_U16_OPT(T, "leafWeight", leaf_weight),
};
const struct ocijson_type oci_weight_device_type =
	OCIJSON_TYPE("weightDevice", T, weight_device_fields, NULL);
#undef T

#define T struct oci_throttle_device
static const struct ocijson_field throttle_device_fields[] = {
	OCIJSON_I64_REQ(T, "major", major),
	OCIJSON_I64_REQ(T, "minor", minor),
	OCIJSON_U64_REQ(T, "rate", rate),
};
const struct ocijson_type oci_throttle_device_type =
	OCIJSON_TYPE("throttleDevice", T, throttle_device_fields, NULL);
#undef T

#define T struct oci_block_io
#define THROTTLE(K, M) \
	OCIJSON_OBJ_ARRAY(T, K, M, struct oci_throttle_device, &oci_throttle_device_type, 0)
static const struct ocijson_field block_io_fields[] = {
	OCIJSON_U16_OPT(T, "weight", weight),
	OCIJSON_U16_OPT(T, "leafWeight", leaf_weight),
	OCIJSON_OBJ_ARRAY(T, "weightDevice", weight_device, struct oci_weight_device,
			  &oci_weight_device_type, 0),
	THROTTLE("throttleReadBpsDevice", throttle_read_bps_device),
	THROTTLE("throttleWriteBpsDevice", throttle_write_bps_device),
	THROTTLE("throttleReadIOPSDevice", throttle_read_iops_device),
	THROTTLE("throttleWriteIOPSDevice", throttle_write_iops_device),
};
#undef THROTTLE
const struct ocijson_type oci_block_io_type = OCIJSON_TYPE("blockIO", T, block_io_fields, NULL);
#undef T

#define T struct oci_hugepage_limit
static const struct ocijson_field hugepage_limit_fields[] = {
	OCIJSON_STR(T, "pageSize", page_size, OCIJSON_REQUIRED),
	OCIJSON_U64_REQ(T, "limit", limit),
};
const struct ocijson_type oci_hugepage_limit_type =
	OCIJSON_TYPE("hugepageLimit", T, hugepage_limit_fields, NULL);
#undef T

#define T struct oci_net_priority
static const struct ocijson_field net_priority_fields[] = {
	OCIJSON_STR(T, "name", name, OCIJSON_REQUIRED),
	OCIJSON_U32_REQ(T, "priority", priority),
};
const struct ocijson_type oci_net_priority_type =
	OCIJSON_TYPE("netPriority", T, net_priority_fields, NULL);
#undef T

#define T struct oci_network
static const struct ocijson_field network_fields[] = {
	OCIJSON_U32_OPT(T, "classID", class_id),
	OCIJSON_OBJ_ARRAY(T, "priorities", priorities, struct oci_net_priority,
			  &oci_net_priority_type, 0),
};
const struct ocijson_type oci_network_type = OCIJSON_TYPE("network", T, network_fields, NULL);
#undef T

#define T struct oci_rdma
static const struct ocijson_field rdma_fields[] = {
	OCIJSON_KEY(T, name, NULL),
	OCIJSON_U32_OPT(T, "hcaHandles", hca_handles),
	OCIJSON_U32_OPT(T, "hcaObjects", hca_objects),
};
const struct ocijson_type oci_rdma_type = OCIJSON_TYPE("rdma", T, rdma_fields, NULL);
#undef T

#define T struct oci_resources
static const struct ocijson_field resources_fields[] = {
	OCIJSON_OBJ_ARRAY(T, "devices", devices, struct oci_device_cgroup, &oci_device_cgroup_type,
			  0),
	OCIJSON_OBJ(T, "memory", memory, struct oci_memory, &oci_memory_type, 0),
	OCIJSON_OBJ(T, "cpu", cpu, struct oci_cpu, &oci_cpu_type, 0),
	OCIJSON_OBJ(T, "pids", pids, struct oci_pids, &oci_pids_type, 0),
	OCIJSON_OBJ(T, "blockIO", block_io, struct oci_block_io, &oci_block_io_type, 0),
	OCIJSON_OBJ_ARRAY(T, "hugepageLimits", hugepage_limits, struct oci_hugepage_limit,
			  &oci_hugepage_limit_type, 0),
	OCIJSON_OBJ(T, "network", network, struct oci_network, &oci_network_type, 0),
	OCIJSON_OBJ_MAP(T, "rdma", rdma, struct oci_rdma, &oci_rdma_type, 0),
	OCIJSON_STR_MAP(T, "unified", unified, 0),
};
const struct ocijson_type oci_resources_type = OCIJSON_TYPE("resources", T, resources_fields, NULL);
#undef T

/* ---- linux: intelRdt, seccomp, personality, memoryPolicy ------------------------------- */

#define T struct oci_intel_rdt
static const struct ocijson_field intel_rdt_fields[] = {
	OCIJSON_STR(T, "closID", clos_id, 0),
	OCIJSON_STR(T, "l3CacheSchema", l3_cache_schema, 0),
	OCIJSON_STR(T, "memBwSchema", mem_bw_schema, 0),
	OCIJSON_STR_ARRAY(T, "schemata", schemata, 0),
	OCIJSON_BOOL_OPT(T, "enableMonitoring", enable_monitoring),
	OCIJSON_BOOL_OPT(T, "enableCMT", enable_cmt),
	OCIJSON_BOOL_OPT(T, "enableMBM", enable_mbm),
};
const struct ocijson_type oci_intel_rdt_type = OCIJSON_TYPE("intelRdt", T, intel_rdt_fields, NULL);
#undef T

#define T struct oci_syscall_arg
static const struct ocijson_field syscall_arg_fields[] = {
	OCIJSON_U32_REQ(T, "index", index),
	OCIJSON_U64_REQ(T, "value", value),
	OCIJSON_U64_OPT(T, "valueTwo", value_two),
	OCIJSON_ENUM(T, "op", op, seccomp_operators, OCIJSON_REQUIRED),
};
const struct ocijson_type oci_syscall_arg_type =
	OCIJSON_TYPE("syscallArg", T, syscall_arg_fields, NULL);
#undef T

#define T struct oci_syscall
static const struct ocijson_field syscall_fields[] = {
	OCIJSON_STR_ARRAY(T, "names", names, OCIJSON_REQUIRED),
	OCIJSON_ENUM(T, "action", action, seccomp_actions, OCIJSON_REQUIRED),
	OCIJSON_U32_OPT(T, "errnoRet", errno_ret),
	OCIJSON_OBJ_ARRAY(T, "args", args, struct oci_syscall_arg, &oci_syscall_arg_type, 0),
};
const struct ocijson_type oci_syscall_type = OCIJSON_TYPE("syscall", T, syscall_fields, NULL);
#undef T

#define T struct oci_seccomp
static const struct ocijson_field seccomp_fields[] = {
	OCIJSON_ENUM(T, "defaultAction", default_action, seccomp_actions, OCIJSON_REQUIRED),
	OCIJSON_U32_OPT(T, "defaultErrnoRet", default_errno_ret),
	OCIJSON_ENUM_ARRAY(T, "architectures", architectures, seccomp_archs, 0),
	OCIJSON_ENUM_ARRAY(T, "flags", flags, seccomp_flags, 0),
	OCIJSON_STR(T, "listenerPath", listener_path, 0),
	OCIJSON_STR(T, "listenerMetadata", listener_metadata, 0),
	OCIJSON_OBJ_ARRAY(T, "syscalls", syscalls, struct oci_syscall, &oci_syscall_type, 0),
};
const struct ocijson_type oci_seccomp_type = OCIJSON_TYPE("seccomp", T, seccomp_fields, NULL);
#undef T

#define T struct oci_personality
static const struct ocijson_field personality_fields[] = {
	OCIJSON_ENUM(T, "domain", domain, personality_domains, OCIJSON_REQUIRED),
	OCIJSON_STR_ARRAY(T, "flags", flags, 0),
};
const struct ocijson_type oci_personality_type =
	OCIJSON_TYPE("personality", T, personality_fields, NULL);
#undef T

#define T struct oci_memory_policy
static const struct ocijson_field memory_policy_fields[] = {
	OCIJSON_ENUM(T, "mode", mode, mpol_modes, OCIJSON_REQUIRED),
	OCIJSON_STR(T, "nodes", nodes, 0),
	OCIJSON_ENUM_ARRAY(T, "flags", flags, mpol_flags, 0),
};
const struct ocijson_type oci_memory_policy_type =
	OCIJSON_TYPE("memoryPolicy", T, memory_policy_fields, NULL);
#undef T

/* ---- linux ------------------------------------------------------------------------------ */

#define T struct oci_linux
static const struct ocijson_field linux_fields[] = {
	OCIJSON_OBJ_ARRAY(T, "namespaces", namespaces, struct oci_namespace, &oci_namespace_type,
			  0),
	OCIJSON_OBJ_ARRAY(T, "uidMappings", uid_mappings, struct oci_id_mapping,
			  &oci_id_mapping_type, 0),
	OCIJSON_OBJ_ARRAY(T, "gidMappings", gid_mappings, struct oci_id_mapping,
			  &oci_id_mapping_type, 0),
	OCIJSON_OBJ_MAP(T, "timeOffsets", time_offsets, struct oci_time_offset,
			&oci_time_offset_type, 0),
	OCIJSON_OBJ_ARRAY(T, "devices", devices, struct oci_device, &oci_device_type, 0),
	OCIJSON_OBJ_MAP(T, "netDevices", net_devices, struct oci_net_device, &oci_net_device_type,
			0),
	OCIJSON_STR(T, "cgroupsPath", cgroups_path, 0),
	OCIJSON_OBJ(T, "resources", resources, struct oci_resources, &oci_resources_type, 0),
	OCIJSON_OBJ(T, "intelRdt", intel_rdt, struct oci_intel_rdt, &oci_intel_rdt_type, 0),
	OCIJSON_STR_MAP(T, "sysctl", sysctl, 0),
	OCIJSON_OBJ(T, "seccomp", seccomp, struct oci_seccomp, &oci_seccomp_type, 0),
	OCIJSON_ENUM(T, "rootfsPropagation", rootfs_propagation, propagations, 0),
	OCIJSON_STR_ARRAY(T, "maskedPaths", masked_paths, 0),
	OCIJSON_STR_ARRAY(T, "readonlyPaths", readonly_paths, 0),
	OCIJSON_STR(T, "mountLabel", mount_label, 0),
	OCIJSON_OBJ(T, "personality", personality, struct oci_personality, &oci_personality_type,
		    0),
	OCIJSON_OBJ(T, "memoryPolicy", memory_policy, struct oci_memory_policy,
		    &oci_memory_policy_type, 0),
};
const struct ocijson_type oci_linux_type = OCIJSON_TYPE("linux", T, linux_fields, validate_linux);
#undef T

/* ---- top level -------------------------------------------------------------------------- */

#define T struct oci_config
static const struct ocijson_field config_fields[] = {
	OCIJSON_STR(T, "ociVersion", oci_version, OCIJSON_REQUIRED),
	OCIJSON_OBJ(T, "root", root, struct oci_root, &oci_root_type, 0),
	OCIJSON_OBJ_ARRAY(T, "mounts", mounts, struct oci_mount, &oci_mount_type, 0),
	OCIJSON_OBJ(T, "process", process, struct oci_process, &oci_process_type, 0),
	OCIJSON_STR(T, "hostname", hostname, 0),
	OCIJSON_STR(T, "domainname", domainname, 0),
	OCIJSON_OBJ(T, "hooks", hooks, struct oci_hooks, &oci_hooks_type, 0),
	OCIJSON_STR_MAP(T, "annotations", annotations, 0),
	OCIJSON_OBJ(T, "linux", linux, struct oci_linux, &oci_linux_type, 0),
};
const struct ocijson_type oci_config_type = OCIJSON_TYPE("config", T, config_fields, NULL);
#undef T

/* ---- entry points ------------------------------------------------------------------------ */

OCIJSON_DEFINE_API(oci_config, struct oci_config, oci_config_type)
OCIJSON_DEFINE_API(oci_process, struct oci_process, oci_process_type)
OCIJSON_DEFINE_API(oci_resources, struct oci_resources, oci_resources_type)
