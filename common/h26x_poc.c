/* Picture order counts from slice headers (see h26x_poc.h). */
#include "h26x_poc.h"

#include <errno.h>

#include "h26x_bits.h"

void h26x_poc_init(struct h26x_poc *p, enum kp_codec codec)
{
	*p = (struct h26x_poc){.codec = codec, .max_reorder = H26X_REORDER_UNKNOWN};
}

/* The picture's size less its cropping, or 0 x 0 when the numbers make no picture of
 * at most H26X_MAX_DIMENSION a side. */
static void dimensions(struct h26x_poc *p, uint64_t w, uint64_t h, uint64_t crop_w, uint64_t crop_h)
{
	bool ok = w <= H26X_MAX_DIMENSION && h <= H26X_MAX_DIMENSION && crop_w < w && crop_h < h;
	p->width = ok ? (uint32_t)(w - crop_w) : 0;
	p->height = ok ? (uint32_t)(h - crop_h) : 0;
}

static void skip_scaling_list(struct h26x_bits *b, unsigned size)
{
	int64_t last = 8, next = 8;
	for (unsigned j = 0; j < size && !b->overrun; j++) {
		if (next != 0)
			next = ((last + h26x_bits_se(b)) % 256 + 256) % 256;
		last = next == 0 ? last : next;
	}
}

static void skip_hrd(struct h26x_bits *b)
{
	uint32_t cpb_cnt = h26x_bits_ue(b) + 1;
	h26x_bits_u(b, 8); /* bit_rate_scale, cpb_size_scale */
	for (uint32_t i = 0; i < cpb_cnt && i < 32 && !b->overrun; i++) {
		h26x_bits_ue(b);
		h26x_bits_ue(b);
		h26x_bits_u(b, 1);
	}
	h26x_bits_u(b, 20); /* four delay and offset lengths, 5 bits each */
}

/* H.264 VUI up to max_num_reorder_frames (E.1.1). */
static void h264_vui(struct h26x_poc *p, struct h26x_bits *b)
{
	if (h26x_bits_u(b, 1) && h26x_bits_u(b, 8) == 255) /* aspect_ratio_idc Extended_SAR */
		h26x_bits_u(b, 32);
	if (h26x_bits_u(b, 1)) /* overscan_info_present_flag */
		h26x_bits_u(b, 1);
	if (h26x_bits_u(b, 1)) { /* video_signal_type_present_flag */
		h26x_bits_u(b, 4);
		if (h26x_bits_u(b, 1))
			h26x_bits_u(b, 24);
	}
	if (h26x_bits_u(b, 1)) { /* chroma_loc_info_present_flag */
		h26x_bits_ue(b);
		h26x_bits_ue(b);
	}
	if (h26x_bits_u(b, 1)) { /* timing_info_present_flag */
		h26x_bits_u(b, 32);
		h26x_bits_u(b, 32);
		h26x_bits_u(b, 1);
	}
	bool nal_hrd = h26x_bits_u(b, 1);
	if (nal_hrd)
		skip_hrd(b);
	bool vcl_hrd = h26x_bits_u(b, 1);
	if (vcl_hrd)
		skip_hrd(b);
	if (nal_hrd || vcl_hrd)
		h26x_bits_u(b, 1); /* low_delay_hrd_flag */
	h26x_bits_u(b, 1);         /* pic_struct_present_flag */
	if (!h26x_bits_u(b, 1))    /* bitstream_restriction_flag */
		return;
	h26x_bits_u(b, 1);
	for (int i = 0; i < 4; i++)
		h26x_bits_ue(b);
	uint32_t reorder = h26x_bits_ue(b);
	if (!b->overrun)
		p->max_reorder = reorder;
}

static int h264_sps(struct h26x_poc *p, const uint8_t *nal, size_t len)
{
	struct h26x_bits b;
	h26x_bits_init(&b, nal, len, 1);
	uint32_t profile = h26x_bits_u(&b, 8);
	h26x_bits_u(&b, 16); /* constraint flags, level_idc */
	h26x_bits_ue(&b);    /* seq_parameter_set_id */
	bool separate = false;
	uint32_t chroma = 1;
	if (profile == 100 || profile == 110 || profile == 122 || profile == 244 || profile == 44 || profile == 83 ||
	    profile == 86 || profile == 118 || profile == 128 || profile == 138 || profile == 139 || profile == 134 ||
	    profile == 135) {
		chroma = h26x_bits_ue(&b);
		if (chroma == 3)
			separate = h26x_bits_u(&b, 1);
		h26x_bits_ue(&b);
		h26x_bits_ue(&b);
		h26x_bits_u(&b, 1);
		if (h26x_bits_u(&b, 1)) /* seq_scaling_matrix_present_flag */
			for (unsigned i = 0; i < (chroma != 3 ? 8u : 12u); i++)
				if (h26x_bits_u(&b, 1))
					skip_scaling_list(&b, i < 6 ? 16 : 64);
	}
	uint32_t log2_frame_num = h26x_bits_ue(&b) + 4, poc_type = h26x_bits_ue(&b), log2_poc_lsb = 0;
	if (poc_type == 0) {
		log2_poc_lsb = h26x_bits_ue(&b) + 4;
	} else if (poc_type == 1) {
		h26x_bits_u(&b, 1);
		h26x_bits_se(&b);
		h26x_bits_se(&b);
		uint32_t n = h26x_bits_ue(&b);
		for (uint32_t i = 0; i < n && i < 256 && !b.overrun; i++)
			h26x_bits_se(&b);
	}
	uint32_t refs = h26x_bits_ue(&b);
	h26x_bits_u(&b, 1); /* gaps_in_frame_num_value_allowed_flag */
	uint32_t w_mbs = h26x_bits_ue(&b) + 1, h_units = h26x_bits_ue(&b) + 1;
	bool frame_mbs_only = h26x_bits_u(&b, 1);
	if (!frame_mbs_only)
		h26x_bits_u(&b, 1);
	h26x_bits_u(&b, 1); /* direct_8x8_inference_flag */
	uint32_t crop[4] = {0};
	if (h26x_bits_u(&b, 1))
		for (int i = 0; i < 4; i++)
			crop[i] = h26x_bits_ue(&b);
	/* 7-19 to 7-22 and the cropping of 7.4.2.1.1 */
	uint32_t cx = separate || chroma == 0 || chroma == 3 ? 1 : 2;
	uint32_t cy = (separate || chroma == 0 || chroma >= 2 ? 1 : 2) * (frame_mbs_only ? 1 : 2);
	dimensions(p, (uint64_t)w_mbs * 16, (uint64_t)h_units * 16 * (frame_mbs_only ? 1 : 2),
		   ((uint64_t)crop[0] + crop[1]) * cx, ((uint64_t)crop[2] + crop[3]) * cy);
	if (b.overrun || log2_frame_num > 16 || poc_type > 2 || log2_poc_lsb > 16)
		return -EBADMSG;
	p->max_reorder = H26X_REORDER_UNKNOWN;
	if (h26x_bits_u(&b, 1)) /* vui_parameters_present_flag */
		h264_vui(p, &b);
	p->log2_max_frame_num = log2_frame_num;
	p->poc_type = poc_type;
	p->log2_max_poc_lsb = log2_poc_lsb;
	p->frame_mbs_only = frame_mbs_only;
	p->separate_colour_plane = separate;
	p->max_ref_frames = refs;
	p->have_sps = true;
	return 0;
}

static int h264_pps(struct h26x_poc *p, const uint8_t *nal, size_t len)
{
	struct h26x_bits b;
	h26x_bits_init(&b, nal, len, 1);
	h26x_bits_ue(&b);
	h26x_bits_ue(&b);
	h26x_bits_u(&b, 1); /* entropy_coding_mode_flag */
	h26x_bits_u(&b, 1); /* bottom_field_pic_order_in_frame_present_flag: after the POC lsb */
	if (b.overrun)
		return -EBADMSG;
	p->have_pps = true;
	return 0;
}

/* The POC msb of lsb against the previous picture's (H.264 8-3, H.265 8-1). After
 * 2^30 counts without a reset (years of frames) it starts again from 0. */
static int32_t poc_msb(const struct h26x_poc *p, int32_t lsb)
{
	int64_t max = (int64_t)1 << p->log2_max_poc_lsb, msb = p->prev_msb;
	if (lsb < p->prev_lsb && p->prev_lsb - lsb >= max / 2)
		msb += max;
	else if (lsb > p->prev_lsb && lsb - p->prev_lsb > max / 2)
		msb -= max;
	return msb > (1 << 30) || msb < -(1 << 30) ? 0 : (int32_t)msb;
}

static int h264_slice(struct h26x_poc *p, const uint8_t *nal, size_t len, int32_t *ret_poc, bool *ret_reset)
{
	if (p->poc_type == 1)
		return -ENOTSUP;
	unsigned type = nal[0] & 0x1f, ref_idc = nal[0] >> 5 & 3;
	bool idr = type == 5;
	struct h26x_bits b;
	h26x_bits_init(&b, nal, len, 1);
	h26x_bits_ue(&b); /* first_mb_in_slice */
	h26x_bits_ue(&b); /* slice_type */
	h26x_bits_ue(&b); /* pic_parameter_set_id */
	if (p->separate_colour_plane)
		h26x_bits_u(&b, 2);
	uint32_t frame_num = h26x_bits_u(&b, p->log2_max_frame_num);
	if (!p->frame_mbs_only && h26x_bits_u(&b, 1)) /* field_pic_flag */
		h26x_bits_u(&b, 1);
	if (idr)
		h26x_bits_ue(&b); /* idr_pic_id */
	int32_t lsb = p->poc_type == 0 ? (int32_t)h26x_bits_u(&b, p->log2_max_poc_lsb) : 0;
	if (b.overrun)
		return -EBADMSG;
	if (idr) {
		p->prev_msb = 0;
		p->prev_lsb = 0;
	}
	if (p->poc_type == 2) { /* output order is decode order (8.2.1.3) */
		if (idr)
			p->frame_num_offset = 0;
		else if (p->prev_frame_num > frame_num)
			p->frame_num_offset += 1u << p->log2_max_frame_num;
		p->prev_frame_num = frame_num;
		uint32_t poc = idr ? 0 : 2 * (p->frame_num_offset + frame_num) - (ref_idc ? 0 : 1);
		*ret_poc = (int32_t)(poc & 0x7fffffff); /* wraps after 2^30 frames without an IDR */
		*ret_reset = idr;
		return 0;
	}
	int32_t msb = poc_msb(p, lsb);
	if (ref_idc) {
		p->prev_msb = msb;
		p->prev_lsb = lsb;
	}
	*ret_poc = msb + lsb;
	*ret_reset = idr;
	return 0;
}

/* H.265 profile_tier_level (7.3.3) for maxNumSubLayersMinus1 = n. */
static void h265_ptl(struct h26x_bits *b, uint32_t n)
{
	h26x_bits_u(b, 32);
	h26x_bits_u(b, 32);
	h26x_bits_u(b, 32); /* general profile, flags, level: 96 bits */
	bool prof[8] = {0}, level[8] = {0};
	for (uint32_t i = 0; i < n; i++) {
		prof[i] = h26x_bits_u(b, 1);
		level[i] = h26x_bits_u(b, 1);
	}
	if (n > 0)
		for (uint32_t i = n; i < 8; i++)
			h26x_bits_u(b, 2);
	for (uint32_t i = 0; i < n; i++) {
		if (prof[i]) {
			h26x_bits_u(b, 32);
			h26x_bits_u(b, 32);
			h26x_bits_u(b, 24);
		}
		if (level[i])
			h26x_bits_u(b, 8);
	}
}

static int h265_sps(struct h26x_poc *p, const uint8_t *nal, size_t len)
{
	struct h26x_bits b;
	h26x_bits_init(&b, nal, len, 2);
	h26x_bits_u(&b, 4);
	uint32_t sub_layers = h26x_bits_u(&b, 3);
	h26x_bits_u(&b, 1);
	if (sub_layers > 6)
		return -EBADMSG;
	h265_ptl(&b, sub_layers);
	h26x_bits_ue(&b); /* sps_seq_parameter_set_id */
	bool separate = false;
	uint32_t chroma = h26x_bits_ue(&b);
	if (chroma == 3)
		separate = h26x_bits_u(&b, 1);
	uint32_t w = h26x_bits_ue(&b), h = h26x_bits_ue(&b);
	uint32_t win[4] = {0};
	if (h26x_bits_u(&b, 1)) /* conformance_window_flag */
		for (int i = 0; i < 4; i++)
			win[i] = h26x_bits_ue(&b);
	uint32_t sw = chroma == 1 || chroma == 2 ? 2 : 1, sh = chroma == 1 ? 2 : 1; /* table 6-1 */
	dimensions(p, w, h, ((uint64_t)win[0] + win[1]) * sw, ((uint64_t)win[2] + win[3]) * sh);
	h26x_bits_ue(&b);
	h26x_bits_ue(&b);
	uint32_t log2_poc_lsb = h26x_bits_ue(&b) + 4;
	bool all = h26x_bits_u(&b, 1); /* sps_sub_layer_ordering_info_present_flag */
	uint32_t reorder = 0, buffering = 0;
	for (uint32_t i = all ? 0 : sub_layers; i <= sub_layers; i++) {
		buffering = h26x_bits_ue(&b) + 1;
		reorder = h26x_bits_ue(&b);
		h26x_bits_ue(&b);
	}
	if (b.overrun || log2_poc_lsb > 16)
		return -EBADMSG;
	p->log2_max_poc_lsb = log2_poc_lsb;
	p->separate_colour_plane = separate;
	p->max_reorder = reorder;
	p->max_ref_frames = buffering;
	p->have_sps = true;
	return 0;
}

static int h265_pps(struct h26x_poc *p, const uint8_t *nal, size_t len)
{
	struct h26x_bits b;
	h26x_bits_init(&b, nal, len, 2);
	h26x_bits_ue(&b);
	h26x_bits_ue(&b);
	bool dependent = h26x_bits_u(&b, 1), output = h26x_bits_u(&b, 1);
	uint32_t extra = h26x_bits_u(&b, 3);
	if (b.overrun)
		return -EBADMSG;
	p->dependent_slices = dependent;
	p->output_flag_present = output;
	p->extra_slice_header_bits = extra;
	p->have_pps = true;
	return 0;
}

static int h265_slice(struct h26x_poc *p, const uint8_t *nal, size_t len, int32_t *ret_poc, bool *ret_reset)
{
	unsigned type = (nal[0] >> 1) & 0x3f, tid = (nal[1] & 7) - 1u;
	struct h26x_bits b;
	h26x_bits_init(&b, nal, len, 2);
	if (!h26x_bits_u(&b, 1)) /* not the first slice segment of its picture */
		return -ENOENT;
	bool irap = type >= 16 && type <= 23, idr = type == 19 || type == 20;
	if (irap)
		h26x_bits_u(&b, 1); /* no_output_of_prior_pics_flag */
	h26x_bits_ue(&b);           /* slice_pic_parameter_set_id */
	h26x_bits_u(&b, p->extra_slice_header_bits);
	h26x_bits_ue(&b); /* slice_type */
	if (p->output_flag_present)
		h26x_bits_u(&b, 1);
	if (p->separate_colour_plane)
		h26x_bits_u(&b, 2);
	int32_t lsb = idr ? 0 : (int32_t)h26x_bits_u(&b, p->log2_max_poc_lsb);
	if (b.overrun)
		return -EBADMSG;
	/* IDR and BLA, and a CRA that opens the stream, start the count (NoRaslOutputFlag). */
	bool reset = idr || (type >= 16 && type <= 18) || (type == 21 && !p->seen_irap);
	if (irap)
		p->seen_irap = true;
	int32_t msb = reset ? 0 : poc_msb(p, lsb);
	/* prevTid0Pic: TemporalId 0, not RASL, RADL or a sub-layer non-reference picture. */
	if (tid == 0 && !(type >= 6 && type <= 9) && !(type <= 14 && type % 2 == 0)) {
		p->prev_msb = msb;
		p->prev_lsb = lsb;
	}
	*ret_poc = msb + lsb;
	*ret_reset = reset;
	return 0;
}

int h26x_poc_au(struct h26x_poc *p, const uint8_t *au, size_t len, int32_t *ret_poc, bool *ret_reset)
{
	size_t off = 0, n;
	const uint8_t *nal;
	bool h265 = p->codec == KP_CODEC_H265;
	size_t hdr = h26x_nal_header_size(p->codec);
	while (h26x_annexb_next(au, len, &off, &nal, &n)) {
		if (n <= hdr)
			continue;
		unsigned type = h26x_nal_type(p->codec, nal);
		int r = 0;
		if (type == (h265 ? 33u : 7u))
			r = h265 ? h265_sps(p, nal, n) : h264_sps(p, nal, n);
		else if (type == (h265 ? 34u : 8u))
			r = h265 ? h265_pps(p, nal, n) : h264_pps(p, nal, n);
		else if (h26x_is_vcl(p->codec, type)) {
			if (!p->have_sps || !p->have_pps)
				return -ENOENT;
			r = h265 ? h265_slice(p, nal, n, ret_poc, ret_reset)
				 : h264_slice(p, nal, n, ret_poc, ret_reset);
			if (r != -ENOENT)
				return r;
			continue;
		}
		if (r < 0)
			return r;
	}
	return -ENOENT;
}

uint32_t h26x_poc_reorder(const struct h26x_poc *p)
{
	if (!p->have_sps)
		return 0;
	return p->max_reorder != H26X_REORDER_UNKNOWN ? p->max_reorder : p->max_ref_frames;
}

unsigned h26x_poc_step(const struct h26x_poc *p)
{
	return p->codec == KP_CODEC_H265 ? 1 : 2;
}
