/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: egress for a container an engine runs (egress.h), asked for by annotations:
 *
 *   moat.egress.allow=HOST[:PORT][+private...],...   the rules, as --allow
 *   moat.egress.resolve=HOST=ADDRESS,...            pins, as --resolve
 *   moat.egress.proxy-header=HOST=Name: value;...   headers, as --proxy-header
 *
 * The container must have a network namespace of its own (an engine's --network none):
 * a proxy beside a route out would filter nothing. Its process gets the proxy's
 * variables. After create has the init, a helper process (started here, detached from
 * create and from the engine's process group) serves the proxy's socket in the
 * container's namespace, logs to <state>/egress.log, and ends when the init does, so
 * delete leaves no process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "oci-config.h"
#include "strv.h"
#include "utils.h"

#define A_ALLOW "moat.egress.allow"
#define A_RESOLVE "moat.egress.resolve"
#define A_HEADER "moat.egress.proxy-header"

typedef int (*add_fn)(struct moat_egress_policy *p, const char *text, moat_error *err);

static int add_each(struct moat_egress_policy *p, const struct oci_config *cfg, const char *key,
		    const char *sep, add_fn add, moat_error *err)
{
	const char *v = oci_string_map_get(cfg->annotations, key);
	_cleanup_free_ char *copy = v ? xstrdup(v) : NULL;
	char *save = NULL;

	for (char *t = copy ? strtok_r(copy, sep, &save) : NULL; t;
	     t = strtok_r(NULL, sep, &save)) {
		while (*t == ' ')
			t++;
		if (add(p, t, err) < 0)
			return moat_error_prefix(err, "annotation %s", key);
	}
	return 0;
}

static bool own_network_namespace(const struct oci_config *cfg)
{
	const struct oci_linux *lx = cfg->linux;

	for (size_t i = 0; lx != NULL && i < lx->namespaces_len; i++)
		if (strcmp(lx->namespaces[i]->type, "network") == 0)
			return lx->namespaces[i]->path == NULL ||
			       lx->namespaces[i]->path[0] == '\0';
	return false;
}

static void add_env(struct oci_process *proc, const char *kv)
{
	proc->env = xrealloc(proc->env, (proc->env_len + 2) * sizeof(char *));
	proc->env[proc->env_len++] = xstrdup(kv);
	proc->env[proc->env_len] = NULL;
}

int moat_egress_from_config(struct oci_config *cfg, struct moat_egress_policy *p, bool *ret_on,
			    moat_error *err)
{
	*ret_on = false;
	if (add_each(p, cfg, A_ALLOW, ",", moat_egress_rule_add, err) < 0 ||
	    add_each(p, cfg, A_RESOLVE, ",", moat_egress_pin_add, err) < 0 ||
	    add_each(p, cfg, A_HEADER, ";", moat_egress_header_add, err) < 0)
		return moat_error_ret(err);
	if (p->n_rules == 0)
		return 0;
	if (!own_network_namespace(cfg))
		return moat_error_msg(
			err, EINVAL,
			"annotation " A_ALLOW ": the container needs a network "
			"namespace of its own, with only loopback (podman or docker "
			"--network none); a proxy beside a route out filters nothing");
	p->max_connections = MOAT_EGRESS_MAX_CONNECTIONS;
	p->max_bytes = MOAT_EGRESS_MAX_BYTES;
	p->connect_timeout_ms = MOAT_EGRESS_CONNECT_TIMEOUT_MS;
	p->idle_timeout_ms = MOAT_EGRESS_IDLE_TIMEOUT_MS;
	if (cfg->process != NULL) {
		_cleanup_(strv_freep) char **env = moat_egress_env();

		for (size_t i = 0; env[i] != NULL; i++)
			add_env(cfg->process, env[i]);
	}
	*ret_on = true;
	return 0;
}

/* The helper: its own session, no stdio (the proxy keeps no other fd); ends with the init. */
static _Noreturn void helper(const struct moat_egress_policy *p, int listen_fd, int log_fd,
			     int init_fd, const char *id)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	setsid();
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
		_exit(1);
	signal(SIGHUP, SIG_IGN);
	moat_egress_proxy_main(p, listen_fd, log_fd, id, init_fd);
}

int moat_egress_start_for(const struct moat_egress_policy *p, pid_t pid, int dirfd, const char *id,
			  moat_error *err)
{
	_cleanup_close_ int listen_fd = -1, log_fd = -1, init_fd = -1;
	pid_t first;
	int status;

	if (moat_egress_listen_in(pid, &listen_fd, err) < 0)
		return moat_error_prefix(err, "annotation " A_ALLOW);
	log_fd = openat(dirfd, "egress.log", O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			0600);
	init_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (log_fd < 0 || init_fd < 0)
		return moat_error_set(err, errno, "annotation " A_ALLOW ": the proxy's log");
	/* twice forked: the helper is nobody's child but the reaper's, and create returns */
	first = fork();
	if (first < 0)
		return moat_error_set(err, errno, "annotation " A_ALLOW ": fork the proxy");
	if (first == 0) {
		pid_t second = fork();

		if (second == 0)
			helper(p, listen_fd, log_fd, init_fd, id);
		_exit(second < 0);
	}
	while (waitpid(first, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return moat_error_msg(err, ECHILD,
				      "annotation " A_ALLOW ": the proxy did not start");
	return 0;
}
