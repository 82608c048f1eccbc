/* Pure IPC frame encoding and validation (SPEC section 2), no I/O: a 4-byte
 * little-endian envelope length, the nanopb Envelope, then envelope.tail_len raw bytes
 * and envelope.fd_count descriptors passed alongside; and the IPC table, which names
 * for every message kind the processes that may send and receive it. */
#ifndef KP_IPC_FRAME_H
#define KP_IPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

#ifndef kp_Envelope_size
#error "kp_Envelope has no static maximum size: every field needs a bound in keeppeek.options"
#endif

#define KP_FRAME_HEAD_MAX (4 + kp_Envelope_size)

/* A set of processes, one bit per kp_Peer: a column of the IPC table. */
#define KP_PEER_BIT(p) (1u << (unsigned)(p))
#define KP_PEERS_WORKERS                                                                                               \
	(KP_PEER_BIT(kp_Peer_PEER_INGESTD) | KP_PEER_BIT(kp_Peer_PEER_RECORDERD) | KP_PEER_BIT(kp_Peer_PEER_WEBD) |    \
	 KP_PEER_BIT(kp_Peer_PEER_RTCD) | KP_PEER_BIT(kp_Peer_PEER_TRANSCODER) | KP_PEER_BIT(kp_Peer_PEER_TIER))

/* One row of the IPC table: which processes may send a message kind, and which may
 * receive it. */
struct kp_ipc_rule {
	pb_size_t which; /* kp_Envelope_..._tag */
	uint32_t from;   /* KP_PEER_BIT of each allowed sender */
	uint32_t to;     /* KP_PEER_BIT of each allowed receiver */
};

/* The IPC table: *ret_count rows, one per message kind. */
const struct kp_ipc_rule *kp_ipc_rules(size_t *ret_count);

/* The one sender check: 0 when the table lets from send the message kind which to to,
 * else -EPERM with *ret_reason set. kp_frame_decode applies it to every frame. */
int kp_ipc_allowed(pb_size_t which, kp_Peer from, kp_Peer to, const char **ret_reason);

/* Reads the envelope length from a 4-byte header and checks it against the static
 * maximum. Returns 0 or -EMSGSIZE / -EBADMSG with *ret_reason set. */
int kp_frame_header(const uint8_t head[4], uint32_t *ret_len, const char **ret_reason);

/* Decodes exactly len envelope bytes into *ret_env (in place: nanopb clears only what
 * the message needs) and validates tail_len, fd_count and that the message kind may go
 * from the process at the link's other end to this one (kp_ipc_allowed). After a
 * failure *ret_env holds nothing usable. */
int kp_frame_decode(const uint8_t *buf, size_t len, kp_Peer from, kp_Peer to, size_t max_tail, kp_Envelope *ret_env,
		    const char **ret_reason);

/* Encodes header + envelope into buf (at least KP_FRAME_HEAD_MAX bytes). */
int kp_frame_encode(const kp_Envelope *env, uint8_t *buf, size_t cap, size_t *ret_len);

/* One message of the Envelope's oneof: its kind (kp_Envelope_..._tag, which is also its
 * field number), its nanopb descriptor (kp_..._fields) and the message. A sender that
 * names the message this way needs no kp_Envelope, whose union is sized for the largest
 * message (about 46 KiB): none to clear, none to copy. */
struct kp_frame_msg {
	pb_size_t which;
	const pb_msgdesc_t *fields;
	const void *msg;
	/* Or the message already encoded (body_len bytes; then fields and msg are unused). */
	const uint8_t *body;
	size_t body_len;
};

/* The message env carries, pointing into env. -EINVAL when it carries none. */
int kp_frame_msg_of(const kp_Envelope *env, struct kp_frame_msg *ret);

/* Encodes header + the Envelope {tail_len, fd_count, m} into buf (at least
 * KP_FRAME_HEAD_MAX bytes): the same bytes kp_frame_encode gives for an envelope holding
 * those three (test_ipc_policy compares them for every message kind). */
int kp_frame_encode_msg(const struct kp_frame_msg *m, uint32_t tail_len, uint32_t fd_count, uint8_t *buf, size_t cap,
			size_t *ret_len);

const char *kp_peer_name(kp_Peer peer);
kp_Peer kp_peer_from_name(const char *name);

#endif
