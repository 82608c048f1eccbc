/* ingestd's driver for rtsp:// and rtsps:// cameras: one thread per stream runs RTSP
 * sessions of our own client (rtsp_session.c: RTP interleaved on the TCP connection, over
 * UDP, or UDP first with a fall back to TCP: keeppeek.conf(5) transport; the main
 * stream's audio, when the camera's audio is on, as audio units on the video's clock),
 * and hands what they produce to the libuv loop through a bounded queue and a
 * uv_async_t. Only the loop thread calls the sink the core gave it. Threads are detached
 * and share the driver by reference count, so stop() never waits for the network (a
 * session looks at the stop flag at least every 100 ms). A stream that ends while the
 * other still runs fails alone and gets a new thread when the core retries it. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "camera.h"
#include "config.h"
#include "kp_time.h"
#include "log.h"
#include "rtsp_session.h"

#define RTSP_QUEUE_ITEMS 64
#define RTSP_AUDIO_ITEMS 256   /* audio waits in a ring of its own: 5 s of 20 ms G.711 packets */
#define RTSP_LOSS_LOG_MS 10000 /* at most one loss log line per stream this often */

struct rtsp_item {
	bool is_audio;
	struct kp_access_unit au;
	struct kp_audio_unit audio;
	uint8_t data[];
};

struct rtsp_stream {
	struct ing_driver *drv;
	enum kp_stream_index index;
	char *url;
	/* Guarded by drv->lock. */
	struct rtsp_item *queue[RTSP_QUEUE_ITEMS];
	unsigned head, count;
	struct rtsp_item *aqueue[RTSP_AUDIO_ITEMS];
	unsigned ahead, acount;
	uint64_t adropped;
	bool skip_to_keyframe;
	uint64_t dropped, bytes;
	bool done, auth_failed;
	char reason[192];
	struct ing_transport_report report; /* counts since the loop last took them */
	bool report_due;
	/* Loop thread only. */
	bool running, streaming;
	uint64_t dropped_logged, adropped_logged;
	uint64_t loss_logged_ms, lost_unlogged, loss_dropped_unlogged;
};

struct ing_driver {
	const struct ing_sink *sink; /* loop thread only */
	uv_async_t async;
	pthread_mutex_t lock;
	atomic_bool stop; /* set under lock; threads never touch async once it is set */
	atomic_int refs;  /* the loop's async handle plus one per running thread */
	bool failed;
	bool audio; /* the camera's audio is recorded: the main stream's thread takes it */
	char *name, *url_redacted;
	enum kp_rtsp_transport transport;
	unsigned rtp_port_min, rtp_port_max;
	struct rtsp_stream streams[2];
};

static void driver_unref(struct ing_driver *drv)
{
	if (atomic_fetch_sub(&drv->refs, 1) != 1)
		return;
	for (int i = 0; i < 2; i++) {
		struct rtsp_stream *s = &drv->streams[i];
		for (unsigned k = 0; k < s->count; k++)
			free(s->queue[(s->head + k) % RTSP_QUEUE_ITEMS]);
		for (unsigned k = 0; k < s->acount; k++)
			free(s->aqueue[(s->ahead + k) % RTSP_AUDIO_ITEMS]);
		free(s->url);
	}
	pthread_mutex_destroy(&drv->lock);
	free(drv->name);
	free(drv->url_redacted);
	free(drv);
}

static void notify(struct ing_driver *drv)
{
	if (!atomic_load(&drv->stop))
		uv_async_send(&drv->async);
}

/* Thread side: queues one access unit, or drops it (and every frame up to the next
 * keyframe) when the loop is RTSP_QUEUE_ITEMS behind. */
static void enqueue(void *arg, const struct kp_access_unit *au)
{
	struct rtsp_stream *s = arg;
	struct ing_driver *drv = s->drv;
	pthread_mutex_lock(&drv->lock);
	if ((s->skip_to_keyframe && !au->keyframe) || s->count == RTSP_QUEUE_ITEMS) {
		s->skip_to_keyframe = true;
		s->dropped++;
		pthread_mutex_unlock(&drv->lock);
		return;
	}
	struct rtsp_item *it = malloc(sizeof *it + au->len);
	if (!it) {
		s->skip_to_keyframe = true;
		s->dropped++;
		pthread_mutex_unlock(&drv->lock);
		return;
	}
	it->is_audio = false;
	it->au = *au;
	memcpy(it->data, au->data, au->len);
	it->au.data = it->data;
	s->skip_to_keyframe = false;
	s->queue[(s->head + s->count) % RTSP_QUEUE_ITEMS] = it;
	s->count++;
	notify(drv);
	pthread_mutex_unlock(&drv->lock);
}

/* Thread side: counts for the core, taken by the loop at its next wake-up. */
static void add_report(void *arg, const struct ing_transport_report *d)
{
	struct rtsp_stream *s = arg;
	pthread_mutex_lock(&s->drv->lock);
	if (d->transport)
		s->report.transport = d->transport;
	s->report.rtp_lost_packets += d->rtp_lost_packets;
	s->report.loss_dropped += d->loss_dropped;
	s->report.truncated_dropped += d->truncated_dropped;
	s->report.foreign_dropped += d->foreign_dropped;
	s->report.resyncs += d->resyncs;
	s->report.malformed += d->malformed;
	s->report_due = true;
	notify(s->drv);
	pthread_mutex_unlock(&s->drv->lock);
}

/* Thread side: queues one audio frame in the audio ring (so that audio never takes the
 * video's places), or drops it when the loop is RTSP_AUDIO_ITEMS behind. */
static void enqueue_audio(void *arg, const struct kp_audio_unit *au)
{
	struct rtsp_stream *s = arg;
	struct ing_driver *drv = s->drv;
	pthread_mutex_lock(&drv->lock);
	struct rtsp_item *it = s->acount < RTSP_AUDIO_ITEMS ? malloc(sizeof *it + au->len) : NULL;
	if (!it) {
		s->adropped++;
		pthread_mutex_unlock(&drv->lock);
		return;
	}
	it->is_audio = true;
	it->audio = *au;
	memcpy(it->data, au->data, au->len);
	it->audio.data = it->data;
	s->aqueue[(s->ahead + s->acount) % RTSP_AUDIO_ITEMS] = it;
	s->acount++;
	notify(drv);
	pthread_mutex_unlock(&drv->lock);
}

static void add_bytes(void *arg, uint64_t n)
{
	struct rtsp_stream *s = arg;
	pthread_mutex_lock(&s->drv->lock);
	s->bytes += n;
	pthread_mutex_unlock(&s->drv->lock);
}

static enum rtsp_end run_session(struct rtsp_stream *s, bool udp, char *reason, size_t cap, bool *auth)
{
	struct ing_driver *drv = s->drv;
	struct rtsp_session_ctx c = {
	    .name = drv->name,
	    .stream = s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub",
	    .url = s->url,
	    .udp = udp,
	    .port_min = drv->rtp_port_min,
	    .port_max = drv->rtp_port_max,
	    .want_audio = s->index == KP_STREAM_INDEX_MAIN && drv->audio,
	    .stop = &drv->stop,
	    .sink = {.arg = s, .video = enqueue, .audio = enqueue_audio},
	    .report = add_report,
	    .bytes = add_bytes,
	    .arg = s,
	};
	return rtsp_session_run(&c, reason, cap, auth);
}

static void *stream_thread(void *arg)
{
	struct rtsp_stream *s = arg;
	struct ing_driver *drv = s->drv;
	char reason[sizeof s->reason] = "";
	bool auth = false;
	bool udp = drv->transport != KP_RTSP_TCP;
	enum rtsp_end r = run_session(s, udp, reason, sizeof reason, &auth);
	if (r == RTSP_END_NO_UDP && drv->transport == KP_RTSP_AUTO && !atomic_load(&drv->stop)) {
		kp_warn("camera %s: %s stream: over UDP: %s; trying RTP over TCP", drv->name,
			s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub", reason);
		run_session(s, false, reason, sizeof reason, &auth);
	}
	pthread_mutex_lock(&drv->lock);
	s->done = true;
	s->auth_failed = auth;
	snprintf(s->reason, sizeof s->reason, "%s stream: %s", s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub",
		 reason);
	notify(drv);
	pthread_mutex_unlock(&drv->lock);
	driver_unref(drv);
	return NULL;
}

/* Loop side: hands the core what a stream's transport did; logs the transport chosen,
 * and losses at most every RTSP_LOSS_LOG_MS. */
static void report_transport(struct ing_driver *drv, struct rtsp_stream *s)
{
	pthread_mutex_lock(&drv->lock);
	struct ing_transport_report r = s->report;
	bool due = s->report_due;
	memset(&s->report, 0, sizeof s->report);
	s->report_due = false;
	pthread_mutex_unlock(&drv->lock);
	if (!due)
		return;
	const char *name = s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub";
	if (r.transport)
		kp_info("camera %s: %s stream: RTP over %s", drv->name, name,
			!strcmp(r.transport, "udp") ? "UDP" : "TCP");
	s->lost_unlogged += r.rtp_lost_packets;
	s->loss_dropped_unlogged += r.loss_dropped;
	uint64_t now = kp_mono_ms();
	if ((s->lost_unlogged || s->loss_dropped_unlogged) && now - s->loss_logged_ms >= RTSP_LOSS_LOG_MS) {
		kp_warn("camera %s: %s stream: %llu RTP packets lost; %llu access units dropped up to a keyframe",
			drv->name, name, (unsigned long long)s->lost_unlogged,
			(unsigned long long)s->loss_dropped_unlogged);
		s->loss_logged_ms = now;
		s->lost_unlogged = s->loss_dropped_unlogged = 0;
	}
	if (drv->sink->transport)
		drv->sink->transport(drv->sink->ctx, s->index, &r);
}

/* Loop side: delivers what the threads queued. */
static void on_async(uv_async_t *h)
{
	struct ing_driver *drv = h->data;
	for (int i = 0; i < 2 && !drv->failed; i++) {
		struct rtsp_stream *s = &drv->streams[i];
		if (!s->running)
			continue;
		/* Audio first: it is older than the video keyframe that may come with it. */
		struct rtsp_item *items[RTSP_AUDIO_ITEMS + RTSP_QUEUE_ITEMS];
		pthread_mutex_lock(&drv->lock);
		unsigned na = s->acount, n = na + s->count;
		for (unsigned k = 0; k < na; k++)
			items[k] = s->aqueue[(s->ahead + k) % RTSP_AUDIO_ITEMS];
		for (unsigned k = na; k < n; k++)
			items[k] = s->queue[(s->head + k - na) % RTSP_QUEUE_ITEMS];
		s->ahead = (s->ahead + na) % RTSP_AUDIO_ITEMS;
		s->acount = 0;
		s->head = (s->head + n - na) % RTSP_QUEUE_ITEMS;
		s->count = 0;
		uint64_t bytes = s->bytes, dropped = s->dropped, adropped = s->adropped;
		s->bytes = 0;
		bool done = s->done, auth = s->auth_failed;
		char reason[sizeof s->reason];
		memcpy(reason, s->reason, sizeof reason);
		pthread_mutex_unlock(&drv->lock);

		if (bytes)
			drv->sink->bytes(drv->sink->ctx, s->index, bytes);
		report_transport(drv, s);
		for (unsigned k = 0; k < n; k++) {
			if (!s->streaming && !items[k]->is_audio) {
				s->streaming = true;
				drv->sink->stream_state(drv->sink->ctx, s->index, ING_STREAMING, "");
			}
			if (items[k]->is_audio)
				drv->sink->audio_unit(drv->sink->ctx, &items[k]->audio);
			else
				drv->sink->access_unit(drv->sink->ctx, s->index, &items[k]->au);
			free(items[k]);
		}
		if (dropped != s->dropped_logged) {
			kp_warn("camera %s: %s stream: loop behind, %llu access units dropped up to a keyframe",
				drv->name, s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub",
				(unsigned long long)(dropped - s->dropped_logged));
			if (drv->sink->transport)
				drv->sink->transport(
				    drv->sink->ctx, s->index,
				    &(struct ing_transport_report){.overrun_dropped = dropped - s->dropped_logged});
			s->dropped_logged = dropped;
		}
		if (adropped != s->adropped_logged) {
			kp_warn("camera %s: loop behind, %llu audio frames dropped", drv->name,
				(unsigned long long)(adropped - s->adropped_logged));
			if (drv->sink->transport)
				drv->sink->transport(
				    drv->sink->ctx, KP_STREAM_INDEX_MAIN,
				    &(struct ing_transport_report){.audio_dropped = adropped - s->adropped_logged});
			s->adropped_logged = adropped;
		}
		if (done) {
			s->running = false;
			s->streaming = false;
			const struct rtsp_stream *other = &drv->streams[1 - i];
			if (!auth && other->running) {
				drv->sink->stream_failed(drv->sink->ctx, s->index, reason);
				continue;
			}
			drv->failed = true;
			drv->sink->failed(drv->sink->ctx, auth, reason);
		}
	}
}

static void on_async_close(uv_handle_t *h)
{
	driver_unref(h->data);
}

static int rtsp_start(const struct ing_camera_info *info, const struct ing_sink *sink, uv_loop_t *loop,
		      struct ing_driver **ret)
{
	struct ing_driver *drv = calloc(1, sizeof *drv);
	if (!drv)
		return -ENOMEM;
	drv->sink = sink;
	drv->name = strdup(info->name);
	drv->audio = info->audio;
	drv->url_redacted = strdup(info->url_redacted);
	drv->transport = info->rtsp_transport;
	drv->rtp_port_min = info->rtp_port_min;
	drv->rtp_port_max = info->rtp_port_max;
	const char *urls[2] = {
	    info->streams & KP_STREAM_MAIN ? info->url : NULL,
	    info->streams & KP_STREAM_SUB && info->sub_url && info->sub_url[0] ? info->sub_url : NULL,
	};
	int r = -ENOMEM;
	if (!drv->name || !drv->url_redacted)
		goto out_free;
	for (int i = 0; i < 2; i++) {
		drv->streams[i].drv = drv;
		drv->streams[i].index = (enum kp_stream_index)i;
		if (urls[i] && !(drv->streams[i].url = strdup(urls[i])))
			goto out_free;
	}
	r = -pthread_mutex_init(&drv->lock, NULL);
	if (r < 0)
		goto out_free;
	r = uv_async_init(loop, &drv->async, on_async);
	if (r < 0) {
		pthread_mutex_destroy(&drv->lock);
		goto out_free;
	}
	drv->async.data = drv;
	atomic_store(&drv->refs, 1);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, KP_RTSP_THREAD_STACK);
	for (int i = 0; i < 2; i++) {
		struct rtsp_stream *s = &drv->streams[i];
		if (!s->url)
			continue;
		sink->stream_state(sink->ctx, s->index, ING_CONNECTING, "");
		atomic_fetch_add(&drv->refs, 1);
		pthread_t t;
		int e = pthread_create(&t, &attr, stream_thread, s);
		if (e) {
			atomic_fetch_sub(&drv->refs, 1);
			pthread_attr_destroy(&attr);
			kp_err("camera %s: cannot start the RTSP thread for %s: %s", drv->name, drv->url_redacted,
			       strerror(e));
			atomic_store(&drv->stop, true);
			uv_close((uv_handle_t *)&drv->async, on_async_close);
			return -e;
		}
		s->running = true;
	}
	pthread_attr_destroy(&attr);
	kp_info("camera %s: RTSP from %s", drv->name, drv->url_redacted);
	*ret = drv;
	return 0;

out_free:
	for (int i = 0; i < 2; i++)
		free(drv->streams[i].url);
	free(drv->name);
	free(drv->url_redacted);
	free(drv);
	return r;
}

static void rtsp_stop(struct ing_driver *drv)
{
	pthread_mutex_lock(&drv->lock);
	atomic_store(&drv->stop, true);
	pthread_mutex_unlock(&drv->lock);
	uv_close((uv_handle_t *)&drv->async, on_async_close);
}

/* After sink->stream_failed: a new thread for the stream (the old one has ended). */
static int rtsp_retry_stream(struct ing_driver *drv, enum kp_stream_index idx)
{
	struct rtsp_stream *s = &drv->streams[idx];
	if (drv->failed || atomic_load(&drv->stop) || !s->url || s->running)
		return -EAGAIN;
	pthread_mutex_lock(&drv->lock);
	s->done = false;
	s->auth_failed = false;
	s->skip_to_keyframe = false;
	s->reason[0] = '\0';
	pthread_mutex_unlock(&drv->lock);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, KP_RTSP_THREAD_STACK);
	atomic_fetch_add(&drv->refs, 1);
	pthread_t t;
	int e = pthread_create(&t, &attr, stream_thread, s);
	pthread_attr_destroy(&attr);
	if (e) {
		atomic_fetch_sub(&drv->refs, 1);
		return -e;
	}
	s->running = true;
	drv->sink->stream_state(drv->sink->ctx, s->index, ING_CONNECTING, "");
	return 0;
}

const struct ing_driver_ops ing_rtsp_driver = {
    .scheme = "rtsp",
    .start = rtsp_start,
    .stop = rtsp_stop,
    .retry_stream = rtsp_retry_stream,
};
