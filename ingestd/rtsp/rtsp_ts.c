/* Decode and presentation times of RTSP access units (see rtsp_ts.h). */
#include "rtsp_ts.h"

#include "kp_checked.h"

void ing_rtsp_ts_init(struct ing_rtsp_ts *c, int64_t frame_90k)
{
	bool known = frame_90k >= ING_RTSP_TS_MIN_FRAME && frame_90k <= 90000;
	*c =
	    (struct ing_rtsp_ts){.frame = known ? frame_90k : 3000, .frame_known = known, .last_dts = ING_RTSP_TS_NONE};
}

/* 2^60 ticks of 90 kHz are 400,000 years: a time beyond is no time, and every sum below
 * stays far from overflowing. */
static int64_t bounded(int64_t v)
{
	return v < -(INT64_C(1) << 60) || v > (INT64_C(1) << 60) ? ING_RTSP_TS_NONE : v;
}

/* Raw times to the stream's clock, repaired: DTS above the last, PTS at or after it. */
static struct ing_rtsp_times settle(struct ing_rtsp_ts *c, int64_t raw_pts, int64_t raw_dts)
{
	int64_t dts = ING_RTSP_TS_NONE, pts = ING_RTSP_TS_NONE;
	if (raw_dts != ING_RTSP_TS_NONE && kp_sub_i64(raw_dts, c->offset, &dts) < 0)
		dts = ING_RTSP_TS_NONE;
	if (raw_pts != ING_RTSP_TS_NONE && kp_sub_i64(raw_pts, c->offset, &pts) < 0)
		pts = ING_RTSP_TS_NONE;
	if (dts != ING_RTSP_TS_NONE && bounded(dts) == ING_RTSP_TS_NONE)
		dts = ING_RTSP_TS_NONE; /* after a restart the offset may be anywhere */
	if (pts != ING_RTSP_TS_NONE && bounded(pts) == ING_RTSP_TS_NONE)
		pts = ING_RTSP_TS_NONE;
	if (c->last_dts != ING_RTSP_TS_NONE && dts != ING_RTSP_TS_NONE && dts <= c->last_dts - ING_RTSP_TS_BACK) {
		/* The camera's clock went back (a restart): continue one frame on. */
		int64_t shift = c->last_dts + c->frame - dts;
		c->offset -= shift;
		dts += shift;
		if (pts != ING_RTSP_TS_NONE)
			pts += shift;
		c->repaired++;
	}
	int64_t floor = c->last_dts == ING_RTSP_TS_NONE ? 0 : c->last_dts + 1;
	if (dts == ING_RTSP_TS_NONE || dts < floor) {
		c->repaired++;
		dts = c->last_dts == ING_RTSP_TS_NONE ? 0 : c->last_dts + c->frame;
		if (pts != ING_RTSP_TS_NONE && pts >= floor && pts < dts)
			dts = pts;
	}
	if (pts == ING_RTSP_TS_NONE || pts < dts) {
		c->repaired++;
		pts = dts;
	}
	c->last_dts = dts;
	return (struct ing_rtsp_times){.pts = pts, .dts = dts};
}

/* The packets held at the start get DTS one frame apart, ending one frame before
 * first_dts; a packet without PTS (the keyframe that opens the stream: nothing after it
 * in decode order is shown before it) is shown one frame before the earliest PTS that
 * follows it. Without any DTS in ING_RTSP_TS_HOLD packets, the DTS start from the
 * earliest PTS held. */
static unsigned start(struct ing_rtsp_ts *c, int64_t raw_pts, int64_t raw_dts, struct ing_rtsp_times *out)
{
	unsigned n = c->nheld;
	int64_t pts[ING_RTSP_TS_HOLD + 1], dts[ING_RTSP_TS_HOLD + 1];
	for (unsigned i = 0; i < n; i++)
		pts[i] = c->held_pts[i];
	pts[n] = raw_pts;
	/* Without a frame rate, one frame is the smallest step between the PTS held, when two
	 * are known. */
	int64_t step = 0;
	for (unsigned i = 0; i <= n; i++)
		for (unsigned j = 0; j <= n; j++)
			if (pts[i] != ING_RTSP_TS_NONE && pts[j] != ING_RTSP_TS_NONE && pts[i] > pts[j] &&
			    (step == 0 || pts[i] - pts[j] < step))
				step = pts[i] - pts[j];
	if (!c->frame_known && step >= ING_RTSP_TS_MIN_FRAME && step <= 90000)
		c->frame = step;
	int64_t later = ING_RTSP_TS_NONE; /* the earliest PTS after packet i */
	for (unsigned i = n + 1; i-- > 0;) {
		if (pts[i] == ING_RTSP_TS_NONE && later != ING_RTSP_TS_NONE)
			pts[i] = later - c->frame;
		if (pts[i] != ING_RTSP_TS_NONE && (later == ING_RTSP_TS_NONE || pts[i] < later))
			later = pts[i];
	}
	int64_t first = raw_dts;
	if (first == ING_RTSP_TS_NONE)
		first = later == ING_RTSP_TS_NONE ? 0 : later + (int64_t)n * c->frame;
	for (unsigned i = 0; i <= n; i++)
		dts[i] = first - (int64_t)(n - i) * c->frame; /* at most 16 frames of 1 s at most */
	c->offset = dts[0];
	c->started = true;
	c->nheld = 0;
	c->inferred += n;
	for (unsigned i = 0; i <= n; i++)
		out[i] = settle(c, pts[i], dts[i]);
	return n + 1;
}

unsigned ing_rtsp_ts_push(struct ing_rtsp_ts *c, int64_t raw_pts, int64_t raw_dts, struct ing_rtsp_times *out)
{
	raw_pts = bounded(raw_pts);
	raw_dts = bounded(raw_dts);
	if (c->started) {
		out[0] = settle(c, raw_pts, raw_dts);
		return 1;
	}
	if (raw_dts == ING_RTSP_TS_NONE && c->nheld < ING_RTSP_TS_HOLD) {
		c->held_pts[c->nheld++] = raw_pts;
		return 0;
	}
	return start(c, raw_pts, raw_dts, out);
}
