/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a snapshot's guest memory, and the restore's start (vm-snapshot.h).
 *
 * A snapshot VM's RAM is a memfd QEMU maps shared (memory-backend-file on /proc/self/fd/N;
 * QEMU 7.2 has no fd= for it). With the x-ignore-shared capability a migration leaves a
 * shared RAM block out of the stream, so the stream holds the devices and the firmware's
 * ROM only, and moat keeps the RAM itself: at [0, RAM) of the file, its pages of zeros left
 * as holes, and the stream after it. A restore copies the file's data into a new memfd of
 * its own and gives QEMU the rest as the stream.
 *
 * Why not the stream's own RAM: loading it, QEMU reads every page the stream says is zero to
 * see whether it must clear it, and on this project's machines a read fault on fresh
 * anonymous memory allocates a page, so every restore touched all of the guest's memory (a
 * 256 MiB guest restored to 308 MiB resident, in 16-460 ms of faults alone). Why a copy and
 * not the file mapped privately, as Firecracker maps its snapshots: QEMU 7.2 opens a memory
 * file read-write, and a QEMU that could write the cached file would choose the memory of
 * every VM restored after it. A copy also shares no page between two VMs.
 */
#include "vm-snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "utils.h"
#include "vm-launch.h"
#include "vm-qmp.h"

#define PAGE 4096UL

int moat_vm_ram_memfd(uint64_t size, moat_error *err)
{
	_cleanup_close_ int fd = memfd_create("moat-vm-ram", MFD_CLOEXEC);

	if (fd < 0)
		return moat_error_set(err, errno, "microvm: memfd_create for the guest's memory");
	if (ftruncate(fd, (off_t)size) < 0)
		return moat_error_set(err, errno, "microvm: size the guest's memory");
	return TAKE_FD(fd);
}

static bool page_is_zero(const uint8_t *p)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t any = 0;

	for (size_t i = 0; i < PAGE / sizeof(*w); i++)
		any |= w[i];
	return any == 0;
}

static int pwrite_all(int fd, const uint8_t *buf, size_t len, off_t at)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
		at += n;
	}
	return 0;
}

/* The extent of fd's data at or after *at, up to end: [*at, *ret_end); false when none. A
 * file system without SEEK_DATA reports all of it as data. */
static bool next_data(int fd, off_t *at, off_t end, off_t *ret_end)
{
	off_t d = lseek(fd, *at, SEEK_DATA), h;

	if (d < 0 || d >= end)
		return false;
	h = lseek(fd, d, SEEK_HOLE);
	*at = d;
	*ret_end = h < 0 || h > end ? end : h;
	return true;
}

int moat_vm_ram_store(int ram_fd, int file_fd, uint64_t size, moat_error *err)
{
	const uint8_t *ram = mmap(NULL, size, PROT_READ, MAP_SHARED, ram_fd, 0);
	off_t at = 0, end;
	int r = 0;

	if (ram == MAP_FAILED)
		return moat_error_set(err, errno, "microvm: map the guest's memory");
	while (r == 0 && next_data(ram_fd, &at, (off_t)size, &end)) {
		/* runs of pages that are not all zeros, each written at once */
		for (off_t p = at; r == 0 && p < end;) {
			off_t q = p;

			while (q < end && !page_is_zero(ram + q))
				q += (off_t)PAGE;
			if (q > p && pwrite_all(file_fd, ram + p, (size_t)(q - p), p) < 0)
				r = moat_error_set(err, errno, "microvm: write the guest's memory");
			p = q + (off_t)PAGE;
		}
		at = end;
	}
	munmap((void *)ram, size);
	return r;
}

int moat_vm_ram_load(int file_fd, uint64_t size, moat_error *err)
{
	_cleanup_close_ int ram = moat_vm_ram_memfd(size, err);
	off_t at = 0, end;

	if (ram < 0)
		return moat_error_ret(err);
	while (next_data(file_fd, &at, (off_t)size, &end)) {
		if (lseek(ram, at, SEEK_SET) < 0)
			return moat_error_set(err, errno, "microvm: seek in the guest's memory");
		while (at < end) {
			ssize_t n = sendfile(ram, file_fd, &at, (size_t)(end - at));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return moat_error_set(err, n < 0 ? errno : EIO,
						      "microvm: copy the guest's memory from the "
						      "snapshot");
		}
	}
	/* QEMU reads the stream from the fd's offset */
	if (lseek(file_fd, (off_t)size, SEEK_SET) < 0)
		return moat_error_set(err, errno, "microvm: seek to the snapshot's stream");
	return TAKE_FD(ram);
}

int moat_vm_snapshot_ignore_shared(struct moat_qmp *q, moat_error *err)
{
	__attribute__((cleanup(moat_qmp_freep))) yajl_val v = NULL;

	return moat_qmp_execute(q,
				"{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
				"{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
				"\"state\":true}]}}",
				-1, &v, err);
}

int moat_vm_snapshot_incoming(int qmp_fd, uint64_t deadline_ms, moat_error *err)
{
	__attribute__((cleanup(moat_qmp_freep))) yajl_val v = NULL;
	struct moat_qmp q = { .fd = -1 };
	char command[128];
	int r;

	snprintf(command, sizeof(command),
		 "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:%d\"}}",
		 MOAT_VM_QEMU_INCOMING_FD);
	/* q owns qmp_fd from here, whatever the outcome */
	r = moat_qmp_open(&q, qmp_fd, deadline_ms, err);
	if (r == 0)
		r = moat_vm_snapshot_ignore_shared(&q, err);
	if (r == 0)
		r = moat_qmp_execute(&q, command, -1, &v, err);
	moat_qmp_close(&q);
	return r;
}
