/* keeppeek-test-camera's shared parts: fixture media sources looped in real time, the
 * camera's configuration (credentials, encryption, faults) and per-session counters,
 * and the three servers (Baichuan TCP, BCUDP, RTSP) started by main.c. */
#ifndef KP_TEST_CAMERA_H
#define KP_TEST_CAMERA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "h26x.h"

/* One access unit of a fixture, Annex-B, in decode order, with its timestamps on a
 * continuous clock: loops of the fixture keep increasing dts_us. pts_us equals dts_us
 * without B-frames; with them it is dts_us plus the fixture's PTS - DTS. */
struct cam_frame {
	enum kp_codec codec;
	bool keyframe;
	uint64_t pts_us;
	uint64_t dts_us;
	uint64_t seq; /* per source, from 0, never resets */
	uint32_t width, height;
	const uint8_t *data;
	size_t len;
};

struct cam_source; /* a fixture file looped and paced in real time (media.c) */
struct cam_sub;

typedef void (*cam_frame_cb)(const struct cam_frame *f, void *arg);

/* Loads an Annex-B elementary stream (.h264/.h265) or an MPEG-TS file (.ts, B-frame
 * fixtures) and starts pacing it at fps. */
int cam_source_open(uv_loop_t *loop, const char *path, enum kp_codec codec, unsigned fps, struct cam_source **ret);
/* Frames are delivered from the next keyframe on; the callback runs on the loop. */
int cam_source_subscribe(struct cam_source *src, cam_frame_cb cb, void *arg, struct cam_sub **ret);
void cam_source_unsubscribe(struct cam_sub *sub);
/* Stops every source for good (SIGUSR1): connections stay open, counters become final. */
void cam_sources_pause(void);
bool cam_sources_paused(void);
enum kp_codec cam_source_codec(const struct cam_source *src);
void cam_source_size(const struct cam_source *src, uint32_t *w, uint32_t *h);
unsigned cam_source_fps(const struct cam_source *src);
/* One loop of the fixture, for replay mode: its frame count, frame i (decode order, the
 * first a keyframe), and the decode time of the frame of index `index` over all loops
 * (what the live pacing gives it). */
size_t cam_source_loop_len(const struct cam_source *src);
/* Replay mode paces its streams itself: the source's own timer stops. */
void cam_source_stop_pacing(struct cam_source *src);
void cam_source_loop_frame(const struct cam_source *src, size_t i, const uint8_t **data, size_t *len, bool *keyframe);
uint64_t cam_source_dts_us(const struct cam_source *src, uint64_t index);
/* Parameter sets of the fixture (without start codes), for SDP: index 0 VPS (H.265
 * only), 1 SPS, 2 PPS. Returns 0 or -ENOENT. */
int cam_source_param_set(const struct cam_source *src, int index, const uint8_t **data, size_t *len);

/* One frame of the audio fixture, on the video sources' clock (both start when the
 * camera starts). AAC: as an ADTS frame (what Baichuan's 05wb records carry) and as the
 * raw frame with its AudioSpecificConfig apart (RTP, RFC 3640); ADPCM: one block (raw);
 * PCMU: 20 ms of G.711 (raw); Opus: one packet (raw). */
struct cam_audio_frame {
	uint64_t pts_us;
	uint64_t seq;
	const uint8_t *adts, *raw;
	size_t adts_len, raw_len;
};

struct cam_audio; /* an audio file looped and paced in real time (audio.c) */
enum cam_audio_kind { CAM_AUDIO_AAC, CAM_AUDIO_ADPCM, CAM_AUDIO_PCMU, CAM_AUDIO_OPUS };
struct cam_audio_sub;
typedef void (*cam_audio_cb)(const struct cam_audio_frame *f, void *arg);

/* Loads an ADTS AAC file, a WAV file of IMA ADPCM or 8 kHz mu-law, mono, or an Ogg
 * Opus file of packets of one length. */
int cam_audio_open(uv_loop_t *loop, const char *path, struct cam_audio **ret);
enum cam_audio_kind cam_audio_kind(const struct cam_audio *a);
uint32_t cam_audio_samples(const struct cam_audio *a); /* per frame */
/* Frames from the first one at or after from_us on. */
int cam_audio_subscribe(struct cam_audio *a, uint64_t from_us, cam_audio_cb cb, void *arg, struct cam_audio_sub **ret);
void cam_audio_unsubscribe(struct cam_audio_sub *sub);
uint32_t cam_audio_rate(const struct cam_audio *a);
uint32_t cam_audio_channels(const struct cam_audio *a);
void cam_audio_config(const struct cam_audio *a, const uint8_t **asc, size_t *len);

enum cam_encryption { CAM_ENC_NONE, CAM_ENC_BC, CAM_ENC_AES, CAM_ENC_FULL_AES };

struct cam_faults {
	bool wrong_password;      /* refuse every login */
	unsigned drop_after_s;    /* close each session after N seconds (0 = never) */
	unsigned stall_after_s;   /* stop sending (keep the socket open) after N seconds */
	unsigned garbage_after_s; /* send garbage bytes after N seconds */
	bool oversize_body;       /* send a Baichuan header declaring a 16 MiB + 1 body */
	unsigned
	    udp_loss_percent; /* BCUDP: drop this share of data packets (first send); RTSP over UDP: of RTP packets */
	bool udp_reorder;     /* BCUDP: swap adjacent data packets; RTSP over UDP: adjacent RTP packets */
	bool udp_461;         /* RTSP: answer 461 Unsupported Transport to a SETUP offering only UDP */
	bool udp_silent;      /* RTSP: accept SETUP over UDP, then send no RTP or RTCP at all */
	unsigned cut_mid_frame_s; /* RTSP over TCP: N seconds into the first session, send half a frame's
				   * RTP packets and close the connection */
	unsigned refuse_streams;  /* Baichuan: answer msg 3 with 400 for these (bit 0 main, 1 sub) */
	unsigned refuse_for_s;    /* ... during the first N seconds of the camera (0 = always) */
	/* RTSP quirks of real cameras, each after the one that has it (decision 0030, "Real
	 * cameras"; the retina sources are scottlamb/retina commits and issues): */
	bool ssrc_space;        /* Hikvision: "ssrc= d6d6627" in SETUP's Transport (retina 85b30bf) */
	bool base_no_scheme;    /* Anjvision: Content-Base "host:port/path/", no scheme (retina 6972ac4) */
	bool session_change;    /* XMeye H264DVR: the audio SETUP answers a new session id; PLAY takes the
				 * first (retina 7c5a656) */
	bool sps_marker;        /* Reolink: the parameter sets' packet marked and stamped with the last
				 * frame's timestamp (retina#13) */
	bool no_marker;         /* live555 proxies: the marker bit never set */
	bool pt50_dup;          /* Geovision: after each picture a PT 50 packet reusing its last sequence
				 * number (retina's geovision notes; libavformat drops PT mismatches) */
	unsigned seq_jump_s;    /* after N s, the sequence jumps 10000 back (Reolink's LIVE555 2013 stale
				 * session, retina "stale sessions") */
	unsigned ssrc_change_s; /* after N s, a new SSRC, sequence and timestamp base: an encoder restart */
	bool bad_sprop;         /* a sprop-parameter-sets that is no base64 (malformed fmtp seen in the
				 * field); the parameter sets still come in band */
	bool redirect;          /* OPTIONS and DESCRIBE of /moved/PATH answered 302 to /PATH (cameras behind
				 * a redirecting NVR; libavformat follows them) */
};

/* Counters per server and stream, written to the --stats file as JSON. */
#define CAM_REFUSED_TIMES 16
struct cam_stream_stats {
	uint64_t frames_sent;
	uint64_t bytes_sent;
	uint64_t sessions;
	uint64_t refused; /* stream requests answered 400 by the refuse fault */
	/* When the first CAM_REFUSED_TIMES of them were answered, ms since the camera started. */
	uint64_t refused_at_ms[CAM_REFUSED_TIMES];
};

struct cam_config {
	const char *user;
	const char *password;
	enum cam_encryption encryption;
	struct cam_faults faults;
	struct cam_source *main;    /* e.g. 1920x1080 */
	struct cam_source *sub;     /* 640x360 */
	unsigned motion_interval_s; /* Baichuan msg 33 every N seconds (0 = never) */
	const char *snapshot_jpeg;  /* path of a JPEG served by msg 109, or NULL */
	const char *uid;            /* BCUDP: the UID a C2D_C must name (CAM_DEFAULT_UID) */
	/* What each alarm (msg 33) says: status "MD", "none" or one holding "visitor" (a
	 * doorbell press), AItype a list of people, vehicle, dog_cat, face, package, visitor
	 * or "none" (BAICHUAN.md section 4). Default MD and people. */
	const char *alarm_status, *alarm_ai;
	uint64_t started_ms;     /* loop time the camera started (the refuse fault's clock) */
	struct cam_audio *audio; /* --audio: the main stream carries it; NULL: no audio */
	/* --replay: Baichuan streams are sent from a precomputed loop of their wire bytes
	 * (baichuan/bc_replay.c), frame k due at replay_epoch_us + k / fps (uv_hrtime µs). */
	bool replay;
	uint64_t replay_epoch_us;
};

#define CAM_DEFAULT_UID "95270000KEEPPEEK"

/* Audio sent on a main stream: frames, and the time of the first audio frame after the
 * first video frame of the last session (µs, the source's A/V start offset). */
struct cam_audio_stats {
	uint64_t frames_sent;
	int64_t first_offset_us;
};

struct cam_stats {
	struct cam_stream_stats baichuan[2], bcudp[2], rtsp[2]; /* [0] main, [1] sub */
	struct cam_audio_stats audio_baichuan, audio_rtsp;
	uint64_t logins_ok, logins_refused, motion_sent;
	/* BCUDP msg 234 keep-alives sent, replies echoing channel, stream and number with
	 * status 200, and replies that did not. */
	uint64_t udp_keepalives_sent, udp_keepalives_answered, udp_keepalive_mismatches;
};

extern struct cam_stats cam_stats;

/* The camera's wall clock in POSIX seconds, as keyframes carry it (main.c: time(NULL);
 * a test fixes it to compare two sends byte for byte). */
uint32_t cam_utc_s(void);

/* A Baichuan camera session over any byte transport (baichuan/bc_server.c): login,
 * streams, keep-alive, motion alarms, snapshots. The transport feeds it the client's
 * bytes and writes what it produces. stats selects cam_stats.baichuan or .bcudp. */
struct cam_bc_session;
struct cam_bc_transport {
	int (*write)(void *t, const uint8_t *data, size_t len); /* 0, or <0: session ends */
	void (*close)(void *t);                                 /* the session wants to hang up */
	void *t;
	bool bcudp; /* carried by BCUDP: the camera sends msg 234 keep-alives */
};
struct cam_bc_session *cam_bc_session_new(uv_loop_t *loop, const struct cam_config *cfg,
					  struct cam_stream_stats stats[2], struct cam_bc_transport tr);
void cam_bc_session_input(struct cam_bc_session *s, const uint8_t *data, size_t len);
void cam_bc_session_free(struct cam_bc_session *s);

/* A Baichuan TCP camera on host:port counting into stats[2] (main, sub); one process may
 * run several (--cameras). */
int cam_baichuan_tcp_listen(uv_loop_t *loop, const struct cam_config *cfg, struct cam_stream_stats stats[2],
			    const char *host, uint16_t port);
int cam_bcudp_listen(uv_loop_t *loop, const struct cam_config *cfg, const char *host, uint16_t port);
int cam_rtsp_listen(uv_loop_t *loop, const struct cam_config *cfg, const char *host, uint16_t port);

#endif
