/* Presentation times of Baichuan video from picture order counts (see bc_pts.h). */
#include "bc_pts.h"

void bc_pts_init(struct bc_pts *p)
{
	*p = (struct bc_pts){.frame = 90000 / 25};
}

void bc_pts_fps(struct bc_pts *p, unsigned fps)
{
	if (fps > 0 && fps <= 120 && !p->have_key)
		p->frame = 90000 / fps;
}

int64_t bc_pts_next(struct bc_pts *p, enum kp_codec codec, const uint8_t *au, size_t len, bool keyframe, int64_t dts)
{
	if (!p->init || p->poc.codec != codec) {
		h26x_poc_init(&p->poc, codec);
		p->init = true;
		p->anchored = false;
	}
	if (keyframe) {
		/* The mean DTS step of the GOP that ends here (bounded: 1 tick to 1 s). */
		if (p->have_key && p->since_key && dts > p->key_dts) {
			int64_t step = (dts - p->key_dts) / (int64_t)p->since_key;
			if (step > 0 && step <= 90000)
				p->frame = step;
		}
		p->have_key = true;
		p->key_dts = dts;
		p->since_key = 0;
	}
	p->since_key++;
	int32_t poc = 0;
	bool reset = false;
	int r = h26x_poc_au(&p->poc, au, len, &poc, &reset);
	uint32_t reorder = h26x_poc_reorder(&p->poc);
	if (reorder == 0)
		return dts;
	if (r < 0) {
		p->underived++;
		p->anchored = false;
		return dts;
	}
	if (reorder > BC_PTS_MAX_REORDER)
		reorder = BC_PTS_MAX_REORDER;
	if (keyframe || reset) {
		p->anchored = true;
		p->anchor_poc = poc;
		p->anchor_pts = dts + (int64_t)reorder * p->frame;
		return p->anchor_pts;
	}
	if (!p->anchored) /* after a frame without POC: shown at its DTS until a keyframe */
		return dts;
	int64_t pts = p->anchor_pts + ((int64_t)poc - p->anchor_poc) * p->frame / (int64_t)h26x_poc_step(&p->poc);
	if (pts < dts) {
		p->repaired++;
		pts = dts;
	}
	return pts;
}
