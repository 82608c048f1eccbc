/* The core's WebSockets (RFC 6455): the upgrade, the application's authentication hook
 * before on_open, frame parsing with the control-message ceiling (KP_CONTROL_MESSAGE_MAX
 * per message, fragments included), ping/pong/close, and the bounded per-socket send
 * queue of http.h. */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_conn.h"
#include "log.h"
#include "ws_frame.h"

static uint64_t next_ws_id = 1;

static bool has_token(const char *v, const char *tok)
{
	size_t n = strlen(tok);
	for (const char *p = v; p && *p;) {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - p) == n && strncasecmp(p, tok, n) == 0)
			return true;
		p = e;
	}
	return false;
}

bool ws_is_upgrade(const struct web_req *r)
{
	const char *up = web_req_header(r, "upgrade");
	const char *co = web_req_header(r, "connection");
	return up && co && has_token(up, "websocket") && has_token(co, "upgrade");
}

static void count_active(const struct web_ws *ws, int d)
{
	unsigned *n = &web_counters.ws_active[ws->route - web_def->ws_routes];
	*n = (unsigned)((int)*n + d);
}

static void auth_done(struct web_ws *ws, int status)
{
	struct conn *c = ws->c;
	if (c->closing || ws->closing)
		return;
	if (status != 0) {
		char reason[32];
		snprintf(reason, sizeof reason, "%d", status);
		web_ws_close(ws, 1008, reason);
		return;
	}
	ws->authed = true;
	ws->opened = true;
	ws->route->on_open(ws);
	conn_process(c);
}

void ws_start(struct conn *c, struct web_req *r, const struct web_ws_route *route)
{
	const char *key = web_req_header(r, "sec-websocket-key");
	const char *ver = web_req_header(r, "sec-websocket-version");
	if (!key || !ver || strcmp(ver, "13") != 0 || strlen(key) != 24) {
		c->req = r;
		c->state = CONN_HANDLER;
		r->keep_alive = false;
		web_reply(r, 426, "text/plain", "WebSocket version 13 with a key is required\n", 44,
			  "Sec-WebSocket-Version: 13\r\n");
		return;
	}
	struct web_ws *ws = calloc(1, sizeof *ws);
	if (!ws) {
		c->req = r;
		c->state = CONN_HANDLER;
		r->keep_alive = false;
		web_reply_error(r, 503, "busy", "no memory for a WebSocket");
		return;
	}
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char cat[64];
	unsigned char sha[SHA_DIGEST_LENGTH];
	char accept[32];
	int n = snprintf(cat, sizeof cat, "%s%s", key, guid);
	SHA1((const unsigned char *)cat, (size_t)n, sha);
	EVP_EncodeBlock((unsigned char *)accept, sha, SHA_DIGEST_LENGTH);
	char resp[256];
	n = snprintf(resp, sizeof resp,
		     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		     "Sec-WebSocket-Accept: %s\r\n\r\n",
		     accept);
	ws->c = c;
	ws->id = next_ws_id++;
	ws->up = r;
	ws->route = route;
	c->ws = ws;
	c->state = CONN_WS;
	conn_count_status(101);
	web_counters.ws_opened++;
	count_active(ws, 1);
	if (conn_send(c, resp, (size_t)n, NULL) < 0)
		return;
	if ((route->flags & WEB_PUBLIC) || !web_def->auth_ws)
		auth_done(ws, 0);
	else
		web_def->auth_ws(ws, route->flags, auth_done);
}

void ws_free(struct web_ws *ws)
{
	count_active(ws, -1);
	if (ws->opened)
		ws->route->on_close(ws);
	req_free(ws->up);
	free(ws->msg);
	free(ws);
}

static int send_frame(struct web_ws *ws, int op, const void *data, size_t len, bool counted)
{
	uint8_t hdr[10];
	size_t h = 2;
	hdr[0] = (uint8_t)(0x80 | op);
	if (len < 126) {
		hdr[1] = (uint8_t)len;
	} else if (len <= 0xffff) {
		hdr[1] = 126;
		hdr[2] = (uint8_t)(len >> 8);
		hdr[3] = (uint8_t)len;
		h = 4;
	} else {
		hdr[1] = 127;
		for (int i = 0; i < 8; i++)
			hdr[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		h = 10;
	}
	uint8_t *buf = malloc(h + len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, hdr, h);
	if (len)
		memcpy(buf + h, data, len);
	int r = conn_send(ws->c, buf, h + len, counted ? ws : NULL);
	free(buf);
	return r;
}

int web_ws_send(struct web_ws *ws, bool binary, const void *data, size_t len, unsigned max_items, size_t max_bytes)
{
	if (ws->closing || ws->c->closing)
		return -EPIPE;
	if (ws->q_items + 1 > max_items || ws->q_bytes + len > max_bytes) {
		web_counters.limit_rejections[WEB_LIMIT_WS_QUEUE]++;
		return -ENOBUFS;
	}
	ws->q_items++;
	ws->q_bytes += len + (len < 126 ? 2 : len <= 0xffff ? 4 : 10);
	int r = send_frame(ws, binary ? 2 : 1, data, len, true);
	if (r < 0 && !ws->c->closing) {
		ws->q_items--;
		ws->q_bytes -= len + (len < 126 ? 2 : len <= 0xffff ? 4 : 10);
	}
	return r;
}

void web_ws_close(struct web_ws *ws, int code, const char *reason)
{
	if (ws->closing || ws->c->closing)
		return;
	ws->closing = true;
	uint8_t p[125];
	size_t rl = reason ? strlen(reason) : 0;
	if (rl > sizeof p - 2)
		rl = sizeof p - 2;
	p[0] = (uint8_t)(code >> 8);
	p[1] = (uint8_t)code;
	if (rl)
		memcpy(p + 2, reason, rl);
	if (send_frame(ws, 8, p, rl + 2, false) < 0)
		return;
	/* The application is done with it now, not when the client has answered the close
	 * (a revoked viewer's video stops at once): on_close runs here, once. */
	if (ws->opened) {
		ws->opened = false;
		ws->route->on_close(ws);
	}
	conn_end(ws->c);
}

static void protocol_error(struct web_ws *ws, int code, const char *why)
{
	kp_info("client %s: WebSocket %s closed: %s", ws->c->addr, ws->route->path, why);
	web_ws_close(ws, code, why);
}

/* One complete frame at c->in, or nothing (0 when incomplete). Returns bytes used. */
static size_t one_frame(struct conn *c, struct web_ws *ws)
{
	struct ws_frame fr;
	switch (ws_frame_parse((const uint8_t *)c->in, c->in_len, KP_CONTROL_MESSAGE_MAX - ws->msg_len, &fr)) {
	case WSF_INCOMPLETE:
		return 0;
	case WSF_RESERVED:
		protocol_error(ws, 1002, "reserved bits set");
		return 0;
	case WSF_UNMASKED:
		protocol_error(ws, 1002, "unmasked client frame");
		return 0;
	case WSF_BAD_CONTROL:
		protocol_error(ws, 1002, "bad control frame");
		return 0;
	case WSF_TOO_BIG:
		web_counters.limit_rejections[WEB_LIMIT_WS_MESSAGE]++;
		protocol_error(ws, 1009, "message over 65536 bytes");
		return 0;
	case WSF_OK:
		break;
	}
	int op = fr.op;
	bool fin = fr.fin;
	size_t len = fr.payload_len;
	uint8_t *payload = (uint8_t *)c->in + fr.header_len;
	ws_frame_unmask(payload, len, fr.mask);
	size_t used = fr.header_len + len;
	switch (op) {
	case 0x9:
		send_frame(ws, 0xA, payload, (size_t)len, false);
		return used;
	case 0xA:
		return used;
	case 0x8: {
		int code = len >= 2 ? payload[0] << 8 | payload[1] : 1000;
		if (!ws->closing) {
			ws->closing = true;
			uint8_t p[2] = {(uint8_t)(code >> 8), (uint8_t)code};
			if (send_frame(ws, 8, p, 2, false) == 0)
				conn_end(c);
		}
		return used;
	}
	case 0x1:
	case 0x2:
		if (ws->msg_op) {
			protocol_error(ws, 1002, "new message inside a fragmented one");
			return 0;
		}
		ws->msg_op = op;
		break;
	case 0x0:
		if (!ws->msg_op) {
			protocol_error(ws, 1002, "continuation without a message");
			return 0;
		}
		break;
	default:
		protocol_error(ws, 1002, "unknown opcode");
		return 0;
	}
	if (fin && ws->msg_len == 0) {
		int mop = ws->msg_op;
		ws->msg_op = 0;
		ws->route->on_message(ws, mop == 2, payload, (size_t)len);
		return used;
	}
	if (!ws->msg) {
		ws->msg = malloc(KP_CONTROL_MESSAGE_MAX);
		if (!ws->msg) {
			protocol_error(ws, 1011, "no memory");
			return 0;
		}
	}
	memcpy(ws->msg + ws->msg_len, payload, (size_t)len);
	ws->msg_len += (size_t)len;
	if (fin) {
		int mop = ws->msg_op;
		size_t ml = ws->msg_len;
		ws->msg_op = 0;
		ws->msg_len = 0;
		ws->route->on_message(ws, mop == 2, ws->msg, ml);
	}
	return used;
}

void ws_input(struct conn *c)
{
	while (!c->closing && c->ws && c->ws->authed && !c->ws->closing) {
		size_t used = one_frame(c, c->ws);
		if (!used || c->closing)
			return;
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
	}
}

void *web_ws_app(const struct web_ws *ws)
{
	(void)ws;
	return web_app;
}

uint64_t web_ws_id(const struct web_ws *ws)
{
	return ws->id;
}

struct web_ws *web_ws_find(uint64_t id)
{
	for (struct conn *c = conn_list; c; c = c->next)
		if (c->ws && c->ws->id == id && !c->closing)
			return c->ws;
	return NULL;
}

const struct web_principal *web_ws_principal(const struct web_ws *ws)
{
	return web_req_principal(ws->up);
}

unsigned web_ws_close_principal(const char *name, int code, const char *reason)
{
	unsigned n = 0;
	for (struct conn *c = conn_list, *next; c; c = next) {
		next = c->next;
		const struct web_principal *p = c->ws && c->ws->authed ? web_ws_principal(c->ws) : NULL;
		if (p && !c->closing && !strcmp(p->name, name)) {
			web_ws_close(c->ws, code, reason);
			n++;
		}
	}
	return n;
}

const char *web_ws_client_addr(const struct web_ws *ws)
{
	return ws->c->addr;
}

void web_ws_set_user(struct web_ws *ws, void *user)
{
	ws->user = user;
}

void *web_ws_user(const struct web_ws *ws)
{
	return ws->user;
}

void web_ws_queue_depth(const struct web_ws *ws, unsigned *items, size_t *bytes)
{
	*items = ws->q_items;
	*bytes = ws->q_bytes;
}

const char *web_ws_header(const struct web_ws *ws, const char *name)
{
	return web_req_header(ws->up, name);
}

void web_ws_set_principal(struct web_ws *ws, const struct web_principal *p)
{
	web_req_set_principal(ws->up, p);
}

const char *web_ws_path(const struct web_ws *ws)
{
	return ws->route->path;
}
