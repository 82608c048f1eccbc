/* The transcoder's ceilings on concurrent jobs, one past each (keeppeek-transcoder(8)
 * LIMITS, "Jobs"): KP_TRANSCODE_AUDIO_JOBS AAC -> Opus jobs open, the next refused with
 * -EBUSY and a reason, and room again once one closes; KP_TRANSCODE_PICTURE_JOBS picture jobs, the
 * next refused, and every picture job accepted gives its JPEG and ends on its own, after
 * which the refused one is taken. Real jobs of transcoder/job.c on this test's loop. */
#include <errno.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "kp_build_config.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "picture.h"
#include "test.h"

static uv_loop_t *loop;
static unsigned jpegs, ended_ok, ended_err;

static bool on_out(void *arg, const struct tx_frame *f)
{
	(void)arg;
	CHECK_EQ(f->peer, kp_Peer_PEER_RECORDERD);
	CHECK(f->len > 2 && f->data[0] == 0xff && f->data[1] == 0xd8);
	jpegs++;
	return true;
}

static void on_ended(void *arg, kp_Peer peer, uint32_t job, int err, const char *reason)
{
	(void)arg;
	(void)peer;
	(void)job;
	(void)reason;
	if (err)
		ended_err++;
	else
		ended_ok++;
}

/* Turns the loop until cond holds or 20 s pass. */
#define SPIN_UNTIL(cond)                                                                                               \
	do {                                                                                                           \
		uint64_t until_ = kp_mono_ms() + 20000;                                                                \
		while (!(cond) && kp_mono_ms() < until_) {                                                             \
			uv_run(loop, UV_RUN_NOWAIT);                                                                   \
			usleep(2000);                                                                                  \
		}                                                                                                      \
		CHECK(cond);                                                                                           \
	} while (0)

/* The first packet of a raw Annex-B fixture: the keyframe with its parameter sets. */
static uint8_t *first_keyframe(const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, name);
	AVFormatContext *ic = NULL;
	if (avformat_open_input(&ic, path, NULL, NULL) < 0)
		return NULL;
	AVPacket *pkt = av_packet_alloc();
	uint8_t *out = NULL;
	if (av_read_frame(ic, pkt) >= 0 && (pkt->flags & AV_PKT_FLAG_KEY)) {
		out = malloc((size_t)pkt->size);
		if (out) {
			memcpy(out, pkt->data, (size_t)pkt->size);
			*len = (size_t)pkt->size;
		}
	}
	av_packet_free(&pkt);
	avformat_close_input(&ic);
	return out;
}

static void test_audio_jobs(void)
{
	/* AAC-LC, 48 kHz, stereo (ISO/IEC 14496-3 1.6.2.1 AudioSpecificConfig). */
	static const uint8_t asc[] = {0x11, 0x90};
	char why[128];
	struct tx_job_open o = {.peer = kp_Peer_PEER_RTCD,
				.kind = kp_TranscodeKind_TRANSCODE_AAC_OPUS,
				.name = "cam audio",
				.rate = 48000,
				.channels = 2,
				.config = asc,
				.config_len = sizeof asc};
	for (unsigned i = 0; i < KP_TRANSCODE_AUDIO_JOBS; i++) {
		o.job = 100 + i;
		CHECK_EQ(tx_job_open(&o, why, sizeof why), 0);
	}
	CHECK_EQ(tx_jobs_running(kp_TranscodeKind_TRANSCODE_AAC_OPUS), KP_TRANSCODE_AUDIO_JOBS);
	o.job = 100 + KP_TRANSCODE_AUDIO_JOBS;
	CHECK_EQ(tx_job_open(&o, why, sizeof why), -EBUSY);
	char want[64];
	snprintf(want, sizeof want, "%u audio jobs run", KP_TRANSCODE_AUDIO_JOBS);
	CHECK_STR_CONTAINS(why, want);
	CHECK_EQ(tx_jobs_running(kp_TranscodeKind_TRANSCODE_AAC_OPUS), KP_TRANSCODE_AUDIO_JOBS);
	/* Audio is its own kind: a picture job still opens, and closes. */
	struct tx_job_open p = {.peer = kp_Peer_PEER_RECORDERD,
				.job = 1,
				.kind = kp_TranscodeKind_TRANSCODE_PICTURE,
				.name = "picture",
				.width = TX_PICTURE_THUMB_WIDTH,
				.codec = TX_PICTURE_H264};
	CHECK_EQ(tx_job_open(&p, why, sizeof why), 0);
	tx_job_close(kp_Peer_PEER_RECORDERD, 1);
	/* One closes: the one refused is taken. */
	tx_job_close(kp_Peer_PEER_RTCD, 100);
	SPIN_UNTIL(tx_jobs_running(kp_TranscodeKind_TRANSCODE_AAC_OPUS) < KP_TRANSCODE_AUDIO_JOBS);
	CHECK_EQ(tx_job_open(&o, why, sizeof why), 0);
	CHECK_EQ(ended_err, 0);
	tx_jobs_close_all(kp_Peer_PEER_NONE);
	SPIN_UNTIL(tx_jobs_running(kp_TranscodeKind_TRANSCODE_AAC_OPUS) == 0 &&
		   tx_jobs_running(kp_TranscodeKind_TRANSCODE_PICTURE) == 0);
}

static void test_picture_jobs(void)
{
	size_t len = 0;
	uint8_t *kf = first_keyframe("sub.h264", &len);
	CHECK(kf != NULL);
	if (!kf)
		return;
	char why[128];
	struct tx_job_open p = {.peer = kp_Peer_PEER_RECORDERD,
				.kind = kp_TranscodeKind_TRANSCODE_PICTURE,
				.name = "picture",
				.width = TX_PICTURE_THUMB_WIDTH,
				.codec = TX_PICTURE_H264};
	for (unsigned i = 0; i < KP_TRANSCODE_PICTURE_JOBS; i++) {
		p.job = 10 + i;
		CHECK_EQ(tx_job_open(&p, why, sizeof why), 0);
	}
	p.job = 10 + KP_TRANSCODE_PICTURE_JOBS;
	CHECK_EQ(tx_job_open(&p, why, sizeof why), -EBUSY);
	char want[64];
	snprintf(want, sizeof want, "%u picture jobs run", KP_TRANSCODE_PICTURE_JOBS);
	CHECK_STR_CONTAINS(why, want);
	/* Every job accepted makes its picture and ends; then the one refused is taken. */
	unsigned j0 = jpegs, e0 = ended_ok;
	for (unsigned i = 0; i < KP_TRANSCODE_PICTURE_JOBS; i++)
		tx_job_input(kp_Peer_PEER_RECORDERD, 10 + i, kf, len, 0, 1700000000000, true, false);
	SPIN_UNTIL(ended_ok == e0 + KP_TRANSCODE_PICTURE_JOBS &&
		   tx_jobs_running(kp_TranscodeKind_TRANSCODE_PICTURE) == 0);
	CHECK_EQ(jpegs, j0 + KP_TRANSCODE_PICTURE_JOBS);
	CHECK_EQ(tx_job_open(&p, why, sizeof why), 0);
	tx_job_input(kp_Peer_PEER_RECORDERD, p.job, kf, len, 0, 1700000000000, true, false);
	SPIN_UNTIL(ended_ok == e0 + KP_TRANSCODE_PICTURE_JOBS + 1 &&
		   tx_jobs_running(kp_TranscodeKind_TRANSCODE_PICTURE) == 0);
	CHECK_EQ(jpegs, j0 + KP_TRANSCODE_PICTURE_JOBS + 1);
	CHECK_EQ(ended_err, 0);
	free(kf);
}

int main(void)
{
	kp_log_init("test_tx_jobs");
	loop = uv_default_loop();
	static const struct tx_job_hooks hooks = {.out = on_out, .ended = on_ended};
	tx_jobs_init(loop, &hooks);
	tx_jobs_set_max(2, KP_TRANSCODE_AUDIO_JOBS);
	RUN(test_audio_jobs);
	RUN(test_picture_jobs);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK_EQ(uv_loop_close(loop), 0);
	return TEST_EXIT();
}
