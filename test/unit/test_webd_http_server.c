/* Unit tests of the HTTP core (webd/http/) on its own, without webd's application: a
 * tiny route table, WebSocket route and authentication hook of this file, the core on a
 * libuv loop of this process, and clients on real loopback sockets driven from the same
 * thread (the loop runs while a client waits). Parsing and routing, each request ceiling
 * at its limit and one past it, the per-address and handler ceilings, keep-alive,
 * pipelining, request bodies in pieces and streamed answers, the WebSocket upgrade and
 * frames, closing, and TLS. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "kp_time.h"
#include "http.h"
#include "log.h"
#include "test.h"
#include "web_limits.h"

#define WAIT_MS     5000
#define SMALL_BODY  16
#define STREAM_SIZE (3 * STREAM_HIGH_WATER + 7)

static uv_loop_t loop;
static int port;

/* ---- the application of this test ---- */

static struct {
	unsigned ws_opened, ws_closed, fallback, later_gone;
	struct web_ws *last_ws; /* the last WebSocket opened */
	uint64_t later_id;
	uv_timer_t later_timer;
	uint64_t held[KP_HTTP_MAX_HANDLERS];
	unsigned nheld;
} app;

static void route_echo(struct web_req *r)
{
	char q[64] = "-", body[512];
	size_t blen;
	const uint8_t *b = web_req_body(r, &blen);
	const char *h = web_req_header(r, "x-echo");
	CHECK(web_req_query(r, "q", q, sizeof q) >= 0);
	int n = snprintf(body, sizeof body, "%s %s q=%s x-echo=%s body=%.*s tls=%d",
			 web_req_method(r) == WEB_POST ? "POST" : "GET", web_req_path(r), q, h ? h : "-", (int)blen,
			 b ? (const char *)b : "", web_req_tls(r));
	if (n >= (int)sizeof body)
		n = (int)sizeof body - 1;
	web_reply(r, 200, "text/plain", body, (size_t)n, NULL);
}

static void later_fire(uv_timer_t *t)
{
	(void)t;
	struct web_req *r = web_req_find(app.later_id);
	if (!r) {
		app.later_gone++;
		return;
	}
	web_reply(r, 200, "text/plain", "later", 5, NULL);
}

/* Answers 30 ms after the request, by its id (as an answer after IPC would). */
static void route_later(struct web_req *r)
{
	app.later_id = web_req_id(r);
	CHECK_EQ(uv_timer_start(&app.later_timer, later_fire, 30, 0), 0);
}

/* Holds the request (its handler slot) until release_held. */
static void route_hold(struct web_req *r)
{
	if (app.nheld < KP_HTTP_MAX_HANDLERS)
		app.held[app.nheld++] = web_req_id(r);
}

static void release_held(void)
{
	for (unsigned i = 0; i < app.nheld; i++) {
		struct web_req *r = web_req_find(app.held[i]);
		if (r)
			web_reply(r, 200, "text/plain", "held", 4, NULL);
	}
	app.nheld = 0;
}

static int stream_file(void)
{
	char path[] = "/tmp/test_webd_http_server.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	static char block[STREAM_SIZE];
	for (size_t i = 0; i < sizeof block; i++)
		block[i] = (char)('a' + i % 26);
	if (write(fd, block, sizeof block) != (ssize_t)sizeof block) {
		close(fd);
		return -1;
	}
	return fd;
}

/* "head;" then STREAM_SIZE bytes of a file from offset 0, then ";tail", chunked. */
static void route_stream(struct web_req *r)
{
	int fd = stream_file();
	CHECK(fd >= 0);
	CHECK_EQ(web_stream_begin(r, 200, "text/plain", UINT64_MAX, NULL), 0);
	CHECK_EQ(web_stream_bytes(r, "head;", 5), 0);
	CHECK_EQ(web_stream_fd(r, fd, 0, STREAM_SIZE), 0);
	CHECK_EQ(web_stream_bytes(r, ";tail", 5), 0);
	web_stream_end(r);
}

static void route_private(struct web_req *r)
{
	const struct web_principal *p = web_req_principal(r);
	web_reply(r, 200, "text/plain", p ? p->name : "-", p ? strlen(p->name) : 1, NULL);
}

static void fallback(struct web_req *r)
{
	app.fallback++;
	web_reply(r, 200, "text/plain", "fallback", 8, NULL);
}

static const struct web_route routes[] = {
    {WEB_GET | WEB_POST, "/echo", WEB_PUBLIC, SMALL_BODY, route_echo},
    {WEB_POST, "/big", WEB_PUBLIC, 1024 * 1024, route_echo},
    {WEB_GET, "/later", WEB_PUBLIC, 0, route_later},
    {WEB_GET, "/stream", WEB_PUBLIC, 0, route_stream},
    {WEB_GET, "/private", 0, 0, route_private},
    {WEB_GET, "/hold", WEB_PUBLIC, 0, route_hold},
    {WEB_GET, "/health", WEB_PUBLIC | WEB_HEALTH, 0, route_echo},
    {0, NULL, 0, 0, NULL},
};
static const struct web_route *const tables[] = {routes, NULL};

static void ws_open(struct web_ws *ws)
{
	app.ws_opened++;
	app.last_ws = ws;
	CHECK(web_ws_app(ws) == &app);
}

static void ws_message(struct web_ws *ws, bool binary, const uint8_t *data, size_t len)
{
	CHECK_EQ(web_ws_send(ws, binary, data, len, 16, 1024 * 1024), 0);
}

static void ws_close(struct web_ws *ws)
{
	(void)ws;
	app.ws_closed++;
}

static const struct web_ws_route ws_routes[] = {
    {"/ws", WEB_PUBLIC, ws_open, ws_message, ws_close},
    {NULL, 0, NULL, NULL, NULL},
};

/* Signed in when the request says X-User. */
static void auth(struct web_req *r, unsigned flags, void (*done)(struct web_req *r, int status))
{
	(void)flags;
	const char *user = web_req_header(r, "x-user");
	if (!user) {
		web_reply_error(r, 401, "unauthenticated", "no X-User");
		done(r, 401);
		return;
	}
	struct web_principal p = {.role = 1};
	snprintf(p.name, sizeof p.name, "%s", user);
	web_req_set_principal(r, &p);
	done(r, 0);
}

static const struct web_server_def def = {
    .routes = tables,
    .ws_routes = ws_routes,
    .auth = auth,
    .fallback = fallback,
};

/* ---- clients ---- */

struct cli {
	int fd;
	char *buf;
	size_t len, cap;
	bool eof;
};

struct resp {
	int status;
	char head[2048];
	char *body; /* NUL-terminated, malloc'd */
	size_t body_len;
};

static void pump(void)
{
	uv_run(&loop, UV_RUN_NOWAIT);
	usleep(200);
}

static void cli_open(struct cli *c)
{
	memset(c, 0, sizeof *c);
	c->cap = 2 * 1024 * 1024;
	c->buf = malloc(c->cap);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c->buf && c->fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
	CHECK_EQ(fcntl(c->fd, F_SETFL, O_NONBLOCK), 0);
}

static void cli_close(struct cli *c)
{
	close(c->fd);
	free(c->buf);
	for (int i = 0; i < 20; i++)
		pump();
}

static void cli_send(struct cli *c, const void *data, size_t len)
{
	size_t off = 0;
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (off < len && kp_mono_ms() < until) {
		ssize_t n = send(c->fd, (const char *)data + off, len - off, MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			break;
		pump();
	}
	CHECK_EQ(off, len);
}

static void cli_sends(struct cli *c, const char *s)
{
	cli_send(c, s, strlen(s));
}

static void cli_read_some(struct cli *c)
{
	pump();
	if (c->eof || c->len == c->cap)
		return;
	ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	if (n > 0)
		c->len += (size_t)n;
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		c->eof = true;
}

static void consume(struct cli *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* The body of a chunked answer starting at p: its length, or -1 when incomplete. */
static ssize_t dechunk(const char *p, const char *end, struct resp *out, size_t *used)
{
	const char *s = p;
	size_t total = 0;
	char *body = malloc((size_t)(end - p) + 1);
	for (;;) {
		const char *crlf = memmem(s, (size_t)(end - s), "\r\n", 2);
		if (!crlf)
			break;
		size_t n = strtoul(s, NULL, 16);
		if ((size_t)(end - crlf) < 2 + n + 2)
			break;
		memcpy(body + total, crlf + 2, n);
		total += n;
		s = crlf + 2 + n + 2;
		if (n == 0) {
			body[total] = 0;
			out->body = body;
			out->body_len = total;
			*used = (size_t)(s - p);
			return (ssize_t)total;
		}
	}
	free(body);
	return -1;
}

/* One whole answer from the buffer (no body when head_only), or false. */
static bool take_answer(struct cli *c, bool head_only, struct resp *out)
{
	char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (!end)
		return false;
	size_t hl = (size_t)(end - c->buf) + 4;
	if (hl >= sizeof out->head)
		return false;
	memcpy(out->head, c->buf, hl);
	out->head[hl] = 0;
	out->status = atoi(out->head + 9);
	out->body = NULL;
	out->body_len = 0;
	const char *cl = strcasestr(out->head, "\r\nContent-Length: ");
	if (head_only || out->status == 101) {
		consume(c, hl);
	} else if (cl) {
		size_t n = strtoul(cl + 18, NULL, 10);
		if (c->len < hl + n)
			return false;
		out->body = malloc(n + 1);
		memcpy(out->body, c->buf + hl, n);
		out->body[n] = 0;
		out->body_len = n;
		consume(c, hl + n);
	} else if (strcasestr(out->head, "\r\nTransfer-Encoding: chunked")) {
		size_t used;
		if (dechunk(c->buf + hl, c->buf + c->len, out, &used) < 0)
			return false;
		consume(c, hl + used);
	} else {
		consume(c, hl);
	}
	if (!out->body)
		out->body = calloc(1, 1);
	return true;
}

/* Waits for one answer; its status, or -1 when the connection closed or time ran out. */
static int cli_answer_ex(struct cli *c, bool head_only, struct resp *out)
{
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (kp_mono_ms() < until) {
		if (take_answer(c, head_only, out))
			return out->status;
		if (c->eof)
			break;
		cli_read_some(c);
	}
	out->body = NULL;
	return -1;
}

static int cli_answer(struct cli *c, struct resp *out)
{
	return cli_answer_ex(c, false, out);
}

/* True when the server closed the connection within WAIT_MS (nothing more to read). */
static bool cli_wait_eof(struct cli *c)
{
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (!c->eof && kp_mono_ms() < until)
		cli_read_some(c);
	return c->eof;
}

/* Sends one request and waits for its answer; the status. */
static int request(const char *req, struct resp *out)
{
	struct cli c;
	cli_open(&c);
	cli_sends(&c, req);
	int st = cli_answer(&c, out);
	cli_close(&c);
	return st;
}

static void resp_free(struct resp *r)
{
	free(r->body);
	r->body = NULL;
}

/* Runs the loop until *v is want (or WAIT_MS passed). */
static void settle(const unsigned *v, unsigned want)
{
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (*v != want && kp_mono_ms() < until)
		pump();
}

/* ---- tests ---- */

static void test_parse_and_route(void)
{
	struct resp r;
	CHECK_EQ(request("GET /echo?q=a%20b+c HTTP/1.1\r\nHost: h\r\nX-Echo:  v1 \r\n\r\n", &r), 200);
	CHECK_STR_CONTAINS(r.body ? r.body : "", "GET /echo q=a b c x-echo=v1 body=");
	CHECK_STR_CONTAINS(r.head, "Content-Type: text/plain\r\n");
	resp_free(&r);
	/* A percent-encoded path is decoded before routing. */
	CHECK_EQ(request("GET /%65cho HTTP/1.1\r\nHost: h\r\n\r\n", &r), 200);
	resp_free(&r);
	CHECK_EQ(request("GET /../echo HTTP/1.1\r\nHost: h\r\n\r\n", &r), 400);
	resp_free(&r);
	CHECK_EQ(request("PUT /echo HTTP/1.1\r\nHost: h\r\n\r\n", &r), 501);
	resp_free(&r);
	CHECK_EQ(request("DELETE /echo HTTP/1.1\r\nHost: h\r\n\r\n", &r), 405);
	CHECK_STR_CONTAINS(r.head, "Allow: GET, POST\r\n");
	resp_free(&r);
	/* GET without a route: the application's fallback; POST without one: 404. */
	unsigned before = app.fallback;
	CHECK_EQ(request("GET /nowhere HTTP/1.1\r\nHost: h\r\n\r\n", &r), 200);
	CHECK_EQ(app.fallback, before + 1);
	resp_free(&r);
	CHECK_EQ(request("POST /nowhere HTTP/1.1\r\nHost: h\r\n\r\n", &r), 404);
	resp_free(&r);
	/* HEAD is answered where GET is, without the body. */
	struct cli c;
	cli_open(&c);
	cli_sends(&c, "HEAD /echo HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK_EQ(cli_answer_ex(&c, true, &r), 200);
	CHECK_STR_CONTAINS(r.head, "Content-Length: ");
	resp_free(&r);
	cli_close(&c);
	/* The authentication hook: refused without X-User, the principal with it. */
	CHECK_EQ(request("GET /private HTTP/1.1\r\nHost: h\r\n\r\n", &r), 401);
	resp_free(&r);
	CHECK_EQ(request("GET /private HTTP/1.1\r\nHost: h\r\nX-User: ann\r\n\r\n", &r), 200);
	CHECK(r.body && !strcmp(r.body, "ann"));
	resp_free(&r);
}

static char big[HTTP_HEAD_MAX + 1024];

/* "GET /aaa... HTTP/1.1\r\n" with a request line of exactly n bytes; returns its end. */
static size_t request_line(size_t n)
{
	size_t fixed = strlen("GET / HTTP/1.1");
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', n - fixed);
	memcpy(big + 5 + n - fixed, " HTTP/1.1\r\n", 11);
	return n + 2;
}

/* A header line "X-P: vvv..." of exactly n bytes at o, CRLF after; returns its end. */
static size_t header_line(size_t o, size_t n)
{
	memcpy(big + o, "X-P: ", 5);
	memset(big + o + 5, 'v', n - 5);
	memcpy(big + o + n, "\r\n", 2);
	return o + n + 2;
}

static size_t host_and_end(size_t o, bool end)
{
	memcpy(big + o, "Host: h\r\n", 9);
	o += 9;
	if (end) {
		memcpy(big + o, "\r\n", 2);
		o += 2;
	}
	return o;
}

/* Sends big[0..len), returns the status; the code of the JSON error into code. */
static int request_big(size_t len, const char *code)
{
	struct cli c;
	struct resp r;
	cli_open(&c);
	cli_send(&c, big, len);
	int st = cli_answer(&c, &r);
	if (code)
		CHECK_STR_CONTAINS(r.body ? r.body : "", code);
	resp_free(&r);
	if (st >= 400 && st != 404 && st != 405)
		CHECK(cli_wait_eof(&c)); /* refused heads close the connection */
	cli_close(&c);
	return st;
}

static void test_ceilings(void)
{
	const uint64_t *lim = web_counters.limit_rejections;
	/* The request line at KP_HTTP_MAX_LINE bytes, and one past it. */
	CHECK_EQ(request_big(host_and_end(request_line(KP_HTTP_MAX_LINE), true), NULL), 200); /* fallback */
	uint64_t n = lim[WEB_LIMIT_REQUEST_LINE];
	CHECK_EQ(request_big(host_and_end(request_line(KP_HTTP_MAX_LINE + 1), true), "request_line"), 414);
	CHECK_EQ(lim[WEB_LIMIT_REQUEST_LINE], n + 1);
	/* One header line. */
	CHECK_EQ(request_big(host_and_end(header_line(request_line(16), KP_HTTP_MAX_LINE), true), NULL), 200);
	CHECK_EQ(request_big(host_and_end(header_line(request_line(16), KP_HTTP_MAX_LINE + 1), true), "header_line"),
		 431);
	/* Header count: Host and 99 more, then Host and 100 more. */
	size_t o = request_line(16);
	for (int i = 0; i < KP_HTTP_MAX_HEADERS - 1; i++)
		o = header_line(o, 8);
	CHECK_EQ(request_big(host_and_end(o, true), NULL), 200);
	o = header_line(o, 8);
	CHECK_EQ(request_big(host_and_end(o, true), "header_count"), 431);
	/* Header bytes: Host (9 bytes) and lines up to KP_HTTP_MAX_HEADER_BYTES in total. */
	size_t start = request_line(16);
	o = host_and_end(start, false);
	for (int i = 0; i < 15; i++)
		o = header_line(o, 4094);
	size_t last = KP_HTTP_MAX_HEADER_BYTES - (o - start) - 2;
	size_t e = header_line(o, last);
	memcpy(big + e, "\r\n", 2);
	CHECK_EQ(request_big(e + 2, NULL), 200);
	n = lim[WEB_LIMIT_HEADER_BYTES];
	CHECK_EQ(request_big(header_line(o, last + 1), "header_bytes"), 431);
	CHECK_EQ(lim[WEB_LIMIT_HEADER_BYTES], n + 1);
	/* The route's body ceiling: SMALL_BODY bytes, and one more (413 before the body). */
	struct resp r;
	CHECK_EQ(request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 16\r\n\r\n0123456789abcdef", &r), 200);
	CHECK_STR_CONTAINS(r.body ? r.body : "", "body=0123456789abcdef");
	resp_free(&r);
	n = lim[WEB_LIMIT_BODY];
	CHECK_EQ(request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n", &r), 413);
	CHECK_EQ(lim[WEB_LIMIT_BODY], n + 1);
	resp_free(&r);
	/* Host, Content-Length and Transfer-Encoding. */
	CHECK_EQ(request("GET /echo HTTP/1.1\r\n\r\n", &r), 400);
	CHECK_STR_CONTAINS(r.body ? r.body : "", "bad_host");
	resp_free(&r);
	CHECK_EQ(request("GET /echo HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", &r), 400);
	resp_free(&r);
	CHECK_EQ(request("GET /echo HTTP/1.0\r\n\r\n", &r), 200);
	resp_free(&r);
	CHECK_EQ(request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", &r), 400);
	resp_free(&r);
	CHECK_EQ(request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n1", &r), 400);
	resp_free(&r);
	CHECK_EQ(request("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", &r), 411);
	resp_free(&r);
}

static void test_client_ceilings(void)
{
	static struct cli c[WEB_CONNECTIONS_PER_ADDRESS + 1];
	struct resp r;
	const uint64_t *lim = web_counters.limit_rejections;
	/* WEB_CONNECTIONS_PER_ADDRESS anonymous connections from one address; the next is
	 * accepted and closed at once. */
	uint64_t n = lim[WEB_LIMIT_CONNECTIONS_PER_ADDRESS];
	for (int i = 0; i < WEB_CONNECTIONS_PER_ADDRESS; i++)
		cli_open(&c[i]);
	settle(&web_counters.connections_active, WEB_CONNECTIONS_PER_ADDRESS);
	CHECK_EQ(web_counters.connections_active, WEB_CONNECTIONS_PER_ADDRESS);
	cli_open(&c[WEB_CONNECTIONS_PER_ADDRESS]);
	CHECK(cli_wait_eof(&c[WEB_CONNECTIONS_PER_ADDRESS]));
	CHECK_EQ(lim[WEB_LIMIT_CONNECTIONS_PER_ADDRESS], n + 1);
	CHECK_EQ(web_counters.connections_active, WEB_CONNECTIONS_PER_ADDRESS);
	for (int i = 0; i <= WEB_CONNECTIONS_PER_ADDRESS; i++)
		cli_close(&c[i]);
	settle(&web_counters.connections_active, 0);
	/* Handler slots: anonymous requests may take all but the reserves; then only
	 * health checks and signed-in requests run. */
	unsigned anon = KP_HTTP_MAX_HANDLERS - WEB_HANDLERS_RESERVE_SIGNED_IN - WEB_HANDLERS_RESERVE_HEALTH;
	for (unsigned i = 0; i < anon; i++) {
		cli_open(&c[i]);
		cli_sends(&c[i], "GET /hold HTTP/1.1\r\nHost: h\r\n\r\n");
	}
	settle(&web_counters.handlers_active, anon);
	CHECK_EQ(web_counters.handlers_active, anon);
	n = lim[WEB_LIMIT_HANDLERS_RESERVE];
	CHECK_EQ(request("GET /echo HTTP/1.1\r\nHost: h\r\n\r\n", &r), 503);
	CHECK_STR_CONTAINS(r.head, "Retry-After: 1\r\n");
	resp_free(&r);
	CHECK_EQ(lim[WEB_LIMIT_HANDLERS_RESERVE], n + 1);
	CHECK_EQ(request("GET /health HTTP/1.1\r\nHost: h\r\n\r\n", &r), 200);
	resp_free(&r);
	CHECK_EQ(request("GET /private HTTP/1.1\r\nHost: h\r\nX-User: ann\r\n\r\n", &r), 200);
	resp_free(&r);
	release_held();
	for (unsigned i = 0; i < anon; i++) {
		CHECK_EQ(cli_answer(&c[i], &r), 200);
		resp_free(&r);
		cli_close(&c[i]);
	}
	settle(&web_counters.connections_active, 0);
	CHECK_EQ(web_counters.handlers_active, 0);
}

static void test_keepalive(void)
{
	struct cli c;
	struct resp r;
	uint64_t accepted = web_counters.connections_accepted;
	cli_open(&c);
	for (int i = 0; i < 3; i++) {
		cli_sends(&c, "GET /echo HTTP/1.1\r\nHost: h\r\n\r\n");
		CHECK_EQ(cli_answer(&c, &r), 200);
		CHECK(!strcasestr(r.head, "Connection: close"));
		resp_free(&r);
	}
	CHECK_EQ(web_counters.connections_accepted, accepted + 1);
	/* Connection: close is honoured: the answer, then the end. */
	cli_sends(&c, "GET /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK_STR_CONTAINS(r.head, "Connection: close\r\n");
	resp_free(&r);
	CHECK(cli_wait_eof(&c));
	cli_close(&c);
	/* HTTP/1.0 closes unless it asks for keep-alive. */
	cli_open(&c);
	cli_sends(&c, "GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK_STR_CONTAINS(r.head, "Connection: keep-alive\r\n");
	resp_free(&r);
	cli_sends(&c, "GET /echo HTTP/1.0\r\n\r\n");
	CHECK_EQ(cli_answer(&c, &r), 200);
	resp_free(&r);
	CHECK(cli_wait_eof(&c));
	cli_close(&c);
}

static void test_pipelining(void)
{
	struct cli c;
	struct resp r;
	cli_open(&c);
	/* Three requests in one write; the first answers last in time, yet first on the wire. */
	cli_sends(&c, "GET /later HTTP/1.1\r\nHost: h\r\n\r\n"
		      "POST /echo?q=2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
		      "GET /echo?q=3 HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK(r.body && !strcmp(r.body, "later"));
	resp_free(&r);
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK_STR_CONTAINS(r.body ? r.body : "", "POST /echo q=2 x-echo=- body=abc");
	resp_free(&r);
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK_STR_CONTAINS(r.body ? r.body : "", "GET /echo q=3");
	resp_free(&r);
	cli_close(&c);
}

static void test_body_streaming(void)
{
	struct cli c;
	struct resp r;
	/* A request body in pieces, with the loop running between them. */
	static char body[300 * 1024];
	for (size_t i = 0; i < sizeof body; i++)
		body[i] = (char)('A' + i % 26);
	char head[128];
	int hl =
	    snprintf(head, sizeof head, "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n", sizeof body);
	cli_open(&c);
	cli_send(&c, head, (size_t)hl);
	for (size_t off = 0; off < sizeof body; off += 40000)
		cli_send(&c, body + off, sizeof body - off < 40000 ? sizeof body - off : 40000);
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK_STR_CONTAINS(r.body ? r.body : "", "body=ABCDEFG");
	resp_free(&r);
	/* A streamed answer: bytes, a file larger than the high-water mark, bytes; chunked. */
	cli_sends(&c, "GET /stream HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK_EQ(cli_answer(&c, &r), 200);
	CHECK_STR_CONTAINS(r.head, "Transfer-Encoding: chunked\r\n");
	CHECK_EQ(r.body_len, 5 + STREAM_SIZE + 5);
	if (r.body && r.body_len == 5 + STREAM_SIZE + 5) {
		CHECK(!memcmp(r.body, "head;abc", 8));
		CHECK_EQ(r.body[5 + STREAM_SIZE - 1], 'a' + (STREAM_SIZE - 1) % 26);
		CHECK(!memcmp(r.body + 5 + STREAM_SIZE, ";tail", 5));
	}
	resp_free(&r);
	/* The connection is still usable after the stream. */
	cli_sends(&c, "GET /echo HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK_EQ(cli_answer(&c, &r), 200);
	resp_free(&r);
	cli_close(&c);
}

/* A masked client frame. */
static size_t ws_frame(uint8_t *out, int op, bool fin, const void *data, size_t len)
{
	static const uint8_t mask[4] = {1, 2, 3, 4};
	size_t h = 2;
	out[0] = (uint8_t)((fin ? 0x80 : 0) | op);
	if (len < 126) {
		out[1] = (uint8_t)(0x80 | len);
	} else if (len <= 0xffff) {
		out[1] = 0x80 | 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		h = 4;
	} else {
		out[1] = 0x80 | 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		h = 10;
	}
	memcpy(out + h, mask, 4);
	for (size_t i = 0; i < len; i++)
		out[h + 4 + i] = (uint8_t)(((const uint8_t *)data)[i] ^ mask[i % 4]);
	return h + 4 + len;
}

/* One server frame (unmasked, payload < 65536): its opcode, or -1. */
static int ws_read(struct cli *c, char *payload, size_t cap, size_t *len)
{
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (kp_mono_ms() < until) {
		if (c->len >= 2) {
			const uint8_t *b = (const uint8_t *)c->buf;
			size_t n = b[1] & 0x7f, h = 2;
			if (n == 126 && c->len >= 4) {
				n = (size_t)b[2] << 8 | b[3];
				h = 4;
			}
			if (n < 126 || h == 4) {
				if (c->len >= h + n && n <= cap) {
					int op = b[0] & 0x0f;
					memcpy(payload, c->buf + h, n);
					*len = n;
					consume(c, h + n);
					return op;
				}
			}
		}
		if (c->eof)
			break;
		cli_read_some(c);
	}
	return -1;
}

static void ws_upgrade(struct cli *c, const char *path, struct resp *r)
{
	char req[512];
	snprintf(req, sizeof req,
		 "GET %s HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
		 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		 path);
	cli_open(c);
	cli_sends(c, req);
	cli_answer(c, r);
}

static void test_websocket(void)
{
	struct cli c;
	struct resp r;
	uint8_t frame[KP_CONTROL_MESSAGE_MAX + 64];
	char payload[256];
	size_t len;
	unsigned opened = app.ws_opened, closed = app.ws_closed;
	ws_upgrade(&c, "/ws", &r);
	CHECK_EQ(r.status, 101);
	CHECK_STR_CONTAINS(r.head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n");
	resp_free(&r);
	CHECK_EQ(app.ws_opened, opened + 1);
	/* A text message is echoed; a fragmented one arrives whole. */
	cli_send(&c, frame, ws_frame(frame, 1, true, "hello", 5));
	CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 1);
	CHECK(len == 5 && !memcmp(payload, "hello", 5));
	size_t fl = ws_frame(frame, 2, false, "ab", 2);
	fl += ws_frame(frame + fl, 0, true, "cd", 2);
	cli_send(&c, frame, fl);
	CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 2);
	CHECK(len == 4 && !memcmp(payload, "abcd", 4));
	/* Ping gets pong with its payload. */
	cli_send(&c, frame, ws_frame(frame, 9, true, "p", 1));
	CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 10);
	CHECK(len == 1 && payload[0] == 'p');
	/* Close is answered with close, then the connection ends; on_close ran once. */
	uint8_t code[2] = {0x03, 0xe8};
	cli_send(&c, frame, ws_frame(frame, 8, true, code, 2));
	CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 8);
	CHECK(cli_wait_eof(&c));
	cli_close(&c);
	settle(&app.ws_closed, closed + 1);
	CHECK_EQ(app.ws_closed, closed + 1);
	/* One byte past the message ceiling: closed with 1009 and counted. */
	uint64_t n = web_counters.limit_rejections[WEB_LIMIT_WS_MESSAGE];
	ws_upgrade(&c, "/ws", &r);
	CHECK_EQ(r.status, 101);
	resp_free(&r);
	static uint8_t huge[KP_CONTROL_MESSAGE_MAX + 1];
	cli_send(&c, frame, ws_frame(frame, 2, true, huge, KP_CONTROL_MESSAGE_MAX + 1));
	CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 8);
	CHECK(len >= 2 && ((uint8_t)payload[0] << 8 | (uint8_t)payload[1]) == 1009);
	CHECK_EQ(web_counters.limit_rejections[WEB_LIMIT_WS_MESSAGE], n + 1);
	cli_close(&c);
	/* At the ceiling it is echoed. */
	ws_upgrade(&c, "/ws", &r);
	resp_free(&r);
	cli_send(&c, frame, ws_frame(frame, 2, true, huge, KP_CONTROL_MESSAGE_MAX));
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (c.len < 10 + KP_CONTROL_MESSAGE_MAX && !c.eof && kp_mono_ms() < until)
		cli_read_some(&c);
	CHECK_EQ(c.len, 10 + KP_CONTROL_MESSAGE_MAX);
	cli_close(&c);
	/* No such WebSocket, or no key: refused with an HTTP answer. */
	ws_upgrade(&c, "/nows", &r);
	CHECK_EQ(r.status, 404);
	resp_free(&r);
	cli_close(&c);
	CHECK_EQ(request("GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", &r), 426);
	resp_free(&r);
}

static void test_close(void)
{
	struct cli c;
	/* A client that goes away in the middle of a head: its connection ends. */
	cli_open(&c);
	cli_sends(&c, "GET /echo HTTP/1.1\r\nHo");
	settle(&web_counters.connections_active, 1);
	CHECK_EQ(web_counters.connections_active, 1);
	cli_close(&c);
	settle(&web_counters.connections_active, 0);
	CHECK_EQ(web_counters.connections_active, 0);
	/* One that goes away while its handler works: the answer still goes out (a handler
	 * stops the reading), then the connection ends and the id is found no more. */
	cli_open(&c);
	cli_sends(&c, "GET /later HTTP/1.1\r\nHost: h\r\n\r\n");
	settle(&web_counters.handlers_active, 1);
	CHECK_EQ(web_counters.handlers_active, 1);
	cli_close(&c);
	settle(&web_counters.connections_active, 0);
	CHECK_EQ(web_counters.connections_active, 0);
	CHECK_EQ(web_counters.handlers_active, 0);
	CHECK(web_req_find(app.later_id) == NULL);
	/* Closing the server ends the connections still open, a request waiting for its
	 * answer included: the late answer finds no request. */
	unsigned gone = app.later_gone;
	cli_open(&c);
	cli_sends(&c, "GET /later HTTP/1.1\r\nHost: h\r\n\r\n");
	settle(&web_counters.handlers_active, 1);
	CHECK_EQ(web_counters.handlers_active, 1);
	web_server_close();
	CHECK_EQ(web_counters.connections_active, 0);
	CHECK_EQ(web_counters.handlers_active, 0);
	CHECK(cli_wait_eof(&c));
	settle(&app.later_gone, gone + 1);
	CHECK_EQ(app.later_gone, gone + 1);
	close(c.fd);
	free(c.buf);
}

/* A self-signed certificate and its key, as PEM files under /tmp. */
static bool make_cert(const char *cert, const char *key)
{
	EVP_PKEY *pkey = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	bool ok = false;
	if (pkey && x && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) && X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
	    X509_gmtime_adj(X509_getm_notAfter(x), 3600) && X509_set_pubkey(x, pkey)) {
		X509_NAME *name = X509_get_subject_name(x);
		ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
						0) &&
		     X509_set_issuer_name(x, name) && X509_sign(x, pkey, EVP_sha256()) > 0;
	}
	FILE *cf = ok ? fopen(cert, "w") : NULL, *kf = ok ? fopen(key, "w") : NULL;
	ok = cf && kf && PEM_write_X509(cf, x) && PEM_write_PrivateKey(kf, pkey, NULL, NULL, 0, NULL, NULL);
	if (cf)
		fclose(cf);
	if (kf)
		fclose(kf);
	X509_free(x);
	EVP_PKEY_free(pkey);
	return ok;
}

/* Runs an OpenSSL call on the non-blocking client until it stops wanting I/O. */
static int tls_call(SSL *ssl, int (*fn)(SSL *, void *, int), void *buf, int len)
{
	uint64_t until = kp_mono_ms() + WAIT_MS;
	for (;;) {
		int n = fn(ssl, buf, len);
		int e = n > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, n);
		if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) || kp_mono_ms() >= until)
			return n;
		pump();
	}
}

static int do_connect(SSL *ssl, void *buf, int len)
{
	(void)buf;
	(void)len;
	return SSL_connect(ssl);
}

static int do_write(SSL *ssl, void *buf, int len)
{
	return SSL_write(ssl, buf, len);
}

/* One TLS request and its answer on ssl's connection (c's buffer); the status. */
static int tls_request(SSL *ssl, struct cli *c, const char *req, struct resp *out)
{
	CHECK_EQ(tls_call(ssl, do_write, (void *)req, (int)strlen(req)), (int)strlen(req));
	uint64_t until = kp_mono_ms() + WAIT_MS;
	while (kp_mono_ms() < until) {
		if (take_answer(c, false, out))
			return out->status;
		int n = SSL_read(ssl, c->buf + c->len, (int)(c->cap - c->len));
		if (n > 0)
			c->len += (size_t)n;
		else if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ)
			break;
		pump();
	}
	out->body = NULL;
	return -1;
}

/* The core again, with TLS: requests on one connection, and a client that does not
 * speak TLS is closed. Runs after test_close (the plain server is closed and the loop
 * has run its close callbacks). */
static void test_tls(void)
{
	char cert[64], key[64];
	snprintf(cert, sizeof cert, "/tmp/test_webd_http_server.%d.cert.pem", (int)getpid());
	snprintf(key, sizeof key, "/tmp/test_webd_http_server.%d.key.pem", (int)getpid());
	CHECK(make_cert(cert, key));
	int r0 = web_server_open(&loop, &def, &app, "127.0.0.1:0", cert, key);
	unlink(cert);
	unlink(key);
	CHECK_EQ(r0, 0);
	port = web_server_port(0);
	struct cli c;
	struct resp r;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	cli_open(&c);
	SSL *ssl = SSL_new(ctx);
	CHECK(ctx && ssl && SSL_set_fd(ssl, c.fd) == 1);
	CHECK_EQ(tls_call(ssl, do_connect, NULL, 0), 1);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(tls_request(ssl, &c, "GET /echo?q=s HTTP/1.1\r\nHost: h\r\n\r\n", &r), 200);
		CHECK_STR_CONTAINS(r.body ? r.body : "", "GET /echo q=s x-echo=- body= tls=1");
		resp_free(&r);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	cli_close(&c);
	/* Plain HTTP on the TLS port: no answer, the connection ends. */
	cli_open(&c);
	cli_sends(&c, "GET /echo HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK(cli_wait_eof(&c));
	CHECK(!memmem(c.buf, c.len, "HTTP/1.1 200", 12));
	cli_close(&c);
	settle(&web_counters.connections_active, 0);
	CHECK_EQ(web_counters.connections_active, 0);
	web_server_close();
}

/* A message to a socket that takes it is written at once (nothing left in the route's
 * queue when web_ws_send returns); when the socket takes only part, the rest is queued
 * and every message still arrives whole and in order. */
static void test_websocket_write_now(void)
{
	struct cli c;
	struct resp r;
	static char payload[65536], want[60000];
	size_t len;
	unsigned items;
	size_t bytes;
	unsigned opened = app.ws_opened;
	ws_upgrade(&c, "/ws", &r);
	CHECK_EQ(r.status, 101);
	resp_free(&r);
	settle(&app.ws_opened, opened + 1);
	struct web_ws *ws = app.last_ws;
	CHECK_EQ(web_ws_send(ws, false, "now", 3, 16, 1024 * 1024), 0);
	web_ws_queue_depth(ws, &items, &bytes);
	CHECK_EQ(items, 0u);
	CHECK_EQ(bytes, 0u);
	CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 1);
	CHECK(len == 3 && !memcmp(payload, "now", 3));
	/* The client reads nothing until the socket is full and messages wait. */
	unsigned sent = 0;
	for (; sent < 400; sent++) {
		memset(want, 'a' + sent % 26, sizeof want);
		memcpy(want, &sent, sizeof sent);
		CHECK_EQ(web_ws_send(ws, true, want, sizeof want, 1024, 64u * 1024 * 1024), 0);
		web_ws_queue_depth(ws, &items, &bytes);
		if (items > 0) {
			sent++;
			break;
		}
	}
	CHECK(items > 0);
	for (unsigned extra = 0; extra < 3; extra++, sent++) {
		memset(want, 'a' + sent % 26, sizeof want);
		memcpy(want, &sent, sizeof sent);
		CHECK_EQ(web_ws_send(ws, true, want, sizeof want, 1024, 64u * 1024 * 1024), 0);
	}
	for (unsigned i = 0; i < sent; i++) {
		memset(want, 'a' + i % 26, sizeof want);
		memcpy(want, &i, sizeof i);
		CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 2);
		CHECK(len == sizeof want && !memcmp(payload, want, len));
	}
	uint64_t until = kp_mono_ms() + WAIT_MS;
	do {
		pump();
		web_ws_queue_depth(ws, &items, &bytes);
	} while (items && kp_mono_ms() < until);
	CHECK_EQ(items, 0u);
	cli_close(&c);
}

/* A route's send queue (web_ws_send's max_items and max_bytes, keeppeek-webd(8)
 * websocket_queue): with the client not reading, messages queue up to the bound in
 * items and the one past it is refused (-ENOBUFS, counted); the same in bytes, the
 * message that fills the bound exactly accepted; and every message accepted arrives
 * whole and in order once the client reads. */
static void test_websocket_queue_bound(void)
{
	struct cli c;
	struct resp r;
	static char payload[65536], want[60000];
	static size_t sizes[512];
	size_t len, bytes;
	unsigned items, sent = 0, opened = app.ws_opened;
	ws_upgrade(&c, "/ws", &r);
	CHECK_EQ(r.status, 101);
	resp_free(&r);
	settle(&app.ws_opened, opened + 1);
	struct web_ws *ws = app.last_ws;
	/* Fill the socket until messages wait in the queue. */
	for (items = 0; items == 0 && sent < 400; sent++) {
		memset(want, 'a' + sent % 26, sizeof want);
		memcpy(want, &sent, sizeof sent);
		CHECK_EQ(web_ws_send(ws, true, want, sizeof want, 1024, 64u * 1024 * 1024), 0);
		sizes[sent] = sizeof want;
		web_ws_queue_depth(ws, &items, &bytes);
	}
	CHECK(items > 0);
	/* Items: up to the bound, then one past it. */
	const unsigned max_items = items + 5;
	uint64_t refused = web_counters.limit_rejections[WEB_LIMIT_WS_QUEUE];
	for (; items < max_items; sent++) {
		memset(want, 'a' + sent % 26, sizeof want);
		memcpy(want, &sent, sizeof sent);
		CHECK_EQ(web_ws_send(ws, true, want, 100, max_items, 64u * 1024 * 1024), 0);
		sizes[sent] = 100;
		web_ws_queue_depth(ws, &items, &bytes);
	}
	CHECK_EQ(items, max_items);
	CHECK_EQ(web_ws_send(ws, true, "past", 4, max_items, 64u * 1024 * 1024), -ENOBUFS);
	CHECK_EQ(web_counters.limit_rejections[WEB_LIMIT_WS_QUEUE], refused + 1);
	/* Bytes: a message that fills the bound exactly, then one byte past it. */
	web_ws_queue_depth(ws, &items, &bytes);
	const size_t max_bytes = bytes + 1000;
	memset(want, 'a' + sent % 26, sizeof want);
	memcpy(want, &sent, sizeof sent);
	CHECK_EQ(web_ws_send(ws, true, want, 1000, 1024, max_bytes), 0);
	sizes[sent++] = 1000;
	CHECK_EQ(web_ws_send(ws, true, "x", 1, 1024, max_bytes), -ENOBUFS);
	CHECK_EQ(web_counters.limit_rejections[WEB_LIMIT_WS_QUEUE], refused + 2);
	/* Nothing accepted is lost, nothing refused arrives. */
	for (unsigned i = 0; i < sent; i++) {
		memset(want, 'a' + i % 26, sizeof want);
		memcpy(want, &i, sizeof i);
		CHECK_EQ(ws_read(&c, payload, sizeof payload, &len), 2);
		CHECK(len == sizes[i] && !memcmp(payload, want, len));
	}
	uint64_t until = kp_mono_ms() + WAIT_MS;
	do {
		pump();
		web_ws_queue_depth(ws, &items, &bytes);
	} while (items && kp_mono_ms() < until);
	CHECK_EQ(items, 0u);
	CHECK_EQ(c.len, 0);
	cli_close(&c);
}

int main(void)
{
	kp_log_init("test_webd_http_server");
	CHECK_EQ(uv_loop_init(&loop), 0);
	CHECK_EQ(uv_timer_init(&loop, &app.later_timer), 0);
	CHECK_EQ(web_server_open(&loop, &def, &app, "127.0.0.1:0", "", ""), 0);
	port = web_server_port(0);
	CHECK(port > 0);
	RUN(test_parse_and_route);
	RUN(test_ceilings);
	RUN(test_client_ceilings);
	RUN(test_keepalive);
	RUN(test_pipelining);
	RUN(test_body_streaming);
	RUN(test_websocket);
	RUN(test_websocket_write_now);
	RUN(test_websocket_queue_bound);
	RUN(test_close);
	RUN(test_tls);
	uv_close((uv_handle_t *)&app.later_timer, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	/* Nothing of the server is left on the loop. */
	CHECK_EQ(uv_loop_close(&loop), 0);
	return TEST_EXIT();
}
