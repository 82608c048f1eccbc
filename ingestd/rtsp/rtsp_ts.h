/* Decode and presentation times of an RTSP stream's access units, pure code: the access
 * units' raw times (90 kHz, either may be missing) to a DTS that starts at 0 and strictly
 * increases, and a PTS at or after it, with what had to be repaired counted. The RTP
 * timestamp is the PTS (RFC 6184 5.1, RFC 7798 4.1); rtsp_track.c derives the DTS of a
 * stream with B-frames from the PTS of the access units before it and leaves it out for
 * the first few (the reorder depth): those are held until the first DTS arrives and are
 * then given DTS one frame apart before it. */
#ifndef KP_INGEST_RTSP_TS_H
#define KP_INGEST_RTSP_TS_H

#include <stdbool.h>
#include <stdint.h>

#define ING_RTSP_TS_NONE      INT64_MIN
#define ING_RTSP_TS_HOLD      16          /* packets held at most while the first DTS is missing */
#define ING_RTSP_TS_BACK      (1 * 90000) /* a DTS this far back restarts the clock */
#define ING_RTSP_TS_MIN_FRAME 300         /* 90 kHz: a shorter frame (over 300 fps) is no frame */

struct ing_rtsp_ts {
	int64_t frame;    /* one frame, 90 kHz: spacing of the times inferred */
	bool frame_known; /* from the stream's frame rate */
	bool started;
	int64_t offset, last_dts;
	unsigned nheld;
	int64_t held_pts[ING_RTSP_TS_HOLD];
	uint64_t repaired; /* DTS missing or not increasing, PTS missing or before the DTS */
	uint64_t inferred; /* times given to the packets held at the start */
};

struct ing_rtsp_times {
	int64_t pts, dts;
};

/* frame_90k: the stream's frame duration when known, else 0 (or nonsense): then the
 * smallest step between the PTS held at the start, or 3000. */
void ing_rtsp_ts_init(struct ing_rtsp_ts *c, int64_t frame_90k);

/* One packet's times (ING_RTSP_TS_NONE when missing), in decode order. Returns how many
 * packets now have their times in out[] (ING_RTSP_TS_HOLD + 1 entries): the packets
 * held before, oldest first, then this one; 0 when this one is held. */
unsigned ing_rtsp_ts_push(struct ing_rtsp_ts *c, int64_t raw_pts, int64_t raw_dts, struct ing_rtsp_times *out);

#endif
