/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fake cgroupfs of the cgroup unit tests (fake-cgroup.h). */
#include "fake-cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "utils.h"

struct fake_cgroup fake;

void fake_cg_begin(const char *tag, const char *root_name)
{
	snprintf(fake.base, sizeof(fake.base), "/tmp/moat-%s-XXXXXX", tag);
	assert_non_null(mkdtemp(fake.base));
	snprintf(fake.root, sizeof(fake.root), "%s/%s", fake.base, root_name);
	snprintf(fake.mountinfo, sizeof(fake.mountinfo), "%s/mountinfo", fake.base);
	assert_int_equal(mkdir(fake.root, 0755), 0);
	fake.mi = fopen(fake.mountinfo, "we");
	assert_non_null(fake.mi);
	fprintf(fake.mi, "20 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n");
	fake_cg_log_reset();
}

void fake_cg_mount(int id, int dev, const char *mnt, const char *fstype, const char *super)
{
	const char *p;

	fprintf(fake.mi, "%d 1 0:%d / ", id, dev);
	for (p = mnt; *p; p++)
		if (*p == ' ' || *p == '\\')
			fprintf(fake.mi, "\\%03o", (unsigned char)*p);
		else
			fputc(*p, fake.mi);
	fprintf(fake.mi, " rw,relatime shared:%d - %s %s rw%s%s\n", id, fstype, fstype,
		*super ? "," : "", super);
}

void fake_cg_done(const struct moat_cgroup_test_hooks *hooks)
{
	assert_int_equal(fclose(fake.mi), 0);
	fake.mi = NULL;
	moat_cgroup_set_fsroot(fake.root);
	moat_cgroup_set_mountinfo(fake.mountinfo);
	moat_cgroup_set_test_hooks(hooks);
}

int fake_cg_teardown(void **state)
{
	moat_error err = MOAT_ERROR_INIT;

	(void)state;
	if (fake.mi != NULL)
		fclose(fake.mi);
	moat_cgroup_set_fsroot(NULL);
	moat_cgroup_set_mountinfo(NULL);
	moat_cgroup_set_test_hooks(NULL);
	if (fake.base[0] != '\0' && remove_tree_at(AT_FDCWD, fake.base, &err) < 0)
		fprintf(stderr, "# cleanup %s: %s\n", fake.base, err.msg);
	moat_error_clear(&err);
	free(fake.log);
	memset(&fake, 0, sizeof(fake));
	return 0;
}

void fake_cg_put(int dirfd, const char *name, const char *content)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

char *fake_cg_get(const char *rel)
{
	char path[PATH_MAX];
	char *text = NULL;
	moat_error err = MOAT_ERROR_INIT;

	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	if (read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL, &err) < 0)
		fail_msg("read %s: %s", rel, err.msg);
	return text;
}

bool fake_cg_exists(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	return access(path, F_OK) == 0;
}

const char *fake_cg_rel(const char *path)
{
	size_t len = strlen(fake.root);

	assert_memory_equal(path, fake.root, len);
	return path[len] == '/' ? path + len + 1 : ".";
}

void fake_cg_log(const char *fmt, ...)
{
	char *line = NULL, *more;
	va_list ap;

	va_start(ap, fmt);
	assert_true(vasprintf(&line, fmt, ap) >= 0);
	va_end(ap);
	more = xasprintf("%s%s\n", fake.log ? fake.log : "", line);
	free(line);
	free(fake.log);
	fake.log = more;
}

void fake_cg_log_reset(void)
{
	free(fake.log);
	fake.log = xstrdup("");
}

void fake_cg_log_write(const char *path, const char *value)
{
	fake_cg_log("%s=%s", fake_cg_rel(path), value);
}

void fake_cg_removing_dir(int dirfd, void *data)
{
	int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	(void)data;
	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (de->d_type != DT_DIR)
			unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}
