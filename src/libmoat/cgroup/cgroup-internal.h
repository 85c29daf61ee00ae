/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what cgroup.c, cgroup-resources.c, cgroup-v1.c, cgroup-v2.c and cgroup-v2-devices.c
 * share, and the seams the unit tests use. Not part of libmoat's interface. */
#ifndef MOAT_CGROUP_INTERNAL_H
#define MOAT_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"

/* Controllers, by their v1 name; cg_ctrl_name() gives the v2 one. CG_CORE stands for the
 * cgroup core files (cgroup.*), which need no controller. */
enum cg_ctrl {
	CG_CORE,
	CG_CPU,
	CG_CPUACCT,
	CG_CPUSET,
	CG_MEMORY,
	CG_DEVICES,
	CG_FREEZER,
	CG_BLKIO,
	CG_PIDS,
	CG_HUGETLB,
	CG_NET_CLS,
	CG_NET_PRIO,
	CG_RDMA,
	CG_MISC,
	CG_PERF_EVENT,
	CG_CTRL_COUNT,
};

#define CG_BIT(c) (1u << (c))

/* Bounds on waiting for the kernel. */
#define CG_FREEZE_TIMEOUT_MS 5000 /* a freeze that takes longer is undone and reported */
#define CG_EMPTY_TIMEOUT_MS 5000  /* destroy: processes SIGKILLed must be gone by then */
#define CG_RMDIR_TIMEOUT_MS 1000  /* rmdir can see EBUSY briefly after the last exit */
#define CG_MAX_DEPTH 64           /* sub-cgroups a container may nest, walking them */
#define CG_MAX_FILE (4u << 20)    /* largest control file read (cgroup.procs of a big cgroup) */

#define CG_DEFAULT_PARENT "moat" /* moat's own cgroup: linux.cgroupsPath absent or relative */

/* One hierarchy, and the container's cgroup in it. */
struct cg_hier {
	char *mnt;      /* mount point */
	char *dir;      /* mnt + the cgroup path: for messages and the test hook */
	bool v2;        /* the cgroup2 hierarchy */
	uint32_t ctrls; /* CG_BIT()s: v1, the hierarchy's controllers; v2, the root's
			 * cgroup.controllers */
	int fd;         /* the container's cgroup directory, -1 when it is not there */
	int tasks_fd;   /* v1: its `tasks`, open for writing (moat_cgroup_open_tasks), or -1 */
	size_t made;    /* create: how many of the deepest levels it made here */
};

struct moat_cgroup {
	enum moat_cgroup_layout layout;
	char *path; /* "/moat/<id>" */
	struct cg_hier *h;
	size_t n;
	struct oci_string_map *applied; /* field -> "file=value" of each write that took effect */
	struct oci_string_map
		*ignored; /* field -> why the host cannot honour it (CG_W_IGNORABLE) */
	bool rt_raised;   /* this create raised /moat's real-time budget (cgroup-rt.c) */
	bool delegated;   /* someone else made it and manages what is above it (systemd's scope):
			   * moat enables no controller there, and uses only those it was given */
};

/* One write of a resource plan: value into file on one side. Where a field has two possible
 * files (blkio.weight or blkio.bfq.weight), the first that exists in the cgroup is used. */
struct cg_write {
	char *field; /* "linux.resources.memory.limit", for errors */
	enum cg_ctrl ctrl;
	bool v2;
	char *file[2];
	char *value[2];
	unsigned flags;
	const char *absent; /* what a host without the file lacks ("the kernel has no ..."); NULL */
	bool skip;          /* CG_W_IGNORABLE and the host has no file for it: nothing to write */
};

#define CG_W_CHECK_EFFECT (1u << 0) /* read back: a kernel that ignores the write is an error */
#define CG_W_KEEP_QUOTA (1u << 1)   /* cpu.max: the current quota goes before the value */
#define CG_W_IGNORABLE \
	(1u << 2)                /* a host that cannot honour it (no file, or a write the
				     * kernel ignores) gets a warning and a moat.cgroup.ignored
				     * note instead of an error: memory.kernel and kernelTCP, which
				     * the runtime spec marks NOT RECOMMENDED */
#define CG_W_RT_BUDGET (1u << 3) /* cpu.rt_runtime_us: cg_rt_write_runtime() */

struct cg_dev_prog; /* cgroup-v2-devices.h */
struct bpf_insn;    /* <linux/bpf.h> */

struct cg_plan {
	struct cg_write *w;
	size_t n;
	struct cg_dev_prog *devices;    /* the v2 device filter to install first; NULL: none */
	struct oci_string_map *ignored; /* field -> why: CG_W_IGNORABLE fields this host lacks */
};

/* A device every container may use (runtime spec, config-linux.md "Default Devices"), allowed
 * after the config's own rules so that its usual leading deny-all does not take it away. The
 * v1 side writes each as a devices.allow line, the v2 side compiles it into its filter. */
struct cg_default_device {
	char type; /* 'b' or 'c' */
	int64_t major;
	int64_t minor;      /* CG_DEV_ANY: every minor */
	const char *access; /* "rwm" */
	const char *what;   /* the path in the container, for messages */
};

#define CG_DEV_ANY (-1)

extern const struct cg_default_device cg_default_devices[];
extern const size_t cg_default_devices_n;

/* A device the container may use whatever its device rules say, allowed after them: first
 * each device linux.devices lists (rwm, less any access that the last rule naming that very
 * device, by its type and its own major and minor, denies), then the spec's default devices.
 * A config's deny of every device, or of a whole major, does not take a listed device away;
 * a deny of that device itself does, as the config asked. */
struct cg_allow {
	char type; /* 'b' or 'c' */
	int64_t major;
	int64_t minor;  /* CG_DEV_ANY: every minor */
	char access[4]; /* some of "rwm", in that order */
	char *field;    /* "linux.devices[2] (/dev/foo)", "default device /dev/null" */
};

struct cg_allows {
	struct cg_allow *a;
	size_t n;
};

/* The devices listed in linux.devices (a fifo, type p, needs no rule). */
struct cg_listed {
	struct oci_device *const *dev;
	size_t n;
};

/* cgroup.c */
const char *cg_ctrl_name(enum cg_ctrl c, bool v2);
int cg_ctrl_from_v2_name(const char *name, size_t len);
bool cg_ctrl_has_v2(enum cg_ctrl c); /* false: the controller is v1 only (devices, freezer) */
struct cg_hier *cg_hier_for(struct moat_cgroup *cg, enum cg_ctrl c, bool v2);
struct cg_hier *cg_unified(struct moat_cgroup *cg);
/* cgroup-layout.c: fill cg->h with the hierarchies under the fs root, the unified one last */
int cg_scan_mounts(struct moat_cgroup *cg, moat_error *err);
void cg_hier_clear(struct cg_hier *h);
/* cgroup-path.c: path checked and made canonical ("/a/b"); component i (0-based) of one */
int cg_normalize_path(const char *in, char **ret, moat_error *err);
char *cg_path_component(const char *path, size_t i);
int cg_read_at(int dirfd, const char *dir, const char *file, char **ret, moat_error *err);
int cg_write_at(int dirfd, const char *dir, const char *file, const char *value, moat_error *err);
/* The same into fd, already open for writing: file is dir's entry it is, for messages. */
int cg_write_fd(int fd, const char *dir, const char *file, const char *value, moat_error *err);
bool cg_has_file(const struct cg_hier *h, const char *file);
/* The names of the sub-directories (sub-cgroups) of fd, a NULL-terminated list (strv.h). */
int cg_list_subdirs(int fd, const char *dir, char ***ret, size_t *ret_n, moat_error *err);
void cg_sleep_ms(unsigned ms);
size_t cg_path_levels(const char *path);
int cg_open_level(const struct cg_hier *h, const char *path, size_t n, char **ret_dir,
		  moat_error *err);

/* cgroup-resources.c */
void cg_plan_add(struct cg_plan *p, const char *field, enum cg_ctrl c, bool v2, char *file,
		 char *value);
void cg_plan_clear(struct cg_plan *p);
int cg_plan_side(struct moat_cgroup *cg, enum cg_ctrl c, const char *field, bool *ret_v2,
		 moat_error *err);
/* Plan res (may be NULL) for this host, enable the v2 controllers it needs, and write it.
 * creating: a new cgroup, whose device rules (v1, or the v2 filter on a pure v2 host) are
 * programmed even without res->devices. listed (may be NULL): linux.devices, whose devices
 * the rules then allow (struct cg_allow). */
int cg_resources_apply(struct moat_cgroup *cg, const struct oci_resources *res,
		       const struct cg_listed *listed, bool creating, moat_error *err);
/* What the device rules of res allow after them (struct cg_allow); listed may be NULL. */
int cg_allows_build(const struct oci_resources *res, const struct cg_listed *listed,
		    struct cg_allows *ret, moat_error *err);
void cg_allows_clear(struct cg_allows *a);

/* How a freezer is asked and watched (cg_v1_freezer, cg_v2_freezer): cg_freeze() writes
 * value[frozen] to file, then looks with settled() until the kernel is done, for at most
 * CG_FREEZE_TIMEOUT_MS; a freeze that does not settle is undone, and the error says
 * "cgroup '<dir>': <not_settled[frozen]> after N ms". */
struct cg_freezer {
	const char *file;
	const char *value[2]; /* written to thaw, to freeze */
	bool ask_again;       /* written again before every look, not only the first */
	int (*settled)(struct cg_hier *h, bool frozen, bool *ret, moat_error *err);
	const char *not_settled[2]; /* the timeout's words, thawing and freezing */
};
int cg_freeze(struct cg_hier *h, const struct cg_freezer *f, bool frozen, moat_error *err);

/* cgroup-v1.c */
int cg_v1_init_level(const struct cg_hier *h, int parentfd, const char *parent_dir, int fd,
		     const char *dir, moat_error *err);
int cg_v1_plan_devices(const struct oci_resources *res, const struct cg_allows *allows,
		       bool creating, struct cg_plan *p, moat_error *err);
int cg_v1_order_memory(struct moat_cgroup *cg, struct cg_plan *p, moat_error *err);
extern const struct cg_freezer cg_v1_freezer;
int cg_v1_is_frozen(struct cg_hier *h, bool *ret, moat_error *err);

/* cgroup-v2.c */
uint64_t cg_v2_cpu_weight(uint64_t shares);
uint64_t cg_v2_io_weight(uint64_t blkio_weight);
int cg_v2_swap_max(const struct oci_memory *m, char **ret, moat_error *err);
char *cg_v2_cpu_max(const struct oci_cpu *c, unsigned *ret_flags);
int cg_v2_plan_unified(struct moat_cgroup *cg, const struct oci_string_map *unified,
		       struct cg_plan *p, moat_error *err);
/* Whether a space-separated list of controllers (cgroup.controllers) names name. */
bool cg_v2_listed(const char *list, const char *name);
int cg_v2_enable(struct moat_cgroup *cg, uint32_t ctrls, moat_error *err);
extern const struct cg_freezer cg_v2_freezer;
int cg_v2_is_frozen(struct cg_hier *h, bool *ret, moat_error *err);
int cg_v2_kill(struct cg_hier *h, bool *ret_done, moat_error *err);

/* cgroup-rt.c: the real-time budget of the cpu controller (v1, CONFIG_RT_GROUP_SCHED). The
 * kernel's share of a period: runtime / period in 20-bit fixed point, as it compares them;
 * a runtime of -1 (no limit) is the whole period. */
#define CG_RT_UNIT (1ull << 20)
uint64_t cg_rt_share(int64_t runtime_us, int64_t period_us);
/* The least runtime (us) of a group of this period whose share holds share. */
uint64_t cg_rt_runtime_for(uint64_t share, int64_t period_us);
/* Write w (linux.resources.cpu.realtimeRuntime) to h's cpu.rt_runtime_us. When the kernel
 * refuses it for want of budget and the cgroup is a child of moat's own /moat, raise /moat's
 * budget from what the root and /moat's siblings leave, then write again (on failure /moat
 * gets its budget back); otherwise fail naming the parent's budget. Serialized with every
 * other moat by a lock on /moat's directory. */
int cg_rt_write_runtime(struct moat_cgroup *cg, struct cg_hier *h, const struct cg_write *w,
			moat_error *err);
/* Before the container's cgroup is removed, its processes gone: its runtime back to 0. The
 * kernel drops a removed group from its parent's children some time after rmdir, and counts
 * its budget until then. */
void cg_rt_drop(struct moat_cgroup *cg);
/* After the container's cgroup is gone: lower /moat's budget to what its children hold. */
int cg_rt_release(struct moat_cgroup *cg, moat_error *err);
/* The cgroup is a child of moat's own /moat in a cpu hierarchy with a real-time budget. */
bool cg_rt_parent_has_budget(struct moat_cgroup *cg);

/* Test seams: a fake cgroupfs has no kernel behind it, so a test fills each new directory with
 * the files the kernel would make, empties one before it is removed, and watches each write.
 * devices_prog, when set, receives the compiled v2 device filter for the cgroup directory dir
 * instead of the kernel (0, or a negative errno to fail as an attach would). NULL clears them. */
struct moat_cgroup_test_hooks {
	void (*made_dir)(const char *mnt, bool v2, int dirfd, void *data);
	void (*removing_dir)(int dirfd, void *data);
	void (*wrote)(const char *path, const char *value, void *data);
	int (*devices_prog)(const char *dir, const struct bpf_insn *insns, size_t n, void *data);
	void *data;
};
void moat_cgroup_set_test_hooks(const struct moat_cgroup_test_hooks *hooks);
extern const struct moat_cgroup_test_hooks *cg_hooks;

#endif
