/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat exec: run another process in a running container. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "log.h"
#include "moat.h"
#include "process.h"
#include "process-attrs.h"
#include "strv.h"
#include "utils.h"

static void usage(void)
{
	printf("Usage: moat exec [OPTIONS] ID [COMMAND [ARG...]]\n\n"
	       "Run COMMAND in the running (or created) container ID, in all of its\n"
	       "namespaces and its cgroup, as the container's own process would run (its env,\n"
	       "user, cwd, capabilities, rlimits, no_new_privs) unless the flags say otherwise.\n\n"
	       "  -p, --process FILE       the whole process as OCI process JSON (no COMMAND)\n"
	       "  -t, --tty                allocate a pty\n"
	       "      --console-socket S   send the pty master to unix socket S\n"
	       "  -d, --detach             return once the process runs\n"
	       "      --pid-file FILE      write the process's host pid to FILE\n"
	       "      --cwd DIR            working directory inside the container\n"
	       "  -e, --env NAME=VALUE     set an environment variable (repeatable)\n"
	       "  -u, --user UID[:GID]     run as this user\n"
	       "  -g, --additional-gids G  add a supplementary group (repeatable)\n"
	       "  -c, --cap CAP            add a capability to the bounding, effective and\n"
	       "                           permitted sets (repeatable)\n"
	       "      --no-new-privs       set no_new_privs\n"
	       "      --preserve-fds N     pass N more fds (from 3) to the process\n"
	       "      --cgroup [CTRL[,CTRL]:]PATH\n"
	       "                           run in the sub-cgroup PATH of the container's cgroup\n"
	       "                           (it must exist): in every hierarchy, or with CTRL:\n"
	       "                           in those holding the controllers (repeatable)\n"
	       "      --ignore-paused      exec into a paused container too: the process waits,\n"
	       "                           frozen, and moat exec returns once it is resumed\n"
	       "      --process-label L    the SELinux label to exec the process with\n"
	       "      --apparmor PROFILE   the AppArmor profile to exec the process under\n"
	       "--process-label and --apparmor need that LSM on the host, and apply with\n"
	       "--process too.\n");
}

struct flags {
	const char *process_file, *cwd, *user;
	const char *selinux_label, *apparmor_profile;
	char **env, **caps, **cgroups;
	size_t n_env, n_caps, n_cgroups;
	uint32_t *gids;
	size_t n_gids;
	bool tty, no_new_privs;
};

static bool parse_u32(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX || s[0] == '-')
		return false;
	*ret = (uint32_t)v;
	return true;
}

/* Replace NAME=... in env, or append it. */
static void set_env(struct oci_process *p, const char *kv)
{
	size_t n = strcspn(kv, "="), i;

	for (i = 0; i < p->env_len; i++) {
		if (strncmp(p->env[i], kv, n) == 0 && p->env[i][n] == '=') {
			free(p->env[i]);
			p->env[i] = xstrdup(kv);
			return;
		}
	}
	strv_push(&p->env, &p->env_len, kv);
}

static void add_cap(struct oci_process *p, const char *cap)
{
	if (p->capabilities == NULL)
		p->capabilities = xcalloc(1, sizeof(*p->capabilities));
	strv_push(&p->capabilities->bounding, &p->capabilities->bounding_len, cap);
	strv_push(&p->capabilities->effective, &p->capabilities->effective_len, cap);
	strv_push(&p->capabilities->permitted, &p->capabilities->permitted_len, cap);
}

static int apply_user(struct oci_process *p, const char *spec)
{
	_cleanup_free_ char *copy = xstrdup(spec);
	char *colon = strchr(copy, ':');

	if (colon)
		*colon = '\0';
	if (!parse_u32(copy, &p->user->uid) || (colon && !parse_u32(colon + 1, &p->user->gid)))
		return moat_usage_error("exec", "--user: '%s' is not UID[:GID]", spec);
	return 0;
}

/* The container's process, changed by the flags and given args. */
static int apply_flags(struct oci_process *p, const struct flags *f, char **args, size_t n)
{
	size_t i;

	for (i = 0; i < p->args_len; i++)
		free(p->args[i]);
	free(p->args);
	p->args = NULL;
	p->args_len = 0;
	for (i = 0; i < n; i++)
		strv_push(&p->args, &p->args_len, args[i]);
	for (i = 0; i < f->n_env; i++)
		set_env(p, f->env[i]);
	for (i = 0; i < f->n_caps; i++)
		add_cap(p, f->caps[i]);
	if (f->cwd) {
		free(p->cwd);
		p->cwd = xstrdup(f->cwd);
	}
	if (f->user && apply_user(p, f->user) != 0)
		return EXIT_FAILURE;
	if (f->n_gids) {
		free(p->user->additional_gids);
		p->user->additional_gids = xcalloc(f->n_gids, sizeof(uint32_t));
		memcpy(p->user->additional_gids, f->gids, f->n_gids * sizeof(uint32_t));
		p->user->additional_gids_len = f->n_gids;
	}
	if (f->no_new_privs)
		p->no_new_privileges = p->no_new_privileges_present = true;
	p->terminal = f->tty;
	p->terminal_present = true;
	return 0;
}

#ifdef HAVE_SELINUX
#define SELINUX_MISSING "SELinux is not enabled on this host"
#else
#define SELINUX_MISSING "this moat was built without SELinux support (configure --with-selinux)"
#endif

/* --process-label and --apparmor: refused at once where the host lacks the LSM. */
static int check_lsm_flags(const struct flags *f)
{
	if (f->selinux_label != NULL && !moat_lsm_selinux_available()) {
		moat_log_error("exec: --process-label: %s", SELINUX_MISSING);
		return EXIT_FAILURE;
	}
	if (f->apparmor_profile != NULL && !moat_lsm_apparmor_available()) {
		moat_log_error("exec: --apparmor: AppArmor is not enabled on this host");
		return EXIT_FAILURE;
	}
	return 0;
}

static void replace(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value);
}

static void apply_lsm_flags(struct oci_process *p, const struct flags *f)
{
	if (f->selinux_label != NULL)
		replace(&p->selinux_label, f->selinux_label);
	if (f->apparmor_profile != NULL)
		replace(&p->apparmor_profile, f->apparmor_profile);
}

static int parse_flags(int argc, char **argv, struct flags *f, struct moat_exec_opts *o)
{
	static const struct option opts[] = {
		{ "process", required_argument, NULL, 'p' },
		{ "tty", no_argument, NULL, 't' },
		{ "console-socket", required_argument, NULL, 'S' },
		{ "detach", no_argument, NULL, 'd' },
		{ "pid-file", required_argument, NULL, 'P' },
		{ "cwd", required_argument, NULL, 'C' },
		{ "env", required_argument, NULL, 'e' },
		{ "user", required_argument, NULL, 'u' },
		{ "additional-gids", required_argument, NULL, 'g' },
		{ "cap", required_argument, NULL, 'c' },
		{ "no-new-privs", no_argument, NULL, 'N' },
		{ "preserve-fds", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "ignore-paused", no_argument, NULL, 'I' },
		{ "process-label", required_argument, NULL, 'L' },
		{ "apparmor", required_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t v;
	int c;

	while ((c = getopt_long(argc, argv, "+p:tde:u:g:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': f->process_file = optarg; break;
		case 't': f->tty = true; break;
		case 'S': o->console_socket = optarg; break;
		case 'd': o->detach = true; break;
		case 'P': o->pid_file = optarg; break;
		case 'C': f->cwd = optarg; break;
		case 'e':
			if (strchr(optarg, '=') == NULL || optarg[0] == '=')
				return moat_usage_error("exec", "--env: '%s' is not NAME=VALUE",
							optarg);
			strv_push(&f->env, &f->n_env, optarg);
			break;
		case 'u': f->user = optarg; break;
		case 'g':
			if (!parse_u32(optarg, &v))
				return moat_usage_error(
					"exec", "--additional-gids: '%s' is not a gid", optarg);
			f->gids = xrealloc(f->gids, (f->n_gids + 1) * sizeof(uint32_t));
			f->gids[f->n_gids++] = v;
			break;
		case 'c': strv_push(&f->caps, &f->n_caps, optarg); break;
		case 'N': f->no_new_privs = true; break;
		case 'F':
			if (!parse_u32(optarg, &v) || v > INT_MAX - 3)
				return moat_usage_error(
					"exec", "--preserve-fds: '%s' is not a count", optarg);
			o->preserve_fds = (int)v;
			break;
		case 'G': strv_push(&f->cgroups, &f->n_cgroups, optarg); break;
		case 'I': o->ignore_paused = true; break;
		case 'L': f->selinux_label = optarg; break;
		case 'A': f->apparmor_profile = optarg; break;
		case 'h': usage(); exit(EXIT_SUCCESS);
		default: return moat_bad_option("exec", argv);
		}
	}
	return check_lsm_flags(f);
}

static int build_process(struct moat_globals *g, const struct flags *f, const char *id, char **args,
			 size_t n, struct oci_process **ret)
{
	moat_error err = MOAT_ERROR_INIT;
	_cleanup_free_ char *msg = NULL;
	int r;

	if (f->process_file != NULL) {
		if (n > 0)
			return moat_usage_error("exec",
						"give either --process or a COMMAND, not both");
		r = oci_process_parse_file(f->process_file, ret, &msg);
		if (r < 0) {
			moat_error_msg(&err, -r, "--process: %s", msg ? msg : f->process_file);
			return moat_fail(&err);
		}
		if (f->tty)
			(*ret)->terminal = (*ret)->terminal_present = true;
		apply_lsm_flags(*ret, f);
		return 0;
	}
	if (n == 0)
		return moat_usage_error("exec", "missing COMMAND (or --process FILE)");
	if (moat_exec_default_process(g->root, id, ret, &err) < 0)
		return moat_fail(&err);
	apply_lsm_flags(*ret, f);
	return apply_flags(*ret, f, args, n);
}

static void flags_free(struct flags *f)
{
	size_t i;

	for (i = 0; i < f->n_env; i++)
		free(f->env[i]);
	for (i = 0; i < f->n_caps; i++)
		free(f->caps[i]);
	for (i = 0; i < f->n_cgroups; i++)
		free(f->cgroups[i]);
	free(f->env);
	free(f->caps);
	free(f->cgroups);
	free(f->gids);
}

int moat_cmd_exec(struct moat_globals *g, int argc, char **argv)
{
	moat_error err = MOAT_ERROR_INIT;
	struct moat_exec_opts o = { .root = g->root, .policy = g->policy };
	struct oci_process *p = NULL;
	struct flags f = { 0 };
	int r, status = 0;

	r = parse_flags(argc, argv, &f, &o);
	if (r == 0 && optind >= argc)
		r = moat_usage_error("exec", "missing container ID");
	if (r == 0) {
		o.id = argv[optind];
		r = build_process(g, &f, o.id, argv + optind + 1, (size_t)(argc - optind - 1), &p);
	}
	if (r != 0) {
		flags_free(&f);
		return EXIT_FAILURE;
	}
	moat_process_drop_unraisable_ambient(p, &err);
	moat_log_warnings(&err);
	moat_error_clear(&err);
	o.process = p;
	o.cgroups = f.cgroups;
	o.n_cgroups = f.n_cgroups;
	r = moat_container_exec(&o, &status, &err);
	flags_free(&f);
	oci_process_free(p);
	if (r < 0)
		return moat_fail(&err);
	/* warnings of a process that started (its seccomp profile's skipped names, say) */
	moat_log_warnings(&err);
	moat_error_clear(&err);
	return o.detach ? EXIT_SUCCESS : status;
}
