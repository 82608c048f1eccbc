/* The test camera's binary replies (msg 3 media, msg 109 snapshots) as Baichuan messages:
 * one payload cut in chunks, each a message of its own under the request's number. */
#ifndef CAM_BC_CHUNKS_H
#define CAM_BC_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "bc_crypto.h"

#define CAM_BC_CHUNK       40000 /* largest msg 3 / msg 109 payload */
#define CAM_BC_ENCRYPT_LEN 256   /* full AES: leading media bytes encrypted per chunk */

struct cam_bc_chunks {
	uint32_t msg_id;
	uint16_t msg_num;
	uint8_t channel, stream_type;
	uint16_t last_status; /* of the last chunk; the others are 200 */
};

/* One encoded message (header and body, encrypted as the cipher says; malloc'ed, the
 * callee frees it). payload_off: where the chunk's payload starts in it; encrypt_len:
 * how many of its leading bytes are AES-encrypted (full AES), else 0. */
typedef int (*cam_bc_chunk_out)(void *arg, uint8_t *msg, size_t len, size_t payload_off, uint32_t encrypt_len);

/* Encodes data as chunks of at most CAM_BC_CHUNK bytes (an empty payload is one empty
 * message) and hands each to out in order; stops at the first error. */
int cam_bc_chunks_encode(const struct bc_cipher *c, const struct cam_bc_chunks *h, const uint8_t *data, size_t len,
			 cam_bc_chunk_out out, void *arg);

#endif
