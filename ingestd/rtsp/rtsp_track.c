/* RTP tracks of an RTSP session to access units and audio units (see rtsp_track.h). */
#include "rtsp_track.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kp_checked.h"
#include "kp_time.h"

static int64_t mono_to_90k(int64_t us)
{
	return us / 100 * 9 + us % 100 * 9 / 100;
}

int rtsp_track_video_init(struct rtsp_track *t, const struct rtsp_track_sink *sink, enum kp_codec codec,
			  const uint8_t *params, size_t params_len, unsigned fps, uint32_t rate)
{
	memset(t, 0, sizeof *t);
	if (rate != 90000 || params_len > sizeof t->params)
		return -EINVAL;
	int r = rtp_depack_init(&t->depack, codec, RTP_MAX_AU);
	if (r < 0)
		return r;
	t->video = true;
	t->payload_type = -1;
	t->sink = sink;
	t->codec = codec;
	t->clock.rate = rate;
	if (params_len)
		memcpy(t->params, params, params_len);
	t->params_len = params_len;
	h26x_poc_init(&t->poc, codec);
	if (params_len) {
		int32_t poc;
		bool reset;
		h26x_poc_au(&t->poc, params, params_len, &poc, &reset); /* takes the SPS and PPS: -ENOENT, no slice */
	}
	ing_rtsp_ts_init(&t->ts, fps ? 90000 / fps : 0);
	for (unsigned i = 0; i <= RTSP_TRACK_MAX_REORDER; i++)
		t->pts_buf[i] = ING_RTSP_TS_NONE;
	return 0;
}

int rtsp_track_audio_init(struct rtsp_track *t, const struct rtsp_track_sink *sink, struct rtsp_track *video,
			  const struct kp_audio_format *fmt, unsigned size_len, unsigned index_len, unsigned delta_len)
{
	memset(t, 0, sizeof *t);
	if (!fmt->rate || fmt->rate > 1000000)
		return -EINVAL;
	if (fmt->codec == KP_AUDIO_AAC) {
		int r = rtp_aac_init(&t->aac, size_len, index_len, delta_len);
		if (r < 0)
			return r;
	} else if (fmt->codec != KP_AUDIO_OPUS && fmt->codec != KP_AUDIO_PCMU && fmt->codec != KP_AUDIO_PCMA)
		return -EINVAL;
	t->payload_type = -1;
	t->sink = sink;
	t->vt = video;
	t->afmt = *fmt;
	t->clock.rate = fmt->rate;
	return 0;
}

void rtsp_track_free(struct rtsp_track *t)
{
	if (t->video)
		rtp_depack_free(&t->depack);
	for (unsigned i = 0; i < t->nheld; i++)
		free(t->held[i].copy);
	for (unsigned i = 0; i < t->naheld; i++)
		free(t->aheld[i].copy);
	for (unsigned i = 0; i < t->nwait; i++)
		free(t->wait[i].copy);
	t->nwait = 0;
	free(t->buf);
	t->nheld = t->naheld = 0;
	t->buf = NULL;
}

/* The RTP time ts unwrapped (RFC 3550 timestamps wrap at 2^32; a step is taken as the
 * shorter way round), relative to the track's first packet. */
static int unwrap(struct rtsp_rtp_clock *c, uint32_t ts, int64_t now_us, int64_t *ret)
{
	if (!c->have) {
		c->have = true;
		c->last = ts;
		c->ext = 0;
		c->last_mono_us = now_us;
		*ret = 0;
		return 0;
	}
	int64_t step = (int32_t)(ts - c->last);
	if (step > (int64_t)RTSP_TRACK_MAX_JUMP_S * c->rate)
		c->rebase = true; /* a forward jump past 10 s is a discontinuity (retina MAX_FORWARD_TIME_JUMP_SECS) */
	if (c->rebase) {          /* a restarted source: its times go on from ours by the wall clock */
		int64_t us = now_us - c->last_mono_us;
		step = us <= 0                        ? 1
		       : us > 3600 * INT64_C(1000000) ? 3600 * (int64_t)c->rate
						      : us * (int64_t)c->rate / 1000000 + 1;
		c->rebase = false;
	}
	c->last_mono_us = now_us;
	int64_t ext;
	if (kp_add_i64(c->ext, step, &ext) < 0 || ext > (INT64_C(1) << 60) || ext < -(INT64_C(1) << 60))
		return -ERANGE;
	c->ext = ext;
	c->last = ts;
	*ret = ext;
	return 0;
}

/* A report may come before the track's first packet (cameras send one as the session
 * starts, RFC 3550 6.4.1): its RTP time is unwrapped when it is used, against the last
 * packet's (reports come every few seconds, far within 2^31 ticks). */
void rtsp_track_sr(struct rtsp_track *t, uint64_t ntp, uint32_t rtp, int64_t now_us)
{
	t->clock.have_sr = true;
	t->clock.sr_ntp = ntp;
	t->clock.sr_rtp = rtp;
	t->clock.sr_mono_us = now_us;
}

static int64_t sr_ext(const struct rtsp_rtp_clock *c)
{
	return c->ext + (int32_t)(c->sr_rtp - c->last);
}

/* ext in the track's rate to 90 kHz; false when out of range. */
static bool to_90k(int64_t ext, uint32_t rate, int64_t *ret)
{
	int64_t v;
	if (rate == 90000) {
		*ret = ext;
		return true;
	}
	if (kp_mul_i64(ext, 90000, &v) < 0)
		return false;
	*ret = v / (int64_t)rate;
	return true;
}

/* An audio time (unwrapped) as a raw video time, when both tracks have a sender report:
 * the video's RTP time at the audio sample's NTP time. */
static bool audio_by_sr(const struct rtsp_track *a, int64_t ext, int64_t *ret)
{
	const struct rtsp_track *v = a->vt;
	if (!a->clock.have_sr || !v->clock.have_sr || !a->clock.have || !v->clock.have)
		return false;
	int64_t diff = (int64_t)(a->clock.sr_ntp - v->clock.sr_ntp); /* 32.32 seconds */
	int64_t sec = diff >> 32, frac = (int64_t)((uint64_t)diff & 0xffffffffu);
	if (sec > 86400 || sec < -86400)
		return false; /* clocks a day apart are not one clock */
	int64_t ntp_90k = sec * 90000 + ((frac * 90000) >> 32), since;
	if (!to_90k(ext - sr_ext(&a->clock), a->clock.rate, &since))
		return false;
	int64_t r;
	if (kp_add_i64(sr_ext(&v->clock), ntp_90k, &r) < 0 || kp_add_i64(r, since, &r) < 0)
		return false;
	*ret = r;
	return true;
}

static void video_wait_flush(struct rtsp_track *v);

/* end_ext: the RTP time where the samples of the packet that carried the unit end. A
 * sender sends a packet once its last sample was captured, so before the reports the
 * packet's end is placed where it arrived on the video's clock: anchoring its start
 * there placed all audio one packet late, and a file opening at the session's first
 * keyframe had its audio start that much after it. */
static void audio_deliver(struct rtsp_track *a, const struct kp_audio_unit *u, int64_t ext, int64_t end_ext,
			  int64_t arrival_us)
{
	struct rtsp_track *v = a->vt;
	int64_t raw, e90, end90;
	if (!to_90k(ext, a->clock.rate, &e90) || !to_90k(end_ext, a->clock.rate, &end90))
		return;
	if (!audio_by_sr(a, ext, &raw)) {
		if (!a->anchored) {
			a->anchor_90k = v->last_raw_pts + mono_to_90k(arrival_us - v->last_raw_mono_us) - end90;
			a->anchored = true;
		}
		raw = a->anchor_90k + e90;
	}
	struct kp_audio_unit out = *u;
	if (kp_sub_i64(raw, v->ts.offset, &out.pts_90k) < 0)
		return;
	a->sink->audio(a->sink->arg, &out);
	video_wait_flush(v); /* the video that waited for the first audio unit goes after it */
}

/* Audio held until the video's clock starts; the oldest is dropped past the bound. */
static void audio_unit(struct rtsp_track *a, const uint8_t *data, size_t len, uint32_t samples, int64_t ext,
		       int64_t end_ext, int64_t now_us)
{
	struct kp_audio_unit u = {
	    .fmt = a->afmt, .samples = samples, .wall_us = kp_wall_us(), .data = data, .len = len};
	if (a->vt->ts.started && a->vt->have_raw_pts) {
		audio_deliver(a, &u, ext, end_ext, now_us);
		return;
	}
	if (a->naheld == RTSP_TRACK_AUDIO_HELD) {
		free(a->aheld[0].copy);
		memmove(a->aheld, a->aheld + 1, (RTSP_TRACK_AUDIO_HELD - 1) * sizeof a->aheld[0]);
		a->naheld--;
	}
	uint8_t *copy = malloc(len);
	if (!copy)
		return;
	memcpy(copy, data, len);
	u.data = copy;
	a->aheld[a->naheld++] =
	    (struct rtsp_held_audio){.au = u, .ext = ext, .end_ext = end_ext, .arrival_us = now_us, .copy = copy};
}

static void audio_flush(struct rtsp_track *a)
{
	for (unsigned i = 0; i < a->naheld; i++) {
		struct rtsp_held_audio *h = &a->aheld[i];
		audio_deliver(a, &h->au, h->ext, h->end_ext, h->arrival_us);
		free(h->copy);
	}
	a->naheld = 0;
}

struct aac_ctx {
	struct rtsp_track *t;
	int64_t ext, now_us;
};

static void on_aac(void *arg, const uint8_t *au, size_t len, unsigned k, unsigned n)
{
	struct aac_ctx *c = arg;
	uint32_t fs = c->t->afmt.frame_samples ? c->t->afmt.frame_samples : 1024;
	audio_unit(c->t, au, len, 0, c->ext + (int64_t)k * fs, c->ext + (int64_t)n * fs, c->now_us);
}

/* In-band parameter sets of an access unit replace the SDP's (a camera may change its
 * SPS); kept only when the unit has both SPS and PPS and they fit. */
static void take_params(struct rtsp_track *t, const uint8_t *au, size_t len)
{
	uint8_t tmp[ING_RTSP_MAX_PARAMS];
	size_t off = 0, n, w = 0;
	const uint8_t *nal;
	uint64_t seen = 0;
	while (h26x_annexb_next(au, len, &off, &nal, &n)) {
		if (n < h26x_nal_header_size(t->codec) || !h26x_is_param_set(t->codec, h26x_nal_type(t->codec, nal)))
			continue;
		if (n + 4 > sizeof tmp - w)
			return;
		memcpy(tmp + w, "\0\0\0\1", 4);
		memcpy(tmp + w + 4, nal, n);
		w += n + 4;
		seen |= 1ull << h26x_nal_type(t->codec, nal);
	}
	uint64_t need = t->codec == KP_CODEC_H264 ? (1ull << 7 | 1ull << 8) : (1ull << 33 | 1ull << 34);
	if ((seen & need) != need)
		return;
	memcpy(t->params, tmp, w);
	t->params_len = w;
}

/* The video access units that waited for the audio, in order; then no more waiting. */
static void video_wait_flush(struct rtsp_track *v)
{
	v->audio_waited = true;
	for (unsigned i = 0; i < v->nwait; i++) {
		v->sink->video(v->sink->arg, &v->wait[i].au);
		free(v->wait[i].copy);
	}
	v->nwait = 0;
}

/* At the start of a session with audio, video waits (RTSP_TRACK_AUDIO_WAIT_US or
 * RTSP_TRACK_WAIT_AUS at most) for the first audio unit, so that the recording that opens
 * at the first keyframe knows it has audio. */
static void deliver_video(struct rtsp_track *t, struct kp_access_unit *au, int64_t now_us)
{
	if (!t->has_audio || t->audio_waited) {
		t->sink->video(t->sink->arg, au);
		return;
	}
	if (t->nwait == 0)
		t->wait_since_us = now_us;
	uint8_t *copy = t->nwait < RTSP_TRACK_WAIT_AUS ? malloc(au->len) : NULL;
	if (!copy || now_us - t->wait_since_us > RTSP_TRACK_AUDIO_WAIT_US) {
		free(copy);
		video_wait_flush(t);
		t->sink->video(t->sink->arg, au);
		return;
	}
	memcpy(copy, au->data, au->len);
	t->wait[t->nwait].au = *au;
	t->wait[t->nwait].au.data = copy;
	t->wait[t->nwait++].copy = copy;
}

/* The DTS of the access unit with this PTS: the smallest of the reorder + 1 largest
 * PTS seen (libavformat's pts_buffer), or none while fewer have been seen. */
static int64_t decode_time(struct rtsp_track *t, int64_t pts)
{
	uint32_t r = h26x_poc_reorder(&t->poc);
	unsigned depth = r > RTSP_TRACK_MAX_REORDER ? RTSP_TRACK_MAX_REORDER : r;
	if (depth != t->reorder) {
		t->reorder = depth;
		for (unsigned i = 0; i <= RTSP_TRACK_MAX_REORDER; i++)
			t->pts_buf[i] = ING_RTSP_TS_NONE;
	}
	t->pts_buf[0] = pts;
	for (unsigned i = 0; i < depth && t->pts_buf[i] > t->pts_buf[i + 1]; i++) {
		int64_t x = t->pts_buf[i];
		t->pts_buf[i] = t->pts_buf[i + 1];
		t->pts_buf[i + 1] = x;
	}
	return t->pts_buf[0];
}

static void video_au(struct rtsp_track *t, const struct rtp_au *in, int64_t ext, int64_t now_us)
{
	if (t->drop_current) {
		t->drop_current = false;
		t->skip_to_keyframe = true;
		t->loss_dropped++;
		return;
	}
	if (t->skip_to_keyframe && !in->keyframe) {
		t->loss_dropped++;
		return;
	}
	t->skip_to_keyframe = false;
	take_params(t, in->data, in->len);
	int32_t poc;
	bool reset;
	h26x_poc_au(&t->poc, in->data, in->len, &poc, &reset); /* errors: the reorder depth stays */
	size_t len;
	const char *why;
	if (ing_rtsp_au_build(t->codec, in->data, in->len, 0, in->keyframe, t->params, t->params_len, &t->buf,
			      &t->buf_cap, &len, &why) < 0) {
		t->last_error = why;
		t->malformed++;
		t->loss_dropped++;
		t->skip_to_keyframe = true;
		return;
	}
	struct kp_access_unit au = {
	    .codec = t->codec,
	    .keyframe = in->keyframe,
	    .wall_us = kp_wall_us(),
	    .width = t->poc.width,
	    .height = t->poc.height,
	    .data = t->buf,
	    .len = len,
	};
	if (!t->have_raw_pts || ext > t->last_raw_pts) {
		t->last_raw_pts = ext;
		t->last_raw_mono_us = now_us;
		t->have_raw_pts = true;
	}
	struct ing_rtsp_times times[ING_RTSP_TS_HOLD + 1];
	unsigned n = ing_rtsp_ts_push(&t->ts, ext, decode_time(t, ext), times);
	if (n == 0) {
		uint8_t *copy = malloc(len);
		if (!copy) {
			t->loss_dropped++;
			t->skip_to_keyframe = true;
			return;
		}
		memcpy(copy, t->buf, len);
		t->held[t->nheld].au = au;
		t->held[t->nheld].au.data = copy;
		t->held[t->nheld++].copy = copy;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct kp_access_unit *a = i < t->nheld ? &t->held[i].au : &au;
		a->pts_90k = times[i].pts;
		a->dts_90k = times[i].dts;
		deliver_video(t, a, now_us);
	}
	for (unsigned i = 0; i < t->nheld; i++)
		free(t->held[i].copy);
	t->nheld = 0;
}

/* The source restarted at h: the track starts again from it, its output clock going on. */
static void resync(struct rtsp_track *t, const struct rtp_header *h)
{
	t->resyncs++;
	t->have_cand = false;
	t->first_seq = t->base_seq = h->seq;
	t->next_seq = (uint16_t)(h->seq + 1);
	t->ssrc = h->ssrc;
	t->cycles = t->expected_prior = t->received_prior = 0;
	t->packets = 0;
	t->have_transit = false;
	t->clock.rebase = true;
	t->clock.have_sr = false; /* the old source's report says nothing of the new one */
	t->skip_to_keyframe = true;
	t->drop_current = false;
	if (t->video) {
		if (t->depack.in_au && !t->depack.broken)
			t->loss_dropped++;
		t->depack.in_au = false;
		t->depack.have_seq = false;
		t->depack.have_last = false;
	} else
		rtp_aac_reset(&t->aac);
}

/* A packet of another SSRC, or after a jump: true when it is the second in sequence
 * (the source restarted: resynchronised), else false (dropped). */
static bool candidate(struct rtsp_track *t, const struct rtp_header *h)
{
	if (t->have_cand && h->ssrc == t->cand_ssrc && h->seq == t->cand_next) {
		resync(t, h);
		return true;
	}
	t->have_cand = true;
	t->cand_ssrc = h->ssrc;
	t->cand_next = (uint16_t)(h->seq + 1);
	return false;
}

/* Sequence bookkeeping: false when the packet is to be ignored (late or duplicated,
 * another source's, or after a jump not yet confirmed). */
static bool sequence(struct rtsp_track *t, const struct rtp_header *h)
{
	if (!t->have_seq) {
		t->have_seq = true;
		t->first_seq = t->base_seq = h->seq;
		t->next_seq = (uint16_t)(h->seq + 1);
		t->ssrc = h->ssrc;
		return true;
	}
	if (h->ssrc != t->ssrc) {
		bool again = candidate(t, h);
		if (!again)
			t->foreign_ssrc++;
		return again;
	}
	uint16_t udelta = (uint16_t)(h->seq - t->next_seq + 1); /* from the highest seen */
	if (udelta > RTSP_TRACK_MAX_DROPOUT && udelta < 65536 - RTSP_TRACK_MAX_MISORDER) {
		return candidate(t, h);
	}
	t->have_cand = false;
	int diff = (int16_t)(h->seq - t->next_seq);
	if (diff == -1)
		return false; /* the last packet again: a duplicate, harmless */
	if (diff < 0) {
		/* After its successor was used: lost for us. One from before the first packet
		 * received was never counted as missing (that comparison holds only while the
		 * sequence is within 2^15 of its start); one we skipped already was. */
		if ((int16_t)(h->seq - t->first_seq) < 0 && t->packets < 32768) {
			t->lost_packets++;
			t->skip_to_keyframe = true;
		}
		if (t->video && t->depack.in_au && t->depack.ts == h->timestamp)
			t->drop_current = true;
		return false;
	}
	if (diff > 0) {
		t->lost_packets += (uint64_t)diff;
		t->skip_to_keyframe = true;
		if (!t->video)
			rtp_aac_reset(&t->aac);
	}
	if (h->seq < (uint16_t)(t->next_seq - 1)) /* forward past 65535 */
		t->cycles += 65536;
	t->next_seq = (uint16_t)(h->seq + 1);
	return true;
}

static void jitter(struct rtsp_track *t, uint32_t ts, int64_t now_us)
{
	int64_t arrival = now_us / 1000 * (int64_t)t->clock.rate / 1000;
	int64_t transit = arrival - (int64_t)ts;
	if (t->have_transit) {
		int64_t d = transit - t->last_transit;
		d = d < 0 ? -d : d;
		if (d < (INT64_C(1) << 40))
			t->jitter_q4 += d - ((t->jitter_q4 + 8) >> 4);
	}
	t->last_transit = transit;
	t->have_transit = true;
}

static uint64_t depack_drops(const struct rtp_depack *d)
{
	return d->stats.dropped_gap + d->stats.dropped_malformed + d->stats.dropped_oversize +
	       d->stats.dropped_no_marker;
}

int rtsp_track_rtp(struct rtsp_track *t, const uint8_t *pkt, size_t len, int64_t now_us, const char **ret_reason)
{
	struct rtp_header h;
	int r = rtp_header_parse(pkt, len, &h, ret_reason);
	if (r < 0) {
		t->malformed++;
		t->last_error = *ret_reason;
		return -EBADMSG;
	}
	if (t->payload_type >= 0 && h.payload_type != t->payload_type) {
		t->other_pt++;
		return 0;
	}
	if (!sequence(t, &h))
		return 0;
	t->packets++;
	t->octets += h.payload_len;
	jitter(t, h.timestamp, now_us);
	int64_t ext;
	if (unwrap(&t->clock, h.timestamp, now_us, &ext) < 0) {
		*ret_reason = "RTP timestamps run beyond 2^60";
		t->malformed++;
		return -EBADMSG;
	}
	if (t->video) {
		struct rtp_au au;
		const char *why = NULL;
		uint64_t before = depack_drops(&t->depack);
		int d = rtp_depack_push(&t->depack, pkt, len, &au, &why);
		uint64_t dropped = depack_drops(&t->depack) - before;
		if (dropped) {
			t->loss_dropped += dropped;
			t->skip_to_keyframe = true;
			t->drop_current = false;
		}
		if (d < 0) {
			t->malformed++;
			t->last_error = why;
		}
		if (d == 1)
			video_au(t, &au, ext, now_us);
		return 0;
	}
	if (h.payload_len == 0)
		return 0;
	if (t->afmt.codec == KP_AUDIO_AAC) {
		struct aac_ctx c = {t, ext, now_us};
		const char *why;
		if (rtp_aac_push(&t->aac, h.payload, h.payload_len, h.marker, h.timestamp, on_aac, &c, &why) < 0) {
			t->malformed++;
			t->last_error = why;
		}
	} else if (t->afmt.codec == KP_AUDIO_OPUS) {
		uint32_t samples = kp_opus_packet_samples(h.payload, h.payload_len);
		if (samples)
			audio_unit(t, h.payload, h.payload_len, samples, ext, ext + samples, now_us);
	} else { /* G.711, mono: a sample a byte */
		audio_unit(t, h.payload, h.payload_len, 0, ext, ext + (int64_t)h.payload_len, now_us);
	}
	return 0;
}

void rtsp_track_audio_ready(struct rtsp_track *a)
{
	if (a->naheld && a->vt->ts.started && a->vt->have_raw_pts)
		audio_flush(a);
}

size_t rtsp_track_end(struct rtsp_track *t)
{
	if (t->video && t->nwait)
		video_wait_flush(t); /* whole access units: recorded without the audio that never came */
	if (!t->video || !t->depack.in_au || t->depack.broken)
		return 0;
	size_t n = t->depack.len;
	t->depack.in_au = false;
	return n ? n : 1;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

bool rtsp_track_report_block(struct rtsp_track *t, int64_t now_us, uint8_t out[24])
{
	if (!t->have_seq)
		return false;
	uint32_t ext_max = t->cycles + (uint16_t)(t->next_seq - 1);
	uint32_t expected = ext_max - t->base_seq + 1;
	int64_t lost = (int64_t)expected - (int64_t)t->packets;
	if (lost > 0x7fffff)
		lost = 0x7fffff;
	if (lost < -0x800000)
		lost = -0x800000;
	uint32_t exp_int = expected - t->expected_prior;
	uint32_t rec_int = (uint32_t)t->packets - t->received_prior;
	t->expected_prior = expected;
	t->received_prior = (uint32_t)t->packets;
	int64_t lost_int = (int64_t)exp_int - (int64_t)rec_int;
	uint8_t fraction = exp_int == 0 || lost_int <= 0 ? 0 : (uint8_t)((lost_int << 8) / exp_int);
	put32(out, t->ssrc);
	put32(out + 4, (uint32_t)fraction << 24 | ((uint32_t)lost & 0xffffff));
	put32(out + 8, ext_max);
	put32(out + 12, (uint32_t)(t->jitter_q4 >> 4));
	uint32_t lsr = 0, dlsr = 0;
	if (t->clock.have_sr) {
		lsr = (uint32_t)(t->clock.sr_ntp >> 16);
		int64_t d = now_us - t->clock.sr_mono_us; /* 1/65536 s */
		dlsr = d < 0 ? 0 : (uint32_t)(d / 1000000 * 65536 + d % 1000000 * 65536 / 1000000);
	}
	put32(out + 16, lsr);
	put32(out + 20, dlsr);
	return true;
}
