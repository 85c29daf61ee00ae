/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat command layer: the one place that prints diagnostics. */
#include "log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

static int log_fd = -1;
static enum moat_log_format log_format = MOAT_LOG_TEXT;
static bool log_debug_on;

int moat_log_open(const char *path, enum moat_log_format format, bool debug, moat_error *err)
{
	log_format = format;
	log_debug_on = debug;
	if (path == NULL || *path == '\0')
		return 0;
	log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (log_fd < 0)
		return moat_error_set(err, errno, "--log: open '%s'", path);
	return 0;
}

void moat_log_close(void)
{
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
}

/* Append s to buf as a JSON string body (no quotes). */
static void json_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
}

static void format_time(char *buf, size_t size)
{
	struct timeval tv;
	struct tm tm;
	size_t n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%06ldZ", (long)tv.tv_usec);
}

static void log_to_file(const char *level, const char *msg)
{
	char *line = NULL, when[64];
	size_t len = 0;
	FILE *out;

	if (log_fd < 0)
		return;
	out = open_memstream(&line, &len);
	if (out == NULL)
		return;
	format_time(when, sizeof(when));
	if (log_format == MOAT_LOG_JSON) {
		fprintf(out, "{\"level\":\"%s\",\"msg\":\"", level);
		json_escape(out, msg);
		fprintf(out, "\",\"time\":\"%s\"}\n", when);
	} else {
		fprintf(out, "%s %s: %s\n", when, level, msg);
	}
	fclose(out);
	write_all(log_fd, line, len);
	free(line);
}

/* msg on one line, as every diagnostic is: a control character in it (a newline in a path,
 * in what the kernel refused) is shown escaped, "\n" or "\x1b". */
static char *one_line(const char *msg)
{
	char *line = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&line, &len);

	if (out == NULL)
		return NULL;
	for (const char *p = msg; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\n')
			fputs("\\n", out);
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fclose(out);
	return line;
}

static void log_message(const char *level, bool to_stderr, const char *fmt, va_list ap)
{
	_cleanup_free_ char *msg = NULL, *line = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	line = one_line(msg);
	if (line == NULL)
		return;
	/* JSON escapes the message itself */
	log_to_file(level, log_format == MOAT_LOG_JSON ? msg : line);
	if (to_stderr)
		fprintf(stderr, "moat: %s%s%s\n", strcmp(level, "error") == 0 ? "" : level,
			strcmp(level, "error") == 0 ? "" : ": ", line);
}

void moat_log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_message("error", true, fmt, ap);
	va_end(ap);
}

void moat_log_warn(const char *fmt, ...)
{
	va_list ap;

	/* With --log, as runc does, warnings go only there: engines give a runtime the
	 * container's own stdio, and a warning on it would read as the workload's output. */
	va_start(ap, fmt);
	log_message("warning", log_fd < 0, fmt, ap);
	va_end(ap);
}

void moat_log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_debug_on)
		return;
	va_start(ap, fmt);
	log_message("debug", log_fd < 0, fmt, ap);
	va_end(ap);
}

void moat_log_warnings(const moat_error *err)
{
	if (err != NULL && err->warn != NULL)
		moat_log_warn("%s", err->warn);
}

int moat_fail(const moat_error *err)
{
	moat_log_warnings(err);
	moat_log_error("%s", err && err->msg ? err->msg : "unknown error");
	return EXIT_FAILURE;
}
