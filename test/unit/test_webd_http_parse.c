/* Unit tests of webd's request-head parser (webd/http/http_parse.c): well-formed heads, each
 * SPEC 12 ceiling at its limit and one past it, incremental feeding byte by byte, and
 * malformed input. */
#include <string.h>

#include "http_parse.h"
#include "test.h"

static char buf[HTTP_HEAD_MAX + 4096];

static enum http_parse_status parse_all(const char *s, size_t len, struct http_head *h)
{
	http_head_init(h);
	return http_parse_head(s, len, h);
}

static void test_simple(void)
{
	static const char req[] = "GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nX-Y:  v v \r\n\r\nBODY";
	struct http_head h;
	CHECK_EQ(parse_all(req, sizeof req - 1, &h), HP_DONE);
	CHECK_EQ(h.head_len, sizeof req - 1 - 4);
	CHECK(h.method.len == 3 && !memcmp(req + h.method.off, "GET", 3));
	CHECK(h.target.len == 8 && !memcmp(req + h.target.off, "/a/b?x=1", 8));
	CHECK_EQ(h.minor, 1);
	CHECK_EQ(h.nheaders, 2);
	CHECK(h.value[1].len == 3 && !memcmp(req + h.value[1].off, "v v", 3));
}

static void test_host(void)
{
	static const struct {
		const char *req;
		enum http_parse_status want;
	} cases[] = {
	    {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", HP_DONE},
	    {"GET / HTTP/1.1\r\nhOsT: h:8080\r\n\r\n", HP_DONE},
	    {"GET / HTTP/1.0\r\n\r\n", HP_DONE}, /* HTTP/1.0 may leave it out */
	    {"GET / HTTP/1.1\r\n\r\n", HP_BAD_HOST},
	    {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", HP_BAD_HOST},
	    {"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", HP_BAD_HOST},
	    {"GET / HTTP/1.1\r\nHost:\r\n\r\n", HP_BAD_HOST},
	    {"GET / HTTP/1.1\r\nX-Host: h\r\n\r\n", HP_BAD_HOST},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct http_head h;
		CHECK_EQ(parse_all(cases[i].req, strlen(cases[i].req), &h), HP_DONE);
		CHECK_EQ(http_head_check_host(cases[i].req, &h), cases[i].want);
	}
}

static void test_incremental(void)
{
	static const char req[] = "\r\nPOST /x HTTP/1.0\nContent-Length: 3\n\nabc";
	struct http_head h;
	http_head_init(&h);
	enum http_parse_status st = HP_INCOMPLETE;
	size_t i;
	for (i = 1; i <= sizeof req - 1 && st == HP_INCOMPLETE; i++)
		st = http_parse_head(req, i, &h);
	CHECK_EQ(st, HP_DONE);
	CHECK_EQ(i - 1, sizeof req - 1 - 3);
	CHECK_EQ(h.minor, 0);
	CHECK_EQ(h.nheaders, 1);
}

/* "GET /aaa... HTTP/1.1" of exactly n bytes. */
static size_t request_line(size_t n)
{
	size_t fixed = strlen("GET / HTTP/1.1");
	memcpy(buf, "GET /", 5);
	memset(buf + 5, 'a', n - fixed);
	memcpy(buf + 5 + n - fixed, " HTTP/1.1\r\n", 11);
	return n + 2;
}

static void test_request_line(void)
{
	struct http_head h;
	size_t o = request_line(KP_HTTP_MAX_LINE);
	memcpy(buf + o, "\r\n", 2);
	CHECK_EQ(parse_all(buf, o + 2, &h), HP_DONE);
	o = request_line(KP_HTTP_MAX_LINE + 1);
	CHECK_EQ(parse_all(buf, o, &h), HP_LINE_TOO_LONG);
	/* Decided before the line ends. */
	CHECK_EQ(parse_all(buf, KP_HTTP_MAX_LINE + 1, &h), HP_LINE_TOO_LONG);
}

static size_t header_line(size_t o, size_t n)
{
	memcpy(buf + o, "X-P: ", 5);
	memset(buf + o + 5, 'v', n - 5);
	memcpy(buf + o + n, "\r\n", 2);
	return o + n + 2;
}

static void test_header_line(void)
{
	struct http_head h;
	size_t o = header_line(request_line(14), KP_HTTP_MAX_LINE);
	memcpy(buf + o, "\r\n", 2);
	CHECK_EQ(parse_all(buf, o + 2, &h), HP_DONE);
	o = header_line(request_line(14), KP_HTTP_MAX_LINE + 1);
	CHECK_EQ(parse_all(buf, o, &h), HP_HEADER_LINE);
}

static void test_header_count(void)
{
	struct http_head h;
	size_t o = request_line(14);
	for (int i = 0; i < KP_HTTP_MAX_HEADERS; i++)
		o = header_line(o, 8);
	memcpy(buf + o, "\r\n", 2);
	CHECK_EQ(parse_all(buf, o + 2, &h), HP_DONE);
	CHECK_EQ(h.nheaders, KP_HTTP_MAX_HEADERS);
	o = header_line(o, 8);
	CHECK_EQ(parse_all(buf, o, &h), HP_HEADER_COUNT);
}

static void test_header_bytes(void)
{
	struct http_head h;
	/* 16 lines of 4094 + CRLF = 65536 bytes exactly. */
	size_t start = request_line(14), o = start;
	for (int i = 0; i < 16; i++)
		o = header_line(o, 4094);
	CHECK_EQ(o - start, KP_HTTP_MAX_HEADER_BYTES);
	memcpy(buf + o, "\r\n", 2);
	CHECK_EQ(parse_all(buf, o + 2, &h), HP_DONE);
	o = start;
	for (int i = 0; i < 15; i++)
		o = header_line(o, 4094);
	o = header_line(o, 4095);
	CHECK_EQ(parse_all(buf, o, &h), HP_HEADER_BYTES);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
	    "GET\r\n\r\n",
	    "GET / HTTP/2.0\r\n\r\n",
	    "GET  / HTTP/1.1\r\n\r\n",
	    "GET / HTTP/1.1\r\n folded\r\n\r\n",
	    "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
	    "GET / HTTP/1.1\r\nBad\x01: v\r\n\r\n",
	    "GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n",
	    "\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct http_head h;
		CHECK_EQ(parse_all(bad[i], strlen(bad[i]), &h), HP_BAD);
	}
}

int main(void)
{
	RUN(test_simple);
	RUN(test_host);
	RUN(test_incremental);
	RUN(test_request_line);
	RUN(test_header_line);
	RUN(test_header_count);
	RUN(test_header_bytes);
	RUN(test_malformed);
	return TEST_EXIT();
}
