/* The pure part of stored playback, without I/O or timers so that unit tests drive it
 * with a recording and a clock of their own: pacing by the recorded timestamps at a
 * rate (1x, 2x; keyframes only at 4x and 8x) and stepping through one loaded fragment,
 * its video samples and (at 1x) its audio samples on the same clock. */
#ifndef KP_RTC_PLAYBACK_PACE_H
#define KP_RTC_PLAYBACK_PACE_H

#include <stdbool.h>
#include <stdint.h>

#include "fmp4.h"

/* Late by more than this, the clock is re-anchored instead of catching up in a burst. */
#define RTC_PACE_MAX_LATE_US 500000
/* A next frame due later than this lies after a gap in the recording: it is due at once. */
#define RTC_PACE_MAX_GAP_US  3000000
#define RTC_PACE_GAP_STEP_US 40000

struct rtc_pace {
	unsigned rate;     /* 1, 2, 4, 8 */
	bool anchored;     /* false: the next frame is due at once and anchors the clock */
	int64_t media_ref; /* recorded wall time (us) that was due at clock_ref */
	int64_t clock_ref; /* monotonic us */
};

/* One fragment in memory with the track it belongs to. */
struct rtc_pb_frag {
	struct fmp4_init track;
	struct fmp4_frag frag;
	uint8_t *buf;
	size_t len;
	int64_t start_ms; /* recorded wall time of the first sample (from recorderd) */
	unsigned next;    /* index of the next sample to hand out */
	unsigned anext;   /* index of the next audio sample */
};

struct rtc_pb_out {
	const struct fmp4_sample_info *sample;
	int64_t media_us; /* recorded wall time of the sample */
	int64_t pts_us;   /* the clock time it was due plus its composition offset: over seeks, rates, pauses */
};

void rtc_pace_init(struct rtc_pace *p);
/* The next frame will be due at once (play, seek, after a stall). */
void rtc_pace_unanchor(struct rtc_pace *p);
/* Changes the rate from clock time now on, keeping the position continuous. */
void rtc_pace_set_rate(struct rtc_pace *p, unsigned rate, int64_t now_us);
/* Recorded wall time (us) of sample i of f. */
int64_t rtc_pb_media_us(const struct rtc_pb_frag *f, unsigned i);
/* 1 and *out when a frame of f is due at clock now_us (f->next moves past it); 0 and
 * *wait_us when the next one is due later; -1 when f has nothing more to hand out at
 * this rate. */
int rtc_pb_step(struct rtc_pb_frag *f, struct rtc_pace *p, int64_t now_us, struct rtc_pb_out *out, int64_t *wait_us);

/* Recorded wall time (us) of audio sample i of f (both tracks' times start at the same
 * instant of the file). */
int64_t rtc_pb_audio_media_us(const struct rtc_pb_frag *f, unsigned i);
/* Like rtc_pb_step for the audio samples of f, on the clock the video anchored: 1 and
 * *out (its pts_us the clock time it is due) when one is due, 0 and *wait_us when the
 * next one is due later, -1 when none is left or the clock is not anchored. At rates
 * other than 1 every audio sample is skipped (-1); one due more than
 * RTC_PACE_MAX_LATE_US ago, or before the anchor (a seek's keyframe), is skipped. */
int rtc_pb_audio_step(struct rtc_pb_frag *f, const struct rtc_pace *p, int64_t now_us, struct rtc_pb_out *out,
		      int64_t *wait_us);

#endif
