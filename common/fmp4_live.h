/* Live video as fragmented MP4 for Media Source Extensions (the WebRTC fallback,
 * docs/decisions/0016-mse-fallback.md): an init segment from a keyframe's parameter sets
 * and one fragment per access unit, through the one fMP4 writer (fmp4_write.c) and the
 * H.26x toolkit, and the RFC 6381 codecs string of what the init segment holds. Pure
 * functions over buffers; rtcd keeps one struct fmp4_live per viewer. */
#ifndef KP_FMP4_LIVE_H
#define KP_FMP4_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmp4.h"

#define FMP4_LIVE_CTO_MAX    (10 * 90000) /* PTS - DTS a fragment carries at most, 90 kHz */
#define FMP4_LIVE_CODECS_MAX 64           /* "hev1.A1.6.H186.B0.0.0.0.0.0" and its NUL fit */

/* One viewer's timeline: decode time 0 is the first access unit's decode time; a
 * sample's presentation time is its decode time plus its composition offset. */
struct fmp4_live {
	enum kp_codec codec;
	uint32_t seq;                      /* fragments written */
	uint64_t next_dts;                 /* the decode time the next fragment starts at */
	char codecs[FMP4_LIVE_CODECS_MAX]; /* of the init segment: avc1.PPCCLL, hev1.P.C.TL.B... */
};

/* Starts l (zeroed before the first call) at a keyframe (Annex-B, its parameter sets in
 * front), writes the init segment (FMP4_INIT_MAX bytes suffice) and fills l->codecs from
 * the avcC/hvcC record it holds. A later init segment for the same viewer (after a
 * dropped piece) keeps the timeline: its fragments go on where the last one ended, so
 * the browser's SourceBuffer does not get a second time 0. -EINVAL when the access
 * unit is not a keyframe with its parameter sets, -EBADMSG when it does not split or
 * the SPS does not parse. */
int fmp4_live_init(struct fmp4_live *l, enum kp_codec codec, const uint8_t *au, size_t len, uint32_t width,
		   uint32_t height, uint8_t *out, size_t cap, size_t *ret_len);

/* The RFC 6381 codecs parameter of a sample entry (ISO/IEC 14496-15 annex E): avc1.PPCCLL
 * from an avcC record, hev1.[A-C]P.C.[LH]L.B[.B...] from an hvcC record. 0, -EBADMSG when
 * the record is too short, -ENOSPC past cap. */
int fmp4_live_codecs(enum kp_codec codec, const uint8_t *config, size_t len, char *out, size_t cap);

/* Bytes fmp4_live_frag may write for an access unit of len bytes. */
size_t fmp4_live_frag_cap(size_t len);

/* One fragment (prft, moof, mdat) holding the access unit as one sample of duration
 * 90 kHz ticks (its decode time to the next one's) shown cto ticks after its decode
 * time (PTS - DTS: B-frames; trun version 1), its parameter sets left out (they are in
 * the init segment). 0, -EBADMSG when it does not split, -ENOSPC past cap, -ERANGE when
 * duration is 0 or cto outside 0 .. FMP4_LIVE_CTO_MAX. */
int fmp4_live_frag(struct fmp4_live *l, const uint8_t *au, size_t len, bool keyframe, uint32_t duration, int32_t cto,
		   int64_t wall_us, uint8_t *out, size_t cap, size_t *ret_len);

#endif
