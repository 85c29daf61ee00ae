/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci-config: typed C structs for the OCI runtime-spec config.json (1.0 to 1.2, every
 * Linux field, plus the Linux fields later specs added: execCPUAffinity, memoryPolicy,
 * netDevices, intelRdt.schemata/enableMonitoring). Solaris, Windows, VM and z/OS sections
 * are ignored like any unknown member.
 *
 * Naming: one `struct oci_<name>` per JSON object; members are the JSON keys in snake_case
 * (`noNewPrivileges` -> no_new_privileges, `disableOOMKiller` -> disable_oom_killer).
 * Storage rules (see ocijson.h): char * NULL = absent; optional numbers and bools are
 * followed by `bool <member>_present`; required numbers have no flag; arrays are
 * `<elem> *m; size_t m_len;` with NULL = absent and non-NULL + len 0 = `[]`; objects are
 * pointers, NULL = absent. Enumerated values (namespace types, seccomp actions, ...) stay
 * strings; parsing has already checked them against the spec's lists.
 *
 * Members marked "required" below are REQUIRED by the spec/schema whenever their parent
 * object is present; parsing fails without them and generation fails if a required
 * pointer is NULL.
 */
#ifndef OCI_CONFIG_H
#define OCI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ocijson.h"

/* GNU C predefines `linux` as 1; struct oci_config has a member of that name. Code that
 * includes this header must test __linux__ instead. */
#undef linux

/* ---- process ------------------------------------------------------------------------ */

struct oci_console_size {
	uint32_t height; /* required */
	uint32_t width;  /* required */
};

struct oci_user {
	uint32_t uid; /* required */
	uint32_t gid; /* required */
	uint32_t umask;
	bool umask_present;
	uint32_t *additional_gids;
	size_t additional_gids_len;
	char *username; /* Windows; kept for round trips */
};

struct oci_capabilities {
	char **bounding;
	size_t bounding_len;
	char **effective;
	size_t effective_len;
	char **inheritable;
	size_t inheritable_len;
	char **permitted;
	size_t permitted_len;
	char **ambient;
	size_t ambient_len;
};

struct oci_rlimit {
	char *type;    /* required: RLIMIT_*; no duplicates within a process */
	uint64_t hard; /* required */
	uint64_t soft; /* required */
};

struct oci_scheduler {
	char *policy; /* required: SCHED_OTHER, SCHED_FIFO, ... */
	int32_t nice;
	bool nice_present;
	int32_t priority;
	bool priority_present;
	char **flags; /* SCHED_FLAG_* */
	size_t flags_len;
	uint64_t runtime;
	bool runtime_present;
	uint64_t deadline;
	bool deadline_present;
	uint64_t period;
	bool period_present;
};

struct oci_io_priority {
	char *class;      /* required: IOPRIO_CLASS_RT, _BE, _IDLE */
	int32_t priority; /* 0..7 */
	bool priority_present;
};

struct oci_cpu_affinity {
	char *initial; /* cpu list, "0-3,7" */
	char *final;
};

struct oci_process {
	bool terminal;
	bool terminal_present;
	struct oci_console_size *console_size;
	struct oci_user *user; /* required */
	char **args;
	size_t args_len;
	char *command_line; /* Windows; kept for round trips */
	char **env;
	size_t env_len;
	char *cwd; /* required */
	struct oci_capabilities *capabilities;
	struct oci_rlimit **rlimits;
	size_t rlimits_len;
	bool no_new_privileges;
	bool no_new_privileges_present;
	char *apparmor_profile;
	int32_t oom_score_adj;
	bool oom_score_adj_present;
	struct oci_scheduler *scheduler;
	char *selinux_label;
	struct oci_io_priority *io_priority;
	struct oci_cpu_affinity *exec_cpu_affinity;
};

/* ---- root, mounts, hooks ------------------------------------------------------------ */

struct oci_root {
	char *path; /* required */
	bool readonly;
	bool readonly_present;
};

struct oci_id_mapping {
	uint32_t container_id; /* required (containerID) */
	uint32_t host_id;      /* required (hostID) */
	uint32_t size;         /* required */
};

struct oci_mount {
	char *destination; /* required */
	char *type;
	char *source;
	char **options;
	size_t options_len;
	struct oci_id_mapping **uid_mappings;
	size_t uid_mappings_len;
	struct oci_id_mapping **gid_mappings;
	size_t gid_mappings_len;
};

struct oci_hook {
	char *path; /* required */
	char **args;
	size_t args_len;
	char **env;
	size_t env_len;
	int32_t timeout; /* seconds, > 0 */
	bool timeout_present;
};

struct oci_hooks {
	struct oci_hook **prestart; /* deprecated in the spec, still parsed */
	size_t prestart_len;
	struct oci_hook **create_runtime;
	size_t create_runtime_len;
	struct oci_hook **create_container;
	size_t create_container_len;
	struct oci_hook **start_container;
	size_t start_container_len;
	struct oci_hook **poststart;
	size_t poststart_len;
	struct oci_hook **poststop;
	size_t poststop_len;
};

/* ---- linux -------------------------------------------------------------------------- */

struct oci_namespace {
	char *type; /* required: pid network mount ipc uts user cgroup time */
	char *path;
};

/* linux.timeOffsets: {"monotonic": {"secs": 1, "nanosecs": 2}, ...} */
struct oci_time_offset {
	char *name; /* map key: monotonic, boottime */
	int64_t secs;
	bool secs_present;
	uint32_t nanosecs;
	bool nanosecs_present;
};

struct oci_device {
	char *type;    /* required: c b u p */
	char *path;    /* required */
	int64_t major; /* required unless type is p */
	bool major_present;
	int64_t minor; /* required unless type is p */
	bool minor_present;
	uint32_t file_mode;
	bool file_mode_present;
	uint32_t uid;
	bool uid_present;
	uint32_t gid;
	bool gid_present;
};

/* linux.netDevices: {"eth0": {"name": "ns-eth0"}} */
struct oci_net_device {
	char *key;  /* map key: the host interface name */
	char *name; /* name inside the container */
};

/* linux.resources.devices[] */
struct oci_device_cgroup {
	bool allow; /* required */
	char *type; /* a b c */
	int64_t major;
	bool major_present;
	int64_t minor;
	bool minor_present;
	char *access; /* letters from "rwm" */
};

struct oci_memory {
	int64_t limit;
	bool limit_present;
	int64_t reservation;
	bool reservation_present;
	int64_t swap;
	bool swap_present;
	int64_t kernel;
	bool kernel_present;
	int64_t kernel_tcp;
	bool kernel_tcp_present;
	uint64_t swappiness;
	bool swappiness_present;
	bool disable_oom_killer;
	bool disable_oom_killer_present;
	bool use_hierarchy;
	bool use_hierarchy_present;
	bool check_before_update;
	bool check_before_update_present;
};

struct oci_cpu {
	uint64_t shares;
	bool shares_present;
	int64_t quota;
	bool quota_present;
	uint64_t burst;
	bool burst_present;
	uint64_t period;
	bool period_present;
	int64_t realtime_runtime;
	bool realtime_runtime_present;
	uint64_t realtime_period;
	bool realtime_period_present;
	char *cpus;
	char *mems;
	int64_t idle;
	bool idle_present;
};

struct oci_pids {
	int64_t limit; /* required */
};

struct oci_weight_device {
	int64_t major; /* required */
	int64_t minor; /* required */
	uint16_t weight;
	bool weight_present;
	uint16_t leaf_weight;
	bool leaf_weight_present;
};

struct oci_throttle_device {
	int64_t major; /* required */
	int64_t minor; /* required */
	uint64_t rate; /* required */
};

struct oci_block_io {
	uint16_t weight;
	bool weight_present;
	uint16_t leaf_weight;
	bool leaf_weight_present;
	struct oci_weight_device **weight_device;
	size_t weight_device_len;
	struct oci_throttle_device **throttle_read_bps_device;
	size_t throttle_read_bps_device_len;
	struct oci_throttle_device **throttle_write_bps_device;
	size_t throttle_write_bps_device_len;
	struct oci_throttle_device **throttle_read_iops_device; /* throttleReadIOPSDevice */
	size_t throttle_read_iops_device_len;
	struct oci_throttle_device **throttle_write_iops_device; /* throttleWriteIOPSDevice */
	size_t throttle_write_iops_device_len;
};

struct oci_hugepage_limit {
	char *page_size; /* required: "2MB", "1GB", ... */
	uint64_t limit;  /* required */
};

struct oci_net_priority {
	char *name;        /* required */
	uint32_t priority; /* required */
};

struct oci_network {
	uint32_t class_id; /* classID */
	bool class_id_present;
	struct oci_net_priority **priorities;
	size_t priorities_len;
};

/* linux.resources.rdma: {"mlx5_1": {"hcaHandles": 3, "hcaObjects": 10000}} */
struct oci_rdma {
	char *name; /* map key: the device name */
	uint32_t hca_handles;
	bool hca_handles_present;
	uint32_t hca_objects;
	bool hca_objects_present;
};

struct oci_resources {
	struct oci_device_cgroup **devices;
	size_t devices_len;
	struct oci_memory *memory;
	struct oci_cpu *cpu;
	struct oci_pids *pids;
	struct oci_block_io *block_io;
	struct oci_hugepage_limit **hugepage_limits;
	size_t hugepage_limits_len;
	struct oci_network *network;
	struct oci_rdma **rdma;
	size_t rdma_len;
	struct oci_string_map *unified;
};

struct oci_intel_rdt {
	char *clos_id; /* closID */
	char *l3_cache_schema;
	char *mem_bw_schema;
	char **schemata;
	size_t schemata_len;
	bool enable_monitoring;
	bool enable_monitoring_present;
	bool enable_cmt; /* enableCMT (runtime-spec 1.1, 1.2) */
	bool enable_cmt_present;
	bool enable_mbm; /* enableMBM (runtime-spec 1.1, 1.2) */
	bool enable_mbm_present;
};

struct oci_syscall_arg {
	uint32_t index; /* required */
	uint64_t value; /* required */
	uint64_t value_two;
	bool value_two_present;
	char *op; /* required: SCMP_CMP_* */
};

struct oci_syscall {
	char **names; /* required */
	size_t names_len;
	char *action; /* required: SCMP_ACT_* */
	uint32_t errno_ret;
	bool errno_ret_present;
	struct oci_syscall_arg **args;
	size_t args_len;
};

struct oci_seccomp {
	char *default_action; /* required: SCMP_ACT_* */
	uint32_t default_errno_ret;
	bool default_errno_ret_present;
	char **architectures; /* SCMP_ARCH_* */
	size_t architectures_len;
	char **flags; /* SECCOMP_FILTER_FLAG_* */
	size_t flags_len;
	char *listener_path;
	char *listener_metadata;
	struct oci_syscall **syscalls;
	size_t syscalls_len;
};

struct oci_personality {
	char *domain; /* required: LINUX, LINUX32 */
	char **flags;
	size_t flags_len;
};

struct oci_memory_policy {
	char *mode; /* required: MPOL_* */
	char *nodes;
	char **flags; /* MPOL_F_* */
	size_t flags_len;
};

struct oci_linux {
	struct oci_namespace **namespaces; /* no two with the same type */
	size_t namespaces_len;
	struct oci_id_mapping **uid_mappings;
	size_t uid_mappings_len;
	struct oci_id_mapping **gid_mappings;
	size_t gid_mappings_len;
	struct oci_time_offset **time_offsets;
	size_t time_offsets_len;
	struct oci_device **devices;
	size_t devices_len;
	struct oci_net_device **net_devices;
	size_t net_devices_len;
	char *cgroups_path;
	struct oci_resources *resources;
	struct oci_intel_rdt *intel_rdt;
	struct oci_string_map *sysctl;
	struct oci_seccomp *seccomp;
	char *rootfs_propagation; /* private shared slave unbindable (or r-prefixed) */
	char **masked_paths;
	size_t masked_paths_len;
	char **readonly_paths;
	size_t readonly_paths_len;
	char *mount_label;
	struct oci_personality *personality;
	struct oci_memory_policy *memory_policy;
};

/* ---- top level ---------------------------------------------------------------------- */

struct oci_config {
	char *oci_version; /* required */
	struct oci_root *root;
	struct oci_mount **mounts;
	size_t mounts_len;
	struct oci_process *process;
	char *hostname;
	char *domainname;
	struct oci_hooks *hooks;
	struct oci_string_map *annotations;
	struct oci_linux *linux;
};

/* Type descriptors, for ocijson_* calls on a part of the config (ocijson_clone,
 * generating a process.json, ...). */
extern const struct ocijson_type oci_config_type, oci_process_type, oci_console_size_type,
	oci_user_type, oci_capabilities_type, oci_rlimit_type, oci_scheduler_type,
	oci_io_priority_type, oci_cpu_affinity_type, oci_root_type, oci_id_mapping_type,
	oci_mount_type, oci_hook_type, oci_hooks_type, oci_namespace_type, oci_time_offset_type,
	oci_device_type, oci_net_device_type, oci_device_cgroup_type, oci_memory_type, oci_cpu_type,
	oci_pids_type, oci_weight_device_type, oci_throttle_device_type, oci_block_io_type,
	oci_hugepage_limit_type, oci_net_priority_type, oci_network_type, oci_rdma_type,
	oci_resources_type, oci_intel_rdt_type, oci_syscall_arg_type, oci_syscall_type,
	oci_seccomp_type, oci_personality_type, oci_memory_policy_type, oci_linux_type;

/* config.json. source_name prefixes error messages (parse_file uses the basename). */
int oci_config_parse_file(const char *path, struct oci_config **ret, char **ret_err);
int oci_config_parse_data(const char *data, size_t len, const char *source_name,
			  struct oci_config **ret, char **ret_err);
int oci_config_generate(const struct oci_config *cfg, bool pretty, char **ret_json, size_t *ret_len,
			char **ret_err);
void oci_config_free(struct oci_config *cfg);

/* A bare process object (`exec --process process.json`). */
int oci_process_parse_file(const char *path, struct oci_process **ret, char **ret_err);
int oci_process_parse_data(const char *data, size_t len, const char *source_name,
			   struct oci_process **ret, char **ret_err);
int oci_process_generate(const struct oci_process *process, bool pretty, char **ret_json,
			 size_t *ret_len, char **ret_err);
void oci_process_free(struct oci_process *process);

/* A bare linux.resources object (`update --resources file`). */
int oci_resources_parse_file(const char *path, struct oci_resources **ret, char **ret_err);
int oci_resources_parse_data(const char *data, size_t len, const char *source_name,
			     struct oci_resources **ret, char **ret_err);
int oci_resources_generate(const struct oci_resources *resources, bool pretty, char **ret_json,
			   size_t *ret_len, char **ret_err);
void oci_resources_free(struct oci_resources *resources);

#endif
