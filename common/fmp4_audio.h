/* The audio track's boxes, for fmp4_write.c only (see fmp4.h): its trak and trex in the
 * init segment, its traf in a fragment's moof. */
#ifndef KP_FMP4_AUDIO_H
#define KP_FMP4_AUDIO_H

#include "fmp4.h"
#include "fmp4_bw.h"

void fmp4_audio_trak(struct bw *b, const struct kp_audio_format *a);
void fmp4_audio_trex(struct bw *b);
/* The traf of f's audio samples; returns where its trun's data_offset is to be patched. */
size_t fmp4_audio_traf(struct bw *b, const struct fmp4_frag_desc *f);

#endif
