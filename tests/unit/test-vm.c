/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the microVM supervisor's pure parts: choosing the isolation, accelerator,
 * memory and vCPUs (vm-select.c); the guest's START message made from an OCI config
 * (vm-guest-spec.c); QEMU's command line (vm-launch.c); the root's share (vm-virtiofs.c).
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "oci-config.h"
#include "syscall-filter.h"
#include "utils.h"
#include "vm-guest-spec.h"
#include "vm-launch.h"
#include "vm-select.h"
#include "vm-snapshot.h"
#include "vm-tsc.h"
#include "vm-virtiofs.h"

static struct oci_config *config(const char *json)
{
	struct oci_config *cfg = NULL;
	char *msg = NULL;

	if (oci_config_parse_data(json, strlen(json), "test", &cfg, &msg) < 0)
		fail_msg("parse: %s", msg);
	return cfg;
}

#define CFG(annotations, linux_extra)                                                             \
	"{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, "                          \
	"\"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"user\": {\"uid\": 0, \"gid\": 0}}, " \
	"\"annotations\": {" annotations                                                          \
	"}, \"linux\": {\"namespaces\": [{\"type\": \"mount\"}]" linux_extra "}}"

static const struct moat_vm_defaults defaults = { false, MOAT_VM_ACCEL_KVM };

/* The choice for json, or the error (then *ret_msg holds it). */
static int choose(const char *json, bool as_vm, const struct moat_vm_defaults *d,
		  struct moat_vm_choice *ret, char **ret_msg)
{
	struct oci_config *cfg = config(json);
	moat_error err = MOAT_ERROR_INIT;
	int r = moat_vm_choose(cfg, as_vm, d, ret, &err);

	*ret_msg = err.msg ? xstrdup(err.msg) : NULL;
	moat_error_clear(&err);
	oci_config_free(cfg);
	return r;
}

static void test_isolation(void **state)
{
	struct moat_vm_choice c;
	struct moat_vm_defaults vm_default = { true, MOAT_VM_ACCEL_TCG };
	char *msg;

	(void)state;
	assert_int_equal(choose(CFG("", ""), false, &defaults, &c, &msg), 0);
	assert_int_equal(c.isolation, MOAT_ISOLATION_CONTAINER);
	assert_int_equal(
		choose(CFG("\"moat.isolation\": \"microvm\"", ""), false, &defaults, &c, &msg), 0);
	assert_int_equal(c.isolation, MOAT_ISOLATION_MICROVM);
	assert_int_equal(c.accel, MOAT_VM_ACCEL_KVM);
	assert_int_equal(c.memory_mib, 256);
	assert_int_equal(c.cpus, 1);
	/* moat-vm: the annotation cannot lower it */
	assert_int_equal(
		choose(CFG("\"moat.isolation\": \"container\"", ""), true, &defaults, &c, &msg), 0);
	assert_int_equal(c.isolation, MOAT_ISOLATION_MICROVM);
	/* the policy's default, and the annotation below it */
	assert_int_equal(choose(CFG("", ""), false, &vm_default, &c, &msg), 0);
	assert_int_equal(c.isolation, MOAT_ISOLATION_MICROVM);
	assert_int_equal(c.accel, MOAT_VM_ACCEL_TCG);
	assert_int_equal(
		choose(CFG("\"moat.isolation\": \"container\"", ""), false, &vm_default, &c, &msg),
		0);
	assert_int_equal(c.isolation, MOAT_ISOLATION_CONTAINER);
	assert_true(choose(CFG("\"moat.isolation\": \"vm\"", ""), false, &defaults, &c, &msg) < 0);
	assert_string_equal(msg, "annotations.moat.isolation: 'vm' is not container or microvm");
	free(msg);
	assert_true(moat_vm_invoked_as_vm("/usr/local/bin/moat-vm"));
	assert_true(moat_vm_invoked_as_vm("moat-vm"));
	assert_false(moat_vm_invoked_as_vm("/usr/bin/moat"));
	assert_false(moat_vm_invoked_as_vm("moat-vmx"));
}

static void test_accel_memory_cpus(void **state)
{
	struct moat_vm_choice c;
	char *msg;

	(void)state;
	assert_int_equal(choose(CFG("\"moat.isolation\": \"microvm\", \"moat.vm.accel\": \"tcg\", "
				    "\"moat.vm.cpus\": \"2\", \"moat.vm.memory_mib\": \"300\"",
				    ""),
				false, &defaults, &c, &msg),
			 0);
	assert_int_equal(c.accel, MOAT_VM_ACCEL_TCG);
	assert_int_equal(c.cpus, 2);
	assert_int_equal(c.memory_mib, 300);
	/* from linux.resources: the memory limit less the VMM's 64 MiB, the quota rounded up */
	assert_int_equal(choose(CFG("\"moat.isolation\": \"microvm\"",
				    ", \"resources\": {\"memory\": {\"limit\": 536870912}, "
				    "\"cpu\": {\"quota\": 150000, \"period\": 100000}}"),
				false, &defaults, &c, &msg),
			 0);
	assert_int_equal(c.memory_mib, 448);
	assert_int_equal(c.cpus, 2);
	assert_true(choose(CFG("\"moat.isolation\": \"microvm\"",
			       ", \"resources\": {\"memory\": {\"limit\": 100663296}}"),
			   false, &defaults, &c, &msg) < 0);
	assert_string_equal(msg, "linux.resources.memory.limit: the guest would get 32 MiB; it "
				 "needs at least 64 MiB besides the VMM's own 64 MiB");
	free(msg);
	assert_true(choose(CFG("\"moat.isolation\": \"microvm\", \"moat.vm.memory_mib\": \"500\"",
			       ", \"resources\": {\"memory\": {\"limit\": 536870912}}"),
			   false, &defaults, &c, &msg) < 0);
	assert_string_equal(msg, "annotations.moat.vm.memory_mib: 500 MiB and the VMM's 64 MiB do "
				 "not fit in linux.resources.memory.limit (512 MiB)");
	free(msg);
	assert_true(choose(CFG("\"moat.isolation\": \"microvm\", \"moat.vm.accel\": \"hvf\"", ""),
			   false, &defaults, &c, &msg) < 0);
	assert_string_equal(msg, "annotations.moat.vm.accel: 'hvf' is not kvm or tcg");
	free(msg);
	assert_true(choose(CFG("\"moat.isolation\": \"microvm\", \"moat.vm.cpus\": \"0\"", ""),
			   false, &defaults, &c, &msg) < 0);
	assert_string_equal(msg, "annotations.moat.vm.cpus: '0' is not a number in 1..64");
	free(msg);
	/* a container ignores the VM settings entirely */
	assert_int_equal(choose(CFG("\"moat.vm.accel\": \"hvf\"", ""), false, &defaults, &c, &msg),
			 0);
}

/* The error of moat_vm_check_memory_update for a memory limit of limit bytes (present
 * unless absent), or NULL when it passes. */
static char *update_refusal(uint32_t guest_mib, int64_t limit, bool absent)
{
	struct oci_memory m = { .limit = limit, .limit_present = !absent };
	struct oci_resources res = { .memory = &m };
	moat_error err = MOAT_ERROR_INIT;
	char *msg = NULL;

	if (moat_vm_check_memory_update(guest_mib, &res, &err) < 0) {
		assert_non_null(err.msg);
		msg = xstrdup(err.msg);
	}
	moat_error_clear(&err);
	return msg;
}

/* `moat update` holds a microVM's memory limit to the guest's memory and QEMU's beside it. */
static void test_memory_update(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	char *msg;

	(void)state;
	msg = update_refusal(256, 100 << 20, false);
	assert_string_equal(msg, "linux.resources.memory.limit 100 MiB is below what this microVM "
				 "needs: its guest has 256 MiB and QEMU takes 64 MiB beside it "
				 "(320 MiB)");
	free(msg);
	/* a byte short of it, in bytes */
	msg = update_refusal(256, (320 << 20) - 1, false);
	assert_string_equal(msg,
			    "linux.resources.memory.limit 335544319 bytes is below what this "
			    "microVM needs: its guest has 256 MiB and QEMU takes 64 MiB beside "
			    "it (320 MiB)");
	free(msg);
	assert_null(update_refusal(256, 320 << 20, false));
	assert_null(update_refusal(256, (int64_t)1 << 40, false));
	assert_null(update_refusal(256, -1, false)); /* no limit */
	assert_null(update_refusal(256, 0, true));   /* no new limit */
	assert_int_equal(moat_vm_check_memory_update(256, NULL, &err), 0);
	assert_null(err.msg);
}

static void test_start_message(void **state)
{
	struct oci_config *cfg = config(
		"{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\", \"readonly\": true}, "
		"\"hostname\": \"guest\", \"process\": {\"cwd\": \"/w\", \"args\": [\"sh\", \"-c\", "
		"\"true\"], \"env\": [\"A=1\"], \"user\": {\"uid\": 5, \"gid\": 6, "
		"\"additionalGids\": [7]}, \"noNewPrivileges\": true, \"capabilities\": "
		"{\"bounding\": [\"CAP_CHOWN\", \"CAP_KILL\"], \"effective\": [\"CAP_KILL\"]}, "
		"\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"soft\": 10, \"hard\": 20}]}, "
		"\"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\", "
		"\"options\": [\"nosuid\", \"noexec\"]}, {\"destination\": \"/data\", \"type\": "
		"\"bind\", \"source\": \"/srv\", \"options\": [\"rbind\"]}, {\"destination\": "
		"\"/sys/fs/cgroup\", \"type\": \"cgroup\", \"source\": \"cgroup\", \"options\": "
		"[\"ro\"]}, {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\", "
		"\"options\": [\"mode=1777\", \"size=1m\"]}]}");
	moat_error err = MOAT_ERROR_INIT;
	struct moat_msg_start m;
	struct moat_buf out = { 0 };
	struct moat_msg msg = { .type = MOAT_MSG_START, .id = 1 };

	(void)state;
	assert_int_equal(moat_vm_start_build(cfg, NULL, &m, &err), 0);
	assert_int_equal(m.process.n_args, 3);
	assert_string_equal(m.process.cwd, "/w");
	assert_int_equal(m.process.uid, 5);
	assert_int_equal(m.process.gid, 6);
	assert_int_equal(m.process.n_groups, 1);
	assert_true(m.process.no_new_privs);
	assert_int_equal(m.process.cap_bounding, (1ULL << 0) | (1ULL << 5));
	assert_int_equal(m.process.cap_effective, 1ULL << 5);
	assert_int_equal(m.process.n_rlimits, 1);
	assert_int_equal(m.process.rlimits[0].type, 7); /* RLIMIT_NOFILE */
	assert_null(m.process.seccomp);
	/* the bind mount is the host's to make, and the guest's to keep in sight; cgroup
	 * becomes cgroup2 */
	assert_int_equal(m.n_mounts, 4);
	assert_string_equal(m.mounts[0].type, "proc");
	assert_int_equal(m.mounts[0].flags, MS_NOSUID | MS_NOEXEC);
	assert_string_equal(m.mounts[1].type, MOAT_PROTO_SHARE_MOUNT);
	assert_string_equal(m.mounts[1].dest, "/data");
	assert_null(m.mounts[1].source);
	assert_int_equal(m.mounts[1].flags, 0);
	assert_string_equal(m.mounts[2].type, "cgroup2");
	assert_int_equal(m.mounts[2].flags, MS_RDONLY);
	assert_string_equal(m.mounts[3].dest, "/tmp");
	assert_string_equal(m.mounts[3].data, "mode=1777,size=1m");
	assert_string_equal(m.hostname, "guest");
	assert_true(m.root_readonly);
	assert_int_equal(m.namespaces, 0); /* the config has none */
	/* and the protocol takes it */
	msg.u.start = m;
	if (moat_proto_encode(MOAT_PEER_HOST, &msg, &out, &err) < 0)
		fail_msg("encode: %s", err.msg);
	moat_buf_free(&out);
	moat_vm_start_free(&m);
	oci_config_free(cfg);
}

static void test_start_seccomp(void **state)
{
	struct oci_config *cfg = config(CFG("", ", \"seccomp\": {\"defaultAction\": "
						"\"SCMP_ACT_ALLOW\", \"flags\": "
						"[\"SECCOMP_FILTER_FLAG_LOG\"], \"syscalls\": "
						"[{\"names\": [\"mkdir\"], \"action\": "
						"\"SCMP_ACT_ERRNO\"}]}"));
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc = NULL;
	struct moat_msg_start m;
	size_t n;
	uint32_t flags;

	(void)state;
	assert_int_equal(moat_seccomp_prepare(cfg->linux->seccomp, &sc, &err), 0);
	assert_int_equal(moat_vm_start_build(cfg, sc, &m, &err), 0);
	assert_non_null(m.process.seccomp);
	moat_seccomp_program(sc, &n, &flags);
	assert_int_equal(m.process.n_seccomp, n);
	assert_true(m.process.has_seccomp_flags);
	assert_int_equal(m.process.seccomp_flags, 2); /* SECCOMP_FILTER_FLAG_LOG */
	moat_vm_start_free(&m);
	moat_seccomp_free(sc);
	oci_config_free(cfg);
}

/* The config's PID and cgroup namespaces are the workload's in the guest too; a path (the
 * host's namespace, for the jail) cannot reach the guest, which gives one of its own. */
static void test_start_namespaces(void **state)
{
	struct oci_config *cfg = config(
		"{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"process\": "
		"{\"cwd\": \"/\", \"args\": [\"sh\"], \"user\": {\"uid\": 0, \"gid\": 0}}, "
		"\"linux\": {\"namespaces\": [{\"type\": \"mount\"}, {\"type\": \"network\"}, "
		"{\"type\": \"pid\", \"path\": \"/proc/1/ns/pid\"}, {\"type\": \"cgroup\"}, "
		"{\"type\": \"ipc\"}, {\"type\": \"uts\"}]}}");
	moat_error err = MOAT_ERROR_INIT;
	struct moat_msg_start m;

	(void)state;
	assert_int_equal(moat_vm_start_build(cfg, NULL, &m, &err), 0);
	assert_int_equal(m.namespaces, MOAT_PROTO_NS_PID | MOAT_PROTO_NS_CGROUP |
					       MOAT_PROTO_NS_IPC | MOAT_PROTO_NS_UTS);
	moat_vm_start_free(&m);
	oci_config_free(cfg);
	cfg = config(CFG("", ""));
	assert_int_equal(moat_vm_start_build(cfg, NULL, &m, &err), 0);
	assert_int_equal(m.namespaces, 0); /* a mount namespace only: the guest's is always new */
	moat_vm_start_free(&m);
	oci_config_free(cfg);
}

/* The start message for CFG("", linux_extra), or the error's message. */
static int start_for(const char *linux_extra, struct moat_msg_start *ret, char **ret_msg)
{
	_cleanup_free_ char *json = xasprintf(CFG("", "%s"), linux_extra);
	struct oci_config *cfg = config(json);
	moat_error err = MOAT_ERROR_INIT;
	int r = moat_vm_start_build(cfg, NULL, ret, &err);

	*ret_msg = err.msg ? xstrdup(err.msg) : NULL;
	moat_error_clear(&err);
	oci_config_free(cfg);
	return r;
}

/* The pids limit and CPU quota go to the guest as container mode reads them; values no
 * kernel takes are refused naming the field. */
static void test_start_resources(void **state)
{
	struct moat_msg_start m;
	char *msg = NULL;

	(void)state;
	assert_int_equal(start_for(", \"resources\": {\"pids\": {\"limit\": 1024}, \"cpu\": "
				   "{\"quota\": 20000}}",
				   &m, &msg),
			 0);
	assert_true(m.has_resources);
	assert_true(m.resources.has_pids_limit);
	assert_int_equal(m.resources.pids_limit, 1024);
	assert_true(m.resources.has_cpu_quota);
	assert_int_equal(m.resources.cpu_quota, 20000);
	assert_int_equal(m.resources.cpu_period, MOAT_PROTO_DEFAULT_CPU_PERIOD);
	moat_vm_start_free(&m);
	/* no limit: pids 0 or -1, quota -1, a period alone */
	assert_int_equal(start_for(", \"resources\": {\"pids\": {\"limit\": -1}, \"cpu\": "
				   "{\"quota\": -1, \"period\": 50000}}",
				   &m, &msg),
			 0);
	assert_false(m.has_resources);
	moat_vm_start_free(&m);
	assert_int_equal(start_for("", &m, &msg), 0);
	assert_false(m.has_resources);
	moat_vm_start_free(&m);
	assert_int_equal(start_for(", \"resources\": {\"cpu\": {\"quota\": 500}}", &m, &msg),
			 -EINVAL);
	assert_non_null(strstr(msg, "linux.resources.cpu.quota: 500 is outside"));
	free(msg);
	assert_int_equal(start_for(", \"resources\": {\"cpu\": {\"quota\": 5000, \"period\": "
				   "2000000}}",
				   &m, &msg),
			 -EINVAL);
	assert_non_null(strstr(msg, "linux.resources.cpu.period: 2000000 is outside"));
	free(msg);
	assert_int_equal(start_for(", \"resources\": {\"pids\": {\"limit\": 5000000}}", &m, &msg),
			 -EINVAL);
	assert_non_null(strstr(msg, "linux.resources.pids.limit: 5000000 is above"));
	free(msg);
}

static bool argv_has(char **argv, const char *a, const char *b)
{
	for (size_t i = 0; argv[i] != NULL && argv[i + 1] != NULL; i++)
		if (strcmp(argv[i], a) == 0 && strcmp(argv[i + 1], b) == 0)
			return true;
	return false;
}

static void test_qemu_argv(void **state)
{
	struct moat_vm_choice vm = { MOAT_ISOLATION_MICROVM, MOAT_VM_ACCEL_TCG, 300, 2 };
	struct moat_vm_launch l = { .qemu = "/usr/bin/qemu-system-x86_64",
				    .qemu_fd = -1,
				    .kernel = "/k",
				    .initramfs = "/i",
				    .rootfs = "/root,fs",
				    .vm = &vm,
				    .tsc_khz = 2096000,
				    .agent_fd = 5 };
	char **argv = moat_vm_qemu_argv(&l);

	(void)state;
	assert_string_equal(argv[0], "/usr/bin/qemu-system-x86_64");
	assert_true(argv_has(argv, "-accel", "tcg"));
	assert_true(argv_has(argv, "-cpu", "max,erms=off"));
	assert_true(argv_has(argv, "-smp", "2"));
	assert_true(argv_has(argv, "-m", "300M"));
	assert_true(argv_has(argv, "-kernel", "/k"));
	assert_true(argv_has(argv, "-initrd", "/i"));
	/* a starved vCPU must not fail the boot-time timer check (timer-check-panic) */
	for (size_t i = 0; argv[i] != NULL; i++)
		if (strcmp(argv[i], "-append") == 0)
			assert_non_null(strstr(argv[i + 1], " no_timer_check "));
	/* under TCG the TSC stays the clock on a busy host (clocksource-watchdog) */
	for (size_t i = 0; argv[i] != NULL; i++)
		if (strcmp(argv[i], "-append") == 0)
			assert_non_null(
				strstr(argv[i + 1], " tsc=reliable tsc_early_khz=2096000 "));
	assert_true(argv_has(
		argv, "-sandbox",
		"on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"));
	/* a comma in a path is doubled, as QEMU's option syntax wants */
	assert_true(argv_has(argv, "-fsdev",
			     "local,id=root,path=/root,,fs,security_model=none,multidevs=remap"));
	assert_true(argv_has(argv, "-device", "virtserialport,chardev=agent,name=moat.0"));
	assert_true(argv_has(argv, "-chardev", "null,id=con"));
	assert_false(argv_has(argv, "-device", "virtio-9p-device,fsdev=pod,mount_tag=moatpod"));
	moat_vm_argv_free(argv);
	/* the pod's share: a second 9p device, writable, inode numbers remapped */
	l.pod_share = "/pod";
	argv = moat_vm_qemu_argv(&l);
	assert_true(argv_has(argv, "-fsdev",
			     "local,id=pod,path=/pod,security_model=none,multidevs=remap"));
	assert_true(argv_has(argv, "-device", "virtio-9p-device,fsdev=pod,mount_tag=moatpod"));
	moat_vm_argv_free(argv);
	l.pod_share = NULL;
	vm.accel = MOAT_VM_ACCEL_KVM;
	argv = moat_vm_qemu_argv(&l);
	assert_true(argv_has(argv, "-accel", "kvm"));
	assert_true(argv_has(argv, "-cpu", "host"));
	moat_vm_argv_free(argv);
	/* a read-only root is exported read-only */
	l.rootfs_readonly = true;
	argv = moat_vm_qemu_argv(&l);
	assert_true(argv_has(
		argv, "-fsdev",
		"local,id=root,path=/root,,fs,security_model=none,multidevs=remap,readonly=on"));
	assert_false(argv_has(argv, "-device", "virtserialport,chardev=egress,name=moat.egress"));
	assert_true(argv_has(argv, "-device", "virtio-serial-device,max_ports=2"));
	moat_vm_argv_free(argv);
	/* egress: a third port on the inherited fd 4, and the agent told to expect it */
	l.egress = true;
	argv = moat_vm_qemu_argv(&l);
	assert_true(argv_has(argv, "-device", "virtio-serial-device,max_ports=3"));
	assert_true(argv_has(argv, "-chardev", "socket,id=egress,fd=4"));
	assert_true(argv_has(argv, "-device", "virtserialport,chardev=egress,name=moat.egress"));
	for (size_t i = 0; argv[i] != NULL; i++)
		if (strcmp(argv[i], "-append") == 0)
			assert_non_null(strstr(argv[i + 1], " moat.egress=1"));
	moat_vm_argv_free(argv);
	/* virtio-fs: virtiofsd's socket instead of 9p, shared guest memory, modern virtio-mmio */
	l.virtiofs_socket = "/tmp/virtiofs.sock";
	argv = moat_vm_qemu_argv(&l);
	assert_true(argv_has(argv, "-chardev", "socket,id=vfs,path=/tmp/virtiofs.sock"));
	assert_true(argv_has(argv, "-device", "vhost-user-fs-device,chardev=vfs,tag=moatroot"));
	assert_true(argv_has(argv, "-object", "memory-backend-memfd,id=mem,size=300M,share=on"));
	assert_true(argv_has(argv, "-global", "virtio-mmio.force-legacy=false"));
	for (size_t i = 0; argv[i] != NULL; i++) {
		assert_string_not_equal(argv[i], "-fsdev");
		if (strcmp(argv[i], "-append") == 0)
			assert_non_null(strstr(argv[i + 1], " moat.rootfs=virtiofs"));
	}
	moat_vm_argv_free(argv);
	/* a snapshot's restore: RAM on the inherited memfd, the stream named over the monitor */
	l.virtiofs_socket = NULL;
	l.snapshot_ram = l.incoming = l.qmp = true;
	argv = moat_vm_qemu_argv(&l);
	assert_true(argv_has(argv, "-object",
			     "memory-backend-file,id=mem,size=300M,share=on,mem-path=/proc/self/fd/"
			     "15"));
	assert_int_equal(MOAT_VM_QEMU_RAM_FD, 15);
	assert_true(argv_has(argv, "-M",
			     "microvm,acpi=off,x-option-roms=off,rtc=off,"
			     "memory-backend=mem"));
	assert_true(argv_has(argv, "-incoming", "defer"));
	assert_true(argv_has(argv, "-chardev", "socket,id=qmp,fd=14"));
	moat_vm_argv_free(argv);
}

/* moat.vm.share against moat.vm.boot and the host's virtiofsd: what create decides, or the
 * error; *fd says whether virtiofsd was opened. */
static int share(const char *annotations, const char *virtiofsd, enum moat_vm_boot *boot,
		 bool *opened, char **ret_msg)
{
	_cleanup_free_ char *json = xasprintf(CFG("%s", ""), annotations);
	struct oci_config *cfg = config(json);
	moat_error err = MOAT_ERROR_INIT;
	int fd = -1, r;

	setenv(MOAT_VM_VIRTIOFSD_ENV, virtiofsd, 1);
	r = moat_vm_virtiofsd_open(cfg, boot, &fd, &err);
	unsetenv(MOAT_VM_VIRTIOFSD_ENV);
	*opened = fd >= 0;
	if (fd >= 0)
		close(fd);
	*ret_msg = err.msg ? xstrdup(err.msg) : NULL;
	moat_error_clear(&err);
	oci_config_free(cfg);
	return r;
}

static void test_virtiofsd_open(void **state)
{
	static const char have[] = "/bin/true", none[] = "/nonexistent/virtiofsd";
	enum moat_vm_boot boot = MOAT_VM_BOOT_AUTO;
	char *msg = NULL;
	bool opened;

	(void)state;
	/* unset: virtio-fs where virtiofsd is, the boot left to the snapshot's rules */
	assert_int_equal(share("", have, &boot, &opened, &msg), 0);
	assert_true(opened);
	assert_int_equal(boot, MOAT_VM_BOOT_AUTO);
	assert_int_equal(share("", none, &boot, &opened, &msg), 0);
	assert_false(opened);
	boot = MOAT_VM_BOOT_SNAPSHOT;
	assert_int_equal(share("", have, &boot, &opened, &msg), 0);
	assert_false(opened);
	/* 9p: never virtiofsd */
	boot = MOAT_VM_BOOT_COLD;
	assert_int_equal(share("\"moat.vm.share\": \"9p\"", have, &boot, &opened, &msg), 0);
	assert_false(opened);
	/* virtiofs: a cold boot, or an error naming the annotation */
	boot = MOAT_VM_BOOT_AUTO;
	assert_int_equal(share("\"moat.vm.share\": \"virtiofs\"", have, &boot, &opened, &msg), 0);
	assert_true(opened);
	assert_int_equal(boot, MOAT_VM_BOOT_COLD);
	assert_int_equal(share("\"moat.vm.share\": \"virtiofs\"", none, &boot, &opened, &msg),
			 -ENOENT);
	assert_non_null(strstr(msg, "annotations.moat.vm.share=virtiofs: /nonexistent/virtiofsd"));
	free(msg);
	boot = MOAT_VM_BOOT_SNAPSHOT;
	assert_int_equal(share("\"moat.vm.share\": \"virtiofs\"", have, &boot, &opened, &msg),
			 -EINVAL);
	assert_non_null(strstr(msg, "a snapshot's root is 9p"));
	free(msg);
	assert_int_equal(share("\"moat.vm.share\": \"nfs\"", have, &boot, &opened, &msg), -EINVAL);
	assert_string_equal(msg, "annotations.moat.vm.share: 'nfs' is not virtiofs or 9p");
	free(msg);
}

/* The TSC rate for a TCG guest (clocksource-watchdog): the same twice, since it is part of a
 * snapshot's key, and in whole MHz. */
static void test_host_tsc_khz(void **state)
{
	uint32_t a = moat_vm_host_tsc_khz(), b = moat_vm_host_tsc_khz();

	(void)state;
#if defined(__x86_64__)
	assert_true(a >= 100000);
#endif
	assert_int_equal(a, b);
	assert_int_equal(a % 1000, 0);
}

/* write_text: path holds text, and nothing else. */
static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The rate once per boot: the first create records it beside the state, the next ones read
 * it (a planted rate is what they get: nothing measured); another boot's is measured over. */
static void test_host_tsc_khz_cached(void **state)
{
	char root[] = "/tmp/moat-test-tsc.XXXXXX", id[40] = "", line[80];
	_cleanup_free_ char *path = NULL, *want = NULL, *planted = NULL, *tiny = NULL;
	uint32_t measured;
	FILE *f;

	(void)state;
#if !defined(__x86_64__)
	skip();
#endif
	assert_non_null(mkdtemp(root));
	path = xasprintf("%s/.vm-tsc", root);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	assert_non_null(f);
	assert_non_null(fgets(id, sizeof(id), f));
	fclose(f);
	id[strcspn(id, "\n")] = '\0';

	measured = moat_vm_host_tsc_khz_cached(root);
	assert_int_equal(measured, moat_vm_host_tsc_khz());
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	want = xasprintf("%s %u\n", id, measured);
	assert_string_equal(line, want);

	planted = xasprintf("%s 1234000\n", id);
	write_text(path, planted);
	assert_int_equal(moat_vm_host_tsc_khz_cached(root), 1234000);
	/* another boot's, or nonsense: measured, and recorded over */
	write_text(path, "00000000-0000-0000-0000-000000000000 1234000\n");
	assert_int_equal(moat_vm_host_tsc_khz_cached(root), measured);
	tiny = xasprintf("%s 99\n", id);
	write_text(path, tiny);
	assert_int_equal(moat_vm_host_tsc_khz_cached(root), measured);
	assert_int_equal(moat_vm_host_tsc_khz_cached(root), measured);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(root), 0);
}

/* name i of the cache: 64 hex digits */
static void snapshot_name(char *buf, int i)
{
	snprintf(buf, 65, "%064x", i);
}

/* Ten snapshots, each with its lock, the oldest first: the newest 7 and the one being kept
 * (the oldest) stay, with their locks; the others go with theirs. */
static void test_snapshot_evict(void **state)
{
	char dir[] = "/tmp/moat-test-evict.XXXXXX", name[65], lock[80];
	int dirfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	for (int i = 0; i < 10; i++) {
		struct timespec t[2] = { { 1000 + i, 0 }, { 1000 + i, 0 } };
		int fd;

		snapshot_name(name, i);
		snprintf(lock, sizeof(lock), "%s.lock", name);
		fd = openat(dirfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0400);
		assert_true(fd >= 0);
		assert_int_equal(futimens(fd, t), 0);
		close(fd);
		fd = openat(dirfd, lock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	snapshot_name(name, 0);
	moat_vm_snapshot_evict(dirfd, name);
	for (int i = 0; i < 10; i++) {
		bool kept = i == 0 || i >= 3;

		snapshot_name(name, i);
		snprintf(lock, sizeof(lock), "%s.lock", name);
		assert_int_equal(faccessat(dirfd, name, F_OK, 0) == 0, kept);
		assert_int_equal(faccessat(dirfd, lock, F_OK, 0) == 0, kept);
		unlinkat(dirfd, name, 0);
		unlinkat(dirfd, lock, 0);
	}
	close(dirfd);
	assert_int_equal(rmdir(dir), 0);
}

/* A guest's RAM through a snapshot file: its pages of zeros stay holes, the rest comes back
 * whole, and the file's offset is left at the stream. */
static void test_snapshot_ram(void **state)
{
	const uint64_t size = 8 << 20;
	char dir[] = "/var/tmp/moat-test-ram.XXXXXX";
	moat_error err = MOAT_ERROR_INIT;
	uint8_t *a, *b;
	struct stat st;
	int ram, file, back;

	(void)state;
	ram = moat_vm_ram_memfd(size, &err);
	assert_true(ram >= 0);
	a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ram, 0);
	assert_true(a != MAP_FAILED);
	/* a page, a run of three, the last page; and a page written with zeros */
	memset(a + 4096, 0xa5, 4096);
	for (int i = 0; i < 3; i++)
		memset(a + (1 << 20) + i * 4096, i + 1, 4096);
	a[size - 1] = 7;
	memset(a + (2 << 20), 0, 4096);
	assert_non_null(mkdtemp(dir));
	file = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(file >= 0);
	assert_int_equal(pwrite(file, "QEVM", 4, (off_t)size), 4);
	assert_int_equal(moat_vm_ram_store(ram, file, size, &err), 0);
	assert_int_equal(fstat(file, &st), 0);
	assert_int_equal(st.st_size, size + 4);
	assert_true(st.st_blocks * 512 <= 64 * 4096); /* five pages, and the stream's */
	back = moat_vm_ram_load(file, size, &err);
	assert_true(back >= 0);
	assert_int_equal(lseek(file, 0, SEEK_CUR), size);
	b = mmap(NULL, size, PROT_READ, MAP_SHARED, back, 0);
	assert_true(b != MAP_FAILED);
	assert_memory_equal(a, b, size);
	munmap(a, size);
	munmap(b, size);
	close(ram);
	close(back);
	close(file);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isolation),       cmocka_unit_test(test_accel_memory_cpus),
		cmocka_unit_test(test_memory_update),   cmocka_unit_test(test_start_message),
		cmocka_unit_test(test_start_seccomp),   cmocka_unit_test(test_start_namespaces),
		cmocka_unit_test(test_start_resources), cmocka_unit_test(test_qemu_argv),
		cmocka_unit_test(test_host_tsc_khz),    cmocka_unit_test(test_snapshot_evict),
		cmocka_unit_test(test_virtiofsd_open),  cmocka_unit_test(test_host_tsc_khz_cached),
		cmocka_unit_test(test_snapshot_ram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
