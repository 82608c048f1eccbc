/* The MSE fallback (docs/decisions/0016-mse-fallback.md): a browser whose WebRTC cannot
 * connect asks on its signaling WebSocket for {"type":"mse"}; rtcd then sends that
 * camera stream's live access units as fragmented MP4 (common/fmp4_live.c: an init
 * segment, then one fragment per access unit, each held until the next gives its
 * duration; decode order, B-frames with their composition offsets) to webd as RtcMedia
 * pieces, which webd forwards as binary WebSocket messages. The answer, with the MIME
 * type of the init segment's record, goes out just before the init segment. A session
 * starts at the GOP cache's keyframe; an H.265 stream the browser cannot play goes as
 * the camera's H.264 sub stream or else as the transcoder's H.264 (transcode.c). A
 * piece the webd link cannot take is dropped and the session skips to the next
 * keyframe, counted; nothing queues here. Runs on the worker's loop thread like the
 * rest of rtcd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmp4_live.h"
#include "kp_checked.h"
#include "kp_time.h"
#include "log.h"
#include "rtcd.h"

struct rtc_mse {
	struct rtc_mse *next;
	struct rtc_conn *conn;
	unsigned slot;
	char sid[RTC_SID_MAX + 1];
	char camera[KP_CAMERA_NAME_MAX + 1];
	unsigned stream;
	const char *fallback;                /* "sub-h264", "transcode" or NULL */
	struct rtc_transcode *tx;            /* the H.265 -> H.264 job this session watches, or NULL */
	kp_Codec codec;                      /* of the init segment sent; NONE: none yet */
	char answered[FMP4_LIVE_CODECS_MAX]; /* the codecs of the answer sent ("": none yet) */
	bool need_keyframe;
	struct fmp4_live fl;
	uint8_t *held; /* the access unit waiting for the next one's time */
	size_t held_len, held_cap;
	bool held_key;
	int64_t held_pts, held_dts, held_wall_ms;
	uint32_t last_duration;
	uint64_t bad_cto;
};

struct rtc_mse_metrics rtc_mse_metrics;
static struct rtc_mse *all;
static unsigned nall;
static uint8_t *piece;
static size_t piece_cap;

static bool reserve(size_t need)
{
	if (need <= piece_cap)
		return true;
	uint8_t *p = realloc(piece, need);
	if (!p)
		return false;
	piece = p;
	piece_cap = need;
	return true;
}

/* piece[0 .. 1 + sid] is the header; len bytes of fMP4 follow. */
static void send_piece(struct rtc_mse *m, size_t len, bool keyframe)
{
	size_t hdr = 1 + strlen(m->sid);
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_rtc_media_tag;
	env.msg.rtc_media.session = rtc_conn_session(m->conn);
	env.msg.rtc_media.slot = m->slot;
	env.msg.rtc_media.keyframe = keyframe;
	int r = hdr + len > RTC_MSE_PIECE_MAX
		    ? -EMSGSIZE
		    : kp_worker_send_peer(rtc_worker(), kp_Peer_PEER_WEBD, &env, piece, hdr + len);
	if (r < 0) {
		if (!m->need_keyframe)
			kp_info(
			    "mse: %s stream %u for %s: piece of %zu bytes not sent (%s); skipping to the next keyframe",
			    m->camera, m->stream, m->sid, len, strerror(-r));
		rtc_mse_metrics.drops++;
		m->need_keyframe = true;
		m->held_len = 0;
		return;
	}
	rtc_mse_metrics.pieces++;
	rtc_mse_metrics.bytes += hdr + len;
}

static size_t put_header(const struct rtc_mse *m)
{
	size_t n = strlen(m->sid);
	piece[0] = (uint8_t)n;
	memcpy(piece + 1, m->sid, n);
	return 1 + n;
}

/* PTS - DTS of the held access unit; one the fragment cannot carry is shown at its
 * decode time, as recorderd does (ingestd keeps 0 <= PTS - DTS). */
static int32_t held_cto(struct rtc_mse *m)
{
	int64_t cto;
	if (kp_sub_i64(m->held_pts, m->held_dts, &cto) == 0 && cto >= 0 && cto <= FMP4_LIVE_CTO_MAX)
		return (int32_t)cto;
	if (m->bad_cto++ % 1000 == 0)
		kp_warn("mse: %s stream %u for %s: a frame's PTS lies %s its DTS (%llu such frames): shown at its DTS",
			m->camera, m->stream, m->sid, m->held_pts < m->held_dts ? "before" : "more than 10 s after",
			(unsigned long long)m->bad_cto);
	return 0;
}

static void send_held(struct rtc_mse *m, int64_t next_dts)
{
	if (!m->held_len)
		return;
	int64_t d;
	bool ok = kp_sub_i64(next_dts, m->held_dts, &d) == 0 && d > 0 && d <= 10 * 90000;
	uint32_t dur = ok ? (uint32_t)d : (m->last_duration ? m->last_duration : 3000);
	m->last_duration = dur;
	if (!reserve(1 + RTC_SID_MAX + fmp4_live_frag_cap(m->held_len))) {
		m->held_len = 0;
		m->need_keyframe = true;
		return;
	}
	size_t hdr = put_header(m), len;
	int r = fmp4_live_frag(&m->fl, m->held, m->held_len, m->held_key, dur, held_cto(m), m->held_wall_ms * 1000,
			       piece + hdr, piece_cap - hdr, &len);
	bool key = m->held_key;
	m->held_len = 0;
	if (r < 0) {
		kp_warn("mse: %s stream %u: an access unit did not make a fragment: %s", m->camera, m->stream,
			strerror(-r));
		m->need_keyframe = true;
		return;
	}
	send_piece(m, len, key);
}

/* {"type":"mse", mime, codec, stream[, fallback]}: the MIME type of the init segment
 * that follows (its codecs from the avcC/hvcC record it holds). Sent before the first
 * init segment and again when a new one has other codecs. */
static int send_answer(struct rtc_mse *m, kp_Codec codec)
{
	char buf[512], mime[40 + FMP4_LIVE_CODECS_MAX];
	struct json_w w;
	rtc_msg_begin(&w, buf, sizeof buf, "mse", m->sid);
	jw_key(&w, "mime");
	snprintf(mime, sizeof mime, "video/mp4; codecs=\"%s\"", m->fl.codecs);
	jw_str(&w, mime);
	jw_key(&w, "codec");
	jw_str(&w, codec == kp_Codec_CODEC_H265 ? "h265" : "h264");
	jw_key(&w, "stream");
	jw_str(&w, m->stream ? "sub" : "main");
	if (m->fallback) {
		jw_key(&w, "fallback");
		jw_str(&w, m->fallback);
	}
	int r = rtc_msg_send(m->conn, &w);
	if (r < 0) {
		kp_info("mse: %s stream %u for %s: the answer was not sent (%s); trying at the next keyframe",
			m->camera, m->stream, m->sid, strerror(-r));
		m->need_keyframe = true;
		return r;
	}
	snprintf(m->answered, sizeof m->answered, "%s", m->fl.codecs);
	return 0;
}

static void on_au(struct rtc_mse *m, const struct rtc_au *au)
{
	if (m->codec != kp_Codec_CODEC_NONE && au->codec != m->codec) {
		m->codec = kp_Codec_CODEC_NONE; /* the camera changed codec: a new init segment */
		m->held_len = 0;
	}
	if (m->need_keyframe || m->codec == kp_Codec_CODEC_NONE) {
		if (!au->keyframe)
			return;
		m->held_len = 0;
	}
	if (m->codec == kp_Codec_CODEC_NONE) {
		if (!reserve(1 + RTC_SID_MAX + FMP4_INIT_MAX))
			return;
		size_t hdr = put_header(m), len;
		int r = fmp4_live_init(&m->fl, (enum kp_codec)au->codec, au->data, au->len, au->width, au->height,
				       piece + hdr, piece_cap - hdr, &len);
		if (r < 0) {
			kp_warn("mse: %s stream %u: no init segment from its keyframe: %s", m->camera, m->stream,
				strerror(-r));
			return;
		}
		if (strcmp(m->answered, m->fl.codecs) != 0 && send_answer(m, au->codec) < 0)
			return;
		m->codec = au->codec;
		m->need_keyframe = false;
		send_piece(m, len, true);
		if (m->need_keyframe) {
			m->codec = kp_Codec_CODEC_NONE;
			return;
		}
	}
	send_held(m, au->dts_90k);
	if (au->keyframe)
		m->need_keyframe = false;
	if (m->need_keyframe)
		return;
	if (au->len > m->held_cap) {
		uint8_t *p = realloc(m->held, au->len);
		if (!p) {
			m->need_keyframe = true;
			return;
		}
		m->held = p;
		m->held_cap = au->len;
	}
	memcpy(m->held, au->data, au->len);
	m->held_len = au->len;
	m->held_key = au->keyframe;
	m->held_pts = au->pts_90k;
	m->held_dts = au->dts_90k;
	m->held_wall_ms = au->wall_ms;
}

void rtc_mse_on_au(const char *camera, unsigned stream, const struct rtc_au *au)
{
	for (struct rtc_mse *m = all; m; m = m->next)
		if (!m->tx && m->stream == stream && strcmp(m->camera, camera) == 0)
			on_au(m, au);
}

static void cache_cb(void *arg, const struct rtc_au *au)
{
	on_au(arg, au);
}

static struct rtc_mse *find(const struct rtc_conn *c, const char *sid)
{
	for (struct rtc_mse *m = all; m; m = m->next)
		if (m->conn == c && strcmp(m->sid, sid) == 0)
			return m;
	return NULL;
}

static void mse_free(struct rtc_mse *m)
{
	for (struct rtc_mse **p = &all; *p; p = &(*p)->next) {
		if (*p == m) {
			*p = m->next;
			break;
		}
	}
	nall--;
	rtc_mse_metrics.sessions = nall;
	rtc_transcode_release(m->tx, m);
	free(m->held);
	free(m);
}

static void tx_lost(void *arg, int err, const char *reason)
{
	struct rtc_mse *m = arg;
	(void)err;
	kp_notice("mse: %s stream %u for %s: the H.265 to H.264 conversion ended: %s", m->camera, m->stream, m->sid,
		  reason);
	rtc_signal_error(m->conn, m->sid, "transcode_lost",
			 "The H.265 to H.264 conversion for this video stopped; ask again to retry.");
	mse_free(m);
}

/* The stream this session sends when the camera's is H.265 and the browser's MSE cannot
 * play it: the camera's H.264 sub stream, else the transcoder's H.264 (m->tx). 0, or
 * -1 after an error naming the sid. */
static int not_h265(struct rtc_mse *m, struct rtc_conn *c)
{
	if (rtc_live_codec(m->camera, 1) == kp_Codec_CODEC_H264) {
		m->stream = 1;
		m->fallback = "sub-h264";
		return 0;
	}
	m->tx = rtc_transcode_acquire(m->camera, m->stream, cache_cb, tx_lost, m);
	if (!m->tx) {
		bool busy = errno == EBUSY;
		rtc_mse_metrics.codec_refused++;
		kp_notice("mse: %s stream %u for %s: H.265 that this browser cannot play through MSE, no H.264 sub "
			  "stream, and no conversion: %s",
			  m->camera, m->stream, m->sid, strerror(errno));
		rtc_signal_error(c, m->sid, busy ? "transcode_busy" : "codec",
				 busy
				     ? "This camera sends H.265, which this browser cannot play through MSE, and every "
				       "H.265 to H.264 conversion slot is in use; try again later."
				     : "This camera sends H.265, which this browser cannot play through MSE, and the "
				       "H.265 to H.264 conversion could not start.");
		return -1;
	}
	m->fallback = "transcode";
	rtc_mse_metrics.transcoded++;
	return 0;
}

void rtc_mse_open(struct rtc_conn *c, const char *sid, const char *camera, unsigned stream, bool h265)
{
	if (find(c, sid)) {
		rtc_signal_error(c, sid, "bad_request", "This sid is already an MSE session.");
		return;
	}
	unsigned used = 0, slot = 0;
	for (struct rtc_mse *m = all; m; m = m->next)
		if (m->conn == c)
			used |= 1u << m->slot;
	while (slot < RTC_MSE_PER_CONN && (used & (1u << slot)))
		slot++;
	if (slot >= RTC_MSE_PER_CONN || nall >= RTC_MSE_MAX) {
		rtc_metrics.admission_rejected++;
		rtc_signal_error(
		    c, sid, "admission",
		    "Too many fallback videos: at most 16 per page and 256 on this server. Close one and retry.");
		return;
	}
	kp_Codec codec = rtc_live_codec(camera, stream);
	if (codec == kp_Codec_CODEC_NONE) {
		rtc_signal_error(c, sid, "not_found", "No live video from this camera stream yet.");
		return;
	}
	struct rtc_mse *m = calloc(1, sizeof *m);
	if (!m) {
		rtc_signal_error(c, sid, "unavailable", "The server is out of memory.");
		return;
	}
	m->conn = c;
	m->slot = slot;
	snprintf(m->sid, sizeof m->sid, "%s", sid);
	snprintf(m->camera, sizeof m->camera, "%s", camera);
	m->stream = stream;
	if (codec == kp_Codec_CODEC_H265 && !h265 && not_h265(m, c) < 0) {
		free(m);
		return;
	}
	m->next = all;
	all = m;
	nall++;
	rtc_mse_metrics.sessions = nall;
	rtc_mse_metrics.opened++;
	kp_info("mse: %s (%s) watches %s stream %u through MSE as %s%s%s", rtc_conn_principal(c), rtc_conn_addr(c),
		camera, m->stream, sid, m->fallback ? ", " : "", m->fallback ? m->fallback : "");
	if (!m->tx)
		rtc_live_cache_walk(camera, m->stream, cache_cb, m);
}

bool rtc_mse_close(struct rtc_conn *c, const char *sid)
{
	struct rtc_mse *m = find(c, sid);
	if (!m)
		return false;
	mse_free(m);
	return true;
}

void rtc_mse_conn_gone(struct rtc_conn *c)
{
	struct rtc_mse *m = all;
	while (m) {
		struct rtc_mse *n = m->next;
		if (m->conn == c)
			mse_free(m);
		m = n;
	}
}
