/* One camera stream's recording: access units in, one GOP buffered until the next
 * keyframe (whose time gives the last frame its duration), then written as one fMP4
 * fragment to the stream's current file and queued for the group commit; the audio
 * frames of the GOP's time span go into the same fragment (audio_queue.h). A file is
 * created when its first GOP is written, so that its init segment names the audio
 * track that arrived meanwhile. A new file at
 * rollover, at a change of codec, size, parameter sets or audio format, and after a timestamp
 * discontinuity. After lost frames or a write failure it waits for the next keyframe;
 * after ENOSPC it stops with an alert and tries again every REC_DISK_RETRY_MS. */
#ifndef KP_REC_STREAM_H
#define KP_REC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "audio_queue.h"
#include "commit.h"
#include "fmp4.h"
#include "kp_limits.h"
#include "h26x.h"

#define REC_GOP_MAX_BYTES       (32 * KP_MIB)
#define REC_DISK_RETRY_MS       5000
#define REC_MAX_JUMP_90K        (10 * 90000) /* larger DTS steps are discontinuities */
#define REC_MAX_CTO_90K         (10 * 90000) /* PTS - DTS beyond this is not believed */
#define REC_REANCHOR_MS         2000         /* re-anchor a run whose clock drifted this far */
#define REC_DEFAULT_ROLLOVER_MS (600 * 1000)
#define REC_EVENT_POST_MS       (30 * 1000) /* record = events: kept this long after an event */

enum rec_stream_state { REC_IDLE, REC_RECORDING, REC_WAIT_KEYFRAME, REC_DISK_FULL, REC_FAILED };

struct rec_env {
	int data_dirfd;
	struct rec_committer *commit;
	uint64_t next_recording_id;
	uint32_t rollover_ms;
};

struct rec_stream {
	struct rec_env *env;
	char camera[KP_CAMERA_NAME_MAX + 1];
	uint32_t stream;
	uint32_t stream_id;
	uint32_t rollover_ms; /* 0: env->rollover_ms */
	enum rec_stream_state state;
	char last_error[160];

	uint64_t last_seq;
	int have_dts;
	int64_t last_dts;
	int64_t retry_at_ms;

	struct rec_audio_queue audio;
	struct fmp4_sample audio_samples[FMP4_AUDIO_MAX_SAMPLES];

	/* the GOP being collected */
	uint8_t *gop;
	size_t gop_len, gop_cap;
	struct fmp4_sample samples[FMP4_FRAG_MAX_SAMPLES];
	int64_t first_dts;
	unsigned n;

	/* the run: timestamps continuous since its first keyframe */
	int anchored;
	int64_t anchor_ms, anchor_dts;

	/* the file */
	int fd;
	struct cat_recording rec;
	struct fmp4_track track;
	struct h26x_param_sets ps;
	int64_t file_dts0;
	uint64_t off;
	uint32_t seq;
	int first_fragment;

	uint64_t fragments, bytes_written, frames_dropped;
	uint64_t bad_cto; /* frames whose PTS was below their DTS or too far after it */

	/* The file prepared at a keyframe waits for its first GOP to be written (held_dts:
	 * the keyframe's time). record = events: the GOP in memory is the pre-roll; it is
	 * written only when an event armed the stream up to at least its start, else
	 * dropped (and the file of the last event closed). */
	int events_only;
	int64_t armed_until_ms;
	int64_t gop_wall_ms; /* receive time of the buffered GOP's keyframe */
	int deferred;
	int64_t held_dts;
	uint64_t gops_skipped;
};

void rec_stream_init(struct rec_stream *s, struct rec_env *env, const char *camera, uint32_t stream,
		     uint32_t camera_id);
/* One access unit (its Annex-B bytes) in decode order; codec is an enum kp_codec. The
 * file's timeline is the DTS; PTS - DTS becomes the sample's composition offset. */
void rec_stream_frame(struct rec_stream *s, enum kp_codec codec, int keyframe, int64_t pts_90k, int64_t dts_90k,
		      int64_t wall_us, uint32_t width, uint32_t height, uint64_t seq, const uint8_t *data, size_t len);
/* One audio frame of the stream (its format, its time on the video's clock, its samples). */
void rec_stream_audio(struct rec_stream *s, const struct kp_audio_format *fmt, int64_t pts_90k, uint32_t samples,
		      const uint8_t *data, size_t len);
/* record = events: keep (or start) recording until until_ms (an event's end plus
 * REC_EVENT_POST_MS); the GOP in memory is kept when it starts before that. */
void rec_stream_arm(struct rec_stream *s, int64_t until_ms);
/* Writes the buffered GOP and closes the file (shutdown, camera removed). */
void rec_stream_close(struct rec_stream *s);
const char *rec_stream_state_name(enum rec_stream_state st);

#endif
