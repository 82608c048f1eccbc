/* A picture of one keyframe (issue 20, decision 0021): an H.264 or H.265 keyframe
 * (Annex-B, parameter sets first, as recorderd's keyframe lookup gives it) decoded by
 * libavcodec, reduced by box averaging to a width (height by aspect ratio, even), made
 * full range (JFIF) and
 * encoded as a JPEG with libturbojpeg straight from the YUV 4:2:0 planes. Pure and
 * synchronous: the job that runs it owns the thread. */
#ifndef KP_TX_PICTURE_H
#define KP_TX_PICTURE_H

#include <stddef.h>
#include <stdint.h>

#define TX_PICTURE_THUMB_WIDTH 320 /* the events' thumbnails */
#define TX_PICTURE_QUALITY     80
#define TX_PICTURE_INPUT_MAX   (8u << 20) /* a keyframe larger than this is refused */

enum tx_picture_codec { TX_PICTURE_H264 = 1, TX_PICTURE_H265 = 2 }; /* = enum kp_codec */

/* width 0: the decoded size; else reduced to width (a narrower picture keeps its size).
 * *ret is malloc'ed. 0, -EINVAL (not a keyframe that decodes: the log line says why),
 * -E2BIG (input past TX_PICTURE_INPUT_MAX), -ENOMEM, -ENOSYS (no such decoder). */
int tx_picture_make(enum tx_picture_codec codec, const uint8_t *annexb, size_t len, unsigned width, uint8_t **ret,
		    size_t *ret_len);

#endif
