/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat sandbox: the documents as JSON: the result, "moat.sandbox.result/v1", a session's diff,
 * "moat.sandbox.diff/v1", and its status (docs/sandbox.md says what each member means;
 * docs/sandbox-result.schema.json and docs/sandbox-diff.schema.json are their schemas). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_gen.h>

#include "sandbox-json.h"
#include "utils.h"

#define G_STR(g, s) yajl_gen_string((g), (const unsigned char *)(s), strlen(s))

void sbj_key_str(yajl_gen g, const char *k, const char *v)
{
	G_STR(g, k);
	if (v == NULL)
		yajl_gen_null(g);
	else
		G_STR(g, v);
}

void sbj_key_int(yajl_gen g, const char *k, long long v, bool null_if_negative)
{
	G_STR(g, k);
	if (null_if_negative && v < 0)
		yajl_gen_null(g);
	else
		yajl_gen_integer(g, v);
}

static void g_key_ms(yajl_gen g, const char *k, double ms)
{
	char buf[32];

	G_STR(g, k);
	snprintf(buf, sizeof(buf), "%.3f", ms < 0 ? 0 : ms);
	yajl_gen_number(g, buf, strlen(buf));
}

void sbj_key_time(yajl_gen g, const char *k, const struct timespec *ts)
{
	char buf[64], frac[24];
	struct tm tm;

	G_STR(g, k);
	if (ts->tv_sec == 0) {
		yajl_gen_null(g);
		return;
	}
	gmtime_r(&ts->tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(frac, sizeof(frac), ".%06ldZ", ts->tv_nsec / 1000);
	strncat(buf, frac, sizeof(buf) - strlen(buf) - 1);
	G_STR(g, buf);
}

/* Whether the bytes are UTF-8 as JSON can carry them (no overlong forms, no surrogates). */
static bool is_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t len = c < 0x80         ? 1
			     : (c >> 5) == 6  ? 2
			     : (c >> 4) == 14 ? 3
			     : (c >> 3) == 30 ? 4
					      : 0;
		uint32_t cp;

		if (len == 0 || i + len > n)
			return false;
		cp = len == 1 ? c : c & (0x7f >> len);
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static char *base64(const unsigned char *s, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = xmalloc(4 * ((n + 2) / 3) + 1), *p = out;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		*p++ = tab[(v >> 18) & 63];
		*p++ = tab[(v >> 12) & 63];
		*p++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*p++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*p = '\0';
	return out;
}

static void g_stream(yajl_gen g, const char *k, const struct moat_sandbox_stream *s)
{
	const unsigned char *data = (const unsigned char *)(s->data ? s->data : "");

	G_STR(g, k);
	yajl_gen_map_open(g);
	sbj_key_int(g, "bytes", (long long)s->bytes, false);
	sbj_key_int(g, "kept", (long long)s->kept, false);
	G_STR(g, "truncated");
	yajl_gen_bool(g, s->truncated);
	if (is_utf8(data, s->kept)) {
		G_STR(g, "text");
		yajl_gen_string(g, data, s->kept);
	} else {
		_cleanup_free_ char *b = base64(data, s->kept);

		sbj_key_str(g, "base64", b);
	}
	yajl_gen_map_close(g);
}

static const char *const change_names[] = { "added", "modified", "deleted" };

static void g_files(yajl_gen g, const struct moat_sandbox_result *r)
{
	G_STR(g, "files");
	yajl_gen_map_open(g);
	G_STR(g, "entries");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < r->n_files; i++) {
		const struct moat_sandbox_file *f = &r->files[i];
		const char *type = f->type == 'f'   ? "file"
				   : f->type == 'd' ? "dir"
				   : f->type == 'l' ? "symlink"
						    : "other";
		char mode[8];

		yajl_gen_map_open(g);
		sbj_key_str(g, "path", f->path);
		sbj_key_str(g, "change", change_names[f->change]);
		sbj_key_str(g, "type", type);
		if (f->change != MOAT_FILE_DELETED) {
			snprintf(mode, sizeof(mode), "%04o", (unsigned)(f->mode & 07777));
			sbj_key_str(g, "mode", mode);
			if (f->type == 'f')
				sbj_key_int(g, "size", (long long)f->size, false);
			if (f->sha256[0] != '\0')
				sbj_key_str(g, "sha256", f->sha256);
			if (f->target != NULL)
				sbj_key_str(g, "target", f->target);
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	G_STR(g, "truncated");
	yajl_gen_bool(g, r->files_truncated);
	yajl_gen_map_close(g);
}

static void g_exit(yajl_gen g, const struct moat_sandbox_result *r)
{
	G_STR(g, "exit");
	yajl_gen_map_open(g);
	sbj_key_int(g, "code", r->code, true);
	sbj_key_int(g, "signal", r->signo == 0 ? -1 : r->signo, true);
	sbj_key_str(g, "reason", moat_sandbox_reason_name(r->reason));
	if (r->message != NULL)
		sbj_key_str(g, "message", r->message);
	yajl_gen_map_close(g);
}

static void g_isolation(yajl_gen g, const struct moat_sandbox_result *r)
{
	G_STR(g, "isolation");
	yajl_gen_map_open(g);
	sbj_key_str(g, "mode", r->isolation);
	if (r->accel != NULL)
		sbj_key_str(g, "accelerator", r->accel);
	if (r->guest_kernel != NULL)
		sbj_key_str(g, "guest_kernel", r->guest_kernel);
	G_STR(g, "policy");
	yajl_gen_map_open(g);
	for (size_t i = 0; r->policy != NULL && r->policy[i] && r->policy[i + 1]; i += 2)
		sbj_key_str(g, r->policy[i], r->policy[i + 1]);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
}

static void g_time_usage(yajl_gen g, const struct moat_sandbox_result *r)
{
	G_STR(g, "time");
	yajl_gen_map_open(g);
	sbj_key_time(g, "created", &r->created);
	sbj_key_time(g, "started", &r->started);
	sbj_key_time(g, "ended", &r->ended);
	g_key_ms(g, "setup_ms", r->setup_ms);
	g_key_ms(g, "run_ms", r->run_ms);
	g_key_ms(g, "teardown_ms", r->teardown_ms);
	yajl_gen_map_close(g);
	G_STR(g, "resources");
	yajl_gen_map_open(g);
	sbj_key_int(g, "cpu_user_ms", r->usage.cpu_user_us < 0 ? -1 : r->usage.cpu_user_us / 1000,
		    true);
	sbj_key_int(g, "cpu_system_ms",
		    r->usage.cpu_system_us < 0 ? -1 : r->usage.cpu_system_us / 1000, true);
	sbj_key_int(g, "memory_peak_bytes", r->usage.memory_peak, true);
	sbj_key_int(g, "pids_peak", r->usage.pids_peak, true);
	yajl_gen_map_close(g);
}

/* The sandbox's way out: none, or its proxy's rules and what went through it. */
static void g_network(yajl_gen g, const struct moat_sandbox_result *r)
{
	G_STR(g, "network");
	yajl_gen_map_open(g);
	sbj_key_str(g, "egress", r->allow ? "proxy" : "none");
	G_STR(g, "allow");
	yajl_gen_array_open(g);
	for (size_t i = 0; r->allow != NULL && r->allow[i] != NULL; i++)
		G_STR(g, r->allow[i]);
	yajl_gen_array_close(g);
	G_STR(g, "connections");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < r->n_conns; i++) {
		const struct moat_sandbox_connection *c = &r->conns[i];

		yajl_gen_map_open(g);
		sbj_key_str(g, "host", c->host);
		sbj_key_int(g, "port", c->port, false);
		sbj_key_str(g, "address", c->address);
		G_STR(g, "allowed");
		yajl_gen_bool(g, c->allowed);
		sbj_key_str(g, "rule", c->rule);
		sbj_key_str(g, "refused", c->refused);
		sbj_key_int(g, "bytes_out", (long long)c->bytes_out, false);
		sbj_key_int(g, "bytes_in", (long long)c->bytes_in, false);
		sbj_key_int(g, "duration_ms", (long long)c->duration_ms, false);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	sbj_key_int(g, "refused", (long long)r->refused, false);
	yajl_gen_map_close(g);
}

/* A pretty document, its object opened with its schema and sandbox. */
static yajl_gen doc_open(const char *schema, const char *sandbox)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_map_open(g);
	sbj_key_str(g, "schema", schema);
	sbj_key_str(g, "sandbox", sandbox);
	return g;
}

char *moat_sandbox_result_json(const struct moat_sandbox_result *r)
{
	yajl_gen g = doc_open("moat.sandbox.result/v1", r->sandbox);

	G_STR(g, "command");
	yajl_gen_array_open(g);
	for (size_t i = 0; r->argv[i] != NULL; i++)
		G_STR(g, r->argv[i]);
	yajl_gen_array_close(g);
	g_exit(g, r);
	g_isolation(g, r);
	g_time_usage(g, r);
	g_stream(g, "stdout", &r->out);
	g_stream(g, "stderr", &r->err);
	g_files(g, r);
	g_network(g, r);
	yajl_gen_map_close(g);
	return sbj_finish(g);
}

char *sbj_finish(yajl_gen g)
{
	const unsigned char *buf;
	size_t len;
	char *out;

	yajl_gen_get_buf(g, &buf, &len);
	out = xstrndup((const char *)buf, len);
	yajl_gen_free(g);
	return out;
}

char *moat_sandbox_diff_json(const struct moat_sandbox_result *r)
{
	yajl_gen g = doc_open("moat.sandbox.diff/v1", r->sandbox);

	g_files(g, r);
	yajl_gen_map_close(g);
	return sbj_finish(g);
}

char *moat_sandbox_status_json(const struct moat_sandbox_status *s)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	yajl_gen_map_open(g);
	sbj_key_str(g, "name", s->name);
	sbj_key_str(g, "isolation", s->isolation);
	sbj_key_str(g, "accelerator", s->accel);
	sbj_key_time(g, "created", &s->created);
	sbj_key_time(g, "expires", &s->expires);
	sbj_key_time(g, "idle_expires", &s->idle_expires);
	G_STR(g, "busy");
	yajl_gen_bool(g, s->busy);
	sbj_key_int(g, "commands", (long long)s->commands, false);
	sbj_key_int(g, "keeper_pid", s->keeper_pid, false);
	yajl_gen_map_close(g);
	return sbj_finish(g);
}
