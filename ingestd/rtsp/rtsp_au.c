/* Annex-B access units with parameter sets, and parameter sets from extradata (see rtsp_au.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "h26x_config.h"
#include "rtp_h26x.h"
#include "rtsp_au.h"

static const uint8_t start_code[4] = {0, 0, 0, 1};

/* NAL units of a buffer that is Annex-B or length-prefixed (lsz > 0). */
struct nal_iter {
	const uint8_t *p;
	size_t len, off;
	unsigned lsz;
};

static int nal_iter_init(struct nal_iter *it, const uint8_t *p, size_t len, unsigned lsz, const char **ret_reason)
{
	*it = (struct nal_iter){.p = p, .len = len, .lsz = lsz};
	if (h26x_is_annexb(p, len))
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
		return h26x_annexb_next(it->p, it->len, &it->off, ret_nal, ret_n) ? 1 : 0;
	struct h26x_nal nal;
	bool prefix_fits = it->len - it->off >= it->lsz;
	int r = h26x_prefixed_next(it->p, it->len, it->lsz, &it->off, &nal);
	if (r < 0) {
		*ret_reason = prefix_fits ? "NAL length overruns the packet" : "NAL length prefix truncated";
		return r;
	}
	if (r > 0 && nal.len == 0) {
		*ret_reason = "zero-length NAL unit";
		return -EBADMSG;
	}
	*ret_nal = nal.data;
	*ret_n = nal.len;
	return r;
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
	return n >= h26x_nal_header_size(codec);
}

int ing_rtsp_extradata_params(enum kp_codec codec, const uint8_t *extra, size_t len, uint8_t *out, size_t cap,
			      size_t *ret_len, unsigned *ret_nal_len_size, const char **ret_reason)
{
	size_t out_len = 0;
	if (codec != KP_CODEC_H264 && codec != KP_CODEC_H265) {
		*ret_reason = "codec is neither H.264 nor H.265";
		return -EINVAL;
	}
	if (len == 0 || h26x_is_annexb(extra, len)) {
		size_t off = 0, n;
		const uint8_t *nal;
		while (h26x_annexb_next(extra, len, &off, &nal, &n)) {
			if (!nal_ok(codec, n) || !h26x_is_param_set(codec, h26x_nal_type(codec, nal)))
				continue;
			int r = put_nal(out, cap, &out_len, nal, n, ret_reason);
			if (r < 0)
				return r;
		}
		*ret_len = out_len;
		*ret_nal_len_size = 0;
		return 0;
	}
	return h26x_config_read(codec, extra, len, out, cap, ret_len, ret_nal_len_size, ret_reason);
}

static uint64_t needed_param_types(enum kp_codec codec)
{
	return codec == KP_CODEC_H264 ? (1ull << 7 | 1ull << 8) : (1ull << 32 | 1ull << 33 | 1ull << 34);
}

int ing_rtsp_au_build(enum kp_codec codec, const uint8_t *pkt, size_t len, unsigned nal_len_size, bool keyframe,
		      const uint8_t *params, size_t params_len, uint8_t **buf, size_t *cap, size_t *ret_len,
		      const char **ret_reason)
{
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
		present |= 1ull << h26x_nal_type(codec, nal);
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
	while (wanted && h26x_annexb_next(params, params_len, &off, &nal, &n))
		if (nal_ok(codec, n) && (wanted & 1ull << h26x_nal_type(codec, nal)))
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
	while (wanted && h26x_annexb_next(params, params_len, &off, &nal, &n)) {
		if (nal_ok(codec, n) && (wanted & 1ull << h26x_nal_type(codec, nal)))
			put_nal(*buf, need, &w, nal, n, ret_reason);
	}
	nal_iter_init(&it, pkt, len, nal_len_size, ret_reason);
	while (nal_iter_next(&it, &nal, &n, ret_reason) > 0)
		put_nal(*buf, need, &w, nal, n, ret_reason);
	*ret_len = w;
	return 0;
}
