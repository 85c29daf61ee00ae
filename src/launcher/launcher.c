/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat's launcher: the program installed as `moat`. It starts moat's runtime, and for the
 * commands whose processes enter a container it starts it from a read-only overlay of the
 * runtime's directory, mounted nowhere, so that no process in a container can ever reach the
 * runtime's file (CVE-2019-5736; docs/launcher.md).
 *
 * The runtime used to start from its own file and then re-execute itself from that overlay:
 * two starts of a dynamically linked program for every create. The launcher is built static
 * without a C library (-nostdlib, raw-syscall.h), so its own start costs next to nothing, and
 * the runtime starts once.
 *
 * The runtime still checks where it runs from and re-executes itself when that is not
 * protected (sealed-exe.c): the launcher's choice of commands only spares work, it is not
 * what keeps a container out. Where no overlay can be made (a rootless moat, a kernel
 * without overlayfs), the launcher starts the runtime's file, and the runtime makes its
 * sealed memfd copy as before. Arguments and environment are passed on unchanged, argv[0]
 * included (`moat-vm`), and the launcher opens nothing that outlives the exec. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <limits.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "raw-syscall.h"

#ifndef MOAT_RUNTIME
#error "MOAT_RUNTIME must name the runtime: an absolute path, or one relative to the launcher"
#endif

/* The global options of moat that take a value (src/moat.c parse_globals): the launcher
 * skips their values to find the command. tests/lint/check-launcher-options.sh checks that
 * the two lists agree. */
static const char *const value_options[] = { "root",     "log",  "log-format", "cgroup-manager",
					     "rootless", "criu", "policy",     NULL };

/* The commands whose processes enter a container (src/moat.c main). */
static const char *const entering_commands[] = { "create", "run", "exec", "sandbox", NULL };

static size_t str_len(const char *s)
{
	size_t n = 0;

	while (s[n] != '\0')
		n++;
	return n;
}

static int str_eq(const char *a, const char *b)
{
	while (*a != '\0' && *a == *b)
		a++, b++;
	return *a == *b;
}

/* Whether p is a prefix of s, as getopt_long takes an abbreviated long option. */
static int str_prefix(const char *p, const char *s)
{
	while (*p != '\0' && *p == *s)
		p++, s++;
	return *p == '\0';
}

static int in_list(const char *s, const char *const *list, int prefix)
{
	for (; *list != NULL; list++)
		if (prefix ? str_prefix(s, *list) : str_eq(s, *list))
			return 1;
	return 0;
}

/* Whether the command moat is asked for is one whose processes enter a container: the first
 * argument after the global options, as parse_globals reads them ("+vh": options end at the
 * first argument that is not one). */
static int enters_container(char **argv)
{
	char **a = argv + 1;

	for (; *a != NULL && (*a)[0] == '-' && (*a)[1] != '\0'; a++) {
		const char *name = *a + 2;
		int has_value = 0;

		if (str_eq(*a, "--"))
			return a[1] != NULL && in_list(a[1], entering_commands, 0);
		if ((*a)[1] != '-')
			continue; /* -v, -h */
		for (const char *c = name; *c != '\0'; c++)
			has_value |= *c == '=';
		if (!has_value && name[0] != '\0' && in_list(name, value_options, 1) &&
		    a[1] != NULL)
			a++;
	}
	return *a != NULL && in_list(*a, entering_commands, 0);
}

static void put_str(char *buf, size_t *len, size_t cap, const char *s)
{
	while (*s != '\0' && *len + 1 < cap)
		buf[(*len)++] = *s++;
}

static void put_num(char *buf, size_t *len, size_t cap, unsigned long v)
{
	char digits[24];
	int k = 0;

	do
		digits[k++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (k > 0 && *len + 1 < cap)
		buf[(*len)++] = digits[--k];
}

/* A new filesystem of type fstype, configured with the key=value pairs in kv (NULL-ended),
 * mounted nowhere: its mount's close-on-exec fd, or -errno. */
static long detached_mount(const char *fstype, const char *const *kv, unsigned long attrs)
{
	long fs = raw_syscall(SYS_fsopen, (long)fstype, FSOPEN_CLOEXEC, 0, 0, 0), r = 0;

	if (fs < 0)
		return fs;
	for (; r >= 0 && kv[0] != NULL; kv += 2)
		r = raw_syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, (long)kv[0], (long)kv[1], 0);
	if (r >= 0)
		r = raw_syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0);
	if (r >= 0)
		r = raw_syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, (long)attrs, 0, 0);
	raw_syscall(SYS_close, fs, 0, 0, 0, 0);
	return r;
}

/* The runtime's directory dir as an overlay with nothing above it, mounted nowhere, as
 * sealed-exe.c's read_only_overlay makes it: read-only whatever a remount asks, since it has
 * no upper layer. Overlayfs wants two lower layers and refuses the same directory twice: the
 * second is an empty tmpfs. Kernels before 6.8 know no "lowerdir+", and the runtime then
 * makes its own view. */
static long read_only_overlay(const char *dir)
{
	static const char *const empty_opts[] = { "size", "4k", "mode", "0555", NULL };
	const char *opts[] = { "lowerdir+", dir, "lowerdir+", NULL, NULL };
	char empty_path[32];
	size_t len = 0;
	long empty, mnt;

	empty = detached_mount("tmpfs", empty_opts, MOUNT_ATTR_RDONLY);
	if (empty < 0)
		return empty;
	put_str(empty_path, &len, sizeof(empty_path), "/proc/self/fd/");
	put_num(empty_path, &len, sizeof(empty_path), (unsigned long)empty);
	empty_path[len] = '\0';
	opts[3] = empty_path;
	mnt = detached_mount("overlay", opts,
			     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	raw_syscall(SYS_close, empty, 0, 0, 0, 0);
	return mnt;
}

static const char *errno_name(long e)
{
	switch (e) {
	case ENOENT: return "No such file or directory";
	case EACCES: return "Permission denied";
	case ENOEXEC: return "Exec format error";
	case ENOMEM: return "Cannot allocate memory";
	case E2BIG: return "Argument list too long";
	case ELOOP: return "Too many levels of symbolic links";
	case ENOTDIR: return "Not a directory";
	case ETXTBSY: return "Text file busy";
	default: return NULL;
	}
}

static _Noreturn void fail(const char *runtime, long err)
{
	char msg[PATH_MAX + 96];
	const char *name = errno_name(err);
	size_t len = 0;

	put_str(msg, &len, sizeof(msg), "moat: start moat's runtime '");
	put_str(msg, &len, sizeof(msg), runtime);
	put_str(msg, &len, sizeof(msg), "': ");
	if (name != NULL) {
		put_str(msg, &len, sizeof(msg), name);
	} else {
		put_str(msg, &len, sizeof(msg), "error ");
		put_num(msg, &len, sizeof(msg), (unsigned long)err);
	}
	msg[len++] = '\n';
	raw_syscall(SYS_write, 2, (long)msg, (long)len, 0, 0);
	for (;;)
		raw_syscall(SYS_exit_group, 127, 0, 0, 0, 0);
}

/* The runtime's path, into path (PATH_MAX bytes): MOAT_RUNTIME, or, where it is relative (the
 * build tree's launcher), MOAT_RUNTIME in the launcher's own directory, so that a copy of the
 * build tree's pair starts its own runtime. */
static void runtime_path(char *path)
{
	const size_t rel = sizeof(MOAT_RUNTIME) - 1;
	long len = 0;

	if (MOAT_RUNTIME[0] != '/') {
		len = raw_syscall(SYS_readlink, (long)"/proc/self/exe", (long)path, PATH_MAX, 0, 0);
		if (len <= 0 || (size_t)len + rel + 2 > PATH_MAX || path[0] != '/')
			fail(MOAT_RUNTIME, len < 0 ? -len : ENAMETOOLONG);
		while (path[len - 1] != '/')
			len--;
	}
	for (size_t i = 0; i <= rel; i++)
		path[len + i] = MOAT_RUNTIME[i];
}

/* Splits path at its last '/': path ends at its directory, and the name is returned. NULL
 * where the directory is "/", on which no overlay is laid. */
static const char *split_name(char *path)
{
	size_t slash = str_len(path);

	while (slash > 0 && path[slash - 1] != '/')
		slash--;
	if (slash <= 1)
		return NULL;
	path[slash - 1] = '\0';
	return path + slash;
}

void moat_launch(long *sp)
{
	char **argv = (char **)(sp + 1), **envp = argv + sp[0] + 1;
	char path[PATH_MAX], dir[PATH_MAX];
	const char *name;
	long mnt, r;

	runtime_path(path);
	if (argv[0] != NULL && enters_container(argv)) {
		for (size_t i = 0; i < PATH_MAX && (dir[i] = path[i]) != '\0'; i++)
			;
		name = split_name(dir);
		mnt = name != NULL ? read_only_overlay(dir) : -EINVAL;
		if (mnt >= 0)
			raw_syscall(SYS_execveat, mnt, (long)name, (long)argv, (long)envp, 0);
		/* no overlay here (rootless, no overlayfs, or it cannot be run from): the runtime
		 * makes its own protected view of itself */
	}
	r = raw_syscall(SYS_execve, (long)path, (long)argv, (long)envp, 0, 0);
	fail(path, -r);
}

/* The entry point: the kernel leaves argc, then argv and envp, at the stack pointer. */
#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n\txor %ebp, %ebp\n\tmov %rsp, %rdi\n"
	"\tand $-16, %rsp\n\tcall moat_launch\n\thlt\n");
#elif defined(__aarch64__)
__asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x0, sp\n\tbl moat_launch\n"
	"\tbrk #0\n");
#endif
