/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the compiled-filter cache under the state root (seccomp-bpf.c): a profile
 * compiled once is read back the second time (no libseccomp filter behind it, same program,
 * same warnings), a damaged or foreign entry is a miss that gets rewritten, different
 * profiles get different entries, and a program from the cache loads and filters.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "oci-config.h"
#include "syscall-filter.h"
#include "utils.h"

#define PROFILE_A                                                                         \
	"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\", " \
	"\"mkdirat\", \"no_such_call\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 38}]}"
#define PROFILE_B                                                                         \
	"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\", " \
	"\"mkdirat\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}]}"

struct fixture {
	char root[64];
	char cache[96];
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	snprintf(f->root, sizeof(f->root), "/tmp/moat-unit-seccomp-cache.XXXXXX");
	if (mkdtemp(f->root) == NULL)
		return -1;
	snprintf(f->cache, sizeof(f->cache), "%s/" MOAT_SECCOMP_CACHE_DIR, f->root);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	moat_error err = MOAT_ERROR_INIT;

	remove_tree_at(AT_FDCWD, f->root, &err);
	moat_error_clear(&err);
	free(f);
	return 0;
}

static struct oci_seccomp *parse(const char *json)
{
	void *obj = NULL;
	char *msg = NULL;

	if (ocijson_parse_data(&oci_seccomp_type, json, strlen(json), "test", &obj, &msg) != 0)
		fail_msg("parse %s: %s", json, msg);
	return obj;
}

/* prepare_cached of json under root; *ret_warn gets the warnings (or NULL). */
static struct moat_seccomp *prepare(const char *json, const char *root, char **ret_warn)
{
	struct oci_seccomp *s = parse(json);
	moat_error err = MOAT_ERROR_INIT;
	struct moat_seccomp *sc = NULL;

	if (moat_seccomp_prepare_cached(s, root, &sc, &err) < 0)
		fail_msg("prepare: %s", err.msg);
	if (ret_warn != NULL)
		*ret_warn = err.warn ? xstrdup(err.warn) : NULL;
	moat_error_clear(&err);
	ocijson_free(&oci_seccomp_type, s);
	return sc;
}

/* The program, as bytes. */
static char *program(const struct moat_seccomp *sc, size_t *ret_len)
{
	moat_error err = MOAT_ERROR_INIT;
	int fd = memfd_create("bpf", MFD_CLOEXEC);
	char *buf;
	off_t size;

	assert_true(fd >= 0);
	if (moat_seccomp_export(sc, fd, false, &err) < 0)
		fail_msg("export: %s", err.msg);
	size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0);
	buf = xmalloc((size_t)size);
	assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	*ret_len = (size_t)size;
	return buf;
}

/* Whether libseccomp compiled it here: only then is its pseudo code at hand. */
static bool compiled_here(const struct moat_seccomp *sc)
{
	moat_error err = MOAT_ERROR_INIT;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int r = moat_seccomp_export(sc, fd, true, &err);

	close(fd);
	moat_error_clear(&err);
	return r == 0;
}

static size_t entries(const char *dir, char *ret_name, size_t name_size)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (ret_name != NULL)
			snprintf(ret_name, name_size, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	return n;
}

static void test_second_prepare_reads_the_cache(void **state)
{
	struct fixture *f = *state;
	char *w1 = NULL, *w2 = NULL, *p1, *p2;
	size_t l1, l2;
	struct moat_seccomp *a = prepare(PROFILE_A, f->root, &w1);
	struct moat_seccomp *b = prepare(PROFILE_A, f->root, &w2);

	assert_true(compiled_here(a));
	assert_false(compiled_here(b));
	assert_int_equal(entries(f->cache, NULL, 0), 1);
	p1 = program(a, &l1);
	p2 = program(b, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(p1, p2, l1);
	/* the skipped name is reported both times */
	assert_non_null(w1);
	assert_non_null(strstr(w1, "no_such_call"));
	assert_non_null(w2);
	assert_string_equal(w1, w2);
	free(p1);
	free(p2);
	free(w1);
	free(w2);
	moat_seccomp_free(a);
	moat_seccomp_free(b);
}

static void test_other_profile_other_entry(void **state)
{
	struct fixture *f = *state;
	struct moat_seccomp *a = prepare(PROFILE_A, f->root, NULL);
	struct moat_seccomp *b = prepare(PROFILE_B, f->root, NULL);
	char *pa, *pb;
	size_t la, lb;

	assert_true(compiled_here(b));
	assert_int_equal(entries(f->cache, NULL, 0), 2);
	pa = program(a, &la);
	pb = program(b, &lb);
	assert_true(la != lb || memcmp(pa, pb, la) != 0);
	free(pa);
	free(pb);
	moat_seccomp_free(a);
	moat_seccomp_free(b);
}

/* Damage: a flipped byte in the key, a truncated file, a group-writable file. Each is a miss,
 * compiled again and written again (then a hit). */
static void test_damaged_entries_are_misses(void **state)
{
	struct fixture *f = *state;
	struct moat_seccomp *sc = prepare(PROFILE_A, f->root, NULL);
	char path[512];
	struct stat st;
	int fd;
	char c;

	moat_seccomp_free(sc);
	assert_int_equal(entries(f->cache, path, sizeof(path)), 1);
	for (int damage = 0; damage < 3; damage++) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &st), 0);
		if (damage == 0) {
			assert_int_equal(pread(fd, &c, 1, 40), 1);
			c ^= 1;
			assert_int_equal(pwrite(fd, &c, 1, 40), 1);
		} else if (damage == 1) {
			assert_int_equal(ftruncate(fd, st.st_size - 8), 0);
		} else {
			assert_int_equal(fchmod(fd, 0620), 0);
		}
		close(fd);
		sc = prepare(PROFILE_A, f->root, NULL);
		assert_true(compiled_here(sc));
		moat_seccomp_free(sc);
		sc = prepare(PROFILE_A, f->root, NULL);
		assert_false(compiled_here(sc));
		moat_seccomp_free(sc);
	}
}

static void test_no_root_no_cache(void **state)
{
	struct fixture *f = *state;
	struct moat_seccomp *sc = prepare(PROFILE_A, NULL, NULL);

	assert_true(compiled_here(sc));
	assert_int_equal(entries(f->cache, NULL, 0), 0);
	moat_seccomp_free(sc);
}

/* A program from the cache, loaded in a child: mkdir gets the profile's errno. */
static void test_cached_program_filters(void **state)
{
	struct fixture *f = *state;
	struct moat_seccomp *sc;
	char dir[128];
	int status;
	pid_t pid;

	moat_seccomp_free(prepare(PROFILE_A, f->root, NULL));
	sc = prepare(PROFILE_A, f->root, NULL);
	assert_false(compiled_here(sc));
	snprintf(dir, sizeof(dir), "%s/made", f->root);
	pid = fork();
	if (pid == 0) {
		moat_error err = MOAT_ERROR_INIT;
		int fd = -1;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    moat_seccomp_load(sc, &fd, &err) < 0)
			_exit(2);
		_exit(mkdir(dir, 0700) < 0 && errno == ENOSYS ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(access(dir, F_OK), -1);
	moat_seccomp_free(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_second_prepare_reads_the_cache, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_other_profile_other_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_entries_are_misses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_root_no_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cached_program_filters, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
