/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for libmoat's pure parts of the filesystem setup: the mount option table (every
 * option maps as the table says, data passes through, last option wins) and path resolution
 * inside a root (safe-path) against a temp tree full of hostile symlinks: absolute links to
 * /etc, "../../.." chains, loops, magic links. Every safe-path test runs twice, with openat2
 * and with the openat fallback forced (MOAT_TEST_FORCE_OPENAT_FALLBACK=1); each resolution
 * either lands inside the root or fails with ELOOP/ENOENT, never outside. Nothing is mounted.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mount-options.h"
#include "safe-path.h"
#include "dlib.h"
#include "strv.h"
#include "utils.h"

/* ---- mount options ------------------------------------------------------------------------ */

#define ATIME MOUNT_ATTR__ATIME

/* One expectation per option name, as the only option given. */
static const struct opt_case {
	const char *name;
	unsigned long ms_set, ms_clear;
	uint64_t attr_set, attr_clr, rec_set, rec_clr;
	unsigned long prop;
	bool prop_rec, bind, rbind, remount, idmap, ridmap, copyup;
	const char *sb; /* the superblock flag name handed to fsconfig */
} opt_cases[] = {
	{ "defaults" },
	{ "ro", MS_RDONLY, 0, MOUNT_ATTR_RDONLY },
	{ "rw", 0, MS_RDONLY, 0, MOUNT_ATTR_RDONLY },
	{ "nosuid", MS_NOSUID, 0, MOUNT_ATTR_NOSUID },
	{ "suid", 0, MS_NOSUID, 0, MOUNT_ATTR_NOSUID },
	{ "nodev", MS_NODEV, 0, MOUNT_ATTR_NODEV },
	{ "dev", 0, MS_NODEV, 0, MOUNT_ATTR_NODEV },
	{ "noexec", MS_NOEXEC, 0, MOUNT_ATTR_NOEXEC },
	{ "exec", 0, MS_NOEXEC, 0, MOUNT_ATTR_NOEXEC },
	{ "nosymfollow", MS_NOSYMFOLLOW, 0, MOUNT_ATTR_NOSYMFOLLOW },
	{ "symfollow", 0, MS_NOSYMFOLLOW, 0, MOUNT_ATTR_NOSYMFOLLOW },
	{ "nodiratime", MS_NODIRATIME, 0, MOUNT_ATTR_NODIRATIME },
	{ "diratime", 0, MS_NODIRATIME, 0, MOUNT_ATTR_NODIRATIME },
	{ "noatime", MS_NOATIME, 0, MOUNT_ATTR_NOATIME, ATIME },
	{ "atime", 0, MS_NOATIME, MOUNT_ATTR_RELATIME, ATIME },
	{ "relatime", MS_RELATIME, 0, MOUNT_ATTR_RELATIME, ATIME },
	{ "norelatime", 0, MS_RELATIME, MOUNT_ATTR_RELATIME, ATIME },
	{ "strictatime", MS_STRICTATIME, 0, MOUNT_ATTR_STRICTATIME, ATIME },
	{ "nostrictatime", 0, MS_STRICTATIME, MOUNT_ATTR_RELATIME, ATIME },
	{ "sync", MS_SYNCHRONOUS, .sb = "sync" },
	{ "async", 0, MS_SYNCHRONOUS, .sb = "async" },
	{ "dirsync", MS_DIRSYNC, .sb = "dirsync" },
	{ "mand", MS_MANDLOCK, .sb = "mand" },
	{ "nomand", 0, MS_MANDLOCK, .sb = "nomand" },
	{ "lazytime", MS_LAZYTIME, .sb = "lazytime" },
	{ "nolazytime", 0, MS_LAZYTIME, .sb = "nolazytime" },
	{ "iversion", MS_I_VERSION, .sb = "iversion" },
	{ "noiversion", 0, MS_I_VERSION, .sb = "noiversion" },
	{ "silent" },
	{ "loud" },
	{ "remount", .remount = true },
	{ "bind", .bind = true },
	{ "rbind", .bind = true, .rbind = true },
	{ "private", .prop = MS_PRIVATE },
	{ "rprivate", .prop = MS_PRIVATE, .prop_rec = true },
	{ "shared", .prop = MS_SHARED },
	{ "rshared", .prop = MS_SHARED, .prop_rec = true },
	{ "slave", .prop = MS_SLAVE },
	{ "rslave", .prop = MS_SLAVE, .prop_rec = true },
	{ "unbindable", .prop = MS_UNBINDABLE },
	{ "runbindable", .prop = MS_UNBINDABLE, .prop_rec = true },
	{ "rro", .rec_set = MOUNT_ATTR_RDONLY },
	{ "rrw", .rec_clr = MOUNT_ATTR_RDONLY },
	{ "rnosuid", .rec_set = MOUNT_ATTR_NOSUID },
	{ "rsuid", .rec_clr = MOUNT_ATTR_NOSUID },
	{ "rnodev", .rec_set = MOUNT_ATTR_NODEV },
	{ "rdev", .rec_clr = MOUNT_ATTR_NODEV },
	{ "rnoexec", .rec_set = MOUNT_ATTR_NOEXEC },
	{ "rexec", .rec_clr = MOUNT_ATTR_NOEXEC },
	{ "rnosymfollow", .rec_set = MOUNT_ATTR_NOSYMFOLLOW },
	{ "rsymfollow", .rec_clr = MOUNT_ATTR_NOSYMFOLLOW },
	{ "rnodiratime", .rec_set = MOUNT_ATTR_NODIRATIME },
	{ "rdiratime", .rec_clr = MOUNT_ATTR_NODIRATIME },
	{ "rnoatime", .rec_set = MOUNT_ATTR_NOATIME, .rec_clr = ATIME },
	{ "ratime", .rec_set = MOUNT_ATTR_RELATIME, .rec_clr = ATIME },
	{ "rrelatime", .rec_set = MOUNT_ATTR_RELATIME, .rec_clr = ATIME },
	{ "rnorelatime", .rec_set = MOUNT_ATTR_RELATIME, .rec_clr = ATIME },
	{ "rstrictatime", .rec_set = MOUNT_ATTR_STRICTATIME, .rec_clr = ATIME },
	{ "rnostrictatime", .rec_set = MOUNT_ATTR_RELATIME, .rec_clr = ATIME },
	{ "idmap", .idmap = true },
	{ "ridmap", .idmap = true, .ridmap = true },
	{ "tmpcopyup", .copyup = true },
};

static struct moat_mount_opts parse_ok(char **opts, size_t n)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_mount_opts o;

	if (moat_mount_opts_parse(opts, n, &o, &err) < 0)
		fail_msg("parse: %s", err.msg);
	return o;
}

static void check_case(const struct opt_case *c)
{
	char *opts[] = { (char *)c->name };
	struct moat_mount_opts o = parse_ok(opts, 1);

	assert_true(moat_mount_opt_known(c->name));
	assert_int_equal(o.ms_set, c->ms_set);
	assert_int_equal(o.ms_clear, c->ms_clear);
	assert_int_equal(o.attr_set, c->attr_set);
	assert_int_equal(o.attr_clr, c->attr_clr);
	assert_int_equal(o.rec_attr_set, c->rec_set);
	assert_int_equal(o.rec_attr_clr, c->rec_clr);
	assert_int_equal(o.propagation, c->prop);
	assert_int_equal(o.propagation_rec, c->prop_rec);
	assert_int_equal(o.is_bind, c->bind);
	assert_int_equal(o.is_recursive, c->rbind);
	assert_int_equal(o.remount, c->remount);
	assert_int_equal(o.idmap, c->idmap);
	assert_int_equal(o.idmap_recursive, c->ridmap);
	assert_int_equal(o.tmpcopyup, c->copyup);
	assert_int_equal(o.silent, strcmp(c->name, "silent") == 0);
	assert_int_equal(o.data_len, 0);
	assert_null(o.data_str);
	if (c->sb != NULL) {
		assert_int_equal(o.sb_flags_len, 1);
		assert_string_equal(o.sb_flags[0], c->sb);
	} else {
		assert_int_equal(o.sb_flags_len, 0);
	}
	moat_mount_opts_release(&o);
}

static void test_opts_each_option(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < MOAT_ARRAY_SIZE(opt_cases); i++)
		check_case(&opt_cases[i]);
}

/* The cases above and the table list the same names: nothing untested, nothing missing. */
static void test_opts_table_complete(void **state)
{
	const char *const *names = moat_mount_opt_names();
	size_t n = 0, i, j;

	(void)state;
	for (; names[n] != NULL; n++) {
		for (j = 0; j < MOAT_ARRAY_SIZE(opt_cases); j++)
			if (strcmp(names[n], opt_cases[j].name) == 0)
				break;
		if (j == MOAT_ARRAY_SIZE(opt_cases))
			fail_msg("option '%s' has no test case", names[n]);
	}
	assert_int_equal(n, MOAT_ARRAY_SIZE(opt_cases));
	for (i = 0; i < MOAT_ARRAY_SIZE(opt_cases); i++)
		for (j = i + 1; j < MOAT_ARRAY_SIZE(opt_cases); j++)
			assert_string_not_equal(opt_cases[i].name, opt_cases[j].name);
}

static void test_opts_data_passthrough(void **state)
{
	char *opts[] = { "nosuid",          "size=64m", "mode=1777", "newinstance",
			 "x-no=such,thing", "ro",       "uid=0" };
	struct moat_mount_opts o = parse_ok(opts, MOAT_ARRAY_SIZE(opts));

	(void)state;
	assert_int_equal(o.ms_set, MS_NOSUID | MS_RDONLY);
	assert_int_equal(o.data_len, 5);
	assert_string_equal(o.data[0], "size=64m");
	assert_string_equal(o.data[3], "x-no=such,thing");
	assert_null(o.data[5]);
	assert_string_equal(o.data_str, "size=64m,mode=1777,newinstance,x-no=such,thing,uid=0");
	assert_string_equal(moat_mount_opts_get_data(&o, "size"), "64m");
	assert_string_equal(moat_mount_opts_get_data(&o, "newinstance"), "");
	assert_null(moat_mount_opts_get_data(&o, "mod"));
	assert_int_equal(moat_mount_opts_drop_data(&o, "mode"), 1);
	assert_int_equal(moat_mount_opts_drop_data(&o, "mode"), 0);
	assert_string_equal(o.data_str, "size=64m,newinstance,x-no=such,thing,uid=0");
	assert_int_equal(moat_mount_opts_drop_data(&o, "size"), 1);
	assert_int_equal(moat_mount_opts_drop_data(&o, "newinstance"), 1);
	assert_int_equal(moat_mount_opts_drop_data(&o, "x-no"), 1);
	assert_int_equal(moat_mount_opts_drop_data(&o, "uid"), 1);
	assert_int_equal(o.data_len, 0);
	assert_null(o.data_str);
	moat_mount_opts_add_data(&o, "mode=0750");
	moat_mount_opts_add_data(&o, "nr_inodes=16384");
	assert_int_equal(o.data_len, 2);
	assert_null(o.data[2]);
	assert_string_equal(o.data_str, "mode=0750,nr_inodes=16384");
	assert_string_equal(moat_mount_opts_get_data(&o, "mode"), "0750");
	moat_mount_opts_release(&o);
}

static void test_opts_last_wins(void **state)
{
	char *a[] = { "ro", "nosuid", "rw", "suid", "nosuid" };
	char *b[] = { "noatime", "strictatime" };
	char *c[] = { "rro", "rrw", "rprivate", "slave", "bind", "rbind", "bind" };
	struct moat_mount_opts o;

	(void)state;
	o = parse_ok(a, MOAT_ARRAY_SIZE(a));
	assert_int_equal(o.ms_set, MS_NOSUID);
	assert_int_equal(o.ms_clear, MS_RDONLY);
	assert_int_equal(o.attr_set, MOUNT_ATTR_NOSUID);
	assert_int_equal(o.attr_clr, MOUNT_ATTR_RDONLY);
	moat_mount_opts_release(&o);
	o = parse_ok(b, MOAT_ARRAY_SIZE(b));
	assert_int_equal(o.attr_set, MOUNT_ATTR_STRICTATIME);
	assert_int_equal(o.attr_clr, MOUNT_ATTR__ATIME);
	moat_mount_opts_release(&o);
	o = parse_ok(c, MOAT_ARRAY_SIZE(c));
	assert_int_equal(o.rec_attr_set, 0);
	assert_int_equal(o.rec_attr_clr, MOUNT_ATTR_RDONLY);
	assert_int_equal(o.propagation, MS_SLAVE);
	assert_false(o.propagation_rec);
	assert_true(o.is_bind);
	assert_true(o.is_recursive); /* rbind anywhere makes the bind recursive */
	moat_mount_opts_release(&o);
}

static void test_opts_errors(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	char *empty[] = { "ro", "" };
	struct moat_mount_opts o;

	(void)state;
	assert_int_equal(moat_mount_opts_parse(empty, 2, &o, &err), -EINVAL);
	assert_string_equal(err.msg, "options[1]: empty option");
	moat_error_clear(&err);
	assert_int_equal(moat_mount_opts_parse(NULL, 0, &o, &err), 0);
	assert_int_equal(o.ms_set | o.ms_clear | o.attr_set | o.attr_clr, 0);
	moat_mount_opts_release(&o);
	assert_false(moat_mount_opt_known("size=1m"));
	assert_false(moat_mount_opt_known("RO"));
}

/* ---- errors ------------------------------------------------------------------------------- */

/* moat_error_msg appends no strerror and returns -errnum; dropping an error recovered from
 * keeps the warnings gathered before it (exec's seccomp cache warning, say), clearing frees
 * them too. */
static void test_error_drop_keeps_warnings(void **state)
{
	moat_error err = MOAT_ERROR_INIT;

	(void)state;
	assert_int_equal(moat_error_msg(&err, ENOENT, "x: %s", "gone"), -ENOENT);
	assert_string_equal(err.msg, "x: gone");
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(moat_error_msg(&err, 0, "no code"), -EINVAL);
	assert_int_equal(err.code, EINVAL);
	assert_int_equal(moat_error_set(&err, EACCES, "open '%s'", "/y"), -EACCES);
	assert_string_equal(err.msg, "open '/y': Permission denied");
	moat_error_warn(&err, "cache: %s", "stale");
	moat_error_drop(&err);
	assert_null(err.msg);
	assert_int_equal(err.code, 0);
	assert_string_equal(err.warn, "cache: stale");
	moat_error_warn(&err, "second");
	assert_string_equal(err.warn, "cache: stale; second");
	moat_error_clear(&err);
	assert_null(err.warn);
	assert_null(err.msg);
	moat_error_drop(NULL);
}

/* ---- strv --------------------------------------------------------------------------------- */

static void test_strv(void **state)
{
	const char *const src[] = { "a", "bc" };
	char **v = strv_copy(src, 2), **e = strv_copy(NULL, 0), **p = NULL;
	size_t n = 0;

	(void)state;
	assert_string_equal(v[0], "a");
	assert_string_equal(v[1], "bc");
	assert_null(v[2]);
	assert_ptr_not_equal(v[0], src[0]);
	assert_non_null(e);
	assert_null(e[0]);
	strv_push(&p, &n, "x");
	strv_push(&p, &n, "y");
	assert_int_equal(n, 2);
	assert_string_equal(p[0], "x");
	assert_string_equal(p[1], "y");
	assert_null(p[2]);
	strv_free(v);
	strv_free(e);
	strv_free_n(p, n);
	strv_free(NULL);
	strv_free_n(NULL, 3);
}

/* ---- safe-path ------------------------------------------------------------------------------ */

/* The hostile tree, relative to a fresh temp root. Link targets never leave the root when
 * resolved as if the root were "/"; resolved naively, most of them reach the host. */
static const struct {
	const char *path;
	const char *link; /* NULL: a directory (trailing '/') or a file */
} tree[] = {
	{ "etc/", NULL },
	{ "etc/passwd", NULL },
	{ "a/b/c/", NULL },
	{ "file", NULL },
	{ "abs", "/etc" },
	{ "abs_passwd", "/etc/passwd" },
	{ "a/b/abs_deep", "/etc/passwd" },
	{ "a/b/abs_dir", "/a" },
	{ "dotdot", "../../../../../../../../etc" },
	{ "a/b/c/up", "../../../../../../.." },
	{ "a/b/c/up_passwd", "../../../../../../../etc/passwd" },
	{ "a/rel", "b/c" },
	{ "loop1", "loop2" },
	{ "loop2", "loop1" },
	{ "self", "self" },
	{ "dangling", "/nowhere/file" },
	{ "dangling_file", "/created_by_link" },
	{ "dangling_dir", "/made/here" },
	{ "proc_root", "/proc/self/root" },
	{ "via_file", "file/x" },
	{ "empty_dots", "./././etc/../etc/./passwd" },
};

struct sp_state {
	bool fallback;
	char dir[64];
	int rootfd;
};

static struct sp_state with_openat2 = { .fallback = false };
static struct sp_state with_fallback = { .fallback = true };

static void make_entry(int rootfd, const char *path, const char *link)
{
	size_t len = strlen(path);

	if (link != NULL) {
		assert_int_equal(symlinkat(link, rootfd, path), 0);
	} else if (path[len - 1] == '/') {
		char buf[PATH_MAX];
		char *p;

		snprintf(buf, sizeof(buf), "%s", path);
		for (p = strchr(buf, '/'); p != NULL; p = strchr(p + 1, '/')) {
			*p = '\0';
			if (mkdirat(rootfd, buf, 0755) < 0)
				assert_int_equal(errno, EEXIST);
			*p = '/';
		}
	} else {
		int fd = openat(rootfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

		assert_true(fd >= 0);
		close(fd);
	}
}

static int sp_setup(void **state)
{
	struct sp_state *s = *state;
	size_t i;

	snprintf(s->dir, sizeof(s->dir), "/tmp/moat-test-lib.XXXXXX");
	if (mkdtemp(s->dir) == NULL)
		return -1;
	s->rootfd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->rootfd < 0)
		return -1;
	for (i = 0; i < MOAT_ARRAY_SIZE(tree); i++)
		make_entry(s->rootfd, tree[i].path, tree[i].link);
	if (s->fallback)
		setenv("MOAT_TEST_FORCE_OPENAT_FALLBACK", "1", 1);
	else
		unsetenv("MOAT_TEST_FORCE_OPENAT_FALLBACK");
	return 0;
}

static int sp_teardown(void **state)
{
	struct sp_state *s = *state;

	unsetenv("MOAT_TEST_FORCE_OPENAT_FALLBACK");
	close(s->rootfd);
	return remove_tree_at(AT_FDCWD, s->dir, NULL);
}

/* Open path in the root; returns the fd or -errno. */
static int sp_open(struct sp_state *s, const char *path, int flags, unsigned resolve)
{
	moat_error err = MOAT_ERROR_INIT;
	int fd = -1, r;

	r = moat_safe_open(s->rootfd, path, flags, 0644, resolve, &fd, &err);
	if (r < 0) {
		assert_non_null(err.msg);
		assert_int_equal(err.code, -r);
		moat_error_clear(&err);
		return r;
	}
	return fd;
}

/* fd is the root's rel (same inode), not anything else with that name. */
static void assert_is(struct sp_state *s, int fd, const char *rel)
{
	struct stat a, b;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	if (rel[0] == '\0')
		assert_int_equal(fstat(s->rootfd, &b), 0);
	else
		assert_int_equal(fstatat(s->rootfd, rel, &b, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(a.st_dev, b.st_dev);
	assert_int_equal(a.st_ino, b.st_ino);
	close(fd);
}

static void test_sp_mode(void **state)
{
	struct sp_state *s = *state;

	assert_int_equal(moat_safe_path_fallback(), s->fallback);
}

static void test_sp_plain(void **state)
{
	struct sp_state *s = *state;

	assert_is(s, sp_open(s, "/etc/passwd", O_PATH, 0), "etc/passwd");
	assert_is(s, sp_open(s, "etc/passwd", O_RDONLY, 0), "etc/passwd");
	assert_is(s, sp_open(s, "/", O_PATH | O_DIRECTORY, 0), "");
	assert_is(s, sp_open(s, "//a//b/./c/", O_PATH, 0), "a/b/c");
	assert_is(s, sp_open(s, "a/rel", O_PATH | O_DIRECTORY, 0), "a/b/c");
	assert_is(s, sp_open(s, "empty_dots", O_RDONLY, 0), "etc/passwd");
	assert_int_equal(sp_open(s, "nothing", O_PATH, 0), -ENOENT);
	assert_int_equal(sp_open(s, "", O_PATH, 0), -ENOENT);
}

/* An absolute symlink to /etc is the root's etc, never the host's. */
static void test_sp_absolute_links(void **state)
{
	struct sp_state *s = *state;

	assert_is(s, sp_open(s, "abs", O_PATH | O_DIRECTORY, 0), "etc");
	assert_is(s, sp_open(s, "abs/passwd", O_RDONLY, 0), "etc/passwd");
	assert_is(s, sp_open(s, "abs_passwd", O_RDONLY, 0), "etc/passwd");
	assert_is(s, sp_open(s, "/abs/../abs/passwd", O_PATH, 0), "etc/passwd");
	assert_is(s, sp_open(s, "a/b/abs_deep", O_RDONLY, 0), "etc/passwd");
	assert_is(s, sp_open(s, "a/b/abs_dir/b/abs_dir/b/c", O_PATH, 0), "a/b/c");
}

/* ".." never climbs above the root, in the path or in a link. */
static void test_sp_dotdot(void **state)
{
	struct sp_state *s = *state;

	assert_is(s, sp_open(s, "../../../../etc/passwd", O_PATH, 0), "etc/passwd");
	assert_is(s, sp_open(s, "/..", O_PATH, 0), "");
	assert_is(s, sp_open(s, "dotdot", O_PATH, 0), "etc");
	assert_is(s, sp_open(s, "dotdot/passwd", O_PATH, 0), "etc/passwd");
	assert_is(s, sp_open(s, "a/b/c/up", O_PATH, 0), "");
	assert_is(s, sp_open(s, "a/b/c/up/etc/passwd", O_PATH, 0), "etc/passwd");
	assert_is(s, sp_open(s, "a/b/c/up_passwd", O_RDONLY, 0), "etc/passwd");
	assert_is(s, sp_open(s, "a/b/c/../../../../a", O_PATH, 0), "a");
}

static void test_sp_loops(void **state)
{
	struct sp_state *s = *state;

	assert_int_equal(sp_open(s, "loop1", O_PATH, 0), -ELOOP);
	assert_int_equal(sp_open(s, "loop2/x", O_PATH, 0), -ELOOP);
	assert_int_equal(sp_open(s, "self", O_RDONLY, 0), -ELOOP);
	assert_int_equal(sp_open(s, "self", O_CREAT | O_WRONLY, 0), -ELOOP);
}

/* A chain of n links, link0 -> link1 -> ... -> etc/passwd; the kernel's limit is 40. */
static void test_sp_link_chain(void **state)
{
	struct sp_state *s = *state;
	char name[32], target[32];
	int i;

	for (i = 0; i < MOAT_MAXSYMLINKS + 1; i++) {
		snprintf(name, sizeof(name), "chain%d", i);
		if (i == MOAT_MAXSYMLINKS)
			snprintf(target, sizeof(target), "/etc/passwd");
		else
			snprintf(target, sizeof(target), "chain%d", i + 1);
		assert_int_equal(symlinkat(target, s->rootfd, name), 0);
	}
	assert_is(s, sp_open(s, "chain1", O_PATH, 0), "etc/passwd");
	assert_int_equal(sp_open(s, "chain0", O_PATH, 0), -ELOOP);
	for (i = 0; i < MOAT_MAXSYMLINKS + 1; i++) {
		snprintf(name, sizeof(name), "chain%d", i);
		assert_int_equal(unlinkat(s->rootfd, name, 0), 0);
	}
}

/* /proc/self/root inside the root is an ordinary missing path; from the real "/", the magic
 * link is refused. */
static void test_sp_magic_links(void **state)
{
	struct sp_state *s = *state;
	struct sp_state host = *s;

	assert_int_equal(sp_open(s, "proc_root/etc", O_PATH, 0), -ENOENT);
	host.rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(host.rootfd >= 0);
	assert_int_equal(sp_open(&host, "/proc/self/root/etc", O_PATH, 0), -ELOOP);
	assert_int_equal(sp_open(&host, "/proc/self/cwd", O_PATH, 0), -ELOOP);
	close(host.rootfd);
}

static void test_sp_no_symlinks(void **state)
{
	struct sp_state *s = *state;

	assert_is(s, sp_open(s, "etc/passwd", O_PATH, MOAT_RESOLVE_NO_SYMLINKS), "etc/passwd");
	assert_int_equal(sp_open(s, "abs/passwd", O_PATH, MOAT_RESOLVE_NO_SYMLINKS), -ELOOP);
	assert_int_equal(sp_open(s, "a/rel", O_PATH, MOAT_RESOLVE_NO_SYMLINKS), -ELOOP);
}

static void test_sp_last_component(void **state)
{
	struct sp_state *s = *state;
	struct stat st;
	int fd;

	/* O_NOFOLLOW|O_PATH opens the link itself */
	fd = sp_open(s, "abs", O_PATH | O_NOFOLLOW, 0);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	close(fd);
	assert_int_equal(sp_open(s, "abs_passwd", O_RDONLY | O_NOFOLLOW, 0), -ELOOP);
	assert_int_equal(sp_open(s, "abs_passwd", O_CREAT | O_EXCL | O_WRONLY, 0), -EEXIST);
	assert_int_equal(sp_open(s, "file/", O_PATH, 0), -ENOTDIR);
	assert_int_equal(sp_open(s, "via_file", O_PATH, 0), -ENOTDIR);
	assert_int_equal(sp_open(s, "etc/passwd/x", O_PATH, 0), -ENOTDIR);
	assert_int_equal(sp_open(s, "abs", O_PATH | O_DIRECTORY | O_NOFOLLOW, 0), -ENOTDIR);
}

/* O_CREAT through a dangling absolute link creates the target inside the root. */
static void test_sp_create(void **state)
{
	struct sp_state *s = *state;
	struct stat st;

	assert_int_equal(stat("/created_by_link", &st), -1);
	assert_is(s, sp_open(s, "dangling_file", O_CREAT | O_WRONLY, 0), "created_by_link");
	assert_int_equal(stat("/created_by_link", &st), -1);
	assert_int_equal(sp_open(s, "dangling", O_CREAT | O_WRONLY, 0), -ENOENT);
	assert_is(s, sp_open(s, "/abs/newfile", O_CREAT | O_EXCL | O_WRONLY, 0), "etc/newfile");
	assert_int_equal(sp_open(s, "/abs/newfile", O_CREAT | O_EXCL | O_WRONLY, 0), -EEXIST);
	assert_int_equal(unlinkat(s->rootfd, "etc/newfile", 0), 0);
	assert_int_equal(unlinkat(s->rootfd, "created_by_link", 0), 0);
}

static void test_sp_mkdir_p(void **state)
{
	struct sp_state *s = *state;
	moat_error err = MOAT_ERROR_INIT;
	struct stat st;
	int fd = -1;

	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "/abs/x/y", 0755, &fd, &err), 0);
	assert_is(s, fd, "etc/x/y");
	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "dotdot/../../../z", 0755, &fd, &err), 0);
	assert_is(s, fd, "z");
	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "a/b/c/up/w/v", 0755, &fd, &err), 0);
	assert_is(s, fd, "w/v");
	/* a dangling link gets its target made, inside the root */
	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "dangling_dir/sub", 0755, &fd, &err), 0);
	assert_is(s, fd, "made/here/sub");
	assert_int_equal(stat("/made", &st), -1);
	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "/abs/x/y", 0755, &fd, &err), 0);
	assert_is(s, fd, "etc/x/y");
	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "file/x", 0755, &fd, &err), -ENOTDIR);
	moat_error_clear(&err);
	assert_int_equal(moat_safe_mkdir_p(s->rootfd, "loop1/x", 0755, &fd, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "create directory 'loop1/x' in the container root"));
	moat_error_clear(&err);
	assert_int_equal(remove_tree_at(s->rootfd, "made", NULL), 0);
	assert_int_equal(remove_tree_at(s->rootfd, "w", NULL), 0);
	assert_int_equal(remove_tree_at(s->rootfd, "z", NULL), 0);
	assert_int_equal(remove_tree_at(s->rootfd, "etc/x", NULL), 0);
}

static void test_sp_mkfile(void **state)
{
	struct sp_state *s = *state;
	moat_error err = MOAT_ERROR_INIT;
	struct stat st;
	int fd = -1;
	char *name = NULL;

	assert_int_equal(moat_safe_mkfile(s->rootfd, "abs/mnt/target", 0644, &fd, &err), 0);
	assert_is(s, fd, "etc/mnt/target");
	assert_int_equal(fstatat(s->rootfd, "etc/mnt/target", &st, 0), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(moat_safe_mkfile(s->rootfd, "a/b", 0644, &fd, &err), 0);
	assert_is(s, fd, "a/b"); /* an existing directory is left as it is */
	assert_int_equal(moat_safe_mkfile(s->rootfd, "dangling_file", 0644, &fd, &err), 0);
	assert_is(s, fd, "created_by_link");
	assert_int_equal(stat("/created_by_link", &st), -1);
	/* a dangling link whose directory is missing too: both made, inside the root */
	assert_int_equal(moat_safe_mkfile(s->rootfd, "dangling", 0644, &fd, &err), 0);
	assert_is(s, fd, "nowhere/file");
	assert_int_equal(stat("/nowhere", &st), -1);
	assert_int_equal(moat_safe_mkfile(s->rootfd, "loop1", 0644, &fd, &err), -ELOOP);
	moat_error_clear(&err);
	assert_int_equal(moat_safe_mkfile(s->rootfd, "a/..", 0644, &fd, &err), 0);
	assert_is(s, fd, "");
	assert_int_equal(moat_safe_mkfile(s->rootfd, "new/", 0644, &fd, &err), -EISDIR);
	moat_error_clear(&err);
	assert_int_equal(moat_safe_open_parent(s->rootfd, "abs/mnt/x", &fd, &name, &err), 0);
	assert_string_equal(name, "x");
	assert_is(s, fd, "etc/mnt");
	free(name);
	assert_int_equal(moat_safe_open_parent(s->rootfd, "abs/..", &fd, &name, &err), -EISDIR);
	moat_error_clear(&err);
	assert_int_equal(unlinkat(s->rootfd, "created_by_link", 0), 0);
	assert_int_equal(remove_tree_at(s->rootfd, "nowhere", NULL), 0);
	assert_int_equal(remove_tree_at(s->rootfd, "etc/mnt", NULL), 0);
}

static void test_fd_check_fs(void **state)
{
	moat_error err = MOAT_ERROR_INIT;
	int fd = open("/proc/self", O_PATH | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(moat_fd_check_fs(fd, 0x9fa0, "/proc", "procfs", &err), 0);
	assert_int_equal(moat_fd_check_fs(fd, 0x01021994, "/proc", "tmpfs", &err), -EXDEV);
	assert_non_null(strstr(err.msg, "'/proc' is not tmpfs"));
	moat_error_clear(&err);
	close(fd);
}

/* Each safe-path test twice: with openat2, and with the openat fallback forced. */
/* clang-format off */
#define SP_TEST(f) \
	{ #f " (openat2)", f, sp_setup, sp_teardown, &with_openat2 }, \
	{ #f " (fallback)", f, sp_setup, sp_teardown, &with_fallback }
/* clang-format on */

/* dlib: a library loaded on first use; a missing library or symbol is one error naming it */
static int (*sym_fake_abs)(int);
static size_t (*sym_fake_strlen)(const char *);
static void *sym_fake_missing;

static void test_dlib(void **state)
{
	const struct moat_dlib_sym good[] = { { "abs", (void **)&sym_fake_abs },
					      { "strlen", (void **)&sym_fake_strlen },
					      { NULL, NULL } };
	const struct moat_dlib_sym bad[] = { { "abs", (void **)&sym_fake_abs },
					     { "moat_no_such_symbol", &sym_fake_missing },
					     { NULL, NULL } };
	struct moat_dlib libc = { "libc.so.6", "libc6", good, NULL };
	struct moat_dlib no_sym = { "libc.so.6", "libc6", bad, NULL };
	struct moat_dlib no_lib = { "libmoat-none.so.7", "moat-none", good, NULL };
	moat_error err = MOAT_ERROR_INIT;

	(void)state;
	assert_int_equal(moat_dlib_load(&libc, &err), 0);
	assert_int_equal(sym_fake_abs(-3), 3);
	assert_int_equal(sym_fake_strlen("four"), 4);
	assert_int_equal(moat_dlib_load(&libc, &err), 0); /* once */

	sym_fake_abs = NULL;
	assert_true(moat_dlib_load(&no_sym, &err) < 0);
	assert_string_equal(err.msg, "load libc.so.6: it has no symbol moat_no_such_symbol");
	assert_null(sym_fake_abs); /* nothing resolved when one is missing */
	assert_null(no_sym.handle);
	moat_error_clear(&err);

	assert_true(moat_dlib_load(&no_lib, &err) < 0);
	assert_non_null(strstr(err.msg, "load libmoat-none.so.7 (Debian package moat-none): "));
	moat_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_each_option),
		cmocka_unit_test(test_opts_table_complete),
		cmocka_unit_test(test_opts_data_passthrough),
		cmocka_unit_test(test_opts_last_wins),
		cmocka_unit_test(test_opts_errors),
		cmocka_unit_test(test_error_drop_keeps_warnings),
		cmocka_unit_test(test_strv),
		cmocka_unit_test(test_dlib),
		SP_TEST(test_sp_mode),
		SP_TEST(test_sp_plain),
		SP_TEST(test_sp_absolute_links),
		SP_TEST(test_sp_dotdot),
		SP_TEST(test_sp_loops),
		SP_TEST(test_sp_link_chain),
		SP_TEST(test_sp_magic_links),
		SP_TEST(test_sp_no_symlinks),
		SP_TEST(test_sp_last_component),
		SP_TEST(test_sp_create),
		SP_TEST(test_sp_mkdir_p),
		SP_TEST(test_sp_mkfile),
		cmocka_unit_test(test_fd_check_fs),
	};

	return cmocka_run_group_tests_name("lib", tests, NULL, NULL);
}
