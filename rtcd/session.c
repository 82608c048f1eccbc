/* One WebRTC session per browser RTCPeerConnection: ICE events, the DTLS handshake and
 * SRTP contexts, packetization of the source's access units into SRTP packets kept in
 * a bounded retransmission ring, RTCP feedback (NACK, PLI, FIR), sender reports, state
 * messages and the session's timer (DTLS retransmission, deadlines, reports). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "json.h"
#include "kp_time.h"
#include "log.h"
#include "rtcd.h"
#include "rtcp.h"

#define PLI_MIN_INTERVAL_MS 1000
#define SR_INTERVAL_MS      1000
#define STATE_INTERVAL_MS   500
#define PRE_MAX_BYTES       (8 * KP_MIB)
#define PRE_MAX_AUS         600

/* An access unit of a transcode or playback source that arrived before the session
 * could send: kept from the last keyframe and sent once SRTP is up. */
struct pre_au {
	struct pre_au *next;
	struct rtc_au au;
	uint8_t data[];
};

struct rtc_metrics rtc_metrics;
static struct rtc_session *all;
static uint64_t next_key = 1;

static uint32_t random32(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		v = (uint32_t)kp_mono_ms() * 2654435761u;
	return v;
}

struct rtc_session *rtc_session_by_key(uint64_t key)
{
	for (struct rtc_session *s = all; s; s = s->next)
		if (s->key == key)
			return s;
	return NULL;
}

struct rtc_session *rtc_sessions_first(void)
{
	return all;
}

unsigned rtc_sessions_count(unsigned *by_state)
{
	unsigned n = 0;
	if (by_state)
		memset(by_state, 0, sizeof(unsigned) * RTC_NSTATES);
	for (struct rtc_session *s = all; s; s = s->next) {
		n++;
		if (by_state)
			by_state[s->state]++;
	}
	return n;
}

static void on_tick(uv_timer_t *t);
static void pre_clear(struct rtc_session *s);

struct rtc_session *rtc_session_new(struct rtc_conn *conn, const char *sid)
{
	struct rtc_session *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->conn = conn;
	s->key = next_key++;
	snprintf(s->sid, sizeof s->sid, "%s", sid);
	s->state = RTC_GATHERING;
	s->audio_media = -1;
	s->created_ms = kp_mono_ms();
	s->ssrc = random32() | 1;
	s->last_ts = random32();
	do
		s->audio.ssrc = random32() | 1;
	while (s->audio.ssrc == s->ssrc);
	s->audio.seq = (uint16_t)random32();
	s->audio.last_ts = random32();
	s->need_keyframe = true;
	int r = uv_timer_init(kp_worker_loop(rtc_worker()), &s->timer);
	if (r < 0) {
		kp_err("session %s: uv_timer_init failed: %s", sid, uv_strerror(r));
		free(s);
		return NULL;
	}
	s->timer.data = s;
	uv_timer_start(&s->timer, on_tick, RTC_TICK_MS, RTC_TICK_MS);
	s->next = all;
	if (all)
		all->prev = s;
	all = s;
	rtc_metrics.sessions_opened++;
	return s;
}

static void on_timer_closed(uv_handle_t *h)
{
	free(h->data);
}

void rtc_session_stop_source(struct rtc_session *s)
{
	rtc_audio_stop(s);
	rtc_live_unsubscribe(s);
	if (s->transcode) {
		rtc_transcode_release(s->transcode, s);
		s->transcode = NULL;
	}
	if (s->cursor) {
		rtc_cursor_close(s->cursor);
		s->cursor = NULL;
	}
}

void rtc_session_close(struct rtc_session *s, const char *reason, bool tell)
{
	if (s->state == RTC_CLOSED)
		return;
	if (tell) {
		rtc_signal_closed(s->conn, s->sid, reason);
	}
	kp_info("session %s of %s (%s) closed: %s", s->sid, rtc_conn_principal(s->conn), rtc_conn_addr(s->conn),
		reason);
	rtc_conn_forget(s->conn, s);
	rtc_session_stop_source(s);
	s->state = RTC_CLOSED;
	rtc_eng->ice_free(s->ice);
	s->ice = NULL;
	rtc_eng->dtls_free(s->dtls);
	s->dtls = NULL;
	rtc_eng->srtp_free(s->srtp_out);
	rtc_eng->srtp_free(s->srtp_in);
	s->srtp_out = s->srtp_in = NULL;
	free(s->rtx);
	free(s->offer);
	free(s->keycache);
	free(s->dtls_pending);
	s->dtls_pending = NULL;
	s->ndtls_pending = 0;
	pre_clear(s);
	s->rtx = NULL;
	s->offer = NULL;
	s->keycache = NULL;
	if (s->prev)
		s->prev->next = s->next;
	else
		all = s->next;
	if (s->next)
		s->next->prev = s->prev;
	uv_timer_stop(&s->timer);
	uv_close((uv_handle_t *)&s->timer, on_timer_closed);
}

static const char *codec_name(enum kp_codec c)
{
	return c == KP_CODEC_H265 ? "h265" : "h264";
}

void rtc_session_send_state(struct rtc_session *s)
{
	char buf[1024];
	struct json_w w;
	rtc_msg_begin(&w, buf, sizeof buf, "state", s->sid);
	jw_key(&w, "mode");
	jw_str(&w, s->mode == RTC_LIVE ? "live" : "playback");
	jw_key(&w, "camera");
	jw_str(&w, s->camera);
	jw_key(&w, "stream");
	jw_str(&w, s->stream ? "sub" : "main");
	jw_key(&w, "codec");
	jw_str(&w, codec_name(s->rtp_codec));
	jw_key(&w, "fallback");
	if (s->fallback)
		jw_str(&w, s->fallback);
	else
		jw_null(&w);
	jw_key(&w, "position_ms");
	jw_int(&w, s->cst.position_ms);
	jw_key(&w, "playing");
	jw_bool(&w, s->mode == RTC_LIVE || s->cst.playing);
	jw_key(&w, "rate");
	jw_int(&w, s->mode == RTC_LIVE ? 1 : s->cst.rate);
	jw_key(&w, "ended");
	jw_bool(&w, s->mode == RTC_PLAYBACK && s->cst.ended);
	jw_key(&w, "connected");
	jw_bool(&w, s->state == RTC_STREAMING);
	rtc_msg_send(s->conn, &w);
	s->last_state_ms = kp_mono_ms();
}

/* Sends n protected packets of s (in its retransmission ring); plen: their payload
 * bytes. false when the socket refused some: the rest of the access unit is dropped and
 * the session waits for the next keyframe. */
static bool flush(struct rtc_session *s, const struct rtc_ice_pkt *batch, const uint16_t *plen, unsigned n)
{
	int err = 0;
	unsigned sent = n ? rtc_eng->ice_send_batch(s->ice, batch, n, &err) : 0;
	for (unsigned i = 0; i < sent; i++) {
		s->packets++;
		s->octets += plen[i];
		rtc_metrics.bytes_sent += batch[i].len;
	}
	rtc_metrics.packets_sent += sent;
	if (sent == n)
		return true;
	s->need_keyframe = true;
	rtc_metrics.keyframe_drops++;
	return false;
}

/* The plan's packets with s's header, each protected in its slot of the retransmission
 * ring, sent RTC_ICE_BATCH_MAX at a time. */
static void send_plan(struct rtc_session *s, const struct rtc_plan *plan, uint32_t ts)
{
	struct rtc_ice_pkt batch[RTC_ICE_BATCH_MAX];
	uint16_t plen[RTC_ICE_BATCH_MAX];
	unsigned nb = 0;
	for (unsigned i = 0; i < plan->n; i++) {
		const struct rtc_plan_pkt *pp = &plan->pkts[i];
		uint16_t seq = s->seq++;
		struct rtx_slot *slot = &s->rtx[seq % RTC_RTX_SLOTS];
		struct rtp_header h = {
		    .marker = pp->marker, .payload_type = s->pt, .seq = seq, .timestamp = ts, .ssrc = s->ssrc};
		size_t hl;
		slot->len = 0;
		if (rtp_header_write(&h, slot->data, sizeof slot->data, &hl) < 0 || hl + pp->len > RTC_MTU)
			continue;
		memcpy(slot->data + hl, plan->buf + pp->off, pp->len);
		int l = (int)(hl + pp->len);
		if (rtc_eng->srtp_protect(s->srtp_out, slot->data, &l) < 0) {
			rtc_metrics.srtp_errors++;
			continue;
		}
		slot->seq = seq;
		slot->len = (uint16_t)l;
		batch[nb] = (struct rtc_ice_pkt){.data = slot->data, .len = (size_t)l};
		plen[nb++] = pp->len;
		if (nb == RTC_ICE_BATCH_MAX) {
			if (!flush(s, batch, plen, nb))
				return;
			nb = 0;
		}
	}
	flush(s, batch, plen, nb);
}

static void keep_keyframe(struct rtc_session *s, const struct rtc_au *au)
{
	if (au->len > RTC_KEYCACHE_MAX)
		return;
	uint8_t *p = realloc(s->keycache, au->len);
	if (!p)
		return;
	memcpy(p, au->data, au->len);
	s->keycache = p;
	s->keycache_len = au->len;
	s->keycache_pts = au->pts_90k;
}

static void pre_clear(struct rtc_session *s)
{
	while (s->pre) {
		struct pre_au *n = s->pre->next;
		free(s->pre);
		s->pre = n;
	}
	s->pre_tail = NULL;
	s->pre_bytes = 0;
	s->pre_count = 0;
}

static void pre_keep(struct rtc_session *s, const struct rtc_au *au)
{
	if (au->keyframe)
		pre_clear(s);
	else if (!s->pre)
		return;
	if (s->pre_bytes + au->len > PRE_MAX_BYTES || s->pre_count >= PRE_MAX_AUS) {
		pre_clear(s);
		return;
	}
	struct pre_au *p = malloc(sizeof *p + au->len);
	if (!p) {
		pre_clear(s);
		return;
	}
	p->next = NULL;
	p->au = *au;
	memcpy(p->data, au->data, au->len);
	p->au.data = p->data;
	if (s->pre_tail)
		s->pre_tail->next = p;
	else
		s->pre = p;
	s->pre_tail = p;
	s->pre_bytes += au->len;
	s->pre_count++;
}

static void pre_flush(struct rtc_session *s)
{
	for (struct pre_au *p = s->pre; p && s->state == RTC_STREAMING; p = p->next)
		rtc_session_send_au(s, &p->au, true, NULL);
	pre_clear(s);
}

void rtc_session_send_au(struct rtc_session *s, const struct rtc_au *au, bool compress, struct rtc_plan *plan)
{
	static struct rtc_plan own; /* for a caller without a plan of its own */
	kp_Codec want = s->rtp_codec == KP_CODEC_H265 ? kp_Codec_CODEC_H265 : kp_Codec_CODEC_H264;
	if (au->codec != want)
		return;
	if (s->state != RTC_STREAMING) {
		if (s->state != RTC_CLOSED && !s->live)
			pre_keep(s, au);
		return;
	}
	if (s->need_keyframe && !au->keyframe)
		return;
	s->need_keyframe = false;
	int64_t d = au->pts_90k - s->ts_base_pts;
	/* Access units come in decode order with RTP timestamps from their PTS (RFC 6184 5.1,
	 * RFC 7798 4.1): a B-frame's lies up to RTC_REORDER_90K before the frame sent ahead of it. */
	if (!s->ts_init || d < -RTC_REORDER_90K || d > 10 * 90000) {
		/* A new source, a seek, or a jump: continue the RTP clock smoothly. */
		s->ts_base_pts = au->pts_90k;
		s->ts_base_rtp = s->last_ts + 3000;
		s->ts_init = true;
	} else if (compress && d > 0) {
		s->ts_base_pts = au->pts_90k;
		s->ts_base_rtp = s->last_ts + 90;
	}
	uint32_t ts = s->ts_base_rtp + (uint32_t)(au->pts_90k - s->ts_base_pts);
	if ((int32_t)(ts - s->last_ts) > 0)
		s->last_ts = ts; /* the latest presentation time sent, for RTCP and the next source */
	s->last_send_ms = kp_mono_ms();
	if (s->mode == RTC_LIVE)
		s->cst.position_ms = au->wall_ms;
	if (!s->live && au->keyframe)
		keep_keyframe(s, au);
	if (!plan) {
		plan = &own;
		rtc_plan_reset(plan);
	}
	int r = rtc_plan_make(plan, s->rtp_codec, au->data, au->len, RTC_MTU);
	if (r < 0 && r != -ENODATA)
		kp_warn("session %s: packetizing a %zu-byte access unit failed: %s", s->sid, au->len, strerror(-r));
	if (r == 0)
		send_plan(s, plan, ts);
}

void rtc_session_au_cb(void *arg, const struct rtc_au *au)
{
	rtc_session_send_au(arg, au, false, NULL);
}

void rtc_session_transcode_lost(void *arg, int err, const char *reason)
{
	struct rtc_session *s = arg;
	(void)err;
	rtc_signal_error(s->conn, s->sid, "transcode_lost",
			 "The H.265 to H.264 conversion for this session stopped; send a new offer to try again.");
	rtc_session_close(s, reason, true);
}

static void on_cursor_state(void *arg, const struct rtc_cursor_state *st)
{
	struct rtc_session *s = arg;
	bool changed = st->playing != s->cst.playing || st->rate != s->cst.rate || st->ended != s->cst.ended;
	s->cst = *st;
	if (st->error) {
		rtc_signal_error(s->conn, s->sid, "playback", st->error);
		s->cst.error = NULL;
	}
	if (changed && s->state == RTC_STREAMING)
		rtc_session_send_state(s);
}

static int open_cursor(struct rtc_session *s)
{
	s->cursor = rtc_cursor_open(rtc_worker(), s->camera, s->src_stream, s->start_at_ms, rtc_session_au_cb,
				    on_cursor_state, s);
	if (s->cursor)
		return 0;
	int e = errno;
	rtc_metrics.cursor_rejected++;
	if (e == EMFILE)
		rtc_signal_error(s->conn, s->sid, "admission",
				 "The server already plays back 1,024 recordings; try again later.");
	else
		rtc_signal_error(s->conn, s->sid, "playback", "The recording could not be opened.");
	return -e;
}

/* The audio goes with the video; without it the video still plays. */
static int start_audio(struct rtc_session *s)
{
	int r = rtc_audio_start(s);
	if (r < 0)
		kp_warn("session %s: the audio of %s could not start: %s", s->sid, s->camera, strerror(-r));
	return 0;
}

int rtc_session_prepare_source(struct rtc_session *s)
{
	if (s->mode != RTC_PLAYBACK)
		return 0;
	int r = open_cursor(s);
	if (r == 0)
		rtc_cursor_pause(s->cursor);
	return r;
}

int rtc_session_start_source(struct rtc_session *s)
{
	s->ts_init = false;
	s->need_keyframe = true;
	if (s->mode == RTC_LIVE) {
		s->cst.playing = true;
		s->cst.rate = 1;
		s->cst.ended = false;
		if (!s->transcode && rtc_live_subscribe(s, s->camera, s->src_stream) < 0) {
			rtc_signal_error(s->conn, s->sid, "not_found", "This camera stream sends no video right now.");
			return -ENOENT;
		}
		return start_audio(s);
	}
	if (s->cursor) {
		/* Opened paused at the offer (rtc_session_prepare_source): play it now. */
		s->cst.playing = true;
		s->cst.rate = 1;
		start_audio(s); /* before play: its first tick hands out audio too */
		rtc_cursor_play(s->cursor);
		return 0;
	}
	s->cst.position_ms = s->start_at_ms;
	s->cst.playing = true;
	s->cst.rate = 1;
	s->cst.ended = false;
	int r = open_cursor(s);
	return r < 0 ? r : start_audio(s);
}

static void secured(struct rtc_session *s)
{
	struct rtc_srtp_keys k;
	if (rtc_eng->dtls_srtp_keys(s->dtls, &k) < 0 ||
	    !(s->srtp_out = rtc_eng->srtp_new(k.local_key, k.local_salt, true)) ||
	    !(s->srtp_in = rtc_eng->srtp_new(k.remote_key, k.remote_salt, false))) {
		rtc_metrics.srtp_errors++;
		rtc_session_close(s, "setting up SRTP failed", true);
		return;
	}
	s->rtx = calloc(RTC_RTX_SLOTS, sizeof *s->rtx);
	if (!s->rtx) {
		rtc_session_close(s, "out of memory", true);
		return;
	}
	s->state = RTC_STREAMING;
	kp_info("session %s of %s: DTLS-SRTP up, sending %s %s stream %u%s%s", s->sid, rtc_conn_principal(s->conn),
		codec_name(s->rtp_codec), s->camera, s->src_stream, s->fallback ? ", fallback " : "",
		s->fallback ? s->fallback : "");
	if (rtc_session_start_source(s) < 0) {
		rtc_session_close(s, "the video source could not be started", true);
		return;
	}
	pre_flush(s);
	rtc_session_send_state(s);
}

static void dtls_send(void *arg, const uint8_t *data, size_t len)
{
	struct rtc_session *s = arg;
	if (!s->ice || rtc_eng->ice_send(s->ice, data, len) == 0 || s->state >= RTC_STREAMING)
		return;
	/* No selected pair yet (a browser's ClientHello can arrive on a pair libnice has
	 * not selected): kept until it has one. */
	if (s->ndtls_pending >= RTC_DTLS_PENDING || len > sizeof s->dtls_pending[0].data)
		return;
	if (!s->dtls_pending && !(s->dtls_pending = malloc(RTC_DTLS_PENDING * sizeof *s->dtls_pending)))
		return;
	struct rtc_dtls_pending *p = &s->dtls_pending[s->ndtls_pending++];
	memcpy(p->data, data, len);
	p->len = (uint16_t)len;
}

static void resend_dtls_pending(struct rtc_session *s)
{
	struct rtc_dtls_pending *held = s->dtls_pending;
	unsigned n = s->ndtls_pending;
	s->dtls_pending = NULL;
	s->ndtls_pending = 0;
	for (unsigned i = 0; i < n; i++)
		dtls_send(s, held[i].data, held[i].len);
	free(held);
	if (n && !s->ndtls_pending)
		rtc_metrics.dtls_flights_resent++;
}

int rtc_session_setup(struct rtc_session *s, const struct sdp_media *m)
{
	s->seq = (uint16_t)random32();
	s->dtls = rtc_eng->dtls_new(m->fp_alg, m->fp, m->fp_len, dtls_send, s);
	if (!s->dtls)
		return -EINVAL;
	s->ice = rtc_eng->ice_new(s->key, m->ice_ufrag, m->ice_pwd);
	if (!s->ice)
		return -EADDRNOTAVAIL;
	return 0;
}

static void dtls_result(struct rtc_session *s, enum rtc_dtls_state st)
{
	if (st == RTC_DTLS_CONNECTED && s->state < RTC_STREAMING) {
		secured(s);
	} else if (st == RTC_DTLS_FAILED) {
		rtc_metrics.dtls_failures++;
		char why[256];
		snprintf(why, sizeof why, "secure connection failed: %s",
			 rtc_eng->dtls_error(s->dtls) ? rtc_eng->dtls_error(s->dtls) : "DTLS error");
		rtc_session_close(s, why, true);
	} else if (st == RTC_DTLS_CLOSED) {
		rtc_session_close(s, "the browser closed the connection", true);
	}
}

static void answer(struct rtc_session *s)
{
	char ufrag[257], pwd[257];
	static char cands[RTC_ICE_MAX_LOCAL * 2][RTC_ICE_CANDIDATE_MAX];
	unsigned n = 0;
	if (rtc_eng->ice_local(s->ice, ufrag, sizeof ufrag, pwd, sizeof pwd, cands, sizeof cands / sizeof cands[0],
			       &n) < 0) {
		rtc_session_close(s, "no local ICE candidate could be gathered", true);
		return;
	}
	const char *list[sizeof cands / sizeof cands[0]];
	for (unsigned i = 0; i < n; i++)
		list[i] = cands[i];
	struct sdp_answer a = {
	    .offer = s->offer,
	    .media = s->media,
	    .codec = s->codec,
	    .profile_level_id = s->profile_level_id,
	    .audio_media = s->audio_media,
	    .audio_codec = s->audio_codec,
	    .audio_send = s->audio.send,
	    .audio_ssrc = s->audio.ssrc,
	    .ice_ufrag = ufrag,
	    .ice_pwd = pwd,
	    .fingerprint = rtc_fingerprint,
	    .ssrc = s->ssrc,
	    .cname = "keeppeek",
	    .session_id = ((uint64_t)random32() << 31) | random32(),
	    .candidates = list,
	    .ncandidates = n,
	};
	static char sdp[16384];
	int len = sdp_build_answer(&a, sdp, sizeof sdp);
	if (len < 0) {
		rtc_session_close(s, "the answer did not fit", true);
		return;
	}
	static char msg[40000];
	struct json_w w;
	rtc_msg_begin(&w, msg, sizeof msg, "answer", s->sid);
	jw_key(&w, "sdp");
	jw_strn(&w, sdp, (size_t)len);
	if (rtc_msg_send(s->conn, &w) < 0) {
		rtc_session_close(s, "the answer did not fit", true);
		return;
	}
	free(s->offer);
	s->offer = NULL;
	s->codec = NULL;
	s->audio_codec = NULL;
	s->state = RTC_CONNECTING;
	rtc_session_send_state(s);
}

static void retransmit(struct rtc_session *s, uint16_t seq)
{
	struct rtx_slot *slot = &s->rtx[seq % RTC_RTX_SLOTS];
	if (slot->len == 0 || slot->seq != seq)
		return;
	if (rtc_eng->ice_send(s->ice, slot->data, slot->len) == 0) {
		rtc_metrics.retransmits++;
		rtc_metrics.packets_sent++;
		rtc_metrics.bytes_sent += slot->len;
	}
}

static void keyframe_request(struct rtc_session *s)
{
	uint64_t now = kp_mono_ms();
	if (now - s->last_pli_ms < PLI_MIN_INTERVAL_MS)
		return;
	s->last_pli_ms = now;
	rtc_metrics.plis_answered++;
	if (s->live) {
		rtc_live_replay(s);
		return;
	}
	if (s->keycache) {
		struct rtc_au au = {
		    .data = s->keycache,
		    .len = s->keycache_len,
		    .codec = s->rtp_codec == KP_CODEC_H265 ? kp_Codec_CODEC_H265 : kp_Codec_CODEC_H264,
		    .keyframe = true,
		    .pts_90k = s->keycache_pts,
		    .wall_ms = s->cst.position_ms,
		};
		uint8_t *keep = s->keycache;
		s->keycache = NULL; /* not re-copied onto itself */
		rtc_session_send_au(s, &au, true, NULL);
		free(s->keycache);
		s->keycache = keep;
	}
	/* Frames that follow reference pictures the browser lost: wait for a keyframe. */
	s->need_keyframe = true;
}

static void on_rtcp(struct rtc_session *s, const uint8_t *data, size_t len)
{
	uint8_t buf[2048];
	if (!s->srtp_in || len > sizeof buf)
		return;
	memcpy(buf, data, len);
	int l = (int)len;
	if (rtc_eng->srtp_unprotect_rtcp(s->srtp_in, buf, &l) < 0) {
		rtc_metrics.srtp_errors++;
		return;
	}
	struct rtcp_feedback fb;
	const char *why = NULL;
	if (rtcp_parse(buf, (size_t)l, s->ssrc, &fb, &why) < 0) {
		rtc_metrics.rtcp_malformed++;
		kp_debug("session %s: malformed RTCP: %s", s->sid, why);
	}
	for (unsigned i = 0; i < fb.nnack; i++)
		retransmit(s, fb.nack[i]);
	if (fb.nnack)
		rtc_metrics.nacks_answered++;
	if (fb.pli || fb.fir)
		keyframe_request(s);
}

void rtc_session_on_ice(struct rtc_session *s, const struct rtc_ice_event *ev)
{
	switch (ev->kind) {
	case RTC_ICE_GATHERED:
		if (s->state == RTC_GATHERING)
			answer(s);
		break;
	case RTC_ICE_CONNECTED:
		rtc_eng->ice_on_connected(s->ice, ev);
		if (s->state == RTC_CONNECTING)
			s->state = RTC_SECURING;
		if (s->state == RTC_SECURING && s->ndtls_pending)
			resend_dtls_pending(s);
		break;
	case RTC_ICE_FAILED:
		rtc_metrics.ice_failures++;
		rtc_session_close(s, "no network path to the browser (ICE failed)", true);
		break;
	case RTC_ICE_RECV:
		if (s->state < RTC_CONNECTING || s->state == RTC_CLOSED)
			break;
		if (rtc_dtls_is_dtls(ev->data, ev->len)) {
			dtls_result(s, rtc_eng->dtls_input(s->dtls, ev->data, ev->len));
		} else if (ev->data[0] >= 128 && ev->data[0] <= 191 && rtcp_is_rtcp(ev->data, ev->len)) {
			on_rtcp(s, ev->data, ev->len);
		}
		break;
	}
}

static uint64_t ntp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t secs = (uint64_t)ts.tv_sec + 2208988800ull;
	uint64_t frac = ((uint64_t)ts.tv_nsec << 32) / 1000000000ull;
	return secs << 32 | frac;
}

static void send_sr(struct rtc_session *s, uint64_t now, uint64_t ntp)
{
	uint8_t buf[128 + RTC_SRTP_TRAILER_MAX + 4];
	struct rtcp_sr sr = {
	    .ssrc = s->ssrc,
	    .ntp = ntp,
	    .rtp_ts = s->last_ts + (uint32_t)((now - s->last_send_ms) * 90),
	    .packets = s->packets,
	    .octets = s->octets,
	    .cname = "keeppeek",
	};
	int len = rtcp_write_sr(&sr, buf, 128);
	if (len < 0)
		return;
	if (rtc_eng->srtp_protect_rtcp(s->srtp_out, buf, &len) < 0) {
		rtc_metrics.srtp_errors++;
		return;
	}
	rtc_eng->ice_send(s->ice, buf, (size_t)len);
}

static void on_tick(uv_timer_t *t)
{
	struct rtc_session *s = t->data;
	uint64_t now = kp_mono_ms();
	if (s->state < RTC_STREAMING && now - s->created_ms > RTC_CONNECT_MS) {
		rtc_session_close(s, "the browser did not connect within 30 s", true);
		return;
	}
	if (s->dtls && s->state >= RTC_CONNECTING && s->state < RTC_STREAMING &&
	    rtc_eng->dtls_timeout_ms(s->dtls) == 0) {
		dtls_result(s, rtc_eng->dtls_on_timeout(s->dtls));
		if (s->state == RTC_CLOSED)
			return;
	}
	if (s->state != RTC_STREAMING)
		return;
	if (s->packets && now - s->last_sr_ms >= SR_INTERVAL_MS) {
		/* Video and audio reports of one instant: one NTP time for both. */
		uint64_t ntp = ntp_now();
		s->last_sr_ms = now;
		send_sr(s, now, ntp);
		rtc_session_audio_sr(s, now, ntp);
	}
	if (s->mode == RTC_PLAYBACK && now - s->last_state_ms >= STATE_INTERVAL_MS)
		rtc_session_send_state(s);
}
