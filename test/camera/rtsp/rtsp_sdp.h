/* The test camera's SDP (RFC 4566) for one video track: H.264 with
 * sprop-parameter-sets (RFC 6184) or H.265 with sprop-vps/sps/pps (RFC 7798); and
 * optionally an audio track: AAC as mpeg4-generic in mode AAC-hbr (RFC 3640 3.3.6,
 * 4.1: streamtype 5, the AudioSpecificConfig in hex as config, sizeLength 13,
 * indexLength and indexDeltaLength 3), or G.711 mu-law as the static payload type 0
 * (RFC 3551 6, "PCMU/8000"), or Opus (RFC 7587 6.1: "opus/48000/2" whatever the
 * channels, sprop-stereo saying which). Pure. */
#ifndef KP_CAM_RTSP_SDP_H
#define KP_CAM_RTSP_SDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "camera.h"

#define CAM_SDP_MAX 4096

struct cam_sdp_track {
	enum kp_codec codec;
	uint8_t payload_type;
	const uint8_t *param[3]; /* VPS (H.265 only), SPS, PPS without start codes */
	size_t param_len[3];
	uint32_t width, height;
	unsigned fps;
	const char *control;               /* a=control value, e.g. "trackID=0" */
	const struct cam_sdp_audio *audio; /* NULL: no m=audio */
};

struct cam_sdp_audio {
	bool pcmu; /* G.711 mu-law (payload type 0) */
	bool opus; /* Opus (RFC 7587: opus/48000/2); otherwise AAC */
	uint8_t payload_type;
	uint32_t rate, channels;
	const uint8_t *config; /* AudioSpecificConfig */
	size_t config_len;
	const char *control;
};

/* Writes the session description into out (NUL-terminated). Returns 0, -EINVAL (missing
 * or short parameter sets) or -ENOBUFS. */
int cam_sdp_write(const struct cam_sdp_track *t, uint64_t session_id, const char *host, char *out, size_t cap,
		  size_t *ret_len);

/* Standard base64 with padding into out (NUL-terminated); -ENOBUFS when it does not fit. */
int cam_base64(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
