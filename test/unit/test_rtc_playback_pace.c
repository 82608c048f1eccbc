/* Stored-playback pacing on a real recording (recorderd's writer, fixture sub.h264, 3
 * loops = 12 s, a keyframe every second), driven by a test clock: 1x hands out every
 * frame 40 ms apart, 2x 20 ms apart, 4x and 8x only the keyframes (250 ms, 125 ms); a
 * rate change keeps the position continuous; a stall or a pause does not cause a burst;
 * a gap in the recording is skipped; the keyframes-only stream decodes frame by frame
 * in libavcodec; and a B-frame's composition offset is added to the time it carries.
 * The audio track's samples (track 2) are due on the video's clock at 1x, 20 ms apart,
 * none at 2x, none before the clock is anchored, none before the anchor (a seek) and
 * none late by more than RTC_PACE_MAX_LATE_US (no burst after a stall). */
#include <libavcodec/avcodec.h>

#include "playback_pace.h"
#include "test.h"
#include "test_rtc_playback_fixture.h"

static struct recorded rec;
static struct fmp4_init track;
static struct rtc_pb_frag frags[REC_MAX_FRAGS];

static int load(void)
{
	if (recorded_make(&rec, "sub.h264", 3, 0) < 0)
		return -1;
	uint8_t *init = recorded_read(&rec, 0, 0, rec.files[0].init_len);
	int e = fmp4_read_init(init, rec.files[0].init_len, &track);
	free(init);
	for (unsigned i = 0; e == 0 && i < rec.nfrags; i++) {
		struct rtc_pb_frag *f = &frags[i];
		f->track = track;
		f->len = rec.frags[i].length;
		f->buf = recorded_read(&rec, 0, rec.frags[i].offset, f->len);
		f->start_ms = rec.frags[i].start_ms;
		e = fmp4_read_frag(&f->track, f->buf, f->len, &f->frag);
	}
	return e;
}

struct emitted {
	int64_t media_us, pts_us, clock_us;
	bool keyframe;
	const struct rtc_pb_frag *frag;
	const struct fmp4_sample_info *sample;
};

static struct emitted out[2048];

/* Plays fragments [from, to) at rate from clock *now; returns frames handed out.
 * switch_at (frames) changes the rate to rate2 there; stall_at adds stall_us then. */
static unsigned play(unsigned from, unsigned to, unsigned rate, int64_t *now, unsigned switch_at, unsigned rate2,
		     unsigned stall_at, int64_t stall_us)
{
	struct rtc_pace p;
	rtc_pace_init(&p);
	rtc_pace_set_rate(&p, rate, *now);
	unsigned n = 0;
	for (unsigned i = from; i < to; i++) {
		frags[i].next = 0;
		for (;;) {
			struct rtc_pb_out o;
			int64_t wait = -1;
			int r = rtc_pb_step(&frags[i], &p, *now, &o, &wait);
			if (r < 0)
				break;
			if (r == 0) {
				CHECK(wait > 0 && wait <= RTC_PACE_MAX_GAP_US);
				*now += wait;
				continue;
			}
			out[n++] =
			    (struct emitted){o.media_us, o.pts_us, *now, o.sample->keyframe, &frags[i], o.sample};
			if (n == switch_at)
				rtc_pace_set_rate(&p, rate2, *now);
			if (n == stall_at)
				*now += stall_us;
		}
	}
	return n;
}

static void check_cadence(unsigned n, unsigned from, int64_t step_us)
{
	for (unsigned i = from + 1; i < n; i++) {
		CHECK_EQ(out[i].pts_us - out[i - 1].pts_us, step_us);
		CHECK_EQ(out[i].clock_us, out[i].pts_us);
	}
}

static void test_rate_1x_2x(void)
{
	int64_t now = 5000000;
	unsigned n = play(0, rec.nfrags, 1, &now, 0, 0, 0, 0);
	CHECK_EQ(n, rec.nframes);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(out[i].media_us, rec.wall0 * 1000 + 40000ll * i);
	check_cadence(n, 0, 40000);
	CHECK_EQ(out[n - 1].clock_us - out[0].clock_us, 40000ll * (n - 1));
	n = play(0, rec.nfrags, 2, &now, 0, 0, 0, 0);
	CHECK_EQ(n, rec.nframes);
	check_cadence(n, 0, 20000);
}

static void test_keyframes_only(void)
{
	int64_t now = 1;
	unsigned n = play(0, rec.nfrags, 4, &now, 0, 0, 0, 0);
	CHECK_EQ(n, rec.nfrags);
	for (unsigned i = 0; i < n; i++) {
		CHECK(out[i].keyframe);
		CHECK_EQ(out[i].media_us, rec.frags[i].start_ms * 1000);
	}
	check_cadence(n, 0, 250000);
	n = play(0, rec.nfrags, 8, &now, 0, 0, 0, 0);
	CHECK_EQ(n, rec.nfrags);
	check_cadence(n, 0, 125000);
	/* Each keyframe, with the parameter sets put before it, decodes on its own. */
	const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_H264);
	AVCodecContext *dec = avcodec_alloc_context3(c);
	CHECK_EQ(avcodec_open2(dec, c, NULL), 0);
	AVPacket *pkt = av_packet_alloc();
	AVFrame *frame = av_frame_alloc();
	unsigned decoded = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct fmp4_sample_info *s = out[i].sample;
		size_t cap = fmp4_annexb_cap(&track, s->size), len;
		CHECK_EQ(av_new_packet(pkt, (int)cap), 0);
		CHECK_EQ(fmp4_annexb(&track, out[i].frag->buf + s->offset, s->size, true, pkt->data, cap, &len), 0);
		pkt->size = (int)len;
		CHECK_EQ(avcodec_send_packet(dec, pkt), 0);
		av_packet_unref(pkt);
		CHECK_EQ(avcodec_send_packet(dec, NULL), 0);
		while (avcodec_receive_frame(dec, frame) == 0) {
#ifdef AV_FRAME_FLAG_KEY /* libavutil 58.7 (FFmpeg 6.1) deprecated key_frame for this flag */
			CHECK_EQ(!!(frame->flags & AV_FRAME_FLAG_KEY), 1);
#else
			CHECK_EQ(frame->key_frame, 1);
#endif
			decoded++;
		}
		avcodec_flush_buffers(dec);
	}
	CHECK_EQ(decoded, n);
	av_frame_free(&frame);
	av_packet_free(&pkt);
	avcodec_free_context(&dec);
}

static void test_rate_change_is_continuous(void)
{
	int64_t now = 1000;
	unsigned n = play(0, 3, 1, &now, 10, 2, 0, 0);
	CHECK_EQ(n, 75);
	check_cadence(10, 0, 40000);
	/* From the switch on the frames come twice as fast, the first of them 20 ms after
	 * the last one at 1x. */
	CHECK_EQ(out[10].pts_us - out[9].pts_us, 20000);
	check_cadence(n, 10, 20000);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(out[i].media_us, rec.wall0 * 1000 + 40000ll * i);
}

static void test_stall_no_burst(void)
{
	int64_t now = 1000;
	/* The loop thread stalls 2 s after frame 20: frame 21 comes at once, the next ones
	 * 40 ms apart again (re-anchored), not 50 frames at once. */
	unsigned n = play(0, 2, 1, &now, 0, 0, 20, 2000000);
	CHECK_EQ(n, 50);
	CHECK_EQ(out[20].clock_us - out[19].clock_us, 2000000);
	check_cadence(20, 0, 40000);
	check_cadence(n, 20, 40000);
}

static void test_gap_skipped(void)
{
	/* An hour without recording between fragments 1 and 2: played without waiting. */
	for (unsigned i = 2; i < 4; i++)
		frags[i].start_ms += 3600000;
	int64_t now = 0;
	unsigned n = play(0, 4, 1, &now, 0, 0, 0, 0);
	for (unsigned i = 2; i < 4; i++)
		frags[i].start_ms -= 3600000;
	CHECK_EQ(n, 100);
	check_cadence(n, 0, 40000);
	CHECK_EQ(out[50].media_us - out[49].media_us, 3600000000ll + 40000);
}

/* B-frames: frames still go out in decode order at their decode time; the time they
 * carry (the RTP timestamp) is that plus their composition offset, at the play rate. */
static void test_composition_offsets(void)
{
	struct fmp4_frag *f = &frags[0].frag;
	for (unsigned i = 0; i < f->nsamples; i++)
		f->samples[i].cts = i == 0 ? 7200 : i % 3 == 1 ? 14400 : 3600;
	for (unsigned rate = 1; rate <= 2; rate++) {
		int64_t now = 1000000;
		unsigned n = play(0, 1, rate, &now, 0, 0, 0, 0);
		CHECK_EQ(n, f->nsamples);
		for (unsigned i = 0; i < n; i++) {
			CHECK_EQ(out[i].pts_us - out[i].clock_us, (int64_t)out[i].sample->cts * 1000000 / 90000 / rate);
			if (i)
				CHECK_EQ(out[i].clock_us - out[i - 1].clock_us, 40000 / (int64_t)rate);
		}
	}
	for (unsigned i = 0; i < f->nsamples; i++)
		f->samples[i].cts = 0;
}

/* A fragment with 50 Opus frames of 20 ms from 10 s (its video from 10 s too). */
static void audio_frag(struct rtc_pb_frag *f)
{
	static struct fmp4_sample_info audio[FMP4_AUDIO_MAX_SAMPLES];
	memset(f, 0, sizeof *f);
	f->frag.audio = audio;
	f->track.timescale = 90000;
	f->track.audio_timescale = 48000;
	f->frag.base_time = 10 * 90000;
	f->start_ms = 1000000;
	f->frag.naudio = 50;
	for (unsigned i = 0; i < 50; i++)
		f->frag.audio[i] =
		    (struct fmp4_sample_info){.offset = i, .size = 1, .duration = 960, .dts = 480000 + i * 960};
}

static void test_audio(void)
{
	static struct rtc_pb_frag f;
	audio_frag(&f);
	struct rtc_pace p;
	rtc_pace_init(&p);
	struct rtc_pb_out o;
	int64_t wait = 0;
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 0, &o, &wait), -1); /* not anchored: nothing, nothing skipped */
	CHECK_EQ(f.anext, 0u);
	p = (struct rtc_pace){.rate = 1, .anchored = true, .media_ref = 1000000000, .clock_ref = 0};
	CHECK_EQ(rtc_pb_audio_media_us(&f, 1), 1000000000 + 20000);
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 0, &o, &wait), 1);
	CHECK(o.sample == &f.frag.audio[0] && o.pts_us == 0 && o.media_us == 1000000000);
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 0, &o, &wait), 0);
	CHECK_EQ(wait, 20000);
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 20000, &o, &wait), 1);
	CHECK(o.sample == &f.frag.audio[1] && o.pts_us == 20000);
	/* A stall of 600 ms: the frames due more than 500 ms ago are skipped, not burst. */
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 620000, &o, &wait), 1);
	CHECK(o.sample >= &f.frag.audio[6] && o.pts_us >= 620000 - RTC_PACE_MAX_LATE_US);
	/* 2x: none. */
	p.rate = 2;
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 640000, &o, &wait), -1);
	CHECK_EQ(f.anext, 50u);
	/* A seek anchored at 10.5 s: the frames before it are skipped. */
	audio_frag(&f);
	p = (struct rtc_pace){.rate = 1, .anchored = true, .media_ref = 1000500000, .clock_ref = 0};
	CHECK_EQ(rtc_pb_audio_step(&f, &p, 0, &o, &wait), 1);
	CHECK(o.sample == &f.frag.audio[25] && o.media_us == 1000500000);
}

int main(void)
{
	if (load() < 0) {
		fprintf(stderr, "cannot record the fixture\n");
		return 1;
	}
	RUN(test_rate_1x_2x);
	RUN(test_keyframes_only);
	RUN(test_rate_change_is_continuous);
	RUN(test_stall_no_burst);
	RUN(test_gap_skipped);
	RUN(test_composition_offsets);
	RUN(test_audio);
	for (unsigned i = 0; i < rec.nfrags; i++)
		free(frags[i].buf);
	recorded_free(&rec);
	return TEST_EXIT();
}
