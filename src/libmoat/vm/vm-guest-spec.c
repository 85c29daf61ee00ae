/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: what the guest agent is told to do (vm-guest-spec.h). */
#include "vm-guest-spec.h"

#include <string.h>
#include <sys/mount.h>
#include <sys/param.h>

#include "caps.h"
#include "mount.h"
#include "mount-options.h"
#include "process.h"
#include "utils.h"

static int caps_of(const struct oci_capabilities *c, struct moat_proto_process *p, moat_error *err)
{
	if (c == NULL)
		return 0;
	if (moat_caps_parse(c->bounding, c->bounding_len, "process.capabilities.bounding",
			    &p->cap_bounding, err) < 0 ||
	    moat_caps_parse(c->effective, c->effective_len, "process.capabilities.effective",
			    &p->cap_effective, err) < 0 ||
	    moat_caps_parse(c->inheritable, c->inheritable_len, "process.capabilities.inheritable",
			    &p->cap_inheritable, err) < 0 ||
	    moat_caps_parse(c->permitted, c->permitted_len, "process.capabilities.permitted",
			    &p->cap_permitted, err) < 0 ||
	    moat_caps_parse(c->ambient, c->ambient_len, "process.capabilities.ambient",
			    &p->cap_ambient, err) < 0)
		return moat_error_ret(err);
	return 0;
}

static int rlimits_of(const struct oci_process *op, struct moat_proto_process *p, moat_error *err)
{
	p->rlimits = xcalloc(op->rlimits_len + 1, sizeof(*p->rlimits));
	for (size_t i = 0; i < op->rlimits_len; i++) {
		int res = moat_process_rlimit_resource(op->rlimits[i]->type);

		if (res < 0)
			return moat_error_msg(err, EINVAL,
					      "process.rlimits[%zu].type: unknown '%s'", i,
					      op->rlimits[i]->type);
		p->rlimits[p->n_rlimits++] =
			(struct moat_proto_rlimit){ .type = (uint32_t)res,
						    .soft = op->rlimits[i]->soft,
						    .hard = op->rlimits[i]->hard };
	}
	return 0;
}

static int seccomp_of(const struct moat_seccomp *sc, struct moat_proto_process *p, moat_error *err)
{
	const struct sock_filter *prog;
	size_t n = 0;
	uint32_t flags = 0;

	if (sc == NULL)
		return 0;
	if (moat_seccomp_uses_notify(sc))
		return moat_error_msg(err, EINVAL,
				      "linux.seccomp: SCMP_ACT_NOTIFY cannot reach a "
				      "listener on the host from a microVM's guest");
	prog = moat_seccomp_program(sc, &n, &flags);
	if (flags & ~MOAT_PROTO_SECCOMP_FLAGS)
		return moat_error_msg(err, EINVAL,
				      "linux.seccomp.flags: a flag the guest agent "
				      "cannot apply (0x%x)",
				      flags & ~MOAT_PROTO_SECCOMP_FLAGS);
	p->seccomp = xmalloc(n * sizeof(*prog));
	memcpy(p->seccomp, prog, n * sizeof(*prog));
	p->n_seccomp = n;
	p->has_seccomp_flags = flags != 0;
	p->seccomp_flags = flags;
	return 0;
}

int moat_vm_process_build(const struct oci_process *op, const struct moat_seccomp *sc,
			  struct moat_proto_process *ret, moat_error *err)
{
	struct moat_proto_process p = { 0 };
	const struct oci_user *u = op->user;

	p.args = op->args;
	p.n_args = op->args_len;
	p.env = op->env;
	p.n_env = op->env_len;
	p.cwd = op->cwd;
	p.uid = u ? u->uid : 0;
	p.gid = u ? u->gid : 0;
	p.groups = u ? u->additional_gids : NULL;
	p.n_groups = u ? u->additional_gids_len : 0;
	p.has_umask = u && u->umask_present;
	p.umask = u ? u->umask : 0;
	p.no_new_privs = op->no_new_privileges;
	p.terminal = op->terminal;
	if (caps_of(op->capabilities, &p, err) < 0 || rlimits_of(op, &p, err) < 0 ||
	    seccomp_of(sc, &p, err) < 0) {
		moat_vm_process_free(&p);
		return moat_error_ret(err);
	}
	*ret = p;
	return 0;
}

void moat_vm_process_free(struct moat_proto_process *p)
{
	free(p->rlimits);
	free(p->seccomp);
	*p = (struct moat_proto_process){ 0 };
}

/* A config mount the agent makes in the guest: its filesystem, flags and data. cgroup
 * mounts become the guest's cgroup2 (the guest kernel has no v1 hierarchies to offer). */
static int guest_mount(const struct oci_mount *m, size_t idx, struct moat_proto_mount *ret,
		       moat_error *err)
{
	struct moat_mount_opts o;
	bool cgroup =
		m->type && (strcmp(m->type, "cgroup") == 0 || strcmp(m->type, "cgroup2") == 0);

	if (m->type == NULL)
		return moat_error_msg(err, EINVAL,
				      "mounts[%zu] (%s): type: required in microVM "
				      "mode",
				      idx, m->destination);
	if (moat_mount_opts_parse(m->options, m->options_len, &o, err) < 0)
		return moat_error_prefix(err, "mounts[%zu] (%s)", idx, m->destination);
	*ret = (struct moat_proto_mount){
		.type = xstrdup(cgroup ? "cgroup2" : m->type),
		.source = xstrdup(m->source ? m->source : m->type),
		.dest = xstrdup(m->destination),
		.flags = o.ms_set & ~(uint64_t)(MS_BIND | MS_REC | MS_REMOUNT),
		.data = (o.data_str && !cgroup) ? xstrdup(o.data_str) : NULL,
	};
	moat_mount_opts_release(&o);
	return 0;
}

/* A bind the host makes: the agent makes sure the guest sees it (vm-guest-spec.h). dest is
 * the destination until the init knows where it was made. */
static int share_mount(const struct oci_mount *m, size_t idx, struct moat_proto_mount *ret,
		       moat_error *err)
{
	struct moat_mount_opts o;

	if (moat_mount_opts_parse(m->options, m->options_len, &o, err) < 0)
		return moat_error_prefix(err, "mounts[%zu] (%s)", idx, m->destination);
	*ret = (struct moat_proto_mount){
		.type = xstrdup(MOAT_PROTO_SHARE_MOUNT),
		.dest = xstrdup(m->destination),
		.flags = o.ms_set & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC),
	};
	moat_mount_opts_release(&o);
	return 0;
}

static void free_mounts(struct moat_proto_mount *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].type);
		free(v[i].source);
		free(v[i].dest);
		free(v[i].data);
	}
	free(v);
}

/* The namespaces of the config's that the workload gets in the guest too. A path (join a
 * namespace of the host's) gives the jail that namespace on the host; the guest's kernel
 * cannot share one of the host's, so the workload gets one of its own there. */
static uint32_t guest_namespaces(const struct oci_config *cfg)
{
	static const struct {
		const char *type;
		uint32_t bit;
	} kinds[] = { { "pid", MOAT_PROTO_NS_PID },
		      { "cgroup", MOAT_PROTO_NS_CGROUP },
		      { "ipc", MOAT_PROTO_NS_IPC },
		      { "uts", MOAT_PROTO_NS_UTS } };
	const struct oci_linux *lx = cfg->linux;
	uint32_t ns = 0;

	for (size_t i = 0; lx != NULL && i < lx->namespaces_len; i++)
		for (size_t k = 0; k < MOAT_ARRAY_SIZE(kinds); k++)
			if (lx->namespaces[i]->type &&
			    strcmp(lx->namespaces[i]->type, kinds[k].type) == 0)
				ns |= kinds[k].bit;
	return ns;
}

int moat_vm_guest_resources(const struct oci_config *cfg, struct moat_proto_resources *g,
			    moat_error *err)
{
	const struct oci_resources *r = cfg->linux ? cfg->linux->resources : NULL;
	const struct oci_cpu *c = r ? r->cpu : NULL;

	*g = (struct moat_proto_resources){ 0 };

	if (r != NULL && r->pids != NULL && r->pids->limit > 0) {
		if ((uint64_t)r->pids->limit > MOAT_PROTO_MAX_PIDS_LIMIT)
			return moat_error_msg(err, EINVAL,
					      "linux.resources.pids.limit: %lld is above "
					      "what a kernel takes (%d)",
					      (long long)r->pids->limit, MOAT_PROTO_MAX_PIDS_LIMIT);
		g->has_pids_limit = true;
		g->pids_limit = (uint64_t)r->pids->limit;
	}
	if (c != NULL && c->quota_present && c->quota > 0) {
		uint64_t period = c->period_present && c->period > 0
					  ? c->period
					  : MOAT_PROTO_DEFAULT_CPU_PERIOD;

		if ((uint64_t)c->quota < MOAT_PROTO_MIN_CPU_QUOTA ||
		    (uint64_t)c->quota > MOAT_PROTO_MAX_CPU_QUOTA)
			return moat_error_msg(err, EINVAL,
					      "linux.resources.cpu.quota: %lld is outside "
					      "what the kernel takes (%d..%llu)",
					      (long long)c->quota, MOAT_PROTO_MIN_CPU_QUOTA,
					      (unsigned long long)MOAT_PROTO_MAX_CPU_QUOTA);
		if (period < MOAT_PROTO_MIN_CPU_PERIOD || period > MOAT_PROTO_MAX_CPU_PERIOD)
			return moat_error_msg(err, EINVAL,
					      "linux.resources.cpu.period: %llu is outside "
					      "what the kernel takes (%d..%d)",
					      (unsigned long long)period, MOAT_PROTO_MIN_CPU_PERIOD,
					      MOAT_PROTO_MAX_CPU_PERIOD);
		g->has_cpu_quota = g->has_cpu_period = true;
		g->cpu_quota = (uint64_t)c->quota;
		g->cpu_period = period;
	}
	return 0;
}

static int resources_of(const struct oci_config *cfg, struct moat_msg_start *m, moat_error *err)
{
	if (moat_vm_guest_resources(cfg, &m->resources, err) < 0)
		return moat_error_ret(err);
	m->has_resources = m->resources.has_pids_limit || m->resources.has_cpu_quota;
	return 0;
}

int moat_vm_start_build(const struct oci_config *cfg, const struct moat_seccomp *sc,
			struct moat_msg_start *ret, moat_error *err)
{
	struct moat_msg_start m = { 0 };
	const struct oci_console_size *cs = cfg->process->console_size;

	if (resources_of(cfg, &m, err) < 0 ||
	    moat_vm_process_build(cfg->process, sc, &m.process, err) < 0)
		return moat_error_ret(err);
	m.mounts = xcalloc(cfg->mounts_len + 1, sizeof(*m.mounts));
	for (size_t i = 0; i < cfg->mounts_len; i++) {
		/* a bind is made on the host, inside the shared rootfs */
		int (*make)(const struct oci_mount *, size_t, struct moat_proto_mount *,
			    moat_error *) =
			moat_mount_is_bind(cfg->mounts[i]) ? share_mount : guest_mount;

		if (make(cfg->mounts[i], i, &m.mounts[m.n_mounts], err) < 0) {
			moat_vm_start_free(&m);
			return moat_error_ret(err);
		}
		m.n_mounts++;
	}
	m.namespaces = guest_namespaces(cfg);
	m.hostname = cfg->hostname;
	if (cfg->linux != NULL) {
		/* borrowed, as the hostname is: the agent applies them as container mode does */
		m.masked = cfg->linux->masked_paths;
		m.n_masked = cfg->linux->masked_paths_len;
		m.readonly = cfg->linux->readonly_paths;
		m.n_readonly = cfg->linux->readonly_paths_len;
	}
	m.root_readonly = cfg->root && cfg->root->readonly;
	if (cs != NULL && cfg->process->terminal) {
		m.has_winsize = true;
		m.winsize = (struct moat_proto_winsize){ (uint16_t)MIN(cs->height, UINT16_MAX),
							 (uint16_t)MIN(cs->width, UINT16_MAX) };
	}
	*ret = m;
	return 0;
}

void moat_vm_start_free(struct moat_msg_start *m)
{
	moat_vm_process_free(&m->process);
	free_mounts(m->mounts, m->n_mounts);
	*m = (struct moat_msg_start){ 0 };
}
