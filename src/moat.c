/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: an OCI runtime, hardened by default. Entry point: global options
 * and dispatch to one file per subcommand. */
#include "moat.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "policy.h"
#include "sealed-exe.h"
#include "spec.h"
#include "utils.h"

#define MOAT_DEFAULT_ROOT "/run/moat"

static const struct moat_command commands[] = {
	{ "create", "create a container and stop it before the user process", moat_cmd_create },
	{ "delete", "delete a container and everything it owns", moat_cmd_delete },
	{ "events", "print a container's resource statistics and OOM kills as JSON",
	  moat_cmd_events },
	{ "exec", "run another process in a running container", moat_cmd_exec },
	{ "features", "print what this moat supports, as OCI features JSON", moat_cmd_features },
	{ "kill", "send a signal to a container's process (or all, with --all)", moat_cmd_kill },
	{ "list", "list containers", moat_cmd_list },
	{ "pause", "freeze every process of a container", moat_cmd_pause },
	{ "policy", "show the policy, or explain what it makes of a bundle", moat_cmd_policy },
	{ "ps", "list the processes of a container", moat_cmd_ps },
	{ "resume", "thaw a paused container", moat_cmd_resume },
	{ "run", "create and start a container", moat_cmd_run },
	{ "sandbox", "run a program nobody reviewed under limits, and report on it as JSON",
	  moat_cmd_sandbox },
	{ "spec", "write a hardened default config.json", moat_cmd_spec },
	{ "start", "start the user process of a created container", moat_cmd_start },
	{ "state", "print a container's state as JSON", moat_cmd_state },
	{ "update", "change the resources of a running container", moat_cmd_update },
};

static void print_version(void)
{
	printf("moat version %s\n", PACKAGE_VERSION);
	printf("spec: %s\n", MOAT_OCI_VERSION);
	printf("+SECCOMP +CAP +USERNS +PIDFD +OPENAT2 %cSELINUX\n",
#ifdef HAVE_SELINUX
	       '+'
#else
	       '-'
#endif
	);
#ifdef MOAT_FAULT_INJECTION
	printf("fault injection: on (a test build: MOAT_TEST_KILL_AT kills it at a named step)\n");
#endif
}

static void print_help(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: moat [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n\n"
		     "moat is an OCI container runtime, hardened by default: user namespace,\n"
		     "no capabilities, no_new_privs, no host mounts, loopback-only network.\n\n"
		     "Commands:\n");
	for (i = 0; i < MOAT_ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\nGlobal options:\n"
		"  --root DIR              state directory (default " MOAT_DEFAULT_ROOT ",\n"
		"                          $XDG_RUNTIME_DIR/moat for a non-root user)\n"
		"  --log FILE              also write diagnostics to FILE\n"
		"  --log-format text|json  format of the --log file (default text)\n"
		"  --debug                 also log each command, its state root and exit status\n"
		"  --systemd-cgroup        treat cgroupsPath as slice:prefix:name\n"
		"  --cgroup-manager M      cgroupfs, systemd or disabled\n"
		"  --rootless true|false|auto  rootless mode (auto: when not run as root):\n"
		"                          no cgroup unless linux.resources asks for one\n"
		"  --policy FILE           the policy file (default " MOAT_POLICY_FILE ",\n"
		"                          else the built-in hardened preset)\n"
		"  --criu PATH             accepted and ignored, as containerd's go-runc may\n"
		"                          pass it; moat has no checkpoint/restore\n"
		"  -v, --version           print the version and feature tags\n"
		"  -h, --help              print this help; `moat COMMAND --help` for a command\n"
		"\nEach command's --help describes its flags; among them exec --cgroup\n"
		"[CTRL[,CTRL]:]PATH (run in a sub-cgroup of the container's),\n"
		"exec --ignore-paused (exec into a paused container, running once it is\n"
		"resumed), exec --process-label and --apparmor (the exec'd process's SELinux\n"
		"label or AppArmor profile, where the host has that LSM), and run --keep\n"
		"(leave the container after it exits).\n"
		"\nInvoked as moat-vm (a symlink to moat), every container runs as a microVM\n"
		"under moat's own guest kernel; with moat, a config asks for one with the\n"
		"annotation moat.isolation=microvm (moat.vm.accel=kvm|tcg, moat.vm.cpus,\n"
		"moat.vm.memory_mib, moat.vm.boot=cold|snapshot, moat.vm.share=virtiofs|9p).\n"
		"The guest kernel and initramfs come from " PKGLIBDIR " (MOAT_VM_DIR\n"
		"overrides); a VM without network interfaces is restored from a snapshot saved\n"
		"once in /var/cache/moat/vm-snapshots (MOAT_VM_SNAPSHOT_DIR overrides), its\n"
		"root shared over 9p; one that boots shares it over virtio-fs, served by\n"
		"Debian's virtiofsd in the VMM's jail, where that is installed.\n\n"
		"Engines (Podman, Docker, containerd, Kubernetes RuntimeClass) register moat and\n"
		"moat-vm as runc-compatible runtimes: see contrib/engines/README.md. With --log,\n"
		"warnings go to the log only, as engines give the runtime the container's stdio.\n");
}

int moat_usage_error(const char *cmd, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	moat_log_error("%s: %s (see 'moat %s --help')", cmd, msg ? msg : "bad arguments", cmd);
	return EXIT_FAILURE;
}

int moat_bad_option(const char *cmd, char **argv)
{
	const char *arg = argv[optind - 1];

	if (optopt != 0 && optopt != '?' && arg[0] == '-' && arg[1] != '-')
		return moat_usage_error(cmd, "unknown option '-%c' or missing argument", optopt);
	return moat_usage_error(cmd, "unknown option '%s' or missing argument", arg);
}

int moat_want_id(const char *cmd, int argc, char **argv, int optind_, const char **ret_id)
{
	if (argc - optind_ < 1)
		return moat_usage_error(cmd, "missing container ID");
	if (argc - optind_ > 1)
		return moat_usage_error(cmd, "unexpected argument '%s'", argv[optind_ + 1]);
	*ret_id = argv[optind_];
	return 0;
}

/* root uses /run/moat; anyone else their runtime directory, as runc does. */
static char *default_root(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0)
		return xstrdup(MOAT_DEFAULT_ROOT);
	if (xdg != NULL && xdg[0] == '/')
		return xasprintf("%s/moat", xdg);
	return xasprintf("/run/user/%u/moat", (unsigned)geteuid());
}

/* --rootless auto (the default) means "not running as root". */
bool moat_is_rootless(const struct moat_globals *g)
{
	if (g->rootless == NULL || strcmp(g->rootless, "auto") == 0)
		return geteuid() != 0;
	return strcmp(g->rootless, "true") == 0;
}

enum {
	OPT_ROOT = 256,
	OPT_LOG,
	OPT_LOG_FORMAT,
	OPT_DEBUG,
	OPT_SYSTEMD_CGROUP,
	OPT_CGROUP_MANAGER,
	OPT_ROOTLESS,
	OPT_CRIU,
	OPT_POLICY
};

static int parse_globals(int argc, char **argv, struct moat_globals *g)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
		{ "debug", no_argument, NULL, OPT_DEBUG },
		{ "systemd-cgroup", no_argument, NULL, OPT_SYSTEMD_CGROUP },
		{ "cgroup-manager", required_argument, NULL, OPT_CGROUP_MANAGER },
		{ "rootless", required_argument, NULL, OPT_ROOTLESS },
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "version", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ROOT: g->root = optarg; break;
		case OPT_LOG: g->log_path = optarg; break;
		case OPT_LOG_FORMAT:
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				fprintf(stderr,
					"moat: --log-format: '%s' is not text or json (see 'moat --help')\n",
					optarg);
				return -1;
			}
			g->log_json = strcmp(optarg, "json") == 0;
			break;
		case OPT_DEBUG: g->debug = true; break;
		case OPT_SYSTEMD_CGROUP: g->systemd_cgroup = true; break;
		case OPT_CGROUP_MANAGER:
			if (strcmp(optarg, "cgroupfs") && strcmp(optarg, "systemd") &&
			    strcmp(optarg, "disabled")) {
				fprintf(stderr,
					"moat: --cgroup-manager: '%s' is not cgroupfs, systemd or disabled (see 'moat --help')\n",
					optarg);
				return -1;
			}
			g->cgroup_manager = optarg;
			if (strcmp(optarg, "systemd") == 0)
				g->systemd_cgroup = true;
			break;
		case OPT_ROOTLESS:
			if (strcmp(optarg, "true") && strcmp(optarg, "false") &&
			    strcmp(optarg, "auto")) {
				fprintf(stderr,
					"moat: --rootless: '%s' is not true, false or auto (see 'moat --help')\n",
					optarg);
				return -1;
			}
			g->rootless = optarg;
			break;
		case OPT_CRIU: break; /* go-runc passes it; moat has no checkpoint/restore */
		case OPT_POLICY: g->policy = optarg; break;
		case 'v': print_version(); exit(EXIT_SUCCESS);
		case 'h': print_help(stdout); exit(EXIT_SUCCESS);
		default:
			fprintf(stderr,
				"moat: unknown global option '%s' or missing argument (see 'moat --help')\n",
				argv[optind - 1]);
			return -1;
		}
	}
	return 0;
}

/* A size: an integer with an optional k/m/g/t suffix (binary), or -1. */
int moat_parse_size(const char *cmd, const char *flag, const char *s, int64_t *ret)
{
	static const char units[] = "kmgt";
	const char *u;
	char *end;
	long long v;
	int shift = 0;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == 0 && *end != '\0' && end[1] == '\0' && end != s &&
	    (u = strchr(units, end[0] | 0x20)) != NULL) {
		shift = 10 * (int)(u - units + 1);
		end++;
	}
	if (errno || end == s || *end != '\0' || v < -1 || (v > 0 && v > (LLONG_MAX >> shift)))
		return moat_usage_error(cmd, "%s: '%s' is not a size", flag, s);
	*ret = v == -1 ? -1 : (int64_t)((unsigned long long)v << shift);
	return 0;
}

int main(int argc, char **argv)
{
	struct moat_globals g = { .root = NULL, .argv0 = argv[0] };
	_cleanup_free_ char *user_root = NULL;
	moat_error err = MOAT_ERROR_INIT;
	size_t i;
	int r;

	opterr = 0; /* every option error is reported once, in moat's words */
	if (parse_globals(argc, argv, &g) < 0)
		return EXIT_FAILURE;
	if (moat_log_open(g.log_path, g.log_json ? MOAT_LOG_JSON : MOAT_LOG_TEXT, g.debug, &err) <
	    0)
		return moat_fail(&err);
	if (g.root == NULL)
		g.root = user_root = default_root();
	if (optind >= argc) {
		print_help(stderr);
		return EXIT_FAILURE;
	}
	/* A process that enters a container (create, run, exec) runs from a sealed
	 * copy of moat, never from the host binary (CVE-2019-5736). */
	if ((strcmp(argv[optind], "create") == 0 || strcmp(argv[optind], "run") == 0 ||
	     strcmp(argv[optind], "exec") == 0 || strcmp(argv[optind], "sandbox") == 0) &&
	    moat_exec_sealed_self(argv, &err) < 0)
		return moat_fail(&err);
	for (i = 0; i < MOAT_ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[optind], commands[i].name) != 0)
			continue;
		argc -= optind;
		argv += optind;
		optind = 0; /* reset getopt for the subcommand */
		moat_log_debug("%s: root %s, pid %d, %d argument(s)", commands[i].name, g.root,
			       (int)getpid(), argc - 1);
		r = commands[i].run(&g, argc, argv);
		moat_log_debug("%s: exit status %d", commands[i].name, r);
		moat_log_close();
		return r;
	}
	moat_log_error("unknown command '%s' (see 'moat --help')", argv[optind]);
	return EXIT_FAILURE;
}
