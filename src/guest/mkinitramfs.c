/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: write the microVM's initramfs, an uncompressed cpio archive in the
 * kernel's "newc" format, holding the guest agent as /init and the few
 * directories and the console node it needs.
 *
 *   mkinitramfs OUT AGENT_BINARY
 *
 * The archive is reproducible: fixed inode numbers, times and owners. It is
 * written to a temporary file next to OUT and renamed over it.
 *
 * newc: each entry is "070701", then 13 fields of 8 hex digits (inode, mode,
 * uid, gid, nlink, mtime, file size, dev major, dev minor, rdev major, rdev
 * minor, name size with its NUL, checksum 0), the name, padding to 4 bytes,
 * the data, padding to 4 bytes. An entry named TRAILER!!! ends the archive.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The agent is a static binary of about a megabyte; this only stops a
 * wrong argument from producing an archive the kernel cannot unpack. */
#define MAX_AGENT_SIZE (64u << 20)

struct entry {
	const char *name;
	uint32_t mode;
	uint32_t rdev_major, rdev_minor;
	bool is_agent;
};

/* clang-format off */
static const struct entry entries[] = {
	{ "dev", S_IFDIR | 0755, 0, 0, false },
	{ "dev/console", S_IFCHR | 0600, 5, 1, false },
	{ "proc", S_IFDIR | 0555, 0, 0, false },
	{ "sys", S_IFDIR | 0555, 0, 0, false },
	{ "mnt", S_IFDIR | 0755, 0, 0, false },
	{ "rootfs", S_IFDIR | 0755, 0, 0, false },
	{ "init", S_IFREG | 0755, 0, 0, true },
};
/* clang-format on */

static int pad(FILE *f, size_t written)
{
	static const char zeros[4];
	size_t n = (4 - written % 4) % 4;

	return fwrite(zeros, 1, n, f) == n ? 0 : -1;
}

static int write_entry(FILE *f, uint32_t ino, const char *name, uint32_t mode, uint32_t rdev_major,
		       uint32_t rdev_minor, const void *data, uint32_t size)
{
	size_t namesize = strlen(name) + 1;
	int n;

	n = fprintf(f, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08zX%08X", ino, mode, 0u,
		    0u, S_ISDIR(mode) ? 2u : 1u, 0u, size, 0u, 0u, rdev_major, rdev_minor, namesize,
		    0u);
	if (n != 110 || fwrite(name, 1, namesize, f) != namesize || pad(f, 110 + namesize) < 0)
		return -1;
	if (size > 0 && (fwrite(data, 1, size, f) != size || pad(f, size) < 0))
		return -1;
	return 0;
}

static int read_agent(const char *path, char **ret, uint32_t *ret_size)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "mkinitramfs: open %s: %s\n", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > MAX_AGENT_SIZE) {
		fprintf(stderr, "mkinitramfs: %s: not a regular file of 1 byte to %u bytes\n", path,
			MAX_AGENT_SIZE);
		goto fail;
	}
	buf = malloc((size_t)st.st_size);
	if (buf == NULL) {
		fprintf(stderr, "mkinitramfs: out of memory\n");
		goto fail;
	}
	for (off_t got = 0; got < st.st_size;) {
		ssize_t n = read(fd, buf + got, (size_t)(st.st_size - got));

		if (n <= 0) {
			fprintf(stderr, "mkinitramfs: read %s: %s\n", path,
				n < 0 ? strerror(errno) : "file shrank");
			free(buf);
			goto fail;
		}
		got += n;
	}
	close(fd);
	*ret = buf;
	*ret_size = (uint32_t)st.st_size;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int main(int argc, char **argv)
{
	char *agent = NULL, *tmp = NULL;
	bool created = false;
	uint32_t agent_size = 0;
	FILE *f = NULL;
	int fd = -1;

	if (argc != 3) {
		fprintf(stderr, "usage: mkinitramfs OUT AGENT_BINARY\n");
		return 2;
	}
	if (read_agent(argv[2], &agent, &agent_size) < 0)
		return 1;
	if (asprintf(&tmp, "%s.XXXXXX", argv[1]) < 0) {
		tmp = NULL;
		fprintf(stderr, "mkinitramfs: out of memory\n");
		goto fail;
	}
	fd = mkstemp(tmp);
	created = fd >= 0;
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		fprintf(stderr, "mkinitramfs: create a file next to %s: %s\n", argv[1],
			strerror(errno));
		goto fail;
	}
	fd = -1;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		const struct entry *e = &entries[i];

		if (write_entry(f, (uint32_t)i + 1, e->name, e->mode, e->rdev_major, e->rdev_minor,
				e->is_agent ? agent : NULL, e->is_agent ? agent_size : 0) < 0)
			goto write_fail;
	}
	if (write_entry(f, 0, "TRAILER!!!", 0, 0, 0, NULL, 0) < 0)
		goto write_fail;
	if (fchmod(fileno(f), 0644) < 0 || fclose(f) != 0) {
		f = NULL;
		goto write_fail;
	}
	f = NULL;
	if (rename(tmp, argv[1]) < 0) {
		fprintf(stderr, "mkinitramfs: rename to %s: %s\n", argv[1], strerror(errno));
		goto fail;
	}
	free(tmp);
	free(agent);
	return 0;
write_fail:
	fprintf(stderr, "mkinitramfs: write %s: %s\n", tmp, strerror(errno));
fail:
	if (f != NULL)
		fclose(f);
	if (fd >= 0)
		close(fd);
	if (created)
		unlink(tmp);
	free(tmp);
	free(agent);
	return 1;
}
