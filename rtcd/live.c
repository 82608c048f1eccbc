/* Live fan-out: ingestd's access units per camera stream, a GOP cache per stream (the
 * access units since the last keyframe, bounded in bytes per stream and overall) so a
 * joining viewer starts at once, the paced replay of that cache to a joining viewer
 * (or after a PLI), and the subscribed sessions. Sending never queues: a viewer whose
 * socket is full skips to the next keyframe (session.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rtcd.h"

#define LIVE_MAX_STREAMS (2 * KP_MAX_CAMERAS)
#define GOP_MAX_BYTES    (8 * KP_MIB)
#define GOP_MAX_AUS      600
#define GOP_TOTAL_MAX    (512ull * KP_MIB)

struct cached_au {
	struct cached_au *next;
	uint64_t seq;
	struct rtc_au au;
	uint8_t data[];
};

struct live_stream {
	char camera[KP_CAMERA_NAME_MAX + 1];
	unsigned stream;
	kp_Codec codec;
	struct cached_au *head, *tail; /* from the last keyframe */
	size_t bytes;
	unsigned count;
	bool overflow; /* the GOP outgrew the cache: wait for the next keyframe */
	uint64_t next_seq;
	struct rtc_session *subs;
};

static struct live_stream *streams[LIVE_MAX_STREAMS];
static unsigned nstreams;
static size_t total_bytes;
static uv_timer_t replay_timer;
static bool replay_timer_init, replay_timer_on;

static struct live_stream *find(const char *camera, unsigned stream)
{
	for (unsigned i = 0; i < nstreams; i++)
		if (streams[i]->stream == stream && strcmp(streams[i]->camera, camera) == 0)
			return streams[i];
	return NULL;
}

static void clear_cache(struct live_stream *ls)
{
	struct cached_au *c = ls->head;
	while (c) {
		struct cached_au *n = c->next;
		free(c);
		c = n;
	}
	total_bytes -= ls->bytes;
	ls->head = ls->tail = NULL;
	ls->bytes = 0;
	ls->count = 0;
}

static void cache_add(struct live_stream *ls, const struct rtc_au *au)
{
	if (au->keyframe) {
		clear_cache(ls);
		ls->overflow = false;
	} else if (ls->overflow || !ls->head) {
		return;
	}
	if (ls->bytes + au->len > GOP_MAX_BYTES || ls->count >= GOP_MAX_AUS || total_bytes + au->len > GOP_TOTAL_MAX) {
		if (!ls->overflow)
			rtc_metrics.gop_overflows++;
		clear_cache(ls);
		ls->overflow = true;
		return;
	}
	struct cached_au *c = malloc(sizeof *c + au->len);
	if (!c) {
		clear_cache(ls);
		ls->overflow = true;
		return;
	}
	c->next = NULL;
	c->seq = ++ls->next_seq;
	c->au = *au;
	memcpy(c->data, au->data, au->len);
	c->au.data = c->data;
	if (ls->tail)
		ls->tail->next = c;
	else
		ls->head = c;
	ls->tail = c;
	ls->bytes += au->len;
	ls->count++;
	total_bytes += au->len;
}

void rtc_live_on_au(const kp_AccessUnit *m, const uint8_t *data, size_t len)
{
	rtc_metrics.au_in++;
	if (len == 0 || m->stream > 1 || (m->codec != kp_Codec_CODEC_H264 && m->codec != kp_Codec_CODEC_H265))
		return;
	struct live_stream *ls = find(m->camera, m->stream);
	if (!ls) {
		if (nstreams >= LIVE_MAX_STREAMS)
			return;
		ls = calloc(1, sizeof *ls);
		if (!ls)
			return;
		snprintf(ls->camera, sizeof ls->camera, "%s", m->camera);
		ls->stream = m->stream;
		streams[nstreams++] = ls;
	}
	if (ls->codec != m->codec) {
		if (ls->codec != kp_Codec_CODEC_NONE)
			kp_notice("live: %s stream %u changed codec; cache reset", ls->camera, ls->stream);
		clear_cache(ls);
		ls->codec = m->codec;
	}
	struct rtc_au au = {
	    .data = data,
	    .len = len,
	    .codec = m->codec,
	    .keyframe = m->keyframe,
	    .pts_90k = m->pts_90k,
	    .dts_90k = m->dts_90k,
	    .wall_ms = m->wall_us / 1000,
	    .width = m->width,
	    .height = m->height,
	};
	cache_add(ls, &au);
	if (m->codec == kp_Codec_CODEC_H265)
		rtc_transcode_feed(m->camera, m->stream, &au);
	/* Packetized once, at the first viewer that sends it, for all of them. */
	static struct rtc_plan plan;
	rtc_plan_reset(&plan);
	struct rtc_session *s = ls->subs;
	while (s) {
		struct rtc_session *n = s->live_next;
		if (!s->replaying)
			rtc_session_send_au(s, &au, false, &plan);
		s = n;
	}
	rtc_mse_on_au(ls->camera, ls->stream, &au);
}

void rtc_live_cache_walk(const char *camera, unsigned stream, rtc_au_cb cb, void *arg)
{
	struct live_stream *ls = find(camera, stream);
	if (!ls)
		return;
	for (struct cached_au *c = ls->head; c; c = c->next)
		cb(arg, &c->au);
}

kp_Codec rtc_live_codec(const char *camera, unsigned stream)
{
	struct live_stream *ls = find(camera, stream);
	return ls ? ls->codec : kp_Codec_CODEC_NONE;
}

int rtc_live_subscribe(struct rtc_session *s, const char *camera, unsigned stream)
{
	struct live_stream *ls = find(camera, stream);
	if (!ls)
		return -ENOENT;
	rtc_live_unsubscribe(s);
	s->live = ls;
	s->live_prev = NULL;
	s->live_next = ls->subs;
	if (ls->subs)
		ls->subs->live_prev = s;
	ls->subs = s;
	s->ts_init = false;
	s->need_keyframe = true;
	rtc_live_replay(s);
	return 0;
}

void rtc_live_unsubscribe(struct rtc_session *s)
{
	struct live_stream *ls = s->live;
	if (!ls)
		return;
	if (s->live_prev)
		s->live_prev->live_next = s->live_next;
	else
		ls->subs = s->live_next;
	if (s->live_next)
		s->live_next->live_prev = s->live_prev;
	s->live = NULL;
	s->live_prev = s->live_next = NULL;
	s->replaying = false;
}

/* Sends up to budget bytes of the cache from s->replay_next; ends the replay when it
 * caught up, when the socket is full (the next keyframe then starts over) or when the
 * cache has nothing to offer. */
static void replay_step(struct rtc_session *s, size_t budget)
{
	struct live_stream *ls = s->live;
	if (!ls || !ls->head || s->state != RTC_STREAMING) {
		s->replaying = false;
		s->need_keyframe = true;
		return;
	}
	if (s->replay_next < ls->head->seq)
		s->replay_next = ls->head->seq; /* a new GOP began: continue at its keyframe */
	size_t sent = 0;
	for (struct cached_au *c = ls->head; c; c = c->next) {
		if (c->seq < s->replay_next)
			continue;
		if (sent >= budget)
			return;
		if (c->seq == ls->head->seq)
			s->need_keyframe = false;
		rtc_session_send_au(s, &c->au, true, NULL);
		s->replay_next = c->seq + 1;
		sent += c->au.len;
		if (s->need_keyframe || s->state != RTC_STREAMING) {
			s->replaying = false;
			return;
		}
	}
	s->replaying = false;
}

static void on_replay_tick(uv_timer_t *t)
{
	bool any = false;
	for (unsigned i = 0; i < nstreams; i++) {
		struct rtc_session *s = streams[i]->subs;
		while (s) {
			struct rtc_session *n = s->live_next;
			if (s->replaying)
				replay_step(s, RTC_REPLAY_BYTES);
			any |= s->replaying;
			s = n;
		}
	}
	if (!any) {
		uv_timer_stop(t);
		replay_timer_on = false;
	}
}

bool rtc_live_replay(struct rtc_session *s)
{
	struct live_stream *ls = s->live;
	if (!ls || !ls->head ||
	    ls->codec != (s->rtp_codec == KP_CODEC_H265 ? kp_Codec_CODEC_H265 : kp_Codec_CODEC_H264))
		return false;
	s->replaying = true;
	s->replay_next = ls->head->seq;
	replay_step(s, RTC_REPLAY_BYTES);
	if (s->replaying && !replay_timer_on) {
		if (!replay_timer_init) {
			int r = uv_timer_init(kp_worker_loop(rtc_worker()), &replay_timer);
			if (r < 0) {
				kp_err("live: uv_timer_init failed: %s", uv_strerror(r));
				s->replaying = false;
				s->need_keyframe = true;
				return false;
			}
			replay_timer_init = true;
		}
		uv_timer_start(&replay_timer, on_replay_tick, RTC_REPLAY_TICK_MS, RTC_REPLAY_TICK_MS);
		replay_timer_on = true;
	}
	return true;
}

void rtc_live_stats(unsigned *ret_streams, size_t *ret_bytes)
{
	*ret_streams = nstreams;
	*ret_bytes = total_bytes;
}

uint32_t rtc_live_profile_level_id(const char *camera, unsigned stream)
{
	struct live_stream *ls = find(camera, stream);
	if (!ls || ls->codec != kp_Codec_CODEC_H264 || !ls->head)
		return 0;
	return h264_annexb_profile_level_id(ls->head->au.data, ls->head->au.len);
}
