/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for egress/: the rules (--allow, --resolve) and which rule lets a host and
 * port through, the classes of addresses no rule reaches unless it says so, and the request
 * parser (CONNECT, absolute-form HTTP rewritten to origin form, and what it refuses). Run
 * with CMOCKA_MESSAGE_OUTPUT=TAP for TAP output. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "egress.h"
#include "utils.h"

static void add(struct moat_egress_policy *p, const char *rule)
{
	moat_error err = MOAT_ERROR_INIT;

	assert_int_equal(moat_egress_rule_add(p, rule, &err), 0);
}

static void refused_rule(const char *rule, const char *needle)
{
	struct moat_egress_policy p = { 0 };
	moat_error err = MOAT_ERROR_INIT;

	assert_true(moat_egress_rule_add(&p, rule, &err) < 0);
	assert_non_null(strstr(err.msg, needle));
	moat_error_clear(&err);
	moat_egress_policy_clear(&p);
}

static void test_rules_parse(void **state)
{
	struct moat_egress_policy p = { 0 };

	(void)state;
	add(&p, "Example.COM");
	add(&p, "*.pythonhosted.org:8443+private+loopback");
	add(&p, "[2001:db8::1]:80");
	add(&p, "10.1.2.3:22+private");
	assert_int_equal(p.n_rules, 4);
	assert_string_equal(p.rules[0].host, "example.com");
	assert_int_equal(p.rules[0].port, 443);
	assert_true(p.rules[1].wildcard);
	assert_int_equal(p.rules[1].port, 8443);
	assert_int_equal(p.rules[1].allow, MOAT_EGRESS_PRIVATE | MOAT_EGRESS_LOOPBACK);
	assert_true(p.rules[2].literal);
	assert_string_equal(p.rules[2].host, "2001:db8::1");
	assert_int_equal(p.rules[2].port, 80);
	assert_true(p.rules[3].literal);
	moat_egress_policy_clear(&p);
	refused_rule("bad host", "'bad host'");
	refused_rule("a.test:0", "a.test:0");
	refused_rule("a.test:65536", "a.test:65536");
	refused_rule("a.test+public", "+public");
	refused_rule("a..test", "a..test");
	refused_rule("*.", "*.");
	refused_rule("", "''");
}

static void test_match(void **state)
{
	struct moat_egress_policy p = { 0 };
	const char *why = NULL;

	(void)state;
	add(&p, "example.com");
	add(&p, "*.cdn.test:80");
	add(&p, "192.0.2.7:8080");
	assert_non_null(moat_egress_match(&p, "EXAMPLE.com", 443, &why));
	assert_null(moat_egress_match(&p, "example.com", 80, &why));
	assert_string_equal(why, "port");
	assert_null(moat_egress_match(&p, "www.example.com", 443, &why));
	assert_string_equal(why, "not-allowed");
	assert_non_null(moat_egress_match(&p, "a.b.cdn.test", 80, &why));
	assert_null(moat_egress_match(&p, "cdn.test", 80, &why)); /* the wildcard's own name */
	assert_null(moat_egress_match(&p, "xcdn.test", 80, &why));
	assert_non_null(moat_egress_match(&p, "192.0.2.7", 8080, &why));
	assert_null(moat_egress_match(&p, "192.0.2.8", 8080, &why));
	assert_string_equal(why, "ip-literal");
	/* a name that looks like an address is an address, not the name */
	assert_null(moat_egress_match(&p, "127.0.0.1", 443, &why));
	assert_string_equal(why, "ip-literal");
	moat_egress_policy_clear(&p);
}

static unsigned class_of(const char *text)
{
	struct sockaddr_storage ss = { 0 };

	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else {
		assert_int_equal(
			inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
		ss.ss_family = AF_INET6;
	}
	return moat_egress_class((struct sockaddr *)&ss);
}

static void test_classes(void **state)
{
	(void)state;
	assert_int_equal(class_of("93.184.216.34"), 0);
	assert_int_equal(class_of("2606:2800:220:1::1"), 0);
	assert_int_equal(class_of("127.0.0.1"), MOAT_EGRESS_LOOPBACK);
	assert_int_equal(class_of("127.255.0.9"), MOAT_EGRESS_LOOPBACK);
	assert_int_equal(class_of("::1"), MOAT_EGRESS_LOOPBACK);
	assert_int_equal(class_of("169.254.169.254"), MOAT_EGRESS_LINK_LOCAL);
	assert_int_equal(class_of("fe80::1"), MOAT_EGRESS_LINK_LOCAL);
	assert_int_equal(class_of("10.0.0.1"), MOAT_EGRESS_PRIVATE);
	assert_int_equal(class_of("172.31.255.255"), MOAT_EGRESS_PRIVATE);
	assert_int_equal(class_of("172.32.0.1"), 0);
	assert_int_equal(class_of("192.168.1.1"), MOAT_EGRESS_PRIVATE);
	assert_int_equal(class_of("100.64.0.1"), MOAT_EGRESS_PRIVATE);
	assert_int_equal(class_of("fd00::1"), MOAT_EGRESS_PRIVATE);
	/* IPv4-mapped addresses are their IPv4 address's class */
	assert_int_equal(class_of("::ffff:169.254.169.254"), MOAT_EGRESS_LINK_LOCAL);
	assert_int_equal(class_of("::ffff:127.0.0.1"), MOAT_EGRESS_LOOPBACK);
	assert_int_equal(class_of("0.0.0.0"), MOAT_EGRESS_OTHER);
	assert_int_equal(class_of("224.0.0.1"), MOAT_EGRESS_OTHER);
	assert_int_equal(class_of("::"), MOAT_EGRESS_OTHER);
	assert_int_equal(class_of("64:ff9b::7f00:1"), MOAT_EGRESS_OTHER);
}

static int parse(const char *text, struct moat_egress_request *req, const char **why)
{
	return moat_egress_parse(text, strlen(text), req, why);
}

static void test_parse_connect(void **state)
{
	struct moat_egress_request req;
	const char *why = NULL;

	(void)state;
	assert_int_equal(parse("CONNECT Api.Test.:443 HTTP/1.1\r\nHost: x\r\n\r\nTLS", &req, &why),
			 1);
	assert_true(req.tunnel);
	assert_string_equal(req.host, "api.test");
	assert_int_equal(req.port, 443);
	assert_int_equal(req.consumed, strlen("CONNECT Api.Test.:443 HTTP/1.1\r\nHost: x\r\n\r\n"));
	assert_int_equal(parse("CONNECT [2001:db8::1]:8443 HTTP/1.1\n\n", &req, &why), 1);
	assert_string_equal(req.host, "2001:db8::1");
	assert_int_equal(req.port, 8443);
	assert_int_equal(parse("CONNECT api.test HTTP/1.1\r\n\r\n", &req, &why), -1); /* no port */
	assert_int_equal(parse("CONNECT api.test:0 HTTP/1.1\r\n\r\n", &req, &why), -1);
	assert_int_equal(parse("CONNECT a b:1 HTTP/1.1\r\n\r\n", &req, &why), -1);
	assert_int_equal(parse("CONNECT api.test:443 HTTP/1.1\r\n", &req, &why), 0); /* not yet */
}

static void test_parse_http(void **state)
{
	struct moat_egress_request req;
	const char *why = NULL;
	const char *head =
		"GET http://Up.Test:8080/a/b?c=d HTTP/1.1\r\nHost: evil.test\r\n"
		"User-Agent: t\r\nProxy-Authorization: Basic x\r\nConnection: keep-alive\r\n"
		"Accept: */*\r\n\r\n";

	(void)state;
	assert_int_equal(parse(head, &req, &why), 1);
	assert_false(req.tunnel);
	assert_string_equal(req.host, "up.test");
	assert_int_equal(req.port, 8080);
	assert_string_equal(req.head, "GET /a/b?c=d HTTP/1.1\r\nUser-Agent: t\r\nAccept: */*\r\n"
				      "Host: up.test:8080\r\nConnection: close\r\n\r\n");
	free(req.head);
	assert_int_equal(parse("POST http://up.test HTTP/1.0\n\n", &req, &why), 1);
	assert_int_equal(req.port, 80);
	assert_string_equal(req.head,
			    "POST / HTTP/1.1\r\nHost: up.test\r\nConnection: close\r\n\r\n");
	free(req.head);
	assert_int_equal(parse("GET https://up.test/ HTTP/1.1\r\n\r\n", &req, &why), -1);
	assert_string_equal(why, "https-without-connect");
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: up.test\r\n\r\n", &req, &why), -1);
	assert_string_equal(why, "not-absolute-form");
	assert_int_equal(parse("GET http://user@up.test/ HTTP/1.1\r\n\r\n", &req, &why), -1);
	assert_int_equal(parse("GET http://up.test/ HTTP/1.1\r\nbad header\r\n\r\n", &req, &why),
			 -1);
	assert_int_equal(
		parse("GET http://up.test/ HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", &req, &why), -1);
	assert_int_equal(parse("get http://up.test/ HTTP/1.1\r\n\r\n", &req, &why), -1);
	assert_int_equal(parse("GET http://up.test/ SPDY/3\r\n\r\n", &req, &why), -1);
}

static void test_parse_bounds(void **state)
{
	size_t n = MOAT_EGRESS_HEAD_MAX + 10;
	char *big = malloc(n);
	struct moat_egress_request req;
	const char *why = NULL;

	(void)state;
	memset(big, 'a', n);
	memcpy(big, "GET http://up.test/ HTTP/1.1\r\nX: ", 33);
	assert_int_equal(moat_egress_parse(big, n, &req, &why), -1);
	assert_string_equal(why, "head-too-large");
	assert_int_equal(moat_egress_parse(big, 100, &req, &why), 0);
	/* a NUL in the head */
	{
		static const char nul[] = "GET http://a.test/ HTTP/1.1\r\nA: \0\r\n\r\n";

		assert_int_equal(moat_egress_parse(nul, sizeof(nul) - 1, &req, &why), -1);
	}
	free(big);
}

static void test_pins(void **state)
{
	struct moat_egress_policy p = { 0 };
	moat_error err = MOAT_ERROR_INIT;

	(void)state;
	assert_int_equal(moat_egress_pin_add(&p, "Up.Test=127.0.0.1", &err), 0);
	assert_int_equal(moat_egress_pin_add(&p, "v6.test=::1", &err), 0);
	assert_string_equal(p.pins[0].host, "up.test");
	assert_int_equal(p.pins[1].addr.ss_family, AF_INET6);
	assert_true(moat_egress_pin_add(&p, "up.test", &err) < 0);
	moat_error_clear(&err);
	assert_true(moat_egress_pin_add(&p, "up.test=nowhere", &err) < 0);
	moat_error_clear(&err);
	moat_egress_policy_clear(&p);
}

static void test_headers(void **state)
{
	struct moat_egress_policy p = { 0 };
	moat_error err = MOAT_ERROR_INIT;
	const char *head = "GET / HTTP/1.1\r\nauthorization: mine\r\nA: b\r\nHost: up.test\r\n\r\n";
	size_t len = strlen(head);
	char *out;

	(void)state;
	assert_int_equal(moat_egress_header_add(&p, "Up.Test=Authorization: Bearer k", &err), 0);
	assert_null(moat_egress_add_headers(&p, "other.test", head, &len));
	out = moat_egress_add_headers(&p, "up.test", head, &len);
	assert_string_equal(out, "GET / HTTP/1.1\r\nA: b\r\nHost: up.test\r\n"
				 "Authorization: Bearer k\r\n\r\n");
	assert_int_equal(len, strlen(out));
	free(out);
	assert_true(moat_egress_header_add(&p, "up.test=no colon", &err) < 0);
	moat_error_clear(&err);
	assert_true(moat_egress_header_add(&p, "up.test=Bad Name: v", &err) < 0);
	moat_error_clear(&err);
	assert_true(moat_egress_header_add(&p, "up.test=X: a\r\nInjected: b", &err) < 0);
	moat_error_clear(&err);
	moat_egress_policy_clear(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_parse), cmocka_unit_test(test_match),
		cmocka_unit_test(test_classes),     cmocka_unit_test(test_parse_connect),
		cmocka_unit_test(test_parse_http),  cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_pins),	      cmocka_unit_test(test_headers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
