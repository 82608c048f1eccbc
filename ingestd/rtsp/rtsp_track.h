/* One RTP track of an RTSP session, from packets to what ingestd records, pure code (no
 * sockets, no threads): the video track's access units through common/rtp_h26x.c with
 * their parameter sets put on keyframes (rtsp_au.c); its PTS from the RTP timestamp
 * (RFC 6184 5.1, RFC 7798 4.1), unwrapped from 32 bits with checked arithmetic; its DTS
 * from decode order: with a reorder depth R from the SPS (common/h26x_poc.h, as
 * ingestd/baichuan/bc_pts.c uses it), the DTS of an access unit is the smallest of the
 * R + 1 largest PTS seen so far (the rule of libavformat's compute_pkt_fields, without
 * its guess of R), the first R are inferred by rtsp_ts.c. The audio track's units (AAC
 * of RFC 3640 through common/rtp_aac.c, Opus packets, G.711 payloads) on the video's
 * clock: through both tracks' RTCP sender reports when they have come (RFC 3550 6.4.1),
 * until then the end of the first audio packet's samples anchored where it arrived; at the start of a session
 * the video waits up to 1 s for the first audio unit, so that a recording opening at
 * the first keyframe knows it has audio (libavformat's probe held both longer). Losses:
 * a sequence gap is counted (rtp_lost_packets), the access unit it damaged and every one
 * up to the next keyframe are dropped (loss_dropped), and a packet that arrives after
 * its successor was used, in the access unit being built, drops that access unit as
 * well; one the connection ended in is the caller's (rtsp_track_end). */
#ifndef KP_INGEST_RTSP_TRACK_H
#define KP_INGEST_RTSP_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../camera.h" /* ingestd/camera.h, not the test camera's */
#include "h26x_poc.h"
#include "rtp_aac.h"
#include "rtp_h26x.h"
#include "rtsp_au.h"
#include "rtsp_ts.h"

#define RTSP_TRACK_AUDIO_HELD    32      /* audio units held until the video's clock starts */
#define RTSP_TRACK_WAIT_AUS      32      /* video access units held for the first audio unit */
#define RTSP_TRACK_AUDIO_WAIT_US 1000000 /* and for at most this long */
#define RTSP_TRACK_MAX_REORDER   16

/* Where a track's units go (the stream thread's queue). */
struct rtsp_track_sink {
	void *arg;
	void (*video)(void *arg, const struct kp_access_unit *au);
	void (*audio)(void *arg, const struct kp_audio_unit *au);
};

/* RTP timestamps unwrapped to 64 bits, and the track's sender report. */
struct rtsp_rtp_clock {
	uint32_t rate;
	bool have;
	uint32_t last;
	int64_t ext, first;
	bool have_sr;
	uint64_t sr_ntp;      /* NTP of the last sender report, 32.32 */
	uint32_t sr_rtp;      /* its RTP time */
	int64_t sr_mono_us;   /* when it arrived */
	int64_t last_mono_us; /* when the last packet came */
	bool rebase;          /* the source restarted: the next packet follows the last by wall time */
};

struct rtsp_held_au {
	struct kp_access_unit au;
	uint8_t *copy;
};

struct rtsp_held_audio {
	struct kp_audio_unit au;
	int64_t ext;        /* its RTP time, unwrapped */
	int64_t end_ext;    /* where the samples of its packet end */
	int64_t arrival_us; /* kp_mono_us() when it came */
	uint8_t *copy;
};

struct rtsp_track {
	bool video;
	const struct rtsp_track_sink *sink;
	struct rtsp_rtp_clock clock;
	/* sequence */
	bool have_seq;
	uint16_t next_seq, first_seq;
	uint32_t ssrc;    /* locked at the first packet */
	int payload_type; /* the SDP's; packets of another are dropped (-1: any) */
	bool have_cand;   /* another SSRC, or a sequence jump, seen in sequence: */
	uint32_t cand_ssrc;
	uint16_t cand_next;
	uint64_t foreign_ssrc, other_pt, resyncs; /* packets dropped, and restarts followed */
	uint64_t packets, octets;
	/* for RTCP receiver reports (RFC 3550 A.3, A.8) */
	uint32_t cycles, base_seq, expected_prior, received_prior;
	int64_t jitter_q4; /* jitter in timestamp units, times 16 */
	int64_t last_transit;
	bool have_transit;
	/* counts for the core, taken by the driver */
	uint64_t lost_packets, loss_dropped;
	bool skip_to_keyframe;
	bool drop_current; /* the access unit being built lost a packet that came too late */
	/* video */
	enum kp_codec codec;
	struct rtp_depack depack;
	uint64_t depack_drops;
	struct h26x_poc poc;
	uint8_t params[ING_RTSP_MAX_PARAMS];
	size_t params_len;
	uint8_t *buf;
	size_t buf_cap;
	struct ing_rtsp_ts ts;
	int64_t pts_buf[RTSP_TRACK_MAX_REORDER + 1];
	unsigned reorder;
	struct rtsp_held_au held[ING_RTSP_TS_HOLD + 1];
	unsigned nheld;
	int64_t last_raw_pts, last_raw_mono_us; /* the last video access unit's PTS and when */
	bool have_raw_pts;
	bool has_audio;    /* an audio track follows this clock: video waits for its first unit */
	bool audio_waited; /* that wait is over */
	struct rtsp_held_au wait[RTSP_TRACK_WAIT_AUS];
	unsigned nwait;
	int64_t wait_since_us;
	/* audio */
	struct rtsp_track *vt; /* the video track whose clock the audio follows */
	struct kp_audio_format afmt;
	struct rtp_aac aac;
	bool anchored;
	int64_t anchor_90k; /* raw video time of audio RTP time 0, from the first packet */
	struct rtsp_held_audio aheld[RTSP_TRACK_AUDIO_HELD];
	unsigned naheld;
	int64_t cur_ext;
	const char *last_error; /* the last malformed payload's reason */
	uint64_t malformed;
};

/* A video track; params: Annex-B parameter sets from the SDP (may be empty); fps from
 * a=framerate (0: unknown). 0 or a negative errno. */
int rtsp_track_video_init(struct rtsp_track *t, const struct rtsp_track_sink *sink, enum kp_codec codec,
			  const uint8_t *params, size_t params_len, unsigned fps, uint32_t rate);

/* An audio track on video's clock. fmt: AAC (with size_len, index_len, delta_len of
 * its fmtp), Opus, PCMU or PCMA. */
int rtsp_track_audio_init(struct rtsp_track *t, const struct rtsp_track_sink *sink, struct rtsp_track *video,
			  const struct kp_audio_format *fmt, unsigned size_len, unsigned index_len, unsigned delta_len);

void rtsp_track_free(struct rtsp_track *t);

/* Source restarts (RFC 3550 A.1, as libavformat's rtp_valid_packet_in_sequence): the
 * SSRC is locked at the first packet and packets of another are dropped and counted
 * (foreign_ssrc), a sequence jump of more than RTSP_TRACK_MAX_DROPOUT forward or
 * RTSP_TRACK_MAX_MISORDER back is dropped; two in-sequence packets of a new SSRC or
 * after such a jump (an encoder restart; Reolink's LIVE555 2013 stale TCP session,
 * retina's "stale sessions" notes) restart the track there (resyncs): the access unit
 * in progress and AAC fragments are dropped, the next keyframe awaited, and the RTP
 * clock rebased so that output times go on from where they were by wall time. Packets
 * of another payload type than the SDP's are dropped first (other_pt; Geovision sends
 * PT 50 packets that reuse the last sequence number, retina geovision notes,
 * libavformat drops PT mismatches too); an exact duplicate of the last packet never
 * costs the access unit in progress. */
#define RTSP_TRACK_MAX_JUMP_S   10 /* an RTP time jump forward past this goes on by wall time */
#define RTSP_TRACK_MAX_DROPOUT  3000
#define RTSP_TRACK_MAX_MISORDER 100

/* One RTP packet, in sequence order as far as the transport could put it. Returns 0 or
 * -EBADMSG with *ret_reason set for a packet that is not RTP (counted in malformed; the
 * session goes on). */
int rtsp_track_rtp(struct rtsp_track *t, const uint8_t *pkt, size_t len, int64_t now_us, const char **ret_reason);

/* One RTCP sender report for this track. */
void rtsp_track_sr(struct rtsp_track *t, uint64_t ntp, uint32_t rtp, int64_t now_us);

/* An audio track's units held until the video's clock started go now, when it has
 * (called after each video packet). */
void rtsp_track_audio_ready(struct rtsp_track *a);

/* The connection ended: the size of the access unit it cut (dropped), 0 if none. */
size_t rtsp_track_end(struct rtsp_track *t);

/* An RTCP receiver report block for this track (RFC 3550 6.4.2) into out[24]; false
 * before any packet. ssrc of the source, fraction and cumulative lost, extended highest
 * sequence, jitter, LSR, DLSR. */
bool rtsp_track_report_block(struct rtsp_track *t, int64_t now_us, uint8_t out[24]);

#endif
