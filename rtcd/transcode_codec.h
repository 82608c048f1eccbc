/* The H.265 -> H.264 pipeline of one transcode, without threads: libavcodec's hevc
 * decoder, a downscale to the sub-stream size (transcode_scale.c), and libx264 through
 * libavcodec (veryfast, zerolatency, constrained baseline, an IDR at least every 2 s and
 * on request, SPS/PPS before every IDR, Annex-B out). transcode.c runs it on a thread. */
#ifndef KP_RTC_TRANSCODE_CODEC_H
#define KP_RTC_TRANSCODE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTC_TRANSCODE_KEY_US 2000000 /* an IDR at least this often */

struct rtc_tc_codec;

/* One encoded H.264 access unit. */
typedef void (*rtc_tc_out_cb)(void *arg, const uint8_t *data, size_t len, bool keyframe, int64_t pts_90k,
			      unsigned width, unsigned height);

/* 0, or a negative errno with a log line saying which codec failed. */
int rtc_tc_codec_open(const char *name, struct rtc_tc_codec **ret);
/* Decodes one H.265 access unit (Annex-B) and encodes what it yields; force_key makes
 * the next encoded picture an IDR. 0, or a negative errno (the input was dropped). */
int rtc_tc_codec_push(struct rtc_tc_codec *c, const uint8_t *data, size_t len, int64_t pts_90k, bool force_key,
		      rtc_tc_out_cb out, void *arg);
void rtc_tc_codec_free(struct rtc_tc_codec *c);

#endif
