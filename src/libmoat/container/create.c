/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: building a container, from the parent's side. `create` ends with
 * the container init blocked on the exec fifo, everything else in place. */
#include "container.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup-systemd.h"
#include "creating.h"
#include "egress.h"
#include "fault.h"
#include "hooks.h"
#include "init.h"
#include "mount-host.h"
#include "mount-idmap.h"
#include "namespaces.h"
#include "oci-cleanup.h"
#include "oci-config.h"
#include "pod.h"
#include "policy.h"
#include "process.h"
#include "process-attrs.h"
#include "sync.h"
#include "syscall-filter.h"
#include "userns.h"
#include "userns-pool.h"
#include "vm-socket.h"
#include "vm-guest-spec.h"
#include "vm-jail.h"
#include "vm-pod.h"
#include "vm-select.h"
#include "vm-snapshot.h"
#include "vm-virtiofs.h"
#include "vm-tsc.h"
#include "utils.h"

/* Everything create has made so far, so a failure can undo exactly that. */
struct build {
	const struct moat_create_opts *o;
	struct oci_config *cfg;
	char *bundle;
	char *rootfs;
	int dirfd;
	bool made_dir;
	int fifo_fd;
	struct moat_ns_plan ns;
	struct moat_cgroup *cg;
	char *cgroup_path;
	pid_t stage1; /* until it has cloned the init; 0: none, or the init is direct */
	bool direct;  /* the init was cloned into its namespaces, with no stage 1 */
	bool in_v2;   /* the first child started in the v2 cgroup (clone_child), the init too */
	pid_t init;
	int sync_fd;        /* moat's end of the init's sync socket, until COMMIT */
	int console;        /* pty master kept for the foreground relay, or -1 */
	int *idmapped;      /* per cfg->mounts[i], then the rootfs: its source made here for the
			 * init (idmapped, or opened with the host's credentials), or -1 */
	bool auto_userns;   /* the policy added the user namespace: idmap the mounts */
	bool joined_userns; /* ... joining a sandbox's (a pod's): no ids of its own to lend */
	struct moat_idpool pool;             /* ... from this pool */
	char *policy_path;                   /* where the pool was configured, for errors */
	char *state_dir;                     /* absolute, for the pool's loan */
	struct moat_vm_choice isolation;     /* what the container runs in */
	struct moat_vm_defaults vm_defaults; /* the policy's */
	struct moat_vm_session *vm;          /* microVM mode: what the supervisor needs */
	struct moat_vm_assets assets;        /* microVM mode: the guest's kernel and initramfs */
	struct oci_config *user_cfg;       /* microVM mode: the user's config (cfg is the jail's) */
	char *jail_root;                   /* microVM mode: the init's root, not rootfs */
	struct moat_seccomp *seccomp;      /* linux.seccomp, compiled */
	struct moat_seccomp *vmm_seccomp;  /* microVM mode: the jail's, for the supervisor */
	bool hooks_started;                /* a failed create then runs poststop, as delete would */
	struct moat_policy_result *policy; /* what the policy changed, kept in the state */
	struct oci_string_map *annotations; /* what the state shows (moat_state_annotations),
					     * to every hook from spawn on */
	struct moat_egress_policy egress;   /* moat.egress.* annotations (egress.h) */
	bool egress_on;
	bool systemd_scope; /* the cgroup is a transient scope of systemd's (cgroup-systemd.h) */
	bool scope_started; /* ... and systemd has started it */
	struct moat_vm_pod pod;        /* a member of a microVM's pod: its sandbox (pod.h) */
	bool pod_attached;             /* ... and its root is in the pod's share */
	enum moat_vm_boot boot_wanted; /* microVM mode: annotations.moat.vm.boot */
	const char *boot_shown;        /* ... and how it boots, once decided: the state's */
	const char *share_shown;       /* ... and its root's share (vm-virtiofs.h): the state's */
	struct moat_vm_snapshot snap;  /* ... from this snapshot (vm-snapshot.h) */
};

static int load_config(struct build *b, moat_error *err)
{
	_cleanup_free_ char *path = NULL, *msg = NULL;
	char cwd[PATH_MAX];
	struct stat sb;
	int r;

	if (b->o->bundle == NULL || b->o->bundle[0] != '/') {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return moat_error_set(err, errno, "getcwd");
		b->bundle = b->o->bundle ? xasprintf("%s/%s", cwd, b->o->bundle) : xstrdup(cwd);
	} else {
		b->bundle = xstrdup(b->o->bundle);
	}
	/* "." and ".." resolved, as hooks and engines expect a clean absolute path */
	if (realpath(b->bundle, cwd) != NULL) {
		free(b->bundle);
		b->bundle = xstrdup(cwd);
	}
	path = xasprintf("%s/config.json", b->bundle);
	r = oci_config_parse_file(path, &b->cfg, &msg);
	if (r < 0)
		return moat_error_msg(err, -r, "%s", msg ? msg : path);
	if (b->cfg->root == NULL || b->cfg->root->path == NULL)
		return moat_error_msg(err, EINVAL, "root.path: required");
	b->rootfs = b->cfg->root->path[0] == '/'
			    ? xstrdup(b->cfg->root->path)
			    : xasprintf("%s/%s", b->bundle, b->cfg->root->path);
	if (stat(b->rootfs, &sb) < 0)
		return moat_error_set(err, errno, "root.path '%s'", b->rootfs);
	if (!S_ISDIR(sb.st_mode))
		return moat_error_msg(err, ENOTDIR, "root.path '%s': not a directory", b->rootfs);
	return 0;
}

/* The policy refuses the config or makes its changes to it (policy.h). */
static int apply_policy(struct build *b, moat_error *err)
{
	_cleanup_(moat_policy_freep) struct moat_policy *p = NULL;
	bool microvm, tcg;

	if (moat_policy_load(b->o->policy, &p, err) < 0 ||
	    moat_policy_apply(p, b->cfg, b->bundle, &b->policy, err) < 0)
		return moat_error_ret(err);
	moat_policy_vm_defaults(p, &microvm, &tcg);
	b->vm_defaults =
		(struct moat_vm_defaults){ microvm, tcg ? MOAT_VM_ACCEL_TCG : MOAT_VM_ACCEL_KVM };
	if (b->policy->ns_added & (1U << MOAT_NS_USER)) {
		b->auto_userns = true;
		b->joined_userns = b->policy->userns_joined != NULL; /* the sandbox's (a pod's) */
		b->pool = *moat_policy_idpool(p);
		b->policy_path = xstrdup(moat_policy_path(p));
	}
	return 0;
}

/* auto-userns: the container's own range of host ids, lent from the pool while it lives,
 * written into the mappings the policy added (which map to the pool's start until now). */
static int lend_host_ids(struct build *b, moat_error *err)
{
	struct oci_linux *lx = b->cfg->linux;
	char root[PATH_MAX];
	uint32_t host;

	if (realpath(b->o->root, root) == NULL)
		return moat_error_set(err, errno, "--root '%s'", b->o->root);
	b->state_dir = xasprintf("%s/%s", root, b->o->id);
	if (moat_idpool_lend(&b->pool, b->policy_path, b->state_dir, b->dirfd, &host, err) < 0)
		return moat_error_ret(err);
	lx->uid_mappings[0]->host_id = host;
	lx->gid_mappings[0]->host_id = host;
	b->policy->lent = true;
	b->policy->lent_start = host;
	b->policy->lent_count = b->pool.ids;
	return 0;
}

/* linux.sysctl kernel.hostname and kernel.domainname set what hostname and domainname set:
 * both in one config is a conflict, not an order to settle. */
static int check_uts_sysctl(const struct oci_config *cfg, moat_error *err)
{
	const struct {
		const char *sysctl, *field, *value;
	} pairs[] = {
		{ "kernel.hostname", "hostname", cfg->hostname },
		{ "kernel.domainname", "domainname", cfg->domainname },
	};
	const struct oci_string_map *sysctl = cfg->linux ? cfg->linux->sysctl : NULL;

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(pairs); i++) {
		if (pairs[i].value != NULL && *pairs[i].value != '\0' &&
		    oci_string_map_get(sysctl, pairs[i].sysctl) != NULL)
			return moat_error_msg(err, EINVAL,
					      "linux.sysctl: '%s' conflicts with %s '%s': set one "
					      "of them",
					      pairs[i].sysctl, pairs[i].field, pairs[i].value);
	}
	return 0;
}

static int check_config(struct build *b, moat_error *err)
{
	const struct oci_linux *lx = b->cfg->linux;

	if (moat_ns_plan_build(lx, &b->ns, err) < 0)
		return moat_error_ret(err);
	if (!b->ns.create[MOAT_NS_MNT] && b->ns.join_fd[MOAT_NS_MNT] < 0)
		return moat_error_msg(err, EINVAL,
				      "linux.namespaces: no mount namespace: moat does not run a "
				      "container in the host's (its mounts, pivot_root and masked "
				      "paths would change the host's); add {\"type\": \"mount\"}");
	if (moat_userns_validate(lx, b->ns.create[MOAT_NS_USER], err) < 0)
		return moat_error_ret(err);
	if (b->cfg->process && b->cfg->process->terminal && b->o->console_socket == NULL &&
	    !b->o->foreground)
		return moat_error_msg(
			err, EINVAL,
			"process.terminal: a detached container needs --console-socket "
			"to receive its terminal");
	if (moat_hooks_validate(b->cfg->hooks, err) < 0)
		return moat_error_ret(err);
	if (b->o->no_cgroup && lx && lx->resources)
		return moat_error_msg(err, EINVAL,
				      "linux.resources: set, but --cgroup-manager=disabled");
	moat_process_drop_unraisable_ambient(b->cfg->process, err);
	if (moat_process_validate(b->cfg, &b->ns, err) < 0 || check_uts_sysctl(b->cfg, err) < 0 ||
	    moat_process_attrs_validate(b->cfg, err) < 0)
		return moat_error_ret(err);
	/* Compiled here, so a bad profile fails before anything exists; the init loads it. */
	if (lx != NULL && lx->seccomp != NULL &&
	    moat_seccomp_prepare_cached(lx->seccomp, b->o->root, &b->seccomp, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* What a microVM's jail needs of any config. */
static int check_microvm(const struct build *b, moat_error *err)
{
	if (!moat_ns_in_userns(&b->ns))
		return moat_error_msg(err, EINVAL,
				      "microvm: the VMM's jail needs a user namespace: "
				      "give the config one, or turn the policy's auto-userns on");
	if (b->o->preserve_fds > 0 || b->o->listen_fds > 0)
		return moat_error_msg(err, EINVAL,
				      "%s: file descriptors cannot be passed into a "
				      "microVM's guest",
				      b->o->preserve_fds > 0 ? "--preserve-fds" : "LISTEN_FDS");
	return 0;
}

static struct moat_vm_session *new_session(const struct moat_vm_choice *c)
{
	struct moat_vm_session *s = xcalloc(1, sizeof(*s));

	s->vm = *c;
	s->exec_fd = s->qemu_fd = s->pod_conn = s->snapshot_fd = s->snapshot_save_fd = -1;
	s->virtiofsd_fd = -1;
	return s;
}

/* A member of a microVM's pod (pod.h) runs in that VM, whatever isolation it would have had:
 * only a config that asks for a container outright is refused. */
static int check_member(struct build *b, moat_error *err)
{
	const char *asked = oci_string_map_get(b->cfg->annotations, MOAT_ISOLATION_ANNOTATION);
	struct moat_vm_choice c = { .isolation = MOAT_ISOLATION_MICROVM,
				    .accel = strcmp(b->pod.accel, "tcg") == 0 ? MOAT_VM_ACCEL_TCG
									      : MOAT_VM_ACCEL_KVM };

	if (asked != NULL && strcmp(asked, "container") == 0 && !b->o->as_vm)
		return moat_error_msg(err, EINVAL,
				      "annotations." MOAT_ISOLATION_ANNOTATION ": container, but "
				      "the config joins the network namespace of microVM %s, "
				      "whose pod's containers run in its guest",
				      b->pod.sandbox);
	if (check_microvm(b, err) < 0)
		return moat_error_ret(err);
	b->isolation = c;
	b->vm = new_session(&c);
	b->vm->member = true;
	return moat_vm_pod_message(&b->pod, b->cfg, b->seccomp, b->o->id, &b->vm->start, err);
}

/* The isolation: a container, or a microVM this host can give (vm-select.h), or a place in
 * another microVM's pod. Everything a microVM needs is checked here, before anything is
 * made. */
static int check_isolation(struct build *b, moat_error *err)
{
	struct moat_vm_choice *c = &b->isolation;

	if (moat_pod_find(b->o->root, b->cfg, &b->pod))
		return check_member(b, err);
	if (moat_vm_choose(b->cfg, b->o->as_vm, &b->vm_defaults, c, err) < 0)
		return moat_error_ret(err);
	if (c->isolation != MOAT_ISOLATION_MICROVM)
		return 0;
	if (moat_vm_accel_check(c->accel, err) < 0 || check_microvm(b, err) < 0 ||
	    moat_vm_boot_wanted(b->cfg, &b->boot_wanted, err) < 0 ||
	    moat_vm_assets_find(&b->assets, err) < 0)
		return moat_error_ret(err);
	b->vm = new_session(c);
	b->vm->qemu_fd = b->assets.qemu_fd;
	if (moat_vm_virtiofsd_open(b->cfg, &b->boot_wanted, &b->vm->virtiofsd_fd, err) < 0)
		return moat_error_ret(err);
	if (c->accel == MOAT_VM_ACCEL_TCG)
		b->vm->tsc_khz = moat_vm_host_tsc_khz_cached(b->o->root);
	b->vm->egress = b->egress_on || b->o->egress_tunnel;
	return moat_vm_start_build(b->cfg, b->seccomp, &b->vm->start, err);
}

/* moat.egress.allow: the proxy's rules, its variables in the process (before the
 * isolation: a microVM's START carries them, and its guest gets the tunnel). */
static int check_egress(struct build *b, moat_error *err)
{
	if (moat_egress_from_config(b->cfg, &b->egress, &b->egress_on, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* A member talks to its pod's supervisor (vm-socket.h) over a connection made now, which its
 * init inherits: the init cannot reach the socket from its jail. */
static int connect_pod(struct build *b, moat_error *err)
{
	_cleanup_close_ int dirfd = open(b->pod.state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return moat_error_set(err, errno, "pod: the sandbox %s", b->pod.sandbox);
	if (moat_vm_socket_connect(dirfd, &b->vm->pod_conn, err) < 0)
		return moat_error_prefix(err, "pod: the sandbox %s", b->pod.sandbox);
	return 0;
}

/* microVM mode: the jail the container machinery builds instead of the user's root (its
 * root in the state directory); the user's config is kept for the state and for exec. A
 * VM's jail gets the supervisor's socket and the pod's share; a member's, a connection to
 * its pod's supervisor. */
static int make_jail(struct build *b, moat_error *err)
{
	char root[PATH_MAX];
	_cleanup_free_ char *jail_root = NULL;
	struct oci_config *jail = NULL;
	int r;

	if (realpath(b->o->root, root) == NULL)
		return moat_error_set(err, errno, "--root '%s'", b->o->root);
	jail_root = xasprintf("%s/%s/" MOAT_VM_JAIL_DIR, root, b->o->id);
	if (!b->vm->member)
		b->vm->pod_share = xasprintf("%s/%s/" MOAT_VM_POD_DIR, root, b->o->id);
	r = moat_vm_jail_make_root(b->dirfd, err);
	if (r == 0)
		r = b->vm->member ? connect_pod(b, err)
				  : moat_vm_socket_listen(b->dirfd, &b->vm->exec_fd, err);
	if (r < 0 ||
	    moat_vm_jail_config(b->cfg, b->rootfs, jail_root, &b->assets, b->vm, &jail, err) < 0)
		return moat_error_ret(err);
	b->user_cfg = b->cfg;
	b->cfg = jail;
	b->jail_root = TAKE_PTR(jail_root);
	return moat_seccomp_prepare_cached(jail->linux->seccomp, b->o->root, &b->vmm_seccomp, err);
}

static int make_fifo(struct build *b, moat_error *err)
{
	/* Written by the container's init, which may be an unprivileged uid. */
	if (mkfifoat(b->dirfd, MOAT_EXEC_FIFO, 0600) < 0 ||
	    fchmodat(b->dirfd, MOAT_EXEC_FIFO, 0622, 0) < 0)
		return moat_error_set(err, errno, "create the exec fifo");
	b->fifo_fd = openat(b->dirfd, MOAT_EXEC_FIFO, O_PATH | O_CLOEXEC);
	if (b->fifo_fd < 0)
		return moat_error_set(err, errno, "open the exec fifo");
	return 0;
}

/* With systemd as PID 1, --systemd-cgroup's scope (cgroup-systemd.h), which systemd makes with
 * its first process in it, once the init exists: only the path now. A rootless one is the
 * user's manager's, below its cgroup, in user.slice unless cgroupsPath says otherwise. */
static int scope_path(struct build *b, bool user, moat_error *err)
{
	const struct oci_linux *lx = b->cfg->linux;
	const char *spec = lx ? lx->cgroups_path : NULL;
	_cleanup_free_ char *dflt = NULL, *base = NULL, *below = NULL;

	if (!user)
		return moat_cgroup_resolve_path(spec, b->o->id, true, &b->cgroup_path, err);
	if (spec == NULL || spec[0] == '\0')
		spec = dflt = xasprintf("user.slice:moat:%s", b->o->id);
	if (moat_cgroup_resolve_path(spec, b->o->id, true, &below, err) < 0 ||
	    moat_systemd_user_cgroup(&base, err) < 0)
		return moat_error_ret(err);
	b->cgroup_path = xasprintf("%s%s", base, below);
	return 0;
}

/* What is about to be made, in creating.json: the cgroup, and with in_pod the member's root
 * in its pod's share. Should moat die before the state is saved, delete finds them there
 * (creating.h). */
static int record_making(const struct build *b, bool in_pod, moat_error *err)
{
	struct moat_creating c = {
		.cgroup_path = b->cgroup_path,
		.cgroup_manager = b->systemd_scope ? MOAT_CGROUP_MANAGER_SYSTEMD : NULL,
		.owner = getuid(),
		.vm_pod = in_pod ? (char *)b->pod.sandbox : NULL,
	};

	return moat_creating_write(b->dirfd, &c, err);
}

static int make_cgroup(struct build *b, moat_error *err)
{
	const struct oci_linux *lx = b->cfg->linux;
	bool user = b->o->rootless || geteuid() != 0;

	b->systemd_scope = b->o->systemd_cgroup && moat_systemd_booted() && !b->o->no_cgroup;
	if (b->systemd_scope)
		return scope_path(b, user, err) < 0 ? moat_error_ret(err)
						    : record_making(b, false, err);
	/* A rootless container without resources needs no cgroup, and an
	 * unprivileged user usually may not make one. */
	if (b->o->no_cgroup || (b->o->rootless && (lx == NULL || lx->resources == NULL)))
		return 0;
	if (moat_cgroup_resolve_path(lx ? lx->cgroups_path : NULL, b->o->id, b->o->systemd_cgroup,
				     &b->cgroup_path, err) < 0 ||
	    record_making(b, false, err) < 0)
		return moat_error_ret(err);
	if (moat_cgroup_create(b->cgroup_path, lx ? lx->resources : NULL, lx ? lx->devices : NULL,
			       lx ? lx->devices_len : 0, &b->cg, err) < 0)
		return moat_error_prefix(err, "cgroup");
	return 0;
}

/* The first child (stage 1 or the direct init) puts itself, and so the init, in moat's
 * cgroup: a root moat's, which may open its `tasks` files and clone into its v2 directory
 * (cgroup.h; clone_child). */
static bool child_joins(const struct build *b)
{
	return b->cg != NULL && !b->systemd_scope && !b->o->rootless && geteuid() == 0;
}

/* The init into the container's cgroup: moat's, or systemd's scope started with the init in
 * it, to which the resources then go as moat_cgroup_create applies them. Where stage 1
 * joined, the init started in the v1 cgroups, and in the v2 one unless clone3 failed. */
static int join_cgroup(struct build *b, moat_error *err)
{
	const struct oci_linux *lx = b->cfg->linux;
	bool user = b->o->rootless || geteuid() != 0;

	if (child_joins(b))
		return b->in_v2 ? 0 : moat_cgroup_add_pid_v2(b->cg, b->init, err);
	if (!b->systemd_scope)
		return b->cg ? moat_cgroup_add_pid(b->cg, b->init, err) : 0;
	if (moat_systemd_scope_start(b->cgroup_path, b->init, lx ? lx->resources : NULL, user,
				     err) < 0)
		return moat_error_ret(err);
	b->scope_started = true;
	return moat_cgroup_adopt(b->cgroup_path, lx ? lx->resources : NULL, lx ? lx->devices : NULL,
				 lx ? lx->devices_len : 0, &b->cg, err);
}

static char *creating_json(const struct build *b, pid_t pid, const char *status)
{
	return moat_state_json(b->cfg->oci_version, b->o->id, pid, status, b->bundle, b->rootfs,
			       b->annotations);
}

/* The annotations the state shows: with the policy's changes (all made by now), the
 * isolation in force and what of linux.resources the cgroup could not apply, as `moat state`
 * will show them. Without with_policy, as the state keeps them (the policy's changes and the
 * cgroup's notes have records of their own there). */
static struct oci_string_map *shown_annotations(const struct build *b, bool with_policy)
{
	const struct oci_config *cfg = b->user_cfg ? b->user_cfg : b->cfg;
	_cleanup_(oci_string_map_freep) struct oci_string_map *changes =
		with_policy ? moat_policy_result_changes(b->policy) : NULL;
	struct oci_string_map *m = moat_state_annotations(
		cfg->annotations, moat_isolation_name(b->isolation.isolation),
		b->vm ? moat_vm_accel_name(b->vm->vm.accel) : NULL, changes);
	_cleanup_free_ char *net = b->vm && b->vm->net.n ? moat_vm_net_describe(&b->vm->net) : NULL;
	_cleanup_free_ char *note =
		with_policy && b->cg ? moat_state_cgroup_ignored_note(moat_cgroup_ignored(b->cg))
				     : NULL;

	if (note != NULL)
		oci_string_map_set(&m, MOAT_CGROUP_IGNORED_ANNOTATION, note);
	if (net != NULL)
		oci_string_map_set(&m, MOAT_VM_NETWORK_ANNOTATION, net);
	if (b->pod.sandbox != NULL)
		oci_string_map_set(&m, MOAT_VM_POD_ANNOTATION, b->pod.sandbox);
	if (b->boot_shown != NULL)
		oci_string_map_set(&m, MOAT_VM_BOOT_ANNOTATION, b->boot_shown);
	if (b->share_shown != NULL)
		oci_string_map_set(&m, MOAT_VM_SHARE_ANNOTATION, b->share_shown);
	return m;
}

/* prestart and createRuntime: in the runtime's namespaces, once the
 * container's exist and before its root is entered. */
static int run_runtime_hooks(struct build *b, moat_error *err)
{
	_cleanup_free_ char *json = creating_json(b, b->init, "creating");

	b->hooks_started = true;
	if (moat_hooks_run(b->cfg->hooks, MOAT_HOOK_PRESTART, json, b->bundle, err) < 0 ||
	    moat_hooks_run(b->cfg->hooks, MOAT_HOOK_CREATE_RUNTIME, json, b->bundle, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* The pty master: to the console socket, or kept for `run` to relay. */
static int receive_console(struct build *b, int fd, moat_error *err)
{
	int master;

	if (moat_sync_expect_fd(fd, MOAT_SYNC_CONSOLE, &master, err) < 0)
		return moat_error_ret(err);
	if (b->o->console_socket == NULL) {
		b->console = master;
		return 0;
	}
	if (moat_send_fd_to_socket(b->o->console_socket, master, "/dev/ptmx", err) < 0) {
		close(master);
		return moat_error_ret(err);
	}
	close(master);
	return 0;
}

/* The automatic user namespace could not be given: say so, and what the way out is. */
static int auto_userns_failed(struct build *b, moat_error *err)
{
	_cleanup_free_ char *cause = xstrdup(err->msg ? err->msg : "failed");
	int code = err->code > 0 ? err->code : EINVAL;

	return moat_error_msg(err, code,
			      "auto-userns: %s; moat does not run the container without its user "
			      "namespace: give the config a user namespace of its own, or turn "
			      "auto-userns off in %s",
			      cause, b->policy_path);
}

/* The filter the init loads: the config's, or in microVM mode the VMM's (the guest agent
 * loads the config's). */
static struct moat_seccomp *init_seccomp(const struct build *b)
{
	return b->vm ? b->vmm_seccomp : b->seccomp;
}

/* The root the init builds: the user's rootfs, or in microVM mode the VMM's jail. */
static const char *init_root(const struct build *b)
{
	return b->jail_root ? b->jail_root : b->rootfs;
}

static bool wants_idmap(const struct build *b, const struct oci_mount *m)
{
	return moat_mount_wants_idmap(m) || (b->auto_userns && moat_mount_is_bind(m));
}

/* The sources of idmapped mounts, made here on the host side (see mount-idmap.h); under the
 * automatic user namespace every bind source, and the rootfs in the last slot. */
static int make_idmapped_sources(struct build *b, moat_error *err)
{
	_cleanup_close_ int bundle = -1, userns = -1;
	size_t i, n = b->cfg->mounts_len;
	char path[64];
	uid_t root_id = 0;
	int owner = (int)b->init;

	bool any = b->auto_userns;

	b->idmapped = xcalloc(n + 1, sizeof(int));
	for (i = 0; i <= n; i++) {
		b->idmapped[i] = -1;
		any = any || (i < n && wants_idmap(b, b->cfg->mounts[i]));
	}
	if (!any)
		return 0;
	bundle = open(b->bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (bundle < 0)
		return moat_error_set(err, errno, "open the bundle '%s'", b->bundle);
	/* the namespace the init made, or the sandbox's it joins (which it may not have
	 * entered yet): policy-rules.c names that one as /proc/<pid>/ns/user */
	if (b->joined_userns && sscanf(b->policy->userns_joined, "/proc/%d/", &owner) != 1)
		return moat_error_msg(err, EINVAL, "auto-userns: the joined user namespace %s",
				      b->policy->userns_joined);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", owner);
	if (moat_ns_in_userns(&b->ns) && (userns = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return moat_error_set(err, errno, "open %s", path);
	if (b->auto_userns && moat_userns_root_host_id(owner, &root_id, err) < 0)
		return auto_userns_failed(b, err);
	for (i = 0; i < n; i++) {
		if (wants_idmap(b, b->cfg->mounts[i]) &&
		    moat_mount_idmap_source(bundle, b->cfg->mounts[i], i, userns, b->auto_userns,
					    root_id, &b->idmapped[i], err) < 0)
			return b->auto_userns ? auto_userns_failed(b, err) : moat_error_ret(err);
	}
	if (b->auto_userns &&
	    moat_mount_idmap_rootfs(init_root(b), userns, root_id, &b->idmapped[n], err) < 0)
		return auto_userns_failed(b, err);
	return 0;
}

/* Bind sources the init cannot reach from its user namespace are opened here, as the host's
 * root (mount-host.h). A rootless moat's credentials are the init's: nothing to gain. After the
 * runtime hooks, which may make them. */
static int open_host_sources(struct build *b, moat_error *err)
{
	if (!moat_ns_in_userns(&b->ns) || geteuid() != 0)
		return 0;
	return moat_mount_host_sources(b->init, b->bundle, b->cfg, b->idmapped, err);
}

static int send_idmapped_sources(struct build *b, int fd, moat_error *err)
{
	size_t i;

	for (i = 0; i <= b->cfg->mounts_len; i++) {
		if (b->idmapped[i] < 0)
			continue;
		if (moat_sync_send_fd(fd, MOAT_SYNC_MOUNT_FD, (int64_t)i, b->idmapped[i], err) < 0)
			return moat_error_ret(err);
		close(b->idmapped[i]);
		b->idmapped[i] = -1;
	}
	return 0;
}

/* SCMP_ACT_NOTIFY: the init's listener fd goes to linux.seccomp.listenerPath with the
 * container's state, as the runtime spec describes; failing that fails create. */
static int pass_seccomp_listener(struct build *b, int fd, moat_error *err)
{
	const struct oci_seccomp *s = b->cfg->linux->seccomp;
	_cleanup_free_ char *json = creating_json(b, b->init, "creating");
	_cleanup_close_ int notify = -1;

	if (moat_sync_expect_fd(fd, MOAT_SYNC_SECCOMP_FD, &notify, err) < 0)
		return moat_error_ret(err);
	if (moat_seccomp_send_to_listener(s->listener_path, s->listener_metadata, notify, 0, json,
					  err) < 0)
		return moat_error_ret(err); /* the message names linux.seccomp.listenerPath */
	return 0;
}

/* Docker's libnetwork gives the container's own network namespace its interface from a
 * prestart hook, after the init was forked: a microVM takes those interfaces now, and the
 * init, waiting for CGROUP_DONE, learns of them: network.json's fd, then each tap. */
static int take_hooks_network(struct build *b, int fd, moat_error *err)
{
	_cleanup_close_ int json = -1;
	char path[64];

	if (b->vm == NULL || b->vm->member || b->vm->net.n > 0 || !b->ns.create[MOAT_NS_NET])
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)b->init);
	if (moat_vm_net_take(path, true, b->dirfd, &b->vm->net, err) < 0)
		return moat_error_ret(err);
	if (b->vm->net.n == 0)
		return 0;
	json = openat(b->dirfd, MOAT_VM_NET_STATE, O_RDONLY | O_CLOEXEC);
	if (json < 0)
		return moat_error_set(err, errno, "microvm: open " MOAT_VM_NET_STATE);
	if (moat_sync_send_fd(fd, MOAT_SYNC_NET_FD, 0, json, err) < 0)
		return moat_error_ret(err);
	for (size_t i = 0; i < b->vm->net.n; i++)
		if (moat_sync_send_fd(fd, MOAT_SYNC_TAP_FD, (int64_t)i, b->vm->net.nics[i].tap_fd,
				      err) < 0)
			return moat_error_ret(err);
	return 0;
}

/* How a VM boots (vm-snapshot.h), decided once its interfaces are known: a snapshot's
 * read-only end goes to the init, and its writable end while it is being made. */
static int send_snapshot(struct build *b, int fd, moat_error *err)
{
	struct moat_vm_session *s = b->vm;
	bool restore;

	if (s == NULL || s->member)
		return 0;
	if (moat_vm_snapshot_open(b->boot_wanted, &b->assets, s, &b->snap, &restore, err) < 0)
		return moat_error_ret(err);
	b->boot_shown = restore ? "snapshot" : "cold";
	/* the init makes the same choice, knowing whether it got a snapshot */
	s->virtiofs = moat_vm_virtiofs_wanted(s);
	b->share_shown = s->virtiofs ? "virtiofs" : "9p";
	if (!restore)
		return 0;
	if (moat_sync_send_fd_text(fd, MOAT_SYNC_SNAPSHOT_FD, 0, s->snapshot_fd, s->snapshot_path,
				   err) < 0 ||
	    (s->snapshot_save_fd >= 0 &&
	     moat_sync_send_fd(fd, MOAT_SYNC_SNAPSHOT_FD, 1, s->snapshot_save_fd, err) < 0))
		return moat_error_ret(err);
	return 0;
}

static int map_ids(struct build *b, pid_t pid, int fd, moat_error *err)
{
	if (moat_userns_write_maps(pid, b->cfg->linux, err) < 0 ||
	    moat_sync_send(fd, MOAT_SYNC_USERNS_MAPPED, 0, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:userns-mapped");
	return 0;
}

/* Until the init is in its namespaces, with its id maps, and in the cgroups its first child
 * joins: stage 1 asks for its maps and then says the init's pid; the direct init, whose pid
 * the clone gave, says it is in the cgroups and then gets its maps. */
static int await_init(struct build *b, int fd, moat_error *err)
{
	int64_t v;
	int status;

	if (b->direct) {
		if (moat_sync_expect(fd, MOAT_SYNC_INIT_PID, NULL, err) < 0 ||
		    (b->ns.create[MOAT_NS_USER] && map_ids(b, b->init, fd, err) < 0))
			return moat_error_ret(err);
		return 0;
	}
	if (b->ns.create[MOAT_NS_USER] &&
	    (moat_sync_expect(fd, MOAT_SYNC_USERNS_READY, &v, err) < 0 ||
	     map_ids(b, (pid_t)v, fd, err) < 0))
		return moat_error_ret(err);
	if (moat_sync_expect(fd, MOAT_SYNC_INIT_PID, &v, err) < 0)
		return moat_error_ret(err);
	b->init = (pid_t)v;
	waitpid(b->stage1, &status, 0);
	b->stage1 = 0;
	return 0;
}

/* The parent's half of the conversation in sync.h. */
static int talk_to_children(struct build *b, int fd, moat_error *err)
{
	if (await_init(b, fd, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:init-pid");
	if (join_cgroup(b, err) < 0)
		return moat_error_prefix(err, "cgroup");
	moat_fault_step("create:cgroup-joined");
	if (make_idmapped_sources(b, err) < 0 || run_runtime_hooks(b, err) < 0 ||
	    take_hooks_network(b, fd, err) < 0 || open_host_sources(b, err) < 0 ||
	    send_idmapped_sources(b, fd, err) < 0 || send_snapshot(b, fd, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:sources-sent");
	moat_process_raise_hard_limits(b->init, b->cfg->process);
	/* The init learns its host pid here, for the hooks it runs. */
	if (moat_sync_send(fd, MOAT_SYNC_CGROUP_DONE, b->init, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:cgroup-done");
	if (b->cfg->process->terminal && receive_console(b, fd, err) < 0)
		return moat_error_ret(err);
	if (init_seccomp(b) != NULL && moat_seccomp_uses_notify(init_seccomp(b)) &&
	    pass_seccomp_listener(b, fd, err) < 0)
		return moat_error_ret(err);
	if (moat_sync_expect(fd, MOAT_SYNC_READY, NULL, err) < 0 ||
	    moat_vm_snapshot_commit(&b->snap, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:ready");
	return 0;
}

/* Whether moat can clone the init straight into its new namespaces, and needs no stage 1:
 * it joins no namespace (a joined one is entered before those made, a joined PID namespace
 * only by a child forked after setns) and makes no time namespace (its clock offsets are
 * written before any process is in it). That spares a process: its fork, its exit and its
 * page faults, 1.3-1.5 ms of a `run` here (contrib/bench/README.md). */
static bool init_direct(const struct build *b)
{
	for (int i = 0; i < MOAT_NS_COUNT; i++)
		if (b->ns.join_fd[i] >= 0)
			return false;
	return !b->ns.create[MOAT_NS_TIME];
}

/* The first child, with flags (the namespaces it is made in: the direct init's; 0, stage 1),
 * started in the container's v2 cgroup when a root moat has one (clone3's CLONE_INTO_CGROUP:
 * the init starts there, and nobody writes cgroup.procs, which costs a grace period;
 * cgroup.h), else cloned or forked as always: join_cgroup adds the init. In the child, 0. */
static pid_t clone_child(struct build *b, int flags)
{
	int fd = child_joins(b) ? moat_cgroup_v2_fd(b->cg) : -1;

	if (fd >= 0) {
		struct clone_args args = { .flags = CLONE_INTO_CGROUP | (uint64_t)flags,
					   .exit_signal = SIGCHLD,
					   .cgroup = (uint64_t)fd };
		pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));

		/* (a kernel before 5.7 refuses it: ENOSYS, E2BIG or EINVAL; a refusal of the
		 * namespaces comes again below) */
		if (pid >= 0) {
			b->in_v2 = true;
			return pid;
		}
	}
	if (flags == 0)
		return fork();
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* The first child: the direct init, or stage 1. */
static int start_child(struct build *b, const struct moat_init_args *a, moat_error *err)
{
	int flags = b->direct ? moat_ns_plan_flags(&b->ns, CLONE_NEWCGROUP) : 0;
	sigset_t all, saved;
	pid_t pid;

	if (a->join_cgroup_v1 && moat_cgroup_open_tasks(b->cg, err) < 0)
		return moat_error_prefix(err, "cgroup");
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &saved);
	pid = clone_child(b, flags);
	if (pid == 0) {
		if (b->direct)
			moat_init_direct(a);
		moat_init_stage1(a);
	}
	sigprocmask(SIG_SETMASK, &saved, NULL);
	if (b->cg != NULL)
		moat_cgroup_close_tasks(b->cg);
	if (pid < 0 && flags != 0)
		return moat_error_set(err, errno, "create namespaces (flags 0x%x)", flags);
	if (pid < 0)
		return moat_error_set(err, errno, "fork");
	if (b->direct)
		b->init = pid;
	else
		b->stage1 = pid;
	return 0;
}

static int spawn(struct build *b, moat_error *err)
{
	struct moat_init_args a = { .cfg = b->cfg,
				    .ns = &b->ns,
				    .rootfs = init_root(b),
				    .bundle = b->bundle,
				    .lock_fd = b->dirfd,
				    .id = b->o->id,
				    .fifo_fd = b->fifo_fd,
				    .no_pivot = b->o->no_pivot,
				    .no_new_keyring = b->o->no_new_keyring,
				    .preserve_fds = b->o->preserve_fds,
				    .listen_fds = b->o->listen_fds,
				    .cg = b->cg,
				    .join_cgroup_v1 = child_joins(b),
				    .seccomp = init_seccomp(b),
				    .vm = b->vm,
				    .state_rootfs = b->rootfs };
	int fds[2], r;

	b->annotations = shown_annotations(b, true);
	a.annotations = b->annotations;
	if (moat_sync_pair(fds, err) < 0)
		return moat_error_ret(err);
	a.sync_fd = fds[1];
	a.parent_sync_fd = b->sync_fd = fds[0];
	a.parent = getpid();
	a.die_with_parent = b->o->die_with_parent;
	a.host_root = geteuid() == 0;
	b->direct = init_direct(b);
	r = start_child(b, &a, err);
	close(fds[1]);
	if (r < 0)
		return moat_error_ret(err);
	moat_fault_step("create:forked");
	return talk_to_children(b, b->sync_fd, err);
}

static char *now_rfc3339(void)
{
	struct timespec ts;
	struct tm tm;
	char buf[64];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%09ldZ", ts.tv_nsec);
	return xstrdup(buf);
}

/* Whether start or delete will have hooks to run from the saved config (moat_state). */
static bool has_late_hooks(const struct oci_config *cfg)
{
	size_t start = 0, stop = 0;

	moat_hooks_list(cfg->hooks, MOAT_HOOK_POSTSTART, &start);
	moat_hooks_list(cfg->hooks, MOAT_HOOK_POSTSTOP, &stop);
	return start + stop > 0;
}

static int save_state(struct build *b, moat_error *err)
{
	_cleanup_free_ char *json = NULL, *msg = NULL, *created = now_rfc3339();
	struct oci_config *cfg = b->user_cfg ? b->user_cfg : b->cfg;
	const char *isolation = moat_isolation_name(b->isolation.isolation);
	/* the policy's changes are kept apart, in st.policy */
	_cleanup_(oci_string_map_freep) struct oci_string_map *annotations =
		shown_annotations(b, false);
	_cleanup_(oci_string_map_freep) struct oci_string_map *changes =
		moat_policy_result_changes(b->policy);
	struct moat_state st = {
		.oci_version = cfg->oci_version,
		.id = (char *)b->o->id,
		.pid = b->init,
		.pid_start = moat_pid_start_time(b->init),
		.bundle = b->bundle,
		.rootfs = b->rootfs,
		.created = created,
		.owner = getuid(),
		.cgroup_path = b->cgroup_path,
		.cgroup_manager = b->systemd_scope ? MOAT_CGROUP_MANAGER_SYSTEMD : NULL,
		.isolation = (char *)isolation,
		.vm_memory_mib = b->isolation.memory_mib,
		.vm_memory_mib_present =
			b->isolation.isolation == MOAT_ISOLATION_MICROVM && b->pod.sandbox == NULL,
		.vm_pod = b->pod.sandbox,
		.cgroup_applied =
			b->cg ? (struct oci_string_map *)moat_cgroup_applied(b->cg) : NULL,
		.cgroup_ignored =
			b->cg ? (struct oci_string_map *)moat_cgroup_ignored(b->cg) : NULL,
		.policy = changes,
		.late_hooks = has_late_hooks(cfg),
		.late_hooks_present = true,
	};
	size_t len;
	char pid[32];
	int r;

	if (st.pid_start == 0)
		return moat_error_msg(err, ESRCH, "the container init exited during setup");
	/* What is in force, whatever the config asked, is shown by moat state; the saved
	 * config stays as it came. */
	st.annotations = annotations;
	r = oci_config_generate(cfg, true, &json, &len, &msg);
	if (r < 0)
		return moat_error_set(err, -r, "config.json: %s", msg ? msg : "generate");
	if (write_file_atomic_at(b->dirfd, MOAT_CONFIG_FILE, json, len, 0600, err) < 0 ||
	    moat_state_write(b->dirfd, &st, err) < 0)
		return moat_error_ret(err);
	if (b->o->pid_file != NULL) {
		len = (size_t)snprintf(pid, sizeof(pid), "%d", (int)b->init);
		if (write_file_atomic_at(AT_FDCWD, b->o->pid_file, pid, len, 0644, err) < 0)
			return moat_error_prefix(err, "--pid-file");
	}
	return 0;
}

/* Undo whatever was made: the processes, the cgroup, the state directory. */
static void undo(struct build *b)
{
	moat_error ignored = MOAT_ERROR_INIT;
	int status;

	if (b->init > 0) {
		kill(b->init, SIGKILL);
		waitpid(b->init, &status, 0);
	}
	if (b->stage1 > 0) {
		kill(b->stage1, SIGKILL);
		waitpid(b->stage1, &status, 0);
	}
	if (b->scope_started)
		moat_systemd_scope_stop(b->cgroup_path, b->o->rootless || geteuid() != 0, &ignored);
	moat_error_clear(&ignored);
	if (b->cg)
		moat_cgroup_destroy(b->cg, &ignored);
	moat_error_clear(&ignored);
	if (b->pod_attached)
		moat_vm_pod_detach(&b->pod, b->o->id, &ignored);
	moat_error_clear(&ignored);
	if (b->hooks_started) {
		_cleanup_free_ char *json = creating_json(b, 0, "stopped");

		moat_hooks_run(b->cfg->hooks, MOAT_HOOK_POSTSTOP, json, b->bundle, &ignored);
		moat_error_clear(&ignored);
	}
	if (b->made_dir)
		moat_state_dir_remove(b->o->root, b->o->id, &ignored);
	moat_error_clear(&ignored);
}

static void build_free(struct build *b)
{
	for (size_t i = 0; b->idmapped != NULL && i <= b->cfg->mounts_len; i++)
		if (b->idmapped[i] >= 0)
			close(b->idmapped[i]);
	free(b->idmapped);
	if (b->console >= 0)
		close(b->console);
	if (b->dirfd >= 0)
		close(b->dirfd);
	if (b->fifo_fd >= 0)
		close(b->fifo_fd);
	if (b->sync_fd >= 0)
		close(b->sync_fd);
	moat_ns_plan_close(&b->ns);
	moat_cgroup_free(b->cg);
	moat_seccomp_free(b->seccomp);
	moat_seccomp_free(b->vmm_seccomp);
	oci_config_free(b->cfg);
	moat_policy_result_free(b->policy);
	oci_string_map_free(b->annotations);
	moat_egress_policy_clear(&b->egress);
	free(b->cgroup_path);
	free(b->policy_path);
	free(b->state_dir);
	free(b->jail_root);
	oci_config_free(b->user_cfg);
	moat_vm_assets_free(&b->assets);
	moat_vm_session_free(b->vm);
	moat_vm_snapshot_release(&b->snap);
	moat_vm_pod_clear(&b->pod);
	free(b->bundle);
	free(b->rootfs);
}

/* microVM mode: the interfaces of the network namespace the config joins go into the guest
 * (vm-net.h), recorded in the state to come back at delete. */
static int take_network(struct build *b, moat_error *err)
{
	const char *path = moat_config_joined_netns(b->user_cfg ? b->user_cfg : b->cfg);

	if (path == NULL)
		return 0;
	if (moat_vm_net_take(path, false, b->dirfd, &b->vm->net, err) < 0)
		return moat_error_ret(err);
	moat_vm_net_start(&b->vm->net, &b->vm->start);
	return 0;
}

/* create's phases that only read: the config, the policy, the checks, the isolation. */
static int plan(struct build *b, moat_error *err)
{
	if (moat_validate_new_id(b->o->id, err) < 0 || load_config(b, err) < 0 ||
	    apply_policy(b, err) < 0 || check_config(b, err) < 0 || check_egress(b, err) < 0 ||
	    check_isolation(b, err) < 0)
		return moat_error_ret(err);
	return 0;
}

/* create's phases: first what only reads (plan), then what makes; a failure leaves what was
 * made so far for undo(). */
static int build(struct build *b, moat_error *err)
{
	const struct moat_create_opts *o = b->o;

	if (plan(b, err) < 0)
		return moat_error_ret(err);
	if (moat_state_dir_create(o->root, o->id, &b->dirfd, err) < 0)
		return moat_error_ret(err);
	b->made_dir = true;
	moat_fault_step("create:state-dir");
	if (b->auto_userns && !b->joined_userns && lend_host_ids(b, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:userns-loan");
	if (b->vm != NULL) {
		if (make_jail(b, err) < 0 || (!b->vm->member && take_network(b, err) < 0))
			return moat_error_ret(err);
		moat_fault_step("create:microvm-jail");
	}
	if (make_fifo(b, err) < 0 || make_cgroup(b, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:cgroup");
	if (spawn(b, err) < 0)
		return moat_error_ret(err);
	if (b->vm != NULL && b->vm->member) {
		if (record_making(b, true, err) < 0 ||
		    moat_vm_pod_attach(&b->pod, b->init, o->id, err) < 0)
			return moat_error_ret(err);
		b->pod_attached = true;
		moat_fault_step("create:pod-attached");
	}
	if (b->egress_on && moat_egress_start_for(&b->egress, b->init, b->dirfd, o->id, err) < 0)
		return moat_error_ret(err);
	if (save_state(b, err) < 0)
		return moat_error_ret(err);
	moat_fault_step("create:saved");
	/* The state names all there is now; from here the container outlives us. */
	unlinkat(b->dirfd, MOAT_CREATING_FILE, 0);
	if (moat_sync_send(b->sync_fd, MOAT_SYNC_COMMIT, 0, err) < 0)
		return moat_error_prefix(err, "the container init exited during setup");
	/* until it closes its end, the init may still have our death for its signal */
	moat_sync_wait_closed(b->sync_fd);
	moat_fault_step("create:committed");
	return 0;
}

static void build_init(struct build *b, const struct moat_create_opts *o)
{
	*b = (struct build){ .o = o,
			     .dirfd = -1,
			     .fifo_fd = -1,
			     .console = -1,
			     .sync_fd = -1,
			     .snap = MOAT_VM_SNAPSHOT_INIT };
	for (int k = 0; k < MOAT_NS_COUNT; k++)
		b->ns.join_fd[k] = -1;
}

int moat_container_check(const struct moat_create_opts *o, moat_error *err)
{
	struct build b;
	int r;

	build_init(&b, o);
	r = plan(&b, err);
	build_free(&b);
	return r;
}

int moat_container_create(const struct moat_create_opts *o, pid_t *ret_pid, int *ret_console,
			  moat_error *err)
{
	struct build b;
	int r;

	build_init(&b, o);
	r = build(&b, err);
	if (r < 0) {
		undo(&b);
	} else {
		if (ret_pid)
			*ret_pid = b.init;
		if (ret_console)
			*ret_console = TAKE_FD(b.console);
	}
	build_free(&b);
	return r;
}
