/* RTP for H.264 and H.265, pure code over byte buffers: the RTP fixed header (RFC 3550),
 * packetization of access units (RFC 6184 packetization-mode
 * 1: single NAL, STAP-A, FU-A; RFC 7798: single NAL, AP, FU) and depacketization back into
 * Annex-B access units with sequence-gap detection and a bounded reassembly buffer.
 * Used by the test camera's RTSP server, ingestd's RTSP client and rtcd. */
#ifndef KP_RTP_H26X_H
#define KP_RTP_H26X_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h26x.h"
#include "kp_limits.h"

#define RTP_HEADER_SIZE 12
#define RTP_MAX_CSRC    15
#define RTP_MAX_PACKET  65535u /* an RTSP interleaved frame's 16-bit length */
#define RTP_MIN_MTU     64u
/* A reassembled access unit is bounded like a Baichuan frame. */
#define RTP_MAX_AU KP_BAICHUAN_MAX_BODY

struct rtp_header {
	bool marker;
	uint8_t payload_type;
	uint16_t seq;
	uint32_t timestamp;
	uint32_t ssrc;
	uint8_t csrc_count;
	uint32_t csrc[RTP_MAX_CSRC];
	bool extension;
	uint16_t ext_profile;
	const uint8_t *ext_data; /* ext_len bytes (a multiple of 4) after the 4-byte ext header */
	size_t ext_len;
	uint8_t padding_len; /* 0 when the P bit is clear */
	const uint8_t *payload;
	size_t payload_len;
};

/* Parses one RTP packet. Returns 0, or -EBADMSG / -EPROTONOSUPPORT with *ret_reason set
 * (short packet, version not 2, truncated CSRC list or extension, bad padding). */
int rtp_header_parse(const uint8_t *pkt, size_t len, struct rtp_header *ret, const char **ret_reason);

/* Writes the fixed header and CSRC list (no extension, no padding) into buf; returns 0 or
 * -ENOBUFS / -EINVAL. */
int rtp_header_write(const struct rtp_header *h, uint8_t *buf, size_t cap, size_t *ret_len);

/* Called once per packet; the buffer is reused afterwards. Nonzero stops packetization
 * and is returned by rtp_packetize. */
typedef int (*rtp_emit_fn)(void *arg, const uint8_t *pkt, size_t len);

struct rtp_packetizer {
	enum kp_codec codec;
	uint8_t payload_type;
	uint32_t ssrc;
	uint16_t seq; /* of the next packet */
	size_t mtu;   /* whole RTP packet, header included */
	uint8_t pkt[RTP_MAX_PACKET];
};

/* Prepares a packetizer; mtu must be within [RTP_MIN_MTU, RTP_MAX_PACKET]. */
int rtp_packetizer_init(struct rtp_packetizer *p, enum kp_codec codec, uint8_t payload_type, uint32_t ssrc,
			uint16_t first_seq, size_t mtu);

/* Packetizes one Annex-B access unit with RTP timestamp ts: consecutive parameter sets
 * are aggregated (STAP-A / AP) when they fit, other NAL units go single or fragmented
 * (FU-A / FU); the marker bit is set on the last packet. Returns 0, -ENODATA for an
 * access unit without NAL units, or the emitter's nonzero result. */
int rtp_packetize(struct rtp_packetizer *p, const uint8_t *au, size_t len, uint32_t ts, rtp_emit_fn emit, void *arg);

/* Reassembly counters, per reason an access unit was dropped. */
struct rtp_depack_stats {
	uint64_t packets;
	uint64_t aus;
	uint64_t dropped_gap;       /* sequence gap inside or before the access unit */
	uint64_t dropped_malformed; /* a malformed payload (bad FU sequence, bad aggregate) */
	uint64_t dropped_oversize;  /* more than max_au bytes */
	uint64_t dropped_no_marker; /* timestamp changed before the marker bit */
	uint64_t late;              /* duplicated or reordered packets, ignored */
};

struct rtp_depack {
	enum kp_codec codec;
	size_t max_au;
	uint8_t *buf;
	size_t len, cap;
	bool have_seq;
	uint16_t next_seq;
	bool in_au;
	uint32_t ts;
	bool broken;
	unsigned broken_why; /* which drop counter the access unit in progress goes to */
	bool in_fu;
	unsigned fu_type;
	bool keyframe;
	bool has_slice;   /* the access unit in progress holds a slice (VCL NAL unit) */
	bool later_slice; /* its first slice is not its picture's first (first_mb_in_slice != 0) */
	bool seen_marker; /* a marker bit ended an access unit on this stream */
	bool have_last;
	uint32_t last_ts; /* the timestamp of the last access unit completed */
	/* Set once the stream's marker bits cannot be trusted: set on every slice (OpenIPC
	 * Majestic) or never (live555 proxies). Access units then end at the next timestamp
	 * change, one packet later. */
	bool end_on_ts;
	uint8_t *out; /* the completed access unit handed out when it ended on a timestamp */
	size_t out_cap;
	struct rtp_depack_stats stats;
};

struct rtp_au {
	const uint8_t *data; /* Annex-B, 4-byte start codes; valid until the next push */
	size_t len;
	uint32_t timestamp;
	bool keyframe;
};

/* max_au: the reassembly ceiling, at most RTP_MAX_AU. */
int rtp_depack_init(struct rtp_depack *d, enum kp_codec codec, size_t max_au);
void rtp_depack_free(struct rtp_depack *d);

/* Feeds one RTP packet. Returns 1 with *ret_au set when it completes an access unit, 0
 * when more packets are needed, or a negative errno with *ret_reason set when the packet
 * is malformed (the access unit in progress is then dropped and counted). Access units
 * with a sequence gap are dropped silently and counted in stats.
 * Real cameras' marker bits: a marker ends only an access unit that holds a slice (Reolink
 * marks its SPS packet, retina#13; some cameras mark their SEI, moonfire-nvr#352); at a
 * timestamp change before any slice, the parameter sets and SEI gathered go on into the
 * next access unit (Reolink sends SPS/PPS with the previous frame's timestamp). A stream
 * whose marker is set on every slice (a later slice of the last access unit's picture
 * comes with its timestamp) or that reaches a timestamp change without ever having set
 * one turns end_on_ts on: its access units end at the next timestamp change. A FU-A or
 * FU with both start and end bits is a whole NAL unit (retina 8ff7a0f). */
int rtp_depack_push(struct rtp_depack *d, const uint8_t *pkt, size_t len, struct rtp_au *ret_au,
		    const char **ret_reason);

#endif
