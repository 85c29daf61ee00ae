/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the hardened default config that `moat spec` writes.
 *
 * Unlike runc's and crun's defaults: empty capability sets, no_new_privs, a read-only
 * root with a writable tmpfs /tmp, a network namespace holding only loopback, a pids limit,
 * and no bind mount from the host. Every tmpfs has an inode bound beside its size (mount.h,
 * MOAT_TMPFS_BYTES_PER_INODE).
 *
 * It names no user namespace, as engines' configs do not: the hardened policy's auto-userns
 * rule gives each container one of its own, with a range of host ids lent from the pool to
 * that container alone and the rootfs idmapped (policy.h, userns-pool.h). A fixed mapping
 * here would give every container made from this config the same host ids. --rootless
 * writes a user namespace mapping root to the caller's ids, which are all it has. */
#include "spec.h"

#include <string.h>

#include "mount.h"
#include "process.h"
#include "syscall-filter.h"
#include "utils.h"

/* /dev, /dev/shm and /tmp: 64 MiB tmpfs each (runc's /dev size), with one inode per page of
 * that (mount.h): at most 16384 files, a bound on the kernel memory their inodes take. */
#define SPEC_TMPFS_KIB 65536
#define SPEC_TMPFS_INODES 16384
MOAT_TMPFS_CHECK(SPEC_TMPFS_KIB, SPEC_TMPFS_INODES);
#define SPEC_TMPFS_LIMITS                                                        \
	"\"" MOAT_TMPFS_SIZE_OPT(SPEC_TMPFS_KIB) "\", \"" MOAT_TMPFS_INODES_OPT( \
		SPEC_TMPFS_INODES) "\""

static const char default_config[] =
	"{"
	"\"ociVersion\": \"" MOAT_OCI_VERSION "\","
	"\"process\": {"
	"  \"terminal\": false,"
	"  \"user\": {\"uid\": 0, \"gid\": 0},"
	"  \"args\": [\"sh\"],"
	"  \"env\": [\"PATH=" MOAT_DEFAULT_PATH "\","
	"            \"TERM=xterm\"],"
	"  \"cwd\": \"/\","
	"  \"capabilities\": {\"bounding\": [], \"effective\": [], \"inheritable\": [],"
	"                     \"permitted\": [], \"ambient\": []},"
	"  \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1024, \"soft\": 1024}],"
	"  \"noNewPrivileges\": true"
	"},"
	"\"root\": {\"path\": \"rootfs\", \"readonly\": true},"
	"\"hostname\": \"moat\","
	"\"mounts\": ["
	"  {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\","
	"   \"options\": [\"nosuid\", \"noexec\", \"nodev\"]},"
	"  {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
	"   \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", " SPEC_TMPFS_LIMITS "]},"
	"  {\"destination\": \"/dev/pts\", \"type\": \"devpts\", \"source\": \"devpts\","
	"   \"options\": [\"nosuid\", \"noexec\", \"newinstance\", \"ptmxmode=0666\", \"mode=0620\","
	"                 \"gid=5\"]},"
	"  {\"destination\": \"/dev/shm\", \"type\": \"tmpfs\", \"source\": \"shm\","
	"   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"mode=1777\", " SPEC_TMPFS_LIMITS
	"]},"
	"  {\"destination\": \"/dev/mqueue\", \"type\": \"mqueue\", \"source\": \"mqueue\","
	"   \"options\": [\"nosuid\", \"noexec\", \"nodev\"]},"
	"  {\"destination\": \"/sys\", \"type\": \"sysfs\", \"source\": \"sysfs\","
	"   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"ro\"]},"
	"  {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
	"   \"options\": [\"nosuid\", \"nodev\", \"mode=1777\", " SPEC_TMPFS_LIMITS "]}"
	"],"
	"\"linux\": {"
	"  \"resources\": {\"pids\": {\"limit\": 1024}},"
	"  \"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"}, {\"type\": \"ipc\"},"
	"                   {\"type\": \"uts\"}, {\"type\": \"mount\"}, {\"type\": \"cgroup\"}],"
	"  \"maskedPaths\": [\"/proc/acpi\", \"/proc/asound\", \"/proc/kcore\", \"/proc/keys\","
	"                    \"/proc/latency_stats\", \"/proc/timer_list\", \"/proc/timer_stats\","
	"                    \"/proc/sched_debug\", \"/proc/scsi\", \"/sys/firmware\","
	"                    \"/sys/devices/virtual/powercap\", \"/proc/interrupts\"],"
	"  \"readonlyPaths\": [\"/proc/bus\", \"/proc/fs\", \"/proc/irq\", \"/proc/sys\","
	"                      \"/proc/sysrq-trigger\"]"
	"}"
	"}";

/* Remove "gid=5" from the devpts mount: a one-id map has no group 5. */
static void drop_devpts_gid(struct oci_mount *m)
{
	size_t i, j = 0;

	for (i = 0; i < m->options_len; i++) {
		if (strncmp(m->options[i], "gid=", 4) == 0)
			free(m->options[i]);
		else
			m->options[j++] = m->options[i];
	}
	m->options_len = j;
}

static struct oci_id_mapping **root_to(uint32_t host)
{
	struct oci_id_mapping **v = xcalloc(2, sizeof(*v));

	v[0] = xcalloc(1, sizeof(**v));
	*v[0] = (struct oci_id_mapping){ .container_id = 0, .host_id = host, .size = 1 };
	return v;
}

/* A user namespace mapping container root to the caller's uid and gid. */
static void make_rootless(struct oci_config *cfg, uid_t uid, gid_t gid)
{
	struct oci_linux *lx = cfg->linux;
	size_t i;

	lx->namespaces =
		xrealloc(lx->namespaces, (lx->namespaces_len + 2) * sizeof(*lx->namespaces));
	lx->namespaces[lx->namespaces_len] = xcalloc(1, sizeof(**lx->namespaces));
	lx->namespaces[lx->namespaces_len++]->type = xstrdup("user");
	lx->namespaces[lx->namespaces_len] = NULL;
	lx->uid_mappings = root_to(uid);
	lx->uid_mappings_len = 1;
	lx->gid_mappings = root_to(gid);
	lx->gid_mappings_len = 1;
	ocijson_free(&oci_resources_type, lx->resources);
	lx->resources = NULL;
	for (i = 0; i < cfg->mounts_len; i++) {
		if (strcmp(cfg->mounts[i]->destination, "/dev/pts") == 0)
			drop_devpts_gid(cfg->mounts[i]);
	}
}

int moat_spec_default(bool rootless, uid_t uid, gid_t gid, struct oci_config **ret, moat_error *err)
{
	_cleanup_free_ char *msg = NULL;
	struct oci_config *cfg = NULL;
	int r;

	r = oci_config_parse_data(default_config, sizeof(default_config) - 1, "default config",
				  &cfg, &msg);
	if (r < 0)
		return moat_error_msg(err, EINVAL, "%s", msg ? msg : "default config");
	if (rootless)
		make_rootless(cfg, uid, gid);
	/* moat's default seccomp profile, written out so the config shows what applies. */
	if (moat_seccomp_default(&cfg->linux->seccomp, err) < 0) {
		oci_config_free(cfg);
		return moat_error_ret(err);
	}
	*ret = cfg;
	return 0;
}
