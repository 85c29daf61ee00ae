/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: exec --cgroup, placing a process in sub-cgroups of its container's cgroup. */
#include "cgroup-sub.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-internal.h"
#include "utils.h"

/* One path and the argument it came from, for messages. */
struct sub {
	char *path; /* normalized, relative: "a/b" */
	char *arg;
};

struct moat_cgroup_subs {
	struct sub all;                    /* PATH: every hierarchy (path NULL: none given) */
	struct sub by_ctrl[CG_CTRL_COUNT]; /* CONTROLLER:PATH */
};

/* A v1 name ("blkio") or a v2 one ("io"); -1 when neither. */
static int ctrl_by_name(const char *name, size_t len)
{
	for (int c = CG_CPU; c < CG_CTRL_COUNT; c++) {
		const char *v1 = cg_ctrl_name((enum cg_ctrl)c, false);

		if (strlen(v1) == len && strncmp(v1, name, len) == 0)
			return c;
	}
	return cg_ctrl_from_v2_name(name, len);
}

/* "/a//b/" -> "a/b"; refuses nothing left, ".", ".." and control characters. */
static int normalize(const char *arg, const char *in, char **ret, moat_error *err)
{
	_cleanup_free_ char *out = xmalloc(strlen(in) + 1);
	size_t n = 0;

	for (const char *p = in; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return moat_error_msg(err, EINVAL,
					      "--cgroup: a control character in the path");
	while (*(in += strspn(in, "/")) != '\0') {
		size_t len = strcspn(in, "/");

		if ((len == 1 && in[0] == '.') || (len == 2 && strncmp(in, "..", 2) == 0))
			return moat_error_msg(
				err, EINVAL,
				"--cgroup '%s': '%.*s' is not allowed: the path stays inside "
				"the container's cgroup",
				arg, (int)len, in);
		if (n > 0)
			out[n++] = '/';
		memcpy(out + n, in, len);
		n += len;
		in += len;
	}
	if (n == 0)
		return moat_error_msg(err, EINVAL, "--cgroup '%s': no sub-cgroup path", arg);
	out[n] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

static void sub_set(struct sub *s, const char *path, const char *arg)
{
	s->path = xstrdup(path);
	s->arg = xstrdup(arg);
}

/* The controllers before the ':' of arg, each given path. */
static int parse_controllers(struct moat_cgroup_subs *s, const char *arg, size_t list_len,
			     const char *path, moat_error *err)
{
	const char *p = arg, *end = arg + list_len;

	for (;;) {
		size_t len = strcspn(p, ",:");
		int c = ctrl_by_name(p, len);

		if (len == 0)
			return moat_error_msg(err, EINVAL,
					      "--cgroup '%s': an empty controller name", arg);
		if (c < 0)
			return moat_error_msg(err, EINVAL,
					      "--cgroup '%s': unknown controller '%.*s'", arg,
					      (int)len, p);
		if (s->by_ctrl[c].path != NULL)
			return moat_error_msg(err, EINVAL,
					      "--cgroup '%s': controller %s given twice", arg,
					      cg_ctrl_name((enum cg_ctrl)c, false));
		sub_set(&s->by_ctrl[c], path, arg);
		p += len;
		if (p >= end)
			return 0;
		p++; /* the ',' */
	}
}

static int parse_one(struct moat_cgroup_subs *s, const char *arg, moat_error *err)
{
	const char *colon = strchr(arg, ':');
	_cleanup_free_ char *path = NULL;

	if (normalize(arg, colon ? colon + 1 : arg, &path, err) < 0)
		return moat_error_ret(err);
	if (colon != NULL)
		return parse_controllers(s, arg, (size_t)(colon - arg), path, err);
	if (s->all.path != NULL)
		return moat_error_msg(err, EINVAL,
				      "--cgroup '%s': a second path for every hierarchy, "
				      "after '%s'",
				      arg, s->all.arg);
	sub_set(&s->all, path, arg);
	return 0;
}

int moat_cgroup_subs_parse(char *const *args, size_t n, struct moat_cgroup_subs **ret,
			   moat_error *err)
{
	struct moat_cgroup_subs *s;

	if (n == 0) {
		*ret = NULL;
		return 0;
	}
	s = xcalloc(1, sizeof(*s));
	for (size_t i = 0; i < n; i++)
		if (parse_one(s, args[i], err) < 0) {
			moat_cgroup_subs_free(s);
			return moat_error_ret(err);
		}
	*ret = s;
	return 0;
}

void moat_cgroup_subs_free(struct moat_cgroup_subs *s)
{
	if (s == NULL)
		return;
	free(s->all.path);
	free(s->all.arg);
	for (int c = 0; c < CG_CTRL_COUNT; c++) {
		free(s->by_ctrl[c].path);
		free(s->by_ctrl[c].arg);
	}
	free(s);
}

/* The hierarchy of cg holding controller c: its v1 one, else the unified one if it has c. */
static struct cg_hier *holder(struct moat_cgroup *cg, enum cg_ctrl c)
{
	struct cg_hier *h = cg_hier_for(cg, c, false);

	if (h == NULL && (h = cg_unified(cg)) != NULL && !(h->ctrls & CG_BIT(c)))
		h = NULL;
	return h;
}

/* Which sub each hierarchy gets (NULL: the cgroup itself): plan[i] for cg->h[i]. */
static int plan_subs(struct moat_cgroup *cg, const struct moat_cgroup_subs *s,
		     const struct sub **plan, moat_error *err)
{
	for (size_t i = 0; i < cg->n; i++)
		plan[i] = s->all.path != NULL && cg->h[i].fd >= 0 ? &s->all : NULL;
	for (int c = CG_CPU; c < CG_CTRL_COUNT; c++) {
		const struct sub *one = &s->by_ctrl[c];
		struct cg_hier *h;
		size_t i;

		if (one->path == NULL)
			continue;
		h = holder(cg, (enum cg_ctrl)c);
		if (h == NULL || h->fd < 0)
			return moat_error_msg(
				err, ENOENT,
				"--cgroup '%s': the container's cgroup is in no hierarchy "
				"with controller %s on this host",
				one->arg, cg_ctrl_name((enum cg_ctrl)c, false));
		i = (size_t)(h - cg->h);
		if (plan[i] != NULL && plan[i] != &s->all && strcmp(plan[i]->path, one->path) != 0)
			return moat_error_msg(err, EINVAL,
					      "--cgroup '%s' and '%s': one hierarchy (%s) "
					      "holds both controllers: give it one path",
					      plan[i]->arg, one->arg, h->mnt);
		plan[i] = one;
	}
	return 0;
}

/* The write into a sub-cgroup failed: name the argument, and the likely cause of ENOSPC. */
static int write_failed(const struct cg_hier *h, const struct sub *sub, moat_error *err)
{
	_cleanup_free_ char *cause = NULL;

	if (err == NULL || err->code != ENOSPC || h->v2 || !(h->ctrls & CG_BIT(CG_CPUSET)))
		return moat_error_prefix(err, "--cgroup '%s'", sub->arg);
	cause = xstrdup(err->msg);
	return moat_error_msg(err, ENOSPC,
			      "--cgroup '%s': %s (a v1 cpuset cgroup takes a process only once "
			      "its cpuset.cpus and cpuset.mems are set)",
			      sub->arg, cause);
}

int moat_cgroup_add_pid_within(struct moat_cgroup *cg, pid_t pid, const struct moat_cgroup_subs *s,
			       moat_error *err)
{
	_cleanup_free_ const struct sub **plan = NULL;
	char text[24];

	if (s == NULL)
		return moat_cgroup_add_pid(cg, pid, err);
	if (!moat_cgroup_exists(cg))
		return moat_error_msg(err, ENOENT, "--cgroup: the cgroup '%s' does not exist",
				      moat_cgroup_path(cg));
	plan = xcalloc(cg->n > 0 ? cg->n : 1, sizeof(*plan));
	if (plan_subs(cg, s, plan, err) < 0)
		return moat_error_ret(err);
	snprintf(text, sizeof(text), "%d", (int)pid);
	for (size_t i = 0; i < cg->n; i++) {
		const struct cg_hier *h = &cg->h[i];
		_cleanup_free_ char *dir = NULL;
		_cleanup_close_ int fd = -1;

		if (h->fd < 0)
			continue;
		if (plan[i] == NULL) {
			if (cg_write_at(h->fd, h->dir, "cgroup.procs", text, err) < 0)
				return moat_error_prefix(err, "add process %d to the cgroup",
							 (int)pid);
			continue;
		}
		dir = xasprintf("%s/%s", h->dir, plan[i]->path);
		fd = openat(h->fd, plan[i]->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return moat_error_set(err, errno, "--cgroup '%s': no sub-cgroup '%s'",
					      plan[i]->arg, dir);
		if (cg_write_at(fd, dir, "cgroup.procs", text, err) < 0)
			return write_failed(h, plan[i], err);
	}
	return 0;
}
