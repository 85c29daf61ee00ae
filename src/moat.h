/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat command layer: global options and the subcommand table. */
#ifndef MOAT_MOAT_H
#define MOAT_MOAT_H

#include <stdbool.h>
#include <stdint.h>

struct moat_globals {
	const char *root;           /* --root: state directory */
	const char *log_path;       /* --log */
	bool log_json;              /* --log-format json */
	bool debug;                 /* --debug */
	bool systemd_cgroup;        /* --systemd-cgroup */
	const char *cgroup_manager; /* --cgroup-manager */
	const char *rootless;       /* --rootless true|false|auto */
	const char *argv0;          /* how moat was invoked (moat or moat-vm) */
	const char *policy;         /* --policy: the policy file (NULL: the default) */
};

struct moat_command {
	const char *name;
	const char *summary;
	int (*run)(struct moat_globals *g, int argc, char **argv);
};

/* Each subcommand parses its own arguments (argv[0] is the command name),
 * calls libmoat, prints, and returns the process exit status. */
int moat_cmd_spec(struct moat_globals *g, int argc, char **argv);
int moat_cmd_run(struct moat_globals *g, int argc, char **argv);
int moat_cmd_create(struct moat_globals *g, int argc, char **argv);
int moat_cmd_start(struct moat_globals *g, int argc, char **argv);
int moat_cmd_state(struct moat_globals *g, int argc, char **argv);
int moat_cmd_list(struct moat_globals *g, int argc, char **argv);
int moat_cmd_kill(struct moat_globals *g, int argc, char **argv);
int moat_cmd_delete(struct moat_globals *g, int argc, char **argv);
int moat_cmd_exec(struct moat_globals *g, int argc, char **argv);
int moat_cmd_events(struct moat_globals *g, int argc, char **argv);
int moat_cmd_features(struct moat_globals *g, int argc, char **argv);
int moat_cmd_pause(struct moat_globals *g, int argc, char **argv);
int moat_cmd_resume(struct moat_globals *g, int argc, char **argv);
int moat_cmd_ps(struct moat_globals *g, int argc, char **argv);
int moat_cmd_update(struct moat_globals *g, int argc, char **argv);
int moat_cmd_policy(struct moat_globals *g, int argc, char **argv);
int moat_cmd_sandbox(struct moat_globals *g, int argc, char **argv);

/* --rootless, with auto resolved from the effective uid. */
bool moat_is_rootless(const struct moat_globals *g);

/* Shared argument helpers. */
struct moat_create_opts;
struct moat_run_opts;
/* The flags of create and run (run NULL: create, which refuses --detach and --keep). Prints
 * usage errors; returns 0 or an exit status. */
int moat_parse_create_args(struct moat_globals *g, const char *cmd, int argc, char **argv,
			   struct moat_create_opts *o, struct moat_run_opts *run);
/* A size: an integer with an optional k/m/g/t suffix (binary), or -1. Prints the usage error
 * (naming cmd and flag) and returns an exit status, or 0. */
int moat_parse_size(const char *cmd, const char *flag, const char *s, int64_t *ret);
/* getopt returned '?': name the option it did not accept. */
int moat_bad_option(const char *cmd, char **argv);
int moat_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Exactly one positional argument, the container ID; prints the error. */
int moat_want_id(const char *cmd, int argc, char **argv, int optind_, const char **ret_id);

#endif
