/* Picture order counts of an H.264 or H.265 stream, for a source that gives one time per
 * frame in decode order (Baichuan): the POC of each access unit from the slice header of
 * its first slice, with the SPS and PPS it carried in band (H.264 7.3.2.1, 7.3.2.2,
 * 7.3.3, 8.2.1 and E.1.1; H.265 7.3.2.2, 7.3.2.3, 7.3.6.1 and 8.3.1), and how many frames
 * the stream may reorder (H.264 VUI max_num_reorder_frames, H.265
 * sps_max_num_reorder_pics), and the picture's size. One SPS and one PPS per stream: a new one replaces the old.
 * H.264 POC type 1 is not derived. */
#ifndef KP_H26X_POC_H
#define KP_H26X_POC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h26x.h"

#define H26X_REORDER_UNKNOWN 0xffffffffu
#define H26X_MAX_DIMENSION   16384 /* pixels a side: a larger SPS gives no size */

struct h26x_poc {
	enum kp_codec codec;
	bool have_sps, have_pps;
	/* SPS */
	unsigned log2_max_frame_num, log2_max_poc_lsb, poc_type;
	bool frame_mbs_only, separate_colour_plane;
	uint32_t max_reorder; /* frames, or H26X_REORDER_UNKNOWN */
	uint32_t max_ref_frames;
	uint32_t width, height; /* the cropped picture (H.264 7.4.2.1.1, H.265 conformance window), 0 when unknown */
	/* PPS */
	bool dependent_slices, output_flag_present; /* H.265 */
	unsigned extra_slice_header_bits;           /* H.265 */
	/* the previous reference picture (H.264) or TemporalId 0 picture (H.265) */
	int32_t prev_msb, prev_lsb;
	uint32_t prev_frame_num, frame_num_offset; /* H.264 POC type 2 */
	bool seen_irap;
};

void h26x_poc_init(struct h26x_poc *p, enum kp_codec codec);

/* One access unit (Annex-B) in decode order: its parameter sets are taken, then its
 * first slice's POC is returned in *ret_poc, with *ret_reset set when it starts a new
 * count (an IDR; H.265 IDR, BLA, or the first CRA). 0; -ENOENT without a slice or before
 * the SPS and PPS; -EBADMSG for a header that cannot be read; -ENOTSUP for H.264 POC
 * type 1. */
int h26x_poc_au(struct h26x_poc *p, const uint8_t *au, size_t len, int32_t *ret_poc, bool *ret_reset);

/* How many frames the stream may hold back before showing one: max_reorder, or, when
 * the SPS does not say (H.264 without VUI bitstream_restriction), max_num_ref_frames;
 * 0 before the SPS. Frames a POC step apart: 2 for H.264 frames, 1 for H.265. */
uint32_t h26x_poc_reorder(const struct h26x_poc *p);
unsigned h26x_poc_step(const struct h26x_poc *p);

#endif
