/* avcC and hvcC records: written from parameter sets, with the RBSP bit reader
 * (h26x_bits.h) for the SPS fields they repeat, and read back into Annex-B parameter
 * sets (see h26x_config.h). */
#include "h26x_config.h"

#include <errno.h>
#include <string.h>

#include "h26x_bits.h"

struct out {
	uint8_t *p;
	size_t len, cap;
};

static void put8(struct out *o, uint32_t v)
{
	if (o->len < o->cap)
		o->p[o->len] = (uint8_t)v;
	o->len++;
}

static void put16(struct out *o, uint32_t v)
{
	put8(o, v >> 8);
	put8(o, v);
}

static void put_bytes(struct out *o, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put8(o, d[i]);
}

static int avcc(const struct h26x_param_sets *ps, struct out *o)
{
	if (ps->sps.len < 4 || !ps->pps.len)
		return -EINVAL;
	const uint8_t *sps = ps->sps.data;
	put8(o, 1);
	put8(o, sps[1]); /* profile_idc */
	put8(o, sps[2]); /* constraint flags */
	put8(o, sps[3]); /* level_idc */
	put8(o, 0xff);   /* 4-byte NAL lengths */
	put8(o, 0xe1);   /* one SPS */
	put16(o, ps->sps.len);
	put_bytes(o, sps, ps->sps.len);
	put8(o, 1);
	put16(o, ps->pps.len);
	put_bytes(o, ps->pps.data, ps->pps.len);
	uint8_t profile = sps[1];
	if (profile == 100 || profile == 110 || profile == 122 || profile == 144) {
		struct h26x_bits b;
		h26x_bits_init(&b, ps->sps.data, ps->sps.len, 4);
		h26x_bits_ue(&b); /* seq_parameter_set_id */
		uint32_t chroma = h26x_bits_ue(&b);
		if (chroma == 3)
			h26x_bits_u(&b, 1);
		uint32_t luma = h26x_bits_ue(&b), chroma_depth = h26x_bits_ue(&b);
		if (b.overrun || chroma > 3 || luma > 7 || chroma_depth > 7)
			return -EBADMSG;
		put8(o, 0xfc | chroma);
		put8(o, 0xf8 | luma);
		put8(o, 0xf8 | chroma_depth);
		put8(o, 0); /* no SPS extensions */
	}
	return 0;
}

static void hvcc_array(struct out *o, int type, const struct h26x_ps *p)
{
	put8(o, (uint32_t)type); /* array_completeness 0: more may follow in band (hev1) */
	put16(o, 1);
	put16(o, p->len);
	put_bytes(o, p->data, p->len);
}

static int hvcc(const struct h26x_param_sets *ps, struct out *o)
{
	if (!ps->vps.len || ps->sps.len < 3 || !ps->pps.len)
		return -EINVAL;
	struct h26x_bits b;
	h26x_bits_init(&b, ps->sps.data, ps->sps.len, 2);
	h26x_bits_u(&b, 4); /* sps_video_parameter_set_id */
	uint32_t max_sub_layers = h26x_bits_u(&b, 3);
	uint32_t nesting = h26x_bits_u(&b, 1);
	size_t ptl_at = b.pos / 8; /* the 12-byte general profile_tier_level, byte aligned */
	h26x_bits_u(&b, 32);
	h26x_bits_u(&b, 32);
	h26x_bits_u(&b, 32);
	uint8_t sub_profile[8] = {0}, sub_level[8] = {0};
	for (uint32_t i = 0; i < max_sub_layers; i++) {
		sub_profile[i] = (uint8_t)h26x_bits_u(&b, 1);
		sub_level[i] = (uint8_t)h26x_bits_u(&b, 1);
	}
	if (max_sub_layers > 0)
		for (uint32_t i = max_sub_layers; i < 8; i++)
			h26x_bits_u(&b, 2);
	for (uint32_t i = 0; i < max_sub_layers; i++) {
		if (sub_profile[i]) {
			h26x_bits_u(&b, 32);
			h26x_bits_u(&b, 32);
			h26x_bits_u(&b, 24);
		}
		if (sub_level[i])
			h26x_bits_u(&b, 8);
	}
	h26x_bits_ue(&b); /* sps_seq_parameter_set_id */
	uint32_t chroma = h26x_bits_ue(&b);
	if (chroma == 3)
		h26x_bits_u(&b, 1);
	h26x_bits_ue(&b); /* width */
	h26x_bits_ue(&b); /* height */
	if (h26x_bits_u(&b, 1))
		for (int i = 0; i < 4; i++)
			h26x_bits_ue(&b);
	uint32_t luma = h26x_bits_ue(&b), chroma_depth = h26x_bits_ue(&b);
	if (b.overrun || chroma > 3 || luma > 7 || chroma_depth > 7 || max_sub_layers > 6)
		return -EBADMSG;
	put8(o, 1);
	put_bytes(o, b.rbsp + ptl_at, 12); /* profile space..level, as in the SPS */
	put16(o, 0xf000);                  /* min_spatial_segmentation_idc 0 */
	put8(o, 0xfc);                     /* parallelismType unknown */
	put8(o, 0xfc | chroma);
	put8(o, 0xf8 | luma);
	put8(o, 0xf8 | chroma_depth);
	put16(o, 0); /* avgFrameRate unknown */
	put8(o, (max_sub_layers + 1) << 3 | nesting << 2 | 3);
	put8(o, 3);
	hvcc_array(o, 32, &ps->vps);
	hvcc_array(o, 33, &ps->sps);
	hvcc_array(o, 34, &ps->pps);
	return 0;
}

int h26x_config_write(enum kp_codec codec, const struct h26x_param_sets *ps, uint8_t *out, size_t cap, size_t *ret_len)
{
	struct out o = {.p = out, .cap = cap};
	int r = codec == KP_CODEC_H265 ? hvcc(ps, &o) : avcc(ps, &o);
	if (r < 0)
		return r;
	if (o.len > cap)
		return -ENOSPC;
	*ret_len = o.len;
	return 0;
}

/* Copies count entries (2-byte length, NAL unit) at *off, with start codes, when they
 * are parameter sets. */
static int copy_entries(enum kp_codec codec, const uint8_t *cfg, size_t len, size_t *off, unsigned count, struct out *o,
			const char **ret_reason)
{
	for (unsigned i = 0; i < count; i++) {
		if (len - *off < 2) {
			*ret_reason = "parameter set length truncated";
			return -EBADMSG;
		}
		size_t n = (size_t)cfg[*off] << 8 | cfg[*off + 1];
		*off += 2;
		if (n > len - *off || n < h26x_nal_header_size(codec)) {
			*ret_reason = "parameter set overruns the extradata";
			return -EBADMSG;
		}
		if (h26x_is_param_set(codec, h26x_nal_type(codec, cfg + *off))) {
			put_bytes(o, (const uint8_t *)"\0\0\0\1", 4);
			put_bytes(o, cfg + *off, n);
		}
		*off += n;
	}
	return 0;
}

static int avcc_read(const uint8_t *cfg, size_t len, struct out *o, unsigned *ret_lsz, const char **ret_reason)
{
	if (len < 7 || cfg[0] != 1) {
		*ret_reason = "avcC extradata too short or not version 1";
		return -EBADMSG;
	}
	size_t off = 6;
	int r = copy_entries(KP_CODEC_H264, cfg, len, &off, cfg[5] & 0x1fu, o, ret_reason);
	if (r < 0)
		return r;
	if (off >= len) {
		*ret_reason = "avcC extradata lacks its PPS count";
		return -EBADMSG;
	}
	unsigned pps = cfg[off++];
	r = copy_entries(KP_CODEC_H264, cfg, len, &off, pps, o, ret_reason);
	*ret_lsz = (cfg[4] & 3u) + 1;
	return r;
}

static int hvcc_read(const uint8_t *cfg, size_t len, struct out *o, unsigned *ret_lsz, const char **ret_reason)
{
	if (len < 23 || cfg[0] != 1) {
		*ret_reason = "hvcC extradata too short or not version 1";
		return -EBADMSG;
	}
	unsigned arrays = cfg[22];
	size_t off = 23;
	for (unsigned a = 0; a < arrays; a++) {
		if (len - off < 3) {
			*ret_reason = "hvcC array header truncated";
			return -EBADMSG;
		}
		unsigned count = (unsigned)cfg[off + 1] << 8 | cfg[off + 2];
		off += 3;
		int r = copy_entries(KP_CODEC_H265, cfg, len, &off, count, o, ret_reason);
		if (r < 0)
			return r;
	}
	*ret_lsz = (cfg[21] & 3u) + 1;
	return 0;
}

int h26x_config_read(enum kp_codec codec, const uint8_t *cfg, size_t len, uint8_t *out, size_t cap, size_t *ret_len,
		     unsigned *ret_lsz, const char **ret_reason)
{
	struct out o = {.p = out, .cap = cap};
	unsigned lsz = 0;
	int r = codec == KP_CODEC_H265 ? hvcc_read(cfg, len, &o, &lsz, ret_reason)
				       : avcc_read(cfg, len, &o, &lsz, ret_reason);
	if (r < 0)
		return r;
	if (lsz == 3) {
		*ret_reason = "NAL length size 3 is not allowed";
		return -EBADMSG;
	}
	if (o.len > cap) {
		*ret_reason = "parameter sets too large";
		return -ENOBUFS;
	}
	*ret_len = o.len;
	*ret_lsz = lsz;
	return 0;
}
