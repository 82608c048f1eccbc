/* The transcoder's jobs: each runs its codec (video.c or audio.c) on its own thread
 * (KP_RTC_THREAD_STACK), fed through a bounded queue (when full, input is dropped up to
 * the next keyframe, counted); encoded frames come back to the loop thread through a
 * bounded queue and a uv_async (when full, dropped and the next video picture made an
 * IDR, counted) and go to the output callback. A job is its asker's (rtcd, recorderd) and
 * the asker's id. A picture job (recorderd's, decision 0021) makes one JPEG of the one
 * keyframe it is given (picture.c) and then ends on its own with error 0. */
#ifndef KP_TX_JOB_H
#define KP_TX_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "keeppeek.pb.h"

#define TX_IN_MAX       32                 /* frames waiting for a job's thread */
#define TX_IN_BYTES_MAX (16 * 1024 * 1024) /* and their bytes */
#define TX_OUT_MAX      32                 /* encoded frames waiting for the loop */

struct tx_frame {
	kp_Peer peer;
	uint32_t job;
	const uint8_t *data;
	size_t len;
	bool keyframe;
	int64_t pts; /* video: 90 kHz; audio: 1/rate */
	int64_t wall_ms;
	unsigned width, height, rate, channels;
	uint64_t dropped_in, dropped_out; /* the job's counts so far */
};

struct tx_job_hooks {
	/* An encoded frame; returns false when it could not be passed on (counted as
	 * dropped; a video job's next picture is made an IDR). */
	bool (*out)(void *arg, const struct tx_frame *f);
	/* The job ended on its own: its codec failed (err, reason); it is gone. */
	void (*ended)(void *arg, kp_Peer peer, uint32_t job, int err, const char *reason);
	void *arg;
};

struct tx_job_open {
	kp_Peer peer;
	uint32_t job;
	kp_TranscodeKind kind;
	const char *name;
	unsigned rate, channels; /* audio input */
	const uint8_t *config;   /* AAC AudioSpecificConfig */
	size_t config_len;
	unsigned width, codec; /* picture: JPEG width (0: as decoded), enum kp_codec */
};

void tx_jobs_init(uv_loop_t *loop, const struct tx_job_hooks *hooks);
/* Ceilings on concurrent jobs of each kind (pictures: KP_TRANSCODE_PICTURE_JOBS). */
void tx_jobs_set_max(unsigned video, unsigned audio);
/* 0, or -EEXIST (the id is in use), -EBUSY (past the ceiling of its kind, a sentence in
 * why), -EINVAL, -ENOMEM, or a thread's error. */
int tx_job_open(const struct tx_job_open *o, char *why, size_t whylen);
/* Queues one input frame for the job's thread; force_key: the next video picture an
 * IDR. Unknown jobs are ignored (closed meanwhile). */
void tx_job_input(kp_Peer peer, uint32_t job, const uint8_t *data, size_t len, int64_t pts, int64_t wall_ms,
		  bool keyframe, bool force_key);
void tx_job_close(kp_Peer peer, uint32_t job);
/* Every job of peer (its link was lost); kp_Peer_PEER_NONE: every job. */
void tx_jobs_close_all(kp_Peer peer);
unsigned tx_jobs_running(kp_TranscodeKind kind);

#endif
