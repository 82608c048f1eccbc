/* The HTTP core's request-head parser: incremental over a connection's input buffer,
 * pure (no I/O, no allocation), and the place where SPEC 12's request ceilings are
 * enforced byte by byte: request line and each header line <= KP_HTTP_MAX_LINE, all
 * header lines (delimiters included) <= KP_HTTP_MAX_HEADER_BYTES, <= KP_HTTP_MAX_HEADERS
 * headers. A client cannot make it buffer more than those bytes before it decides. */
#ifndef KP_WEB_HTTP_PARSE_H
#define KP_WEB_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "kp_limits.h"

/* The most bytes a request head can take: request line, headers, delimiters. */
#define HTTP_HEAD_MAX (KP_HTTP_MAX_LINE + 2 + KP_HTTP_MAX_HEADER_BYTES + 2)

enum http_parse_status {
	HP_INCOMPLETE = 0,
	HP_DONE = 1,
	HP_BAD = -1,           /* 400: malformed */
	HP_LINE_TOO_LONG = -2, /* 414: request line over KP_HTTP_MAX_LINE */
	HP_HEADER_LINE = -3,   /* 431: one header line over KP_HTTP_MAX_LINE */
	HP_HEADER_BYTES = -4,  /* 431: header lines over KP_HTTP_MAX_HEADER_BYTES */
	HP_HEADER_COUNT = -5,  /* 431: more than KP_HTTP_MAX_HEADERS */
	HP_BAD_HOST = -6,      /* 400: HTTP/1.1 without Host, or Host twice (RFC 9112 3.2) */
};

struct http_span {
	uint32_t off, len; /* into the buffer the head was parsed from */
};

struct http_head {
	/* results */
	struct http_span method, target;
	unsigned minor; /* HTTP/1.minor */
	struct http_span name[KP_HTTP_MAX_HEADERS], value[KP_HTTP_MAX_HEADERS];
	unsigned nheaders;
	size_t head_len; /* bytes of the head, final empty line included */
	/* scan state */
	size_t start;        /* where the request line begins (leading empty lines skipped) */
	size_t line;         /* start of the line being scanned */
	size_t header_bytes; /* header lines so far, delimiters included */
	int in_headers;
};

void http_head_init(struct http_head *h);
/* Continues scanning buf[0..len) (the same buffer, grown since the last call). */
enum http_parse_status http_parse_head(const char *buf, size_t len, struct http_head *h);
/* On a complete head: HP_DONE, or HP_BAD_HOST when an HTTP/1.1 request has no Host
 * header or any request has more than one (or an empty one). */
enum http_parse_status http_head_check_host(const char *buf, const struct http_head *h);

#endif
