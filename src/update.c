/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat update: change the resources of a running container, from OCI LinuxResources JSON
 * (--resources FILE, or - for stdin, which is how containerd sends it) or from flags. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "log.h"
#include "moat.h"
#include "utils.h"

static void usage(void)
{
	printf("Usage: moat update [--resources FILE|-] [FLAGS] ID\n\n"
	       "Change the cgroup limits of a created, running or paused container.\n"
	       "--resources takes OCI LinuxResources JSON (\"-\": stdin); the flags set single\n"
	       "values and cannot be combined with it. Sizes take a k, m, g or t suffix\n"
	       "(powers of 1024); -1 means unlimited (--memory -1 lifts memory+swap too).\n"
	       "In --resources JSON a 0 memory, swap, kernel, CPU shares/quota/period or\n"
	       "blkio weight means \"unchanged\", as runc reads what Docker and containerd send.\n"
	       "The new values are also recorded in the container's saved config.\n"
	       "A microVM's guest holds its workload to the pids limit and the CPU quota too,\n"
	       "and a pod member to its memory limit: they reach the guest while the\n"
	       "container runs, and are refused while it is created or paused.\n"
	       "  -r, --resources FILE      LinuxResources JSON\n"
	       "      --memory BYTES        memory limit\n"
	       "      --memory-swap BYTES   memory+swap limit\n"
	       "      --memory-reservation BYTES  soft memory limit\n"
	       "      --cpu-shares N        CPU shares (v2: converted to cpu.weight);\n"
	       "                            --cpu-share, runc's spelling, is the same\n"
	       "      --cpu-quota USEC      CPU time per period (-1: no limit)\n"
	       "      --cpu-period USEC     CFS period\n"
	       "      --cpu-rt-period USEC  real-time period\n"
	       "      --cpu-rt-runtime USEC real-time runtime per period\n"
	       "      --cpuset-cpus LIST    CPUs allowed (0-3,5)\n"
	       "      --cpuset-mems LIST    memory nodes allowed\n"
	       "      --pids-limit N        maximum number of processes (-1: no limit)\n"
	       "      --blkio-weight N      block IO weight, 10-1000\n");
}

enum {
	OPT_MEMORY = 1000,
	OPT_MEMORY_SWAP,
	OPT_MEMORY_RESERVATION,
	OPT_CPU_SHARES,
	OPT_CPU_QUOTA,
	OPT_CPU_PERIOD,
	OPT_CPU_RT_PERIOD,
	OPT_CPU_RT_RUNTIME,
	OPT_CPUSET_CPUS,
	OPT_CPUSET_MEMS,
	OPT_PIDS_LIMIT,
	OPT_BLKIO_WEIGHT,
};

static int parse_int(const char *flag, const char *s, long long min, long long max, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < min || v > max)
		return moat_usage_error("update", "%s: '%s' is not a number in %lld..%lld", flag, s,
					min, max);
	*ret = v;
	return 0;
}

static struct oci_memory *memory_of(struct oci_resources *r)
{
	if (r->memory == NULL)
		r->memory = xcalloc(1, sizeof(*r->memory));
	return r->memory;
}

static struct oci_cpu *cpu_of(struct oci_resources *r)
{
	if (r->cpu == NULL)
		r->cpu = xcalloc(1, sizeof(*r->cpu));
	return r->cpu;
}

/* One resource flag into r. Returns 0 or an exit status. */
static int apply_memory_flag(int opt, const char *arg, struct oci_resources *r)
{
	struct oci_memory *m = memory_of(r);
	int64_t v;

	switch (opt) {
	case OPT_MEMORY:
		if (moat_parse_size("update", "--memory", arg, &v) != 0)
			return EXIT_FAILURE;
		m->limit = v, m->limit_present = true;
		/* Unlimited memory lifts memory+swap too (v1 refuses a limit above memsw), unless
		 * --memory-swap says otherwise. */
		if (v == -1 && !m->swap_present)
			m->swap = -1, m->swap_present = true;
		break;
	case OPT_MEMORY_SWAP:
		if (moat_parse_size("update", "--memory-swap", arg, &v) != 0)
			return EXIT_FAILURE;
		m->swap = v, m->swap_present = true;
		break;
	default:
		if (moat_parse_size("update", "--memory-reservation", arg, &v) != 0)
			return EXIT_FAILURE;
		m->reservation = v, m->reservation_present = true;
		break;
	}
	return 0;
}

static int apply_cpu_flag(int opt, const char *arg, struct oci_resources *r)
{
	struct oci_cpu *c = cpu_of(r);
	int64_t v = 0;

	switch (opt) {
	case OPT_CPUSET_CPUS:
		free(c->cpus);
		c->cpus = xstrdup(arg);
		return 0;
	case OPT_CPUSET_MEMS:
		free(c->mems);
		c->mems = xstrdup(arg);
		return 0;
	case OPT_CPU_QUOTA:
	case OPT_CPU_RT_RUNTIME:
		if (parse_int(opt == OPT_CPU_QUOTA ? "--cpu-quota" : "--cpu-rt-runtime", arg, -1,
			      LLONG_MAX, &v) != 0)
			return EXIT_FAILURE;
		if (opt == OPT_CPU_QUOTA)
			c->quota = v, c->quota_present = true;
		else
			c->realtime_runtime = v, c->realtime_runtime_present = true;
		return 0;
	default:
		if (parse_int(opt == OPT_CPU_SHARES   ? "--cpu-shares"
			      : opt == OPT_CPU_PERIOD ? "--cpu-period"
						      : "--cpu-rt-period",
			      arg, 0, LLONG_MAX, &v) != 0)
			return EXIT_FAILURE;
		if (opt == OPT_CPU_SHARES)
			c->shares = (uint64_t)v, c->shares_present = true;
		else if (opt == OPT_CPU_PERIOD)
			c->period = (uint64_t)v, c->period_present = true;
		else
			c->realtime_period = (uint64_t)v, c->realtime_period_present = true;
		return 0;
	}
}

static int apply_flag(int opt, const char *arg, struct oci_resources *r)
{
	int64_t v;

	switch (opt) {
	case OPT_MEMORY:
	case OPT_MEMORY_SWAP:
	case OPT_MEMORY_RESERVATION: return apply_memory_flag(opt, arg, r);
	case OPT_PIDS_LIMIT:
		if (parse_int("--pids-limit", arg, -1, LLONG_MAX, &v) != 0)
			return EXIT_FAILURE;
		if (r->pids == NULL)
			r->pids = xcalloc(1, sizeof(*r->pids));
		r->pids->limit = v;
		return 0;
	case OPT_BLKIO_WEIGHT:
		if (parse_int("--blkio-weight", arg, 10, 1000, &v) != 0)
			return EXIT_FAILURE;
		if (r->block_io == NULL)
			r->block_io = xcalloc(1, sizeof(*r->block_io));
		r->block_io->weight = (uint16_t)v, r->block_io->weight_present = true;
		return 0;
	default: return apply_cpu_flag(opt, arg, r);
	}
}

/* present = false where value is 0 */
#define UNSET_ZERO(obj, field)                                                    \
	do {                                                                      \
		if ((obj) != NULL && (obj)->field##_present && (obj)->field == 0) \
			(obj)->field##_present = false;                           \
	} while (0)

/* Docker and containerd send every field of an update, 0 for the ones the user left alone, and
 * runc reads a 0 there as "unchanged" (none of them is a usable limit). So does moat. */
static void drop_unset_zeros(struct oci_resources *r)
{
	UNSET_ZERO(r->memory, limit);
	UNSET_ZERO(r->memory, reservation);
	UNSET_ZERO(r->memory, swap);
	UNSET_ZERO(r->memory, kernel);
	UNSET_ZERO(r->memory, kernel_tcp);
	UNSET_ZERO(r->cpu, shares);
	UNSET_ZERO(r->cpu, quota);
	UNSET_ZERO(r->cpu, period);
	UNSET_ZERO(r->cpu, realtime_runtime);
	UNSET_ZERO(r->cpu, realtime_period);
	UNSET_ZERO(r->block_io, weight);
	UNSET_ZERO(r->block_io, leaf_weight);
}

/* --resources FILE or - (stdin). */
static int read_resources(const char *path, struct oci_resources **ret)
{
	_cleanup_free_ char *data = NULL, *msg = NULL;
	moat_error err = MOAT_ERROR_INIT;
	size_t len = 0;
	int r;

	if (strcmp(path, "-") == 0) {
		if (read_fd_all(STDIN_FILENO, "stdin", OCIJSON_MAX_FILE_SIZE, &data, &len, &err) <
		    0) {
			moat_error_prefix(&err, "--resources");
			return moat_fail(&err);
		}
		r = oci_resources_parse_data(data, len, "stdin", ret, &msg);
	} else {
		r = oci_resources_parse_file(path, ret, &msg);
	}
	if (r < 0) {
		moat_error_msg(&err, -r, "--resources: %s", msg ? msg : path);
		return moat_fail(&err);
	}
	return 0;
}

static const struct option update_opts[] = {
	{ "resources", required_argument, NULL, 'r' },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "memory-swap", required_argument, NULL, OPT_MEMORY_SWAP },
	{ "memory-reservation", required_argument, NULL, OPT_MEMORY_RESERVATION },
	{ "cpu-shares", required_argument, NULL, OPT_CPU_SHARES },
	{ "cpu-share", required_argument, NULL, OPT_CPU_SHARES }, /* runc's spelling */
	{ "cpu-quota", required_argument, NULL, OPT_CPU_QUOTA },
	{ "cpu-period", required_argument, NULL, OPT_CPU_PERIOD },
	{ "cpu-rt-period", required_argument, NULL, OPT_CPU_RT_PERIOD },
	{ "cpu-rt-runtime", required_argument, NULL, OPT_CPU_RT_RUNTIME },
	{ "cpuset-cpus", required_argument, NULL, OPT_CPUSET_CPUS },
	{ "cpuset-mems", required_argument, NULL, OPT_CPUSET_MEMS },
	{ "pids-limit", required_argument, NULL, OPT_PIDS_LIMIT },
	{ "blkio-weight", required_argument, NULL, OPT_BLKIO_WEIGHT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int moat_cmd_update(struct moat_globals *g, int argc, char **argv)
{
	moat_error err = MOAT_ERROR_INIT;
	struct oci_resources *res = xcalloc(1, sizeof(*res));
	const char *file = NULL, *id;
	bool flags = false;
	int c, rc = 0;

	while (rc == 0 && (c = getopt_long(argc, argv, "r:h", update_opts, NULL)) != -1) {
		if (c == 'h') {
			usage();
			oci_resources_free(res);
			return EXIT_SUCCESS;
		}
		if (c == 'r')
			file = optarg;
		else if (c >= OPT_MEMORY && c <= OPT_BLKIO_WEIGHT)
			rc = apply_flag(c, optarg, res), flags = true;
		else
			rc = moat_bad_option("update", argv);
	}
	if (rc == 0 && file != NULL && flags)
		rc = moat_usage_error("update",
				      "--resources cannot be combined with resource flags");
	if (rc == 0 && file == NULL && !flags)
		rc = moat_usage_error("update", "nothing to change: give --resources or a flag");
	if (rc == 0)
		rc = moat_want_id("update", argc, argv, optind, &id);
	if (rc == 0 && file != NULL) {
		oci_resources_free(res);
		res = NULL;
		rc = read_resources(file, &res);
		if (rc == 0)
			drop_unset_zeros(res);
	}
	if (rc != 0) {
		oci_resources_free(res);
		return rc;
	}
	if (moat_container_update(g->root, id, g->policy, res, &err) < 0)
		return moat_fail(&err);
	moat_log_warnings(&err);
	return EXIT_SUCCESS;
}
