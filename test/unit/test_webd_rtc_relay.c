/* webd/rtc_relay.c's send queue towards a browser, one past each bound (keeppeek-webd(8)
 * LIMITS, websocket_queue): MSE pieces are taken up to RELAY_MSE_ITEMS messages and
 * RELAY_MSE_BYTES, the one past is dropped and counted (keeppeek_webd_mse_dropped_total)
 * and so is every later piece of its slot until one that starts a GOP, while signaling
 * text still has room up to RELAY_QUEUE_ITEMS messages and RELAY_QUEUE_BYTES; text past
 * those closes the WebSocket (1008). The WebSocket layer is a fake of this file that
 * keeps the queue with the HTTP core's rule (web_ws_send; the core's own test checks it
 * on a real socket) and records every message it took, so that nothing taken is lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "test.h"
#include "webd.h"

#define NMSG 1024

struct web_ws {
	uint64_t id;
	void *user;
	struct webd *app;
	unsigned q_items;
	size_t q_bytes;
	int closed; /* its close code, 0 while open */
	unsigned nmsg;
	bool binary[NMSG];
	size_t len[NMSG];
	uint32_t tag[NMSG]; /* the first bytes after the piece's sid, or of the text */
};

static struct web_ws the_ws = {.id = 7};
static struct webd app;

/* ---- the fake WebSocket layer and link ---- */

void *web_ws_app(const struct web_ws *ws)
{
	return ws->app;
}

uint64_t web_ws_id(const struct web_ws *ws)
{
	return ws->id;
}

struct web_ws *web_ws_find(uint64_t id)
{
	return id == the_ws.id && !the_ws.closed ? &the_ws : NULL;
}

const struct web_principal *web_ws_principal(const struct web_ws *ws)
{
	(void)ws;
	return NULL;
}

const char *web_ws_client_addr(const struct web_ws *ws)
{
	(void)ws;
	return "127.0.0.1";
}

void web_ws_set_user(struct web_ws *ws, void *user)
{
	ws->user = user;
}

void *web_ws_user(const struct web_ws *ws)
{
	return ws->user;
}

/* The core's rule (webd/http/http_ws.c): the message is refused when the queue would
 * pass max_items, or its bytes plus this message's would pass max_bytes. */
int web_ws_send(struct web_ws *ws, bool binary, const void *data, size_t len, unsigned max_items, size_t max_bytes)
{
	if (ws->closed)
		return -EPIPE;
	if (ws->q_items + 1 > max_items || ws->q_bytes + len > max_bytes)
		return -ENOBUFS;
	CHECK(ws->nmsg < NMSG);
	if (ws->nmsg >= NMSG)
		return -ENOBUFS;
	ws->q_items++;
	ws->q_bytes += len + (len < 126 ? 2 : len <= 0xffff ? 4 : 10);
	uint32_t tag = 0;
	memcpy(&tag, (const uint8_t *)data + (binary ? 2 : 0), sizeof tag);
	ws->binary[ws->nmsg] = binary;
	ws->len[ws->nmsg] = len;
	ws->tag[ws->nmsg++] = tag;
	return 0;
}

void web_ws_close(struct web_ws *ws, int code, const char *reason)
{
	(void)reason;
	if (!ws->closed)
		ws->closed = code;
}

/* The link to rtcd: the session number of the WebSocket, as rtcd is told it. */
static uint64_t sess;

int kp_worker_send_peer(struct kp_worker *w, kp_Peer to, const kp_Envelope *env, const void *tail, size_t len)
{
	(void)w;
	(void)tail;
	(void)len;
	CHECK_EQ(to, kp_Peer_PEER_RTCD);
	CHECK_EQ(env->which_msg, kp_Envelope_rtc_signal_tag);
	sess = env->msg.rtc_signal.session;
	return 0;
}

/* ---- the test ---- */

static uint8_t *buf;

/* A piece of len bytes from rtcd for slot: sid "m", then the tag. */
static void media(unsigned slot, bool key, size_t len, uint32_t tag)
{
	buf[0] = 1;
	buf[1] = 'm';
	memcpy(buf + 2, &tag, sizeof tag);
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_rtc_media_tag;
	env.msg.rtc_media.session = sess;
	env.msg.rtc_media.slot = slot;
	env.msg.rtc_media.keyframe = key;
	struct kp_ipc_frame f = {.env = &env, .tail = buf, .tail_len = len};
	webd_rtc_on_media(&f);
}

/* A signaling message of len bytes from rtcd, starting with the tag. */
static void text(size_t len, uint32_t tag)
{
	memset(buf, ' ', len);
	memcpy(buf, &tag, sizeof tag);
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_rtc_signal_tag;
	env.msg.rtc_signal.session = sess;
	struct kp_ipc_frame f = {.env = &env, .tail = buf, .tail_len = len};
	webd_rtc_on_signal(&app, &f);
}

/* The browser read everything queued. */
static void drain(void)
{
	the_ws.q_items = 0;
	the_ws.q_bytes = 0;
}

static void open_ws(void)
{
	if (the_ws.user)
		webd_rtc_close(&the_ws);
	the_ws = (struct web_ws){.id = 7, .app = &app};
	sess = 0;
	webd_rtc_open(&the_ws);
	CHECK(the_ws.user != NULL);
	CHECK(sess != 0);
}

/* Messages taken: each tag in order, binary or not. */
static void check_taken(unsigned from, unsigned n, bool binary, uint32_t tag0)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++)
		bad += the_ws.binary[from + i] != binary || the_ws.tag[from + i] != tag0 + i;
	CHECK_EQ(bad, 0);
}

/* Items: RELAY_MSE_ITEMS pieces taken, the next dropped and counted; signaling text
 * still fits up to RELAY_QUEUE_ITEMS, and the one past closes the WebSocket. */
static void test_items(void)
{
	open_ws();
	uint64_t dropped = webd_mse_metrics.dropped, pieces = webd_mse_metrics.pieces;
	for (unsigned i = 0; i < RELAY_MSE_ITEMS; i++)
		media(0, i == 0, 100, 1000 + i);
	CHECK_EQ(the_ws.nmsg, RELAY_MSE_ITEMS);
	CHECK_EQ(webd_mse_metrics.pieces, pieces + RELAY_MSE_ITEMS);
	CHECK_EQ(webd_mse_metrics.dropped, dropped);
	media(0, false, 100, 9999);
	CHECK_EQ(the_ws.nmsg, RELAY_MSE_ITEMS);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 1);
	/* Another slot is refused too (the bound is the WebSocket's), and text is not. */
	media(1, true, 100, 9999);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 2);
	for (unsigned i = RELAY_MSE_ITEMS; i < RELAY_QUEUE_ITEMS; i++)
		text(64, 1000 + i);
	CHECK_EQ(the_ws.nmsg, RELAY_QUEUE_ITEMS);
	CHECK_EQ(the_ws.closed, 0);
	check_taken(0, RELAY_MSE_ITEMS, true, 1000);
	check_taken(RELAY_MSE_ITEMS, RELAY_QUEUE_ITEMS - RELAY_MSE_ITEMS, false, 1000 + RELAY_MSE_ITEMS);
	text(64, 9999);
	CHECK_EQ(the_ws.nmsg, RELAY_QUEUE_ITEMS);
	CHECK_EQ(the_ws.closed, 1008);
}

/* The dropping slot skips to a piece that starts a GOP, with room again or not. */
static void test_resume(void)
{
	open_ws();
	for (unsigned i = 0; i < RELAY_MSE_ITEMS; i++)
		media(0, i == 0, 100, 1000 + i);
	uint64_t dropped = webd_mse_metrics.dropped;
	media(0, false, 100, 9999);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 1);
	drain();
	media(0, false, 100, 9999);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 2);
	CHECK_EQ(the_ws.nmsg, RELAY_MSE_ITEMS);
	media(0, true, 100, 5000);
	media(0, false, 100, 5001);
	CHECK_EQ(the_ws.nmsg, RELAY_MSE_ITEMS + 2);
	check_taken(RELAY_MSE_ITEMS, 2, true, 5000);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 2);
}

/* Bytes: pieces up to RELAY_MSE_BYTES, a piece of exactly rtcd's largest taken into an
 * empty queue; signaling text up to RELAY_QUEUE_BYTES. */
static void test_bytes(void)
{
	open_ws();
	uint64_t dropped = webd_mse_metrics.dropped;
	media(0, true, RELAY_MSE_BYTES, 1000);
	CHECK_EQ(the_ws.nmsg, 1);
	CHECK_EQ(webd_mse_metrics.dropped, dropped);
	media(0, true, 8, 9999);
	CHECK_EQ(the_ws.nmsg, 1);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 1);
	drain();
	/* Half the bound twice: the second fills it exactly (the first counted with its
	 * 10-byte frame header), and then no byte more fits. */
	media(0, true, RELAY_MSE_BYTES / 2, 1001);
	media(0, false, RELAY_MSE_BYTES / 2 - 10, 1002);
	CHECK_EQ(the_ws.nmsg, 3);
	media(0, false, 1, 9999);
	CHECK_EQ(the_ws.nmsg, 3);
	CHECK_EQ(webd_mse_metrics.dropped, dropped + 2);
	/* Text: the rest of RELAY_QUEUE_BYTES in signaling messages of the largest size. */
	size_t room = RELAY_QUEUE_BYTES - the_ws.q_bytes;
	unsigned n = 0;
	while (room > KP_CONTROL_MESSAGE_MAX + 10) {
		text(KP_CONTROL_MESSAGE_MAX, 2000 + n++);
		room -= KP_CONTROL_MESSAGE_MAX + 10;
	}
	if (room > KP_CONTROL_MESSAGE_MAX) {
		text(1000, 2000 + n++);
		room -= 1000 + 4;
	}
	text(room, 2000 + n++);
	CHECK_EQ(the_ws.q_bytes - (room < 126 ? 2 : room <= 0xffff ? 4 : 10), RELAY_QUEUE_BYTES);
	CHECK_EQ(the_ws.nmsg, 3 + n);
	CHECK_EQ(the_ws.closed, 0);
	check_taken(3, n, false, 2000);
	text(1, 9999);
	CHECK_EQ(the_ws.nmsg, 3 + n);
	CHECK_EQ(the_ws.closed, 1008);
}

int main(void)
{
	kp_log_init("test_webd_rtc_relay");
	buf = calloc(1, RELAY_QUEUE_BYTES + 1);
	CHECK(buf != NULL);
	if (!buf)
		return 1;
	RUN(test_items);
	RUN(test_resume);
	RUN(test_bytes);
	free(buf);
	return TEST_EXIT();
}
