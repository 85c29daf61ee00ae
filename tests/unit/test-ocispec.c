/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for libocispec: parsing, validation errors with their JSON paths, limits,
 * and parse -> generate -> parse identity on every valid fixture.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "oci-config.h"
#include "oci-features.h"
#include "oci-state.h"
#include "ocijson.h"

#ifndef FIXTURES
#error "FIXTURES must be defined to the fixtures directory"
#endif

static void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

static char *fixture(const char *name)
{
	char *path = NULL;

	assert_true(asprintf(&path, "%s/%s", FIXTURES, name) > 0);
	return path;
}

/* JSON written with single quotes in the tests; converted to double quotes. */
static char *dq(const char *s)
{
	char *out = strdup(s);

	assert_non_null(out);
	for (char *p = out; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return out;
}

static struct oci_config *parse_ok(const char *json)
{
	_cleanup_free_ char *data = dq(json);
	struct oci_config *cfg = NULL;
	char *err = NULL;

	int r = oci_config_parse_data(data, strlen(data), "config.json", &cfg, &err);
	if (r != 0)
		fail_msg("unexpected error: %s", err);
	assert_null(err);
	return cfg;
}

/* Generates cfg compactly, and checks that parsing the output and generating again
 * gives the same text: the struct survived the round trip. Returns the JSON. */
static char *generate_stable(const struct ocijson_type *type, const void *obj)
{
	char *json = NULL, *json2 = NULL, *err = NULL;
	void *again = NULL;
	size_t len = 0;

	if (ocijson_generate(type, obj, false, &json, &len, &err) != 0)
		fail_msg("generate: %s", err);
	assert_int_equal(strlen(json), len);
	if (ocijson_parse_data(type, json, len, "generated", &again, &err) != 0)
		fail_msg("reparse: %s", err);
	if (ocijson_generate(type, again, false, &json2, NULL, &err) != 0)
		fail_msg("generate again: %s", err);
	assert_string_equal(json, json2);
	free(json2);
	ocijson_free(type, again);
	return json;
}

/* parse file -> generate (compact and pretty) -> parse -> generate: all texts agree */
static void check_fixture_roundtrip(const struct ocijson_type *type, const char *name)
{
	_cleanup_free_ char *path = fixture(name);
	_cleanup_free_ char *pretty = NULL;
	void *obj = NULL, *from_pretty = NULL;
	char *err = NULL;

	if (ocijson_parse_file(type, path, &obj, &err) != 0)
		fail_msg("%s: %s", name, err);
	_cleanup_free_ char *compact = generate_stable(type, obj);
	assert_int_equal(ocijson_generate(type, obj, true, &pretty, NULL, &err), 0);
	assert_int_equal(ocijson_parse_data(type, pretty, strlen(pretty), "p", &from_pretty, &err),
			 0);
	_cleanup_free_ char *compact2 = generate_stable(type, from_pretty);
	assert_string_equal(compact, compact2);
	ocijson_free(type, from_pretty);
	ocijson_free(type, obj);
}

/* ---- valid documents ---------------------------------------------------------------- */

static void test_roundtrip_fixtures(void **state)
{
	check_fixture_roundtrip(&oci_config_type, "full.json");
	check_fixture_roundtrip(&oci_config_type, "minimal.json");
	check_fixture_roundtrip(&oci_config_type, "runc-spec.json");
	check_fixture_roundtrip(&oci_config_type, "runc-spec-rootless.json");
	check_fixture_roundtrip(&oci_state_type, "state.json");
	check_fixture_roundtrip(&oci_features_type, "features.json");
	check_fixture_roundtrip(&oci_features_type, "runc-features.json");
}

static void check_full_process(const struct oci_process *p)
{
	assert_true(p->terminal_present);
	assert_false(p->terminal);
	assert_int_equal(p->console_size->width, 80);
	assert_int_equal(p->user->uid, 1000);
	assert_true(p->user->umask_present);
	assert_int_equal(p->user->umask, 18);
	assert_int_equal(p->user->additional_gids_len, 3);
	assert_true(p->user->additional_gids[2] == UINT32_MAX);
	assert_int_equal(p->args_len, 3);
	assert_string_equal(p->args[2], "echo \"h\xc3\xa9llo\" \\ \xc3\xa9 \xf0\x9f\x98\x80");
	assert_string_equal(p->cwd, "/work");
	assert_non_null(p->capabilities->bounding);
	assert_int_equal(p->capabilities->bounding_len, 0);
	assert_int_equal(p->capabilities->permitted_len, 2);
	assert_int_equal(p->rlimits_len, 2);
	assert_true(p->rlimits[1]->hard == UINT64_MAX);
	assert_true(p->no_new_privileges && p->no_new_privileges_present);
	assert_int_equal(p->oom_score_adj, -500);
	assert_string_equal(p->scheduler->policy, "SCHED_DEADLINE");
	assert_int_equal(p->scheduler->nice, -5);
	assert_true(p->scheduler->priority_present);
	assert_int_equal(p->scheduler->priority, 0);
	assert_string_equal(p->io_priority->class, "IOPRIO_CLASS_BE");
	assert_string_equal(p->exec_cpu_affinity->initial, "0-3,7");
}

static void check_full_resources(const struct oci_resources *res)
{
	assert_int_equal(res->devices_len, 4);
	assert_false(res->devices[0]->allow);
	assert_null(res->devices[0]->type);
	assert_int_equal(res->devices[2]->major, -1);
	assert_int_equal(res->memory->swap, -1);
	assert_true(res->memory->swappiness_present);
	assert_true(res->memory->disable_oom_killer_present);
	assert_false(res->memory->disable_oom_killer);
	assert_true(res->cpu->shares == UINT64_MAX);
	assert_int_equal(res->cpu->quota, -1);
	assert_int_equal(res->pids->limit, 1024);
	assert_int_equal(res->block_io->weight_device_len, 2);
	assert_false(res->block_io->weight_device[1]->weight_present);
	assert_true(res->block_io->throttle_write_bps_device[0]->rate == UINT64_MAX);
	assert_non_null(res->block_io->throttle_write_iops_device);
	assert_int_equal(res->block_io->throttle_write_iops_device_len, 0);
	assert_int_equal(res->network->class_id, 1048577);
	assert_int_equal(res->rdma_len, 2);
	assert_string_equal(res->rdma[1]->name, "mlx4_0");
	assert_false(res->rdma[1]->hca_handles_present);
	assert_string_equal(oci_string_map_get(res->unified, "memory.high"), "max");
}

static void check_full_linux(const struct oci_linux *l)
{
	assert_int_equal(l->namespaces_len, 8);
	assert_string_equal(l->namespaces[1]->path, "/var/run/netns/x");
	assert_int_equal(l->gid_mappings[1]->host_id, 4294967294u);
	assert_int_equal(l->time_offsets_len, 2);
	assert_string_equal(l->time_offsets[0]->name, "monotonic");
	assert_true(l->time_offsets[0]->secs == INT64_MIN);
	assert_false(l->time_offsets[1]->nanosecs_present);
	assert_int_equal(l->devices[0]->file_mode, 0666);
	assert_false(l->devices[3]->major_present);
	assert_string_equal(l->net_devices[0]->key, "eth1");
	assert_string_equal(l->net_devices[0]->name, "ctr1");
	assert_null(l->net_devices[1]->name);
	check_full_resources(l->resources);
	assert_int_equal(l->intel_rdt->schemata_len, 2);
	assert_string_equal(oci_string_map_get(l->sysctl, "kernel.msgmax"), "8192");
	assert_int_equal(l->seccomp->syscalls_len, 5);
	assert_true(l->seccomp->syscalls[2]->args[1]->value == UINT64_MAX);
	assert_true(l->seccomp->syscalls[2]->args[1]->value_two_present);
	assert_false(l->seccomp->syscalls[2]->args[0]->value_two_present);
	assert_int_equal(l->seccomp->syscalls[3]->errno_ret, 38);
	assert_string_equal(l->rootfs_propagation, "slave");
	assert_string_equal(l->personality->domain, "LINUX32");
	assert_string_equal(l->memory_policy->flags[0], "MPOL_F_STATIC_NODES");
}

static void test_parse_full(void **state)
{
	_cleanup_free_ char *path = fixture("full.json");
	struct oci_config *cfg = NULL;
	char *err = NULL;

	if (oci_config_parse_file(path, &cfg, &err) != 0)
		fail_msg("%s", err);
	assert_string_equal(cfg->oci_version, "1.2.0");
	assert_true(cfg->root->readonly);
	assert_int_equal(cfg->mounts_len, 3);
	assert_int_equal(cfg->mounts[1]->uid_mappings[0]->host_id, 100000);
	assert_non_null(cfg->mounts[2]->options);
	assert_int_equal(cfg->mounts[2]->options_len, 0);
	assert_null(cfg->mounts[0]->options);
	check_full_process(cfg->process);
	assert_int_equal(cfg->hooks->prestart[0]->timeout, 5);
	assert_int_equal(cfg->hooks->poststart_len, 2);
	assert_non_null(cfg->hooks->poststop);
	assert_int_equal(cfg->hooks->poststop_len, 0);
	/* insertion order is kept */
	assert_int_equal(cfg->annotations->len, 3);
	assert_string_equal(cfg->annotations->keys[0], "moat.isolation");
	assert_string_equal(cfg->annotations->keys[2], "a.b");
	assert_string_equal(cfg->annotations->values[1], "");
	check_full_linux(cfg->linux);
	oci_config_free(cfg);
}

static void test_parse_minimal(void **state)
{
	struct oci_config *cfg = parse_ok("{'ociVersion': '1.0.0'}");

	assert_string_equal(cfg->oci_version, "1.0.0");
	assert_null(cfg->root);
	assert_null(cfg->mounts);
	assert_null(cfg->process);
	assert_null(cfg->annotations);
	assert_null(cfg->linux);
	_cleanup_free_ char *json = generate_stable(&oci_config_type, cfg);
	assert_string_equal(json, "{\"ociVersion\":\"1.0.0\"}");
	oci_config_free(cfg);
}

static void test_runc_spec(void **state)
{
	_cleanup_free_ char *path = fixture("runc-spec.json");
	struct oci_config *cfg = NULL;
	char *err = NULL;

	if (oci_config_parse_file(path, &cfg, &err) != 0)
		fail_msg("%s", err);
	assert_string_equal(cfg->process->args[0], "sh");
	assert_true(cfg->process->terminal);
	assert_int_equal(cfg->process->rlimits_len, 1);
	assert_string_equal(cfg->process->rlimits[0]->type, "RLIMIT_NOFILE");
	assert_true(cfg->linux->namespaces_len >= 5);
	assert_non_null(cfg->linux->masked_paths);
	oci_config_free(cfg);
}

static void test_empty_arrays_preserved(void **state)
{
	struct oci_config *cfg = parse_ok(
		"{'ociVersion': '1.2.0', 'process': {'cwd': '/', 'user': {'uid': 0, 'gid': 0},"
		" 'capabilities': {'bounding': [], 'permitted': ['CAP_KILL']}, 'env': []},"
		" 'annotations': {}, 'linux': {'maskedPaths': [], 'timeOffsets': {}}}");

	assert_non_null(cfg->process->capabilities->bounding);
	assert_int_equal(cfg->process->capabilities->bounding_len, 0);
	assert_null(cfg->process->capabilities->effective);
	assert_non_null(cfg->annotations);
	assert_int_equal(cfg->annotations->len, 0);
	_cleanup_free_ char *json = generate_stable(&oci_config_type, cfg);
	assert_non_null(strstr(json, "\"bounding\":[]"));
	assert_non_null(strstr(json, "\"env\":[]"));
	assert_non_null(strstr(json, "\"annotations\":{}"));
	assert_non_null(strstr(json, "\"maskedPaths\":[]"));
	assert_non_null(strstr(json, "\"timeOffsets\":{}"));
	assert_null(strstr(json, "effective"));
	assert_null(strstr(json, "args"));
	oci_config_free(cfg);
}

static void test_unknown_fields_ignored(void **state)
{
	struct oci_config *cfg = parse_ok(
		"{'ociVersion': '1.2.0', 'solaris': {'milestone': 'x'}, 'windows': null,"
		" 'vm': {'hypervisor': {'path': '/x'}}, 'future': [1, {'a': [null]}],"
		" 'process': {'cwd': '/', 'user': {'uid': 0, 'gid': 0, 'sid': 'S-1'}, 'x': 1.5},"
		" 'mounts': [{'destination': '/a', 'extra': true}],"
		" 'linux': {'resources': {'memory': {'limit': 1, 'newKnob': 'v'}, 'misc': {}},"
		"  'seccomp': {'defaultAction': 'SCMP_ACT_ALLOW', 'syscalls': [{'names': ['read'],"
		"   'action': 'SCMP_ACT_ALLOW', 'comment': 'c'}]}}}");

	assert_int_equal(cfg->linux->resources->memory->limit, 1);
	assert_string_equal(cfg->mounts[0]->destination, "/a");
	_cleanup_free_ char *json = generate_stable(&oci_config_type, cfg);
	assert_null(strstr(json, "solaris"));
	assert_null(strstr(json, "newKnob"));
	assert_null(strstr(json, "comment"));
	oci_config_free(cfg);
}

static void test_integer_limits(void **state)
{
	struct oci_config *cfg = parse_ok(
		"{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'uid': 4294967295, 'gid': 0},"
		" 'oomScoreAdj': -1000, 'scheduler': {'policy': 'SCHED_OTHER', 'nice': -2147483648}},"
		" 'linux': {'resources': {'memory': {'limit': 9223372036854775807, 'swap': -0},"
		"  'cpu': {'shares': 18446744073709551615, 'quota': -9223372036854775808},"
		"  'blockIO': {'weight': 65535}}}}");

	assert_true(cfg->process->user->uid == UINT32_MAX);
	assert_true(cfg->process->scheduler->nice == INT32_MIN);
	assert_true(cfg->linux->resources->memory->limit == INT64_MAX);
	assert_int_equal(cfg->linux->resources->memory->swap, 0);
	assert_true(cfg->linux->resources->cpu->shares == UINT64_MAX);
	assert_true(cfg->linux->resources->cpu->quota == INT64_MIN);
	assert_int_equal(cfg->linux->resources->block_io->weight, 65535);
	_cleanup_free_ char *json = generate_stable(&oci_config_type, cfg);
	assert_non_null(strstr(json, "\"shares\":18446744073709551615"));
	assert_non_null(strstr(json, "\"quota\":-9223372036854775808"));
	assert_non_null(strstr(json, "\"limit\":9223372036854775807"));
	oci_config_free(cfg);
}

static void test_pretty_output(void **state)
{
	struct oci_config *cfg =
		parse_ok("{'ociVersion': '1', 'annotations': {'a': '[  ]', 'b': ''},"
			 " 'mounts': []}");
	_cleanup_free_ char *json = NULL;
	char *err = NULL;

	assert_int_equal(oci_config_generate(cfg, true, &json, NULL, &err), 0);
	assert_string_equal(
		json, "{\n\t\"ociVersion\": \"1\",\n\t\"mounts\": [],\n"
		      "\t\"annotations\": {\n\t\t\"a\": \"[  ]\",\n\t\t\"b\": \"\"\n\t}\n}\n");
	oci_config_free(cfg);
}

/* a 1 MiB config (30000 annotations) parses, and its round trip is stable */
static void test_large_config(void **state)
{
	size_t cap = 2 << 20, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	struct oci_config *cfg = NULL;
	char *err = NULL;

	assert_non_null(buf);
	len += (size_t)snprintf(buf, cap, "{\"ociVersion\": \"1.2.0\", \"annotations\": {");
	for (int i = 0; len < (1 << 20); i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s\"org.example.key%06d\": \"%s\"",
					i ? ", " : "", i, "value-value-value");
	len += (size_t)snprintf(buf + len, cap - len, "}}");
	assert_true(len > (1 << 20));
	if (oci_config_parse_data(buf, len, "config.json", &cfg, &err) != 0)
		fail_msg("%s", err);
	assert_true(cfg->annotations->len > 20000);
	assert_string_equal(cfg->annotations->keys[12345], "org.example.key012345");
	free(generate_stable(&oci_config_type, cfg));
	oci_config_free(cfg);
}

static void test_process_and_resources_api(void **state)
{
	const char *proc =
		"{\"cwd\": \"/\", \"user\": {\"uid\": 1, \"gid\": 2}, \"args\": [\"ls\"]}";
	const char *res = "{\"pids\": {\"limit\": 64}, \"memory\": {\"limit\": 1048576}}";
	struct oci_process *p = NULL;
	struct oci_resources *r = NULL;
	_cleanup_free_ char *json = NULL;
	char *err = NULL;

	assert_int_equal(oci_process_parse_data(proc, strlen(proc), "process.json", &p, &err), 0);
	assert_int_equal(p->user->gid, 2);
	assert_int_equal(oci_process_generate(p, false, &json, NULL, &err), 0);
	assert_string_equal(json,
			    "{\"user\":{\"uid\":1,\"gid\":2},\"args\":[\"ls\"],\"cwd\":\"/\"}");
	oci_process_free(p);
	assert_int_equal(oci_resources_parse_data(res, strlen(res), "resources", &r, &err), 0);
	assert_int_equal(r->pids->limit, 64);
	oci_resources_free(r);
	const char *no_user = "{\"cwd\": \"/\"}";
	assert_int_equal(oci_process_parse_data(no_user, strlen(no_user), "process.json", &p, &err),
			 -EINVAL);
	assert_string_equal(err, "process.json: user: required field missing");
	free(err);
}

/* ocijson_merge: what the update sets replaces, what it leaves out stays. */
static void test_merge_resources(void **state)
{
	const char *old = "{\"memory\": {\"limit\": 100, \"swap\": 200}, \"pids\": {\"limit\": 5},"
			  " \"cpu\": {\"cpus\": \"0-1\"}, \"unified\": {\"a\": \"1\"}}";
	const char *upd = "{\"memory\": {\"limit\": 300}, \"cpu\": {\"cpus\": \"1\","
			  " \"quota\": 5000}, \"unified\": {\"b\": \"2\"},"
			  " \"blockIO\": {\"weight\": 500}}";
	struct oci_resources *a = NULL, *b = NULL;
	char *json = NULL, *err = NULL;

	(void)state;
	assert_int_equal(oci_resources_parse_data(old, strlen(old), "old", &a, &err), 0);
	assert_int_equal(oci_resources_parse_data(upd, strlen(upd), "update", &b, &err), 0);
	ocijson_merge(&oci_resources_type, a, b);
	assert_int_equal(oci_resources_generate(a, false, &json, NULL, &err), 0);
	assert_string_equal(json, "{\"memory\":{\"limit\":300,\"swap\":200},"
				  "\"cpu\":{\"quota\":5000,\"cpus\":\"1\"},\"pids\":{\"limit\":5},"
				  "\"blockIO\":{\"weight\":500},\"unified\":{\"b\":\"2\"}}");
	free(json);
	oci_resources_free(a);
	ocijson_merge(&oci_resources_type, NULL, NULL);
}

static void test_clone_and_string_map(void **state)
{
	struct oci_config *cfg = parse_ok("{'ociVersion': '1', 'annotations': {'a': '1'}}");
	void *copy = NULL;
	char *err = NULL;

	assert_int_equal(oci_string_map_set(&cfg->annotations, "a", "2"), 0);
	assert_int_equal(oci_string_map_set(&cfg->annotations, "b", "3"), 0);
	assert_int_equal(cfg->annotations->len, 2);
	assert_string_equal(oci_string_map_get(cfg->annotations, "a"), "2");
	assert_null(oci_string_map_get(cfg->annotations, "c"));
	assert_null(oci_string_map_get(NULL, "c"));
	struct oci_string_map *fresh = NULL;
	assert_int_equal(oci_string_map_set(&fresh, "k", "v"), 0);
	assert_string_equal(fresh->values[0], "v");
	oci_string_map_free(fresh);
	assert_int_equal(ocijson_clone(&oci_config_type, cfg, &copy, &err), 0);
	struct oci_config *c2 = copy;
	assert_string_equal(c2->annotations->values[1], "3");
	assert_ptr_not_equal(c2->annotations, cfg->annotations);
	oci_config_free(c2);
	oci_config_free(cfg);
}

static void test_free_null(void **state)
{
	oci_config_free(NULL);
	oci_process_free(NULL);
	oci_resources_free(NULL);
	oci_state_free(NULL);
	oci_features_free(NULL);
	oci_string_map_free(NULL);
	ocijson_free(&oci_linux_type, NULL);
}

/* ---- state and features ---------------------------------------------------------------- */

static void test_state(void **state)
{
	_cleanup_free_ char *path = fixture("state.json");
	struct oci_state *st = NULL;
	char *err = NULL;

	assert_int_equal(oci_state_parse_file(path, &st, &err), 0);
	assert_string_equal(st->status, "running");
	assert_int_equal(st->pid, 4422);
	assert_string_equal(oci_string_map_get(st->annotations, "moat.vm.accel"), "tcg");
	_cleanup_free_ char *json = NULL;
	assert_int_equal(oci_state_generate(st, false, &json, NULL, &err), 0);
	assert_non_null(strstr(json, "\"status\":\"running\",\"pid\":4422,"));
	oci_state_free(st);

	const char *stopped = "{\"ociVersion\": \"1.2.0\", \"id\": \"x\", \"status\": \"stopped\","
			      " \"bundle\": \"/b\"}";
	assert_int_equal(oci_state_parse_data(stopped, strlen(stopped), "state.json", &st, &err),
			 0);
	assert_false(st->pid_present);
	oci_state_free(st);

	const char *bad = "{\"ociVersion\": \"1.2.0\", \"id\": \"x\", \"status\": \"created\","
			  " \"bundle\": \"/b\"}";
	assert_int_equal(oci_state_parse_data(bad, strlen(bad), "state.json", &st, &err), -EINVAL);
	assert_string_equal(err, "state.json: pid: required when status is created");
	free(err);
}

static void test_features(void **state)
{
	_cleanup_free_ char *path = fixture("features.json");
	struct oci_features *f = NULL;
	char *err = NULL;

	assert_int_equal(oci_features_parse_file(path, &f, &err), 0);
	assert_string_equal(f->oci_version_max, "1.2.0");
	assert_int_equal(f->linux->namespaces_len, 8);
	assert_true(f->linux->cgroup->rdma);
	assert_true(f->linux->cgroup->systemd_user_present);
	assert_non_null(f->linux->seccomp->supported_flags);
	assert_int_equal(f->linux->seccomp->supported_flags_len, 0);
	assert_false(f->linux->intel_rdt->enabled_present);
	assert_true(f->linux->mount_extensions->idmap->enabled);
	assert_int_equal(f->potentially_unsafe_config_annotations_len, 2);
	oci_features_free(f);

	const char *bad = "{\"ociVersionMin\": \"1.0.0\"}";
	assert_int_equal(oci_features_parse_data(bad, strlen(bad), "features.json", &f, &err),
			 -EINVAL);
	assert_string_equal(err, "features.json: ociVersionMax: required field missing");
	free(err);
}

/* ---- generator errors ------------------------------------------------------------------- */

static void test_generate_errors(void **state)
{
	struct oci_config *cfg = parse_ok("{'ociVersion': '1', 'process': {'cwd': '/',"
					  " 'user': {'uid': 0, 'gid': 0}},"
					  " 'linux': {'namespaces': [{'type': 'pid'}]}}");
	char *json = NULL, *err = NULL;

	char *cwd = cfg->process->cwd;
	cfg->process->cwd = NULL;
	assert_int_equal(oci_config_generate(cfg, false, &json, NULL, &err), -EINVAL);
	assert_null(json);
	assert_string_equal(err, "config: process.cwd: required field missing");
	free(err);
	cfg->process->cwd = cwd;

	char *type = cfg->linux->namespaces[0]->type;
	cfg->linux->namespaces[0]->type = strdup("bogus");
	assert_int_equal(oci_config_generate(cfg, false, &json, NULL, &err), -EINVAL);
	assert_string_equal(err,
			    "config: linux.namespaces[0].type: invalid value \"bogus\" "
			    "(expected one of: pid, network, mount, ipc, uts, user, cgroup, time)");
	free(err);
	free(cfg->linux->namespaces[0]->type);
	cfg->linux->namespaces[0]->type = type;

	char *host = strdup("bad\xff");
	cfg->hostname = host;
	assert_int_equal(oci_config_generate(cfg, false, &json, NULL, &err), -EINVAL);
	assert_string_equal(err, "config: hostname: invalid UTF-8 in string");
	free(err);
	oci_config_free(cfg);
}

/* ---- hostile input ---------------------------------------------------------------------- */

static char *write_temp(const char *data, size_t len)
{
	char *path = strdup("/tmp/test-ocispec-XXXXXX");
	assert_non_null(path);
	int fd = mkostemp(path, O_CLOEXEC);
	assert_true(fd >= 0);
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);
		assert_true(n > 0);
		off += (size_t)n;
	}
	close(fd);
	return path;
}

static void test_file_too_large(void **state)
{
	size_t len = 5 << 20;
	_cleanup_free_ char *data = malloc(len);
	struct oci_config *cfg = NULL;
	char *err = NULL, *expect = NULL;

	assert_non_null(data);
	memset(data, ' ', len);
	memcpy(data, "{\"ociVersion\": \"1\"}", 19);
	_cleanup_free_ char *path = write_temp(data, len);
	assert_int_equal(oci_config_parse_file(path, &cfg, &err), -EFBIG);
	assert_null(cfg);
	assert_true(asprintf(&expect, "%s: larger than 4194304 bytes", strrchr(path, '/') + 1) > 0);
	assert_string_equal(err, expect);
	unlink(path);
	free(expect);
	free(err);
}

static void test_file_missing(void **state)
{
	struct oci_config *cfg = NULL;
	char *err = NULL;

	assert_int_equal(oci_config_parse_file("/nonexistent/dir/config.json", &cfg, &err),
			 -ENOENT);
	assert_string_equal(err, "config.json: open /nonexistent/dir/config.json: "
				 "No such file or directory");
	free(err);
}

static void expect_data_error(const char *data, size_t len, const char *expect)
{
	struct oci_config *cfg = NULL;
	char *err = NULL;

	assert_int_equal(oci_config_parse_data(data, len, "config.json", &cfg, &err), -EINVAL);
	assert_null(cfg);
	assert_non_null(err);
	if (strcmp(err, expect) != 0)
		fail_msg("got \"%s\", expected \"%s\"", err, expect);
	assert_null(strchr(err, '\n'));
	free(err);
}

/* {"ociVersion": "1", "x": [[...]]} with `levels` levels counting the top object */
static char *nested_config(size_t levels)
{
	char *buf = NULL;
	size_t n = levels - 1;
	_cleanup_free_ char *open = malloc(n + 1), *close = malloc(n + 1);

	assert_true(open != NULL && close != NULL);
	memset(open, '[', n);
	memset(close, ']', n);
	open[n] = close[n] = '\0';
	assert_true(asprintf(&buf, "{\"ociVersion\": \"1\", \"x\": %s%s}", open, close) > 0);
	return buf;
}

static void test_deep_nesting(void **state)
{
	size_t n = 100000;
	_cleanup_free_ char *deep = malloc(n + 1);
	struct oci_config *cfg = NULL;
	char *err = NULL;

	assert_non_null(deep);
	memset(deep, '[', n);
	deep[n] = '\0';
	expect_data_error(deep, n, "config.json: nesting deeper than 64 levels");

	_cleanup_free_ char *objects = NULL;
	_cleanup_free_ char *ok = nested_config(OCIJSON_MAX_DEPTH);
	_cleanup_free_ char *too_deep = nested_config(OCIJSON_MAX_DEPTH + 1);
	if (oci_config_parse_data(ok, strlen(ok), "config.json", &cfg, &err) != 0)
		fail_msg("%s", err);
	oci_config_free(cfg);
	expect_data_error(too_deep, strlen(too_deep), "config.json: nesting deeper than 64 levels");

	size_t len = 0, cap = 10 * n;
	objects = malloc(cap);
	assert_non_null(objects);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(objects + len, cap - len, "{\"a\":");
	expect_data_error(objects, len, "config.json: nesting deeper than 64 levels");
}

static void test_fixture_errors(void **state)
{
	static const struct {
		const char *file, *expect;
	} cases[] = {
		{ "truncated.json", "truncated.json: line 1: parse error: premature EOF" },
		{ "non-utf8.json",
		  "non-utf8.json: line 1: lexical error: invalid bytes in UTF8 string." },
		{ "bad-namespace.json", "bad-namespace.json: linux.namespaces[2].type: duplicate "
					"namespace type pid (also namespaces[0])" },
		{ "bad-mount.json",
		  "bad-mount.json: mounts[2].destination: required field missing" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_free_ char *path = fixture(cases[i].file);
		struct oci_config *cfg = NULL;
		char *err = NULL;
		assert_int_equal(oci_config_parse_file(path, &cfg, &err), -EINVAL);
		if (strcmp(err, cases[i].expect) != 0)
			fail_msg("got \"%s\", expected \"%s\"", err, cases[i].expect);
		free(err);
	}
}

static void test_nul_byte(void **state)
{
	static const char data[] = "{\"ociVersion\": \"1\0\"}";

	expect_data_error(data, sizeof(data) - 1, "config.json: contains a NUL byte");
}

/* ---- error table: one cmocka test per row ---------------------------------------------- */

struct error_case {
	const char *name;
	const char *json;   /* single quotes stand for double quotes */
	const char *expect; /* after "config.json: " */
};

#define PROC(X) "{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'uid': 0, 'gid': 0}, " X "}}"
#define LINUX(X) "{'ociVersion': '1', 'linux': {" X "}}"
#define RES(X) LINUX("'resources': {" X "}")

/* clang-format off */
static const struct error_case error_cases[] = {
	/* syntax */
	{ "empty input", "", "line 1: parse error: premature EOF" },
	{ "syntax error line",
	  "{'ociVersion': '1',\n\n 'x': }",
	  "line 3: parse error: unallowed token at this point in JSON text" },
	{ "comments refused",
	  "/* c */ {'ociVersion': '1'}",
	  "line 1: lexical error: probable comment found in input text, comments are not "
	  "enabled." },
	{ "trailing garbage", "{'ociVersion': '1'} {}", "line 1: parse error: trailing garbage" },
	{ "escaped NUL in string",
	  "{'ociVersion': '1',\n 'hostname': 'a\\u0000b'}",
	  "line 2: string contains \\u0000" },
	{ "escaped NUL in key", "{'a\\u0000': 1}", "line 1: string contains \\u0000" },
	{ "top level array", "[]", "expected object, got array" },
	{ "top level string", "'x'", "expected object, got string" },
	/* required fields and types */
	{ "ociVersion missing", "{}", "ociVersion: required field missing" },
	{ "ociVersion number", "{'ociVersion': 1}", "ociVersion: expected string, got number" },
	{ "ociVersion null", "{'ociVersion': null}", "ociVersion: expected string, got null" },
	{ "ociVersion duplicate",
	  "{'ociVersion': '1', 'ociVersion': '2'}",
	  "ociVersion: duplicate key" },
	{ "root.path missing",
	  "{'ociVersion': '1', 'root': {'readonly': true}}",
	  "root.path: required field missing" },
	{ "root.readonly string",
	  "{'ociVersion': '1', 'root': {'path': 'r', 'readonly': 'yes'}}",
	  "root.readonly: expected boolean, got string" },
	{ "root array", "{'ociVersion': '1', 'root': []}", "root: expected object, got array" },
	{ "process.cwd missing",
	  "{'ociVersion': '1', 'process': {'user': {'uid': 0, 'gid': 0}}}",
	  "process.cwd: required field missing" },
	{ "process.user missing",
	  "{'ociVersion': '1', 'process': {'cwd': '/'}}",
	  "process.user: required field missing" },
	{ "process.user.uid missing",
	  "{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'gid': 0}}}",
	  "process.user.uid: required field missing" },
	{ "process.user.gid missing",
	  "{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'uid': 0}}}",
	  "process.user.gid: required field missing" },
	{ "uid negative",
	  "{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'uid': -1, 'gid': 0}}}",
	  "process.user.uid: -1 out of range for uint32" },
	{ "uid overflow",
	  "{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'uid': 4294967296, 'gid': 0}}}",
	  "process.user.uid: 4294967296 out of range for uint32" },
	{ "process.user duplicate",
	  PROC("'args': ['sh'], 'user': {'uid': 0, 'gid': 0, 'additionalGids': [1, '2']}"),
	  "process.user: duplicate key" },
	{ "additionalGids[1] string",
	  "{'ociVersion': '1', 'process': {'cwd': '/', 'user': {'uid': 0, 'gid': 0, "
	  "'additionalGids': [1, '2']}}}",
	  "process.user.additionalGids[1]: expected integer, got string" },
	{ "cwd number",
	  "{'ociVersion': '1', 'process': {'cwd': 5, 'user': {'uid': 0, 'gid': 0}}}",
	  "process.cwd: expected string, got number" },
	{ "args string", PROC("'args': 'sh'"), "process.args: expected array, got string" },
	{ "args[1] number",
	  PROC("'args': ['sh', 5]"),
	  "process.args[1]: expected string, got number" },
	{ "env[0] null", PROC("'env': [null]"), "process.env[0]: expected string, got null" },
	{ "terminal number",
	  PROC("'terminal': 1"),
	  "process.terminal: expected boolean, got number" },
	{ "consoleSize.width missing",
	  PROC("'consoleSize': {'height': 1}"),
	  "process.consoleSize.width: required field missing" },
	{ "bounding object",
	  PROC("'capabilities': {'bounding': {}}"),
	  "process.capabilities.bounding: expected array, got object" },
	{ "rlimits[0].type missing",
	  PROC("'rlimits': [{'hard': 1, 'soft': 1}]"),
	  "process.rlimits[0].type: required field missing" },
	{ "rlimits[1].soft missing",
	  PROC("'rlimits': [{'type': 'RLIMIT_CORE', 'hard': 1, 'soft': 1}, {'type': "
	  "'RLIMIT_NOFILE', 'hard': 1}]"),
	  "process.rlimits[1].soft: required field missing" },
	{ "rlimits type unknown",
	  PROC("'rlimits': [{'type': 'RLIMIT_FOO', 'hard': 1, 'soft': 1}]"),
	  "process.rlimits[0].type: invalid value \"RLIMIT_FOO\" (expected one of: RLIMIT_AS, "
	  "RLIMIT_CORE, RLIMIT_CPU, RLIMIT_DATA, RLIMIT_FSIZE, RLIMIT_LOCKS, RLIMIT_MEMLOCK, "
	  "RLIMIT_MSGQUEUE, RLIMIT_NICE, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_RSS, "
	  "RLIMIT_RTPRIO, RLIMIT_RTTIME, RLIMIT_SIGPENDING, RLIMIT_STACK)" },
	{ "rlimits duplicate",
	  PROC("'rlimits': [{'type': 'RLIMIT_NOFILE', 'hard': 1, 'soft': 1}, {'type': "
	  "'RLIMIT_NOFILE', 'hard': 2, 'soft': 2}]"),
	  "process.rlimits[1].type: duplicate rlimit RLIMIT_NOFILE (also rlimits[0])" },
	{ "rlimit hard negative",
	  PROC("'rlimits': [{'type': 'RLIMIT_NOFILE', 'hard': -1, 'soft': 1}]"),
	  "process.rlimits[0].hard: -1 out of range for uint64" },
	{ "oomScoreAdj fraction",
	  PROC("'oomScoreAdj': 1.5"),
	  "process.oomScoreAdj: expected integer, got number" },
	{ "oomScoreAdj range",
	  PROC("'oomScoreAdj': 2000"),
	  "process.oomScoreAdj: 2000 outside -1000..1000" },
	{ "oomScoreAdj int32",
	  PROC("'oomScoreAdj': 3000000000"),
	  "process.oomScoreAdj: 3000000000 out of range for int32" },
	{ "scheduler.policy missing",
	  PROC("'scheduler': {'nice': 1}"),
	  "process.scheduler.policy: required field missing" },
	{ "scheduler.policy unknown",
	  PROC("'scheduler': {'policy': 'SCHED_FAST'}"),
	  "process.scheduler.policy: invalid value \"SCHED_FAST\" (expected one of: "
	  "SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_ISO, SCHED_IDLE, "
	  "SCHED_DEADLINE)" },
	{ "scheduler.flags unknown",
	  PROC("'scheduler': {'policy': 'SCHED_RR', 'flags': ['SCHED_FLAG_RECLAIM', 'X']}"),
	  "process.scheduler.flags[1]: invalid value \"X\" (expected one of: "
	  "SCHED_FLAG_RESET_ON_FORK, SCHED_FLAG_RECLAIM, SCHED_FLAG_DL_OVERRUN, "
	  "SCHED_FLAG_KEEP_POLICY, SCHED_FLAG_KEEP_PARAMS, SCHED_FLAG_UTIL_CLAMP_MIN, "
	  "SCHED_FLAG_UTIL_CLAMP_MAX)" },
	{ "ioPriority.class unknown",
	  PROC("'ioPriority': {'class': 'IOPRIO_CLASS_NONE'}"),
	  "process.ioPriority.class: invalid value \"IOPRIO_CLASS_NONE\" (expected one of: "
	  "IOPRIO_CLASS_RT, IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE)" },
	{ "ioPriority.priority range",
	  PROC("'ioPriority': {'class': 'IOPRIO_CLASS_RT', 'priority': 8}"),
	  "process.ioPriority.priority: 8 outside 0..7" },
	{ "mounts object",
	  "{'ociVersion': '1', 'mounts': {}}",
	  "mounts: expected array, got object" },
	{ "mounts[1] string",
	  "{'ociVersion': '1', 'mounts': [{'destination': '/'}, '/x']}",
	  "mounts[1]: expected object, got string" },
	{ "mount idmap size missing",
	  "{'ociVersion': '1', 'mounts': [{'destination': '/', 'uidMappings': [{'containerID': "
	  "0, 'hostID': 1}]}]}",
	  "mounts[0].uidMappings[0].size: required field missing" },
	{ "hooks.poststart[1].path missing",
	  "{'ociVersion': '1', 'hooks': {'poststart': [{'path': '/a'}, {'args': []}]}}",
	  "hooks.poststart[1].path: required field missing" },
	{ "hook timeout zero",
	  "{'ociVersion': '1', 'hooks': {'prestart': [{'path': '/a', 'timeout': 0}]}}",
	  "hooks.prestart[0].timeout: must be greater than zero, got 0" },
	{ "annotations value number",
	  "{'ociVersion': '1', 'annotations': {'a': 1}}",
	  "annotations.a: expected string, got number" },
	{ "annotations duplicate",
	  "{'ociVersion': '1', 'annotations': {'a': '1', 'b': '', 'a': '2'}}",
	  "annotations: duplicate key \"a\"" },
	{ "annotations array",
	  "{'ociVersion': '1', 'annotations': ['a']}",
	  "annotations: expected object, got array" },
	/* linux */
	{ "namespace type unknown",
	  LINUX("'namespaces': [{'type': 'pid'}, {'type': 'net'}]"),
	  "linux.namespaces[1].type: invalid value \"net\" (expected one of: pid, network, "
	  "mount, ipc, uts, user, cgroup, time)" },
	{ "namespace type missing",
	  LINUX("'namespaces': [{'type': 'pid'}, {'path': '/x'}]"),
	  "linux.namespaces[1].type: required field missing" },
	{ "namespace duplicate",
	  LINUX("'namespaces': [{'type': 'user'}, {'type': 'pid'}, {'type': 'user', 'path': '/p'}]"),
	  "linux.namespaces[2].type: duplicate namespace type user (also namespaces[0])" },
	{ "uidMappings hostID missing",
	  LINUX("'uidMappings': [{'containerID': 0, 'size': 1}]"),
	  "linux.uidMappings[0].hostID: required field missing" },
	{ "gidMappings size string",
	  LINUX("'gidMappings': [{'containerID': 0, 'hostID': 0, 'size': '1'}]"),
	  "linux.gidMappings[0].size: expected integer, got string" },
	{ "timeOffsets clock unknown",
	  LINUX("'timeOffsets': {'realtime': {'secs': 1}}"),
	  "linux.timeOffsets.realtime: invalid value \"realtime\" (expected one of: monotonic, "
	  "boottime)" },
	{ "timeOffsets secs string",
	  LINUX("'timeOffsets': {'monotonic': {'secs': '1'}}"),
	  "linux.timeOffsets.monotonic.secs: expected integer, got string" },
	{ "timeOffsets entry number",
	  LINUX("'timeOffsets': {'boottime': 5}"),
	  "linux.timeOffsets.boottime: expected object, got number" },
	{ "device type unknown",
	  LINUX("'devices': [{'type': 'x', 'path': '/dev/x'}]"),
	  "linux.devices[0].type: invalid value \"x\" (expected one of: c, b, u, p)" },
	{ "device path missing",
	  LINUX("'devices': [{'type': 'p'}]"),
	  "linux.devices[0].path: required field missing" },
	{ "device major missing",
	  LINUX("'devices': [{'type': 'p', 'path': '/p'}, {'type': 'c', 'path': '/dev/x', 'minor': "
	  "1}]"),
	  "linux.devices[1].major: required for device type c" },
	{ "device fileMode negative",
	  LINUX("'devices': [{'type': 'c', 'path': '/x', 'major': 1, 'minor': 1, 'fileMode': -1}]"),
	  "linux.devices[0].fileMode: -1 out of range for uint32" },
	{ "netDevices entry string",
	  LINUX("'netDevices': {'eth0': 'x'}"),
	  "linux.netDevices.eth0: expected object, got string" },
	{ "netDevices name number",
	  LINUX("'netDevices': {'eth0': {'name': 1}}"),
	  "linux.netDevices.eth0.name: expected string, got number" },
	{ "rootfsPropagation unknown",
	  LINUX("'rootfsPropagation': 'weird'"),
	  "linux.rootfsPropagation: invalid value \"weird\" (expected one of: private, shared, "
	  "slave, unbindable, rprivate, rshared, rslave, runbindable)" },
	{ "sysctl array", LINUX("'sysctl': []"), "linux.sysctl: expected object, got array" },
	{ "maskedPaths[2] object",
	  LINUX("'maskedPaths': ['/a', '/b', {}]"),
	  "linux.maskedPaths[2]: expected string, got object" },
	{ "personality domain",
	  LINUX("'personality': {'domain': 'LINUX64'}"),
	  "linux.personality.domain: invalid value \"LINUX64\" (expected one of: LINUX, LINUX32)" },
	{ "memoryPolicy mode missing",
	  LINUX("'memoryPolicy': {'nodes': '0'}"),
	  "linux.memoryPolicy.mode: required field missing" },
	{ "memoryPolicy mode unknown",
	  LINUX("'memoryPolicy': {'mode': 'MPOL_FOO'}"),
	  "linux.memoryPolicy.mode: invalid value \"MPOL_FOO\" (expected one of: MPOL_DEFAULT, "
	  "MPOL_BIND, MPOL_INTERLEAVE, MPOL_WEIGHTED_INTERLEAVE, MPOL_PREFERRED, "
	  "MPOL_PREFERRED_MANY, MPOL_LOCAL)" },
	{ "intelRdt schemata string",
	  LINUX("'intelRdt': {'schemata': 'L3:0=f'}"),
	  "linux.intelRdt.schemata: expected array, got string" },
	/* linux.resources */
	{ "memory.limit string",
	  RES("'memory': {'limit': '1G'}"),
	  "linux.resources.memory.limit: expected integer, got string" },
	{ "memory.limit int64 overflow",
	  RES("'memory': {'limit': 9223372036854775808}"),
	  "linux.resources.memory.limit: 9223372036854775808 out of range for int64" },
	{ "memory.swap int64 underflow",
	  RES("'memory': {'swap': -9223372036854775809}"),
	  "linux.resources.memory.swap: -9223372036854775809 out of range for int64" },
	{ "memory.disableOOMKiller null",
	  RES("'memory': {'disableOOMKiller': null}"),
	  "linux.resources.memory.disableOOMKiller: expected boolean, got null" },
	{ "cpu.shares uint64 overflow",
	  RES("'cpu': {'shares': 18446744073709551616}"),
	  "linux.resources.cpu.shares: 18446744073709551616 out of range for uint64" },
	{ "cpu.shares negative",
	  RES("'cpu': {'shares': -1}"),
	  "linux.resources.cpu.shares: -1 out of range for uint64" },
	{ "cpu.shares exponent",
	  RES("'cpu': {'shares': 1e3}"),
	  "linux.resources.cpu.shares: expected integer, got number" },
	{ "cpu.period object",
	  RES("'cpu': {'period': {}}"),
	  "linux.resources.cpu.period: expected integer, got object" },
	{ "cpu.quota array",
	  RES("'cpu': {'quota': []}"),
	  "linux.resources.cpu.quota: expected integer, got array" },
	{ "cpu.realtimeRuntime bool",
	  RES("'cpu': {'realtimeRuntime': true}"),
	  "linux.resources.cpu.realtimeRuntime: expected integer, got boolean" },
	{ "cpu.cpus number",
	  RES("'cpu': {'cpus': 3}"),
	  "linux.resources.cpu.cpus: expected string, got number" },
	{ "pids.limit missing",
	  RES("'pids': {}"),
	  "linux.resources.pids.limit: required field missing" },
	{ "blockIO.weight uint16",
	  RES("'blockIO': {'weight': 65536}"),
	  "linux.resources.blockIO.weight: 65536 out of range for uint16" },
	{ "throttle rate missing",
	  RES("'blockIO': {'throttleReadBpsDevice': [{'major': 8, 'minor': 0}]}"),
	  "linux.resources.blockIO.throttleReadBpsDevice[0].rate: required field missing" },
	{ "weightDevice minor missing",
	  RES("'blockIO': {'weightDevice': [{'major': 8, 'minor': 0}, {'major': 8}]}"),
	  "linux.resources.blockIO.weightDevice[1].minor: required field missing" },
	{ "devices allow missing",
	  RES("'devices': [{'allow': false}, {'access': 'rwm'}]"),
	  "linux.resources.devices[1].allow: required field missing" },
	{ "devices access invalid",
	  RES("'devices': [{'allow': true, 'access': 'rwx'}]"),
	  "linux.resources.devices[0].access: invalid value \"rwx\" (expected letters from "
	  "\"rwm\")" },
	{ "devices type invalid",
	  RES("'devices': [{'allow': true, 'type': 'p'}]"),
	  "linux.resources.devices[0].type: invalid value \"p\" (expected one of: a, b, c)" },
	{ "hugepageLimits pageSize missing",
	  RES("'hugepageLimits': [{'limit': 1}]"),
	  "linux.resources.hugepageLimits[0].pageSize: required field missing" },
	{ "network priority missing",
	  RES("'network': {'priorities': [{'name': 'eth0'}]}"),
	  "linux.resources.network.priorities[0].priority: required field missing" },
	{ "rdma hcaHandles negative",
	  RES("'rdma': {'mlx5_1': {'hcaHandles': -1}}"),
	  "linux.resources.rdma.mlx5_1.hcaHandles: -1 out of range for uint32" },
	{ "unified value number",
	  RES("'unified': {'memory.max': 5}"),
	  "linux.resources.unified.memory.max: expected string, got number" },
	/* linux.seccomp */
	{ "seccomp defaultAction missing",
	  LINUX("'seccomp': {'syscalls': []}"),
	  "linux.seccomp.defaultAction: required field missing" },
	{ "seccomp defaultAction unknown",
	  LINUX("'seccomp': {'defaultAction': 'SCMP_ACT_MAYBE'}"),
	  "linux.seccomp.defaultAction: invalid value \"SCMP_ACT_MAYBE\" (expected one of: "
	  "SCMP_ACT_KILL, SCMP_ACT_KILL_PROCESS, SCMP_ACT_KILL_THREAD, SCMP_ACT_TRAP, "
	  "SCMP_ACT_ERRNO, SCMP_ACT_TRACE, SCMP_ACT_ALLOW, SCMP_ACT_LOG, SCMP_ACT_NOTIFY)" },
	{ "seccomp syscall names missing",
	  LINUX("'seccomp': {'defaultAction': 'SCMP_ACT_ALLOW', 'syscalls': [{'action': "
	  "'SCMP_ACT_ALLOW'}]}"),
	  "linux.seccomp.syscalls[0].names: required field missing" },
	{ "seccomp arg op unknown",
	  LINUX("'seccomp': {'defaultAction': 'SCMP_ACT_ALLOW', 'syscalls': [{'names': ['a'], "
	  "'action': 'SCMP_ACT_ALLOW'}, {'names': ['b'], 'action': 'SCMP_ACT_LOG', 'args': "
	  "[{'index': 0, 'value': 1, 'op': 'SCMP_CMP_XX'}]}]}"),
	  "linux.seccomp.syscalls[1].args[0].op: invalid value \"SCMP_CMP_XX\" (expected one "
	  "of: SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE, SCMP_CMP_EQ, SCMP_CMP_GE, SCMP_CMP_GT, "
	  "SCMP_CMP_MASKED_EQ)" },
	{ "seccomp arg value missing",
	  LINUX("'seccomp': {'defaultAction': 'SCMP_ACT_ALLOW', 'syscalls': [{'names': ['a'], "
	  "'action': 'SCMP_ACT_ALLOW', 'args': [{'index': 0, 'op': 'SCMP_CMP_EQ'}]}]}"),
	  "linux.seccomp.syscalls[0].args[0].value: required field missing" },
	{ "seccomp errnoRet negative",
	  LINUX("'seccomp': {'defaultAction': 'SCMP_ACT_ERRNO', 'defaultErrnoRet': -1}"),
	  "linux.seccomp.defaultErrnoRet: -1 out of range for uint32" },
	{ "seccomp flag unknown",
	  LINUX("'seccomp': {'defaultAction': 'SCMP_ACT_ALLOW', 'flags': "
	  "['SECCOMP_FILTER_FLAG_TSYNC', 'SECCOMP_FILTER_FLAG_NEW_LISTENER']}"),
	  "linux.seccomp.flags[1]: invalid value \"SECCOMP_FILTER_FLAG_NEW_LISTENER\" (expected "
	  "one of: SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_FILTER_FLAG_LOG, "
	  "SECCOMP_FILTER_FLAG_SPEC_ALLOW, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)" },
};
/* clang-format on */

static void run_error_case(void **state)
{
	const struct error_case *ec = *state;
	_cleanup_free_ char *data = dq(ec->json);
	_cleanup_free_ char *expect = NULL;

	assert_true(asprintf(&expect, "config.json: %s", ec->expect) > 0);
	expect_data_error(data, strlen(data), expect);
}

static const struct CMUnitTest fixed_tests[] = {
	cmocka_unit_test(test_parse_full),
	cmocka_unit_test(test_parse_minimal),
	cmocka_unit_test(test_runc_spec),
	cmocka_unit_test(test_roundtrip_fixtures),
	cmocka_unit_test(test_empty_arrays_preserved),
	cmocka_unit_test(test_unknown_fields_ignored),
	cmocka_unit_test(test_integer_limits),
	cmocka_unit_test(test_pretty_output),
	cmocka_unit_test(test_large_config),
	cmocka_unit_test(test_process_and_resources_api),
	cmocka_unit_test(test_clone_and_string_map),
	cmocka_unit_test(test_merge_resources),
	cmocka_unit_test(test_free_null),
	cmocka_unit_test(test_state),
	cmocka_unit_test(test_features),
	cmocka_unit_test(test_generate_errors),
	cmocka_unit_test(test_file_too_large),
	cmocka_unit_test(test_file_missing),
	cmocka_unit_test(test_deep_nesting),
	cmocka_unit_test(test_fixture_errors),
	cmocka_unit_test(test_nul_byte),
};

int main(void)
{
	size_t n_fixed = sizeof(fixed_tests) / sizeof(fixed_tests[0]);
	size_t n_errors = sizeof(error_cases) / sizeof(error_cases[0]);
	struct CMUnitTest *tests = calloc(n_fixed + n_errors, sizeof(*tests));
	char **names = calloc(n_errors, sizeof(*names));

	if (tests == NULL || names == NULL)
		return 1;
	memcpy(tests, fixed_tests, sizeof(fixed_tests));
	for (size_t i = 0; i < n_errors; i++) {
		if (asprintf(&names[i], "error: %s", error_cases[i].name) < 0)
			return 1;
		tests[n_fixed + i] = (struct CMUnitTest){
			.name = names[i],
			.test_func = run_error_case,
			.initial_state = (void *)&error_cases[i],
		};
	}
	int failed = _cmocka_run_group_tests("ocispec", tests, n_fixed + n_errors, NULL, NULL);
	for (size_t i = 0; i < n_errors; i++)
		free(names[i]);
	free(names);
	free(tests);
	return failed == 0 ? 0 : 1;
}
