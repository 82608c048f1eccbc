/* Live video as fragmented MP4 for Media Source Extensions (the WebRTC fallback,
 * docs/decisions/0016-mse-fallback.md): an init segment from a keyframe's parameter sets
 * and one fragment per access unit, through the one fMP4 writer (fmp4_write.c) and the
 * H.26x toolkit. Pure functions over buffers; rtcd keeps one struct fmp4_live per viewer. */
#ifndef KP_FMP4_LIVE_H
#define KP_FMP4_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmp4.h"

/* One viewer's timeline: decode time 0 is the first access unit's presentation time. */
struct fmp4_live {
	enum kp_codec codec;
	uint32_t seq;      /* fragments written */
	int64_t base_pts;  /* 90 kHz */
	uint64_t next_dts; /* the decode time the next fragment starts at */
};

/* Starts l at a keyframe (Annex-B, its parameter sets in front) and writes the init
 * segment (FMP4_INIT_MAX bytes suffice). -EINVAL when the access unit is not a keyframe
 * with its parameter sets, -EBADMSG when it does not split or the SPS does not parse. */
int fmp4_live_init(struct fmp4_live *l, enum kp_codec codec, const uint8_t *au, size_t len, uint32_t width,
		   uint32_t height, int64_t pts_90k, uint8_t *out, size_t cap, size_t *ret_len);

/* Bytes fmp4_live_frag may write for an access unit of len bytes. */
size_t fmp4_live_frag_cap(size_t len);

/* One fragment (prft, moof, mdat) holding the access unit as one sample of duration
 * 90 kHz ticks, its parameter sets left out (they are in the init segment). 0,
 * -EBADMSG when it does not split, -ENOSPC past cap, -ERANGE when duration is 0. */
int fmp4_live_frag(struct fmp4_live *l, const uint8_t *au, size_t len, bool keyframe, uint32_t duration,
		   int64_t wall_us, uint8_t *out, size_t cap, size_t *ret_len);

#endif
