/* ingestd's driver for rtsp:// and rtsps:// cameras through libavformat: one thread per
 * stream reads access units (TCP-interleaved by default) under an interrupt callback
 * with a stop flag and an I/O deadline (and the main stream's AAC audio, when the
 * camera's audio is on, as audio units on the video's clock), and hands them to the
 * libuv loop through a
 * bounded queue and a uv_async_t. Only the loop thread calls the sink the core gave it.
 * Threads are detached and share the driver by reference count, so stop() never waits
 * for the network. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libavformat/avformat.h>
#include <libavutil/time.h>

#include "camera.h"
#include "config.h"
#include "kp_time.h"
#include "log.h"
#include "rtsp_au.h"

#define RTSP_QUEUE_ITEMS    64
#define RTSP_AUDIO_ITEMS    256              /* audio waits in a ring of its own: 5 s of 20 ms G.711 packets */
#define RTSP_AUDIO_HELD     32               /* audio packets held until the first video timestamps */
#define RTSP_OPEN_TIMEOUT   (10 * 1000000LL) /* µs to connect, DESCRIBE, SETUP, PLAY, probe */
#define RTSP_READ_TIMEOUT   (10 * 1000000LL) /* µs without a packet before giving up */
#define RTSP_SOCKET_TIMEOUT "5000000"        /* libavformat's own socket timeout, µs */

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
	atomic_llong deadline_us; /* av_gettime_relative() time after which I/O is abandoned */
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
	/* Loop thread only. */
	bool running, streaming;
	uint64_t dropped_logged, adropped_logged;
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

static int interrupt_cb(void *opaque)
{
	struct rtsp_stream *s = opaque;
	return atomic_load(&s->drv->stop) || av_gettime_relative() > atomic_load(&s->deadline_us);
}

static void notify(struct ing_driver *drv)
{
	if (!atomic_load(&drv->stop))
		uv_async_send(&drv->async);
}

/* Thread side: queues one access unit, or drops it (and every frame up to the next
 * keyframe) when the loop is RTSP_QUEUE_ITEMS behind. */
static void enqueue(struct rtsp_stream *s, const struct kp_access_unit *au)
{
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

/* Thread side: queues one audio frame in the audio ring (so that audio never takes the
 * video's places), or drops it when the loop is RTSP_AUDIO_ITEMS behind. */
static void enqueue_audio(struct rtsp_stream *s, const struct kp_audio_unit *au)
{
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

static void add_bytes(struct rtsp_stream *s, uint64_t n)
{
	pthread_mutex_lock(&s->drv->lock);
	s->bytes += n;
	pthread_mutex_unlock(&s->drv->lock);
}

static void set_deadline(struct rtsp_stream *s, int64_t timeout_us)
{
	atomic_store(&s->deadline_us, av_gettime_relative() + timeout_us);
}

/* Describes a libavformat error; *auth set for 401 Unauthorized. */
static void describe_error(struct rtsp_stream *s, const char *what, int err, char *reason, size_t cap, bool *auth)
{
	char msg[AV_ERROR_MAX_STRING_SIZE] = "";
	av_strerror(err, msg, sizeof msg);
	*auth = err == AVERROR_HTTP_UNAUTHORIZED || strstr(msg, "401") || strstr(msg, "Unauthorized");
	if (atomic_load(&s->drv->stop))
		snprintf(reason, cap, "%s: stopped", what);
	else if (err == AVERROR_EXIT && av_gettime_relative() > atomic_load(&s->deadline_us))
		snprintf(reason, cap, "%s: timed out", what);
	else if (*auth)
		snprintf(reason, cap, "%s: login refused: 401", what);
	else
		snprintf(reason, cap, "%s: %s", what, msg);
}

static int stream_codec(const AVCodecParameters *par, enum kp_codec *ret)
{
	if (par->codec_id == AV_CODEC_ID_H264)
		*ret = KP_CODEC_H264;
	else if (par->codec_id == AV_CODEC_ID_HEVC)
		*ret = KP_CODEC_H265;
	else
		return -EPROTONOSUPPORT;
	return 0;
}

/* 90 kHz timestamps starting at 0, monotonic. libavformat leaves the first RTSP packet
 * without a timestamp: it gets 0, and the first real timestamp lands one frame later. */
struct pts_clock {
	int64_t last, offset;
	bool have_offset;
};

static int64_t next_pts(struct pts_clock *c, const AVPacket *pkt, const AVStream *st)
{
	int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
	int64_t pts;
	if (ts == AV_NOPTS_VALUE) {
		pts = c->last == INT64_MIN ? 0 : c->last + 1;
	} else {
		int64_t raw = av_rescale_q(ts, st->time_base, (AVRational){1, 90000});
		if (!c->have_offset) {
			AVRational fr = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
			int64_t frame = fr.num > 0 && fr.den > 0 ? av_rescale(90000, fr.den, fr.num) : 3000;
			c->offset = raw - (c->last == INT64_MIN ? 0 : c->last + frame);
			c->have_offset = true;
		}
		pts = raw - c->offset;
	}
	if (c->last != INT64_MIN && pts <= c->last)
		pts = c->last + 1;
	c->last = pts;
	return pts;
}

/* The main stream's audio stream to record: AAC with its AudioSpecificConfig in the
 * extradata (RFC 3640's config, RFC 6416's for MP4A-LATM is not read), Opus (RFC 7587,
 * each packet's length from its TOC), or G.711 (PCMU, PCMA: ingestd's core converts it
 * to AAC). -1 when there is none or it is another
 * codec (said once in the log). */
static int find_audio(struct rtsp_stream *s, AVFormatContext *fmt, int video, struct kp_audio_format *ret)
{
	if (s->index != KP_STREAM_INDEX_MAIN || !s->drv->audio)
		return -1;
	int idx = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, video, NULL, 0);
	if (idx < 0)
		return -1;
	const AVCodecParameters *par = fmt->streams[idx]->codecpar;
	if ((par->codec_id == AV_CODEC_ID_PCM_MULAW || par->codec_id == AV_CODEC_ID_PCM_ALAW) && par->sample_rate > 0 &&
	    par->ch_layout.nb_channels == 1) {
		*ret = (struct kp_audio_format){.codec = par->codec_id == AV_CODEC_ID_PCM_MULAW ? KP_AUDIO_PCMU
												: KP_AUDIO_PCMA,
						.rate = (uint32_t)par->sample_rate,
						.channels = 1};
		kp_info("camera %s: recording G.711 audio as AAC, %u Hz", s->drv->name, ret->rate);
		return idx;
	}
	if (par->codec_id == AV_CODEC_ID_OPUS) { /* RFC 7587: 48 kHz, mono or stereo */
		int ch = par->ch_layout.nb_channels;
		*ret = (struct kp_audio_format){.codec = KP_AUDIO_OPUS, .rate = 48000, .channels = ch == 1 ? 1u : 2u};
		kp_info("camera %s: recording Opus audio, %u channels", s->drv->name, ret->channels);
		return idx;
	}
	if (par->codec_id != AV_CODEC_ID_AAC) {
		kp_notice("camera %s: audio in %s is not recorded (AAC, Opus and mono G.711 are)", s->drv->name,
			  avcodec_get_name(par->codec_id));
		return -1;
	}
	if (!par->extradata || kp_aac_config_parse(par->extradata, (size_t)par->extradata_size, ret) < 0) {
		kp_warn("camera %s: AAC audio without a usable AudioSpecificConfig (%d bytes): not recorded",
			s->drv->name, par->extradata_size);
		return -1;
	}
	kp_info("camera %s: recording AAC audio, %u Hz, %u channels", s->drv->name, ret->rate, ret->channels);
	return idx;
}

/* Audio read before the video's clock has its offset (libavformat may return an audio
 * packet first, and the first video packet has no timestamp): held, then handed over. */
struct audio_held {
	AVPacket *pkt[RTSP_AUDIO_HELD];
	unsigned n;
};

/* One audio packet on the video's clock. */
static void audio_packet(struct rtsp_stream *s, const AVPacket *pkt, const AVStream *st, const struct pts_clock *c,
			 const struct kp_audio_format *fmt)
{
	int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
	uint32_t samples = 0;
	if (fmt->codec == KP_AUDIO_OPUS && !(samples = kp_opus_packet_samples(pkt->data, (size_t)pkt->size)))
		return; /* not an Opus packet we can time */
	if (ts == AV_NOPTS_VALUE || pkt->size <= 0)
		return;
	struct kp_audio_unit au = {
	    .fmt = *fmt,
	    .samples = samples,
	    .pts_90k = av_rescale_q(ts, st->time_base, (AVRational){1, 90000}) - c->offset,
	    .wall_us = kp_wall_us(),
	    .data = pkt->data,
	    .len = (size_t)pkt->size,
	};
	enqueue_audio(s, &au);
}

/* An audio packet now, or held until the video's clock is set (the oldest held packet
 * is dropped past RTSP_AUDIO_HELD). */
static void audio_or_hold(struct rtsp_stream *s, AVPacket *pkt, const AVStream *st, const struct pts_clock *c,
			  const struct kp_audio_format *fmt, struct audio_held *h)
{
	if (c->have_offset) {
		for (unsigned i = 0; i < h->n; i++) {
			audio_packet(s, h->pkt[i], st, c, fmt);
			av_packet_free(&h->pkt[i]);
		}
		h->n = 0;
		audio_packet(s, pkt, st, c, fmt);
		return;
	}
	if (h->n == RTSP_AUDIO_HELD) {
		av_packet_free(&h->pkt[0]);
		memmove(h->pkt, h->pkt + 1, (RTSP_AUDIO_HELD - 1) * sizeof h->pkt[0]);
		h->n--;
	}
	h->pkt[h->n] = av_packet_clone(pkt);
	if (h->pkt[h->n])
		h->n++;
}

/* Reads packets until an error or stop; returns with reason set. */
static void read_loop(struct rtsp_stream *s, AVFormatContext *fmt, char *reason, size_t cap, bool *auth)
{
	set_deadline(s, RTSP_OPEN_TIMEOUT);
	int err = avformat_find_stream_info(fmt, NULL);
	if (err < 0) {
		describe_error(s, "probe", err, reason, cap, auth);
		return;
	}
	int idx = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
	if (idx < 0) {
		snprintf(reason, cap, "no video stream");
		return;
	}
	AVStream *st = fmt->streams[idx];
	enum kp_codec codec;
	if (stream_codec(st->codecpar, &codec) < 0) {
		snprintf(reason, cap, "unsupported codec %s", avcodec_get_name(st->codecpar->codec_id));
		return;
	}
	struct kp_audio_format afmt;
	int aidx = find_audio(s, fmt, idx, &afmt);
	uint8_t params[ING_RTSP_MAX_PARAMS];
	size_t params_len = 0;
	unsigned lsz = 0;
	const char *why;
	if (ing_rtsp_extradata_params(codec, st->codecpar->extradata, (size_t)st->codecpar->extradata_size, params,
				      sizeof params, &params_len, &lsz, &why) < 0) {
		snprintf(reason, cap, "codec extradata: %s", why);
		return;
	}
	AVPacket *pkt = av_packet_alloc();
	if (!pkt) {
		snprintf(reason, cap, "out of memory");
		return;
	}
	uint8_t *buf = NULL;
	size_t buf_cap = 0;
	struct pts_clock clock = {.last = INT64_MIN};
	struct audio_held held = {.n = 0};
	for (;;) {
		set_deadline(s, RTSP_READ_TIMEOUT);
		err = av_read_frame(fmt, pkt);
		if (err < 0) {
			describe_error(s, "read", err, reason, cap, auth);
			break;
		}
		add_bytes(s, (uint64_t)pkt->size);
		if (aidx >= 0 && pkt->stream_index == aidx)
			audio_or_hold(s, pkt, fmt->streams[aidx], &clock, &afmt, &held);
		if (pkt->stream_index != idx) {
			av_packet_unref(pkt);
			continue;
		}
		size_t extra_len;
		const uint8_t *extra = av_packet_get_side_data(pkt, AV_PKT_DATA_NEW_EXTRADATA, &extra_len);
		if (extra && ing_rtsp_extradata_params(codec, extra, extra_len, params, sizeof params, &params_len,
						       &lsz, &why) < 0) {
			snprintf(reason, cap, "new extradata: %s", why);
			break;
		}
		bool key = pkt->flags & AV_PKT_FLAG_KEY;
		size_t len;
		if (ing_rtsp_au_build(codec, pkt->data, (size_t)pkt->size, lsz, key, params, params_len, &buf, &buf_cap,
				      &len, &why) < 0) {
			snprintf(reason, cap, "bad access unit: %s", why);
			break;
		}
		int64_t pts = next_pts(&clock, pkt, st);
		struct kp_access_unit au = {
		    .codec = codec,
		    .keyframe = key,
		    .pts_90k = pts,
		    .wall_us = kp_wall_us(),
		    .width = (uint32_t)(st->codecpar->width > 0 ? st->codecpar->width : 0),
		    .height = (uint32_t)(st->codecpar->height > 0 ? st->codecpar->height : 0),
		    .data = buf,
		    .len = len,
		};
		enqueue(s, &au);
		av_packet_unref(pkt);
	}
	for (unsigned i = 0; i < held.n; i++)
		av_packet_free(&held.pkt[i]);
	free(buf);
	av_packet_free(&pkt);
}

static void *stream_thread(void *arg)
{
	struct rtsp_stream *s = arg;
	struct ing_driver *drv = s->drv;
	char reason[sizeof s->reason] = "";
	bool auth = false;
	AVFormatContext *fmt = avformat_alloc_context();
	if (!fmt) {
		snprintf(reason, sizeof reason, "out of memory");
		goto out;
	}
	fmt->interrupt_callback = (AVIOInterruptCB){.callback = interrupt_cb, .opaque = s};
	AVDictionary *opts = NULL;
	av_dict_set(&opts, "rtsp_transport", "tcp", 0);
	av_dict_set(&opts, "timeout", RTSP_SOCKET_TIMEOUT, 0);
	set_deadline(s, RTSP_OPEN_TIMEOUT);
	int err = avformat_open_input(&fmt, s->url, NULL, &opts); /* frees fmt on failure */
	av_dict_free(&opts);
	if (err < 0) {
		describe_error(s, "connect", err, reason, sizeof reason, &auth);
		goto out;
	}
	read_loop(s, fmt, reason, sizeof reason, &auth);
	set_deadline(s, 1000000); /* TEARDOWN gets a second at most */
	avformat_close_input(&fmt);
out:
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
			s->dropped_logged = dropped;
		}
		if (adropped != s->adropped_logged) {
			kp_warn("camera %s: loop behind, %llu audio frames dropped", drv->name,
				(unsigned long long)(adropped - s->adropped_logged));
			s->adropped_logged = adropped;
		}
		if (done) {
			drv->failed = true;
			drv->sink->failed(drv->sink->ctx, auth, reason);
		}
	}
}

static void on_async_close(uv_handle_t *h)
{
	driver_unref(h->data);
}

static void quiet_libav(void)
{
	av_log_set_level(AV_LOG_ERROR);
}

static int rtsp_start(const struct ing_camera_info *info, const struct ing_sink *sink, uv_loop_t *loop,
		      struct ing_driver **ret)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, quiet_libav);
	struct ing_driver *drv = calloc(1, sizeof *drv);
	if (!drv)
		return -ENOMEM;
	drv->sink = sink;
	drv->name = strdup(info->name);
	drv->audio = info->audio;
	drv->url_redacted = strdup(info->url_redacted);
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

const struct ing_driver_ops ing_rtsp_driver = {
    .scheme = "rtsp",
    .start = rtsp_start,
    .stop = rtsp_stop,
};
