/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rename-swap DIR A B: exchange the names A and B in DIR (renameat2 RENAME_EXCHANGE) over
 * and over, until killed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int dir;

	if (argc != 4 || (dir = open(argv[1], O_PATH | O_DIRECTORY)) < 0)
		return 2;
	for (;;)
		if (syscall(SYS_renameat2, dir, argv[2], dir, argv[3], 2 /* RENAME_EXCHANGE */) <
		    0) {
			perror("renameat2");
			return 1;
		}
}
