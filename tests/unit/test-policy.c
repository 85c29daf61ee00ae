/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the policy (policy.c, policy-rules.c, policy-paths.c), without running a
 * container:
 *   - path resolution: symlinks followed, the missing tail folded lexically;
 *   - which bind sources deny-host-mounts refuses, table-driven (sensitive paths, their
 *     ancestors and subdirectories, engine sockets, engines' per-container files, the
 *     file's allow and deny lists);
 *   - each rule on configs parsed from JSON: the refusal line, or the change made and
 *     recorded; relaxing through the annotation; the compat preset.
 * Run with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "oci-config.h"
#include "policy/policy-internal.h"
#include "utils.h"

/* A policy file in a temporary directory; NULL json: the hardened preset, explicitly. */
static struct moat_policy *load(const char *json)
{
	char path[] = "/tmp/moat-test-policy.XXXXXX";
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy *p = NULL;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	json = json ? json : "{}";
	assert_int_equal(write_all(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	if (moat_policy_load(path, &p, &err) < 0)
		fail_msg("load: %s", err.msg);
	unlink(path);
	return p;
}

/* The load error for json, with the temporary file's name cut out. */
static char *load_error(const char *json)
{
	char path[] = "/tmp/moat-test-policy.XXXXXX";
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy *p = NULL;
	int fd = mkstemp(path);
	char *msg;

	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	assert_true(moat_policy_load(path, &p, &err) < 0);
	unlink(path);
	assert_non_null(strstr(err.msg, path));
	msg = xstrdup(strstr(err.msg, path) + strlen(path));
	moat_error_clear(&err);
	return msg;
}

static struct oci_config *config(const char *json)
{
	struct oci_config *cfg = NULL;
	char *msg = NULL;

	if (oci_config_parse_data(json, strlen(json), "test", &cfg, &msg) < 0)
		fail_msg("config: %s", msg);
	return cfg;
}

/* A config as moat spec writes it in spirit: user and network namespaces, no capability. */
#define BASE_NS \
	"\"namespaces\": [{\"type\": \"user\"}, {\"type\": \"network\"}, {\"type\": \"mount\"}]"
#define CONFIG(process_extra, mounts, linux_extra)                                                           \
	"{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"},"                                      \
	"\"process\": {\"user\": {\"uid\": 0, \"gid\": 0}, \"cwd\": \"/\", \"args\": [\"sh\"]" process_extra \
	"}, \"mounts\": [" mounts "], \"linux\": {" BASE_NS linux_extra "}}"

/* apply's error line, or NULL when the config is accepted; *ret_res (when asked) then holds
 * the result, and *ret_changes what the state would keep of it. */
static char *apply_result(const struct moat_policy *p, struct oci_config *cfg,
			  struct oci_string_map **ret_changes, struct moat_policy_result **ret_res)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy_result *res = NULL;
	char *msg;

	if (moat_policy_apply(p, cfg, "/bundle", &res, &err) == 0) {
		if (ret_changes)
			*ret_changes = moat_policy_result_changes(res);
		if (ret_res)
			*ret_res = res;
		else
			moat_policy_result_free(res);
		return NULL;
	}
	assert_int_equal(err.code, err.code == EINVAL ? EINVAL : EPERM);
	msg = xstrdup(err.msg);
	moat_error_clear(&err);
	return msg;
}

static char *apply(const struct moat_policy *p, struct oci_config *cfg,
		   struct oci_string_map **ret_changes)
{
	return apply_result(p, cfg, ret_changes, NULL);
}

/* The line apply gives for config json under p (asserting it is refused). */
static void assert_refused(const struct moat_policy *p, const char *json, const char *expected)
{
	struct oci_config *cfg = config(json);
	char *msg = apply(p, cfg, NULL);

	if (msg == NULL)
		fail_msg("accepted, expected: %s", expected);
	assert_string_equal(msg, expected);
	free(msg);
	oci_config_free(cfg);
}

static void assert_accepted(const struct moat_policy *p, const char *json)
{
	struct oci_config *cfg = config(json);
	char *msg = apply(p, cfg, NULL);

	if (msg != NULL)
		fail_msg("refused: %s", msg);
	oci_config_free(cfg);
}

/* ---- paths -------------------------------------------------------------------------- */

static void test_resolve(void **state)
{
	char dir[] = "/tmp/moat-test-policy.XXXXXX", *link, *r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	link = xasprintf("%s/l", dir);
	assert_int_equal(symlink("/etc", link), 0);
	r = policy_resolve_path(link, NULL);
	assert_string_equal(r, "/etc");
	free(r);
	r = xasprintf("%s/missing/../x", link);
	free(link);
	link = r;
	r = policy_resolve_path(link, NULL);
	assert_string_equal(r, "/etc/x"); /* the missing tail folded as written */
	free(r);
	r = policy_resolve_path("rootfs/../../etc//./nowhere/", dir);
	assert_string_equal(r, "/tmp/etc/nowhere");
	free(r);
	r = policy_resolve_path("/../../", NULL);
	assert_string_equal(r, "/");
	free(r);
	r = policy_lexical_path("a/./b/../c", "/x");
	assert_string_equal(r, "/x/a/c");
	free(r);
	free(link);
	link = xasprintf("%s/l", dir);
	unlink(link);
	free(link);
	rmdir(dir);
}

static void test_under(void **state)
{
	(void)state;
	assert_true(policy_path_under("/etc", "/etc"));
	assert_true(policy_path_under("/etc/ssl", "/etc"));
	assert_false(policy_path_under("/etcetera", "/etc"));
	assert_true(policy_path_under("/anything", "/"));
	assert_false(policy_path_under("/et", "/etc"));
}

static void test_bind_sources(void **state)
{
	static const struct {
		const char *path;
		bool denied;
	} cases[] = {
		{ "/", true },
		{ "/etc", true },
		{ "/etc/ssl/certs", true }, /* below a sensitive path */
		{ "/var", true },           /* above /var/run */
		{ "/var/lib", true },       /* above /var/lib/docker */
		{ "/var/lib/mysql", false },
		{ "/usr", false },
		{ "/tmp/data", false },
		{ "/srv/web", false },
		{ "/proc/1", true },
		{ "/sys/fs/cgroup", true },
		{ "/dev/shm", true },
		{ "/boot", true },
		{ "/root/.ssh", true },
		{ "/home/alice", true },
		{ "/run/foo", true },
		{ "/tmp/x/docker.sock", true }, /* an engine socket anywhere */
		{ "/srv/podman.sock", true },
		{ "/srv/docker.socket", false },
		{ "/var/lib/docker", true },
		{ "/var/lib/docker/overlay2/abc/merged", true },
		{ "/var/lib/docker/containers", true },
		{ "/var/lib/docker/containers/abc", false },
		{ "/var/lib/docker/containers/abc/resolv.conf", false },
		{ "/var/lib/docker/containers/abc/docker.sock", true },
		{ "/var/lib/docker/volumes/v/_data", false },
		{ "/var/lib/containers/storage/overlay-containers/abc/userdata/hosts", false },
		{ "/var/lib/containers/storage/overlay/abc/diff", true },
		{ "/run/containers/storage/overlay-containers/abc/userdata/shm", false },
		{ "/run/containers/storage", true },
		{ "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs", false },
		{ "/run/containerd/io.containerd.runtime.v2.task/k8s.io", true },
		{ "/run/containerd/containerd.sock", true },
		{ "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/hosts", false },
		{ "/var/lib/containerd/io.containerd.content.v1.content/blobs", true },
		{ "/var/lib/kubelet/pods/uid/volumes/x", false },
		{ "/var/lib/kubelet/pki", true },
		{ "/run/user/1000/containers/overlay-containers/abc/userdata", false },
		{ "/run/user/1000/bus", true },
		{ "/home/alice/.local/share/containers/storage/volumes/v/_data", false },
		{ "/home/alice/.local/share/containers/storage/overlay", true },
	};
	struct moat_policy *p = load(NULL);
	const struct policy_rule_doc *rule = p->rule[MOAT_RULE_DENY_HOST_MOUNTS];

	(void)state;
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(cases); i++)
		if (policy_bind_source_denied(cases[i].path, cases[i].path, rule) !=
		    cases[i].denied)
			fail_msg("%s: expected %s", cases[i].path,
				 cases[i].denied ? "denied" : "allowed");
	moat_policy_free(p);
}

static void test_bind_lists(void **state)
{
	struct moat_policy *p = load("{\"rules\": {\"deny-host-mounts\": {"
				     "\"allow\": [\"/etc/ssl/certs\", \"/srv/keys/public\"],"
				     "\"deny\": [\"/srv/keys\"]}}}");
	const struct policy_rule_doc *rule = p->rule[MOAT_RULE_DENY_HOST_MOUNTS];

	(void)state;
	assert_false(policy_bind_source_denied("/etc/ssl/certs", "/etc/ssl/certs", rule));
	assert_false(policy_bind_source_denied("/etc/ssl/certs/a.pem", "x", rule));
	assert_true(policy_bind_source_denied("/etc/ssl", "/etc/ssl", rule));
	assert_true(policy_bind_source_denied("/srv/keys", "/srv/keys", rule));
	assert_true(policy_bind_source_denied("/srv/keys/private", "x", rule));
	assert_true(policy_bind_source_denied("/srv", "/srv", rule)); /* above a deny entry */
	assert_false(policy_bind_source_denied("/srv/keys/public", "x", rule)); /* allow wins */
	assert_false(policy_bind_source_denied("/srv/web", "/srv/web", rule));
	/* root.path: a sensitive path or an ancestor, not what lies below */
	assert_true(policy_root_path_denied("/", rule));
	assert_true(policy_root_path_denied("/var", rule));
	assert_true(policy_root_path_denied("/srv/keys", rule));
	assert_false(policy_root_path_denied("/var/lib/docker/overlay2/abc/merged", rule));
	assert_false(policy_root_path_denied("/run/containerd/x/rootfs", rule));
	moat_policy_free(p);
}

/* ---- the file ----------------------------------------------------------------------- */

static void test_file_errors(void **state)
{
	static const struct {
		const char *json, *error;
	} cases[] = {
		{ "{\"rules\": {\"nope\": {}}}",
		  ": rules.nope: invalid value \"nope\" (expected one of: "
		  "default-seccomp, deny-host-mounts, no-new-privileges, "
		  "capability-ceiling, deny-devices, network, auto-userns)" },
		{ "{\"rules\": {\"network\": {\"enabled\": 1}}}",
		  ": rules.network.enabled: expected boolean, got number" },
		{ "{\"rules\": {\"network\": {\"deny\": []}}}",
		  ": rules.network.deny: the network rule takes no list" },
		{ "{\"rules\": {\"deny-devices\": {\"allow\": [\"dev/x\"]}}}",
		  ": rules.deny-devices.allow[0]: 'dev/x' is not an absolute path" },
		{ "{\"rules\": {\"capability-ceiling\": {\"allow\": [\"CAP_NOPE\"]}}}",
		  ": rules.capability-ceiling.allow[0]: unknown capability 'CAP_NOPE'" },
		{ "{\"rules\": {\"network\": {\"enabled\": true, \"enabeld\": false}}}",
		  ": rules.network.enabeld: unknown member" },
		{ "{\"presets\": \"compat\"}", ": presets: unknown member" },
		{ "{\"containerMayRelax\": \"network\"}",
		  ": containerMayRelax: expected array, got string" },
		{ "[]", ": expected object, got array" },
	};

	(void)state;
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(cases); i++) {
		char *msg = load_error(cases[i].json);

		if (strcmp(msg, cases[i].error) != 0)
			fail_msg("%s: got '%s', expected '%s'", cases[i].json, msg, cases[i].error);
		free(msg);
	}
}

/* The default file must belong to root (or the caller) and be writable by no one else; a
 * missing one is the built-in preset. A file named with --policy is not checked. */
static void test_default_file_owner(void **state)
{
	char path[] = "/tmp/moat-test-policy.XXXXXX";
	moat_error err = MOAT_ERROR_INIT;
	struct moat_policy *p = NULL;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, "{}", 2), 2);
	close(fd);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(policy_load_at(path, true, &p, &err), 0);
	assert_true(moat_policy_from_file(p));
	moat_policy_free(p);
	assert_int_equal(chmod(path, 0664), 0);
	assert_int_equal(policy_load_at(path, true, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "is writable by group or others"));
	moat_error_clear(&err);
	assert_int_equal(policy_load_at(path, false, &p, &err), 0);
	moat_policy_free(p);
	if (geteuid() == 0) {
		assert_int_equal(chmod(path, 0644), 0);
		assert_int_equal(chown(path, 1234, 1234), 0);
		assert_int_equal(policy_load_at(path, true, &p, &err), -EPERM);
		assert_non_null(strstr(err.msg, "is owned by uid 1234, not root"));
		moat_error_clear(&err);
	}
	unlink(path);
	assert_int_equal(policy_load_at(path, true, &p, &err), 0);
	assert_false(moat_policy_from_file(p));
	assert_true(p->rule[MOAT_RULE_NETWORK]->enabled);
	moat_policy_free(p);
}

static void test_presets(void **state)
{
	struct moat_policy *h = load(NULL), *c = load("{\"preset\": \"compat\"}"),
			   *mixed = load("{\"preset\": \"compat\", \"rules\": {\"network\": {}, "
					 "\"auto-userns\": {\"enabled\": true}}}");

	(void)state;
	for (int r = 0; r < MOAT_RULE_COUNT; r++) {
		assert_true(h->rule[r]->enabled);
		assert_false(c->rule[r]->enabled);
		assert_int_equal(mixed->rule[r]->enabled, r == MOAT_RULE_AUTO_USERNS);
	}
	assert_true(moat_policy_from_file(h));
	moat_policy_free(h);
	moat_policy_free(c);
	moat_policy_free(mixed);
}

static void test_ceiling(void **state)
{
	struct moat_policy
		*d = load(NULL),
		*a = load("{\"rules\": {\"capability-ceiling\": {\"allow\": [\"sys_admin\"]}}}"),
		*r = load("{\"rules\": {\"capability-ceiling\": {\"deny\": [\"CAP_CHOWN\"], "
			  "\"allow\": [\"chown\"]}}}");
	int v;

	(void)state;
	assert_int_equal(__builtin_popcountll(d->cap_denied), 13);
	assert_int_equal(policy_cap_value("SYS_ADMIN", &v), 0);
	assert_true(d->cap_denied & (UINT64_C(1) << v));
	assert_false(a->cap_denied & (UINT64_C(1) << v));
	assert_int_equal(__builtin_popcountll(a->cap_denied), 12);
	assert_int_equal(r->cap_denied, 0);
	assert_int_equal(r->rule[MOAT_RULE_CAPABILITY_CEILING]->deny_len, 0);
	moat_policy_free(d);
	moat_policy_free(a);
	moat_policy_free(r);
}

/* ---- the rules ---------------------------------------------------------------------- */

static void test_hardened_accepts_and_changes(void **state)
{
	struct moat_policy *p = load(NULL);
	struct oci_config *cfg = config(CONFIG("", "", ""));
	struct oci_string_map *changes = NULL;

	(void)state;
	assert_null(apply(p, cfg, &changes));
	assert_non_null(changes);
	assert_int_equal(changes->len, 2);
	assert_string_equal(oci_string_map_get(changes, "default-seccomp"),
			    "added moat's default profile");
	assert_string_equal(oci_string_map_get(changes, "no-new-privileges"),
			    "set process.noNewPrivileges to true");
	assert_non_null(cfg->linux->seccomp);
	assert_non_null(cfg->linux->seccomp->default_action);
	assert_true(cfg->process->no_new_privileges);
	oci_string_map_free(changes);
	oci_config_free(cfg);

	/* a config that already has both is left alone, and nothing is recorded */
	cfg = config(CONFIG(", \"noNewPrivileges\": true", "",
			    ", \"seccomp\": {\"defaultAction\": \"SCMP_ACT_LOG\"}"));
	changes = NULL;
	assert_null(apply(p, cfg, &changes));
	assert_null(changes);
	assert_string_equal(cfg->linux->seccomp->default_action, "SCMP_ACT_LOG");
	oci_config_free(cfg);
	moat_policy_free(p);
}

static void test_default_profile_parses(void **state)
{
	const char *json = moat_policy_default_seccomp_json();
	void *profile = NULL;
	char *msg = NULL;

	(void)state;
	if (ocijson_parse_data(&oci_seccomp_type, json, strlen(json), "profile", &profile, &msg) <
	    0)
		fail_msg("%s", msg);
	ocijson_free(&oci_seccomp_type, profile);
}

#define P_TAIL "; allow it in /etc/moat/policy.json"

static void test_refusals(void **state)
{
	struct moat_policy *p = load(NULL);

	(void)state;
	free(p->path); /* messages name the policy file: a fixed name to compare with */
	p->path = xstrdup("/etc/moat/policy.json");
	assert_refused(
		p,
		CONFIG("",
		       "{\"destination\": \"/s\", \"source\": \"/var/run/docker.sock\", "
		       "\"options\": [\"bind\"]}",
		       ""),
		"policy deny-host-mounts: mounts[0] binds host path /var/run/docker.sock" P_TAIL);
	assert_refused(p,
		       CONFIG("",
			      "{\"destination\": \"/s\", \"type\": \"bind\", \"source\": \"/etc\"}",
			      ""),
		       "policy deny-host-mounts: mounts[0] binds host path /etc" P_TAIL);
	assert_refused(
		p,
		CONFIG(", \"capabilities\": {\"effective\": [\"CAP_KILL\", \"CAP_BPF\"]}", "", ""),
		"policy capability-ceiling: process.capabilities.effective[1] asks for CAP_BPF" P_TAIL);
	assert_refused(
		p,
		CONFIG("", "",
		       ", \"devices\": [{\"type\": \"c\", \"path\": \"/dev/k\", \"major\": 1, "
		       "\"minor\": 2}]"),
		"policy deny-devices: linux.devices[0] is host device /dev/k (kernel memory)" P_TAIL);
	assert_refused(
		p,
		CONFIG("", "",
		       ", \"resources\": {\"devices\": [{\"allow\": true, \"type\": \"a\"}]}"),
		"policy deny-devices: linux.resources.devices[0] allows every device" P_TAIL);
	assert_refused(p,
		       "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"linux\": "
		       "{\"namespaces\": [{\"type\": \"user\"}, {\"type\": \"mount\"}]}}",
		       "policy network: linux.namespaces has no network namespace (the container "
		       "would share the host's network)" P_TAIL);
	/* a device node bind and ordinary binds pass deny-host-mounts; mknod-only rules pass */
	assert_accepted(
		p,
		CONFIG("",
		       "{\"destination\": \"/n\", \"source\": \"/dev/null\", \"options\": [\"bind\"]},"
		       "{\"destination\": \"/d\", \"source\": \"/usr/share\", \"options\": [\"rbind\"]},"
		       "{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"}",
		       ", \"resources\": {\"devices\": [{\"allow\": true, \"access\": \"m\"}]}"));
	moat_policy_free(p);
}

/* auto-userns adds a user namespace mapping 64 Ki ids to the pool's start (create then lends
 * the container a range of its own); ids the namespace would not map are refused. As root
 * only: without root there are no host ids to lend, and the rule refuses. */
static void test_auto_userns(void **state)
{
	struct moat_policy *p =
		load("{\"autoUserns\": {\"hostStart\": 300000, \"idsPerContainer\": 1000}}");
	struct oci_config *cfg = config("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": "
					"\"rootfs\"}, \"linux\": {\"namespaces\": [{\"type\": "
					"\"network\"}, {\"type\": \"mount\"}]}}");
	struct oci_string_map *changes = NULL;
	struct moat_policy_result *res = NULL;
	const struct oci_linux *lx;
	char *msg;

	(void)state;
	free(p->path);
	p->path = xstrdup("/etc/moat/policy.json");
	msg = apply_result(p, cfg, &changes, &res);
	if (geteuid() != 0) {
		assert_non_null(msg);
		assert_non_null(strstr(msg, "only root can give the container host ids"));
		free(msg);
		goto out;
	}
	assert_null(msg);
	assert_non_null(oci_string_map_get(changes, "auto-userns"));
	/* create acts on the data, not the text */
	assert_int_equal(res->ns_added, 1U << MOAT_NS_USER);
	assert_null(res->userns_joined);
	assert_int_equal(res->userns_ids, 1000);
	assert_false(res->lent);
	assert_string_equal(oci_string_map_get(changes, "auto-userns"),
			    "user namespace added: container ids 0-999 map to a host range lent "
			    "from the pool, rootfs and bind mounts idmapped");
	res->lent = true;
	res->lent_start = 301000;
	res->lent_count = 1000;
	oci_string_map_free(changes);
	changes = moat_policy_result_changes(res);
	assert_string_equal(oci_string_map_get(changes, "auto-userns"),
			    "user namespace added: container ids 0-999 are host ids 301000-301999 "
			    "(lent from the pool), rootfs and bind mounts idmapped");
	lx = cfg->linux;
	assert_int_equal(lx->namespaces_len, 3);
	assert_string_equal(lx->namespaces[2]->type, "user");
	assert_null(lx->namespaces[2]->path);
	assert_int_equal(lx->uid_mappings_len, 1);
	assert_int_equal(lx->gid_mappings_len, 1);
	assert_int_equal(lx->uid_mappings[0]->container_id, 0);
	assert_int_equal(lx->uid_mappings[0]->host_id, 300000);
	assert_int_equal(lx->uid_mappings[0]->size, 1000);
	assert_refused(
		p,
		"{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"process\": "
		"{\"cwd\": \"/\", \"user\": {\"uid\": 5, \"gid\": 5, \"additionalGids\": [7, "
		"1000]}}, \"linux\": {\"namespaces\": [{\"type\": \"network\"}, "
		"{\"type\": \"mount\"}]}}",
		"policy auto-userns: process.user.additionalGids[1] 1000 is outside the 1000 "
		"ids the automatic user namespace maps (autoUserns.idsPerContainer)" P_TAIL);
out:
	oci_string_map_free(changes);
	moat_policy_result_free(res);
	oci_config_free(cfg);
	moat_policy_free(p);
}

static void test_relaxing(void **state)
{
	struct moat_policy *p = load("{\"containerMayRelax\": [\"capability-ceiling\"]}");
	struct oci_string_map *changes = NULL;
	struct oci_config *cfg;
	char *msg;

	(void)state;
	free(p->path);
	p->path = xstrdup("/etc/moat/policy.json");
	/* the refusal offers the annotation for a rule the file lets containers relax */
	assert_refused(p, CONFIG(", \"capabilities\": {\"bounding\": [\"CAP_SYS_ADMIN\"]}", "", ""),
		       "policy capability-ceiling: process.capabilities.bounding[0] asks for "
		       "CAP_SYS_ADMIN" P_TAIL " or annotate moat.policy.allow=capability-ceiling");
	cfg = config(
		"{\"ociVersion\": \"1.2.0\", \"annotations\": {\"moat.policy.allow\": "
		"\" capability-ceiling ,\"}, \"process\": {\"user\": {\"uid\": 0, \"gid\": 0}, "
		"\"cwd\": \"/\", \"capabilities\": {\"bounding\": [\"CAP_SYS_ADMIN\"]}}, "
		"\"linux\": {" BASE_NS "}}");
	assert_null(apply(p, cfg, &changes));
	assert_string_equal(oci_string_map_get(changes, "capability-ceiling"),
			    "relaxed by annotation moat.policy.allow");
	oci_string_map_free(changes);
	oci_config_free(cfg);
	/* a rule the file does not list */
	cfg = config("{\"ociVersion\": \"1.2.0\", \"annotations\": {\"moat.policy.allow\": "
		     "\"network\"}, \"linux\": {" BASE_NS "}}");
	msg = apply(p, cfg, NULL);
	assert_string_equal(msg, "policy network: annotation moat.policy.allow relaxes this rule, "
				 "but /etc/moat/policy.json does not list it in containerMayRelax");
	free(msg);
	oci_config_free(cfg);
	moat_policy_free(p);
}

static void test_reserved_annotations(void **state)
{
	struct moat_policy *p = load("{\"preset\": \"compat\"}");
	struct oci_config *cfg =
		config("{\"ociVersion\": \"1.2.0\", \"annotations\": "
		       "{\"moat.policy.allow\": \"network\", \"moat.policy.x\": \"y\"}}");
	char *msg = apply(p, cfg, NULL);

	(void)state;
	assert_string_equal(msg,
			    "policy: annotations.moat.policy.x: moat.policy.* is reserved for "
			    "what the policy records (a config may set only moat.policy.allow)");
	free(msg);
	oci_config_free(cfg);
	moat_policy_free(p);
}

static void test_compat_accepts_everything(void **state)
{
	struct moat_policy *p = load("{\"preset\": \"compat\"}");
	struct oci_config *cfg = config(
		"{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"/\"}, \"process\": {\"user\": "
		"{\"uid\": 0, \"gid\": 0}, \"cwd\": \"/\", \"capabilities\": {\"bounding\": "
		"[\"CAP_SYS_ADMIN\"]}}, \"mounts\": [{\"destination\": \"/x\", \"source\": \"/\", "
		"\"options\": [\"rbind\"]}], \"linux\": {\"devices\": [{\"type\": \"b\", \"path\": "
		"\"/dev/sda\", \"major\": 8, \"minor\": 0}]}}");
	struct oci_string_map *changes = NULL;

	(void)state;
	assert_null(apply(p, cfg, &changes));
	assert_null(changes);
	assert_null(cfg->linux->seccomp);
	assert_false(cfg->process->no_new_privileges_present);
	oci_config_free(cfg);
	moat_policy_free(p);
}

static void test_explain_collects(void **state)
{
	struct moat_policy *p = load("{\"rules\": {\"network\": {\"enabled\": false}}}");
	struct oci_config *cfg = config(CONFIG(
		", \"capabilities\": {\"bounding\": [\"CAP_SYS_ADMIN\"], \"permitted\": [\"CAP_SYS_ADMIN\"]}",
		"{\"destination\": \"/a\", \"source\": \"/etc\", \"options\": [\"bind\"]},"
		"{\"destination\": \"/b\", \"source\": \"/root\", \"options\": [\"bind\"]}",
		""));
	struct moat_policy_explanation *ex = NULL;
	moat_error err = MOAT_ERROR_INIT;

	(void)state;
	assert_int_equal(moat_policy_explain(p, cfg, "/bundle", &ex, &err), 0);
	assert_int_equal(ex->n_refusals, 4);
	assert_int_equal(ex->n_findings, 6); /* and two changes */
	assert_int_equal(ex->state[MOAT_RULE_NETWORK], MOAT_RULE_OFF);
	assert_int_equal(ex->state[MOAT_RULE_DENY_HOST_MOUNTS], MOAT_RULE_ON);
	assert_string_equal(ex->findings[1].text, "mounts[0] binds host path /etc");
	assert_string_equal(ex->findings[2].text, "mounts[1] binds host path /root");
	moat_policy_explanation_free(ex);
	oci_config_free(cfg);
	moat_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_under),
		cmocka_unit_test(test_bind_sources),
		cmocka_unit_test(test_bind_lists),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_default_file_owner),
		cmocka_unit_test(test_presets),
		cmocka_unit_test(test_ceiling),
		cmocka_unit_test(test_hardened_accepts_and_changes),
		cmocka_unit_test(test_default_profile_parses),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_auto_userns),
		cmocka_unit_test(test_relaxing),
		cmocka_unit_test(test_reserved_annotations),
		cmocka_unit_test(test_compat_accepts_everything),
		cmocka_unit_test(test_explain_collects),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
