/* Annex-B access units that carry their parameter sets on keyframes (ingestd's RTSP
 * client, rtsp_track.c), pure code; and parameter sets out of codec extradata (Annex-B,
 * avcC or hvcC), which test/unit/test_rtsp_loopback.c uses to read the test camera with
 * libavformat, the client that is not ours. */
#ifndef KP_INGEST_RTSP_AU_H
#define KP_INGEST_RTSP_AU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../camera.h" /* ingestd/camera.h, not the test camera's */

#define ING_RTSP_MAX_PARAMS 4096 /* all parameter sets of a stream, Annex-B */

/* Parameter sets of extradata as Annex-B (4-byte start codes) into out (cap bytes).
 * *ret_nal_len_size is 0 for Annex-B extradata, else the packets' NAL length size (1, 2
 * or 4). Returns 0, or -EBADMSG / -ENOBUFS / -EINVAL with *ret_reason set. */
int ing_rtsp_extradata_params(enum kp_codec codec, const uint8_t *extra, size_t len, uint8_t *out, size_t cap,
			      size_t *ret_len, unsigned *ret_nal_len_size, const char **ret_reason);

/* A packet (Annex-B, or NAL units prefixed by nal_len_size-byte lengths when
 * nal_len_size > 0) as an Annex-B access unit in *buf (grown as needed, at most
 * RTP_MAX_AU bytes). On a keyframe, the parameter sets of params (Annex-B) whose NAL type
 * the packet lacks are put in front. Returns 0 with *ret_len set, or a negative errno
 * with *ret_reason set. */
int ing_rtsp_au_build(enum kp_codec codec, const uint8_t *pkt, size_t len, unsigned nal_len_size, bool keyframe,
		      const uint8_t *params, size_t params_len, uint8_t **buf, size_t *cap, size_t *ret_len,
		      const char **ret_reason);

#endif
