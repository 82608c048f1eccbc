/* /api/v1/rtc: relays WebRTC signaling between browser WebSockets and rtcd. Each text
 * message (<= KP_CONTROL_MESSAGE_MAX) goes to rtcd as an RtcSignal tail with the
 * WebSocket's session, principal, role and client address; rtcd's RtcSignal tails go
 * back as text through a bounded send queue. The session number is the WebSocket id
 * XOR a random per-start mask, so a restarted webd never reuses a session rtcd still
 * holds. An RtcSignal with session 0 and close set from rtcd means "rtcd (re)started:
 * every session is gone": every signaling WebSocket is then closed (1012) so the
 * browser reconnects. rtcd's RtcMedia tails (live fMP4 for the MSE fallback, decision
 * 0016) go out as binary messages under a smaller bound of the same queue: a piece that
 * does not fit is dropped, counted, and so is every later piece of its MSE slot until one
 * that starts a GOP, so a slow browser never blocks rtcd or other viewers. See
 * docs/rtc-signaling.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "kp_limits.h"
#include "log.h"
#include "webd.h"

struct webd_mse_metrics webd_mse_metrics;

struct relay_ws {
	uint64_t ws_id;
	uint32_t mse_dropping; /* bit per MSE slot: waiting for a piece that starts a GOP */
	void *hub;             /* a hub's routes of this page's site sessions (struct webd) */
	struct relay_ws *prev, *next;
};

static struct relay_ws *relay_list;
static uint64_t session_mask;
static bool have_mask;

static uint64_t mask(void)
{
	while (!have_mask) {
		uint64_t m;
		ssize_t n = getrandom(&m, sizeof m, 0);
		if (n == (ssize_t)sizeof m && m != 0) {
			session_mask = m;
			have_mask = true;
		} else if (n < 0 && errno != EINTR) {
			kp_err("rtc relay: getrandom for the session mask failed: %s", strerror(errno));
			abort();
		}
	}
	return session_mask;
}

static uint64_t session_of(const struct web_ws *ws)
{
	return web_ws_id(ws) ^ mask();
}

static void fill_signal(struct web_ws *ws, kp_Envelope *env)
{
	const struct web_principal *p = web_ws_principal(ws);
	const char *addr = web_ws_client_addr(ws);
	env->which_msg = kp_Envelope_rtc_signal_tag;
	kp_RtcSignal *s = &env->msg.rtc_signal;
	s->session = session_of(ws);
	if (p) {
		snprintf(s->principal, sizeof s->principal, "%s", p->name);
		s->role = p->role;
	}
	snprintf(s->client_addr, sizeof s->client_addr, "%s", addr ? addr : "");
}

static void send_error(struct web_ws *ws, const char *code, const char *message)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "{\"type\":\"error\",\"code\":\"%s\",\"message\":\"%s\"}", code, message);
	if (n < 0 || (size_t)n >= sizeof buf)
		return;
	int r = web_ws_send(ws, false, buf, (size_t)n, RELAY_QUEUE_ITEMS, RELAY_QUEUE_BYTES);
	if (r < 0)
		kp_warn("rtc relay: error message to WebSocket %llu not queued: %s", (unsigned long long)web_ws_id(ws),
			strerror(-r));
}

void webd_rtc_open(struct web_ws *ws)
{
	struct relay_ws *rw = calloc(1, sizeof *rw);
	if (!rw) {
		kp_err("rtc relay: no memory for WebSocket %llu", (unsigned long long)web_ws_id(ws));
		web_ws_close(ws, 1011, "out of memory");
		return;
	}
	rw->ws_id = web_ws_id(ws);
	rw->next = relay_list;
	if (relay_list)
		relay_list->prev = rw;
	relay_list = rw;
	web_ws_set_user(ws, rw);

	kp_Envelope env = kp_Envelope_init_zero;
	fill_signal(ws, &env);
	env.msg.rtc_signal.open = true;
	struct webd *d = web_ws_app(ws);
	int r = kp_worker_send_peer(d->worker, kp_Peer_PEER_RTCD, &env, NULL, 0);
	if (r < 0)
		kp_warn("rtc relay: open of WebSocket %llu not sent to rtcd: %s", (unsigned long long)rw->ws_id,
			strerror(-r));
}

void webd_rtc_message(struct web_ws *ws, bool binary, const uint8_t *data, size_t len)
{
	if (binary) {
		web_ws_close(ws, 1003, "signaling is JSON text");
		return;
	}
	if (len > KP_CONTROL_MESSAGE_MAX) {
		web_ws_close(ws, 1009, "signaling message larger than 64 KiB");
		return;
	}
	struct webd *d = web_ws_app(ws);
	struct relay_ws *rw = web_ws_user(ws);
	if (rw && d->rtc_divert && d->rtc_divert(ws, &rw->hub, data, len))
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	fill_signal(ws, &env);
	int r = kp_worker_send_peer(d->worker, kp_Peer_PEER_RTCD, &env, data, len);
	if (r < 0) {
		kp_warn("rtc relay: message of WebSocket %llu not sent to rtcd: %s", (unsigned long long)web_ws_id(ws),
			strerror(-r));
		send_error(ws, "unavailable", "The video service is not reachable right now; retrying.");
	}
}

void webd_rtc_close(struct web_ws *ws)
{
	struct relay_ws *rw = web_ws_user(ws);
	kp_Envelope env = kp_Envelope_init_zero;
	fill_signal(ws, &env);
	env.msg.rtc_signal.close = true;
	struct webd *d = web_ws_app(ws);
	int r = kp_worker_send_peer(d->worker, kp_Peer_PEER_RTCD, &env, NULL, 0);
	if (r < 0 && r != -ENOTCONN)
		kp_warn("rtc relay: close of WebSocket %llu not sent to rtcd: %s", (unsigned long long)web_ws_id(ws),
			strerror(-r));
	if (!rw)
		return;
	if (d->rtc_divert_end)
		d->rtc_divert_end(rw->hub);
	if (rw->prev)
		rw->prev->next = rw->next;
	else
		relay_list = rw->next;
	if (rw->next)
		rw->next->prev = rw->prev;
	web_ws_set_user(ws, NULL);
	free(rw);
}

/* rtcd restarted: close every signaling WebSocket; on_close unlinks each. */
static void close_all(void)
{
	struct relay_ws *rw = relay_list;
	while (rw) {
		struct relay_ws *next = rw->next;
		struct web_ws *ws = web_ws_find(rw->ws_id);
		if (ws)
			web_ws_close(ws, 1012, "video service restarted");
		rw = next;
	}
}

void webd_rtc_on_signal(struct webd *d, struct kp_ipc_frame *f)
{
	const kp_RtcSignal *s = &f->env->msg.rtc_signal;
	if (s->session == 0) {
		if (s->close) {
			kp_notice("rtc relay: rtcd started; closing signaling WebSockets so browsers reconnect");
			close_all();
		}
		return;
	}
	struct web_ws *ws = web_ws_find(s->session ^ mask());
	if (!ws || !web_ws_user(ws)) {
		if (s->close)
			return;
		/* The WebSocket is gone: tell rtcd so it frees the session. */
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_rtc_signal_tag;
		env.msg.rtc_signal.session = s->session;
		env.msg.rtc_signal.close = true;
		int r = kp_worker_send_peer(d->worker, kp_Peer_PEER_RTCD, &env, NULL, 0);
		if (r < 0)
			kp_warn("rtc relay: close of a stale session not sent to rtcd: %s", strerror(-r));
		return;
	}
	if (f->tail_len > 0) {
		if (f->tail_len > KP_CONTROL_MESSAGE_MAX) {
			kp_warn("rtc relay: rtcd sent a %zu-byte signaling message; dropped", f->tail_len);
			return;
		}
		int r = web_ws_send(ws, false, f->tail, f->tail_len, RELAY_QUEUE_ITEMS, RELAY_QUEUE_BYTES);
		if (r < 0) {
			kp_warn("rtc relay: WebSocket %llu does not drain its signaling (%s); closing it",
				(unsigned long long)web_ws_id(ws), strerror(-r));
			web_ws_close(ws, 1008, "signaling queue full");
			return;
		}
	}
	if (s->close)
		web_ws_close(ws, 1000, "video session ended");
}

void webd_rtc_on_media(struct kp_ipc_frame *f)
{
	const kp_RtcMedia *m = &f->env->msg.rtc_media;
	struct web_ws *ws = web_ws_find(m->session ^ mask());
	struct relay_ws *rw = ws ? web_ws_user(ws) : NULL;
	if (!rw || m->slot >= 32 || f->tail_len == 0)
		return;
	uint32_t bit = 1u << m->slot;
	if ((rw->mse_dropping & bit) && !m->keyframe) {
		webd_mse_metrics.dropped++;
		return;
	}
	int r = web_ws_send(ws, true, f->tail, f->tail_len, RELAY_MSE_ITEMS, RELAY_MSE_BYTES);
	if (r < 0) {
		if (!(rw->mse_dropping & bit))
			kp_info("rtc relay: WebSocket %llu is slow; its MSE slot %u skips to the next keyframe",
				(unsigned long long)web_ws_id(ws), (unsigned)m->slot);
		rw->mse_dropping |= bit;
		webd_mse_metrics.dropped++;
		return;
	}
	rw->mse_dropping &= ~bit;
	webd_mse_metrics.pieces++;
	webd_mse_metrics.bytes += f->tail_len;
}

void webd_rtc_metrics(char *buf, size_t len)
{
	snprintf(buf, len,
		 "# TYPE keeppeek_webd_mse_pieces_total counter\nkeeppeek_webd_mse_pieces_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mse_bytes_total counter\nkeeppeek_webd_mse_bytes_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mse_dropped_total counter\nkeeppeek_webd_mse_dropped_total %" PRIu64 "\n",
		 webd_mse_metrics.pieces, webd_mse_metrics.bytes, webd_mse_metrics.dropped);
}
