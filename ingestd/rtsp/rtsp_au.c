/* Annex-B access units with parameter sets from libavformat packets and extradata. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rtp_h26x.h"
#include "rtsp_au.h"

_Static_assert((int)KP_CODEC_H264 == (int)RTP_H264 && (int)KP_CODEC_H265 == (int)RTP_H265,
	       "kp_codec and rtp_codec share their values");

static const uint8_t start_code[4] = {0, 0, 0, 1};

/* NAL units of a buffer that is Annex-B or length-prefixed (lsz > 0). */
struct nal_iter {
	const uint8_t *p;
	size_t len, off;
	unsigned lsz;
};

static bool is_annexb(const uint8_t *p, size_t len)
{
	return (len >= 3 && p[0] == 0 && p[1] == 0 && p[2] == 1) ||
	       (len >= 4 && p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 1);
}

static int nal_iter_init(struct nal_iter *it, const uint8_t *p, size_t len, unsigned lsz, const char **ret_reason)
{
	*it = (struct nal_iter){.p = p, .len = len, .lsz = lsz};
	if (is_annexb(p, len))
		it->lsz = 0;
	else if (lsz == 0) {
		*ret_reason = "packet is neither Annex-B nor length-prefixed";
		return -EBADMSG;
	}
	return 0;
}

/* 1 with the next NAL unit, 0 at the end, or a negative errno. */
static int nal_iter_next(struct nal_iter *it, const uint8_t **ret_nal, size_t *ret_n, const char **ret_reason)
{
	if (it->lsz == 0)
		return rtp_annexb_next(it->p, it->len, &it->off, ret_nal, ret_n) ? 1 : 0;
	if (it->off == it->len)
		return 0;
	if (it->len - it->off < it->lsz) {
		*ret_reason = "NAL length prefix truncated";
		return -EBADMSG;
	}
	size_t n = 0;
	for (unsigned i = 0; i < it->lsz; i++)
		n = n << 8 | it->p[it->off + i];
	it->off += it->lsz;
	if (n == 0 || n > it->len - it->off) {
		*ret_reason = n ? "NAL length overruns the packet" : "zero-length NAL unit";
		return -EBADMSG;
	}
	*ret_nal = it->p + it->off;
	*ret_n = n;
	it->off += n;
	return 1;
}

static int put_nal(uint8_t *out, size_t cap, size_t *len, const uint8_t *nal, size_t n, const char **ret_reason)
{
	if (cap - *len < sizeof start_code || n > cap - *len - sizeof start_code) {
		*ret_reason = "parameter sets too large";
		return -ENOBUFS;
	}
	memcpy(out + *len, start_code, sizeof start_code);
	memcpy(out + *len + sizeof start_code, nal, n);
	*len += sizeof start_code + n;
	return 0;
}

static bool nal_ok(enum kp_codec codec, size_t n)
{
	return n >= (codec == KP_CODEC_H264 ? 1u : 2u);
}

/* Copies the parameter sets of n_arrays length-prefixed lists (avcC/hvcC bodies). */
static int copy_list(enum kp_codec codec, const uint8_t *p, size_t len, size_t *off, unsigned count, uint8_t *out,
		     size_t cap, size_t *out_len, const char **ret_reason)
{
	for (unsigned i = 0; i < count; i++) {
		if (len - *off < 2) {
			*ret_reason = "extradata parameter set length truncated";
			return -EBADMSG;
		}
		size_t n = (size_t)p[*off] << 8 | p[*off + 1];
		*off += 2;
		if (n > len - *off || !nal_ok(codec, n)) {
			*ret_reason = "extradata parameter set overruns the extradata";
			return -EBADMSG;
		}
		if (rtp_nal_is_param_set((enum rtp_codec)codec, rtp_nal_type((enum rtp_codec)codec, p + *off))) {
			int r = put_nal(out, cap, out_len, p + *off, n, ret_reason);
			if (r < 0)
				return r;
		}
		*off += n;
	}
	return 0;
}

int ing_rtsp_extradata_params(enum kp_codec codec, const uint8_t *extra, size_t len, uint8_t *out, size_t cap,
			      size_t *ret_len, unsigned *ret_nal_len_size, const char **ret_reason)
{
	size_t out_len = 0;
	if (codec != KP_CODEC_H264 && codec != KP_CODEC_H265) {
		*ret_reason = "codec is neither H.264 nor H.265";
		return -EINVAL;
	}
	if (len == 0 || is_annexb(extra, len)) {
		size_t off = 0, n;
		const uint8_t *nal;
		while (rtp_annexb_next(extra, len, &off, &nal, &n)) {
			if (!nal_ok(codec, n) ||
			    !rtp_nal_is_param_set((enum rtp_codec)codec, rtp_nal_type((enum rtp_codec)codec, nal)))
				continue;
			int r = put_nal(out, cap, &out_len, nal, n, ret_reason);
			if (r < 0)
				return r;
		}
		*ret_len = out_len;
		*ret_nal_len_size = 0;
		return 0;
	}
	unsigned lsz;
	size_t off;
	int r;
	if (codec == KP_CODEC_H264) {
		if (len < 7 || extra[0] != 1) {
			*ret_reason = "avcC extradata too short or not version 1";
			return -EBADMSG;
		}
		lsz = (extra[4] & 3u) + 1;
		off = 6;
		r = copy_list(codec, extra, len, &off, extra[5] & 0x1fu, out, cap, &out_len, ret_reason);
		if (r < 0)
			return r;
		if (off >= len) {
			*ret_reason = "avcC extradata lacks its PPS count";
			return -EBADMSG;
		}
		unsigned pps = extra[off++];
		r = copy_list(codec, extra, len, &off, pps, out, cap, &out_len, ret_reason);
		if (r < 0)
			return r;
	} else {
		if (len < 23 || extra[0] != 1) {
			*ret_reason = "hvcC extradata too short or not version 1";
			return -EBADMSG;
		}
		lsz = (extra[21] & 3u) + 1;
		unsigned arrays = extra[22];
		off = 23;
		for (unsigned a = 0; a < arrays; a++) {
			if (len - off < 3) {
				*ret_reason = "hvcC array header truncated";
				return -EBADMSG;
			}
			unsigned count = (unsigned)extra[off + 1] << 8 | extra[off + 2];
			off += 3;
			r = copy_list(codec, extra, len, &off, count, out, cap, &out_len, ret_reason);
			if (r < 0)
				return r;
		}
	}
	if (lsz == 3) {
		*ret_reason = "NAL length size 3 is not allowed";
		return -EBADMSG;
	}
	*ret_len = out_len;
	*ret_nal_len_size = lsz;
	return 0;
}

static uint64_t needed_param_types(enum kp_codec codec)
{
	return codec == KP_CODEC_H264 ? (1ull << 7 | 1ull << 8) : (1ull << 32 | 1ull << 33 | 1ull << 34);
}

int ing_rtsp_au_build(enum kp_codec codec, const uint8_t *pkt, size_t len, unsigned nal_len_size, bool keyframe,
		      const uint8_t *params, size_t params_len, uint8_t **buf, size_t *cap, size_t *ret_len,
		      const char **ret_reason)
{
	enum rtp_codec rc = (enum rtp_codec)codec;
	if (codec != KP_CODEC_H264 && codec != KP_CODEC_H265) {
		*ret_reason = "codec is neither H.264 nor H.265";
		return -EINVAL;
	}
	if (nal_len_size > 4 || nal_len_size == 3) {
		*ret_reason = "NAL length size must be 1, 2 or 4";
		return -EINVAL;
	}
	/* First pass: validate, size, and find which parameter sets are present. */
	struct nal_iter it;
	int r = nal_iter_init(&it, pkt, len, nal_len_size, ret_reason);
	if (r < 0)
		return r;
	uint64_t present = 0;
	size_t need = 0, n;
	unsigned count = 0;
	const uint8_t *nal;
	while ((r = nal_iter_next(&it, &nal, &n, ret_reason)) > 0) {
		if (!nal_ok(codec, n)) {
			*ret_reason = "NAL unit shorter than its header";
			return -EBADMSG;
		}
		present |= 1ull << rtp_nal_type(rc, nal);
		need += sizeof start_code + n;
		count++;
	}
	if (r < 0)
		return r;
	if (count == 0) {
		*ret_reason = "packet without NAL units";
		return -ENODATA;
	}
	uint64_t wanted = keyframe ? needed_param_types(codec) & ~present : 0;
	size_t off = 0;
	while (wanted && rtp_annexb_next(params, params_len, &off, &nal, &n))
		if (nal_ok(codec, n) && (wanted & 1ull << rtp_nal_type(rc, nal)))
			need += sizeof start_code + n;
	if (need > RTP_MAX_AU) {
		*ret_reason = "access unit exceeds the ceiling";
		return -EMSGSIZE;
	}
	if (need > *cap) {
		uint8_t *b = realloc(*buf, need);
		if (!b) {
			*ret_reason = "out of memory for the access unit";
			return -ENOMEM;
		}
		*buf = b;
		*cap = need;
	}
	/* Second pass: write. */
	size_t w = 0;
	off = 0;
	while (wanted && rtp_annexb_next(params, params_len, &off, &nal, &n)) {
		if (nal_ok(codec, n) && (wanted & 1ull << rtp_nal_type(rc, nal)))
			put_nal(*buf, need, &w, nal, n, ret_reason);
	}
	nal_iter_init(&it, pkt, len, nal_len_size, ret_reason);
	while (nal_iter_next(&it, &nal, &n, ret_reason) > 0)
		put_nal(*buf, need, &w, nal, n, ret_reason);
	*ret_len = w;
	return 0;
}
