/* The H.264/H.265 toolkit every process shares, pure code over untrusted bytes: the one
 * codec enum, Annex-B start-code scanning (lenient iteration and strict splitting), NAL
 * unit headers and types (parameter sets, picture slices, keyframes), the parameter sets
 * of an access unit, and conversion between Annex-B and length-prefixed NAL units (what
 * an MP4 sample stores). Used by ingestd and its drivers, recorderd, rtcd,
 * common/rtp_h26x.c and the test camera; fuzzed by test/fuzz/fuzz_h26x.c. */
#ifndef KP_H26X_H
#define KP_H26X_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The values match kp_Codec in proto/keeppeek.proto and the catalog's stored codec. */
enum kp_codec { KP_CODEC_NONE = 0, KP_CODEC_H264 = 1, KP_CODEC_H265 = 2 };

#define H26X_PS_MAX         512 /* bytes of one stored parameter set */
#define H26X_NAL_MAX_PER_AU 256

struct h26x_nal {
	const uint8_t *data; /* the NAL unit without its start code or length prefix */
	size_t len;
};

struct h26x_ps {
	uint8_t data[H26X_PS_MAX];
	uint16_t len;
};

/* The parameter sets of one stream: SPS, PPS and (H.265) VPS, one of each. */
struct h26x_param_sets {
	struct h26x_ps vps, sps, pps;
};

/* Bytes of a NAL unit header: 1 (H.264) or 2 (H.265). */
static inline size_t h26x_nal_header_size(enum kp_codec codec)
{
	return codec == KP_CODEC_H265 ? 2 : 1;
}

/* NAL unit type of a NAL unit's first byte (H.264: 5 bits, H.265: 6 bits); the caller
 * has checked that the unit holds its header. */
static inline unsigned h26x_nal_type(enum kp_codec codec, const uint8_t *nal)
{
	return codec == KP_CODEC_H265 ? (nal[0] >> 1) & 0x3f : nal[0] & 0x1f;
}

/* Parameter sets: H.264 SPS/PPS, H.265 VPS/SPS/PPS. */
bool h26x_is_param_set(enum kp_codec codec, unsigned type);
/* Random-access pictures: H.264 IDR, H.265 IRAP (BLA, IDR, CRA and the reserved IRAP types). */
bool h26x_is_keyframe(enum kp_codec codec, unsigned type);
/* Picture slices (VCL units). */
bool h26x_is_vcl(enum kp_codec codec, unsigned type);

/* Offset of the next 00 00 01 at or after from, or len when there is none. */
size_t h26x_start_code(const uint8_t *buf, size_t len, size_t from);

/* Whether buf begins with a 3- or 4-byte start code. */
bool h26x_is_annexb(const uint8_t *buf, size_t len);

/* Lenient iteration: the next NAL unit of Annex-B bytes at or after *off, without its
 * start code and trailing zero bytes; advances *off. false when none is left. Bytes
 * before the first start code and empty units are skipped. */
bool h26x_annexb_next(const uint8_t *buf, size_t len, size_t *off, const uint8_t **ret_nal, size_t *ret_len);

/* Strict splitting: the count of NAL units (3- or 4-byte start codes; trailing zero bytes
 * belong to no unit), or -EBADMSG when the bytes do not start with a start code (zero
 * bytes aside) or hold an empty unit, -E2BIG past max. */
int h26x_split(const uint8_t *buf, size_t len, struct h26x_nal *ret_nals, unsigned max);

/* The next length-prefixed NAL unit (lsz-byte big-endian lengths, 1 to 4) at *off;
 * advances *off. 1 with the unit (which may be empty), 0 at the end, -EBADMSG when a
 * prefix or a unit overruns len. */
int h26x_prefixed_next(const uint8_t *buf, size_t len, unsigned lsz, size_t *off, struct h26x_nal *ret);

/* Copies the SPS/PPS/VPS among nals into ps (others unchanged). Returns how many were
 * found, or -E2BIG when one exceeds H26X_PS_MAX. */
int h26x_param_sets(enum kp_codec codec, const struct h26x_nal *nals, unsigned n, struct h26x_param_sets *ps);

/* An H.264 SPS NAL unit's profile_idc, constraint flags and level_idc (7.3.2.1.1) as the
 * 24-bit profile-level-id of RFC 6184 8.1; 0 when nal is not an SPS of at least 4 bytes. */
uint32_t h264_profile_level_id(const uint8_t *nal, size_t len);

/* The profile-level-id of the first SPS in Annex-B bytes, or 0. */
uint32_t h264_annexb_profile_level_id(const uint8_t *buf, size_t len);

/* Bytes the nals take as 4-byte length-prefixed units. */
size_t h26x_sample_size(const struct h26x_nal *nals, unsigned n);

/* Writes the nals as 4-byte length-prefixed units into out (h26x_sample_size bytes). */
void h26x_to_sample(const struct h26x_nal *nals, unsigned n, uint8_t *out);

/* Rewrites 4-byte length-prefixed units in place with 4-byte start codes; -EBADMSG (buf
 * unchanged) when a length is zero or overruns len. */
int h26x_sample_to_annexb(uint8_t *buf, size_t len);

#endif
