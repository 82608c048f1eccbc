/* Annex-B scanning of the access units ingestd forwards (untrusted camera bytes): NAL
 * unit boundaries, their types, the parameter sets of a keyframe, and the conversion to
 * the 4-byte length-prefixed samples an MP4 file stores. Pure functions over buffers;
 * fuzzed by test/fuzz/fuzz_rec_nal.c. */
#ifndef KP_REC_NAL_H
#define KP_REC_NAL_H

#include <stddef.h>
#include <stdint.h>

#define REC_PS_MAX         512 /* bytes of one stored parameter set */
#define REC_NAL_MAX_PER_AU 256

enum rec_codec { REC_CODEC_H264 = 1, REC_CODEC_H265 = 2 };

struct rec_nal {
	const uint8_t *data; /* the NAL unit without its start code */
	size_t len;
};

struct rec_ps {
	uint8_t data[REC_PS_MAX];
	uint16_t len;
};

/* The parameter sets of one stream: SPS, PPS and (H.265) VPS, one of each. */
struct rec_param_sets {
	struct rec_ps vps, sps, pps;
};

/* Splits Annex-B bytes into NAL units (3- or 4-byte start codes; trailing zero bytes
 * belong to no NAL). Returns the count, or -EBADMSG when the bytes do not start with a
 * start code or hold an empty NAL, -E2BIG past max. */
int rec_nal_split(const uint8_t *buf, size_t len, struct rec_nal *ret_nals, unsigned max);

/* The NAL unit type (H.264: 5 bits, H.265: 6 bits); -EBADMSG for an empty unit. */
int rec_nal_type(enum rec_codec codec, const struct rec_nal *n);

/* Whether the unit carries a picture slice (a VCL unit). */
int rec_nal_is_vcl(enum rec_codec codec, int type);

/* Whether the unit is an IRAP/IDR picture slice. */
int rec_nal_is_keyframe_slice(enum rec_codec codec, int type);

/* Copies the SPS/PPS/VPS found among nals into ps (others unchanged). Returns how many
 * were found, or -E2BIG when one exceeds REC_PS_MAX. */
int rec_nal_param_sets(enum rec_codec codec, const struct rec_nal *nals, unsigned n, struct rec_param_sets *ps);

/* Bytes the nals take as 4-byte length-prefixed units. */
size_t rec_nal_sample_size(const struct rec_nal *nals, unsigned n);

/* Writes the nals as length-prefixed units into out (of rec_nal_sample_size bytes). */
void rec_nal_to_sample(const struct rec_nal *nals, unsigned n, uint8_t *out);

#endif
