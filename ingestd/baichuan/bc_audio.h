/* A Baichuan main stream's audio (BAICHUAN.md section 5: "05wb"/"15wb" records holding
 * ADTS frames, "01wb" records holding one DVI-4 ADPCM block, 8 kHz mono; neither with a
 * timestamp of its own) to audio units on the video's 90 kHz clock (ADPCM blocks as
 * they come: ingestd's core converts them to Opus, audio_conv.h). The records come in the camera's mux order, so an
 * audio run is anchored where the video stands when its first frame arrives (the last video frame's time plus the time
 * since it arrived, at most BC_AUDIO_MUX_SLACK_MS) and then advances by the samples each frame holds, as neolink times
 * them (src/rtsp/factory.rs: the AAC duration added per record). A run is anchored again when the format changes or it
 * strays more than BC_AUDIO_RESYNC_MS from the video. */
#ifndef KP_BC_AUDIO_H
#define KP_BC_AUDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "camera.h"

#define BC_AUDIO_MUX_SLACK_MS 100
#define BC_AUDIO_RESYNC_MS    1000
#define BC_ADPCM_RATE         8000 /* neolink src/rtsp/factory.rs: rate=8000, channels=1 */
#define BC_ADPCM_STATE        4    /* predictor (16 bits), step index, reserved */
#define BC_ADPCM_BLOCK_MAX    4096

struct bc_audio {
	bool anchored;
	struct kp_audio_format fmt;
	int64_t anchor_pts; /* 90 kHz time of the run's first sample */
	uint64_t samples;   /* since the anchor */
	uint64_t frames, bad_frames, anchors;
};

/* One AAC record's payload, video_pts the video's position (see above; negative: no
 * video yet, the audio is dropped). Each ADTS frame goes to sink->audio_unit without
 * its header; a payload that is not whole ADTS frames is dropped from the first bad
 * byte on and counted. */
void bc_audio_aac(struct bc_audio *a, const uint8_t *data, size_t len, int64_t video_pts, int64_t wall_us,
		  const struct ing_sink *sink);
/* One ADPCM record's block (its state and samples: (len - 4) * 2 + 1 of them), as one
 * unit; a block of at most 4 or more than BC_ADPCM_BLOCK_MAX bytes is dropped and
 * counted. */
void bc_audio_adpcm(struct bc_audio *a, const uint8_t *data, size_t len, int64_t video_pts, int64_t wall_us,
		    const struct ing_sink *sink);

#endif
