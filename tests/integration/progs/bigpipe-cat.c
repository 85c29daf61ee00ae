/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bigpipe-cat FILE [FD]: FILE written to FD (1 unless given) in writes of 256 KiB, after
 * growing FD's pipe to 1 MiB, so the pipe holds more than one frame of output (64 KiB) at
 * once: what made the guest kernel overrun a scatterlist when the agent spliced part of a
 * pipe to its port (microvm.bats, splice-overrun). Exit 2: FD is not a pipe that grows. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[256 << 10];
	int out = argc > 2 ? atoi(argv[2]) : 1, in;
	ssize_t n;

	if (argc < 2 || (in = open(argv[1], O_RDONLY)) < 0) {
		perror("bigpipe-cat: open");
		return 1;
	}
	if (fcntl(out, F_SETPIPE_SZ, 1 << 20) < (1 << 20)) {
		perror("bigpipe-cat: F_SETPIPE_SZ");
		return 2;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));

			if (w <= 0) {
				perror("bigpipe-cat: write");
				return 1;
			}
			done += w;
		}
	return n < 0;
}
