/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the config of a sandbox's container, and of each command run in it.
 *
 * It starts from `moat spec`'s hardened default (moat's seccomp profile, no capabilities,
 * noNewPrivileges, a network namespace with only loopback, masked and read-only paths), with
 * no uid mappings, so the policy lends the sandbox host ids of its own. Then: the overlay as
 * a writable root, no /tmp tmpfs (/tmp is part of the writable layer, held to --disk and
 * shown in the diff), the limits, and the idle init as the container's process. */
#include <errno.h>
#include <string.h>

#include "oci-cleanup.h"
#include "sandbox-internal.h"
#include "spec.h"
#include "strv.h"
#include "utils.h"

#define SB_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define SB_CPU_PERIOD 100000 /* microseconds */

static void drop_mount(struct oci_config *cfg, const char *destination)
{
	for (size_t i = 0; i < cfg->mounts_len; i++) {
		if (strcmp(cfg->mounts[i]->destination, destination) != 0)
			continue;
		ocijson_free(&oci_mount_type, cfg->mounts[i]);
		memmove(&cfg->mounts[i], &cfg->mounts[i + 1],
			(cfg->mounts_len - i - 1) * sizeof(*cfg->mounts));
		cfg->mounts_len--;
		return;
	}
}

static void set_resources(const struct moat_sandbox_opts *o, struct oci_linux *lx)
{
	struct oci_resources *res = lx->resources;

	if (res == NULL)
		res = lx->resources = xcalloc(1, sizeof(*res));
	if (res->pids == NULL)
		res->pids = xcalloc(1, sizeof(*res->pids));
	res->pids->limit = (int64_t)o->pids;
	if (res->memory == NULL)
		res->memory = xcalloc(1, sizeof(*res->memory));
	res->memory->limit = (int64_t)o->memory;
	res->memory->limit_present = true;
	/* memory+swap = memory: a sandbox does not swap its way past its limit */
	res->memory->swap = (int64_t)o->memory;
	res->memory->swap_present = true;
	if (o->cpus > 0) {
		if (res->cpu == NULL)
			res->cpu = xcalloc(1, sizeof(*res->cpu));
		res->cpu->period = SB_CPU_PERIOD;
		res->cpu->period_present = true;
		res->cpu->quota = (int64_t)(o->cpus * SB_CPU_PERIOD);
		res->cpu->quota_present = true;
	}
}

/* The process's base: no environment but PATH, the sandbox's user, no terminal. */
static void set_identity(struct oci_process *p, uid_t uid, gid_t gid, const char *cwd)
{
	strv_free_n(p->env, p->env_len);
	p->env = xcalloc(2, sizeof(char *));
	p->env[0] = xstrdup(SB_PATH);
	p->env_len = 1;
	free(p->cwd);
	p->cwd = xstrdup(cwd);
	p->user->uid = uid;
	p->user->gid = gid;
	free(p->user->additional_gids);
	p->user->additional_gids = NULL;
	p->user->additional_gids_len = 0;
	p->terminal = false;
	p->no_new_privileges = p->no_new_privileges_present = true;
}

int sb_config(const struct moat_sandbox_opts *o, const char *rootfs, struct oci_config **ret,
	      moat_error *err)
{
	_cleanup_(oci_config_freep) struct oci_config *cfg = NULL;
	_cleanup_free_ char *vmm = NULL;
	struct oci_process *p;

	if (moat_spec_default(false, 0, 0, &cfg, err) < 0)
		return moat_error_ret(err);
	free(cfg->root->path);
	cfg->root->path = xstrdup(rootfs);
	cfg->root->readonly = false;
	free(cfg->hostname);
	cfg->hostname = xstrdup("sandbox");
	drop_mount(cfg, "/tmp");
	set_resources(o, cfg->linux);
	p = cfg->process;
	strv_free_n(p->args, p->args_len);
	p->args = xcalloc(2, sizeof(char *));
	p->args[0] = xstrdup(SB_INIT_PATH);
	p->args_len = 1;
	/* the init is root of the sandbox, so the commands (its user) cannot signal, trace or
	 * read it */
	set_identity(p, 0, 0, "/");
	if (o->isolation != NULL &&
	    oci_string_map_set(&cfg->annotations, "moat.isolation", o->isolation) < 0)
		return moat_error_set(err, ENOMEM, "sandbox config");
	/* a microVM's files are made by its VMM (9p): the sandbox's user owns what it writes */
	vmm = xasprintf("%u:%u", (unsigned)o->uid, (unsigned)o->gid);
	if (oci_string_map_set(&cfg->annotations, "moat.vm.vmm-user", vmm) < 0)
		return moat_error_set(err, ENOMEM, "sandbox config");
	if (o->accel != NULL &&
	    oci_string_map_set(&cfg->annotations, "moat.vm.accel", o->accel) < 0)
		return moat_error_set(err, ENOMEM, "sandbox config");
	*ret = TAKE_PTR(cfg);
	return 0;
}

static void add_env(struct oci_process *p, const char *kv)
{
	p->env = xrealloc(p->env, (p->env_len + 2) * sizeof(char *));
	p->env[p->env_len++] = xstrdup(kv);
	p->env[p->env_len] = NULL;
}

int sb_command_process(const struct moat_sandbox_opts *o, struct oci_process **ret, moat_error *err)
{
	_cleanup_(strv_freep) char **proxy_env = NULL;
	_cleanup_(oci_config_freep) struct oci_config *cfg = NULL;
	struct oci_process *p;
	size_t n = 0;

	if (moat_spec_default(false, 0, 0, &cfg, err) < 0)
		return moat_error_ret(err);
	p = TAKE_PTR(cfg->process);
	set_identity(p, o->uid, o->gid, o->workdir);
	strv_free_n(p->args, p->args_len);
	while (o->argv[n] != NULL)
		n++;
	p->args = strv_copy((const char *const *)o->argv, n);
	p->args_len = n;
	/* the proxy's variables first: the caller's --env may set its own */
	proxy_env = sb_egress_env(o);
	for (size_t i = 0; proxy_env != NULL && proxy_env[i] != NULL; i++)
		add_env(p, proxy_env[i]);
	for (size_t i = 0; o->env != NULL && o->env[i] != NULL; i++)
		add_env(p, o->env[i]);
	*ret = p;
	return 0;
}
