/* Baichuan media to access units: BcMedia records (with resync on garbage) to Annex-B
 * access units with keyframe flag, 90 kHz DTS from the unwrapped µs timestamp and PTS
 * from it and the picture order count (bc_pts.h), and the size from InfoV1/V2. */
#include <errno.h>
#include <time.h>

#include "bc_stream.h"
#include "kp_time.h"
#include "log.h"

void bc_stream_init(struct bc_stream *s, const struct ing_camera_info *info, const struct ing_sink *sink,
		    enum kp_stream_index index)
{
	*s = (struct bc_stream){.info = info,
				.sink = sink,
				.index = index,
				.handle = index == KP_STREAM_INDEX_MAIN ? 0 : 256,
				.last_dts = -1};
	bc_pts_init(&s->pts);
}

static void deliver(struct bc_stream *s, const struct bc_media_record *r, uint64_t now_ms)
{
	int64_t us = bc_ts_unwrap(&s->ts, r->ts_us);
	/* The frame's one time, in decode order, is its DTS (bc_pts.h); kept increasing when
	 * a camera steps its clock back. */
	int64_t dts = us * 9 / 100;
	if (dts <= s->last_dts)
		dts = s->last_dts + 1;
	s->last_dts = dts;
	enum kp_codec codec = r->codec == KP_CODEC_H264 ? KP_CODEC_H264 : KP_CODEC_H265;
	bool key = r->kind == BC_MEDIA_IFRAME;
	int64_t pts = bc_pts_next(&s->pts, codec, r->data, r->len, key, dts);
	struct kp_access_unit au = {
	    .codec = codec,
	    .keyframe = key,
	    .pts_90k = pts,
	    .dts_90k = dts,
	    .wall_us = kp_wall_us(),
	    .width = s->width,
	    .height = s->height,
	    .data = r->data,
	    .len = r->len,
	};
	if (!s->streaming) {
		s->streaming = true;
		s->sink->stream_state(s->sink->ctx, s->index, ING_STREAMING, "streaming");
	}
	s->frames++;
	s->last_frame_ms = now_ms;
	s->sink->access_unit(s->sink->ctx, s->index, &au);
}

/* An AAC or ADPCM record, placed after the last video frame (bc_audio.h). */
static void audio(struct bc_stream *s, const struct bc_media_record *r, uint64_t now_ms)
{
	int64_t pts = -1;
	if (s->frames) {
		uint64_t since = now_ms - s->last_frame_ms;
		pts = s->last_dts + (int64_t)(since < BC_AUDIO_MUX_SLACK_MS ? since : BC_AUDIO_MUX_SLACK_MS) * 90;
	}
	uint64_t bad = s->audio.bad_frames, anchors = s->audio.anchors;
	if (r->kind == BC_MEDIA_AAC)
		bc_audio_aac(&s->audio, r->data, r->len, pts, kp_wall_us(), s->sink);
	else
		bc_audio_adpcm(&s->audio, r->data, r->len, pts, kp_wall_us(), s->sink);
	if (s->audio.bad_frames != bad && bad % 100 == 0)
		kp_warn("camera %s: an audio record that is not ADTS frames or an ADPCM block dropped (%llu so far)",
			s->info->name, (unsigned long long)s->audio.bad_frames);
	if (s->audio.anchors != anchors && anchors)
		kp_notice("camera %s: audio re-anchored on the video (%llu times)", s->info->name,
			  (unsigned long long)s->audio.anchors);
}

int bc_stream_payload(struct bc_stream *s, const uint8_t *data, size_t len, uint64_t now_ms, const char **ret_reason)
{
	int err = bc_media_stream_push(&s->media, data, len);
	if (err < 0) {
		*ret_reason = err == -ENOMEM ? "out of memory" : "media buffer exceeds its ceiling";
		return err;
	}
	uint64_t resyncs = s->media.resyncs;
	struct bc_media_record r;
	while (bc_media_stream_next(&s->media, &r) == 0) {
		switch (r.kind) {
		case BC_MEDIA_INFO:
			s->width = r.width;
			s->height = r.height;
			bc_pts_fps(&s->pts, r.fps);
			break;
		case BC_MEDIA_IFRAME:
		case BC_MEDIA_PFRAME:
			if (r.len)
				deliver(s, &r, now_ms);
			break;
		case BC_MEDIA_AAC:
			if (s->index == KP_STREAM_INDEX_MAIN && s->info->audio)
				audio(s, &r, now_ms);
			break;
		case BC_MEDIA_ADPCM:
			if (s->index == KP_STREAM_INDEX_MAIN && s->info->audio)
				audio(s, &r, now_ms);
			break;
		}
	}
	if (s->media.resyncs != resyncs)
		kp_warn("camera %s stream %s: media resync (%llu so far, %llu bytes discarded): %s", s->info->name,
			s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub", (unsigned long long)s->media.resyncs,
			(unsigned long long)s->media.discarded, s->media.last_error);
	return 0;
}

void bc_stream_free(struct bc_stream *s)
{
	bc_media_stream_free(&s->media);
}
