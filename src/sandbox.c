/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: run a program nobody reviewed under moat's contract, and print the result;
 * make a session's sandbox; and the options the two share.
 *
 * `moat sandbox run` forks the sandbox's keeper and waits for the result. The keeper leaves
 * the caller's session and stdio, does the whole task (libmoat's moat_sandbox_run) and sends
 * back the exit status and the result document on a socket pair. When the caller dies (a
 * SIGKILL at any point), the keeper sees its end of the pair hang up, kills the command and
 * destroys the sandbox; killing the keeper takes the sandbox's processes with it.
 *
 * `moat sandbox create` forks a keeper the same way, which makes the sandbox, says it is
 * ready and then serves the session's commands (sandbox-keeper.c) until it ends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "image.h"
#include "log.h"
#include "moat.h"
#include "sandbox-cli.h"
#include "sandbox-json.h"
#include "sandbox-proto.h"
#include "sandbox.h"
#include "utils.h"

static void shared_options(void);
static void usage_end(bool create);

static void usage(bool create)
{
	if (create)
		printf("Usage: moat sandbox create [OPTIONS] NAME\n\n"
		       "Make a sandbox that lives across several commands (exec, cp, diff, rm), and\n"
		       "print its NAME once it is ready. Its keeper, a process of the caller's uid,\n"
		       "destroys it at rm, at the end of its lifetime, after its idle timeout, or\n"
		       "when killed (docs/sandbox.md).\n\n"
		       "  --lifetime D            the sandbox's whole life (default 10m)\n"
		       "  --idle-timeout D        destroyed after D without exec, cp or diff\n"
		       "                          (default 2m; 0: never)\n");
	else
		printf("Usage: moat sandbox run [OPTIONS] -- PROGRAM [ARG...]\n\n"
		       "Make a sandbox from a read-only root filesystem, run PROGRAM in it (never\n"
		       "through a shell) with the limits below, print the result as JSON\n"
		       "(moat.sandbox.result/v1, docs/sandbox.md), and destroy everything.\n\n");
	shared_options();
	usage_end(create);
}

/* The options run and create share. */
static void shared_options(void)
{
	printf("  --rootfs DIR            the base, used read-only\n"
	       "  --image PATH            or an image as the base: an OCI layout directory, or an\n"
	       "                          OCI or Docker archive (podman/docker save), unpacked once\n"
	       "                          into " MOAT_SANDBOX_IMAGE_CACHE "\n"
	       "                          (MOAT_SANDBOX_IMAGE_CACHE overrides)\n"
	       "  --isolation MODE        container or microvm (default: the policy's)\n"
	       "  --accel WHAT            a microVM's accelerator: kvm or tcg (default: the policy's)\n"
	       "  --timeout D             wall clock of the command (default 60s; 0: none)\n"
	       "  --memory B              memory limit (default 512m)\n"
	       "  --cpus N                CPU quota, in CPUs (default: none)\n"
	       "  --pids N                processes and threads (default 256)\n"
	       "  --disk B                size of the writable layer (default 256m)\n"
	       "  --output-limit B        bytes kept of each of stdout and stderr (default 1m)\n"
	       "  --on-output-limit WHAT  kill (default) or truncate, past the output limit\n"
	       "  --user UID[:GID]        the user inside (default 1000:1000)\n"
	       "  --workdir DIR           the working directory, created (default /work)\n"
	       "  --env K=V               an environment variable (repeatable); the program gets\n"
	       "                          nothing else but PATH\n"
	       "  --copy-in HOST:PATH     copy a host file or directory in (repeatable)\n"
	       "  --allow HOST[:PORT][+private|+loopback|+link-local]\n"
	       "                          let HOST (or *.DOMAIN) through moat's egress proxy\n"
	       "                          (repeatable; port 443 by default); without it, no\n"
	       "                          network but loopback (docs/egress.md)\n"
	       "  --resolve HOST=ADDRESS  the proxy's answer for HOST, instead of DNS\n"
	       "  --proxy-header HOST=Name: value\n"
	       "                          a header the proxy adds to plain-HTTP requests to HOST\n"
	       "                          (a credential the sandbox never sees; not for HTTPS)\n");
}

static void usage_end(bool create)
{
	if (create) {
		printf("\nThe --timeout, --output-limit, --user, --workdir and --env given here are the\n"
		       "defaults of each exec. Durations: N (seconds), Nms, Ns, Nm, Nh. Sizes: N, Nk,\n"
		       "Nm, Ng. Exit status: 0 once ready, 1 for a bad argument, 125 when moat failed.\n");
		return;
	}
	printf("  --copy-out PATH:HOST    copy a file or directory out after the run (repeatable;\n"
	       "                          symlinks are not followed)\n"
	       "  --result FILE           write the result there (default: stdout)\n\n"
	       "Durations: N (seconds), Nms, Ns, Nm, Nh. Sizes: N, Nk, Nm, Ng.\n"
	       "Exit status: the program's (128+N for signal N), 124 on timeout, 125 when moat\n"
	       "failed; the result says which, and why.\n");
}

enum {
	OPT_ROOTFS = 256,
	OPT_IMAGE,
	OPT_ISOLATION,
	OPT_ACCEL,
	OPT_TIMEOUT,
	OPT_MEMORY,
	OPT_CPUS,
	OPT_PIDS,
	OPT_DISK,
	OPT_OUTPUT_LIMIT,
	OPT_ON_OUTPUT_LIMIT,
	OPT_USER,
	OPT_WORKDIR,
	OPT_ENV,
	OPT_COPY_IN,
	OPT_COPY_OUT,
	OPT_RESULT,
	OPT_LIFETIME,
	OPT_IDLE_TIMEOUT,
	OPT_ALLOW,
	OPT_RESOLVE,
	OPT_PROXY_HEADER,
};

static const struct option run_options[] = {
	{ "rootfs", required_argument, NULL, OPT_ROOTFS },
	{ "image", required_argument, NULL, OPT_IMAGE },
	{ "isolation", required_argument, NULL, OPT_ISOLATION },
	{ "accel", required_argument, NULL, OPT_ACCEL },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "pids", required_argument, NULL, OPT_PIDS },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT },
	{ "on-output-limit", required_argument, NULL, OPT_ON_OUTPUT_LIMIT },
	{ "user", required_argument, NULL, OPT_USER },
	{ "workdir", required_argument, NULL, OPT_WORKDIR },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "copy-in", required_argument, NULL, OPT_COPY_IN },
	{ "copy-out", required_argument, NULL, OPT_COPY_OUT },
	{ "result", required_argument, NULL, OPT_RESULT },
	{ "lifetime", required_argument, NULL, OPT_LIFETIME },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "allow", required_argument, NULL, OPT_ALLOW },
	{ "resolve", required_argument, NULL, OPT_RESOLVE },
	{ "proxy-header", required_argument, NULL, OPT_PROXY_HEADER },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* What the command line holds beside the library's options. */
struct run_args {
	const char *cmd; /* "sandbox run" or "sandbox create" */
	bool create;
	uint64_t lifetime_ms, idle_ms;
	struct moat_egress_policy egress;
	struct moat_sandbox_opts o;
	char **env;
	size_t n_env;
	struct moat_sandbox_copy *copies[2];
	size_t n_copies[2];
	const char *result;
	const char *image;
	char rootfs[PATH_MAX];
};

int sb_parse_duration(const char *cmd, const char *flag, const char *s, uint64_t *ret_ms)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "", 1000 } };
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == 0 && end != s && s[0] != '-')
		for (size_t i = 0; i < MOAT_ARRAY_SIZE(units); i++)
			if (strcmp(end, units[i].suffix) == 0 && v <= UINT64_MAX / units[i].ms) {
				*ret_ms = v * units[i].ms;
				return 0;
			}
	return moat_usage_error(cmd, "%s: '%s' is not a duration (N, Nms, Ns, Nm, Nh)", flag, s);
}

int sb_parse_bytes(const char *cmd, const char *flag, const char *s, uint64_t min, uint64_t *ret)
{
	int64_t v;

	if (moat_parse_size(cmd, flag, s, &v) != 0)
		return EXIT_FAILURE;
	if (v < 0 || (uint64_t)v < min)
		return moat_usage_error(cmd, "%s: '%s' is below the least, %llu bytes", flag, s,
					(unsigned long long)min);
	*ret = (uint64_t)v;
	return 0;
}

int sb_parse_user(const char *cmd, const char *s, uid_t *ret_uid, gid_t *ret_gid)
{
	unsigned long uid, gid;
	char *end;

	errno = 0;
	uid = strtoul(s, &end, 10);
	gid = uid;
	if (errno == 0 && end != s && *end == ':')
		gid = strtoul(end + 1, &end, 10);
	if (errno || end == s || *end != '\0' || s[0] == '-' || uid > 65535 || gid > 65535)
		return moat_usage_error(cmd, "--user: '%s' is not UID[:GID] (numbers in 0..65535)",
					s);
	*ret_uid = (uid_t)uid;
	*ret_gid = (gid_t)gid;
	return 0;
}

int sb_parse_env(const char *cmd, char *arg, char ***env, size_t *n)
{
	if (strchr(arg, '=') == NULL || arg[0] == '=')
		return moat_usage_error(cmd, "--env: '%s' is not K=V", arg);
	*env = xrealloc(*env, (*n + 2) * sizeof(char *));
	(*env)[(*n)++] = arg;
	(*env)[*n] = NULL;
	return 0;
}

/* HOST:PATH (copy-in, which 0) or PATH:HOST (copy-out, which 1): split at the first ':'. */
static int add_copy(struct run_args *a, int which, char *arg)
{
	const char *flag = which == 0 ? "--copy-in" : "--copy-out";
	char *colon = strchr(arg, ':');
	struct moat_sandbox_copy c;

	if (a->create && which == 1)
		return moat_usage_error(a->cmd,
					"--copy-out: only for sandbox run (use sandbox cp)");
	if (colon == NULL || colon == arg || colon[1] == '\0')
		return moat_usage_error(a->cmd, "%s: '%s' is not %s", flag, arg,
					which == 0 ? "HOST:PATH" : "PATH:HOST");
	*colon = '\0';
	c = which == 0 ? (struct moat_sandbox_copy){ arg, colon + 1 }
		       : (struct moat_sandbox_copy){ colon + 1, arg };
	a->copies[which] = xrealloc(a->copies[which], (a->n_copies[which] + 1) * sizeof(c));
	a->copies[which][a->n_copies[which]++] = c;
	return 0;
}

static int egress_value(struct run_args *a, int c, const char *arg)
{
	moat_error err = MOAT_ERROR_INIT;

	int r = c == OPT_ALLOW     ? moat_egress_rule_add(&a->egress, arg, &err)
		: c == OPT_RESOLVE ? moat_egress_pin_add(&a->egress, arg, &err)
				   : moat_egress_header_add(&a->egress, arg, &err);

	if (r < 0) {
		moat_usage_error(a->cmd, "%s", err.msg);
		moat_error_clear(&err);
		return EXIT_FAILURE;
	}
	a->o.egress = &a->egress;
	return 0;
}

static int parse_value(struct run_args *a, int c, char *arg)
{
	struct moat_sandbox_opts *o = &a->o;
	uint64_t v;
	char *end;

	switch (c) {
	case OPT_ROOTFS:
		if (realpath(arg, a->rootfs) == NULL)
			return moat_usage_error(a->cmd, "--rootfs '%s': %s", arg, strerror(errno));
		o->rootfs = a->rootfs;
		return 0;
	case OPT_IMAGE: a->image = arg; return 0;
	case OPT_ISOLATION:
		if (strcmp(arg, "container") != 0 && strcmp(arg, "microvm") != 0)
			return moat_usage_error(
				a->cmd, "--isolation: '%s' is not container or microvm", arg);
		o->isolation = arg;
		return 0;
	case OPT_ACCEL:
		if (strcmp(arg, "kvm") != 0 && strcmp(arg, "tcg") != 0)
			return moat_usage_error(a->cmd, "--accel: '%s' is not kvm or tcg", arg);
		o->accel = arg;
		return 0;
	case OPT_TIMEOUT: return sb_parse_duration(a->cmd, "--timeout", arg, &o->timeout_ms);
	case OPT_MEMORY: return sb_parse_bytes(a->cmd, "--memory", arg, 8 << 20, &o->memory);
	case OPT_DISK: return sb_parse_bytes(a->cmd, "--disk", arg, 1 << 20, &o->disk);
	case OPT_OUTPUT_LIMIT:
		return sb_parse_bytes(a->cmd, "--output-limit", arg, 0, &o->output_limit);
	case OPT_PIDS:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end != '\0' || arg[0] == '-' || v < 2 || v > 4194304)
			return moat_usage_error(a->cmd,
						"--pids: '%s' is not a number in 2..4194304", arg);
		o->pids = v;
		return 0;
	case OPT_CPUS:
		errno = 0;
		o->cpus = strtod(arg, &end);
		if (errno || end == arg || *end != '\0' || !(o->cpus >= 0.01) || o->cpus > 1024)
			return moat_usage_error(a->cmd,
						"--cpus: '%s' is not a number in 0.01..1024", arg);
		return 0;
	case OPT_ON_OUTPUT_LIMIT:
		if (strcmp(arg, "kill") != 0 && strcmp(arg, "truncate") != 0)
			return moat_usage_error(
				a->cmd, "--on-output-limit: '%s' is not kill or truncate", arg);
		o->truncate_output = strcmp(arg, "truncate") == 0;
		return 0;
	case OPT_USER: return sb_parse_user(a->cmd, arg, &o->uid, &o->gid);
	case OPT_WORKDIR:
		if (arg[0] != '/' || strstr(arg, "/../") != NULL || strcmp(arg, "/") == 0)
			return moat_usage_error(
				a->cmd, "--workdir: '%s' is not an absolute path below /", arg);
		o->workdir = arg;
		return 0;
	case OPT_ENV: return sb_parse_env(a->cmd, arg, &a->env, &a->n_env);
	case OPT_COPY_IN: return add_copy(a, 0, arg);
	case OPT_COPY_OUT: return add_copy(a, 1, arg);
	case OPT_RESULT:
		if (a->create)
			return moat_usage_error(a->cmd, "--result: only for sandbox run and exec");
		a->result = arg;
		return 0;
	case OPT_ALLOW:
	case OPT_RESOLVE:
	case OPT_PROXY_HEADER: return egress_value(a, c, arg);
	case OPT_LIFETIME:
	case OPT_IDLE_TIMEOUT:
		if (!a->create)
			return moat_usage_error(a->cmd, "--%s: only for sandbox create",
						c == OPT_LIFETIME ? "lifetime" : "idle-timeout");
		if (c == OPT_LIFETIME)
			return sb_parse_duration(a->cmd, "--lifetime", arg, &a->lifetime_ms);
		return sb_parse_duration(a->cmd, "--idle-timeout", arg, &a->idle_ms);
	}
	return EXIT_FAILURE;
}

/* The options of run and create; create takes the NAME where run takes the program. */
static int parse_run(int argc, char **argv, struct run_args *a)
{
	struct moat_sandbox_opts *o = &a->o;
	int c;

	a->lifetime_ms = MOAT_SANDBOX_LIFETIME_MS;
	a->idle_ms = MOAT_SANDBOX_IDLE_MS;
	a->egress =
		(struct moat_egress_policy){ .max_connections = MOAT_EGRESS_MAX_CONNECTIONS,
					     .max_bytes = MOAT_EGRESS_MAX_BYTES,
					     .connect_timeout_ms = MOAT_EGRESS_CONNECT_TIMEOUT_MS,
					     .idle_timeout_ms = MOAT_EGRESS_IDLE_TIMEOUT_MS };
	*o = (struct moat_sandbox_opts){ .timeout_ms = MOAT_SANDBOX_TIMEOUT_MS,
					 .memory = MOAT_SANDBOX_MEMORY,
					 .pids = MOAT_SANDBOX_PIDS,
					 .disk = MOAT_SANDBOX_DISK,
					 .output_limit = MOAT_SANDBOX_OUTPUT_LIMIT,
					 .uid = MOAT_SANDBOX_UID,
					 .gid = MOAT_SANDBOX_UID,
					 .workdir = MOAT_SANDBOX_WORKDIR };
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", run_options, NULL)) != -1) {
		if (c == 'h') {
			usage(a->create);
			exit(EXIT_SUCCESS);
		}
		if (c == '?')
			return moat_bad_option(a->cmd, argv);
		if (parse_value(a, c, optarg) != 0)
			return EXIT_FAILURE;
	}
	if (a->create && optind + 1 != argc)
		return moat_usage_error(a->cmd, "give the sandbox's NAME (and nothing after it)");
	if (optind >= argc)
		return moat_usage_error(a->cmd, "no program: give it after --");
	if ((o->rootfs == NULL) == (a->image == NULL))
		return moat_usage_error(a->cmd, "give one of --rootfs DIR and --image PATH");
	if (a->create && a->lifetime_ms == 0)
		return moat_usage_error(a->cmd, "--lifetime: 0 is no lifetime; give one");
	if (a->create)
		o->name = argv[optind];
	else
		o->argv = argv + optind;
	o->env = a->env;
	o->copy_in = a->copies[0];
	o->n_copy_in = a->n_copies[0];
	o->copy_out = a->copies[1];
	o->n_copy_out = a->n_copies[1];
	return 0;
}

int sb_exit_status(const struct moat_sandbox_result *r)
{
	switch (r->reason) {
	case MOAT_SANDBOX_ERROR: return EXIT_SANDBOX_ERROR;
	case MOAT_SANDBOX_TIMEOUT:
	case MOAT_SANDBOX_LIFETIME: return EXIT_TIMEOUT;
	default:
		if (r->signo != 0)
			return 128 + r->signo;
		/* a program that never started (the sandbox's pids limit was full) */
		return r->code >= 0 ? r->code : EXIT_SANDBOX_ERROR;
	}
}

void sb_reply_result(int sock, const struct moat_sandbox_result *r)
{
	_cleanup_free_ char *json = moat_sandbox_result_json(r);
	int status = sb_exit_status(r);

	sb_reply(sock, status, status == EXIT_SANDBOX_ERROR && r->message ? r->message : "", json);
}

/* Close every fd that would survive an exec: those the caller handed down, not moat's. */
static void close_inherited(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name), flags;

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		flags = fcntl(fd, F_GETFD);
		if (flags >= 0 && !(flags & FD_CLOEXEC))
			close(fd);
	}
}

int sb_detach(void)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	setsid();
	signal(SIGPIPE, SIG_IGN);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
		return -errno;
	close_inherited();
	return 0;
}

/* run's keeper: the status and the result go to link, then it exits. */
static _Noreturn void keeper(const struct moat_sandbox_opts *o, int link)
{
	_cleanup_(moat_sandbox_result_freep) struct moat_sandbox_result *r = NULL;
	moat_error err = MOAT_ERROR_INIT;

	if (sb_detach() < 0)
		_exit(EXIT_SANDBOX_ERROR);
	if (moat_sandbox_run(o, link, &r, &err) < 0) {
		sb_reply(link, EXIT_SANDBOX_ERROR, err.msg ? err.msg : "sandbox: failed", NULL);
		_exit(EXIT_SANDBOX_ERROR);
	}
	sb_reply_result(link, r);
	_exit(0);
}

int sb_print_reply(int status, const char *msg, const char *body, const char *result_path)
{
	moat_error err = MOAT_ERROR_INIT;

	if (msg[0] != '\0')
		fprintf(stderr, "moat: %s\n", msg);
	if (body[0] == '\0')
		return status;
	if (result_path != NULL) {
		_cleanup_close_ int fd =
			open(result_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || write_all(fd, body, strlen(body)) < 0) {
			moat_error_set(&err, errno, "--result '%s'", result_path);
			moat_fail(&err);
			return EXIT_SANDBOX_ERROR;
		}
	} else {
		fputs(body, stdout);
		fflush(stdout);
	}
	return status;
}

/* Read what the keeper sends, and print it. */
static int await_keeper(int link, const char *result_path)
{
	_cleanup_free_ char *msg = NULL, *body = NULL;
	moat_error err = MOAT_ERROR_INIT;
	int status;

	if (sb_reply_read(link, "the sandbox's keeper", &status, &msg, &body, &err) < 0) {
		moat_fail(&err);
		return EXIT_SANDBOX_ERROR;
	}
	return sb_print_reply(status, msg, body, result_path);
}

/* create: read the keeper's first line only, as what it forked (a microVM's monitor) may
 * hold the socket open as long as the sandbox lives. */
static int await_ready(int link)
{
	char line[4096], *msg;
	size_t len = 0;
	int status;

	while (len + 1 < sizeof(line)) {
		ssize_t n = read(link, line + len, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || line[len++] == '\n')
			break;
	}
	line[len] = '\0';
	if (sscanf(line, "%d", &status) != 1 || (msg = strchr(line, '\t')) == NULL ||
	    line[len - 1] != '\n') {
		fprintf(stderr, "moat: sandbox create: the keeper ended before the sandbox was "
				"ready\n");
		return EXIT_SANDBOX_ERROR;
	}
	line[len - 1] = '\0';
	if (msg[1] != '\0')
		fprintf(stderr, "moat: %s\n", msg + 1);
	return status;
}

/* The image, unpacked into the cache, as the base. */
static int resolve_image(struct run_args *a, char **ret_root)
{
	const char *cache = getenv("MOAT_SANDBOX_IMAGE_CACHE");
	moat_error err = MOAT_ERROR_INIT;

	if (a->image == NULL)
		return 0;
	if (moat_image_rootfs(a->image, cache ? cache : MOAT_SANDBOX_IMAGE_CACHE, ret_root, &err) <
	    0) {
		moat_error_prefix(&err, "--image '%s'", a->image);
		return moat_fail(&err);
	}
	a->o.rootfs = *ret_root;
	return 0;
}

static void run_args_free(struct run_args *a)
{
	moat_egress_policy_clear(&a->egress);
	free(a->env);
	free(a->copies[0]);
	free(a->copies[1]);
}

/* Fork the keeper of run or create, and print what it says. */
static int with_keeper(struct run_args *a)
{
	int pair[2], status;
	pid_t pid;

	moat_sandbox_collect();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		perror("moat: sandbox: socketpair");
		return EXIT_SANDBOX_ERROR;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("moat: sandbox: fork");
		return EXIT_SANDBOX_ERROR;
	}
	if (pid == 0) {
		close(pair[0]);
		moat_fault_role("keeper");
		if (a->create)
			sb_keeper_session(&a->o, a->lifetime_ms, a->idle_ms, pair[1]);
		keeper(&a->o, pair[1]);
	}
	close(pair[1]);
	status = a->create ? await_ready(pair[0]) : await_keeper(pair[0], a->result);
	close(pair[0]);
	if (a->create && status == 0) {
		printf("%s\n", a->o.name);
		return 0; /* the keeper lives on, the session's */
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	moat_sandbox_collect(); /* a keeper killed leaves its state: its caller removes it */
	return status;
}

static int cmd_run(struct moat_globals *g, int argc, char **argv, bool create)
{
	_cleanup_free_ char *image_root = NULL;
	struct run_args a = { .cmd = create ? "sandbox create" : "sandbox run", .create = create };
	moat_error err = MOAT_ERROR_INIT;
	int status;

	if (parse_run(argc, argv, &a) != 0 || resolve_image(&a, &image_root) != 0) {
		run_args_free(&a);
		return EXIT_FAILURE;
	}
	if (create && moat_sandbox_check_name(a.o.name, &err) < 0) {
		run_args_free(&a);
		return moat_fail(&err);
	}
	a.o.policy = g->policy;
	status = with_keeper(&a);
	run_args_free(&a);
	return status;
}

static void sandbox_usage(FILE *f)
{
	fprintf(f,
		"Usage: moat sandbox COMMAND ...\n\n"
		"  run [OPTIONS] -- PROGRAM [ARG...]   one task: make a sandbox, run PROGRAM,\n"
		"                                      print the result, destroy it\n"
		"  create [OPTIONS] NAME               a session's sandbox, for the commands below\n"
		"  exec [OPTIONS] NAME -- PROGRAM [ARG...]\n"
		"                                      run PROGRAM in it, print the result\n"
		"  cp NAME:PATH HOST_PATH | HOST_PATH NAME:PATH\n"
		"                                      copy a file or directory out or in\n"
		"  diff NAME                           what changed in it since create\n"
		"  ls [--format table|json]            the caller's sandboxes\n"
		"  rm [--force] NAME                   destroy it\n\n"
		"See 'moat sandbox COMMAND --help' for the options of each.\n");
}

int moat_cmd_sandbox(struct moat_globals *g, int argc, char **argv)
{
	if (argc < 2) {
		sandbox_usage(stderr);
		return EXIT_FAILURE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		sandbox_usage(stdout);
		return EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "create") == 0)
		return cmd_run(g, argc - 1, argv + 1, argv[1][0] == 'c');
	if (strcmp(argv[1], "exec") == 0)
		return sb_cmd_exec(g, argc - 1, argv + 1);
	if (strcmp(argv[1], "cp") == 0)
		return sb_cmd_cp(g, argc - 1, argv + 1);
	if (strcmp(argv[1], "diff") == 0)
		return sb_cmd_diff(g, argc - 1, argv + 1);
	if (strcmp(argv[1], "ls") == 0)
		return sb_cmd_ls(g, argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0)
		return sb_cmd_rm(g, argc - 1, argv + 1);
	return moat_usage_error("sandbox", "unknown subcommand '%s'", argv[1]);
}
