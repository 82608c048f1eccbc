/* rtcd's side of the transcoder (keeppeek-transcoder, decision 0014): jobs that decode
 * and encode in that process instead of this one. A job is opened with its kind and
 * input format, fed frames, hands its output frames to a callback, and is closed. While
 * any job is open or waiting keeppeekd is asked to run the transcoder
 * (TranscoderDemand); a job opened before the link is up waits for it (at most
 * KP_TRANSCODER_START_MS). Input the link cannot take (its queue is full) is dropped up
 * to the next keyframe and counted. When the transcoder dies, a job that has had no
 * output yet waits for the next one (once); the others, and a job the transcoder refuses
 * or ends, are closed for their owner, whose lost callback says why (the owner must not
 * close it again). Loop thread only. */
#ifndef KP_RTCD_TRANSCODER_CLIENT_H
#define KP_RTCD_TRANSCODER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc.h"
#include "keeppeek.pb.h"
#include "media.h"
#include "worker.h"

/* One output frame of a job. */
struct rtc_tx_frame {
	const uint8_t *data; /* video: Annex-B H.264 access unit; audio: one Opus packet */
	size_t len;
	bool keyframe;
	int64_t pts; /* video: 90 kHz; audio: 1/48,000 */
	int64_t wall_ms;
	uint32_t width, height;  /* video */
	uint32_t rate, channels; /* audio */
};

typedef void (*rtc_tx_out_cb)(void *arg, const struct rtc_tx_frame *f);
/* The job is over (err: an errno, EBUSY past the transcoder's ceiling, EPIPE when the
 * transcoder died or did not start); reason is a sentence for a log line. */
typedef void (*rtc_tx_lost_cb)(void *arg, int err, const char *reason);

struct rtc_tx_job;

struct rtc_tx_spec {
	kp_TranscodeKind kind;
	const char *name;        /* for log lines: "CAMERA stream N" */
	uint32_t rate, channels; /* audio input */
	const uint8_t *config;   /* AAC: the AudioSpecificConfig (at most 64 bytes) */
	size_t config_len;
};

void rtc_tx_init(struct kp_worker *w);
/* Ceilings on open jobs: video ([rtc] max_transcodes; 0: 2), audio. */
void rtc_tx_set_max(unsigned video, unsigned audio);
/* NULL with errno EBUSY past the ceiling of its kind, EINVAL, ENOMEM. */
struct rtc_tx_job *rtc_tx_open(const struct rtc_tx_spec *spec, rtc_tx_out_cb out, rtc_tx_lost_cb lost, void *arg);
/* Queues one input frame (video: an H.265 access unit, pts 90 kHz; audio: a raw AAC
 * frame, pts 1/rate). 0, or -EAGAIN when it was dropped (link not up yet, queue full,
 * waiting for a keyframe). */
int rtc_tx_feed(struct rtc_tx_job *j, const uint8_t *data, size_t len, int64_t pts, int64_t wall_ms, bool keyframe);
/* Video: the next output picture an IDR (a new viewer). */
void rtc_tx_force_key(struct rtc_tx_job *j);
void rtc_tx_close(struct rtc_tx_job *j);

/* Audio: an AAC -> Opus job whose output comes as rtc_audio_frame (codec AUDIO_OPUS,
 * 48,000 Hz, the source's channels up to 2, 20 ms per packet, pts in 1/48,000). */
struct rtc_tx_job *rtc_tx_open_audio(const char *name, uint32_t rate, uint32_t channels, const uint8_t *config,
				     size_t config_len, rtc_audio_cb out, rtc_tx_lost_cb lost, void *arg);
/* a->codec must be AUDIO_AAC with the job's rate and channels. */
int rtc_tx_feed_audio(struct rtc_tx_job *j, const struct rtc_audio_frame *a);

/* From main.c: TranscodeOutput and TranscodeEnded frames, and the link's changes. */
void rtc_tx_on_frame(struct kp_ipc_frame *f);
void rtc_tx_on_link(bool up);

struct rtc_tx_stats {
	unsigned jobs_video, jobs_audio; /* open now */
	uint64_t opened, refused, lost;  /* jobs */
	uint64_t frames_in, frames_out;
	uint64_t dropped_in; /* here: link down or full, or waiting for a keyframe after that */
	uint64_t dropped_tx; /* in the transcoder, both ways, as it last reported */
	uint64_t links_lost; /* the transcoder's link went down with jobs open */
};
void rtc_tx_stats(struct rtc_tx_stats *ret);

#endif
