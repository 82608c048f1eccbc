/* SDP for WebRTC (RFC 8866, JSEP): a bounded parser for the browser's offer, the choice
 * of the one video m-line and H.264/H.265 payload type we send, of the audio m-line and
 * its Opus payload type (RFC 7587), and the answer rtcd returns (BUNDLE of the two,
 * rtcp-mux, sendonly or inactive audio, a=setup:passive, sha-256 fingerprint, ICE
 * credentials and every local candidate; only the RTCP feedback the offer names). */
#ifndef KP_RTC_SDP_H
#define KP_RTC_SDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h26x.h"

#define SDP_MAX_LEN        (64 * 1024)
#define SDP_MAX_LINE       4096
#define SDP_MAX_MEDIA      8
#define SDP_MAX_CODECS     16 /* H.264/H.265 payload types kept per m-line */
#define SDP_MAX_CANDIDATES 32
#define SDP_FP_MAX         64 /* digest bytes (sha-512) */

enum sdp_audio_codec { SDP_AUDIO_NONE, SDP_AUDIO_OPUS, SDP_AUDIO_PCMU, SDP_AUDIO_PCMA };

/* RTCP feedback types (RFC 4585, 5104) an offer names for a payload type. */
#define SDP_FB_NACK 1u /* "nack" */
#define SDP_FB_PLI  2u /* "nack pli" */
#define SDP_FB_FIR  4u /* "ccm fir" */

struct sdp_codec {
	uint8_t pt;
	enum kp_codec kind;         /* KP_CODEC_NONE for audio */
	enum sdp_audio_codec audio; /* audio payload types */
	unsigned fb;                /* SDP_FB_*, from a=rtcp-fb:PT and a=rtcp-fb:* */
	bool packetization_mode_1;
	uint32_t profile_level_id; /* H.264; 0 when absent */
	bool have_fmtp;
	char fmtp[256];
};

struct sdp_media {
	char type[16]; /* "video", "audio", "application" */
	unsigned port;
	char proto[40];
	char fmts[256]; /* the m-line's format list, as written */
	char mid[33];
	char ice_ufrag[257], ice_pwd[257];
	char fp_alg[16];
	uint8_t fp[SDP_FP_MAX];
	size_t fp_len;
	char setup[16];
	bool rtcp_mux, rtcp_rsize;
	bool recv;       /* the offerer wants to receive (sendrecv or recvonly) */
	unsigned fb_any; /* SDP_FB_* of a=rtcp-fb:* lines */
	struct sdp_codec codecs[SDP_MAX_CODECS];
	unsigned ncodecs;
};

struct sdp_offer {
	/* Session-level values, inherited by m-lines that lack them. */
	char ice_ufrag[257], ice_pwd[257];
	char fp_alg[16];
	uint8_t fp[SDP_FP_MAX];
	size_t fp_len;
	char setup[16];
	struct sdp_media media[SDP_MAX_MEDIA];
	unsigned nmedia;
	char bundle[256];                            /* the mids of a=group:BUNDLE, space-separated; empty: none */
	char candidates[SDP_MAX_CANDIDATES][256];    /* "candidate:..." lines, without "a=" */
	uint8_t candidate_media[SDP_MAX_CANDIDATES]; /* the m-line each came from */
	unsigned ncandidates;
};

/* Parses an offer. Returns 0, or -EBADMSG with a sentence in err. */
int sdp_parse_offer(const char *sdp, size_t len, struct sdp_offer *o, char *err, size_t errlen);

/* Picks the first video m-line that wants to receive and, in it, the best payload type:
 * H.265 when allow_h265 and offered, else H.264 with packetization-mode=1, preferring
 * profile-level-id 42e01f, then constrained baseline/baseline, then any. Returns the
 * m-line index with *ret_codec set, or -ENOENT (no receiving video m-line) or -ENOTSUP
 * (no usable codec) with a sentence in err. */
int sdp_choose(const struct sdp_offer *o, bool allow_h265, const struct sdp_codec **ret_codec, char *err,
	       size_t errlen);

/* The first audio m-line (port not 0) and, in it, the Opus payload type (*ret_codec,
 * NULL when the m-line offers no Opus). The m-line's index, or -ENOENT. */
int sdp_choose_audio(const struct sdp_offer *o, const struct sdp_codec **ret_codec);

/* Whether m may share the video's transport: it is in the offer's BUNDLE group (RFC
 * 9143), or the offer has none, or m has no mid. */
bool sdp_in_bundle(const struct sdp_offer *o, const struct sdp_media *m);

/* The feedback types of a payload type: its own a=rtcp-fb lines and the m-line's "*". */
unsigned sdp_codec_fb(const struct sdp_media *m, const struct sdp_codec *c);

/* True when the m-line offers H.265 at all. */
bool sdp_offers_h265(const struct sdp_media *m);

struct sdp_answer {
	const struct sdp_offer *offer;
	unsigned media; /* the video m-line; every other one but audio_media is rejected (port 0) */
	const struct sdp_codec *codec;
	uint32_t profile_level_id;           /* H.264: of the stream sent (from its SPS); 0: the offer's fmtp */
	int audio_media;                     /* the audio m-line (sdp_choose_audio), or -1 */
	const struct sdp_codec *audio_codec; /* Opus in it, or NULL */
	bool audio_send;                     /* a=sendonly with Opus; else a=inactive (a codec still listed) */
	uint32_t audio_ssrc;
	const char *ice_ufrag, *ice_pwd;
	const char *fingerprint; /* "AB:CD:..." (sha-256) */
	uint32_t ssrc;
	const char *cname;
	uint64_t session_id;
	const char *const *candidates; /* "candidate:..." lines without "a=" */
	unsigned ncandidates;
};

/* Writes the answer; returns its length or -ENOBUFS. */
int sdp_build_answer(const struct sdp_answer *a, char *out, size_t cap);

#endif
