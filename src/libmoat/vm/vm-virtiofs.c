/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the guest's root over virtio-fs (vm-virtiofs.h). */
#include "vm-virtiofs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "caps.h"
#include "utils.h"
#include "vm-jail.h"

/* virtiofsd's listening socket, where it finds it (--fd). */
#define VIRTIOFSD_LISTEN_FD 3
#define VIRTIOFSD_LISTEN_FD_STR "3"

static int share_wanted(const struct oci_config *cfg, bool *ret_virtiofs, bool *ret_9p,
			moat_error *err)
{
	const char *v = oci_string_map_get(cfg->annotations, MOAT_VM_SHARE_ANNOTATION);

	*ret_virtiofs = v != NULL && strcmp(v, "virtiofs") == 0;
	*ret_9p = v != NULL && strcmp(v, "9p") == 0;
	if (v != NULL && !*ret_virtiofs && !*ret_9p)
		return moat_error_msg(
			err, EINVAL,
			"annotations." MOAT_VM_SHARE_ANNOTATION ": '%s' is not virtiofs or 9p", v);
	return 0;
}

int moat_vm_virtiofsd_open(const struct oci_config *cfg, enum moat_vm_boot *boot, int *ret_fd,
			   moat_error *err)
{
	const char *path = getenv(MOAT_VM_VIRTIOFSD_ENV);
	bool virtiofs, p9;
	int r;

	*ret_fd = -1;
	if (share_wanted(cfg, &virtiofs, &p9, err) < 0)
		return moat_error_ret(err);
	if (p9 || (!virtiofs && *boot == MOAT_VM_BOOT_SNAPSHOT))
		return 0;
	if (virtiofs && *boot == MOAT_VM_BOOT_SNAPSHOT)
		return moat_error_msg(
			err, EINVAL,
			"annotations." MOAT_VM_SHARE_ANNOTATION
			"=virtiofs: a snapshot's root is 9p (QEMU cannot migrate "
			"virtio-fs); remove it or annotations." MOAT_VM_BOOT_ANNOTATION);
	if (path == NULL || path[0] == '\0')
		path = MOAT_VM_HOST_VIRTIOFSD;
	/* by fd: executed as QEMU is, whatever a path in the jail holds */
	r = moat_vm_open_host_program(path, ret_fd);
	if (r < 0 && virtiofs)
		return moat_error_set(err, -r,
				      "annotations." MOAT_VM_SHARE_ANNOTATION
				      "=virtiofs: %s (install Debian's qemu-system-common, or "
				      "remove the annotation for 9p)",
				      path);
	if (virtiofs)
		*boot = MOAT_VM_BOOT_COLD;
	return 0;
}

bool moat_vm_virtiofs_wanted(const struct moat_vm_session *s)
{
	return !s->member && s->virtiofsd_fd >= 0 && s->snapshot_fd < 0;
}

/* ---- starting it, in the init ---------------------------------------------------------------- */

/* What virtiofsd keeps to act as the guest's users, and what it needs once: sys_admin for
 * its sandbox, setpcap to empty its bounding set, as it does (without it libcap-ng
 * reads /proc/self/exe to warn, under virtiofsd's filter, which kills it). */
static uint64_t virtiofsd_caps(void)
{
	static const int caps[] = { CAP_CHOWN,     CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,
				    CAP_SETGID,    CAP_SETUID,       CAP_MKNOD,  CAP_SETFCAP,
				    CAP_SYS_ADMIN, CAP_SETPCAP };
	uint64_t mask = 0;

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(caps); i++)
		mask |= UINT64_C(1) << caps[i];
	return mask;
}

/* A listening socket at MOAT_VM_JAIL_VIRTIOFS_SOCKET, for one connection: QEMU's, which runs
 * as uid:gid (moat.vm.vmm-user), the only one that may connect. */
static int listen_socket(uid_t uid, gid_t gid, int *ret_fd, moat_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = MOAT_VM_JAIL_VIRTIOFS_SOCKET };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chown(sa.sun_path, uid, gid) < 0 || chmod(sa.sun_path, 0600) < 0 || listen(fd, 1) < 0)
		return moat_error_set(err, errno, "microvm: virtiofsd's socket %s",
				      MOAT_VM_JAIL_VIRTIOFS_SOCKET);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* In the child: the socket at VIRTIOFSD_LISTEN_FD, /dev/null as stdio, the bounding set,
 * no_new_privs, then virtiofsd; a failure's errno goes up err_fd. Not the container's stderr:
 * virtiofsd logs an error whenever QEMU hangs up, as it does at every exit. Where it fails,
 * QEMU's vhost-user device says so. */
static _Noreturn void exec_virtiofsd(int exe_fd, int listen_fd, int err_fd)
{
	static char *const env[] = { "PATH=/usr/bin", NULL };
	static char *const argv[] = { "virtiofsd",
				      "--fd=" VIRTIOFSD_LISTEN_FD_STR,
				      "-o",
				      "source=" MOAT_VM_JAIL_ROOTFS,
				      "-o",
				      "sandbox=namespace",
				      "-o",
				      "cache=auto",
				      "-o",
				      "announce_submounts",
				      "--rlimit-nofile=0",
				      NULL };
	moat_error ignored = MOAT_ERROR_INIT;
	struct moat_caps caps = { 0 };
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC), e;

	caps.bounding = caps.permitted = caps.effective = virtiofsd_caps();
	/* every fd above the numbers it is placed at, first */
	exe_fd = fcntl(exe_fd, F_DUPFD_CLOEXEC, 10);
	err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
	listen_fd = fcntl(listen_fd, F_DUPFD_CLOEXEC, 10);
	null_fd = null_fd < 0 ? -1 : fcntl(null_fd, F_DUPFD_CLOEXEC, 10);
	if (null_fd < 0 || exe_fd < 0 || err_fd < 0 || listen_fd < 0 ||
	    dup2(listen_fd, VIRTIOFSD_LISTEN_FD) != VIRTIOFSD_LISTEN_FD || dup2(null_fd, 0) < 0 ||
	    dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0 || moat_caps_apply(&caps, &ignored) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		goto fail;
	close_range(VIRTIOFSD_LISTEN_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
	syscall(SYS_execveat, exe_fd, "", argv, env, AT_EMPTY_PATH);
fail:
	e = errno;
	write_all(err_fd, &e, sizeof(e));
	_exit(127);
}

int moat_vm_virtiofsd_start(struct moat_vm_session *s, const struct oci_process *vmm,
			    moat_error *err)
{
	_cleanup_close_ int listen_fd = -1, e0 = -1;
	int e[2], child_errno = 0;
	pid_t pid;

	if (listen_socket(vmm->user ? vmm->user->uid : 0, vmm->user ? vmm->user->gid : 0,
			  &listen_fd, err) < 0)
		return moat_error_ret(err);
	if (pipe2(e, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "microvm: pipe");
	e0 = e[0];
	pid = fork();
	if (pid == 0) {
		close(e[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		exec_virtiofsd(s->virtiofsd_fd, listen_fd, e[1]);
	}
	close(e[1]);
	if (pid < 0)
		return moat_error_set(err, errno, "microvm: fork virtiofsd");
	if (read_all(e0, &child_errno, sizeof(child_errno)) == sizeof(child_errno))
		return moat_error_set(err, child_errno, "microvm: start virtiofsd");
	s->virtiofs = true;
	s->virtiofsd = pid;
	return 0;
}
