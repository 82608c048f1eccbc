/* Opus for sessions whatever the recorded or live audio is: Opus frames pass through,
 * AAC frames go through one of the transcoder's audio jobs (transcoder_client.c), opened
 * at the first AAC frame (it carries the AudioSpecificConfig), opened again when the
 * format changes, and after the transcoder was lost or refused the job (its ceiling of
 * KP_TRANSCODE_AUDIO_JOBS), no sooner than RTC_AUDIO_REOPEN_MS later: until then the
 * session's video plays on without sound. A camera's live audio has one bridge shared by
 * its viewers (audio_live.c), a playback session one of its own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio.h"
#include "kp_time.h"
#include "log.h"
#include "rtcd.h"
#include "transcoder_client.h"

struct rtc_opus_bridge {
	char name[KP_CAMERA_NAME_MAX + 32];
	rtc_audio_cb out;
	void *arg;
	struct rtc_tx_job *job;
	uint32_t rate, channels; /* the job's input */
	uint8_t config[KP_AUDIO_CONFIG_MAX];
	size_t config_len;
	uint64_t retry_at_ms; /* monotonic: no job is opened before */
};

struct rtc_opus_bridge *rtc_opus_bridge_new(const char *name, rtc_audio_cb out, void *arg)
{
	struct rtc_opus_bridge *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	snprintf(b->name, sizeof b->name, "%s", name);
	b->out = out;
	b->arg = arg;
	return b;
}

static void job_out(void *arg, const struct rtc_audio_frame *a)
{
	struct rtc_opus_bridge *b = arg;
	b->out(b->arg, a);
}

static void job_lost(void *arg, int err, const char *reason)
{
	struct rtc_opus_bridge *b = arg;
	b->job = NULL; /* the client has let it go */
	b->retry_at_ms = kp_mono_ms() + RTC_AUDIO_REOPEN_MS;
	rtc_metrics.audio_transcode_lost++;
	kp_warn("%s: the AAC -> Opus job ended (%s: %s); sound again in %d ms at the earliest", b->name,
		strerror(err > 0 ? err : -err), reason ? reason : "no reason given", RTC_AUDIO_REOPEN_MS);
}

static void close_job(struct rtc_opus_bridge *b)
{
	if (b->job)
		rtc_tx_close(b->job);
	b->job = NULL;
}

static bool same_format(const struct rtc_opus_bridge *b, const struct rtc_audio_frame *a)
{
	return b->rate == a->rate && b->channels == a->channels && b->config_len == a->config_len &&
	       (a->config_len == 0 || memcmp(b->config, a->config, a->config_len) == 0);
}

static int open_job(struct rtc_opus_bridge *b, const struct rtc_audio_frame *a)
{
	if (a->config_len > sizeof b->config)
		return -EINVAL;
	if (kp_mono_ms() < b->retry_at_ms)
		return -EAGAIN;
	b->job = rtc_tx_open_audio(b->name, a->rate, a->channels, a->config, a->config_len, job_out, job_lost, b);
	if (!b->job) {
		int r = -errno;
		b->retry_at_ms = kp_mono_ms() + RTC_AUDIO_REOPEN_MS;
		rtc_metrics.audio_transcode_refused++;
		kp_warn("%s: no AAC -> Opus job: %s; sound again in %d ms at the earliest", b->name, strerror(-r),
			RTC_AUDIO_REOPEN_MS);
		return r;
	}
	b->rate = a->rate;
	b->channels = a->channels;
	memcpy(b->config, a->config, a->config_len);
	b->config_len = a->config_len;
	return 0;
}

void rtc_opus_bridge_feed(struct rtc_opus_bridge *b, const struct rtc_audio_frame *a)
{
	if (a->codec == kp_AudioCodec_AUDIO_OPUS) {
		close_job(b); /* the source changed to Opus */
		b->out(b->arg, a);
		return;
	}
	if (a->codec != kp_AudioCodec_AUDIO_AAC)
		return;
	if (b->job && !same_format(b, a))
		close_job(b);
	if (!b->job && open_job(b, a) < 0)
		return;
	if (rtc_tx_feed_audio(b->job, a) < 0)
		rtc_metrics.audio_transcode_dropped++;
}

void rtc_opus_bridge_free(struct rtc_opus_bridge *b)
{
	if (!b)
		return;
	close_job(b);
	free(b);
}
