/* recorderd's audio queue (recorderd/audio_queue.c): which frames go into a fragment
 * (those before its end, not those before the file) and where they sit on the track: a
 * continuous run of frame durations, the camera's clock followed past half a frame
 * (a gap closed by the previous frame's duration, or at a fragment's start by its
 * tfdt), a frame a second behind dropped, a new format waiting for a new file. */
#include <errno.h>

#include "audio_queue.h"
#include "test.h"

static struct rec_audio_queue q;
static struct fmp4_sample out[FMP4_AUDIO_MAX_SAMPLES];

/* 16 kHz mono AAC: a frame is 1024 samples, 5760 at 90 kHz. */
#define F90 5760

static void push(int64_t pts, uint8_t byte)
{
	static struct kp_audio_format fmt;
	const uint8_t asc[] = {0x14, 0x08};
	CHECK_EQ(kp_aac_config_parse(asc, sizeof asc, &fmt), 0);
	uint8_t data[10];
	memset(data, byte, sizeof data);
	CHECK_EQ(rec_audio_push(&q, &fmt, pts, 1024, data, sizeof data), 0);
}

static void test_fragments(void)
{
	memset(&q, 0, sizeof q);
	CHECK(!rec_audio_changed(&q));
	CHECK(rec_audio_file_start(&q) == NULL); /* no audio yet: a video-only file */
	push(1000, 1);                           /* before the file's keyframe */
	CHECK(rec_audio_changed(&q));            /* audio arrived: a new file is due */
	const struct kp_audio_format *f = rec_audio_file_start(&q);
	CHECK(f && f->rate == 16000);
	int64_t file0 = 2000;
	push(2000 + 90, 2);       /* 90 ticks = 16 samples after the file's start */
	push(2000 + 90 + F90, 3); /* the next frame */
	push(2000 + 90 + 2 * F90, 4);
	struct rec_audio_take t;
	rec_audio_take(&q, 2000 + 90 + 2 * F90, file0, out, &t); /* the fragment ends before the third */
	CHECK_EQ(t.consumed, 3);                                 /* the one before the file went too */
	CHECK_EQ(t.n, 2);
	CHECK_EQ(t.base, 16);
	CHECK_EQ(out[0].duration, 1024);
	CHECK_EQ(t.len, 20);
	CHECK_EQ(q.buf[0], 2); /* the kept frames' bytes first, in order */
	CHECK_EQ(q.buf[10], 3);
	rec_audio_release(&q, &t);
	CHECK_EQ(q.n, 1);
	CHECK_EQ(q.buf[0], 4);

	/* A lost frame: the next fragment starts where the camera says. */
	push(2000 + 90 + 4 * F90, 5);
	rec_audio_take(&q, INT64_MAX, file0, out, &t);
	CHECK_EQ(t.n, 2);
	CHECK_EQ(t.base, 16 + 2 * 1024);
	CHECK_EQ(out[0].duration, 2048); /* the gap closed by the frame before it */
	CHECK_EQ(out[1].duration, 1024);
	rec_audio_release(&q, &t);

	/* Jitter under half a frame keeps the run; a frame 0.6 frame early moves it back. */
	push(2000 + 90 + 5 * F90 + 1000, 6);
	push(2000 + 90 + 6 * F90 - 3456, 7);
	rec_audio_take(&q, INT64_MAX, file0, out, &t);
	CHECK_EQ(t.n, 2);
	CHECK_EQ(t.base, 16 + 5 * 1024);
	CHECK_EQ(out[0].duration, 1024 - 614); /* 3456 ticks = 614 samples */
	rec_audio_release(&q, &t);

	/* More than a second behind the run: dropped. */
	push(2000 + 90 + 40 * F90, 8);
	push(2000 + 90 + 20 * F90, 8);
	uint64_t dropped = q.dropped;
	rec_audio_take(&q, INT64_MAX, file0, out, &t);
	CHECK_EQ(t.n, 1);
	CHECK_EQ(t.base, 16 + 40 * 1024);
	CHECK_EQ(q.dropped, dropped + 1);
	rec_audio_release(&q, &t);
	CHECK_EQ(q.n, 0);

	/* Nothing kept (no fragment written): the frames before the limit go. */
	push(900000, 9);
	push(900000 + F90, 10);
	rec_audio_take(&q, 900000 + 1, INT64_MAX, out, &t);
	CHECK_EQ(t.consumed, 1);
	CHECK_EQ(t.n, 0);
	rec_audio_release(&q, &t);
	CHECK_EQ(q.n, 1);
	rec_audio_file_end(&q);
	CHECK(rec_audio_changed(&q)); /* no file: the next one gets the audio track */
	rec_audio_free(&q);
}

static void test_bounds(void)
{
	memset(&q, 0, sizeof q);
	for (unsigned i = 0; i < FMP4_AUDIO_MAX_SAMPLES + 5; i++)
		push((int64_t)i * F90, (uint8_t)i);
	CHECK_EQ(q.n, FMP4_AUDIO_MAX_SAMPLES); /* the oldest went */
	CHECK_EQ(q.dropped, 5);
	CHECK_EQ(q.q[0].pts, 5 * F90);
	CHECK_EQ(q.buf[0], 5);
	struct kp_audio_format fmt = q.fmt;
	static uint8_t big[REC_AUDIO_MAX_BYTES + 1];
	CHECK_EQ(rec_audio_push(&q, &fmt, 0, 1024, big, sizeof big), -EINVAL);
	CHECK_EQ(rec_audio_push(&q, &fmt, 0, 1024, big, 0), -EINVAL);
	CHECK_EQ(rec_audio_push(&q, &fmt, 0, 0, big, 1), -EINVAL); /* no samples */
	rec_audio_free(&q);
}

int main(void)
{
	RUN(test_fragments);
	RUN(test_bounds);
	return TEST_EXIT();
}
