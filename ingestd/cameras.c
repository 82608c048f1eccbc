/* ingestd's core: the camera table built from the supervisor's CameraConfig items, one
 * protocol driver per camera (reporting through the sink table it is given), jittered
 * exponential reconnect backoff per camera and, for a stream that fails alone while the
 * session lives on, per stream; per-stream state and counters, and the IPC out: access
 * units to recorderd and rtcd, the main stream's audio units (when the camera's audio is
 * on; AAC and Opus as they come, the rest converted once to Opus by audio_conv.c) and motion events to
 * recorderd, StreamState to the
 * supervisor. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio_conv.h"
#include "cameras.h"
#include "config.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS   30000
#define BACKOFF_RESET_MS 60000
/* A stream the camera refused (or whose own connection ended) while the session lives
 * on: retried alone, 1 s doubling to 60 s, reset like the camera's after 60 s of media. */
#define STREAM_BACKOFF_FIRST_MS 1000
#define STREAM_BACKOFF_MAX_MS   60000

struct ing_camera;

struct ing_stream {
	enum ing_state state;
	char last_error[160];
	enum kp_codec codec;
	uint32_t width, height;
	uint64_t seq;
	uint64_t frames, bytes;
	uint64_t send_rejected;
	char transport[8]; /* RTSP: "tcp", "udp", "" */
	uint64_t rtp_lost_packets, loss_dropped, truncated_dropped, overrun_dropped;
	uint64_t rtp_foreign_dropped, rtp_resyncs, rtp_malformed;
	uint64_t audio_dropped;  /* main only: units not recorded (loop behind, not converted) */
	bool rtcd_wait_keyframe; /* rtcd's queue overflowed: skip to the next keyframe */
	uint64_t fps_frames;
	uint64_t fps_ms;
	uint32_t fps_milli;
	uint64_t streaming_since_ms;
	/* This stream's own retries after sink->stream_failed. */
	struct ing_camera *cam;
	enum kp_stream_index index;
	uv_timer_t retry_timer;
	unsigned failures; /* in a row, for the stream's backoff */
	uint32_t retries;
	int64_t retry_at_ms; /* wall clock; 0 when no retry is scheduled */
};

struct ing_camera {
	kp_CameraConfig conf;
	struct ing_camera_info info;
	struct ing_sink sink; /* what the driver reports to: the functions below, ctx = this */
	const struct ing_driver_ops *ops;
	struct ing_driver *drv;
	struct ing_stream streams[2];
	uint32_t reconnects;
	uint64_t events;
	uint64_t audio_seq, audio_rejected, audio_rtcd_rejected, audio_conv_failed;
	bool audio_unsupported_logged;     /* audio Opus cannot take: said once a connection */
	struct ing_audio_conv *audio_conv; /* ADPCM or G.711 to Opus, made on first use */
	unsigned failures;                 /* in a row, for the backoff */
	bool last_failure_auth;
	bool failed; /* a failure is being handled */
	bool removing;
	unsigned open_handles; /* timers still to close before the camera is freed */
	uv_timer_t timer;      /* backoff and deferred driver stop */
	struct ing_cameras *owner;
};

struct ing_cameras {
	struct kp_worker *w;
	uv_loop_t *loop;
	struct ing_camera *cams[KP_MAX_CAMERAS];
	unsigned ncams;
	kp_CameraConfig pending[KP_MAX_CAMERAS];
	unsigned npending;
	unsigned seed;
};

static struct ing_cameras table;

static const char *const state_names[] = {
    [ING_CONNECTING] = "connecting",   [ING_STREAMING] = "streaming", [ING_AUTH_FAILED] = "auth-failed",
    [ING_UNREACHABLE] = "unreachable", [ING_BACKOFF] = "backoff",     [ING_STOPPED] = "stopped",
    [ING_RETRYING] = "retrying",
};

const struct ing_driver_ops *ing_driver_for(const char *url)
{
	static const struct ing_driver_ops *const drivers[] = {&ing_baichuan_driver, &ing_rtsp_driver};
	static const struct {
		const char *prefix;
		int driver;
	} schemes[] = {{"baichuan://", 0}, {"bcudp://", 0}, {"rtsp://", 1}, {"rtsps://", 1}};
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		if (!strncmp(url, schemes[i].prefix, strlen(schemes[i].prefix)))
			return drivers[schemes[i].driver];
	return NULL;
}

static bool configured(const struct ing_camera *cam, unsigned s)
{
	return cam->conf.streams & (1u << s);
}

static void report(struct ing_camera *cam, unsigned s)
{
	const struct ing_stream *st = &cam->streams[s];
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_stream_state_tag;
	kp_StreamState *m = &env.msg.stream_state;
	snprintf(m->camera, sizeof m->camera, "%s", cam->conf.name);
	m->stream = s;
	snprintf(m->state, sizeof m->state, "%s", state_names[st->state]);
	m->codec = (kp_Codec)st->codec;
	m->width = st->width;
	m->height = st->height;
	m->fps_milli = st->fps_milli;
	m->frames = st->frames;
	m->bytes = st->bytes;
	m->reconnects = cam->reconnects;
	snprintf(m->last_error, sizeof m->last_error, "%s", st->last_error);
	m->send_rejected = st->send_rejected;
	m->events = cam->events;
	m->retry_at_ms = st->retry_at_ms;
	m->retries = st->retries;
	snprintf(m->transport, sizeof m->transport, "%s", st->transport);
	m->rtp_lost_packets = st->rtp_lost_packets;
	m->loss_dropped = st->loss_dropped;
	m->truncated_dropped = st->truncated_dropped;
	m->overrun_dropped = st->overrun_dropped;
	m->rtp_foreign_dropped = st->rtp_foreign_dropped;
	m->rtp_resyncs = st->rtp_resyncs;
	m->rtp_malformed = st->rtp_malformed;
	m->audio_dropped = st->audio_dropped;
	kp_worker_send_supervisor(table.w, &env);
}

static void set_state(struct ing_camera *cam, unsigned s, enum ing_state state, const char *reason)
{
	struct ing_stream *st = &cam->streams[s];
	if (reason && *reason && state != ING_STREAMING && state != ING_CONNECTING)
		snprintf(st->last_error, sizeof st->last_error, "%s", reason);
	if (st->state == state)
		return;
	bool why = reason && *reason && state != ING_STREAMING && state != ING_CONNECTING;
	kp_info("%s/%s: %s%s%s", cam->conf.name, s ? "sub" : "main", state_names[state], why ? ": " : "",
		why ? reason : "");
	st->state = state;
	if (state == ING_STREAMING)
		st->streaming_since_ms = kp_mono_ms();
	report(cam, s);
}

static void stream_state(void *ctx, enum kp_stream_index s, enum ing_state st, const char *reason)
{
	struct ing_camera *cam = ctx;
	if ((unsigned)s > 1 || cam->failed)
		return;
	/* While retrying after a refusal, keep showing why until media flows again. */
	enum ing_state cur = cam->streams[s].state;
	if (st == ING_CONNECTING && (cur == ING_AUTH_FAILED || cur == ING_UNREACHABLE || cur == ING_RETRYING))
		return;
	set_state(cam, s, st, reason);
}

static void stream_bytes(void *ctx, enum kp_stream_index s, uint64_t n)
{
	struct ing_camera *cam = ctx;
	if ((unsigned)s <= 1)
		cam->streams[s].bytes += n;
}

static void stream_transport(void *ctx, enum kp_stream_index s, const struct ing_transport_report *r)
{
	struct ing_camera *cam = ctx;
	if ((unsigned)s > 1)
		return;
	struct ing_stream *st = &cam->streams[s];
	if (r->transport)
		snprintf(st->transport, sizeof st->transport, "%s", r->transport);
	st->rtp_lost_packets += r->rtp_lost_packets;
	st->loss_dropped += r->loss_dropped;
	st->truncated_dropped += r->truncated_dropped;
	st->overrun_dropped += r->overrun_dropped;
	st->rtp_foreign_dropped += r->foreign_dropped;
	st->rtp_resyncs += r->resyncs;
	st->rtp_malformed += r->malformed;
	st->audio_dropped += r->audio_dropped;
	report(cam, s);
}

static void send_au(struct ing_camera *cam, unsigned s, const struct kp_access_unit *au)
{
	struct ing_stream *st = &cam->streams[s];
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_access_unit_tag;
	kp_AccessUnit *m = &env.msg.access_unit;
	snprintf(m->camera, sizeof m->camera, "%s", cam->conf.name);
	m->stream = s;
	m->codec = (kp_Codec)au->codec;
	m->keyframe = au->keyframe;
	m->pts_90k = au->pts_90k;
	m->dts_90k = au->dts_90k;
	m->wall_us = au->wall_us;
	m->width = au->width;
	m->height = au->height;
	m->seq = st->seq;
	/* recorderd is never dropped silently: a refusal is counted and visible. */
	int r = kp_worker_send_peer(table.w, kp_Peer_PEER_RECORDERD, &env, au->data, au->len);
	if (r < 0) {
		if (st->send_rejected++ % 250 == 0)
			kp_warn("%s/%s: recorderd did not take frame %llu: %s", cam->conf.name, s ? "sub" : "main",
				(unsigned long long)st->seq, strerror(-r));
	}
	/* Live viewers: on overflow, skip to the next keyframe. */
	if (st->rtcd_wait_keyframe && !au->keyframe)
		return;
	st->rtcd_wait_keyframe = false;
	r = kp_worker_send_peer(table.w, kp_Peer_PEER_RTCD, &env, au->data, au->len);
	if (r == -ENOBUFS)
		st->rtcd_wait_keyframe = true;
}

static void stream_access_unit(void *ctx, enum kp_stream_index s, const struct kp_access_unit *au)
{
	struct ing_camera *cam = ctx;
	if ((unsigned)s > 1 || cam->failed || !configured(cam, s))
		return;
	struct ing_stream *st = &cam->streams[s];
	if (au->len == 0 || au->len > KP_BAICHUAN_MAX_BODY)
		return;
	st->seq++;
	st->frames++;
	/* A driver declares the stream streaming just before its first access unit: tell the
	 * supervisor the codec and size as soon as they are known (or change), rather than at
	 * the next health request, so "streaming" never shows without them. */
	bool changed =
	    st->codec != au->codec || (au->width && au->height && (st->width != au->width || st->height != au->height));
	st->codec = au->codec;
	if (au->width && au->height) {
		st->width = au->width;
		st->height = au->height;
	}
	if (st->state != ING_STREAMING)
		set_state(cam, s, ING_STREAMING, "");
	else if (changed)
		report(cam, s);
	send_au(cam, s, au);
}

/* One AAC frame or Opus packet to recorderd and rtcd. */
static void send_audio(void *arg, const struct kp_audio_unit *au)
{
	struct ing_camera *cam = arg;
	const struct kp_audio_format *f = &au->fmt;
	uint32_t samples = au->samples ? au->samples : f->frame_samples;
	if (au->len == 0 || au->len > KP_AAC_FRAME_MAX || (f->codec != KP_AUDIO_AAC && f->codec != KP_AUDIO_OPUS) ||
	    !f->rate || !f->channels || !samples || f->config_len > sizeof((kp_AudioUnit *)0)->config.bytes)
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_audio_unit_tag;
	kp_AudioUnit *m = &env.msg.audio_unit;
	snprintf(m->camera, sizeof m->camera, "%s", cam->conf.name);
	m->stream = KP_STREAM_INDEX_MAIN;
	m->codec = f->codec == KP_AUDIO_OPUS ? kp_AudioCodec_AUDIO_OPUS : kp_AudioCodec_AUDIO_AAC;
	m->samples = samples;
	m->sample_rate = f->rate;
	m->channels = f->channels;
	m->frame_samples = f->frame_samples;
	memcpy(m->config.bytes, f->config, f->config_len);
	m->config.size = (pb_size_t)f->config_len;
	m->pts_90k = au->pts_90k;
	m->wall_us = au->wall_us;
	m->seq = ++cam->audio_seq;
	int r = kp_worker_send_peer(table.w, kp_Peer_PEER_RECORDERD, &env, au->data, au->len);
	if (r < 0 && cam->audio_rejected++ % 250 == 0)
		kp_warn("%s/main: recorderd did not take audio frame %llu: %s", cam->conf.name,
			(unsigned long long)m->seq, strerror(-r));
	/* Live listeners: a frame rtcd's queue cannot take is lost (the decoder conceals it). */
	r = kp_worker_send_peer(table.w, kp_Peer_PEER_RTCD, &env, au->data, au->len);
	if (r < 0 && r != -ENOBUFS && cam->audio_rtcd_rejected++ % 250 == 0)
		kp_warn("%s/main: rtcd did not take audio frame %llu: %s", cam->conf.name, (unsigned long long)m->seq,
			strerror(-r));
}

/* The main stream's audio: AAC and Opus as they are, the rest converted once
 * (audio_conv.h). */
static void stream_audio_unit(void *ctx, const struct kp_audio_unit *au)
{
	struct ing_camera *cam = ctx;
	if (cam->failed || !cam->conf.audio || !configured(cam, KP_STREAM_INDEX_MAIN) || au->len == 0 ||
	    au->len > KP_AAC_FRAME_MAX)
		return;
	if (au->fmt.codec == KP_AUDIO_AAC || au->fmt.codec == KP_AUDIO_OPUS) {
		send_audio(cam, au);
		return;
	}
	const char *why;
	int r = ing_audio_conv_push(&cam->audio_conv, au, send_audio, cam, &why);
	if (r == -EPROTONOSUPPORT) {
		if (!cam->audio_unsupported_logged)
			kp_err("%s/main: camera audio (%s, %u Hz, %u channels) not recorded: %s", cam->conf.name,
			       au->fmt.codec == KP_AUDIO_ADPCM_IMA ? "IMA ADPCM"
			       : au->fmt.codec == KP_AUDIO_PCMU    ? "G.711 mu-law"
			       : au->fmt.codec == KP_AUDIO_PCMA    ? "G.711 A-law"
								   : "unknown codec",
			       au->fmt.rate, au->fmt.channels, why);
		cam->audio_unsupported_logged = true;
	} else if (r < 0) {
		if (cam->audio_conv_failed++ % 250 == 0)
			kp_warn("%s/main: camera audio not converted to Opus (%llu units so far): %s", cam->conf.name,
				(unsigned long long)cam->audio_conv_failed, why);
		cam->streams[KP_STREAM_INDEX_MAIN].audio_dropped++; /* reported with the next periodic state */
	}
}

static void camera_event(void *ctx, const char *kind, const char *labels, int64_t wall_ms)
{
	struct ing_camera *cam = ctx;
	if (cam->failed || !cam->conf.motion_events)
		return;
	cam->events++;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_camera_event_tag;
	kp_CameraEvent *e = &env.msg.camera_event;
	snprintf(e->camera, sizeof e->camera, "%s", cam->conf.name);
	snprintf(e->kind, sizeof e->kind, "%s", kind);
	snprintf(e->labels, sizeof e->labels, "%s", labels ? labels : "");
	e->wall_ms = wall_ms;
	int r = kp_worker_send_peer(table.w, kp_Peer_PEER_RECORDERD, &env, NULL, 0);
	if (r < 0)
		kp_warn("%s: %s event not delivered to recorderd: %s", cam->conf.name, kind, strerror(-r));
}

static void start_camera(struct ing_camera *cam);

/* first << failures (at most 6 doublings), capped at max, with +-20% jitter. */
static uint64_t backoff_ms(unsigned failures, uint64_t first, uint64_t max)
{
	unsigned shift = failures < 6 ? failures : 6;
	uint64_t delay = first << shift;
	if (delay > max)
		delay = max;
	return delay * (80 + (uint64_t)(rand_r(&table.seed) % 41)) / 100;
}

static void stream_failed(void *ctx, enum kp_stream_index s, const char *reason);

static void on_stream_timer(uv_timer_t *t)
{
	struct ing_stream *st = t->data;
	struct ing_camera *cam = st->cam;
	if (cam->failed || !cam->drv)
		return;
	st->retry_at_ms = 0;
	st->retries++;
	report(cam, st->index);
	int r = cam->ops->retry_stream ? cam->ops->retry_stream(cam->drv, st->index) : -ENOTSUP;
	if (r < 0 && !cam->failed) {
		char why[96];
		snprintf(why, sizeof why, "cannot request the stream again: %s", strerror(-r));
		stream_failed(cam, st->index, why);
	}
}

static void stream_failed(void *ctx, enum kp_stream_index s, const char *reason)
{
	struct ing_camera *cam = ctx;
	if ((unsigned)s > 1 || cam->failed || !configured(cam, s))
		return;
	struct ing_stream *st = &cam->streams[s];
	if (uv_is_active((uv_handle_t *)&st->retry_timer))
		return;
	if (st->state == ING_STREAMING && kp_mono_ms() - st->streaming_since_ms >= BACKOFF_RESET_MS)
		st->failures = 0;
	uint64_t delay = backoff_ms(st->failures, STREAM_BACKOFF_FIRST_MS, STREAM_BACKOFF_MAX_MS);
	st->failures++;
	st->retry_at_ms = kp_wall_ms() + (int64_t)delay;
	kp_warn("%s/%s: %s; retrying this stream alone in %llu ms (%u failures in a row)", cam->conf.name,
		s ? "sub" : "main", reason, (unsigned long long)delay, st->failures);
	enum ing_state prev = st->state;
	set_state(cam, s, ING_RETRYING, reason);
	if (prev == ING_RETRYING)
		report(cam, s); /* the new retry time */
	uv_timer_start(&st->retry_timer, on_stream_timer, delay, 0);
}

static void stop_stream_retries(struct ing_camera *cam)
{
	for (unsigned s = 0; s < 2; s++) {
		uv_timer_stop(&cam->streams[s].retry_timer);
		cam->streams[s].retry_at_ms = 0;
	}
}

static void on_timer(uv_timer_t *t)
{
	struct ing_camera *cam = t->data;
	if (cam->failed) {
		/* Deferred from camera_failed: stop the driver outside its own callbacks. */
		if (cam->drv) {
			cam->ops->stop(cam->drv);
			cam->drv = NULL;
		}
		cam->failed = false;
		uint64_t delay = backoff_ms(cam->failures, BACKOFF_FIRST_MS, BACKOFF_MAX_MS);
		cam->failures++;
		kp_info("%s: reconnecting in %llu ms (%u failures in a row)", cam->conf.name, (unsigned long long)delay,
			cam->failures);
		uv_timer_start(&cam->timer, on_timer, delay, 0);
		return;
	}
	cam->reconnects++;
	start_camera(cam);
}

static void camera_failed(void *ctx, bool auth_failed, const char *reason)
{
	struct ing_camera *cam = ctx;
	if (cam->failed)
		return;
	uint64_t now = kp_mono_ms();
	bool was_streaming = false;
	for (unsigned s = 0; s < 2; s++)
		if (configured(cam, s) && cam->streams[s].state == ING_STREAMING) {
			was_streaming = true;
			if (now - cam->streams[s].streaming_since_ms >= BACKOFF_RESET_MS)
				cam->failures = 0;
		}
	kp_warn("%s (%s): %s", cam->conf.name, cam->conf.url_redacted, reason);
	stop_stream_retries(cam);
	enum ing_state st = auth_failed ? ING_AUTH_FAILED : was_streaming ? ING_BACKOFF : ING_UNREACHABLE;
	for (unsigned s = 0; s < 2; s++)
		if (configured(cam, s))
			set_state(cam, s, st, reason);
	cam->last_failure_auth = auth_failed;
	cam->failed = true;
	ing_audio_conv_free(&cam->audio_conv); /* the next connection's audio is a new run */
	cam->audio_unsupported_logged = false;
	uv_timer_start(&cam->timer, on_timer, 0, 0);
}

static void start_camera(struct ing_camera *cam)
{
	for (unsigned s = 0; s < 2; s++)
		if (configured(cam, s))
			stream_state(cam, s, ING_CONNECTING, "");
	cam->sink = (struct ing_sink){.ctx = cam,
				      .stream_state = stream_state,
				      .access_unit = stream_access_unit,
				      .audio_unit = stream_audio_unit,
				      .bytes = stream_bytes,
				      .transport = stream_transport,
				      .event = camera_event,
				      .failed = camera_failed,
				      .stream_failed = stream_failed};
	int r = cam->ops->start(&cam->info, &cam->sink, table.loop, &cam->drv);
	if (r < 0) {
		char why[96];
		snprintf(why, sizeof why, "cannot start: %s", strerror(-r));
		cam->drv = NULL;
		camera_failed(cam, false, why);
	}
}

static void fill_info(struct ing_camera *cam)
{
	cam->info.name = cam->conf.name;
	cam->info.url = cam->conf.url;
	cam->info.url_redacted = cam->conf.url_redacted;
	cam->info.sub_url = cam->conf.sub_url;
	cam->info.streams = cam->conf.streams;
	cam->info.motion_events = cam->conf.motion_events;
	cam->info.rtsp_transport =
	    cam->conf.rtsp_transport <= KP_RTSP_AUTO ? (enum kp_rtsp_transport)cam->conf.rtsp_transport : KP_RTSP_TCP;
	cam->info.rtp_port_min = cam->conf.rtp_port_min;
	cam->info.rtp_port_max = cam->conf.rtp_port_max;
	cam->info.audio = cam->conf.audio;
}

static void on_closed(uv_handle_t *h)
{
	struct ing_camera *cam = h->data;
	if (--cam->open_handles == 0)
		free(cam);
}

static void remove_camera(struct ing_camera *cam)
{
	if (cam->drv)
		cam->ops->stop(cam->drv);
	cam->drv = NULL;
	cam->failed = true; /* ignore anything late */
	ing_audio_conv_free(&cam->audio_conv);
	uv_timer_t *timers[] = {&cam->timer, &cam->streams[0].retry_timer, &cam->streams[1].retry_timer};
	for (unsigned i = 0; i < 3; i++) {
		timers[i]->data = cam;
		uv_close((uv_handle_t *)timers[i], on_closed);
	}
}

static bool same_camera(const kp_CameraConfig *a, const kp_CameraConfig *b)
{
	return !strcmp(a->url, b->url) && !strcmp(a->sub_url, b->sub_url) && a->streams == b->streams &&
	       a->motion_events == b->motion_events && a->rtsp_transport == b->rtsp_transport &&
	       a->rtp_port_min == b->rtp_port_min && a->rtp_port_max == b->rtp_port_max && a->audio == b->audio;
}

void ing_cameras_item(const kp_CameraConfig *c)
{
	if (c->index == 0)
		table.npending = 0;
	if (table.npending < KP_MAX_CAMERAS)
		table.pending[table.npending++] = *c;
}

/* Applies the batch: unchanged cameras keep running, changed ones restart, others stop. */
void ing_cameras_apply(uint32_t generation)
{
	struct ing_camera *keep[KP_MAX_CAMERAS];
	unsigned nkeep = 0;
	for (unsigned i = 0; i < table.ncams; i++) {
		struct ing_camera *cam = table.cams[i];
		const kp_CameraConfig *next = NULL;
		for (unsigned j = 0; j < table.npending; j++)
			if (!strcmp(table.pending[j].name, cam->conf.name))
				next = &table.pending[j];
		if (next && same_camera(next, &cam->conf)) {
			cam->conf = *next;
			fill_info(cam);
			keep[nkeep++] = cam;
		} else {
			kp_info("%s: %s", cam->conf.name, next ? "configuration changed; restarting" : "removed");
			remove_camera(cam);
		}
	}
	for (unsigned j = 0; j < table.npending; j++) {
		bool known = false;
		for (unsigned i = 0; i < nkeep; i++)
			known |= !strcmp(keep[i]->conf.name, table.pending[j].name);
		if (known)
			continue;
		const struct ing_driver_ops *ops = ing_driver_for(table.pending[j].url);
		if (!ops) {
			kp_err("%s: no driver for %s", table.pending[j].name, table.pending[j].url_redacted);
			continue;
		}
		struct ing_camera *cam = calloc(1, sizeof *cam);
		if (!cam) {
			kp_err("%s: out of memory", table.pending[j].name);
			continue;
		}
		cam->conf = table.pending[j];
		cam->ops = ops;
		cam->owner = &table;
		fill_info(cam);
		uv_timer_init(table.loop, &cam->timer);
		cam->timer.data = cam;
		for (unsigned s = 0; s < 2; s++) {
			struct ing_stream *st = &cam->streams[s];
			st->state = configured(cam, s) ? ING_CONNECTING : ING_STOPPED;
			st->cam = cam;
			st->index = (enum kp_stream_index)s;
			uv_timer_init(table.loop, &st->retry_timer);
			st->retry_timer.data = st;
		}
		cam->open_handles = 3;
		keep[nkeep++] = cam;
		kp_info("%s: starting %s", cam->conf.name, cam->conf.url_redacted);
		start_camera(cam);
	}
	memcpy(table.cams, keep, nkeep * sizeof keep[0]);
	table.ncams = nkeep;
	table.npending = 0;
	kp_info("configuration generation %u: %u cameras", (unsigned)generation, nkeep);
}

/* Every health request: refresh fps and tell the supervisor. */
void ing_cameras_report(void)
{
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < table.ncams; i++) {
		struct ing_camera *cam = table.cams[i];
		for (unsigned s = 0; s < 2; s++) {
			struct ing_stream *st = &cam->streams[s];
			if (!configured(cam, s))
				continue;
			if (st->fps_ms && now > st->fps_ms)
				st->fps_milli =
				    (uint32_t)((st->frames - st->fps_frames) * 1000000 / (now - st->fps_ms));
			st->fps_frames = st->frames;
			st->fps_ms = now;
			report(cam, s);
		}
	}
}

void ing_cameras_init(struct kp_worker *w)
{
	table.w = w;
	table.loop = kp_worker_loop(w);
	table.seed = (unsigned)getpid() ^ (unsigned)time(NULL);
}

void ing_cameras_stop(void)
{
	for (unsigned i = 0; i < table.ncams; i++)
		remove_camera(table.cams[i]);
	table.ncams = 0;
}
