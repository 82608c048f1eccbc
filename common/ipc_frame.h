/* Pure IPC frame encoding and validation (SPEC section 2), no I/O: a 4-byte
 * little-endian envelope length, the nanopb Envelope, then envelope.tail_len raw bytes
 * and envelope.fd_count descriptors passed alongside. */
#ifndef KP_IPC_FRAME_H
#define KP_IPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

#ifndef kp_Envelope_size
#error "kp_Envelope has no static maximum size: every field needs a bound in keeppeek.options"
#endif

#define KP_FRAME_HEAD_MAX (4 + kp_Envelope_size)

/* The sender of a link; decides which messages are accepted on it. */
enum kp_link_kind {
	KP_LINK_SUPERVISOR_TO_WORKER, /* read by a worker from its supervisor */
	KP_LINK_WORKER_TO_SUPERVISOR, /* read by the supervisor from a worker */
	KP_LINK_PEER,                 /* worker <-> worker */
	KP_LINK_CONTROL_REQUEST,      /* read by the supervisor from keeppeekctl */
	KP_LINK_CONTROL_REPLY,        /* read by keeppeekctl from the supervisor */
};

/* Reads the envelope length from a 4-byte header and checks it against the static
 * maximum. Returns 0 or -EMSGSIZE / -EBADMSG with *ret_reason set. */
int kp_frame_header(const uint8_t head[4], uint32_t *ret_len, const char **ret_reason);

/* Decodes exactly len envelope bytes and validates tail_len, fd_count and that the
 * message kind may arrive on this kind of link. */
int kp_frame_decode(const uint8_t *buf, size_t len, enum kp_link_kind kind, size_t max_tail, kp_Envelope *ret_env,
		    const char **ret_reason);

/* Encodes header + envelope into buf (at least KP_FRAME_HEAD_MAX bytes). */
int kp_frame_encode(const kp_Envelope *env, uint8_t *buf, size_t cap, size_t *ret_len);

const char *kp_peer_name(kp_Peer peer);
kp_Peer kp_peer_from_name(const char *name);

#endif
