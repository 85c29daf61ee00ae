/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: error values that carry a message chain. */
#include "config.h"
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int moat_error_ret(const moat_error *err)
{
	if (err == NULL || err->code <= 0)
		return -EINVAL;
	return -err->code;
}

static int __attribute__((format(printf, 3, 0)))
error_setv(moat_error *err, int errnum, const char *fmt, va_list ap)
{
	char *text = NULL, *msg = NULL;

	if (errnum < 0)
		errnum = -errnum;
	if (err == NULL)
		return errnum ? -errnum : -EINVAL;
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	if (text != NULL && errnum > 0) {
		if (asprintf(&msg, "%s: %s", text, strerror(errnum)) < 0)
			msg = NULL;
		free(text);
	} else {
		msg = text;
	}
	free(err->msg);
	err->msg = msg != NULL ? msg : strdup("out of memory formatting an error");
	err->code = errnum;
	return moat_error_ret(err);
}

int moat_error_set(moat_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = error_setv(err, errnum, fmt, ap);
	va_end(ap);
	return r;
}

int moat_error_msg(moat_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return errnum > 0 ? -errnum : -EINVAL;
	va_start(ap, fmt);
	error_setv(err, 0, fmt, ap);
	va_end(ap);
	err->code = errnum > 0 ? errnum : EINVAL;
	return -err->code;
}

int moat_error_prefix(moat_error *err, const char *fmt, ...)
{
	char *ctx = NULL, *msg = NULL;
	va_list ap;

	if (err == NULL)
		return -EINVAL;
	va_start(ap, fmt);
	if (vasprintf(&ctx, fmt, ap) < 0)
		ctx = NULL;
	va_end(ap);
	if (ctx == NULL)
		return moat_error_ret(err);
	if (asprintf(&msg, "%s: %s", ctx, err->msg ? err->msg : "unknown error") >= 0) {
		free(err->msg);
		err->msg = msg;
	}
	free(ctx);
	return moat_error_ret(err);
}

void moat_error_warn(moat_error *err, const char *fmt, ...)
{
	char *text = NULL, *joined = NULL;
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (text == NULL)
		return;
	if (err->warn == NULL) {
		err->warn = text;
		return;
	}
	if (asprintf(&joined, "%s; %s", err->warn, text) >= 0) {
		free(err->warn);
		err->warn = joined;
	}
	free(text);
}

void moat_error_drop(moat_error *err)
{
	if (err == NULL)
		return;
	free(err->msg);
	err->msg = NULL;
	err->code = 0;
}

void moat_error_clear(moat_error *err)
{
	if (err == NULL)
		return;
	moat_error_drop(err);
	free(err->warn);
	err->warn = NULL;
}
