/* Signaling with webd (docs/rtc-signaling.md): one connection per browser WebSocket,
 * keyed by webd's session number, carrying the browser's JSON messages for several
 * sessions ("sid"). Offers are admitted (per principal and per client address), their
 * SDP parsed, the codec and fallback chosen, and a session started; candidates,
 * controls and byes are routed to their session. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "rtcd.h"
#include "signal_msg.h"

struct rtc_conn {
	uint64_t session;
	char principal[80];
	kp_Role role;
	char addr[64];
	struct rtc_session *sessions;
	struct rtc_conn *next;
};

static struct rtc_conn *conns;
static struct kp_worker *worker;

struct kp_worker *rtc_worker(void)
{
	return worker;
}

const char *rtc_conn_principal(const struct rtc_conn *c)
{
	return c->principal;
}

uint64_t rtc_conn_session(const struct rtc_conn *c)
{
	return c->session;
}

const char *rtc_conn_addr(const struct rtc_conn *c)
{
	return c->addr;
}

static void send_raw(uint64_t session, const char *json, size_t len, bool close)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_rtc_signal_tag;
	env.msg.rtc_signal.session = session;
	env.msg.rtc_signal.close = close;
	int r = kp_worker_send_peer(worker, kp_Peer_PEER_WEBD, &env, json, len);
	if (r < 0)
		kp_warn("signaling: message to webd not sent: %s", strerror(-r));
}

void rtc_signal_send(struct rtc_conn *c, const char *json, size_t len)
{
	send_raw(c->session, json, len, false);
}

void rtc_msg_begin(struct json_w *w, char *buf, size_t cap, const char *type, const char *sid)
{
	jw_init(w, buf, cap);
	jw_obj(w);
	jw_key(w, "type");
	jw_str(w, type);
	if (sid) {
		jw_key(w, "sid");
		jw_str(w, sid);
	}
}

int rtc_msg_send(struct rtc_conn *c, struct json_w *w)
{
	size_t len;
	jw_obj_end(w);
	if (jw_finish(w, &len) < 0)
		return -ENOBUFS;
	rtc_signal_send(c, w->buf, len);
	return 0;
}

void rtc_signal_error(struct rtc_conn *c, const char *sid, const char *code, const char *message)
{
	char buf[1024];
	struct json_w w;
	rtc_msg_begin(&w, buf, sizeof buf, "error", sid);
	if (!sid) {
		/* Every error names its session: null when the message named none we could read. */
		jw_key(&w, "sid");
		jw_null(&w);
	}
	jw_key(&w, "code");
	jw_str(&w, code);
	jw_key(&w, "message");
	jw_str(&w, message);
	rtc_msg_send(c, &w);
}

void rtc_signal_closed(struct rtc_conn *c, const char *sid, const char *reason)
{
	char buf[512];
	struct json_w w;
	rtc_msg_begin(&w, buf, sizeof buf, "closed", sid);
	jw_key(&w, "reason");
	jw_str(&w, reason);
	rtc_msg_send(c, &w);
}

static struct rtc_conn *conn_find(uint64_t session)
{
	for (struct rtc_conn *c = conns; c; c = c->next)
		if (c->session == session)
			return c;
	return NULL;
}

static struct rtc_conn *conn_get(const kp_RtcSignal *s)
{
	struct rtc_conn *c = conn_find(s->session);
	if (c)
		return c;
	c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->session = s->session;
	snprintf(c->principal, sizeof c->principal, "%s", s->principal);
	c->role = s->role;
	snprintf(c->addr, sizeof c->addr, "%s", s->client_addr);
	c->next = conns;
	conns = c;
	return c;
}

void rtc_conn_forget(struct rtc_conn *c, struct rtc_session *s)
{
	for (struct rtc_session **p = &c->sessions; *p; p = &(*p)->conn_next) {
		if (*p == s) {
			*p = s->conn_next;
			s->conn_next = NULL;
			return;
		}
	}
}

static void conn_free(struct rtc_conn *c)
{
	rtc_mse_conn_gone(c);
	while (c->sessions)
		rtc_session_close(c->sessions, "the page closed its signaling connection", false);
	for (struct rtc_conn **p = &conns; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	free(c);
}

static struct rtc_session *session_find(struct rtc_conn *c, const char *sid)
{
	for (struct rtc_session *s = c->sessions; s; s = s->conn_next)
		if (strcmp(s->sid, sid) == 0)
			return s;
	return NULL;
}

static bool valid_sid(const char *sid)
{
	size_t n = strlen(sid);
	if (n == 0 || n > RTC_SID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (sid[i] < 0x21 || sid[i] > 0x7e || sid[i] == '"' || sid[i] == '\\')
			return false;
	return true;
}

/* Sessions of one principal and of one client address, over every connection. */
static void count_sessions(const struct rtc_conn *me, unsigned *by_principal, unsigned *by_addr)
{
	*by_principal = *by_addr = 0;
	for (const struct rtc_conn *c = conns; c; c = c->next) {
		unsigned n = 0;
		for (const struct rtc_session *s = c->sessions; s; s = s->conn_next)
			n++;
		if (strcmp(c->principal, me->principal) == 0)
			*by_principal += n;
		if (strcmp(c->addr, me->addr) == 0)
			*by_addr += n;
	}
}

static bool parse_stream(const char *v, unsigned *ret)
{
	if (!v || strcmp(v, "main") == 0 || strcmp(v, "0") == 0)
		*ret = 0;
	else if (strcmp(v, "sub") == 0 || strcmp(v, "1") == 0)
		*ret = 1;
	else
		return false;
	return true;
}

/* The audio m-line's answer: Opus sendonly when the session has a source of sound (live
 * Opus or AAC, or a playback), else inactive with Opus listed. */
static void choose_audio(struct rtc_session *s)
{
	const struct sdp_codec *opus = NULL;
	s->audio_media = sdp_choose_audio(s->offer, &opus);
	if (s->audio_media >= 0 && !sdp_in_bundle(s->offer, &s->offer->media[s->audio_media]))
		s->audio_media = -1; /* a transport of its own: rejected (port 0) */
	s->audio_codec = s->audio_media >= 0 ? opus : NULL;
	bool recv = s->audio_media >= 0 && s->offer->media[s->audio_media].recv;
	s->audio.src = rtc_audio_choose(s, recv && opus);
	s->audio.send = s->audio.src != RTC_AUDIO_NONE;
	if (opus)
		s->audio.pt = opus->pt;
}

/* Decides what the session sends: codec, stream and fallback. 0 or -1 (error sent). */
static int choose_source(struct rtc_conn *c, struct rtc_session *s, const char *sid)
{
	char err[200];
	const struct sdp_codec *codec = NULL;
	kp_Codec src = rtc_live_codec(s->camera, s->stream);
	if (src == kp_Codec_CODEC_NONE && s->mode == RTC_LIVE) {
		char msg[160];
		snprintf(msg, sizeof msg, "Camera \"%s\" sends no %s stream video right now.", s->camera,
			 s->stream ? "sub" : "main");
		rtc_signal_error(c, sid, "not_found", msg);
		return -1;
	}
	bool h265 = src == kp_Codec_CODEC_H265;
	int mi = sdp_choose(s->offer, h265, &codec, err, sizeof err);
	if (mi == -ENOENT) {
		rtc_signal_error(c, sid, "bad_sdp", err);
		return -1;
	}
	if (mi < 0) {
		rtc_signal_error(c, sid, "no_h264", "This browser offers no H.264 video (packetization-mode 1).");
		return -1;
	}
	s->media = (unsigned)mi;
	s->codec = codec;
	s->pt = codec->pt;
	s->rtp_codec = codec->kind;
	s->src_stream = s->stream;
	choose_audio(s);
	if (!h265 || s->rtp_codec == KP_CODEC_H265) {
		if (s->rtp_codec == KP_CODEC_H264)
			s->profile_level_id = rtc_live_profile_level_id(s->camera, s->src_stream);
		return 0;
	}
	/* H.265 camera, H.264 browser: the camera's other stream if it is H.264, else a transcode. */
	unsigned other = s->stream ^ 1;
	if (rtc_live_codec(s->camera, other) == kp_Codec_CODEC_H264) {
		s->src_stream = other;
		s->profile_level_id = rtc_live_profile_level_id(s->camera, other);
		s->fallback = other ? "sub-h264" : "main-h264";
		return 0;
	}
	if (s->mode == RTC_PLAYBACK) {
		rtc_signal_error(c, sid, "no_h264",
				 "This camera records H.265 only, which this browser cannot play back.");
		return -1;
	}
	s->transcode = rtc_transcode_acquire(s->camera, s->stream, rtc_session_au_cb, rtc_session_transcode_lost, s);
	if (!s->transcode) {
		rtc_signal_error(c, sid, errno == EBUSY ? "transcode_busy" : "transcode",
				 errno == EBUSY ? "Every H.265 to H.264 conversion slot is in use; try again later."
						: "The H.265 to H.264 conversion could not start.");
		return -1;
	}
	s->fallback = "transcode";
	return 0;
}

static void on_offer(struct rtc_conn *c, const struct rtc_json *j, const char *sid)
{
	if (c->role != kp_Role_ROLE_VIEWER && c->role != kp_Role_ROLE_ADMIN) {
		rtc_signal_error(c, sid, "forbidden", "This account may not watch video.");
		return;
	}
	struct rtc_session *old = session_find(c, sid);
	if (old)
		rtc_session_close(old, "replaced by a new offer", false);
	unsigned by_principal, by_addr;
	count_sessions(c, &by_principal, &by_addr);
	if (by_principal >= KP_RTC_SESSIONS_PER_PRINCIPAL) {
		rtc_metrics.admission_rejected++;
		kp_notice("signaling: %s refused a session: %u open for this principal", c->principal, by_principal);
		rtc_signal_error(c, sid, "admission",
				 "Too many videos open: at most 64 per user at a time. Close one and retry.");
		return;
	}
	if (by_addr >= KP_RTC_SESSIONS_PER_ADDRESS) {
		rtc_metrics.admission_rejected++;
		kp_notice("signaling: %s refused a session: %u open from this address", c->addr, by_addr);
		rtc_signal_error(c, sid, "admission",
				 "Too many videos open from this address: at most 128 at a time. Close one and retry.");
		return;
	}
	const char *sdp = rtc_json_str(j, "sdp");
	const char *camera = rtc_json_str(j, "camera");
	const char *mode = rtc_json_str(j, "mode");
	unsigned stream;
	if (!sdp || !camera || !camera[0] || strlen(camera) > KP_CAMERA_NAME_MAX) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "An offer needs \"sdp\" and \"camera\".");
		return;
	}
	if (!parse_stream(rtc_json_str(j, "stream"), &stream)) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "\"stream\" is \"main\" or \"sub\".");
		return;
	}
	bool playback = mode && strcmp(mode, "playback") == 0;
	if (mode && !playback && strcmp(mode, "live") != 0) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "\"mode\" is \"live\" or \"playback\".");
		return;
	}
	double at = 0;
	if (playback && (!rtc_json_num(j, "at_ms", &at) || !isfinite(at) || at < 0 || at > 1e15)) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "A playback offer needs \"at_ms\" (Unix milliseconds).");
		return;
	}
	if (playback && rtc_cursors_open_count() >= KP_RTC_CURSORS_PER_SERVER) {
		rtc_metrics.cursor_rejected++;
		kp_notice("signaling: %s (%s) refused a playback session: %u cursors open on this server", c->principal,
			  c->addr, rtc_cursors_open_count());
		rtc_signal_error(c, sid, "admission",
				 "The server already plays back 1,024 recordings; try again later.");
		return;
	}
	struct sdp_offer *offer = malloc(sizeof *offer);
	if (!offer) {
		rtc_signal_error(c, sid, "unavailable", "The server is out of memory.");
		return;
	}
	char err[200];
	if (sdp_parse_offer(sdp, strlen(sdp), offer, err, sizeof err) < 0) {
		rtc_metrics.bad_sdp++;
		char msg[260];
		snprintf(msg, sizeof msg, "The offer's SDP is malformed: %s.", err);
		rtc_signal_error(c, sid, "bad_sdp", msg);
		free(offer);
		return;
	}
	if (!rtc_engine_get()) {
		free(offer);
		rtc_signal_error(
		    c, sid, "unavailable",
		    "The server cannot start WebRTC sessions: its session module did not load (see rtcd's log).");
		return;
	}
	struct rtc_session *s = rtc_session_new(c, sid);
	if (!s) {
		free(offer);
		rtc_signal_error(c, sid, "unavailable", "The server could not start a session.");
		return;
	}
	s->conn_next = c->sessions;
	c->sessions = s;
	s->offer = offer;
	s->mode = playback ? RTC_PLAYBACK : RTC_LIVE;
	snprintf(s->camera, sizeof s->camera, "%s", camera);
	s->stream = stream;
	s->start_at_ms = (int64_t)at;
	if (choose_source(c, s, sid) < 0) {
		rtc_session_close(s, "refused", false);
		return;
	}
	/* The bundled m-lines share the transport of the first of them (RFC 9143 7.2.1): its
	 * ICE credentials and fingerprint (a client that gathers per media kind, as aiortc
	 * does, gives each m-line its own until the answer bundles them). */
	unsigned tm = s->audio_media >= 0 && (unsigned)s->audio_media < s->media ? (unsigned)s->audio_media : s->media;
	const struct sdp_media *m = &offer->media[tm];
	if (!m->ice_ufrag[0] || !m->ice_pwd[0] || !m->fp_len || !m->rtcp_mux ||
	    (strcmp(m->setup, "actpass") != 0 && strcmp(m->setup, "active") != 0)) {
		rtc_metrics.bad_sdp++;
		rtc_signal_error(c, sid, "bad_sdp",
				 "The offer lacks ICE credentials, a fingerprint, rtcp-mux or a=setup:actpass/active.");
		rtc_session_close(s, "refused", false);
		return;
	}
	int r = rtc_session_setup(s, m);
	if (r < 0) {
		rtc_signal_error(c, sid, "unavailable",
				 r == -EADDRNOTAVAIL ? "The server could not open a network port for the video."
						     : "The server could not set up the secure connection.");
		rtc_session_close(s, "ICE or DTLS setup failed", false);
		return;
	}
	if (rtc_session_prepare_source(s) < 0) {
		rtc_session_close(s, "refused", false);
		return;
	}
	for (unsigned i = 0; i < offer->ncandidates; i++)
		if (offer->candidate_media[i] == tm)
			rtc_eng->ice_add_remote(s->ice, offer->candidates[i]);
	kp_info("session %s of %s (%s): %s %s stream %u", sid, c->principal, c->addr, playback ? "playback" : "live",
		camera, stream);
}

static void on_candidate(struct rtc_conn *c, struct rtc_session *s, const struct rtc_json *j)
{
	(void)c;
	const char *cand = rtc_json_str(j, "candidate");
	if (!cand || !cand[0] || !s->ice)
		return;
	if (strncmp(cand, "a=", 2) == 0)
		cand += 2;
	if (rtc_eng->ice_add_remote(s->ice, cand) < 0)
		kp_debug("session %s: remote candidate not usable: %.80s", s->sid, cand);
}

static void on_control(struct rtc_conn *c, struct rtc_session *s, const struct rtc_json *j)
{
	const char *op = rtc_json_str(j, "op");
	double at = 0, rate = 0;
	if (!op) {
		rtc_signal_error(c, s->sid, "bad_request", "A control needs \"op\".");
		return;
	}
	if (s->state != RTC_STREAMING) {
		rtc_signal_error(c, s->sid, "not_ready", "The video is not connected yet.");
		return;
	}
	if (strcmp(op, "live") == 0) {
		if (s->mode == RTC_LIVE)
			return;
		rtc_session_stop_source(s);
		s->mode = RTC_LIVE;
		if (rtc_session_start_source(s) < 0)
			return;
		rtc_session_send_state(s);
		return;
	}
	if (strcmp(op, "seek") == 0) {
		if (!rtc_json_num(j, "at_ms", &at) || !isfinite(at) || at < 0 || at > 1e15) {
			rtc_signal_error(c, s->sid, "bad_request", "seek needs \"at_ms\" (Unix milliseconds).");
			return;
		}
		if (s->mode == RTC_LIVE || !s->cursor) {
			if (s->transcode) {
				rtc_signal_error(
				    c, s->sid, "no_h264",
				    "This camera records H.265 only, which this browser cannot play back.");
				return;
			}
			rtc_session_stop_source(s);
			s->mode = RTC_PLAYBACK;
			s->start_at_ms = (int64_t)at;
			if (rtc_session_start_source(s) < 0)
				return;
		} else {
			s->ts_init = false;
			s->need_keyframe = true;
			s->cst.position_ms = (int64_t)at;
			rtc_cursor_seek(s->cursor, (int64_t)at);
		}
		rtc_session_send_state(s);
		return;
	}
	if (!s->cursor) {
		rtc_signal_error(c, s->sid, "bad_request", "play, pause and rate apply to playback; seek first.");
		return;
	}
	if (strcmp(op, "play") == 0) {
		rtc_cursor_play(s->cursor);
		s->cst.playing = true;
	} else if (strcmp(op, "pause") == 0) {
		rtc_cursor_pause(s->cursor);
		s->cst.playing = false;
	} else if (strcmp(op, "rate") == 0) {
		if (!rtc_json_num(j, "rate", &rate) || rtc_cursor_rate(s->cursor, (unsigned)rate) < 0 ||
		    rate != (double)(unsigned)rate) {
			rtc_signal_error(c, s->sid, "bad_request", "rate is 1, 2, 4 or 8.");
			return;
		}
		s->cst.rate = (unsigned)rate;
	} else {
		rtc_signal_error(c, s->sid, "bad_request", "Unknown control op.");
		return;
	}
	rtc_session_send_state(s);
}

/* {"type":"mse","sid","camera","stream","codecs":"h264,h265"}: the WebRTC fallback;
 * codecs lists what the browser's MSE plays (H.264 is assumed). */
static void on_mse(struct rtc_conn *c, const struct rtc_json *j, const char *sid)
{
	const char *camera = rtc_json_str(j, "camera");
	unsigned stream;
	if (!camera || !camera[0] || strlen(camera) > KP_CAMERA_NAME_MAX) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "An MSE request needs \"camera\".");
		return;
	}
	if (!parse_stream(rtc_json_str(j, "stream"), &stream)) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "\"stream\" is \"main\" or \"sub\".");
		return;
	}
	if (session_find(c, sid)) {
		rtc_signal_error(c, sid, "bad_request", "This sid is already a WebRTC session.");
		return;
	}
	const char *codecs = rtc_json_str(j, "codecs");
	rtc_mse_open(c, sid, camera, stream, codecs && strstr(codecs, "h265"));
}

static void on_message(struct rtc_conn *c, const uint8_t *data, size_t len)
{
	static struct rtc_json j;
	const char *why = NULL;
	if (rtc_json_parse((const char *)data, len, &j, &why) < 0) {
		rtc_metrics.bad_messages++;
		char msg[160];
		snprintf(msg, sizeof msg, "The message is not valid JSON: %s.", why);
		rtc_signal_error(c, NULL, "bad_request", msg);
		return;
	}
	const char *type = rtc_json_str(&j, "type");
	const char *sid = rtc_json_str(&j, "sid");
	if (!type || !sid || !valid_sid(sid)) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid && valid_sid(sid) ? sid : NULL, "bad_request",
				 "Every message needs \"type\" and \"sid\" (1 to 32 printable characters).");
		return;
	}
	if (strcmp(type, "offer") == 0) {
		on_offer(c, &j, sid);
		return;
	}
	if (strcmp(type, "mse") == 0) {
		on_mse(c, &j, sid);
		return;
	}
	struct rtc_session *s = session_find(c, sid);
	if (strcmp(type, "bye") == 0) {
		if (s)
			rtc_session_close(s, "the browser said bye", false);
		else
			rtc_mse_close(c, sid);
		return;
	}
	if (!s) {
		rtc_signal_closed(c, sid, "unknown session (the video service may have restarted)");
		return;
	}
	if (strcmp(type, "candidate") == 0)
		on_candidate(c, s, &j);
	else if (strcmp(type, "control") == 0)
		on_control(c, s, &j);
	else {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, sid, "bad_request", "Unknown message type.");
	}
}

void rtc_signal_on_frame(struct kp_worker *w, struct kp_ipc_frame *f)
{
	worker = w;
	const kp_RtcSignal *sig = &f->env->msg.rtc_signal;
	if (sig->session == 0)
		return;
	struct rtc_conn *c = conn_find(sig->session);
	if (sig->close) {
		if (c)
			conn_free(c);
		return;
	}
	c = conn_get(sig);
	if (!c) {
		kp_err("signaling: no memory for a connection");
		return;
	}
	if (sig->open || f->tail_len == 0)
		return;
	if (f->tail_len > KP_CONTROL_MESSAGE_MAX) {
		rtc_metrics.bad_messages++;
		rtc_signal_error(c, NULL, "too_large", "Signaling messages are at most 64 KiB.");
		return;
	}
	on_message(c, f->tail, f->tail_len);
}

static uv_timer_t announce_timer;
static unsigned announce_tries;

static void on_announce(uv_timer_t *t)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_rtc_signal_tag;
	env.msg.rtc_signal.session = 0;
	env.msg.rtc_signal.close = true;
	int r = kp_worker_send_peer(worker, kp_Peer_PEER_WEBD, &env, NULL, 0);
	if (r == 0 || ++announce_tries >= 100) {
		if (r < 0)
			kp_warn("signaling: could not tell webd that rtcd started: %s", strerror(-r));
		uv_timer_stop(t);
		uv_close((uv_handle_t *)t, NULL);
	}
}

void rtc_signal_announce_start(struct kp_worker *w)
{
	worker = w;
	if (uv_timer_init(kp_worker_loop(w), &announce_timer) == 0)
		uv_timer_start(&announce_timer, on_announce, 0, 100);
}
