/* H.265 -> H.264 transcodes for viewers whose browser cannot decode H.265 (see
 * media.h): one job in the transcoder process (transcoder_client.c) per camera stream,
 * shared by its subscribers, at most [rtc] max_transcodes at once. A new subscriber
 * asks the job for an IDR; the job's output goes to every subscriber's callback; when
 * the job is lost (the transcoder died) every subscriber is told. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "log.h"
#include "media.h"
#include "transcoder_client.h"

struct sub {
	rtc_au_cb au;
	rtc_transcode_lost_cb lost;
	void *arg;
};

struct rtc_transcode {
	struct rtc_transcode *nextt;
	char camera[65];
	unsigned stream;
	struct rtc_tx_job *job; /* NULL once lost */
	struct sub *subs;
	unsigned nsubs, subs_cap;
	bool delivering;
};

static struct rtc_transcode *list;
static unsigned running;

void rtc_transcode_set_max(unsigned max_concurrent)
{
	rtc_tx_set_max(max_concurrent, KP_TRANSCODE_AUDIO_JOBS);
}

unsigned rtc_transcodes_running(void)
{
	return running;
}

static void unlink_transcode(struct rtc_transcode *t)
{
	for (struct rtc_transcode **p = &list; *p; p = &(*p)->nextt)
		if (*p == t) {
			*p = t->nextt;
			running--;
			return;
		}
}

/* Drops released subscribers; the transcode ends with its last one. */
static void compact_subs(struct rtc_transcode *t)
{
	unsigned n = 0;
	for (unsigned i = 0; i < t->nsubs; i++)
		if (t->subs[i].au)
			t->subs[n++] = t->subs[i];
	t->nsubs = n;
	if (n)
		return;
	unlink_transcode(t);
	rtc_tx_close(t->job);
	free(t->subs);
	free(t);
}

static void on_out(void *arg, const struct rtc_tx_frame *f)
{
	struct rtc_transcode *t = arg;
	struct rtc_au au = {
	    .data = f->data,
	    .len = f->len,
	    .codec = kp_Codec_CODEC_H264,
	    .keyframe = f->keyframe,
	    .pts_90k = f->pts,
	    .dts_90k = f->pts, /* the encoder makes no B-frames (transcoder/video.c) */
	    .wall_ms = f->wall_ms,
	    .width = f->width,
	    .height = f->height,
	};
	t->delivering = true;
	for (unsigned s = 0; s < t->nsubs; s++)
		if (t->subs[s].au)
			t->subs[s].au(t->subs[s].arg, &au);
	t->delivering = false;
	compact_subs(t);
}

static void on_lost(void *arg, int err, const char *reason)
{
	struct rtc_transcode *t = arg;
	t->job = NULL; /* the client has closed it */
	unlink_transcode(t);
	t->delivering = true;
	for (unsigned s = 0; s < t->nsubs; s++)
		if (t->subs[s].au)
			t->subs[s].lost(t->subs[s].arg, err, reason);
	t->delivering = false;
	/* Out of the list now: freed with the release of its last viewer. */
	compact_subs(t);
}

static struct rtc_transcode *find(const char *camera, unsigned stream)
{
	for (struct rtc_transcode *t = list; t; t = t->nextt)
		if (t->stream == stream && !strcmp(t->camera, camera))
			return t;
	return NULL;
}

static struct rtc_transcode *start(const char *camera, unsigned stream)
{
	struct rtc_transcode *t = calloc(1, sizeof *t);
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(t->camera, sizeof t->camera, "%s", camera);
	t->stream = stream;
	char name[96];
	snprintf(name, sizeof name, "%s stream %u", camera, stream);
	struct rtc_tx_spec spec = {.kind = kp_TranscodeKind_TRANSCODE_H265_H264, .name = name};
	t->job = rtc_tx_open(&spec, on_out, on_lost, t);
	if (!t->job) {
		int e = errno;
		free(t);
		errno = e;
		return NULL;
	}
	t->nextt = list;
	list = t;
	running++;
	return t;
}

static int add_sub(struct rtc_transcode *t, rtc_au_cb au, rtc_transcode_lost_cb lost, void *arg)
{
	if (t->nsubs == t->subs_cap) {
		unsigned cap = t->subs_cap ? t->subs_cap * 2 : 4;
		struct sub *s = realloc(t->subs, cap * sizeof *s);
		if (!s)
			return -ENOMEM;
		t->subs = s;
		t->subs_cap = cap;
	}
	t->subs[t->nsubs++] = (struct sub){au, lost, arg};
	rtc_tx_force_key(t->job); /* the new viewer starts at an IDR */
	return 0;
}

struct rtc_transcode *rtc_transcode_acquire(const char *camera, unsigned stream, rtc_au_cb au,
					    rtc_transcode_lost_cb lost, void *arg)
{
	if (strlen(camera) >= sizeof((struct rtc_transcode *)0)->camera || !au || !lost) {
		errno = EINVAL;
		return NULL;
	}
	struct rtc_transcode *t = find(camera, stream);
	if (!t && !(t = start(camera, stream)))
		return NULL;
	int e = add_sub(t, au, lost, arg);
	if (e < 0) {
		if (!t->nsubs)
			compact_subs(t);
		errno = -e;
		return NULL;
	}
	return t;
}

void rtc_transcode_release(struct rtc_transcode *t, void *arg)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nsubs; i++)
		if (t->subs[i].au && t->subs[i].arg == arg) {
			t->subs[i].au = NULL;
			break;
		}
	if (!t->delivering)
		compact_subs(t);
}

void rtc_transcode_feed(const char *camera, unsigned stream, const struct rtc_au *au)
{
	if (au->codec != kp_Codec_CODEC_H265)
		return;
	struct rtc_transcode *t = find(camera, stream);
	if (t)
		rtc_tx_feed(t->job, au->data, au->len, au->pts_90k, au->wall_ms, au->keyframe);
}
