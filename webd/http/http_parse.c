/* The incremental HTTP/1.1 request-head parser and its ceilings (http_parse.h). */
#include "http_parse.h"

#include <string.h>
#include <strings.h>

void http_head_init(struct http_head *h)
{
	memset(h, 0, sizeof *h);
}

static int is_tchar(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return 1;
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
		return 1;
	return strchr("!#$%&'*+-.^_`|~", c) != NULL && c != 0;
}

static enum http_parse_status request_line(const char *buf, size_t start, size_t end, struct http_head *h)
{
	size_t i = start;
	while (i < end && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == start || i - start > 16 || i >= end || buf[i] != ' ')
		return HP_BAD;
	h->method = (struct http_span){(uint32_t)start, (uint32_t)(i - start)};
	size_t t = ++i;
	while (i < end && buf[i] != ' ')
		if ((unsigned char)buf[i++] <= 0x20)
			return HP_BAD;
	if (i == t || i >= end)
		return HP_BAD;
	h->target = (struct http_span){(uint32_t)t, (uint32_t)(i - t)};
	i++;
	if (end - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 || (buf[i + 7] != '0' && buf[i + 7] != '1'))
		return HP_BAD;
	h->minor = (unsigned)(buf[i + 7] - '0');
	return HP_INCOMPLETE;
}

static enum http_parse_status header_line(const char *buf, size_t start, size_t end, struct http_head *h)
{
	if (buf[start] == ' ' || buf[start] == '\t')
		return HP_BAD; /* obsolete line folding */
	size_t i = start;
	while (i < end && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == start || i >= end || buf[i] != ':')
		return HP_BAD;
	if (h->nheaders == KP_HTTP_MAX_HEADERS)
		return HP_HEADER_COUNT;
	h->name[h->nheaders] = (struct http_span){(uint32_t)start, (uint32_t)(i - start)};
	i++;
	while (i < end && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	size_t vend = end;
	while (vend > i && (buf[vend - 1] == ' ' || buf[vend - 1] == '\t'))
		vend--;
	for (size_t k = i; k < vend; k++) {
		unsigned char c = (unsigned char)buf[k];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return HP_BAD;
	}
	h->value[h->nheaders] = (struct http_span){(uint32_t)i, (uint32_t)(vend - i)};
	h->nheaders++;
	return HP_INCOMPLETE;
}

enum http_parse_status http_head_check_host(const char *buf, const struct http_head *h)
{
	unsigned n = 0;
	for (unsigned i = 0; i < h->nheaders; i++)
		if (h->name[i].len == 4 && !strncasecmp(buf + h->name[i].off, "host", 4)) {
			if (h->value[i].len == 0)
				return HP_BAD_HOST;
			n++;
		}
	return n > 1 || (n == 0 && h->minor >= 1) ? HP_BAD_HOST : HP_DONE;
}

enum http_parse_status http_parse_head(const char *buf, size_t len, struct http_head *h)
{
	for (;;) {
		size_t from = h->line;
		const char *nl = from < len ? memchr(buf + from, '\n', len - from) : NULL;
		size_t end = nl ? (size_t)(nl - buf) : len; /* the line's end, delimiter excluded */
		size_t body_end = end > from && buf[end - 1] == '\r' ? end - 1 : end;
		size_t line_len = (nl ? body_end : end) - from;
		/* Ceilings apply before the line is complete, so a client cannot grow it. */
		if (!h->in_headers) {
			if (line_len > KP_HTTP_MAX_LINE)
				return HP_LINE_TOO_LONG;
		} else {
			if (line_len > KP_HTTP_MAX_LINE)
				return HP_HEADER_LINE;
			if (line_len > 0 && h->header_bytes + line_len > KP_HTTP_MAX_HEADER_BYTES)
				return HP_HEADER_BYTES;
		}
		if (!nl)
			return HP_INCOMPLETE;
		size_t next = end + 1;
		if (!h->in_headers) {
			if (body_end == from) {
				/* Empty lines before a request line are ignored (RFC 9112 2.2), a few. */
				if (next > 8)
					return HP_BAD;
				h->line = h->start = next;
				continue;
			}
			enum http_parse_status r = request_line(buf, from, body_end, h);
			if (r != HP_INCOMPLETE)
				return r;
			h->in_headers = 1;
		} else if (body_end == from) {
			h->head_len = next;
			return HP_DONE;
		} else {
			h->header_bytes += next - from;
			if (h->header_bytes > KP_HTTP_MAX_HEADER_BYTES)
				return HP_HEADER_BYTES;
			enum http_parse_status r = header_line(buf, from, body_end, h);
			if (r != HP_INCOMPLETE)
				return r;
		}
		h->line = next;
	}
}
