/* A camera stream's audio on its way into the recording: frames queued as they arrive
 * (on the video's 90 kHz clock), taken when the GOP they belong to is written (every
 * frame before the next keyframe's time goes into that GOP's fragment, as the second
 * traf), and timed on the file's audio track: a continuous run of frames, each as long
 * as its samples, from the first frame's time; a frame more than half a frame off that run (lost
 * frames, a corrected camera clock) restarts it at its own time, by changing the
 * duration of the frame before it (or the fragment's start); a frame more than one
 * second behind (or ten seconds ahead) is dropped. The file's audio track is the format known when the file is opened;
 * a new or changed format starts a new file at the next keyframe. */
#ifndef KP_REC_AUDIO_QUEUE_H
#define KP_REC_AUDIO_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio.h"
#include "fmp4.h"
#include "kp_limits.h"

#define REC_AUDIO_MAX_BYTES (1 * KP_MIB) /* queued audio bytes; the oldest frame goes first */

struct rec_audio_frame {
	int64_t pts; /* 90 kHz */
	uint32_t size;
	uint32_t samples;
};

struct rec_audio_queue {
	struct kp_audio_format fmt; /* of the last frame queued */
	bool have_fmt;
	uint8_t *buf;
	size_t len, cap;
	struct rec_audio_frame q[FMP4_AUDIO_MAX_SAMPLES];
	unsigned n;
	/* the file's audio track */
	bool file_audio;
	struct kp_audio_format file_fmt;
	bool started;
	int64_t next; /* decode time of its next sample, in its timescale */
	uint64_t frames, dropped;
};

/* What one fragment takes: n samples whose bytes are buf[0, len), base their decode
 * time; consumed frames (consumed_bytes) leave the queue in rec_audio_release. */
struct rec_audio_take {
	unsigned n, consumed;
	size_t len, consumed_bytes;
	uint64_t base;
};

/* Queues one frame of samples (copied); 0, -EINVAL (empty, too large, no samples),
 * -ENOMEM. */
int rec_audio_push(struct rec_audio_queue *q, const struct kp_audio_format *fmt, int64_t pts, uint32_t samples,
		   const uint8_t *data, size_t len);
/* A file opens: the format of its audio track (NULL: no audio yet). */
const struct kp_audio_format *rec_audio_file_start(struct rec_audio_queue *q);
void rec_audio_file_end(struct rec_audio_queue *q);
/* Whether the audio differs from the open file's track (a new file is due). */
bool rec_audio_changed(const struct rec_audio_queue *q);
/* The samples of the fragment of the file started at file_pts0, frames before limit. */
void rec_audio_take(struct rec_audio_queue *q, int64_t limit, int64_t file_pts0, struct fmp4_sample *out,
		    struct rec_audio_take *ret);
void rec_audio_release(struct rec_audio_queue *q, const struct rec_audio_take *t);
void rec_audio_free(struct rec_audio_queue *q);

#endif
