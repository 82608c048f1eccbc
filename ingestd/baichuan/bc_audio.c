/* Baichuan AAC records to audio units (see bc_audio.h). */
#include "bc_audio.h"

#include "audio.h"

static int64_t run_pts(const struct bc_audio *a)
{
	return a->anchor_pts + (int64_t)(a->samples * 90000 / a->fmt.rate);
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
		int64_t pts = a->anchored ? run_pts(a) : 0;
		int64_t stray = pts - video_pts;
		if (!a->anchored || !kp_audio_format_same(&fmt, &a->fmt) || stray > BC_AUDIO_RESYNC_MS * 90 ||
		    stray < -BC_AUDIO_RESYNC_MS * 90) {
			a->anchored = true;
			a->fmt = fmt;
			a->anchor_pts = video_pts;
			a->samples = 0;
			a->anchors++;
			pts = video_pts;
		}
		struct kp_audio_unit au = {
		    .fmt = a->fmt, .pts_90k = pts, .wall_us = wall_us, .data = data + off + hlen, .len = flen - hlen};
		a->samples += a->fmt.frame_samples;
		a->frames++;
		sink->audio_unit(sink->ctx, &au);
		off += flen;
	}
}
