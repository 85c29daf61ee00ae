/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fake-vmm: what an attacker would put where the jail looks for QEMU. Run, it records that it
 * ran (and its seccomp state) in /rootfs/fake-vmm-ran, the container's rootfs in the jail,
 * and exits. It must never run. */
#include <stdio.h>
#include <string.h>

int main(void)
{
	FILE *in = fopen("/proc/self/status", "r"), *out = fopen("/rootfs/fake-vmm-ran", "w");
	char line[256];

	if (out == NULL)
		out = stderr;
	fprintf(out, "fake VMM ran\n");
	while (in != NULL && fgets(line, sizeof(line), in) != NULL)
		if (strncmp(line, "Seccomp", 7) == 0)
			fputs(line, out);
	return 1;
}
