/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the host's TSC rate (vm-tsc.h).
 *
 * Two samples 20 ms apart, each a TSC read between two reads of CLOCK_MONOTONIC_RAW that
 * are at most 5 us apart (a sample the scheduler interrupted is taken again). On this
 * project's machines the two reads are 40-50 ns apart, so the rate is off by about 5e-6 of
 * itself (0.01 MHz at 2 GHz); the bound allows 2.5e-4 (0.5 MHz), the rounding's own step,
 * which only a sample interrupted for less than 5 us comes near.
 */
#include "vm-tsc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

#define SPAN_NS 20000000LL
#define BRACKET_NS 5000LL
#define TRIES 50

static long long raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#if defined(__x86_64__)
static uint64_t tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* A TSC read and the time it was taken at, to within BRACKET_NS. */
static bool sample(uint64_t *ret_tsc, long long *ret_ns)
{
	for (int i = 0; i < TRIES; i++) {
		long long before = raw_ns();
		uint64_t t = tsc();
		long long after = raw_ns();

		if (after - before <= BRACKET_NS) {
			*ret_tsc = t;
			*ret_ns = before + (after - before) / 2;
			return true;
		}
	}
	return false;
}

uint32_t moat_vm_host_tsc_khz(void)
{
	struct timespec pause = { 0, SPAN_NS };
	uint64_t t0, t1;
	long long n0, n1;
	double mhz;

	if (!sample(&t0, &n0))
		return 0;
	nanosleep(&pause, NULL);
	if (!sample(&t1, &n1) || n1 <= n0 || t1 <= t0)
		return 0;
	mhz = (double)(t1 - t0) * 1000.0 / (double)(n1 - n0);
	if (mhz < 100.0 || mhz > 100000.0)
		return 0;
	return (uint32_t)(mhz + 0.5) * 1000;
}
#else
uint32_t moat_vm_host_tsc_khz(void)
{
	(void)raw_ns;
	return 0;
}
#endif

/* ---- the rate measured once per boot ------------------------------------------------------ */

#define CACHE_NAME ".vm-tsc"
#define BOOT_ID_LEN 36

static bool boot_id(char id[BOOT_ID_LEN + 1])
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read_all(fd, id, BOOT_ID_LEN) != BOOT_ID_LEN)
		return false;
	id[BOOT_ID_LEN] = '\0';
	return true;
}

/* The rate the file records for this boot; 0 when it records none, or another boot's. */
static uint32_t cached(int rootfd, const char *id)
{
	_cleanup_close_ int fd = openat(rootfd, CACHE_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[BOOT_ID_LEN + 24], file_id[BOOT_ID_LEN + 1];
	uint32_t khz;
	ssize_t n;

	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%36s %" SCNu32, file_id, &khz) != 2 || strcmp(file_id, id) != 0 ||
	    khz < 100000 || khz > 100000000 || khz % 1000 != 0)
		return 0;
	return khz;
}

/* Write the file whole or not at all (a temporary one renamed over it); failures ignored:
 * the next create measures again. */
static void record(int rootfd, const char *id, uint32_t khz)
{
	char tmp[32], line[BOOT_ID_LEN + 24];
	int fd, len = snprintf(line, sizeof(line), "%s %" PRIu32 "\n", id, khz);

	snprintf(tmp, sizeof(tmp), CACHE_NAME ".%ld", (long)getpid());
	fd = openat(rootfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write_all(fd, line, (size_t)len) != len || close(fd) < 0 ||
	    renameat(rootfd, tmp, rootfd, CACHE_NAME) < 0)
		unlinkat(rootfd, tmp, 0);
}

uint32_t moat_vm_host_tsc_khz_cached(const char *root)
{
	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char id[BOOT_ID_LEN + 1];
	uint32_t khz;

	if (rootfd < 0 || !boot_id(id))
		return moat_vm_host_tsc_khz();
	khz = cached(rootfd, id);
	if (khz != 0)
		return khz;
	khz = moat_vm_host_tsc_khz();
	if (khz != 0)
		record(rootfd, id, khz);
	return khz;
}
