/* The H.265 -> H.264 pipeline of one transcode, without threads: libavcodec's hevc
 * decoder, a downscale to the sub-stream size (scale.c), and libx264 through
 * libavcodec (veryfast, zerolatency, constrained baseline, an IDR at least every 2 s and
 * on request, SPS/PPS before every IDR, Annex-B out). job.c runs it on a job's thread. */
#ifndef KP_TX_VIDEO_H
#define KP_TX_VIDEO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TX_VIDEO_KEY_US 2000000 /* an IDR at least this often */

struct tx_video;

#include "codec.h"

/* 0, or a negative errno with a log line saying which codec failed. */
int tx_video_open(const char *name, struct tx_video **ret);
/* Decodes one H.265 access unit (Annex-B) and encodes what it yields; force_key makes
 * the next encoded picture an IDR. 0, or a negative errno (the input was dropped). */
int tx_video_push(struct tx_video *c, const uint8_t *data, size_t len, int64_t pts_90k, bool force_key, tx_emit_cb out,
		  void *arg);
void tx_video_free(struct tx_video *c);

#endif
