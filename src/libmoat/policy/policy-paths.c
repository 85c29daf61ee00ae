/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: which host paths a bind mount may use (the deny-host-mounts rule).
 *
 * A bind source is judged by where it really is on the host: every symlink resolved. The
 * order, first match wins:
 *   1. the policy file's allow list (the path or below)             allowed
 *   2. an engine's API socket (by basename, anywhere)                refused
 *   3. the policy file's deny list (the path, below it or above it)  refused
 *   4. an engine's per-container files (engine_files below)          allowed
 *   5. a sensitive path (the path, below it or above it), or /       refused
 *   6. anything else                                                 allowed
 * "Above it" means a bind of /var is refused because it holds /var/run.
 *
 * The check reads the host's paths now and the mount happens a moment later; someone who
 * can swap host symlinks in between is already root on the host. The policy judges the
 * config, the mount code (mount.c) then opens what it binds once, by descriptor.
 */
#include "policy-internal.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

/* Host paths no container should see, with why. */
static const struct {
	const char *path;
	const char *why;
} sensitive_paths[] = {
	{ "/etc", "host configuration and credentials (shadow, ssh and TLS keys)" },
	{ "/root", "root's home" },
	{ "/home", "users' homes, their keys and tokens" },
	{ "/proc", "every host process, kernel knobs" },
	{ "/sys", "kernel and device knobs" },
	{ "/dev", "host devices (a single device node is judged by deny-devices)" },
	{ "/boot", "the kernel and the boot loader" },
	{ "/run", "runtime sockets and state: engines, systemd, D-Bus" },
	{ "/var/run", "the same as /run where it is not a symlink to it" },
	{ "/var/lib/docker", "Docker's state: every container's files" },
	{ "/var/lib/containerd", "containerd's state: every container's files" },
	{ "/var/lib/containers", "podman's and CRI-O's storage: every container's files" },
	{ "/var/lib/kubelet", "kubelet's state: every pod's secrets" },
};

/* The files an engine makes for one container, which it binds into that container (fnmatch
 * patterns; the path must be at or below a match). Everything here lies under a sensitive
 * path, which is why it needs saying. */
static const char *const engine_files[] = {
	/* Docker: containers/<id>/{resolv.conf,hosts,hostname,mounts/shm}, volumes/<name>/_data */
	"/var/lib/docker/containers/*",
	"/var/lib/docker/volumes/*",
	/* podman and CRI-O (containers/storage): <driver>-containers/<id>/userdata/{resolv.conf,
	 * hosts,hostname,.containerenv,shm,run/secrets}, under the graph root and the run root */
	"/var/lib/containers/storage/*-containers/*",
	"/var/lib/containers/storage/volumes/*",
	"/run/containers/storage/*-containers/*",
	/* rootless podman: run root in $XDG_RUNTIME_DIR, graph root in the user's home */
	"/run/user/*/containers/*-containers/*",
	"/home/*/.local/share/containers/storage/*-containers/*",
	"/home/*/.local/share/containers/storage/volumes/*",
	/* rootless Docker's data root */
	"/home/*/.local/share/docker/containers/*",
	"/home/*/.local/share/docker/volumes/*",
	/* containerd's CRI: sandboxes/<id>/{hosts,hostname,resolv.conf,shm}; the shim's bundle */
	"/var/lib/containerd/io.containerd.grpc.v1.cri/*/*",
	"/run/containerd/io.containerd.grpc.v1.cri/*/*",
	"/run/containerd/io.containerd.runtime.v2.task/*/*",
	"/run/k3s/containerd/io.containerd.grpc.v1.cri/*/*",
	"/run/k3s/containerd/io.containerd.runtime.v2.task/*/*",
	/* kubelet: pods/<uid>/{volumes,etc-hosts,containers/<name>/<n> (termination log)} */
	"/var/lib/kubelet/pods/*",
};

/* The API sockets of container engines: whoever reaches one owns the host. */
static const char *const engine_sockets[] = {
	"docker.sock", "containerd.sock", "containerd.sock.ttrpc",
	"podman.sock", "crio.sock",       "cri-dockerd.sock",
};

bool policy_path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strcmp(prefix, "/") == 0)
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* "." and ".." and repeated slashes folded, lexically; path is absolute. */
static char *normalize(const char *path)
{
	char *out = xmalloc(strlen(path) + 2);
	const char *p = path;
	size_t n = 0;

	while (*p != '\0') {
		const char *end;
		size_t len;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		end = strchrnul(p, '/');
		len = (size_t)(end - p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (!(len == 1 && p[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p = end;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

char *policy_resolve_path(const char *path, const char *bundle)
{
	_cleanup_free_ char *abs =
		path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", bundle ? bundle : "", path);
	char real[PATH_MAX];
	size_t cut = strlen(abs);

	/* The longest prefix that exists, resolved, then the rest as written. */
	for (;;) {
		char saved = abs[cut];

		abs[cut] = '\0';
		if (realpath(cut == 0 ? "/" : abs, real) != NULL) {
			_cleanup_free_ char *joined = NULL;

			abs[cut] = saved;
			joined = xasprintf("%s/%s", real, abs + cut);
			return normalize(joined);
		}
		abs[cut] = saved;
		if (cut == 0)
			return normalize(abs);
		while (cut > 0 && abs[cut - 1] != '/')
			cut--;
		if (cut > 0)
			cut--;
	}
}

char *policy_lexical_path(const char *path, const char *bundle)
{
	_cleanup_free_ char *abs =
		path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", bundle ? bundle : "", path);

	return normalize(abs);
}

static bool is_engine_socket(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(engine_sockets); i++)
		if (strcmp(base, engine_sockets[i]) == 0)
			return true;
	return false;
}

/* path is at or below a match of pattern (whole components). */
static bool under_pattern(const char *path, const char *pattern)
{
	_cleanup_free_ char *prefix = NULL;
	const char *p = path, *q;

	for (q = pattern; *q != '\0'; q++) {
		if (*q != '/')
			continue;
		if (*p != '/')
			return false;
		p = strchrnul(p + 1, '/');
	}
	prefix = strndup(path, (size_t)(p - path));
	return prefix != NULL && fnmatch(pattern, prefix, FNM_PATHNAME) == 0;
}

static bool is_engine_file(const char *path)
{
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(engine_files); i++)
		if (under_pattern(path, engine_files[i]))
			return true;
	return false;
}

/* path is entry or below it, or (with above) an ancestor of it. The entry is taken both
 * as written and resolved (a host where /var/run is a symlink to /run). */
static bool near_entry(const char *path, const char *entry, bool below, bool above)
{
	_cleanup_free_ char *real = policy_resolve_path(entry, "/");
	const char *forms[] = { entry, real };

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(forms); i++) {
		if (strcmp(path, forms[i]) == 0)
			return true;
		if (below && policy_path_under(path, forms[i]))
			return true;
		if (above && policy_path_under(forms[i], path))
			return true;
	}
	return false;
}

static bool near_list(const char *path, char *const *list, size_t n, bool below, bool above)
{
	for (size_t i = 0; i < n; i++)
		if (near_entry(path, list[i], below, above))
			return true;
	return false;
}

static bool near_sensitive(const char *path, bool below)
{
	if (strcmp(path, "/") == 0)
		return true;
	for (size_t i = 0; i < MOAT_ARRAY_SIZE(sensitive_paths); i++)
		if (near_entry(path, sensitive_paths[i].path, below, true))
			return true;
	return false;
}

bool policy_bind_source_denied(const char *resolved, const char *written,
			       const struct policy_rule_doc *rule)
{
	if (near_list(resolved, rule->allow, rule->allow_len, true, false))
		return false;
	if (is_engine_socket(resolved) || is_engine_socket(written))
		return true;
	if (near_list(resolved, rule->deny, rule->deny_len, true, true))
		return true;
	if (is_engine_file(resolved))
		return false;
	return near_sensitive(resolved, true);
}

bool policy_root_path_denied(const char *resolved, const struct policy_rule_doc *rule)
{
	if (near_list(resolved, rule->allow, rule->allow_len, true, false))
		return false;
	if (near_list(resolved, rule->deny, rule->deny_len, false, true))
		return true;
	return near_sensitive(resolved, false);
}
