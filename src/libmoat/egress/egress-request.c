/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a client's request head, as the egress proxy reads it (egress.h).
 *
 * Two forms are taken. "CONNECT host:port HTTP/1.x" opens a byte tunnel (TLS, or any TCP).
 * A plain HTTP request in absolute form ("GET http://host[:port]/path HTTP/1.x") is sent
 * upstream in origin form ("GET /path HTTP/1.1"), its Host header the target's, its
 * Proxy-* headers dropped, and "Connection: close", so one connection carries one request
 * to the host the rules let through. Anything else (origin form, https:// absolute form,
 * a header without a colon, a bare CR, a line over the head's size) is refused. The host
 * is what the client asked for; moat never uses an address the client resolved. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "utils.h"

/* The end of the head: the offset past its blank line, or 0. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			return i + 2;
		if (i + 3 < len && memcmp(buf + i, "\r\n\r\n", 4) == 0)
			return i + 4;
	}
	return 0;
}

/* A host as the rules compare it: lowercase, no trailing dot; letters, digits, '-', '.',
 * or a bracketed IPv6 literal's hex digits and colons. */
static bool take_host(const char *s, size_t n, struct moat_egress_request *req)
{
	bool v6 = n >= 2 && s[0] == '[' && s[n - 1] == ']';
	size_t k = 0;

	if (v6) {
		s++;
		n -= 2;
	}
	if (!v6 && n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0 || n >= sizeof(req->host))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tolower((unsigned char)s[i]);
		bool ok = v6 ? (isxdigit(c) || c == ':' || c == '.')
			     : (isalnum(c) || c == '-' || c == '.');

		if (!ok)
			return false;
		req->host[k++] = (char)c;
	}
	req->host[k] = '\0';
	return true;
}

static bool take_port(const char *s, size_t n, uint16_t *ret)
{
	unsigned long v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*ret = (uint16_t)v;
	return true;
}

/* host[:port] (port required for CONNECT; else default_port). */
static bool take_authority(const char *s, size_t n, uint16_t default_port,
			   struct moat_egress_request *req)
{
	const char *colon = NULL;

	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (close == NULL)
			return false;
		if ((size_t)(close - s) + 1 < n)
			colon = close + 1;
		if (colon != NULL && *colon != ':')
			return false;
	} else
		colon = memchr(s, ':', n);
	if (colon == NULL) {
		req->port = default_port;
		return default_port != 0 && take_host(s, n, req);
	}
	return take_host(s, (size_t)(colon - s), req) &&
	       take_port(colon + 1, n - (size_t)(colon - s) - 1, &req->port);
}

/* Whether a header (name: value, no line end) is one the proxy drops or sets itself. */
static bool replaced_header(const char *line, size_t n)
{
	static const char *const names[] = { "host", "connection", "proxy-connection",
					     "proxy-authorization", "keep-alive" };

	for (size_t i = 0; i < MOAT_ARRAY_SIZE(names); i++) {
		size_t k = strlen(names[i]);

		if (n > k && line[k] == ':' && strncasecmp(line, names[i], k) == 0)
			return true;
	}
	return false;
}

/* The head to send upstream: the request line in origin form, the client's headers but
 * those replaced, then Host and Connection: close. */
static bool rewrite(const char *buf, size_t end, const char *method, size_t mlen, const char *path,
		    size_t plen, struct moat_egress_request *req)
{
	const char *line = memchr(buf, '\n', end);
	size_t cap = end + plen + 512, n;
	char *out = xmalloc(cap);

	if (plen == 0) {
		path = "/";
		plen = 1;
	}
	n = (size_t)snprintf(out, cap, "%.*s %.*s HTTP/1.1\r\n", (int)mlen, method, (int)plen,
			     path);
	while (line != NULL && (size_t)(line + 1 - buf) < end) {
		const char *start = line + 1,
			   *next = memchr(start, '\n', end - (size_t)(start - buf));
		size_t len = next ? (size_t)(next - start) : 0;

		if (len > 0 && start[len - 1] == '\r')
			len--;
		if (len == 0)
			break;
		if (memchr(start, ':', len) == NULL || memchr(start, '\r', len) != NULL ||
		    start[0] == ' ' || start[0] == '\t') {
			free(out);
			return false; /* not a header, or a folded one */
		}
		if (!replaced_header(start, len)) {
			memcpy(out + n, start, len);
			memcpy(out + n + len, "\r\n", 2);
			n += len + 2;
		}
		line = next;
	}
	n += (size_t)snprintf(out + n, cap - n, "Host: %s%s%s", strchr(req->host, ':') ? "[" : "",
			      req->host, strchr(req->host, ':') ? "]" : "");
	if (req->port != 80)
		n += (size_t)snprintf(out + n, cap - n, ":%u", req->port);
	n += (size_t)snprintf(out + n, cap - n, "\r\nConnection: close\r\n\r\n");
	req->head = out;
	req->head_len = n;
	return true;
}

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -1;
}

int moat_egress_parse(const char *buf, size_t len, struct moat_egress_request *req,
		      const char **why)
{
	size_t end = head_end(buf, len < MOAT_EGRESS_HEAD_MAX ? len : MOAT_EGRESS_HEAD_MAX);
	const char *sp1, *sp2, *line_end, *target;
	size_t tlen;

	*req = (struct moat_egress_request){ 0 };
	if (end == 0)
		return len >= MOAT_EGRESS_HEAD_MAX ? refuse(why, "head-too-large") : 0;
	line_end = memchr(buf, '\n', end);
	sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == buf || memchr(buf, '\0', end) != NULL)
		return refuse(why, "malformed");
	/* (memcmp within the line: the buffer has no NUL, and strncmp may read n bytes) */
	if ((size_t)(line_end - sp2 - 1) < 7 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return refuse(why, "malformed");
	target = sp1 + 1;
	tlen = (size_t)(sp2 - target);
	req->consumed = end;
	if ((size_t)(sp1 - buf) == 7 && memcmp(buf, "CONNECT", 7) == 0) {
		req->tunnel = true;
		return take_authority(target, tlen, 0, req) ? 1 : refuse(why, "malformed");
	}
	for (const char *m = buf; m < sp1; m++)
		if (!isupper((unsigned char)*m))
			return refuse(why, "malformed");
	if (tlen < 8 || strncasecmp(target, "http://", 7) != 0)
		return refuse(why, tlen > 8 && strncasecmp(target, "https://", 8) == 0
					   ? "https-without-connect"
					   : "not-absolute-form");
	{
		const char *auth = target + 7, *slash = memchr(auth, '/', tlen - 7);
		size_t alen = slash ? (size_t)(slash - auth) : tlen - 7;

		if (memchr(auth, '@', alen) != NULL || !take_authority(auth, alen, 80, req))
			return refuse(why, "malformed");
		if (!rewrite(buf, end, buf, (size_t)(sp1 - buf), slash, slash ? tlen - 7 - alen : 0,
			     req))
			return refuse(why, "malformed");
	}
	return 1;
}
