/* rtcd's core, shared between its files: signaling connections (one per webd WebSocket),
 * sessions (one per browser RTCPeerConnection), the live GOP cache and the counters
 * exported as metrics. Everything here runs on the worker's libuv loop thread. */
#ifndef KP_RTCD_H
#define KP_RTCD_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "engine_load.h"
#include "json.h"
#include "keeppeek.pb.h"
#include "kp_limits.h"
#include "media.h"
#include "rtp_h26x.h"
#include "rtp_plan.h"
#include "sdp.h"

#define RTC_MTU             1200
#define RTC_RTX_SLOTS       512 /* per-session retransmission buffer, in packets */
#define RTC_SID_MAX         32
#define RTC_TICK_MS         100
#define RTC_CONNECT_MS      30000 /* offer to SRTP keys, else the session is closed */
#define RTC_KEYCACHE_MAX    (4 * KP_MIB)
#define RTC_REPLAY_TICK_MS  5
#define RTC_REPLAY_BYTES    (96 * KP_KIB) /* per tick: about 150 Mbit/s while catching up */
#define RTC_REORDER_90K     90000         /* a B-frame's PTS may lie this far before the last one sent */
#define RTC_AUDIO_STALE_MS  5000          /* a camera whose last audio frame is older sends none */
#define RTC_DTLS_PENDING    8             /* DTLS datagrams kept while ICE has no selected pair */
#define RTC_AUDIO_REOPEN_MS 1000          /* an AAC -> Opus job lost or refused: opened again after */

enum rtc_state { RTC_GATHERING, RTC_CONNECTING, RTC_SECURING, RTC_STREAMING, RTC_CLOSED, RTC_NSTATES };

struct rtc_metrics {
	uint64_t sessions_opened;
	uint64_t packets_sent, bytes_sent;
	uint64_t nacks_answered, retransmits, plis_answered;
	uint64_t admission_rejected, cursor_rejected;
	uint64_t keyframe_drops; /* a viewer's socket was full: it skipped to the next keyframe */
	uint64_t ice_failures, dtls_failures, srtp_errors;
	uint64_t bad_messages, bad_sdp, rtcp_malformed;
	uint64_t au_in, gop_overflows;
	uint64_t audio_in, audio_packets_sent, dtls_flights_resent;
	uint64_t audio_transcode_refused, audio_transcode_lost, audio_transcode_dropped;
};
extern struct rtc_metrics rtc_metrics;

struct rtc_conn;

struct pre_au;

struct rtx_slot {
	uint16_t seq;
	uint16_t len; /* 0: empty */
	uint8_t data[RTC_MTU + RTC_SRTP_TRAILER_MAX];
};

enum rtc_mode { RTC_LIVE, RTC_PLAYBACK };

/* Where a session's audio comes from (audio_source.c decides). */
enum rtc_audio_src {
	RTC_AUDIO_NONE,        /* no audio m-line, no Opus offered, no camera audio: answered inactive */
	RTC_AUDIO_PASSTHROUGH, /* Opus as the camera sent it or as recorded */
	RTC_AUDIO_TRANSCODE,   /* AAC: made Opus by a transcoder audio job (audio_opus.c) */
	RTC_AUDIO_RECORDED,    /* playback: the recording's track, Opus as is or AAC made Opus */
};

struct rtc_dtls_pending {
	uint16_t len;
	uint8_t data[RTC_MTU + 300];
};

/* A session's audio stream: Opus over RTP (RFC 7587), 48 kHz clock, its own SSRC. */
struct rtc_audio_out {
	enum rtc_audio_src src;
	bool send;                      /* answered a=sendonly */
	bool joined;                    /* receiving from the live camera */
	struct rtc_opus_bridge *bridge; /* playback: the recording's audio made Opus */
	uint8_t pt;
	uint32_t ssrc;
	uint16_t seq;
	bool ts_init, marker;
	int64_t ts_base_pts;
	uint32_t ts_base_rtp, last_ts;
	uint64_t last_send_ms, last_sr_ms;
	uint32_t packets, octets;
};

struct rtc_session {
	struct rtc_conn *conn;
	struct rtc_session *conn_next;
	struct rtc_session *prev, *next;           /* every session */
	struct rtc_session *live_prev, *live_next; /* subscribers of one live stream */
	struct live_stream *live;
	uint64_t key;
	char sid[RTC_SID_MAX + 1];
	enum rtc_state state;
	uint64_t created_ms;

	struct sdp_offer *offer; /* until the answer is sent */
	unsigned media;
	const struct sdp_codec *codec;       /* in offer */
	int audio_media;                     /* the offer's audio m-line, or -1 */
	const struct sdp_codec *audio_codec; /* Opus in it, or NULL */
	uint32_t profile_level_id;           /* H.264 sent, from its SPS; 0: unknown */
	enum kp_codec rtp_codec;
	uint8_t pt;
	uint32_t ssrc;

	struct rtc_ice *ice;
	struct rtc_dtls *dtls;
	struct rtc_srtp *srtp_out, *srtp_in;
	uint16_t seq; /* of the next video packet */
	struct rtx_slot *rtx;

	/* Source. */
	enum rtc_mode mode;
	char camera[KP_CAMERA_NAME_MAX + 1];
	unsigned stream;     /* requested */
	unsigned src_stream; /* sent (the H.264 fallback may differ) */
	const char *fallback;
	struct rtc_transcode *transcode;
	struct rtc_cursor *cursor;
	struct rtc_cursor_state cst;
	int64_t start_at_ms;
	struct pre_au *pre, *pre_tail; /* non-live source before SRTP is up: from its last keyframe */
	size_t pre_bytes;
	unsigned pre_count;
	uint8_t *keycache; /* last keyframe sent, for PLI on sources without a GOP cache */
	size_t keycache_len;
	int64_t keycache_pts;

	bool need_keyframe;
	bool replaying;       /* catching up through the GOP cache, paced (live.c) */
	uint64_t replay_next; /* cache sequence number of the next access unit to replay */
	bool ts_init;
	int64_t ts_base_pts;
	uint32_t ts_base_rtp, last_ts;
	uint64_t last_send_ms;
	uint32_t packets, octets;
	uint64_t last_sr_ms, last_state_ms, last_pli_ms;
	struct rtc_audio_out audio;
	/* DTLS datagrams rtc_ice_send could not send before ICE selected a pair: sent again
	 * the moment it does (a flight otherwise waits for OpenSSL's 1 s retransmission). */
	struct rtc_dtls_pending *dtls_pending; /* RTC_DTLS_PENDING of them, allocated when needed */
	unsigned ndtls_pending;
	uv_timer_t timer;
};

/* ---- session.c ---- */
struct rtc_session *rtc_session_new(struct rtc_conn *conn, const char *sid);
/* Packetizer, DTLS endpoint and ICE agent for the chosen m-line: 0, -ENOMEM, -EINVAL
 * (fingerprint) or -EADDRNOTAVAIL (no port). */
int rtc_session_setup(struct rtc_session *s, const struct sdp_media *m);
void rtc_session_close(struct rtc_session *s, const char *reason, bool tell);
void rtc_session_on_ice(struct rtc_session *s, const struct rtc_ice_event *ev);
struct rtc_session *rtc_session_by_key(uint64_t key);
/* Sends one access unit; compress: stamp it right after the previous one (GOP replay).
 * plan: the access unit packetized for every viewer of it (made here at first use;
 * rtc_plan_reset it for the next one), or NULL: packetized for this session alone. */
void rtc_session_send_au(struct rtc_session *s, const struct rtc_au *au, bool compress, struct rtc_plan *plan);
void rtc_session_au_cb(void *arg, const struct rtc_au *au);
/* The session's transcode was lost (rtc_transcode_lost_cb): an error naming its sid, and
 * the session closes (the client may offer again). */
void rtc_session_transcode_lost(void *arg, int err, const char *reason);
void rtc_session_send_state(struct rtc_session *s);
/* At the offer: a playback session's cursor is opened paused (counted against the
 * server's 1,024 from then on; recorderd's lookup and the first read overlap ICE/DTLS).
 * 0, or -errno with the error already sent (EMFILE: "admission"). */
int rtc_session_prepare_source(struct rtc_session *s);
/* Once SRTP is up, or on a live/seek control: subscribes, or opens or plays the cursor. */
int rtc_session_start_source(struct rtc_session *s);
void rtc_session_stop_source(struct rtc_session *s);
unsigned rtc_sessions_count(unsigned *by_state);
struct rtc_session *rtc_sessions_first(void);

/* ---- session_audio.c ---- */
/* One Opus frame as RTP (RFC 7587 4.2: one packet per frame, 48 kHz timestamps). */
void rtc_session_send_audio(struct rtc_session *s, const struct rtc_audio_frame *a);
void rtc_session_audio_cb(void *arg, const struct rtc_audio_frame *a);
/* The audio sender report (RFC 3550 6.4.1), its RTP time mapped to the same NTP clock
 * as the video's so that the browser lines them up (lip sync). */
void rtc_session_audio_sr(struct rtc_session *s, uint64_t now_ms, uint64_t ntp);

/* ---- audio_opus.c ---- */
/* Hands out Opus for the audio frames fed to it: Opus as it is, AAC through a transcoder
 * audio job named name (log lines). NULL when out of memory. */
struct rtc_opus_bridge *rtc_opus_bridge_new(const char *name, rtc_audio_cb out, void *arg);
void rtc_opus_bridge_feed(struct rtc_opus_bridge *b, const struct rtc_audio_frame *a);
void rtc_opus_bridge_free(struct rtc_opus_bridge *b);

/* ---- audio_source.c ---- */
/* Where the session's audio comes from, at the offer, from the camera's live audio
 * codec and whether the offer's audio m-line has Opus. */
enum rtc_audio_src rtc_audio_choose(const struct rtc_session *s, bool opus_offered);
/* Starts and stops the chosen source with the session's video source. */
int rtc_audio_start(struct rtc_session *s);
void rtc_audio_stop(struct rtc_session *s);

/* ---- signaling.c ---- */
struct kp_worker *rtc_worker(void);
void rtc_signal_on_frame(struct kp_worker *w, struct kp_ipc_frame *f);
/* A JSON message to the browser of that connection. */
void rtc_signal_send(struct rtc_conn *c, const char *json, size_t len);
void rtc_signal_error(struct rtc_conn *c, const char *sid, const char *code, const char *message);
/* {"type":"closed","sid","reason"} to the browser. */
void rtc_signal_closed(struct rtc_conn *c, const char *sid, const char *reason);
/* A message to the browser: rtc_msg_begin writes {"type":type (and "sid" unless NULL)
 * into buf with the common writer (common/json.h), the caller adds its members, and
 * rtc_msg_send closes it and sends it to c: 0, or -ENOBUFS (nothing sent) when it
 * did not fit. */
void rtc_msg_begin(struct json_w *w, char *buf, size_t cap, const char *type, const char *sid);
int rtc_msg_send(struct rtc_conn *c, struct json_w *w);
void rtc_signal_announce_start(struct kp_worker *w);
const char *rtc_conn_principal(const struct rtc_conn *c);
uint64_t rtc_conn_session(const struct rtc_conn *c); /* webd's number of the WebSocket */
const char *rtc_conn_addr(const struct rtc_conn *c);
/* Unlinks a session from its connection's list; rtc_session_close calls it, so a session
 * ended from any side (ICE, DTLS, timer, bye, page) is never reachable from its page. */
void rtc_conn_forget(struct rtc_conn *c, struct rtc_session *s);

/* ---- live.c ---- */
struct live_stream;
void rtc_live_on_au(const kp_AccessUnit *au, const uint8_t *data, size_t len);
kp_Codec rtc_live_codec(const char *camera, unsigned stream);
/* Subscribes the session and replays the cached GOP to it, paced: at most
 * RTC_REPLAY_BYTES every RTC_REPLAY_TICK_MS; live access units wait in the cache
 * meanwhile. */
int rtc_live_subscribe(struct rtc_session *s, const char *camera, unsigned stream);
void rtc_live_unsubscribe(struct rtc_session *s);
/* Replays the cached GOP again (PLI/FIR); false when there is none. */
bool rtc_live_replay(struct rtc_session *s);
void rtc_live_stats(unsigned *streams, size_t *bytes);
/* The H.264 profile-level-id of the stream's cached keyframe's SPS, or 0. */
uint32_t rtc_live_profile_level_id(const char *camera, unsigned stream);

/* ---- metrics.c ---- */
void rtc_metrics_answer(struct kp_worker *w, kp_Peer to, uint32_t id);

/* ---- the MSE fallback (mse.c, decision 0016) ---- */
#define RTC_MSE_PER_CONN  16           /* MSE sessions per signaling WebSocket (webd's slots) */
#define RTC_MSE_MAX       256          /* on the server */
#define RTC_MSE_PIECE_MAX (4 * KP_MIB) /* one RtcMedia tail; a larger fragment is dropped */

struct rtc_mse_metrics {
	uint64_t sessions, opened, pieces, bytes, drops;
	uint64_t transcoded;    /* sessions sent as the transcoder's H.264 (H.265 the browser cannot play) */
	uint64_t codec_refused; /* H.265 the browser cannot play, no H.264 to send instead */
};
extern struct rtc_mse_metrics rtc_mse_metrics;

/* {"type":"mse"} for sid: starts sending fMP4 pieces from the GOP cache's keyframe, the
 * answer {"type":"mse", mime, codec, stream[, fallback]} just before the init segment;
 * h265: the browser's MSE plays H.265 (else an H.265 stream goes as the camera's H.264
 * sub stream or as the transcoder's H.264, or is refused with an error). */
void rtc_mse_open(struct rtc_conn *c, const char *sid, const char *camera, unsigned stream, bool h265);
/* true when sid was an MSE session of c (now ended). */
bool rtc_mse_close(struct rtc_conn *c, const char *sid);
void rtc_mse_conn_gone(struct rtc_conn *c);
void rtc_mse_on_au(const char *camera, unsigned stream, const struct rtc_au *au);
/* Hands each access unit of the stream's GOP cache, from its keyframe, to cb. */
void rtc_live_cache_walk(const char *camera, unsigned stream, rtc_au_cb cb, void *arg);

#endif
