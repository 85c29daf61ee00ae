/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the egress rules (egress.h): what --allow and --resolve say, which rule lets a
 * host and port through, and which addresses no rule reaches unless it says so. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "utils.h"

static const struct {
	const char *name;
	unsigned bit;
} allow_names[] = { { "+private", MOAT_EGRESS_PRIVATE },
		    { "+loopback", MOAT_EGRESS_LOOPBACK },
		    { "+link-local", MOAT_EGRESS_LINK_LOCAL } };

/* Whether s is an IP literal; its address in *ss when so. */
static bool literal(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		*len = sizeof(*v4);
		return true;
	}
	if (inet_pton(AF_INET6, s, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		*len = sizeof(*v6);
		return true;
	}
	return false;
}

/* A host name: labels of letters, digits and '-', or "*." and such labels. */
static bool good_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '.' || s[n - 1] == '.' || strstr(s, "..") != NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/* Split "host[:port]" (or "[v6][:port]") of text into r->host and r->port. */
static bool split_host_port(char *hp, struct moat_egress_rule *r)
{
	char *colon = NULL, *end;
	unsigned long port = 443;

	if (hp[0] == '[') {
		char *close = strchr(hp, ']');

		if (close == NULL || (close[1] != '\0' && close[1] != ':'))
			return false;
		*close = '\0';
		colon = close[1] == ':' ? close + 1 : NULL;
		memmove(hp, hp + 1, strlen(hp + 1) + 1);
	} else if ((colon = strchr(hp, ':')) != NULL && strchr(colon + 1, ':') != NULL)
		colon = NULL; /* a bare IPv6 literal: no port */
	if (colon != NULL) {
		*colon = '\0';
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end != '\0' || port == 0 || port > 65535)
			return false;
	}
	for (char *c = hp; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	r->host = xstrdup(hp);
	r->port = (uint16_t)port;
	return true;
}

int moat_egress_rule_add(struct moat_egress_policy *p, const char *text, moat_error *err)
{
	_cleanup_free_ char *copy = xstrdup(text);
	struct moat_egress_rule r = { 0 };
	struct sockaddr_storage ss;
	socklen_t len;
	char *plus = strchr(copy, '+');

	for (char *opt = plus; opt != NULL;) {
		char *next = strchr(opt + 1, '+');
		size_t n = next ? (size_t)(next - opt) : strlen(opt);
		bool known = false;

		for (size_t i = 0; i < MOAT_ARRAY_SIZE(allow_names); i++)
			if (strlen(allow_names[i].name) == n &&
			    strncmp(opt, allow_names[i].name, n) == 0) {
				r.allow |= allow_names[i].bit;
				known = true;
			}
		if (!known)
			return moat_error_msg(err, EINVAL,
					      "--allow '%s': '%.*s' is not +private, +loopback or "
					      "+link-local",
					      text, (int)n, opt);
		opt = next;
	}
	if (plus != NULL)
		*plus = '\0';
	if (!split_host_port(copy, &r))
		return moat_error_msg(err, EINVAL, "--allow '%s': not HOST[:PORT][+private...]",
				      text);
	r.wildcard = strncmp(r.host, "*.", 2) == 0;
	r.literal = !r.wildcard && literal(r.host, &ss, &len);
	if (!r.literal && !good_name(r.wildcard ? r.host + 2 : r.host)) {
		free(r.host);
		return moat_error_msg(err, EINVAL,
				      "--allow '%s': '%s' is not a host name, *.NAME or an address",
				      text, copy);
	}
	r.text = xstrdup(text);
	p->rules = xrealloc(p->rules, (p->n_rules + 1) * sizeof(r));
	p->rules[p->n_rules++] = r;
	return 0;
}

int moat_egress_pin_add(struct moat_egress_policy *p, const char *text, moat_error *err)
{
	const char *eq = strchr(text, '=');
	struct moat_egress_pin pin = { 0 };
	_cleanup_free_ char *host = NULL;

	if (eq == NULL || eq == text)
		return moat_error_msg(err, EINVAL, "--resolve '%s': not HOST=ADDRESS", text);
	host = xstrndup(text, (size_t)(eq - text));
	for (char *c = host; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!good_name(host) || !literal(eq + 1, &pin.addr, &pin.len))
		return moat_error_msg(err, EINVAL, "--resolve '%s': not HOST=ADDRESS", text);
	pin.host = TAKE_PTR(host);
	p->pins = xrealloc(p->pins, (p->n_pins + 1) * sizeof(pin));
	p->pins[p->n_pins++] = pin;
	return 0;
}

int moat_egress_header_add(struct moat_egress_policy *p, const char *text, moat_error *err)
{
	const char *eq = strchr(text, '='), *colon = eq ? strchr(eq, ':') : NULL;
	struct moat_egress_header h = { 0 };
	_cleanup_free_ char *host = NULL;

	if (eq == NULL || eq == text || colon == NULL || colon == eq + 1 ||
	    strpbrk(eq + 1, "\r\n") != NULL)
		return moat_error_msg(err, EINVAL, "--proxy-header '%s': not HOST=Name: value",
				      text);
	host = xstrndup(text, (size_t)(eq - text));
	for (char *c = host; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	for (const char *c = eq + 1; c < colon; c++)
		if (!isalnum((unsigned char)*c) && *c != '-')
			return moat_error_msg(err, EINVAL,
					      "--proxy-header '%s': '%.*s' is not a header name",
					      text, (int)(colon - eq - 1), eq + 1);
	if (!good_name(host))
		return moat_error_msg(err, EINVAL, "--proxy-header '%s': '%s' is not a host name",
				      text, host);
	h.host = TAKE_PTR(host);
	h.line = xstrdup(eq + 1);
	h.name_len = (size_t)(colon - eq - 1);
	p->headers = xrealloc(p->headers, (p->n_headers + 1) * sizeof(h));
	p->headers[p->n_headers++] = h;
	return 0;
}

/* Whether line (to its end or CR LF) is a header named name. */
static bool header_named(const char *line, const char *name, size_t n)
{
	return strncasecmp(line, name, n) == 0 && line[n] == ':';
}

char *moat_egress_add_headers(const struct moat_egress_policy *p, const char *host,
			      const char *head, size_t *len)
{
	size_t cap = *len + 1, n = 0;
	const char *line = head;
	bool any = false;
	char *out;

	for (size_t i = 0; i < p->n_headers; i++)
		if (strcmp(p->headers[i].host, host) == 0) {
			cap += strlen(p->headers[i].line) + 2;
			any = true;
		}
	if (!any)
		return NULL;
	out = xmalloc(cap);
	/* the request line and the client's headers, but those the policy sets */
	while (line < head + *len) {
		const char *end = strstr(line, "\r\n");
		size_t k = end ? (size_t)(end - line) + 2 : (size_t)(head + *len - line);
		bool drop = false;

		if (k == 2)
			break; /* the blank line */
		for (size_t i = 0; i < p->n_headers && line != head; i++)
			drop |= strcmp(p->headers[i].host, host) == 0 &&
				header_named(line, p->headers[i].line, p->headers[i].name_len);
		if (!drop) {
			memcpy(out + n, line, k);
			n += k;
		}
		line += k;
	}
	for (size_t i = 0; i < p->n_headers; i++)
		if (strcmp(p->headers[i].host, host) == 0)
			n += (size_t)snprintf(out + n, cap - n, "%s\r\n", p->headers[i].line);
	memcpy(out + n, "\r\n", 3);
	*len = n + 2;
	return out;
}

void moat_egress_policy_clear(struct moat_egress_policy *p)
{
	for (size_t i = 0; i < p->n_headers; i++) {
		free(p->headers[i].host);
		free(p->headers[i].line);
	}
	free(p->headers);
	p->headers = NULL;
	p->n_headers = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		free(p->rules[i].text);
		free(p->rules[i].host);
	}
	for (size_t i = 0; i < p->n_pins; i++)
		free(p->pins[i].host);
	free(p->rules);
	free(p->pins);
	p->rules = NULL;
	p->pins = NULL;
	p->n_rules = p->n_pins = 0;
}

/* Whether name is below suffix ("a.b.example.com" below "example.com"). */
static bool below(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k + 1 && name[n - k - 1] == '.' && strcmp(name + n - k, suffix) == 0;
}

/* Two literals name the same address ("::ffff:1.2.3.4" is not "1.2.3.4": spell it so). */
static bool same_literal(const char *a, const char *b)
{
	struct sockaddr_storage x, y;
	socklen_t xl, yl;

	return literal(a, &x, &xl) && literal(b, &y, &yl) && xl == yl &&
	       (x.ss_family == AF_INET ? memcmp(&((struct sockaddr_in *)&x)->sin_addr,
						&((struct sockaddr_in *)&y)->sin_addr, 4) == 0
				       : memcmp(&((struct sockaddr_in6 *)&x)->sin6_addr,
						&((struct sockaddr_in6 *)&y)->sin6_addr, 16) == 0);
}

const struct moat_egress_rule *moat_egress_match(const struct moat_egress_policy *p,
						 const char *host, uint16_t port, const char **why)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool is_literal = literal(host, &ss, &len), name_ok = false;

	for (size_t i = 0; i < p->n_rules; i++) {
		const struct moat_egress_rule *r = &p->rules[i];
		bool hit = is_literal
				   ? r->literal && same_literal(r->host, host)
				   : !r->literal && (r->wildcard ? below(host, r->host + 2)
								 : strcasecmp(host, r->host) == 0);

		if (!hit)
			continue;
		name_ok = true;
		if (r->port == port)
			return r;
	}
	*why = name_ok ? "port" : is_literal ? "ip-literal" : "not-allowed";
	return NULL;
}

static bool in4(uint32_t a, uint32_t net, int bits)
{
	return bits == 0 || (a >> (32 - bits)) == (net >> (32 - bits));
}

static unsigned class4(uint32_t a)
{
	if (in4(a, 0x7f000000, 8))
		return MOAT_EGRESS_LOOPBACK;
	if (in4(a, 0xa9fe0000, 16))
		return MOAT_EGRESS_LINK_LOCAL;
	if (in4(a, 0x0a000000, 8) || in4(a, 0xac100000, 12) || in4(a, 0xc0a80000, 16) ||
	    in4(a, 0x64400000, 10))
		return MOAT_EGRESS_PRIVATE;
	if (in4(a, 0, 8) || a >= 0xe0000000 || in4(a, 0xc0000000, 24) || in4(a, 0xc6120000, 15))
		return MOAT_EGRESS_OTHER; /* this network, multicast, reserved, IETF, benchmarks */
	return 0;
}

unsigned moat_egress_class(const struct sockaddr *sa)
{
	const uint8_t *b;

	if (sa->sa_family == AF_INET)
		return class4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return MOAT_EGRESS_OTHER;
	b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	/* IPv4-mapped and -compatible: the IPv4 address's class */
	if (memcmp(b, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0)
		return class4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 |
			      b[15]);
	if (memcmp(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0)
		return MOAT_EGRESS_LOOPBACK;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return MOAT_EGRESS_LINK_LOCAL;
	if ((b[0] & 0xfe) == 0xfc)
		return MOAT_EGRESS_PRIVATE;
	if (b[0] == 0xff || memcmp(b, "\0\0\0\0\0\0\0\0\0\0\0\0", 12) == 0 ||
	    (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) ||
	    (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b))
		return MOAT_EGRESS_OTHER; /* multicast, unspecified/compat, docs, NAT64 */
	return 0;
}
