/* Replay mode of the test camera's Baichuan streams (--replay): a stream sent from one
 * precomputed loop of its wire bytes on a timer shared by every stream of the process. */
#ifndef CAM_BC_REPLAY_H
#define CAM_BC_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "bc_chunks.h"
#include "camera.h"

struct cam_replay;

/* Sends one frame's messages (the same bytes the live session writes for it); 0, or <0
 * to end the stream. */
typedef int (*cam_replay_send_fn)(void *arg, const uint8_t *data, size_t len);

/* Encodes one loop of src as msg 3 messages under h with cipher c, then sends frame by
 * frame from the first keyframe due at or after now, frame index k due at
 * epoch_us + k / fps (µs on uv_hrtime's clock), with media.c's timestamps. */
int cam_replay_start(uv_loop_t *loop, const struct cam_source *src, const struct bc_cipher *c,
		     const struct cam_bc_chunks *h, uint64_t epoch_us, cam_replay_send_fn send, void *arg,
		     struct cam_replay **ret);
/* Stops the stream; safe from inside its send callback. NULL is ignored. */
void cam_replay_stop(struct cam_replay *r);

#endif
