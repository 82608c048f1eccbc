/* Unit tests for ingestd/rtsp/rtsp_ts.c: the times libavformat gives an RTSP stream with
 * B-frames (first packet without any, then PTS without DTS until its reorder buffer
 * fills: as read from the test camera's bframes.h264.ts over RTSP) become DTS one frame
 * apart from 0 and the source's PTS - DTS; a stream without B-frames keeps its times;
 * what breaks the rules is repaired and counted. */
#include "rtsp_ts.h"
#include "test.h"

#define N ING_RTSP_TS_NONE

static void test_bframes_start(void)
{
	/* x264, 2 B-frames, b-pyramid: decode order I0 P3 B1 B2 P6 B4 B5 ...; libavformat's
	 * times (pts, dts) for the first packets: */
	const int64_t raw[][2] = {{N, N},        {10800, N},     {3600, N},      {7200, 3600},
				  {21600, 7200}, {14400, 10800}, {18000, 14400}, {32400, 18000}};
	/* The source's PTS - DTS of each, as its MPEG-TS fixture says. */
	const int64_t cto[] = {7200, 14400, 3600, 3600, 14400, 3600, 3600, 14400};
	struct ing_rtsp_ts c;
	ing_rtsp_ts_init(&c, 3600);
	struct ing_rtsp_times t[ING_RTSP_TS_HOLD + 1], all[8];
	unsigned got = 0;
	for (unsigned i = 0; i < 8; i++) {
		unsigned n = ing_rtsp_ts_push(&c, raw[i][0], raw[i][1], t);
		CHECK_EQ(n, i < 3 ? 0u : i == 3 ? 4u : 1u);
		for (unsigned k = 0; k < n; k++)
			all[got++] = t[k];
	}
	CHECK_EQ(got, 8u);
	for (unsigned i = 0; i < got; i++) {
		CHECK_EQ(all[i].dts, (int64_t)i * 3600);
		CHECK_EQ(all[i].pts - all[i].dts, cto[i]);
	}
	CHECK_EQ(c.repaired, 0u);
	CHECK_EQ(c.inferred, 3u);
}

/* Without a frame rate (libavformat's can be nonsense: 90000 fps), the held PTS give the
 * frame; with one, the rate is kept. */
static void test_frame_from_held_pts(void)
{
	struct ing_rtsp_ts c;
	ing_rtsp_ts_init(&c, 1);
	CHECK_EQ(c.frame, 3000);
	struct ing_rtsp_times t[ING_RTSP_TS_HOLD + 1];
	CHECK_EQ(ing_rtsp_ts_push(&c, N, N, t), 0u);
	CHECK_EQ(ing_rtsp_ts_push(&c, 10800, N, t), 0u);
	CHECK_EQ(ing_rtsp_ts_push(&c, 3600, N, t), 0u);
	CHECK_EQ(ing_rtsp_ts_push(&c, 7200, 3600, t), 4u);
	CHECK_EQ(c.frame, 3600);
	CHECK(t[0].dts == 0 && t[0].pts == 7200);
	CHECK(t[3].dts == 10800 && t[3].pts == 14400);
	ing_rtsp_ts_init(&c, 3000);
	CHECK_EQ(ing_rtsp_ts_push(&c, 10800, N, t), 0u);
	CHECK_EQ(ing_rtsp_ts_push(&c, 3600, 0, t), 2u);
	CHECK_EQ(c.frame, 3000);
}

static void test_no_bframes(void)
{
	struct ing_rtsp_ts c;
	ing_rtsp_ts_init(&c, 0); /* unknown rate: 3000 */
	struct ing_rtsp_times t[ING_RTSP_TS_HOLD + 1];
	CHECK_EQ(ing_rtsp_ts_push(&c, N, N, t), 0u);
	CHECK_EQ(ing_rtsp_ts_push(&c, 123456, 123456, t), 2u);
	CHECK(t[0].pts == 0 && t[0].dts == 0);
	CHECK(t[1].pts == 3000 && t[1].dts == 3000); /* one frame of the unknown rate later */
	CHECK_EQ(ing_rtsp_ts_push(&c, 129456, 129456, t), 1u);
	CHECK(t[0].pts == 9000 && t[0].dts == 9000);
	CHECK_EQ(c.repaired, 0u);
}

static void test_repairs(void)
{
	struct ing_rtsp_ts c;
	ing_rtsp_ts_init(&c, 3600);
	struct ing_rtsp_times t[ING_RTSP_TS_HOLD + 1];
	CHECK_EQ(ing_rtsp_ts_push(&c, 1000, 1000, t), 1u);
	CHECK(t[0].pts == 0 && t[0].dts == 0);
	/* A DTS repeated: one frame on, PTS kept. */
	CHECK_EQ(ing_rtsp_ts_push(&c, 9000, 1000, t), 1u);
	CHECK(t[0].dts == 3600 && t[0].pts == 8000);
	/* A DTS missing: one frame on, or the PTS when that is earlier (above the last). */
	CHECK_EQ(ing_rtsp_ts_push(&c, 5000, N, t), 1u);
	CHECK(t[0].dts == 4000 && t[0].pts == 4000);
	CHECK_EQ(ing_rtsp_ts_push(&c, 1000, N, t), 1u);
	CHECK(t[0].dts == 7600 && t[0].pts == 7600);
	/* A PTS before its DTS: raised to it. */
	CHECK_EQ(ing_rtsp_ts_push(&c, 2000, 9000, t), 1u);
	CHECK(t[0].dts == 8000 && t[0].pts == 8000);
	CHECK_EQ(c.repaired, 5u); /* the fourth: both */
	/* A DTS a little back (less than ING_RTSP_TS_BACK): repaired, the clock kept. */
	CHECK_EQ(ing_rtsp_ts_push(&c, 95000, 91000, t), 1u);
	CHECK(t[0].dts == 90000 && t[0].pts == 94000);
	CHECK_EQ(ing_rtsp_ts_push(&c, 50000, 50000, t), 1u);
	CHECK(t[0].dts == 93600 && t[0].pts == 93600);
	CHECK_EQ(c.repaired, 7u);
	/* The camera's clock starts again (1 s back or more): one frame on, PTS - DTS kept. */
	CHECK_EQ(ing_rtsp_ts_push(&c, 50, 10, t), 1u);
	CHECK(t[0].dts == 97200 && t[0].pts == 97240);
	CHECK_EQ(ing_rtsp_ts_push(&c, 3650, 3610, t), 1u);
	CHECK(t[0].dts == 100800 && t[0].pts == 100840);
	CHECK_EQ(c.repaired, 8u);
	/* Times beyond any clock are none. */
	CHECK_EQ(ing_rtsp_ts_push(&c, INT64_MAX, INT64_MIN + 1, t), 1u);
	CHECK(t[0].dts == 104400 && t[0].pts == 104400);
}

static void test_no_dts_at_all(void)
{
	struct ing_rtsp_ts c;
	ing_rtsp_ts_init(&c, 3600);
	struct ing_rtsp_times t[ING_RTSP_TS_HOLD + 1];
	for (unsigned i = 0; i < ING_RTSP_TS_HOLD; i++)
		CHECK_EQ(ing_rtsp_ts_push(&c, 90000 + (int64_t)i * 3600, N, t), 0u);
	CHECK_EQ(ing_rtsp_ts_push(&c, 90000 + ING_RTSP_TS_HOLD * 3600, N, t), ING_RTSP_TS_HOLD + 1u);
	for (unsigned i = 0; i <= ING_RTSP_TS_HOLD; i++) {
		CHECK_EQ(t[i].dts, (int64_t)i * 3600);
		CHECK(t[i].pts >= t[i].dts);
	}
}

int main(void)
{
	RUN(test_bframes_start);
	RUN(test_frame_from_held_pts);
	RUN(test_no_bframes);
	RUN(test_repairs);
	RUN(test_no_dts_at_all);
	return TEST_EXIT();
}
