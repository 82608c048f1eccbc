/* Baichuan AAC records to audio units (see bc_audio.h). */
#include "bc_audio.h"

#include "audio.h"

static int64_t run_pts(const struct bc_audio *a)
{
	return a->anchor_pts + (int64_t)(a->samples * 90000 / a->fmt.rate);
}

/* One frame of the run: its time, the run anchored again when needed. */
static void unit(struct bc_audio *a, const struct kp_audio_format *fmt, const uint8_t *data, size_t len,
		 int64_t video_pts, int64_t wall_us, const struct ing_sink *sink)
{
	int64_t pts = a->anchored ? run_pts(a) : 0;
	int64_t stray = pts - video_pts;
	if (!a->anchored || !kp_audio_format_same(fmt, &a->fmt) || stray > BC_AUDIO_RESYNC_MS * 90 ||
	    stray < -BC_AUDIO_RESYNC_MS * 90) {
		a->anchored = true;
		a->fmt = *fmt;
		a->anchor_pts = video_pts;
		a->samples = 0;
		a->anchors++;
		pts = video_pts;
	}
	struct kp_audio_unit au = {.fmt = a->fmt, .pts_90k = pts, .wall_us = wall_us, .data = data, .len = len};
	a->samples += a->fmt.frame_samples;
	a->frames++;
	sink->audio_unit(sink->ctx, &au);
}

void bc_audio_aac(struct bc_audio *a, const uint8_t *data, size_t len, int64_t video_pts, int64_t wall_us,
		  const struct ing_sink *sink)
{
	if (video_pts < 0)
		return;
	size_t off = 0;
	while (off < len) {
		struct kp_audio_format fmt;
		size_t hlen, flen;
		if (kp_adts_parse(data + off, len - off, &hlen, &flen, &fmt) < 0) {
			a->bad_frames++;
			return;
		}
		unit(a, &fmt, data + off + hlen, flen - hlen, video_pts, wall_us, sink);
		off += flen;
	}
}

void bc_audio_adpcm(struct bc_audio *a, const uint8_t *data, size_t len, int64_t video_pts, int64_t wall_us,
		    const struct ing_sink *sink)
{
	if (video_pts < 0)
		return;
	if (len <= BC_ADPCM_STATE || len > BC_ADPCM_BLOCK_MAX) {
		a->bad_frames++;
		return;
	}
	struct kp_audio_format fmt = {.codec = KP_AUDIO_ADPCM_IMA,
				      .rate = BC_ADPCM_RATE,
				      .channels = 1,
				      .frame_samples = (uint32_t)(len - BC_ADPCM_STATE) * 2 + 1};
	unit(a, &fmt, data, len, video_pts, wall_us, sink);
}
