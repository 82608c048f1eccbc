/* One Baichuan video stream of an ingestd session: msg 3 payloads in (reassembled as
 * BcMedia), access units with 90 kHz timestamps and the streaming state out, to the
 * session's sink (ingestd/camera.h); on the main stream, when the camera's audio is on,
 * its AAC and ADPCM as audio units (bc_audio.h). */
#ifndef KP_BC_STREAM_H
#define KP_BC_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "bc_audio.h"
#include "bc_media.h"
#include "bc_pts.h"
#include "camera.h"

struct bc_stream {
	const struct ing_camera_info *info;
	const struct ing_sink *sink;
	enum kp_stream_index index;
	bool requested; /* msg 3 sent */
	bool binary;    /* the start reply arrived: msg 3 with msg_num is wholly binary */
	bool streaming; /* first frame delivered */
	uint16_t msg_num;
	uint32_t handle;
	uint32_t width, height;
	uint64_t frames;
	uint64_t start_ms, last_frame_ms; /* loop time */
	int64_t last_dts;
	struct bc_pts pts;
	struct bc_ts_unwrap ts;
	struct bc_media_stream media;
	struct bc_audio audio;
};

void bc_stream_init(struct bc_stream *s, const struct ing_camera_info *info, const struct ing_sink *sink,
		    enum kp_stream_index index);

/* Feeds one msg 3 payload at loop time now_ms; hands every complete frame to the sink.
 * Returns 0 or a negative errno with a reason (the media buffer ceiling). */
int bc_stream_payload(struct bc_stream *s, const uint8_t *data, size_t len, uint64_t now_ms, const char **ret_reason);

void bc_stream_free(struct bc_stream *s);

#endif
