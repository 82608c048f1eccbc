/* A hub's signaling WebSocket to a site (hub_ws.h): connect (hub_fetch.c), send the
 * upgrade with the site's token, check the 101 and its accept key, then masked text
 * frames out and the site's frames in; pings answered, a close or any protocol error
 * ends the link with a sentence for the browser. The upgrade must be answered within
 * the site's timeout. */
#include "hub_ws.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hub_fetch.h"
#include "hub_ws_frame.h"
#include "kp_limits.h"
#include "log.h"

#define HUB_WS_HEAD_MAX 8192
#define HUB_WS_IN_MAX   (KP_CONTROL_MESSAGE_MAX + HUB_WS_HEAD_MAX)

enum ws_state { WS_CONNECTING, WS_UPGRADING, WS_OPEN, WS_DONE };

struct hub_ws {
	enum ws_state state;
	const struct hub_ws_ops *ops;
	void *arg;
	char name[KP_SITE_NAME_MAX + 1];
	char request[2048];
	int request_len;
	char accept[29];
	unsigned timeout_ms;
	struct hub_get *connecting;
	struct hub_conn *conn;
	int fd; /* a duplicate of the connection's socket, for our own poll */
	uv_poll_t poll;
	uv_timer_t timer;
	unsigned open_handles;
	uint8_t *out;
	size_t out_len, out_cap;
	uint8_t in[HUB_WS_IN_MAX];
	size_t in_len;
	char msg[KP_CONTROL_MESSAGE_MAX];
	size_t msg_len;
	bool in_message;
};

static uv_loop_t *loop;

void hub_ws_init(uv_loop_t *l)
{
	loop = l;
}

static void handle_closed(uv_handle_t *h)
{
	struct hub_ws *ws = h->data;
	if (--ws->open_handles)
		return;
	if (ws->fd >= 0)
		close(ws->fd);
	hub_conn_close(ws->conn);
	free(ws->out);
	free(ws);
}

/* Everything released; the callback told first unless quiet. */
static void finish(struct hub_ws *ws, const char *why, bool quiet)
{
	if (ws->state == WS_DONE)
		return;
	ws->state = WS_DONE;
	hub_get_cancel(ws->connecting);
	ws->connecting = NULL;
	if (!quiet) {
		kp_warn("hub: signaling link to site %s ended: %s", ws->name, why);
		ws->ops->on_close(ws->arg, why);
	}
	uv_timer_stop(&ws->timer);
	if (ws->fd >= 0)
		uv_poll_stop(&ws->poll);
	uv_close((uv_handle_t *)&ws->timer, handle_closed);
	if (ws->fd >= 0)
		uv_close((uv_handle_t *)&ws->poll, handle_closed);
}

static int append(struct hub_ws *ws, const void *p, size_t n)
{
	if (n > HUB_WS_QUEUE_BYTES - ws->out_len)
		return -ENOBUFS;
	if (ws->out_len + n > ws->out_cap) {
		size_t cap = ws->out_cap ? ws->out_cap * 2 : 4096;
		while (cap < ws->out_len + n)
			cap *= 2;
		uint8_t *nb = realloc(ws->out, cap);
		if (!nb)
			return -ENOMEM;
		ws->out = nb;
		ws->out_cap = cap;
	}
	memcpy(ws->out + ws->out_len, p, n);
	ws->out_len += n;
	return 0;
}

static int frame(struct hub_ws *ws, int op, const void *p, size_t n)
{
	uint8_t head[14], mask[4];
	if (getrandom(mask, sizeof mask, 0) != (ssize_t)sizeof mask)
		return -EIO;
	size_t h = hub_ws_frame_header(head, op, n, mask);
	if (h + n > HUB_WS_QUEUE_BYTES - ws->out_len)
		return -ENOBUFS;
	size_t at = ws->out_len;
	if (append(ws, head, h) < 0 || append(ws, p, n) < 0) {
		ws->out_len = at;
		return -ENOMEM;
	}
	hub_ws_mask(ws->out + at + h, n, mask);
	return 0;
}

static void on_poll(uv_poll_t *p, int status, int events);

static void want(struct hub_ws *ws)
{
	if (ws->state == WS_DONE || ws->fd < 0)
		return;
	int ev = UV_READABLE | (ws->out_len && ws->state != WS_CONNECTING ? UV_WRITABLE : 0);
	int r = uv_poll_start(&ws->poll, ev, on_poll);
	if (r < 0)
		finish(ws, "cannot watch the connection", false);
}

static void flush(struct hub_ws *ws)
{
	while (ws->out_len) {
		ssize_t n = hub_conn_send(ws->conn, ws->out, ws->out_len);
		if (n == -EAGAIN)
			break;
		if (n <= 0) {
			finish(ws, "the connection to the site broke", false);
			return;
		}
		memmove(ws->out, ws->out + n, ws->out_len - (size_t)n);
		ws->out_len -= (size_t)n;
	}
	want(ws);
}

/* Whole frames of in[] handled; false when the link ended. */
static bool frames(struct hub_ws *ws)
{
	size_t at = 0;
	while (ws->state == WS_OPEN) {
		struct hub_ws_frame f;
		int r = hub_ws_frame_parse(ws->in + at, ws->in_len - at, KP_CONTROL_MESSAGE_MAX, &f);
		if (r == 0)
			break;
		if (r < 0) {
			finish(ws,
			       r == -3 ? "the site sent a message larger than 64 KiB" : "the site broke the protocol",
			       false);
			return false;
		}
		const uint8_t *pl = ws->in + at + f.header_len;
		at += f.header_len + f.payload_len;
		if (f.op == 8) {
			finish(ws, "the site closed the link", false);
			return false;
		}
		if (f.op == 9) {
			if (frame(ws, 10, pl, f.payload_len) < 0) {
				finish(ws, "the link's queue is full", false);
				return false;
			}
			continue;
		}
		if (f.op == 10)
			continue;
		if (f.op == 2 || (f.op == 1 && ws->in_message) || (f.op == 0 && !ws->in_message) ||
		    (f.op != 0 && f.op != 1)) {
			finish(ws, "the site sent a frame signaling does not use", false);
			return false;
		}
		if (f.payload_len > sizeof ws->msg - ws->msg_len) {
			finish(ws, "the site sent a message larger than 64 KiB", false);
			return false;
		}
		memcpy(ws->msg + ws->msg_len, pl, f.payload_len);
		ws->msg_len += f.payload_len;
		ws->in_message = !f.fin;
		if (f.fin) {
			ws->ops->on_message(ws->arg, ws->msg, ws->msg_len);
			ws->msg_len = 0;
			if (ws->state != WS_OPEN)
				return false;
		}
	}
	memmove(ws->in, ws->in + at, ws->in_len - at);
	ws->in_len -= at;
	return true;
}

static void readable(struct hub_ws *ws)
{
	for (;;) {
		ssize_t n = hub_conn_recv(ws->conn, ws->in + ws->in_len, sizeof ws->in - ws->in_len);
		if (n == -EAGAIN)
			return;
		if (n <= 0) {
			finish(ws, n == 0 ? "the site closed the connection" : "the connection to the site broke",
			       false);
			return;
		}
		ws->in_len += (size_t)n;
		if (ws->state == WS_UPGRADING) {
			int status = 0;
			int h = hub_ws_answer((const char *)ws->in, ws->in_len, HUB_WS_HEAD_MAX, ws->accept, &status);
			if (h == 0)
				continue;
			if (h < 0) {
				char why[96];
				snprintf(why, sizeof why, "the site refused the signaling link (HTTP %d)", status);
				finish(ws, status == 401 || status == 403 ? "the site refused the hub's token" : why,
				       false);
				return;
			}
			memmove(ws->in, ws->in + h, ws->in_len - (size_t)h);
			ws->in_len -= (size_t)h;
			ws->state = WS_OPEN;
			uv_timer_stop(&ws->timer);
			flush(ws);
			if (ws->state != WS_OPEN)
				return;
		}
		if (!frames(ws))
			return;
		if (ws->in_len == sizeof ws->in) {
			finish(ws, "the site sent a message larger than 64 KiB", false);
			return;
		}
	}
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct hub_ws *ws = p->data;
	if (status < 0) {
		finish(ws, "the connection to the site broke", false);
		return;
	}
	if (events & UV_READABLE)
		readable(ws);
	if (ws->state != WS_DONE && (events & UV_WRITABLE))
		flush(ws);
}

static void on_timeout(uv_timer_t *t)
{
	finish(t->data, "timed out", false);
}

static void on_connected(void *arg, struct hub_conn *conn, int fd, const char *why)
{
	struct hub_ws *ws = arg;
	ws->connecting = NULL;
	if (!conn) {
		finish(ws, why, false);
		return;
	}
	ws->conn = conn;
	ws->fd = dup(fd);
	if (ws->fd < 0 || uv_poll_init(loop, &ws->poll, ws->fd) < 0) {
		if (ws->fd >= 0)
			close(ws->fd);
		ws->fd = -1;
		finish(ws, "cannot watch the connection", false);
		return;
	}
	ws->poll.data = ws;
	ws->open_handles++;
	/* The upgrade goes before every message queued meanwhile. */
	size_t queued = ws->out_len;
	if (append(ws, ws->request, (size_t)ws->request_len) < 0) {
		finish(ws, "the link's queue is full", false);
		return;
	}
	memmove(ws->out + ws->request_len, ws->out, queued);
	memcpy(ws->out, ws->request, (size_t)ws->request_len);
	ws->state = WS_UPGRADING;
	flush(ws);
}

struct hub_ws *hub_ws_open(const kp_HubSite *site, unsigned *inflight, unsigned timeout_ms,
			   const struct hub_ws_ops *ops, void *arg, char *why, size_t why_len)
{
	struct hub_ws *ws = calloc(1, sizeof *ws);
	if (!ws) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	ws->ops = ops;
	ws->arg = arg;
	ws->fd = -1;
	ws->timeout_ms = timeout_ms;
	snprintf(ws->name, sizeof ws->name, "%s", site->name);
	/* host and path of http(s)://HOST[:PORT][/PATH] (checked by the configuration). */
	const char *h = strstr(site->url, "://");
	h = h ? h + 3 : site->url;
	size_t hl = strcspn(h, "/");
	char host[256], path[512];
	const char *rest = h + hl;
	size_t rl = strlen(rest);
	while (rl && rest[rl - 1] == '/')
		rl--;
	uint8_t key[16];
	if (hl >= sizeof host || rl + sizeof "/api/v1/rtc" > sizeof path ||
	    getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
		snprintf(why, why_len, "bad site URL");
		free(ws);
		return NULL;
	}
	snprintf(host, sizeof host, "%.*s", (int)hl, h);
	snprintf(path, sizeof path, "%.*s/api/v1/rtc", (int)rl, rest);
	ws->request_len = hub_ws_request(ws->request, sizeof ws->request, host, path, site->token, key, ws->accept);
	if (ws->request_len < 0 || uv_timer_init(loop, &ws->timer) < 0) {
		snprintf(why, why_len, "cannot prepare the signaling link");
		free(ws);
		return NULL;
	}
	ws->timer.data = ws;
	ws->open_handles = 1;
	uv_timer_start(&ws->timer, on_timeout, timeout_ms, 0);
	ws->connecting = hub_conn_start(site, inflight, timeout_ms, on_connected, ws, why, why_len);
	if (!ws->connecting) {
		ws->state = WS_DONE;
		uv_close((uv_handle_t *)&ws->timer, handle_closed);
		return NULL;
	}
	return ws;
}

int hub_ws_send(struct hub_ws *ws, const char *text, size_t len)
{
	if (len > KP_CONTROL_MESSAGE_MAX)
		return -EMSGSIZE;
	if (ws->state == WS_DONE)
		return -ENOTCONN;
	int r = frame(ws, 1, text, len);
	if (r == 0 && ws->state == WS_OPEN)
		flush(ws);
	return r;
}

void hub_ws_close(struct hub_ws *ws)
{
	if (!ws)
		return;
	if (ws->state == WS_OPEN) {
		static const uint8_t bye[2] = {0x03, 0xe8}; /* 1000 */
		if (frame(ws, 8, bye, sizeof bye) == 0)
			flush(ws);
	}
	finish(ws, "closed", true);
}
