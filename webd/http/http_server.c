/* The HTTP/1.1 listener and connections on the caller's libuv loop: accept (at most
 * KP_HTTP_MAX_CONNECTIONS, at most WEB_CONNECTIONS_PER_ADDRESS anonymous ones per
 * address, evicting an unfinished anonymous connection when they run out), read
 * deadlines (idle, head, body rate) and write stalls, the request-head ceilings (through
 * http_parse.c), body limits, the handler ceiling with its reserves, route lookup in the
 * application's tables, its authentication hook and dispatch. One request per connection
 * is parsed and handled at a time; pipelined requests wait in the socket until the
 * previous is answered. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "kp_limits.h"
#include "kp_time.h"
#include "http_conn.h"
#include "log.h"

/* Request bodies held in memory at once, over all connections (the route ceilings are
 * per request: 64 handlers x a 16 MiB JPEG would not fit webd's address-space limit). */
#define BODY_MEMORY_MAX (256u * KP_MIB)
#define DRAIN_MS        2000
/* Connections the kernel may hold completed before webd accepts them (capped by
 * net.core.somaxconn). A full queue drops new SYNs, and the client retries only after
 * its 1 s retransmission timeout: under a connection flood (issue 12: thousands a
 * second from one address, each refused at once) a short stall of the loop must not
 * fill it. */
#define LISTEN_BACKLOG 4096

struct web_counters web_counters;
const struct web_server_def *web_def;
void *web_app;
const char *const web_limit_names[WEB_LIMIT_COUNT] = {
    [WEB_LIMIT_CONNECTIONS] = "connections",
    [WEB_LIMIT_READ_TIMEOUT] = "read_timeout",
    [WEB_LIMIT_WRITE_TIMEOUT] = "write_timeout",
    [WEB_LIMIT_REQUEST_LINE] = "request_line",
    [WEB_LIMIT_HEADER_LINE] = "header_line",
    [WEB_LIMIT_HEADER_BYTES] = "header_bytes",
    [WEB_LIMIT_HEADER_COUNT] = "header_count",
    [WEB_LIMIT_HANDLERS] = "handlers",
    [WEB_LIMIT_BODY] = "body",
    [WEB_LIMIT_BODY_MEMORY] = "body_memory",
    [WEB_LIMIT_WS_MESSAGE] = "websocket_message",
    [WEB_LIMIT_WS_QUEUE] = "websocket_queue",
    [WEB_LIMIT_CONNECTIONS_PER_ADDRESS] = "connections_per_address",
    [WEB_LIMIT_CONNECTIONS_EVICTED] = "connections_evicted",
    [WEB_LIMIT_BODY_RATE] = "body_rate",
    [WEB_LIMIT_HANDLERS_RESERVE] = "handlers_reserve",
};

struct listener {
	uv_tcp_t tcp;
	char name[80];
};

#define MAX_LISTENERS KP_WEB_LISTEN_MAX
static struct listener listeners[MAX_LISTENERS];
static unsigned nlisteners;
static int adopted[MAX_LISTENERS];
static unsigned nadopted;
static bool defer_accept, accepting;
static unsigned ndeferred;

static void on_connection(uv_stream_t *server, int status);

void web_server_defer_accept(void)
{
	defer_accept = true;
}

int web_server_accept(void)
{
	if (accepting)
		return 0;
	accepting = true;
	for (unsigned i = 0; i < ndeferred; i++) {
		int r = uv_listen((uv_stream_t *)&listeners[i].tcp, LISTEN_BACKLOG, on_connection);
		if (r < 0) {
			kp_err("accepting on %s failed: %s", listeners[i].name, uv_strerror(r));
			return r;
		}
	}
	return 0;
}

void web_server_adopt(const int *fds, unsigned n)
{
	nadopted = n < MAX_LISTENERS ? n : MAX_LISTENERS;
	for (unsigned i = 0; i < n; i++) {
		if (i < MAX_LISTENERS)
			adopted[i] = fds[i];
		else
			close(fds[i]);
	}
}
static uv_timer_t sweep_timer;
static bool sweep_open;
static uint64_t next_id = 1;
static size_t body_memory;
struct conn *conn_list;

void conn_count_status(int status)
{
	int cls = status / 100;
	if (cls >= 1 && cls <= 5)
		web_counters.responses[cls]++;
}

static struct {
	uint64_t last_ms; /* 0: never logged */
	uint64_t quiet;   /* hits since then that were not logged */
} limit_log[WEB_LIMIT_COUNT];

void web_limit_hit(enum web_limit l, const char *addr, const char *fmt, ...)
{
	web_counters.limit_rejections[l]++;
	uint64_t now = kp_mono_ms();
	if (limit_log[l].last_ms && now - limit_log[l].last_ms < WEB_LOG_INTERVAL_MS) {
		limit_log[l].quiet++;
		return;
	}
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (limit_log[l].quiet)
		kp_notice("client %s: %s [%s; %llu more not logged in the last %llu s]", addr, msg, web_limit_names[l],
			  (unsigned long long)limit_log[l].quiet,
			  (unsigned long long)(now - limit_log[l].last_ms) / 1000u);
	else
		kp_notice("client %s: %s [%s]", addr, msg, web_limit_names[l]);
	limit_log[l].last_ms = now;
	limit_log[l].quiet = 0;
}

/* ---- writing ---- */

struct wbuf {
	uv_write_t req;
	struct conn *c;
	struct web_ws *ws;
	size_t len, ws_len;
	char data[];
};

static void on_write(uv_write_t *req, int status)
{
	struct wbuf *b = (struct wbuf *)req;
	struct conn *c = b->c;
	c->out_pending -= b->len;
	c->write_progress_ms = kp_mono_ms();
	web_counters.bytes_out += status == 0 ? b->len : 0;
	if (b->ws && c->ws == b->ws && b->ws->q_items > 0) {
		b->ws->q_items--;
		b->ws->q_bytes -= b->ws->q_bytes >= b->ws_len ? b->ws_len : b->ws->q_bytes;
	}
	free(b);
	if (c->closing)
		return;
	if (status < 0) {
		kp_debug("client %s: write failed: %s", c->addr, uv_strerror(status));
		conn_close(c);
		return;
	}
	if (c->req && c->req->streaming)
		stream_pump(c->req);
	else if (c->state == CONN_HEAD && c->out_pending <= STREAM_HIGH_WATER)
		conn_process(c);
}

int conn_write_raw(struct conn *c, const void *data, size_t len, struct web_ws *ws, size_t ws_len)
{
	if (c->closing || c->failed)
		return -EPIPE;
	if (len == 0)
		return 0;
	/* A WebSocket message on a connection with nothing queued goes out at once when the
	 * socket takes it (the live fan-out sees it written before its next command, so a
	 * burst of events does not wait a loop iteration per message); what the socket does
	 * not take is queued below. Only WebSocket messages: an HTTP answer's completion
	 * (on_write) also starts the connection's next request. */
	if (ws && c->ws == ws && c->out_pending == 0 && len <= INT_MAX) {
		uv_buf_t now = uv_buf_init((char *)data, (unsigned)len);
		int n = uv_try_write((uv_stream_t *)&c->tcp, &now, 1);
		if (n > 0) {
			web_counters.bytes_out += (uint64_t)n;
			c->write_progress_ms = kp_mono_ms();
		}
		if (n == (int)len) {
			if (ws->q_items > 0) {
				ws->q_items--;
				ws->q_bytes -= ws->q_bytes >= ws_len ? ws_len : ws->q_bytes;
			}
			return 0;
		}
		if (n > 0) {
			data = (const char *)data + n;
			len -= (size_t)n;
		} else if (n != UV_EAGAIN) {
			kp_debug("client %s: write failed: %s", c->addr, uv_strerror(n));
			c->failed = true;
			return n;
		}
	}
	struct wbuf *b = malloc(sizeof *b + len);
	if (!b) {
		kp_err("client %s: no memory for %zu bytes of answer", c->addr, len);
		c->failed = true;
		return -ENOMEM;
	}
	b->c = c;
	b->ws = ws;
	b->len = len;
	b->ws_len = ws_len;
	memcpy(b->data, data, len);
	uv_buf_t buf = uv_buf_init(b->data, (unsigned)len);
	if (c->out_pending == 0)
		c->write_progress_ms = kp_mono_ms();
	int r = uv_write(&b->req, (uv_stream_t *)&c->tcp, &buf, 1, on_write);
	if (r < 0) {
		free(b);
		kp_debug("client %s: write failed: %s", c->addr, uv_strerror(r));
		c->failed = true;
		return r;
	}
	c->out_pending += len;
	return 0;
}

int conn_send(struct conn *c, const void *data, size_t len, struct web_ws *ws)
{
	if (c->tls)
		return tls_send(c, data, len, ws);
	return conn_write_raw(c, data, len, ws, len);
}

/* ---- closing ---- */

static void on_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	free(c->in);
	free(c);
}

void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	if (c->req) {
		struct web_req *r = c->req;
		c->req = NULL;
		req_free(r);
	}
	if (c->ws) {
		struct web_ws *ws = c->ws;
		c->ws = NULL;
		ws_free(ws);
	}
	tls_conn_free(c);
	if (!c->trusted)
		web_counters.connections_anonymous--;
	if (c->prev)
		c->prev->next = c->next;
	else
		conn_list = c->next;
	if (c->next)
		c->next->prev = c->prev;
	web_counters.connections_active--;
	uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = req->data;
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	/* Read and discard what the client still sends, so that closing does not reset the
	 * connection before it has read the answer. */
	c->state = CONN_DRAIN;
	c->read_deadline_ms = kp_mono_ms() + DRAIN_MS;
	c->in_len = 0;
	conn_process(c);
}

void conn_end(struct conn *c)
{
	if (c->closing || c->state == CONN_ENDING || c->state == CONN_DRAIN)
		return;
	c->state = CONN_ENDING;
	c->shut.data = c;
	int r = uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown);
	if (r < 0)
		conn_close(c);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = h->data;
	(void)suggested;
	if (c->tls) {
		*buf = uv_buf_init((char *)c->tls_scratch, 16 * 1024);
		return;
	}
	if (c->state == CONN_DRAIN)
		c->in_len = 0;
	*buf = uv_buf_init(c->in + c->in_len, (unsigned)(CONN_IN_CAP - c->in_len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	if (n == 0 || c->closing)
		return;
	if (n < 0) {
		if (n != UV_EOF && n != UV_ECONNRESET)
			kp_debug("client %s: read failed: %s", c->addr, uv_strerror((int)n));
		if (c->state == CONN_HEAD && c->in_len > 0)
			kp_debug("client %s: closed in the middle of a request head", c->addr);
		conn_close(c);
		return;
	}
	web_counters.bytes_in += (uint64_t)n;
	if (c->tls) {
		int r = tls_input(c, (const uint8_t *)buf->base, (size_t)n);
		if (r < 0) {
			conn_close(c);
			return;
		}
	} else {
		c->in_len += (size_t)n;
	}
	if (c->state == CONN_DRAIN) {
		c->in_len = 0;
		return;
	}
	conn_process(c);
}

static void set_reading(struct conn *c, bool on)
{
	if (c->closing || c->reading == on)
		return;
	int r = on ? uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) : uv_read_stop((uv_stream_t *)&c->tcp);
	if (r < 0) {
		kp_warn("client %s: %s reading failed: %s", c->addr, on ? "starting" : "stopping", uv_strerror(r));
		conn_close(c);
		return;
	}
	c->reading = on;
}

/* ---- dispatch ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

/* Percent-decodes a path in place; refuses NUL, "." and ".." segments and backslashes. */
static int decode_path(char *p)
{
	char *o = p;
	for (char *i = p; *i; i++) {
		if (*i == '%') {
			int a = hexval(i[1]), b = a < 0 ? -1 : hexval(i[2]);
			if (a < 0 || b < 0 || (a == 0 && b == 0))
				return -1;
			*o++ = (char)(a * 16 + b);
			i += 2;
		} else {
			*o++ = *i;
		}
	}
	*o = 0;
	if (p[0] != '/' || strchr(p, '\\'))
		return -1;
	for (const char *s = p; (s = strchr(s, '/')); s++) {
		if ((s[1] == '.' && (s[2] == '/' || !s[2])) || (s[1] == '.' && s[2] == '.' && (s[3] == '/' || !s[3])))
			return -1;
	}
	return 0;
}

static enum web_method method_of(const char *m, size_t n)
{
	if (n == 3 && !memcmp(m, "GET", 3))
		return WEB_GET;
	if (n == 4 && !memcmp(m, "HEAD", 4))
		return WEB_HEAD;
	if (n == 4 && !memcmp(m, "POST", 4))
		return WEB_POST;
	if (n == 6 && !memcmp(m, "DELETE", 6))
		return WEB_DELETE;
	return 0;
}

/* Copies the parsed head out of the input buffer into a request of its own. */
static struct web_req *req_from_head(struct conn *c, int *status)
{
	const struct http_head *h = &c->ph;
	*status = 400;
	enum web_method m = method_of(c->in + h->method.off, h->method.len);
	if (!m) {
		*status = 501;
		return NULL;
	}
	size_t need = h->target.len + 2;
	for (unsigned i = 0; i < h->nheaders; i++)
		need += h->name[i].len + h->value[i].len + 2;
	struct web_req *r = calloc(1, sizeof *r);
	char *st = malloc(need);
	if (!r || !st) {
		free(r);
		free(st);
		*status = 503;
		return NULL;
	}
	r->c = c;
	r->id = next_id++;
	r->method = m;
	r->minor = h->minor;
	r->store = st;
	char *o = st;
	memcpy(o, c->in + h->target.off, h->target.len);
	o[h->target.len] = 0;
	char *q = strchr(o, '?');
	if (q)
		*q++ = 0;
	r->path = o;
	o += strlen(o) + 1;
	if (q) {
		size_t ql = strlen(q);
		memmove(o, q, ql + 1);
		r->query = o;
		o += ql + 1;
	} else {
		r->query = "";
	}
	for (unsigned i = 0; i < h->nheaders; i++) {
		r->hname[i] = o;
		for (uint32_t k = 0; k < h->name[i].len; k++)
			o[k] =
			    (char)(c->in[h->name[i].off + k] |
				   (c->in[h->name[i].off + k] >= 'A' && c->in[h->name[i].off + k] <= 'Z' ? 0x20 : 0));
		o[h->name[i].len] = 0;
		o += h->name[i].len + 1;
		r->hval[i] = o;
		memcpy(o, c->in + h->value[i].off, h->value[i].len);
		o[h->value[i].len] = 0;
		o += h->value[i].len + 1;
	}
	r->nheaders = h->nheaders;
	if (decode_path((char *)r->path) < 0) {
		req_free(r);
		return NULL;
	}
	const char *conn_hdr = web_req_header(r, "connection");
	bool has_close = conn_hdr && strcasestr(conn_hdr, "close");
	bool has_ka = conn_hdr && strcasestr(conn_hdr, "keep-alive");
	r->keep_alive = r->minor == 1 ? !has_close : has_ka;
	return r;
}

static bool path_matches(const char *path, const char *rpath, unsigned flags)
{
	if (flags & WEB_PREFIX)
		return strncmp(path, rpath, strlen(rpath)) == 0;
	return strcmp(path, rpath) == 0;
}

static const struct web_route *route_find(const struct web_req *r, unsigned *allowed)
{
	*allowed = 0;
	for (const struct web_route *const *t = web_def->routes; t && *t; t++)
		for (const struct web_route *rt = *t; rt->path; rt++) {
			if (!path_matches(r->path, rt->path, rt->flags))
				continue;
			/* HEAD is answered wherever GET is (the body is left out). */
			unsigned m = r->method == WEB_HEAD ? WEB_HEAD | WEB_GET : r->method;
			if (rt->methods & m)
				return rt;
			*allowed |= rt->methods;
		}
	return NULL;
}

static const struct web_ws_route *ws_route_find(const char *path)
{
	for (const struct web_ws_route *w = web_def->ws_routes; w && w->path; w++)
		if (strcmp(path, w->path) == 0)
			return w;
	return NULL;
}

static const char *method_name(enum web_method m)
{
	return m == WEB_GET ? "GET" : m == WEB_HEAD ? "HEAD" : m == WEB_POST ? "POST" : "DELETE";
}

static void reply_now(struct conn *c, struct web_req *r, int status, const char *code, const char *msg,
		      const char *extra)
{
	c->req = r;
	r->keep_alive = false;
	size_t n = strlen(msg);
	char body[512];
	int len =
	    snprintf(body, sizeof body, "{\"error\":\"%.*s\",\"code\":\"%s\"}", (int)(n > 400 ? 400 : n), msg, code);
	c->state = CONN_HANDLER;
	web_reply(r, status, "application/json", body, (size_t)len, extra);
}

/* The request is complete (authenticated, body read): it takes a handler slot, if one
 * is left for its kind, and its route runs. */
static void run_handler(struct conn *c)
{
	struct web_req *r = c->req;
	unsigned reserve = WEB_HANDLERS_RESERVE_SIGNED_IN + WEB_HANDLERS_RESERVE_HEALTH;
	if (r->have_principal)
		reserve = 0;
	else if (r->route && (r->route->flags & WEB_HEALTH))
		reserve = WEB_HANDLERS_RESERVE_SIGNED_IN;
	if (web_counters.handlers_active + reserve >= KP_HTTP_MAX_HANDLERS) {
		bool all = web_counters.handlers_active >= KP_HTTP_MAX_HANDLERS;
		web_limit_hit(all ? WEB_LIMIT_HANDLERS : WEB_LIMIT_HANDLERS_RESERVE, c->addr,
			      "%s %s refused: %u requests in progress%s", method_name(r->method), r->path,
			      web_counters.handlers_active,
			      all ? "" : " (the rest are kept for signed-in users and health checks)");
		reply_now(c, r, 503, "busy", "too many requests in progress", "Retry-After: 1\r\n");
		return;
	}
	r->counted = true;
	web_counters.handlers_active++;
	c->state = CONN_HANDLER;
	if (r->route)
		r->route->fn(r);
	else
		web_def->fallback(r);
}

/* The request is authenticated (or public): its body, if any, is given memory and read. */
static void start_body(struct conn *c)
{
	struct web_req *r = c->req;
	if (r->body_need == 0) {
		run_handler(c);
		return;
	}
	if (r->body_need > BODY_MEMORY_MAX - body_memory) {
		web_counters.limit_rejections[WEB_LIMIT_BODY_MEMORY]++;
		reply_now(c, r, 503, "busy", "too many request bodies in memory", "Retry-After: 1\r\n");
		return;
	}
	r->body = malloc(r->body_need);
	if (!r->body) {
		reply_now(c, r, 503, "busy", "no memory for the request body", "Retry-After: 1\r\n");
		return;
	}
	r->body_reserved = r->body_need;
	body_memory += r->body_need;
	const char *expect = web_req_header(r, "expect");
	if (expect && strcasecmp(expect, "100-continue") == 0 && c->in_len == 0) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (conn_send(c, cont, sizeof cont - 1, NULL) < 0)
			return;
	}
	c->state = CONN_BODY;
	r->body_start_ms = kp_mono_ms();
	c->read_deadline_ms = r->body_start_ms + WEB_BODY_GRACE_SECS * 1000u;
}

static void auth_done(struct web_req *r, int status)
{
	if (status != 0)
		return; /* answered by the hook: the request is finished, r is gone */
	struct conn *c = r->c;
	start_body(c);
	conn_process(c);
}

static void dispatch_ws(struct conn *c, struct web_req *r)
{
	const struct web_ws_route *wr = ws_route_find(r->path);
	if (!wr) {
		c->req = r;
		r->counted = false;
		web_reply_error(r, 404, "not_found", "no WebSocket at %s", r->path);
		return;
	}
	ws_start(c, r, wr);
}

static void dispatch(struct conn *c)
{
	int status;
	struct web_req *r = req_from_head(c, &status);
	/* The head leaves the input buffer: what follows is body or the next request. */
	size_t used = c->ph.head_len;
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	http_head_init(&c->ph);
	c->read_deadline_ms = 0;
	c->head_started = false;
	if (!r) {
		conn_reply_error_close(c, status, status == 501 ? "method" : "bad_request",
				       status == 501 ? "method not implemented" : "malformed request target", NULL);
		return;
	}
	const char *te = web_req_header(r, "transfer-encoding");
	const char *cl = web_req_header(r, "content-length");
	uint64_t length = 0;
	unsigned ncl = 0;
	for (unsigned i = 0; i < r->nheaders; i++)
		ncl += strcmp(r->hname[i], "content-length") == 0;
	if (ncl > 1) {
		reply_now(c, r, 400, "bad_request", "more than one Content-Length", NULL);
		return;
	}
	if (cl) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(cl, &end, 10);
		if (errno || end == cl || *end || cl[0] == '-' || cl[0] == '+') {
			reply_now(c, r, 400, "bad_request", "bad Content-Length", NULL);
			return;
		}
		length = v;
	}
	if (te) {
		reply_now(c, r, 411, "length_required", "request bodies need Content-Length (no chunked uploads)",
			  NULL);
		return;
	}
	if (r->method == WEB_GET && ws_is_upgrade(r)) {
		dispatch_ws(c, r);
		return;
	}
	unsigned allowed;
	const struct web_route *rt = route_find(r, &allowed);
	if (!rt && allowed) {
		char extra[96];
		snprintf(extra, sizeof extra, "Allow: %s%s%s%s\r\n", allowed & WEB_GET ? "GET, " : "",
			 allowed & WEB_HEAD ? "HEAD, " : "", allowed & WEB_POST ? "POST, " : "",
			 allowed & WEB_DELETE ? "DELETE, " : "");
		char *comma = strrchr(extra, ',');
		if (comma)
			memcpy(comma, "\r\n", 3);
		reply_now(c, r, 405, "method", "method not allowed here", extra);
		return;
	}
	if (!rt && (!web_def->fallback || (r->method != WEB_GET && r->method != WEB_HEAD))) {
		c->req = r;
		c->state = CONN_HANDLER;
		web_reply_error(r, 404, "not_found", "no route %s", r->path);
		return;
	}
	size_t max_body = rt ? rt->max_body : 0;
	if (length > max_body) {
		web_counters.limit_rejections[WEB_LIMIT_BODY]++;
		char msg[96];
		snprintf(msg, sizeof msg, "request body of %llu bytes is over this route's %zu",
			 (unsigned long long)length, max_body);
		reply_now(c, r, 413, "body_too_large", msg, NULL);
		return;
	}
	/* Neither memory for the body nor a handler slot yet: the body gets memory once the
	 * request is authenticated, the slot once the body is read. */
	r->body_need = (size_t)length;
	r->route = rt;
	c->req = r;
	if (!rt || (rt->flags & WEB_PUBLIC) || !web_def->auth) {
		start_body(c);
		return;
	}
	c->state = CONN_AUTH;
	web_def->auth(r, rt->flags, auth_done);
}

void conn_release_body(struct web_req *r)
{
	if (r->counted) {
		r->counted = false;
		web_counters.handlers_active--;
	}
	body_memory -= r->body_reserved;
	r->body_reserved = 0;
}

static void head_error(struct conn *c, enum http_parse_status st)
{
	switch (st) {
	case HP_LINE_TOO_LONG:
		web_counters.limit_rejections[WEB_LIMIT_REQUEST_LINE]++;
		conn_reply_error_close(c, 414, "request_line", "request line over 8192 bytes", NULL);
		break;
	case HP_HEADER_LINE:
		web_counters.limit_rejections[WEB_LIMIT_HEADER_LINE]++;
		conn_reply_error_close(c, 431, "header_line", "a header line is over 8192 bytes", NULL);
		break;
	case HP_HEADER_BYTES:
		web_counters.limit_rejections[WEB_LIMIT_HEADER_BYTES]++;
		conn_reply_error_close(c, 431, "header_bytes", "header lines over 65536 bytes in total", NULL);
		break;
	case HP_HEADER_COUNT:
		web_counters.limit_rejections[WEB_LIMIT_HEADER_COUNT]++;
		conn_reply_error_close(c, 431, "header_count", "more than 100 header lines", NULL);
		break;
	case HP_BAD_HOST:
		conn_reply_error_close(c, 400, "bad_host", "an HTTP/1.1 request needs exactly one Host header", NULL);
		break;
	default:
		conn_reply_error_close(c, 400, "bad_request", "malformed request head", NULL);
		break;
	}
}

void conn_process(struct conn *c)
{
	if (c->in_process || c->closing || c->failed)
		return;
	c->in_process = true;
	for (;;) {
		if (c->closing || c->failed)
			break;
		if (c->tls && tls_drain(c) < 0) {
			conn_close(c);
			break;
		}
		if (c->state == CONN_HEAD) {
			/* A client that sends requests without reading the answers waits here
			 * (and then meets the write timeout) instead of filling memory. */
			if (c->out_pending > STREAM_HIGH_WATER)
				break;
			if (c->read_deadline_ms == 0) {
				/* Idle (keep-alive) until the first byte of the next request. */
				c->since_ms = kp_mono_ms();
				c->read_deadline_ms = c->since_ms + KP_HTTP_TIMEOUT_SECS * 1000u;
			}
			if (c->in_len > 0 && !c->head_started) {
				uint64_t d = kp_mono_ms() + WEB_HEAD_SECS * 1000u;
				c->head_started = true;
				if (d < c->read_deadline_ms)
					c->read_deadline_ms = d;
			}
			enum http_parse_status st = http_parse_head(c->in, c->in_len, &c->ph);
			if (st == HP_INCOMPLETE)
				break;
			if (st == HP_DONE)
				st = http_head_check_host(c->in, &c->ph);
			if (st != HP_DONE) {
				head_error(c, st);
				break;
			}
			dispatch(c);
			continue;
		}
		if (c->state == CONN_BODY) {
			struct web_req *r = c->req;
			size_t take = r->body_need - r->body_len;
			if (take > c->in_len)
				take = c->in_len;
			memcpy(r->body + r->body_len, c->in, take);
			r->body_len += take;
			memmove(c->in, c->in + take, c->in_len - take);
			c->in_len -= take;
			/* The grace, plus one second for every WEB_BODY_MIN_RATE bytes that arrived:
			 * the body must average that rate once the grace has passed. */
			c->read_deadline_ms = r->body_start_ms + WEB_BODY_GRACE_SECS * 1000u +
					      (uint64_t)r->body_len * 1000u / WEB_BODY_MIN_RATE;
			if (r->body_len < r->body_need)
				break;
			c->read_deadline_ms = 0;
			run_handler(c);
			continue;
		}
		if (c->state == CONN_WS && c->ws && c->ws->authed && !c->ws->closing) {
			size_t before = c->in_len;
			ws_input(c);
			if (c->in_len == before || c->closing)
				break;
			continue;
		}
		break;
	}
	c->in_process = false;
	if (c->closing || c->failed)
		return;
	bool want = ((c->state == CONN_HEAD && c->out_pending <= STREAM_HIGH_WATER) || c->state == CONN_BODY ||
		     c->state == CONN_DRAIN || (c->state == CONN_WS && c->ws && c->ws->authed && !c->ws->closing)) &&
		    c->in_len < CONN_IN_CAP;
	set_reading(c, want);
}

/* ---- accepting ---- */

static void addr_key_of(const struct sockaddr_storage *ss, struct addr_key *k)
{
	memset(k, 0, sizeof *k);
	if (ss->ss_family == AF_INET) {
		k->family = 4;
		memcpy(k->b, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			k->family = 4;
			memcpy(k->b, a->s6_addr + 12, 4);
		} else {
			k->family = 6;
			memcpy(k->b, a->s6_addr, 8);
		}
	}
}

static unsigned anonymous_from(const struct addr_key *k)
{
	unsigned n = 0;
	for (const struct conn *c = conn_list; c; c = c->next)
		n += !c->trusted && memcmp(&c->key, k, sizeof *k) == 0;
	return n;
}

/* The connection a new one may replace when all are taken: an anonymous one that holds
 * no request in progress. First one that is only draining after its answer; then the
 * one that has waited longest for a request head or body; last one whose answer the
 * client does not take (the longest without write progress). NULL when none. */
static struct conn *eviction_victim(void)
{
	struct conn *best = NULL;
	int best_rank = 3;
	uint64_t best_t = 0;
	for (struct conn *c = conn_list; c; c = c->next) {
		int rank;
		uint64_t t;
		if (c->trusted)
			continue;
		if (c->state == CONN_DRAIN) {
			rank = 0;
			t = 0;
		} else if ((c->state == CONN_HEAD || c->state == CONN_BODY) && c->out_pending == 0) {
			rank = 1;
			t = c->since_ms;
		} else if (c->state == CONN_HEAD || c->state == CONN_BODY || c->state == CONN_ENDING) {
			rank = 2;
			t = c->write_progress_ms;
		} else {
			continue; /* authenticating, in a handler, a WebSocket */
		}
		if (rank < best_rank || (rank == best_rank && t < best_t)) {
			best = c;
			best_rank = rank;
			best_t = t;
		}
	}
	return best;
}

static const char *conn_state_name(enum conn_state st)
{
	switch (st) {
	case CONN_HEAD:
		return "waiting for a request head";
	case CONN_BODY:
		return "reading a request body";
	case CONN_ENDING:
		return "writing its last answer";
	case CONN_DRAIN:
		return "draining";
	default:
		return "busy";
	}
}

static void on_connection(uv_stream_t *server, int status)
{
	if (status < 0) {
		kp_warn("accept failed: %s", uv_strerror(status));
		return;
	}
	struct conn *c = calloc(1, sizeof *c);
	if (!c || uv_tcp_init(server->loop, &c->tcp) < 0) {
		free(c);
		kp_err("no memory for a new connection");
		return;
	}
	c->tcp.data = c;
	int r = uv_accept(server, (uv_stream_t *)&c->tcp);
	if (r < 0) {
		kp_warn("accept failed: %s", uv_strerror(r));
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	struct sockaddr_storage ss;
	int sl = sizeof ss;
	memset(&ss, 0, sizeof ss);
	snprintf(c->addr, sizeof c->addr, "?");
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0)
		uv_ip_name((struct sockaddr *)&ss, c->addr, sizeof c->addr);
	addr_key_of(&ss, &c->key);
	/* Refused connections are closed at once, before a byte is read or sent. */
	if (anonymous_from(&c->key) >= WEB_CONNECTIONS_PER_ADDRESS) {
		web_limit_hit(WEB_LIMIT_CONNECTIONS_PER_ADDRESS, c->addr,
			      "connection refused: %d anonymous connections from this address are open",
			      WEB_CONNECTIONS_PER_ADDRESS);
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	uint64_t now = kp_mono_ms();
	if (web_counters.connections_active >= KP_HTTP_MAX_CONNECTIONS) {
		struct conn *v = eviction_victim();
		if (!v) {
			web_limit_hit(WEB_LIMIT_CONNECTIONS, c->addr,
				      "connection refused: %d connections are open and none can be evicted",
				      KP_HTTP_MAX_CONNECTIONS);
			uv_close((uv_handle_t *)&c->tcp, on_closed);
			return;
		}
		web_limit_hit(WEB_LIMIT_CONNECTIONS_EVICTED, v->addr,
			      "cut: anonymous connection %s for %llu ms evicted for a new one from %s",
			      conn_state_name(v->state), (unsigned long long)(now - v->since_ms), c->addr);
		conn_close(v);
	}
	c->in = malloc(CONN_IN_CAP);
	if (!c->in) {
		kp_err("no memory for a new connection");
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	c->id = next_id++;
	c->next = conn_list;
	if (conn_list)
		conn_list->prev = c;
	conn_list = c;
	web_counters.connections_active++;
	web_counters.connections_anonymous++;
	web_counters.connections_accepted++;
	http_head_init(&c->ph);
	uv_tcp_nodelay(&c->tcp, 1);
	/* Idle WebSockets have no read timeout: TCP keep-alive finds peers that vanished. */
	uv_tcp_keepalive(&c->tcp, 1, 60);
	if (tls_enabled() && tls_conn_init(c) < 0) {
		conn_close(c);
		return;
	}
	/* A new connection has WEB_HEAD_SECS for its first request head, TLS handshake
	 * included. */
	c->state = CONN_HEAD;
	c->since_ms = now;
	c->head_started = true;
	c->read_deadline_ms = now + WEB_HEAD_SECS * 1000u;
	conn_process(c);
}

/* Read deadlines (request head, body rate, idle keep-alive), write stalls, and draining
 * closes. */
static void on_sweep(uv_timer_t *t)
{
	(void)t;
	uint64_t now = kp_mono_ms();
	for (struct conn *c = conn_list, *next; c; c = next) {
		next = c->next;
		if (c->failed) {
			conn_close(c);
			continue;
		}
		if (c->out_pending > 0 && now - c->write_progress_ms > KP_HTTP_TIMEOUT_SECS * 1000u) {
			web_limit_hit(WEB_LIMIT_WRITE_TIMEOUT, c->addr, "cut: no write progress for %d s",
				      KP_HTTP_TIMEOUT_SECS);
			conn_close(c);
			continue;
		}
		if (!c->read_deadline_ms || now < c->read_deadline_ms)
			continue;
		if (c->state == CONN_HEAD) {
			/* A connection that never sent a byte of a request (a browser's spare
			 * one, or idle keep-alive) is closed without counting. */
			if (c->head_started && c->in_len > 0)
				web_limit_hit(WEB_LIMIT_READ_TIMEOUT, c->addr,
					      "cut: request head not complete within %d s (%zu bytes so far)",
					      WEB_HEAD_SECS, c->in_len);
			conn_close(c);
		} else if (c->state == CONN_BODY) {
			const struct web_req *r = c->req;
			web_limit_hit(
			    WEB_LIMIT_BODY_RATE, c->addr,
			    "cut: request body of %s at %zu of %zu bytes after %llu ms (below %d bytes/s after "
			    "%d s)",
			    r->path, r->body_len, r->body_need, (unsigned long long)(now - r->body_start_ms),
			    WEB_BODY_MIN_RATE, WEB_BODY_GRACE_SECS);
			conn_close(c);
		} else if (c->state == CONN_DRAIN) {
			conn_close(c);
		}
	}
}

/* "HOST:PORT" or "[V6]:PORT". */
static int parse_addr(const char *s, struct sockaddr_storage *ss)
{
	char host[64];
	const char *port;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || e[1] != ':' || (size_t)(e - s - 1) >= sizeof host)
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(e - s - 1));
		host[e - s - 1] = 0;
		port = e + 2;
	} else {
		const char *e = strrchr(s, ':');
		if (!e || (size_t)(e - s) >= sizeof host)
			return -EINVAL;
		memcpy(host, s, (size_t)(e - s));
		host[e - s] = 0;
		port = e + 1;
	}
	char *end;
	long p = strtol(port, &end, 10);
	if (*end || p < 0 || p > 65535)
		return -EINVAL;
	if (uv_ip4_addr(host, (int)p, (struct sockaddr_in *)ss) == 0)
		return 0;
	if (uv_ip6_addr(host, (int)p, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	return -EINVAL;
}

static int listen_one(uv_loop_t *loop, const char *spec)
{
	if (nlisteners == MAX_LISTENERS) {
		kp_err("[web] listen: more than %d addresses", MAX_LISTENERS);
		return -E2BIG;
	}
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	if (parse_addr(spec, &ss) < 0) {
		kp_err("[web] listen: '%s' is not HOST:PORT", spec);
		return -EINVAL;
	}
	struct listener *l = &listeners[nlisteners];
	snprintf(l->name, sizeof l->name, "%s", spec);
	int r = uv_tcp_init(loop, &l->tcp);
	if (r < 0)
		return r;
	unsigned i = nlisteners++;
	if (i < nadopted) { /* bound by keeppeekd, which keeps its own copy */
		r = uv_tcp_open(&l->tcp, adopted[i]);
		if (r < 0)
			close(adopted[i]);
		adopted[i] = -1;
	} else {
		r = uv_tcp_bind(&l->tcp, (struct sockaddr *)&ss, 0);
	}
	if (r == 0 && defer_accept && i < nadopted && !accepting)
		ndeferred = i + 1; /* listening already (keeppeekd's socket); accepted from web_server_accept */
	else if (r == 0)
		r = uv_listen((uv_stream_t *)&l->tcp, LISTEN_BACKLOG, on_connection);
	if (r < 0) {
		kp_err("listening on %s failed: %s", spec, uv_strerror(r));
		return r;
	}
	kp_info("listening on %s%s", spec, tls_enabled() ? " (TLS)" : "");
	return 0;
}

int web_server_open(uv_loop_t *loop, const struct web_server_def *def, void *app, const char *listen,
		    const char *tls_cert, const char *tls_key)
{
	unsigned nws = 0;
	for (const struct web_ws_route *w = def->ws_routes; w && w->path; w++)
		nws++;
	if (nws > WEB_WS_ROUTES_MAX) {
		kp_err("%u WebSocket routes: at most %d", nws, WEB_WS_ROUTES_MAX);
		return -E2BIG;
	}
	web_def = def;
	web_app = app;
	memset(&web_counters, 0, sizeof web_counters);
	memset(limit_log, 0, sizeof limit_log);
	if (tls_cert[0] || tls_key[0]) {
		int r = tls_open(tls_cert, tls_key);
		if (r < 0)
			return r;
	}
	size_t n = strlen(listen);
	char *list = malloc(n + 1);
	if (!list)
		return -ENOMEM;
	memcpy(list, listen, n + 1);
	char *save = NULL;
	int r = 0;
	for (char *tok = strtok_r(list, ",", &save); tok && r == 0; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		r = listen_one(loop, tok);
	}
	free(list);
	if (r < 0)
		return r;
	if (nlisteners == 0)
		kp_warn("[web] listen is empty: webd serves nothing");
	r = uv_timer_init(loop, &sweep_timer);
	if (r < 0)
		return r;
	sweep_open = true;
	return uv_timer_start(&sweep_timer, on_sweep, 250, 250);
}

int web_server_port(unsigned n)
{
	if (n >= nlisteners)
		return -ENOENT;
	struct sockaddr_storage ss;
	int len = sizeof ss;
	int r = uv_tcp_getsockname(&listeners[n].tcp, (struct sockaddr *)&ss, &len);
	if (r < 0)
		return r;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

void web_server_close(void)
{
	while (conn_list)
		conn_close(conn_list);
	for (unsigned i = 0; i < nlisteners; i++)
		uv_close((uv_handle_t *)&listeners[i].tcp, NULL);
	nlisteners = 0;
	if (sweep_open)
		uv_close((uv_handle_t *)&sweep_timer, NULL);
	sweep_open = false;
	tls_close();
}

/* ---- request accessors ---- */

void *web_req_app(const struct web_req *r)
{
	(void)r;
	return web_app;
}

uint64_t web_req_id(const struct web_req *r)
{
	return r->id;
}

struct web_req *web_req_find(uint64_t id)
{
	for (struct conn *c = conn_list; c; c = c->next)
		if (c->req && c->req->id == id)
			return c->req;
	return NULL;
}

enum web_method web_req_method(const struct web_req *r)
{
	return r->method;
}

const char *web_req_path(const struct web_req *r)
{
	return r->path;
}

int web_req_query(const struct web_req *r, const char *name, char *buf, size_t len)
{
	size_t nl = strlen(name);
	for (const char *p = r->query; *p;) {
		const char *amp = strchr(p, '&');
		const char *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *kend = eq ? eq : end;
		if ((size_t)(kend - p) == nl && memcmp(p, name, nl) == 0) {
			size_t o = 0;
			for (const char *v = eq ? eq + 1 : end; v < end; v++) {
				char ch = *v;
				if (ch == '+') {
					ch = ' ';
				} else if (ch == '%' && end - v >= 3 && hexval(v[1]) >= 0 && hexval(v[2]) >= 0) {
					ch = (char)(hexval(v[1]) * 16 + hexval(v[2]));
					v += 2;
				}
				if (o + 1 >= len)
					return -1;
				buf[o++] = ch;
			}
			if (len == 0)
				return -1;
			buf[o] = 0;
			return 1;
		}
		p = amp ? amp + 1 : end;
	}
	return 0;
}

const char *web_req_header(const struct web_req *r, const char *name)
{
	for (unsigned i = 0; i < r->nheaders; i++)
		if (strcmp(r->hname[i], name) == 0)
			return r->hval[i];
	return NULL;
}

const uint8_t *web_req_body(const struct web_req *r, size_t *len)
{
	*len = r->body_len;
	return r->body;
}

const struct web_principal *web_req_principal(const struct web_req *r)
{
	return r->have_principal ? &r->principal : NULL;
}

const char *web_req_client_addr(const struct web_req *r)
{
	return r->c->addr;
}

bool web_req_tls(const struct web_req *r)
{
	return r->c->tls != NULL;
}

void web_req_set_principal(struct web_req *r, const struct web_principal *p)
{
	r->principal = *p;
	r->have_principal = true;
	if (!r->c->trusted) {
		r->c->trusted = true;
		web_counters.connections_anonymous--;
	}
}
