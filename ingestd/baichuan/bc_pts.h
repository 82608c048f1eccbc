/* Presentation times of Baichuan video, pure code. A BcMedia frame carries one µs
 * timestamp (BAICHUAN.md section 5) and the frames come in decode order; neolink hands
 * that one time to GStreamer as both PTS and DTS (src/rtsp/factory.rs, set_dts and
 * set_pts on each buffer). We take it as the DTS. A stream whose SPS allows no
 * reordering (every fixture and camera we know) is shown at its DTS; one with B-frames
 * (a reorder depth above 0) gets its PTS from the picture order count (common/
 * h26x_poc.h): a keyframe is shown reorder-depth frames after its DTS, and each frame
 * after it (POC - the keyframe's POC) / POC step frames after the keyframe. A frame lasts
 * the mean DTS step of the last GOP, or one frame of the Info record's fps before. A PTS
 * that would fall before its DTS is raised to it and counted. */
#ifndef KP_BC_PTS_H
#define KP_BC_PTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h26x_poc.h"

#define BC_PTS_MAX_REORDER 16 /* frames: a deeper reorder depth is taken as this */

struct bc_pts {
	struct h26x_poc poc;
	bool init;
	int64_t frame; /* 90 kHz */
	bool anchored;
	int64_t anchor_pts;
	int32_t anchor_poc;
	bool have_key;
	int64_t key_dts;
	uint64_t since_key;
	uint64_t repaired;  /* PTS raised to the DTS */
	uint64_t underived; /* frames of a reordering stream whose POC could not be read */
};

void bc_pts_init(struct bc_pts *p);
/* The Info record's frame rate (0: unknown, 25 is assumed). */
void bc_pts_fps(struct bc_pts *p, unsigned fps);
/* The PTS of one access unit (Annex-B) in decode order with its DTS (90 kHz). */
int64_t bc_pts_next(struct bc_pts *p, enum kp_codec codec, const uint8_t *au, size_t len, bool keyframe, int64_t dts);

#endif
