/* rtcd/mse.c's ceilings, one past each (keeppeek-rtcd(8) LIMITS, "MSE sessions"):
 * RTC_MSE_PER_CONN sessions per signaling WebSocket and RTC_MSE_MAX on the server are
 * accepted, the next is answered "admission" and counted, and every session accepted
 * still gets its pieces; a piece of exactly RTC_MSE_PIECE_MAX bytes is sent, one a byte
 * larger is dropped and counted and its session resumes at the next keyframe. mse.c runs
 * against stubs of the rest of rtcd (the signaling connection, the live cache, the link
 * to webd), which record what it would have sent. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmp4_live.h"
#include "log.h"
#include "rtcd.h"
#include "test.h"
#include "worker.h"

#define NCONN (RTC_MSE_MAX / RTC_MSE_PER_CONN + 1)

struct rtc_conn {
	uint64_t session;
	unsigned answers, errors;
	char last_error[32];
	unsigned pieces[RTC_MSE_PER_CONN], keyframes[RTC_MSE_PER_CONN];
	size_t last_len[RTC_MSE_PER_CONN];
};

struct rtc_metrics rtc_metrics;
static struct rtc_conn conns[NCONN];

/* ---- stubs of the rest of rtcd ---- */

struct kp_worker *rtc_worker(void)
{
	return NULL;
}

int kp_worker_send_peer(struct kp_worker *w, kp_Peer to, const kp_Envelope *env, const void *tail, size_t len)
{
	(void)w;
	CHECK_EQ(to, kp_Peer_PEER_WEBD);
	CHECK_EQ(env->which_msg, kp_Envelope_rtc_media_tag);
	const kp_RtcMedia *m = &env->msg.rtc_media;
	CHECK(m->session >= 1 && m->session <= NCONN && m->slot < RTC_MSE_PER_CONN);
	if (m->session < 1 || m->session > NCONN || m->slot >= RTC_MSE_PER_CONN)
		return -EINVAL;
	struct rtc_conn *c = &conns[m->session - 1];
	const uint8_t *p = tail;
	CHECK(len > (size_t)1 + p[0] + 8);
	c->pieces[m->slot]++;
	c->keyframes[m->slot] += m->keyframe;
	c->last_len[m->slot] = len;
	return 0;
}

uint64_t rtc_conn_session(const struct rtc_conn *c)
{
	return c->session;
}

const char *rtc_conn_principal(const struct rtc_conn *c)
{
	(void)c;
	return "viewer";
}

const char *rtc_conn_addr(const struct rtc_conn *c)
{
	(void)c;
	return "127.0.0.1";
}

void rtc_signal_error(struct rtc_conn *c, const char *sid, const char *code, const char *message)
{
	(void)sid;
	(void)message;
	c->errors++;
	snprintf(c->last_error, sizeof c->last_error, "%s", code);
}

void rtc_msg_begin(struct json_w *w, char *buf, size_t cap, const char *type, const char *sid)
{
	jw_init(w, buf, cap);
	jw_obj(w);
	jw_key(w, "type");
	jw_str(w, type);
	jw_key(w, "sid");
	jw_str(w, sid);
}

int rtc_msg_send(struct rtc_conn *c, struct json_w *w)
{
	size_t len;
	jw_obj_end(w);
	if (jw_finish(w, &len) < 0)
		return -ENOBUFS;
	c->answers++;
	return 0;
}

kp_Codec rtc_live_codec(const char *camera, unsigned stream)
{
	(void)camera;
	(void)stream;
	return kp_Codec_CODEC_H264;
}

uint32_t rtc_live_profile_level_id(const char *camera, unsigned stream)
{
	(void)camera;
	(void)stream;
	return 0;
}

void rtc_live_cache_walk(const char *camera, unsigned stream, rtc_au_cb cb, void *arg)
{
	(void)camera;
	(void)stream;
	(void)cb;
	(void)arg;
}

/* The cameras here are H.264: nothing is transcoded. */
struct rtc_transcode *rtc_transcode_acquire(const char *camera, unsigned stream, rtc_au_cb au,
					    rtc_transcode_lost_cb lost, void *arg)
{
	(void)camera;
	(void)stream;
	(void)au;
	(void)lost;
	(void)arg;
	CHECK(!"an H.264 camera asked for a transcode");
	errno = EBUSY;
	return NULL;
}

void rtc_transcode_release(struct rtc_transcode *t, void *arg)
{
	(void)t;
	(void)arg;
}

/* ---- the test ---- */

/* The fixture camera's SPS (H.264 Baseline, 640x480) and PPS, then an IDR slice. */
static const uint8_t idr_au[] = {0, 0, 0, 1,    0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xf6, 0x84, 0x00, 0,
				 0, 0, 1, 0x68, 0xce, 0x3c, 0x80, 0,    0,    1,    0x65, 0x88, 0x84, 0x21};
static const uint8_t p_au[] = {0, 0, 0, 1, 0x41, 0x9a, 0x02, 0x03};
static int64_t pts;

static void feed(const uint8_t *data, size_t len, bool key)
{
	struct rtc_au au = {.data = data,
			    .len = len,
			    .codec = kp_Codec_CODEC_H264,
			    .keyframe = key,
			    .pts_90k = pts,
			    .dts_90k = pts,
			    .wall_ms = 1700000000000 + pts / 90,
			    .width = 640,
			    .height = 480};
	pts += 3000;
	rtc_mse_on_au("cam", 0, &au);
}

static void reset(void)
{
	for (unsigned i = 0; i < NCONN; i++) {
		rtc_mse_conn_gone(&conns[i]);
		conns[i] = (struct rtc_conn){.session = i + 1};
	}
	memset(&rtc_metrics, 0, sizeof rtc_metrics);
	memset(&rtc_mse_metrics, 0, sizeof rtc_mse_metrics);
}

static void test_sessions(void)
{
	char sid[16];
	reset();
	/* RTC_MSE_PER_CONN on one WebSocket, and the one past it. */
	for (unsigned i = 0; i < RTC_MSE_PER_CONN; i++) {
		snprintf(sid, sizeof sid, "s%u", i);
		rtc_mse_open(&conns[0], sid, "cam", 0, false);
	}
	CHECK_EQ(conns[0].answers, 0); /* each answer goes out with its init segment */
	CHECK_EQ(conns[0].errors, 0);
	rtc_mse_open(&conns[0], "past", "cam", 0, false);
	CHECK_EQ(conns[0].errors, 1);
	CHECK(!strcmp(conns[0].last_error, "admission"));
	CHECK_EQ(rtc_metrics.admission_rejected, 1);
	/* Up to RTC_MSE_MAX on the server, over the other WebSockets; then the one past it. */
	for (unsigned i = RTC_MSE_PER_CONN; i < RTC_MSE_MAX; i++) {
		snprintf(sid, sizeof sid, "s%u", i % RTC_MSE_PER_CONN);
		rtc_mse_open(&conns[i / RTC_MSE_PER_CONN], sid, "cam", 0, false);
	}
	CHECK_EQ(rtc_mse_metrics.sessions, RTC_MSE_MAX);
	CHECK_EQ(rtc_metrics.admission_rejected, 1);
	struct rtc_conn *last = &conns[NCONN - 1];
	rtc_mse_open(last, "s0", "cam", 0, false);
	CHECK_EQ(last->answers, 0);
	CHECK_EQ(last->errors, 1);
	CHECK(!strcmp(last->last_error, "admission"));
	CHECK_EQ(rtc_metrics.admission_rejected, 2);
	CHECK_EQ(rtc_mse_metrics.sessions, RTC_MSE_MAX);
	/* Every session accepted gets its init segment and its fragments. */
	feed(idr_au, sizeof idr_au, true);
	feed(p_au, sizeof p_au, false);
	feed(p_au, sizeof p_au, false);
	unsigned full = 0;
	for (unsigned i = 0; i < NCONN - 1; i++)
		for (unsigned s = 0; s < RTC_MSE_PER_CONN; s++)
			full += conns[i].pieces[s] == 3 && conns[i].keyframes[s] == 2;
	CHECK_EQ(full, RTC_MSE_MAX);
	CHECK_EQ(conns[0].answers, RTC_MSE_PER_CONN);
	CHECK_EQ(last->answers, 0);
	CHECK_EQ(last->pieces[0], 0);
	CHECK_EQ(rtc_mse_metrics.pieces, 3 * RTC_MSE_MAX);
	CHECK_EQ(rtc_mse_metrics.drops, 0);
	/* One ends: its room is the next one's. */
	CHECK(rtc_mse_close(&conns[3], "s7"));
	rtc_mse_open(last, "s0", "cam", 0, false);
	CHECK_EQ(rtc_mse_metrics.sessions, RTC_MSE_MAX);
	feed(idr_au, sizeof idr_au, true);
	CHECK_EQ(last->answers, 1);
	reset();
	CHECK_EQ(rtc_mse_metrics.sessions, 0);
}

/* A P access unit whose fragment makes a piece of exactly piece bytes for sid. */
static uint8_t *p_of_piece(size_t piece, const char *sid, size_t *len)
{
	/* The fragment's boxes around the sample do not depend on its size: measure them. */
	static uint8_t init[FMP4_INIT_MAX];
	uint8_t frag[256];
	struct fmp4_live l;
	size_t n, flen;
	CHECK_EQ(fmp4_live_init(&l, KP_CODEC_H264, idr_au, sizeof idr_au, 640, 480, init, sizeof init, &n), 0);
	CHECK_EQ(fmp4_live_frag(&l, p_au, sizeof p_au, false, 3000, 0, 0, frag, sizeof frag, &flen), 0);
	size_t boxes = flen - sizeof p_au; /* the 4-byte start code became the 4-byte length */
	*len = piece - 1 - strlen(sid) - boxes;
	uint8_t *au = malloc(*len);
	CHECK(au != NULL);
	if (!au)
		exit(1);
	memset(au, 0xaa, *len); /* no start code inside */
	memcpy(au, p_au, 5);
	return au;
}

static void test_piece(void)
{
	reset();
	struct rtc_conn *c = &conns[0];
	rtc_mse_open(c, "big", "cam", 0, false);
	CHECK_EQ(c->answers, 0);
	size_t at_len, past_len;
	uint8_t *at = p_of_piece(RTC_MSE_PIECE_MAX, "big", &at_len);
	uint8_t *past = p_of_piece(RTC_MSE_PIECE_MAX + 1, "big", &past_len);
	feed(idr_au, sizeof idr_au, true); /* the answer and the init segment */
	CHECK_EQ(c->answers, 1);
	feed(at, at_len, false);     /* the IDR's fragment */
	feed(past, past_len, false); /* the one at the ceiling */
	CHECK_EQ(c->pieces[0], 3);
	CHECK_EQ(c->last_len[0], RTC_MSE_PIECE_MAX);
	CHECK_EQ(rtc_mse_metrics.drops, 0);
	feed(p_au, sizeof p_au, false); /* the one past it: dropped, counted */
	CHECK_EQ(c->pieces[0], 3);
	CHECK_EQ(rtc_mse_metrics.drops, 1);
	feed(p_au, sizeof p_au, false);    /* the rest of its GOP goes too */
	feed(idr_au, sizeof idr_au, true); /* until a keyframe */
	feed(p_au, sizeof p_au, false);
	CHECK_EQ(c->pieces[0], 4);
	CHECK_EQ(c->keyframes[0], 3);
	CHECK_EQ(rtc_mse_metrics.pieces, 4);
	CHECK_EQ(rtc_mse_metrics.drops, 1);
	free(at);
	free(past);
	reset();
}

int main(void)
{
	kp_log_init("test_rtc_mse");
	RUN(test_sessions);
	RUN(test_piece);
	return TEST_EXIT();
}
