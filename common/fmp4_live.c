/* Live access units as fragmented MP4 for Media Source Extensions (see fmp4_live.h). */
#include "fmp4_live.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "h26x_config.h"
#include "kp_checked.h"

static struct h26x_nal nals[H26X_NAL_MAX_PER_AU];

int fmp4_live_codecs(enum kp_codec codec, const uint8_t *c, size_t len, char *out, size_t cap)
{
	int n;
	if (codec == KP_CODEC_H264) {
		if (len < 4)
			return -EBADMSG;
		n = snprintf(out, cap, "avc1.%02x%02x%02x", c[1], c[2], c[3]);
		return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
	}
	if (codec != KP_CODEC_H265 || len < 13)
		return -EBADMSG;
	/* hvcC: profile space (2 bits), tier (1), profile_idc (5); 32 compatibility flags,
	 * flag 0 first, written bit-reversed; 6 bytes of constraint flags, trailing zero
	 * bytes left out; level_idc. */
	uint32_t flags = (uint32_t)c[2] << 24 | (uint32_t)c[3] << 16 | (uint32_t)c[4] << 8 | c[5], rev = 0;
	for (int i = 0; i < 32; i++)
		rev |= ((flags >> (31 - i)) & 1u) << i;
	const char *space[] = {"", "A", "B", "C"};
	n = snprintf(out, cap, "hev1.%s%u.%X.%c%u", space[c[1] >> 6], c[1] & 0x1fu, rev, c[1] & 0x20 ? 'H' : 'L',
		     c[12]);
	unsigned last = 6;
	while (last > 0 && c[6 + last - 1] == 0)
		last--;
	for (unsigned i = 0; i < last && n >= 0 && (size_t)n < cap; i++)
		n += snprintf(out + n, cap - (size_t)n, ".%X", c[6 + i]);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

int fmp4_live_init(struct fmp4_live *l, enum kp_codec codec, const uint8_t *au, size_t len, uint32_t width,
		   uint32_t height, uint8_t *out, size_t cap, size_t *ret_len)
{
	if ((codec != KP_CODEC_H264 && codec != KP_CODEC_H265) || width > UINT16_MAX || height > UINT16_MAX)
		return -EINVAL;
	int n = h26x_split(au, len, nals, H26X_NAL_MAX_PER_AU);
	if (n < 0)
		return -EBADMSG;
	struct h26x_param_sets ps;
	memset(&ps, 0, sizeof ps);
	int found = h26x_param_sets(codec, nals, (unsigned)n, &ps);
	if (found < 0)
		return -EBADMSG;
	if (!ps.sps.len || !ps.pps.len || (codec == KP_CODEC_H265 && !ps.vps.len))
		return -EINVAL;
	struct fmp4_track t = {.codec = codec, .width = (uint16_t)width, .height = (uint16_t)height};
	int r = h26x_config_write(codec, &ps, t.config, sizeof t.config, &t.config_len);
	if (r < 0)
		return r == -ENOSPC ? r : -EBADMSG;
	r = fmp4_live_codecs(codec, t.config, t.config_len, l->codecs, sizeof l->codecs);
	if (r < 0)
		return -EBADMSG;
	r = fmp4_write_init(&t, out, cap, ret_len);
	if (r < 0)
		return r;
	l->codec = codec;
	return 0;
}

size_t fmp4_live_frag_cap(size_t len)
{
	/* A 3-byte start code becomes a 4-byte length: at most len / 3 more bytes. */
	return FMP4_FRAG_HEADER_MAX + len + len / 3 + 4;
}

int fmp4_live_frag(struct fmp4_live *l, const uint8_t *au, size_t len, bool keyframe, uint32_t duration, int32_t cto,
		   int64_t wall_us, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (duration == 0 || cto < 0 || cto > FMP4_LIVE_CTO_MAX)
		return -ERANGE;
	int n = h26x_split(au, len, nals, H26X_NAL_MAX_PER_AU);
	if (n < 0)
		return -EBADMSG;
	unsigned kept = 0;
	for (unsigned i = 0; i < (unsigned)n; i++)
		if (!h26x_is_param_set(l->codec, h26x_nal_type(l->codec, nals[i].data)))
			nals[kept++] = nals[i];
	size_t size = h26x_sample_size(nals, kept);
	if (kept == 0 || size > UINT32_MAX)
		return -EBADMSG;
	struct fmp4_sample smp = {.size = (uint32_t)size, .duration = duration, .cto = cto, .keyframe = keyframe};
	struct fmp4_frag_desc d = {
	    .seq = l->seq + 1, .base_time = l->next_dts, .wall_us = wall_us, .samples = &smp, .nsamples = 1};
	size_t hlen;
	int r = fmp4_write_frag_header(&d, out, cap, &hlen);
	if (r < 0)
		return r;
	size_t total;
	if (kp_add_size(hlen, size, &total) < 0 || total > cap)
		return -ENOSPC;
	h26x_to_sample(nals, kept, out + hlen);
	l->seq++;
	l->next_dts += duration;
	*ret_len = total;
	return 0;
}
