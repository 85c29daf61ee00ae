/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: re-execute moat from a sealed memfd copy of its own binary, so that
 * no process that enters a container runs from the host file
 * (CVE-2019-5736). See sealed-exe.h. */
#include "sealed-exe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utils.h"

/* Linux 6.3 ABI values; the uapi headers of older kernels lack them. */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* Every seal the copy carries, and the test for "already sealed": no write,
 * no growing, no shrinking (so no truncation), and no changing the seals. */
#define SEALED_EXE_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

#define SELF_EXE "/proc/self/exe"

extern char **environ;

static int open_self_exe(struct stat *ret_st, moat_error *err)
{
	int fd = open(SELF_EXE, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "open '%s'", SELF_EXE);
	if (fstat(fd, ret_st) < 0) {
		moat_error_set(err, errno, "fstat '%s'", SELF_EXE);
		close(fd);
		return moat_error_ret(err);
	}
	return fd;
}

/* 1 when fd is an unlinked regular file carrying every seal moat sets. A
 * file on disk has no seals (F_GET_SEALS fails with EINVAL); a tmpfs file or
 * a memfd made without MFD_ALLOW_SEALING has only F_SEAL_SEAL, so neither
 * can pass, and neither can ever gain the write seals. */
static int fd_is_sealed(int fd, const struct stat *st, moat_error *err)
{
	int seals;

	if (!S_ISREG(st->st_mode) || st->st_nlink != 0)
		return 0;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 && errno == EINVAL)
		return 0;
	if (seals < 0)
		return moat_error_set(err, errno, "fcntl F_GET_SEALS");
	return (seals & SEALED_EXE_SEALS) == SEALED_EXE_SEALS;
}

int moat_self_exe_is_sealed(moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open_self_exe(&st, err);
	if (fd < 0)
		return fd;
	return fd_is_sealed(fd, &st, err);
}

/* An empty memfd that can be sealed and executed. With vm.memfd_noexec = 1
 * a memfd is non-executable unless MFD_EXEC asks otherwise; with 2 an
 * executable one is refused, and moat cannot run sealed. Kernels before 6.3
 * know no MFD_EXEC (EINVAL) and make every memfd executable. */
static int exec_memfd(moat_error *err)
{
	const unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd;

	fd = memfd_create(MOAT_SEALED_EXE_NAME, flags | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create(MOAT_SEALED_EXE_NAME, flags);
	if (fd < 0 && errno == EACCES)
		return moat_error_set(err, errno,
				      "memfd_create MFD_EXEC (vm.memfd_noexec = 2 forbids an "
				      "executable memfd)");
	if (fd < 0)
		return moat_error_set(err, errno, "memfd_create");
	return fd;
}

static int copy_exe(int dst, int src, off_t size, moat_error *err)
{
	off_t off = 0;
	ssize_t n;

	while (off < size) {
		n = sendfile(dst, src, &off, (size_t)(size - off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "copy '%s': sendfile", SELF_EXE);
		if (n == 0)
			return moat_error_msg(err, EIO, "copy '%s': ends at byte %lld of %lld",
					      SELF_EXE, (long long)off, (long long)size);
	}
	return 0;
}

/* The sealed copy of the binary open as src, as a close-on-exec memfd. The
 * seals are checked with the same test the new image applies to itself, so
 * the re-exec cannot repeat. */
static int sealed_copy(int src, const struct stat *src_st, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = exec_memfd(err);
	if (fd < 0)
		return fd;
	if (copy_exe(fd, src, src_st->st_size, err) < 0)
		return moat_error_ret(err);
	if (fcntl(fd, F_ADD_SEALS, SEALED_EXE_SEALS) < 0)
		return moat_error_set(err, errno, "fcntl F_ADD_SEALS on the memfd");
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "fstat the memfd");
	r = fd_is_sealed(fd, &st, err);
	if (r < 0)
		return r;
	if (r == 0)
		return moat_error_msg(err, EPERM, "the memfd lacks a seal after F_ADD_SEALS");
	return TAKE_FD(fd);
}

int moat_exec_sealed_self(char **argv, moat_error *err)
{
	_cleanup_close_ int self = -1, copy = -1;
	struct stat st;
	int r;

	self = open_self_exe(&st, err);
	if (self < 0)
		return moat_error_prefix(err, "run from a sealed copy of moat");
	r = fd_is_sealed(self, &st, err);
	if (r < 0)
		return moat_error_prefix(err, "run from a sealed copy of moat");
	if (r > 0)
		return 0;
	copy = sealed_copy(self, &st, err);
	if (copy < 0)
		return moat_error_prefix(err, "run from a sealed copy of moat");
	execveat(copy, "", argv, environ, AT_EMPTY_PATH);
	return moat_error_set(err, errno, "run from a sealed copy of moat: execveat");
}
