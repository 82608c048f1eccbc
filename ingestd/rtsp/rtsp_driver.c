/* ingestd's driver for rtsp:// and rtsps:// cameras through libavformat: one thread per
 * stream reads access units (RTP interleaved on the TCP connection, over UDP, or UDP
 * first with a fall back to TCP: keeppeek.conf(5) transport) under an interrupt callback
 * with a stop flag and an I/O deadline (and the main stream's audio, when the camera's
 * audio is on, as audio units on the video's clock), and hands them to the libuv loop
 * through a
 * bounded queue and a uv_async_t. Only the loop thread calls the sink the core gave it.
 * An access unit is held until the next one is read, so that the one libavformat hands
 * over when the connection ends (possibly cut) is dropped, and one a missing RTP packet
 * damaged is dropped with what follows up to a keyframe (rtsp_gate.c); its PTS and DTS
 * come from libavformat's, repaired where they break (rtsp_ts.c). Threads are detached
 * and share the driver by reference count, so stop() never waits for the network. A
 * stream that ends while the other still runs fails alone and gets a new thread when
 * the core retries it. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
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
#include "rtsp_gate.h"
#include "rtsp_ts.h"

#define RTSP_QUEUE_ITEMS    64
#define RTSP_AUDIO_ITEMS    256              /* audio waits in a ring of its own: 5 s of 20 ms G.711 packets */
#define RTSP_AUDIO_HELD     32               /* audio packets held until the first video timestamps */
#define RTSP_OPEN_TIMEOUT   (10 * 1000000LL) /* µs to connect, DESCRIBE, SETUP, PLAY, probe */
#define RTSP_READ_TIMEOUT   (10 * 1000000LL) /* µs without a packet before giving up */
#define RTSP_SOCKET_TIMEOUT "5000000"        /* libavformat's own socket timeout, µs */
#define RTSP_UDP_WAIT       (5 * 1000000LL)  /* µs from PLAY to the first access unit over UDP */
#define RTSP_REORDER_QUEUE  "500"            /* RTP packets libavformat holds to put UDP back in order */
#define RTSP_REORDER_WAIT   "100000"         /* µs it waits for a missing one before going on without */
#define RTSP_UDP_RCVBUF     "2097152"        /* SO_RCVBUF asked for (capped by net.core.rmem_max) */
#define RTSP_LOSS_LOG_MS    10000            /* at most one loss log line per stream this often */

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
	uint64_t dropped, bytes, repaired;
	bool done, auth_failed;
	char reason[192];
	struct ing_transport_report report; /* counts since the loop last took them */
	bool report_due;
	/* Stream thread only. */
	struct rtsp_gate gate;
	AVPacket *first;          /* read before probing, handed to read_loop first */
	uint64_t lost_unreported; /* RTP packets libavformat reported missing */
	/* Loop thread only. */
	bool running, streaming;
	uint64_t dropped_logged, repaired_logged, adropped_logged;
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
/* Timestamps rtsp_ts.c repaired so far, for the loop's log line. */
static void note_repaired(struct rtsp_stream *s, uint64_t repaired)
{
	pthread_mutex_lock(&s->drv->lock);
	s->repaired = repaired;
	pthread_mutex_unlock(&s->drv->lock);
}

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

/* Thread side: counts for the core, taken by the loop at its next wake-up. */
static void add_report(struct rtsp_stream *s, const char *transport, uint64_t loss_dropped, uint64_t truncated)
{
	pthread_mutex_lock(&s->drv->lock);
	if (transport)
		s->report.transport = transport;
	s->report.rtp_lost_packets += s->lost_unreported;
	s->report.loss_dropped += loss_dropped;
	s->report.truncated_dropped += truncated;
	s->lost_unreported = 0;
	s->report_due = true;
	notify(s->drv);
	pthread_mutex_unlock(&s->drv->lock);
}

/* Thread side: whether an access unit just read is built and delivered, or dropped for
 * loss (rtsp_gate.h); a drop releases the access unit held. */
static bool admit(struct rtsp_stream *s, bool keyframe)
{
	uint64_t dropped = 0;
	if (rtsp_gate_admit(&s->gate, keyframe, &dropped))
		return true;
	struct kp_access_unit out;
	if (rtsp_gate_release(&s->gate, &out))
		enqueue(s, &out);
	add_report(s, NULL, dropped, 0);
	return false;
}

/* Thread side: an admitted access unit into the gate; the one it held to the queue. */
static void deliver(struct rtsp_stream *s, const struct kp_access_unit *au)
{
	struct kp_access_unit out;
	uint64_t dropped = 0;
	if (rtsp_gate_push(&s->gate, au, &out, &dropped) == 1)
		enqueue(s, &out);
	if (dropped || s->lost_unreported)
		add_report(s, NULL, dropped, 0);
}

/* Thread side: the media ended (error, timeout, stop): the access unit held is dropped,
 * as the one libavformat hands over at the end may be cut. */
static void end_of_media(struct rtsp_stream *s)
{
	size_t len = rtsp_gate_end(&s->gate);
	if (len && !atomic_load(&s->drv->stop)) {
		kp_warn("camera %s: %s stream: the connection ended; its last access unit (%zu bytes) may be cut "
			"and is dropped",
			s->drv->name, s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub", len);
		add_report(s, NULL, 0, 1);
	}
}

/* libavformat's log (libavformat/rtpdec.c, rtp_parse_one_packet and
 * rtp_parse_queued_packet, logged on the AVFormatContext whose opaque is the stream):
 * RTP packets it gave up waiting for, and one that came after the packet following it
 * had been used (at the start of a session, the first packet received sets the
 * sequence), are counted as lost. Everything else goes to the default logger. Runs on
 * the thread that reads the stream. */
static void libav_log(void *avcl, int level, const char *fmt, va_list vl)
{
	bool missed = !strcmp(fmt, "RTP: missed %d packets\n");
	bool late = !strcmp(fmt, "RTP: dropping old packet received too late\n");
	if (avcl && level == AV_LOG_WARNING && (missed || late) && *(const AVClass **)avcl == avformat_get_class()) {
		struct rtsp_stream *s = ((AVFormatContext *)avcl)->opaque;
		int n = 1;
		if (missed) {
			va_list ap;
			va_copy(ap, vl);
			n = va_arg(ap, int);
			va_end(ap);
			if (n <= 0) /* the sequence number wrapped (16 bits) */
				n += 65536;
		}
		if (s && n > 0) {
			s->lost_unreported += (uint64_t)n;
			rtsp_gate_lost(&s->gate);
		}
		return;
	}
	av_log_default_callback(avcl, level, fmt, vl);
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

/* The packet's time in 90 kHz, or ING_RTSP_TS_NONE. */
static int64_t ts90k(int64_t t, const AVStream *st)
{
	return t == AV_NOPTS_VALUE ? ING_RTSP_TS_NONE : av_rescale_q(t, st->time_base, (AVRational){1, 90000});
}

/* Access units whose times wait for the first DTS (rtsp_ts.h), copied. */
struct held_aus {
	struct kp_access_unit au[ING_RTSP_TS_HOLD + 1];
	unsigned n;
};

static void held_free(struct held_aus *h)
{
	for (unsigned i = 0; i < h->n; i++)
		free((void *)h->au[i].data);
	h->n = 0;
}

static int hold(struct held_aus *h, const struct kp_access_unit *au)
{
	uint8_t *copy = malloc(au->len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, au->data, au->len);
	h->au[h->n] = *au;
	h->au[h->n++].data = copy;
	return 0;
}

/* Losses while libavformat probed the stream were reported before the access units it
 * buffered meanwhile reach the gate, which could not tell the damaged ones: they are
 * discarded (uncounted: libavformat does not say how many), and the gate drops what
 * follows up to a keyframe. lost_before: losses reported before probing, which the gate
 * already matches to the first access unit. */
static void after_probe(struct rtsp_stream *s, AVFormatContext *fmt, uint64_t lost_before)
{
	if (s->lost_unreported == lost_before)
		return;
	avformat_flush(fmt);
	rtsp_gate_lost(&s->gate);
}

/* The packet first_packet() read, then libavformat's. */
static int read_packet(struct rtsp_stream *s, AVFormatContext *fmt, AVPacket *pkt)
{
	if (!s->first)
		return av_read_frame(fmt, pkt);
	av_packet_move_ref(pkt, s->first);
	av_packet_free(&s->first);
	return 0;
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
static void audio_packet(struct rtsp_stream *s, const AVPacket *pkt, const AVStream *st, const struct ing_rtsp_ts *c,
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
static void audio_or_hold(struct rtsp_stream *s, AVPacket *pkt, const AVStream *st, const struct ing_rtsp_ts *c,
			  const struct kp_audio_format *fmt, struct audio_held *h)
{
	if (c->started) {
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
	uint64_t lost_before = s->lost_unreported;
	int err = avformat_find_stream_info(fmt, NULL);
	if (err < 0) {
		describe_error(s, "probe", err, reason, cap, auth);
		return;
	}
	after_probe(s, fmt, lost_before);
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
	AVRational fr = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
	struct ing_rtsp_ts clock;
	ing_rtsp_ts_init(&clock, fr.num > 0 && fr.den > 0 ? av_rescale(90000, fr.den, fr.num) : 0);
	struct held_aus held = {.n = 0};
	struct audio_held aheld = {.n = 0};
	for (;;) {
		set_deadline(s, RTSP_READ_TIMEOUT);
		err = read_packet(s, fmt, pkt);
		if (err < 0) {
			describe_error(s, "read", err, reason, cap, auth);
			break;
		}
		add_bytes(s, (uint64_t)pkt->size);
		if (aidx >= 0 && pkt->stream_index == aidx)
			audio_or_hold(s, pkt, fmt->streams[aidx], &clock, &afmt, &aheld);
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
		if (!admit(s, key)) {
			av_packet_unref(pkt);
			continue;
		}
		size_t len;
		if (ing_rtsp_au_build(codec, pkt->data, (size_t)pkt->size, lsz, key, params, params_len, &buf, &buf_cap,
				      &len, &why) < 0) {
			snprintf(reason, cap, "bad access unit: %s", why);
			break;
		}
		struct kp_access_unit au = {
		    .codec = codec,
		    .keyframe = key,
		    .wall_us = kp_wall_us(),
		    .width = (uint32_t)(st->codecpar->width > 0 ? st->codecpar->width : 0),
		    .height = (uint32_t)(st->codecpar->height > 0 ? st->codecpar->height : 0),
		    .data = buf,
		    .len = len,
		};
		struct ing_rtsp_times t[ING_RTSP_TS_HOLD + 1];
		unsigned n = ing_rtsp_ts_push(&clock, ts90k(pkt->pts, st), ts90k(pkt->dts, st), t);
		av_packet_unref(pkt);
		if (n == 0 && hold(&held, &au) < 0) {
			snprintf(reason, cap, "out of memory");
			break;
		}
		for (unsigned i = 0; i < n; i++) {
			struct kp_access_unit *a = i < held.n ? &held.au[i] : &au;
			a->pts_90k = t[i].pts;
			a->dts_90k = t[i].dts;
			deliver(s, a);
		}
		if (n)
			held_free(&held);
		note_repaired(s, clock.repaired);
	}
	held_free(&held);
	for (unsigned i = 0; i < aheld.n; i++)
		av_packet_free(&aheld.pkt[i]);
	free(buf);
	av_packet_free(&pkt);
}

enum session_end { SESSION_ENDED, SESSION_NO_UDP };

/* libavformat's options for a session over UDP or TCP (libavformat/rtsp.c, rtsp_options). */
static int session_options(const struct ing_driver *drv, bool udp, AVDictionary **ret)
{
	int r = av_dict_set(ret, "rtsp_transport", udp ? "udp" : "tcp", 0);
	if (r >= 0)
		r = av_dict_set(ret, "timeout", RTSP_SOCKET_TIMEOUT, 0);
	if (r >= 0 && udp)
		r = av_dict_set_int(ret, "min_port", drv->rtp_port_min, 0);
	if (r >= 0 && udp)
		r = av_dict_set_int(ret, "max_port", drv->rtp_port_max, 0);
	if (r >= 0 && udp)
		r = av_dict_set(ret, "reorder_queue_size", RTSP_REORDER_QUEUE, 0);
	if (r >= 0 && udp)
		r = av_dict_set(ret, "max_delay", RTSP_REORDER_WAIT, 0);
	if (r >= 0 && udp)
		r = av_dict_set(ret, "buffer_size", RTSP_UDP_RCVBUF, 0);
	return r;
}

/* Waits up to wait_us for the first packet, kept in s->first for read_loop. Returns 0,
 * 1 when none came in time (and not stopped), or -1 with reason set. */
static int first_packet(struct rtsp_stream *s, AVFormatContext *fmt, int64_t wait_us, char *reason, size_t cap,
			bool *auth)
{
	s->first = av_packet_alloc();
	if (!s->first) {
		snprintf(reason, cap, "out of memory");
		return -1;
	}
	set_deadline(s, wait_us);
	int64_t start = av_gettime_relative();
	int err = av_read_frame(fmt, s->first);
	if (err >= 0)
		return 0;
	av_packet_free(&s->first);
	/* libavformat's socket timeout may end the wait first. */
	bool silent = !atomic_load(&s->drv->stop) && (err == AVERROR(ETIMEDOUT) || err == AVERROR_EXIT);
	if (silent)
		snprintf(reason, cap, "no media within %lld s of PLAY",
			 (long long)((av_gettime_relative() - start + 500000) / 1000000));
	else
		describe_error(s, "read", err, reason, cap, auth);
	return silent ? 1 : -1;
}

/* One RTSP session over UDP or TCP: connect, SETUP, PLAY, read until the end. Returns
 * SESSION_NO_UDP when UDP could not carry the media (the camera answered 461
 * Unsupported Transport, or nothing arrived within wait_us), else SESSION_ENDED;
 * reason says why either way. */
static enum session_end run_session(struct rtsp_stream *s, bool udp, int64_t wait_us, char *reason, size_t cap,
				    bool *auth)
{
	AVFormatContext *fmt = avformat_alloc_context();
	AVDictionary *opts = NULL;
	if (!fmt || session_options(s->drv, udp, &opts) < 0) {
		snprintf(reason, cap, "out of memory");
		av_dict_free(&opts);
		avformat_free_context(fmt);
		return SESSION_ENDED;
	}
	fmt->interrupt_callback = (AVIOInterruptCB){.callback = interrupt_cb, .opaque = s};
	fmt->opaque = s;
	set_deadline(s, RTSP_OPEN_TIMEOUT);
	int err = avformat_open_input(&fmt, s->url, NULL, &opts); /* frees fmt on failure */
	const AVDictionaryEntry *unused = av_dict_get(opts, "", NULL, AV_DICT_IGNORE_SUFFIX);
	if (unused)
		kp_warn("camera %s: libavformat does not know the RTSP option %s", s->drv->name, unused->key);
	av_dict_free(&opts);
	if (err == AVERROR(EPROTONOSUPPORT)) {
		/* libavformat/rtsp.c gives this for 461 when no other transport is allowed. */
		snprintf(reason, cap, "connect: the camera refused RTP over %s (461 Unsupported Transport)%s",
			 udp ? "UDP" : "TCP", udp ? "" : "; transport = udp or auto may work");
		return udp ? SESSION_NO_UDP : SESSION_ENDED;
	}
	if (err < 0) {
		describe_error(s, "connect", err, reason, cap, auth);
		return SESSION_ENDED;
	}
	/* libavformat uses only the lower transport asked for, or fails (rtsps:// would force
	 * TCP: the configuration allows only tcp for it). */
	add_report(s, udp ? "udp" : "tcp", 0, 0);
	enum session_end r = SESSION_ENDED;
	int first = first_packet(s, fmt, wait_us, reason, cap, auth);
	if (first == 0)
		read_loop(s, fmt, reason, cap, auth);
	else if (first == 1 && udp)
		r = SESSION_NO_UDP;
	av_packet_free(&s->first);
	end_of_media(s);
	set_deadline(s, 1000000); /* TEARDOWN gets a second at most */
	avformat_close_input(&fmt);
	return r;
}

static void *stream_thread(void *arg)
{
	struct rtsp_stream *s = arg;
	struct ing_driver *drv = s->drv;
	char reason[sizeof s->reason] = "";
	bool auth = false;
	bool udp = drv->transport != KP_RTSP_TCP;
	enum session_end r = run_session(s, udp, udp ? RTSP_UDP_WAIT : RTSP_OPEN_TIMEOUT, reason, sizeof reason, &auth);
	if (r == SESSION_NO_UDP && drv->transport == KP_RTSP_AUTO && !atomic_load(&drv->stop)) {
		kp_warn("camera %s: %s stream: over UDP: %s; trying RTP over TCP", drv->name,
			s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub", reason);
		run_session(s, false, RTSP_OPEN_TIMEOUT, reason, sizeof reason, &auth);
	}
	rtsp_gate_free(&s->gate);
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
		uint64_t bytes = s->bytes, dropped = s->dropped, repaired = s->repaired, adropped = s->adropped;
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
		if (repaired != s->repaired_logged && (!s->repaired_logged || repaired - s->repaired_logged >= 1000)) {
			kp_warn("camera %s: %s stream: %llu timestamps repaired (DTS not increasing or PTS "
				"before DTS)",
				drv->name, s->index == KP_STREAM_INDEX_MAIN ? "main" : "sub",
				(unsigned long long)(repaired - s->repaired_logged));
			s->repaired_logged = repaired;
		}
		if (adropped != s->adropped_logged) {
			kp_warn("camera %s: loop behind, %llu audio frames dropped", drv->name,
				(unsigned long long)(adropped - s->adropped_logged));
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

static void quiet_libav(void)
{
	av_log_set_level(AV_LOG_ERROR);
	av_log_set_callback(libav_log);
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
