/* Live access units as fragmented MP4 for Media Source Extensions (see fmp4_live.h). */
#include "fmp4_live.h"

#include <errno.h>
#include <string.h>

#include "h26x_config.h"
#include "kp_checked.h"

static struct h26x_nal nals[H26X_NAL_MAX_PER_AU];

int fmp4_live_init(struct fmp4_live *l, enum kp_codec codec, const uint8_t *au, size_t len, uint32_t width,
		   uint32_t height, int64_t pts_90k, uint8_t *out, size_t cap, size_t *ret_len)
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
	r = fmp4_write_init(&t, out, cap, ret_len);
	if (r < 0)
		return r;
	*l = (struct fmp4_live){.codec = codec, .base_pts = pts_90k};
	return 0;
}

size_t fmp4_live_frag_cap(size_t len)
{
	/* A 3-byte start code becomes a 4-byte length: at most len / 3 more bytes. */
	return FMP4_FRAG_HEADER_MAX + len + len / 3 + 4;
}

int fmp4_live_frag(struct fmp4_live *l, const uint8_t *au, size_t len, bool keyframe, uint32_t duration,
		   int64_t wall_us, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (duration == 0)
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
	struct fmp4_sample smp = {.size = (uint32_t)size, .duration = duration, .keyframe = keyframe};
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
