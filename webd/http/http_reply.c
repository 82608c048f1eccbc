/* The core's answers: one-piece replies, JSON errors and streamed answers (copied bytes and
 * byte ranges of descriptors, read as the socket drains), and what happens to the
 * connection once a request is finished (keep-alive or shutdown). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "http_conn.h"
#include "log.h"

const char *http_status_text(int status)
{
	switch (status) {
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 204:
		return "No Content";
	case 206:
		return "Partial Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Status";
	}
}

void req_free(struct web_req *r)
{
	conn_release_body(r);
	while (r->ph) {
		struct piece *p = r->ph;
		r->ph = p->next;
		if (p->fd >= 0)
			close(p->fd);
		free(p);
	}
	free(r->body);
	free(r->store);
	free(r);
}

void req_finish(struct web_req *r)
{
	struct conn *c = r->c;
	bool keep = r->keep_alive;
	if (c->req == r)
		c->req = NULL;
	req_free(r);
	if (c->closing)
		return;
	if (!keep) {
		conn_end(c);
		return;
	}
	c->state = CONN_HEAD;
	c->read_deadline_ms = 0;
	conn_process(c);
}

/* The status line and headers; 0 or -1 when they do not fit. */
static int head(char *buf, size_t cap, const struct web_req *r, int status, const char *ctype, uint64_t length,
		bool chunked, const char *extra)
{
	char len_hdr[48] = "";
	if (chunked)
		snprintf(len_hdr, sizeof len_hdr, "Transfer-Encoding: chunked\r\n");
	else if (length != UINT64_MAX)
		snprintf(len_hdr, sizeof len_hdr, "Content-Length: %llu\r\n", (unsigned long long)length);
	bool has_cache = extra && strcasestr(extra, "cache-control:");
	char date[48];
	time_t now = time(NULL);
	struct tm tm;
	if (!gmtime_r(&now, &tm) || !strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm))
		date[0] = 0;
	int n = snprintf(buf, cap,
			 "HTTP/1.%u %d %s\r\nDate: %s\r\n%s%s%s%s%s"
			 "X-Content-Type-Options: nosniff\r\nReferrer-Policy: same-origin\r\n%s%s\r\n",
			 r->minor, status, http_status_text(status), date, ctype ? "Content-Type: " : "",
			 ctype ? ctype : "", ctype ? "\r\n" : "", len_hdr,
			 !r->keep_alive  ? "Connection: close\r\n"
			 : r->minor == 0 ? "Connection: keep-alive\r\n"
					 : "",
			 has_cache ? "" : "Cache-Control: no-store\r\n", extra ? extra : "");
	return n > 0 && (size_t)n < cap ? n : -1;
}

void web_reply(struct web_req *r, int status, const char *content_type, const void *body, size_t len,
	       const char *extra_headers)
{
	struct conn *c = r->c;
	if (r->streaming) {
		kp_err("%s: web_reply on a streamed answer", r->path);
		return;
	}
	conn_count_status(status);
	size_t extra_len = extra_headers ? strlen(extra_headers) : 0;
	size_t cap = 512 + extra_len + (content_type ? strlen(content_type) : 0);
	bool with_body = r->method != WEB_HEAD && status != 304 && status != 204;
	char *buf = malloc(cap + (with_body ? len : 0));
	if (!buf) {
		kp_err("client %s: no memory for an answer of %zu bytes", c->addr, len);
		c->failed = true;
		req_finish(r);
		return;
	}
	int n = head(buf, cap, r, status, content_type, status == 304 ? UINT64_MAX : len, false, extra_headers);
	if (n < 0) {
		free(buf);
		kp_err("%s: answer headers too long", r->path);
		c->failed = true;
		req_finish(r);
		return;
	}
	if (with_body && len)
		memcpy(buf + n, body, len);
	conn_send(c, buf, (size_t)n + (with_body ? len : 0), NULL);
	free(buf);
	req_finish(r);
}

static void json_escape(char *o, size_t cap, const char *s)
{
	size_t n = 0;
	for (; *s && n + 7 < cap; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			o[n++] = '\\';
			o[n++] = (char)ch;
		} else if (ch < 0x20) {
			n += (size_t)snprintf(o + n, cap - n, "\\u%04x", ch);
		} else {
			o[n++] = (char)ch;
		}
	}
	o[n] = 0;
}

static void reply_error_v(struct web_req *r, int status, const char *code, const char *extra, const char *fmt,
			  va_list ap)
{
	char msg[400], esc[1000], body[1200];
	vsnprintf(msg, sizeof msg, fmt, ap);
	json_escape(esc, sizeof esc, msg);
	int n = snprintf(body, sizeof body, "{\"error\":\"%s\",\"code\":\"%s\"}", esc, code);
	web_reply(r, status, "application/json", body, (size_t)n, extra);
}

void web_reply_error(struct web_req *r, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_error_v(r, status, code, NULL, fmt, ap);
	va_end(ap);
}

void web_reply_error_extra(struct web_req *r, int status, const char *code, const char *extra, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_error_v(r, status, code, extra, fmt, ap);
	va_end(ap);
}

void conn_reply_error_close(struct conn *c, int status, const char *code, const char *msg, const char *extra)
{
	conn_count_status(status);
	char body[600], buf[1200];
	int bn = snprintf(body, sizeof body, "{\"error\":\"%s\",\"code\":\"%s\"}", msg, code);
	int n = snprintf(buf, sizeof buf,
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
			 "Connection: close\r\nCache-Control: no-store\r\n%s\r\n%s",
			 status, http_status_text(status), bn, extra ? extra : "", body);
	if (conn_send(c, buf, (size_t)n, NULL) < 0)
		return;
	conn_end(c);
}

/* ---- streamed answers ---- */

int web_stream_begin(struct web_req *r, int status, const char *content_type, uint64_t length,
		     const char *extra_headers)
{
	if (r->streaming)
		return -EALREADY;
	conn_count_status(status);
	r->chunked = length == UINT64_MAX && r->minor == 1;
	if (length == UINT64_MAX && !r->chunked)
		r->keep_alive = false; /* HTTP/1.0: the end of the answer is the end of the connection */
	size_t cap = 512 + (extra_headers ? strlen(extra_headers) : 0) + (content_type ? strlen(content_type) : 0);
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int n = head(buf, cap, r, status, content_type, length, r->chunked, extra_headers);
	if (n < 0) {
		free(buf);
		return -E2BIG;
	}
	r->streaming = true;
	int w = conn_send(r->c, buf, (size_t)n, NULL);
	free(buf);
	return w;
}

static int add_piece(struct web_req *r, struct piece *p)
{
	if (!r->streaming || r->ended || r->npieces >= STREAM_MAX_PIECES) {
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		return r->npieces >= STREAM_MAX_PIECES ? -ENOBUFS : -EINVAL;
	}
	p->next = NULL;
	if (r->pt)
		r->pt->next = p;
	else
		r->ph = p;
	r->pt = p;
	r->npieces++;
	stream_pump(r);
	return 0;
}

int web_stream_bytes(struct web_req *r, const void *data, size_t len)
{
	if (len == 0)
		return 0;
	struct piece *p = malloc(sizeof *p + len);
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	p->off = 0;
	p->len = len;
	memcpy(p->bytes, data, len);
	return add_piece(r, p);
}

int web_stream_fd(struct web_req *r, int fd, uint64_t offset, uint64_t length)
{
	struct piece *p = malloc(sizeof *p);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->fd = fd;
	p->off = offset;
	p->len = length;
	if (length == 0) {
		close(fd);
		free(p);
		return 0;
	}
	return add_piece(r, p);
}

void web_stream_end(struct web_req *r)
{
	r->ended = true;
	stream_pump(r);
}

static int send_chunk(struct web_req *r, const uint8_t *data, size_t len)
{
	if (r->method == WEB_HEAD)
		return 0;
	if (!r->chunked)
		return conn_send(r->c, data, len, NULL);
	char *buf = malloc(len + 32);
	if (!buf)
		return -ENOMEM;
	int n = snprintf(buf, 32, "%zx\r\n", len);
	memcpy(buf + n, data, len);
	memcpy(buf + n + len, "\r\n", 2);
	int w = conn_send(r->c, buf, (size_t)n + len + 2, NULL);
	free(buf);
	return w;
}

void stream_pump(struct web_req *r)
{
	struct conn *c = r->c;
	static uint8_t chunk[STREAM_READ_SIZE];
	while (!c->closing && !c->failed && c->out_pending < STREAM_HIGH_WATER && r->ph) {
		struct piece *p = r->ph;
		size_t n;
		if (p->fd < 0) {
			if (send_chunk(r, p->bytes, p->len) < 0)
				return;
			n = p->len;
		} else {
			size_t want = p->len < sizeof chunk ? (size_t)p->len : sizeof chunk;
			ssize_t got = pread(p->fd, chunk, want, (off_t)p->off);
			if (got <= 0) {
				kp_err("%s: reading the answer's file at %llu failed: %s", r->path,
				       (unsigned long long)p->off, got < 0 ? strerror(errno) : "end of file");
				c->failed = true;
				return;
			}
			if (send_chunk(r, chunk, (size_t)got) < 0)
				return;
			n = (size_t)got;
			p->off += n;
		}
		p->len -= n;
		if (p->len == 0) {
			r->ph = p->next;
			if (!r->ph)
				r->pt = NULL;
			r->npieces--;
			if (p->fd >= 0)
				close(p->fd);
			free(p);
		}
	}
	if (c->closing || r->ph || !r->ended || c->req != r)
		return;
	if (r->chunked && r->method != WEB_HEAD)
		conn_send(c, "0\r\n\r\n", 5, NULL);
	req_finish(r);
}
