/* Live audio per camera: ingestd's AudioUnits of a camera's main stream, made Opus once
 * per camera while it has viewers (audio_opus.c: Opus as it is, AAC through one shared
 * transcoder job) and handed to the sessions that joined (no cache: audio joins at the
 * next frame), and the codec each camera sends right now, which decides what an offer's
 * audio m-line is answered with (audio_source.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "kp_time.h"
#include "rtcd.h"

struct audio_sub {
	struct audio_sub *next;
	rtc_audio_cb cb;
	void *arg;
};

struct audio_cam {
	char camera[KP_CAMERA_NAME_MAX + 1];
	kp_AudioCodec codec;
	uint64_t last_ms; /* monotonic time of the last frame */
	struct audio_sub *subs;
	struct rtc_opus_bridge *opus; /* while subs */
};

static struct audio_cam *cams[KP_MAX_CAMERAS];
static unsigned ncams;

static struct audio_cam *find(const char *camera, bool create)
{
	for (unsigned i = 0; i < ncams; i++)
		if (strcmp(cams[i]->camera, camera) == 0)
			return cams[i];
	if (!create || ncams >= KP_MAX_CAMERAS)
		return NULL;
	struct audio_cam *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	snprintf(c->camera, sizeof c->camera, "%s", camera);
	cams[ncams++] = c;
	return c;
}

/* pts_90k in 1/rate units without overflow: whole seconds and the rest apart. */
static int64_t rescale(int64_t pts_90k, uint32_t rate)
{
	return pts_90k / 90000 * (int64_t)rate + pts_90k % 90000 * (int64_t)rate / 90000;
}

void rtc_audio_live_on_unit(const kp_AudioUnit *m, const uint8_t *data, size_t len)
{
	rtc_metrics.audio_in++;
	if (len == 0 || m->stream != 0 || !m->sample_rate || !m->channels ||
	    (m->codec != kp_AudioCodec_AUDIO_OPUS && m->codec != kp_AudioCodec_AUDIO_AAC))
		return;
	struct audio_cam *c = find(m->camera, true);
	if (!c)
		return;
	c->codec = m->codec;
	c->last_ms = kp_mono_ms();
	struct rtc_audio_frame a = {
	    .data = data,
	    .len = len,
	    .codec = m->codec,
	    .rate = m->sample_rate,
	    .channels = m->channels,
	    .pts = rescale(m->pts_90k, m->sample_rate),
	    .wall_ms = m->wall_us / 1000,
	    .config = m->config.bytes,
	    .config_len = m->config.size,
	};
	if (c->opus)
		rtc_opus_bridge_feed(c->opus, &a);
}

/* Opus of the camera, to every session that joined. */
static void fan_out(void *arg, const struct rtc_audio_frame *a)
{
	struct audio_cam *c = arg;
	for (struct audio_sub *s = c->subs, *n; s; s = n) {
		n = s->next; /* a callback may leave */
		s->cb(s->arg, a);
	}
}

kp_AudioCodec rtc_audio_live_codec(const char *camera)
{
	struct audio_cam *c = find(camera, false);
	if (!c || kp_mono_ms() - c->last_ms > RTC_AUDIO_STALE_MS)
		return kp_AudioCodec_AUDIO_NONE;
	return c->codec;
}

int rtc_audio_live_join(const char *camera, rtc_audio_cb cb, void *arg)
{
	struct audio_cam *c = find(camera, true);
	if (c && !c->opus) {
		char name[KP_CAMERA_NAME_MAX + 32];
		snprintf(name, sizeof name, "%s live audio", camera);
		c->opus = rtc_opus_bridge_new(name, fan_out, c);
	}
	struct audio_sub *s = c && c->opus ? malloc(sizeof *s) : NULL;
	if (!s)
		return -ENOMEM;
	s->cb = cb;
	s->arg = arg;
	s->next = c->subs;
	c->subs = s;
	return 0;
}

void rtc_audio_live_leave(const char *camera, void *arg)
{
	struct audio_cam *c = find(camera, false);
	if (!c)
		return;
	for (struct audio_sub **p = &c->subs; *p; p = &(*p)->next) {
		if ((*p)->arg == arg) {
			struct audio_sub *s = *p;
			*p = s->next;
			free(s);
			break;
		}
	}
	if (!c->subs) {
		rtc_opus_bridge_free(c->opus);
		c->opus = NULL;
	}
}
