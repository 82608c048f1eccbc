/* BCUDP reliability (BAICHUAN.md section 6), as pure state machines driven by explicit
 * now_ms arguments: the receive window (in-order delivery, duplicates, ACK + selective
 * ACK vector), the send window (chunking, retransmission with backoff, ACK processing)
 * and the bounded delivered-payload channel between the receive window and a reader.
 * Ceilings: KP_BCUDP_RECV_WINDOW, KP_BCUDP_MAX_INFLIGHT, KP_BCUDP_CHANNEL_ITEMS. */
#ifndef KP_BCUDP_WINDOW_H
#define KP_BCUDP_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bcudp_packet.h"
#include "kp_limits.h"

/* Real cameras hang up when an ACK's SACK vector reaches about this many entries
 * (BAICHUAN.md section 6, from neolink's dissector/udp.md); the test camera does. */
#define BCUDP_CAMERA_ACK_LIMIT 205
_Static_assert(KP_BCUDP_ACK_VECTOR_MAX < BCUDP_CAMERA_ACK_LIMIT,
	       "the SACK vector must stay short of the cameras' limit");

/* Packets past the oldest unacknowledged one that may be on the wire; kept well under
 * the ~205 ACK-vector entries at which cameras give up. */
#define BCUDP_SEND_WINDOW    128
#define BCUDP_RTO_INITIAL_MS 100
#define BCUDP_RTO_MAX_MS     1000
/* A hole this many ids before a received packet is retransmitted at once (once). */
#define BCUDP_FAST_RETRANSMIT_GAP 3

/* Receive side. Accepts ids in [deliver_id, deliver_id + KP_BCUDP_RECV_WINDOW). */
struct bcudp_recv {
	uint32_t deliver_id; /* next id handed to the reader */
	uint32_t contig_id;  /* first id not received yet (all before it were) */
	uint32_t end_id;     /* highest id received + 1 */
	bool any;            /* something was received */
	uint64_t duplicates, beyond_window;
	bool have[KP_BCUDP_RECV_WINDOW];
	uint16_t len[KP_BCUDP_RECV_WINDOW];
	uint8_t data[KP_BCUDP_RECV_WINDOW][BCUDP_CHUNK];
};

void bcudp_recv_init(struct bcudp_recv *r);
/* Stores a Data payload. Returns 0, -EALREADY (duplicate, dropped), -ERANGE (beyond
 * the receive window, dropped) or -EMSGSIZE (larger than BCUDP_CHUNK), with a reason;
 * the first two are counted. */
int bcudp_recv_input(struct bcudp_recv *r, uint32_t packet_id, const uint8_t *data, size_t len,
		     const char **ret_reason);
/* The next in-order payload (valid until the next call on r), or -EAGAIN. */
int bcudp_recv_pop(struct bcudp_recv *r, const uint8_t **ret_data, size_t *ret_len);
/* The ACK to send: group, last in-order id and the SACK vector, at most
 * KP_BCUDP_ACK_VECTOR_MAX entries (sack must hold that many bytes). */
void bcudp_recv_ack(const struct bcudp_recv *r, uint32_t *ret_group, uint32_t *ret_last, uint8_t *sack,
		    size_t *ret_sack_len);

/* Send side. */
struct bcudp_send_slot {
	uint8_t *data; /* BCUDP_CHUNK bytes, NULL when free */
	uint16_t len;
	uint16_t tx_count;
	uint32_t rto_ms;
	uint64_t due_ms;
	bool acked;
};

struct bcudp_send {
	uint32_t window;  /* packets past base_id that may be on the wire (BCUDP_SEND_WINDOW) */
	uint32_t base_id; /* oldest packet not yet acknowledged */
	uint32_t next_id; /* id of the next packet queued */
	uint64_t retransmits;
	struct bcudp_send_slot slot[KP_BCUDP_MAX_INFLIGHT];
};

struct bcudp_tx {
	uint32_t id;
	const uint8_t *data;
	size_t len;
	bool retransmit;
};

/* An empty send side with a window of BCUDP_SEND_WINDOW packets; a peer that sends
 * further ahead (the test camera modelling a real one) sets s->window after this, at
 * most KP_BCUDP_MAX_INFLIGHT. */
void bcudp_send_init(struct bcudp_send *s);
void bcudp_send_free(struct bcudp_send *s);
/* Packets queued and not yet acknowledged. */
size_t bcudp_send_inflight(const struct bcudp_send *s);
/* Queues bytes, chunked at BCUDP_CHUNK (filling the last never-sent packet first); all
 * or nothing. Returns 0, -ENOBUFS past KP_BCUDP_MAX_INFLIGHT packets, -ENOMEM. */
int bcudp_send_write(struct bcudp_send *s, const uint8_t *data, size_t len);
/* The next packet due at now_ms (first transmissions, then timer retransmissions with
 * the timer doubling from BCUDP_RTO_INITIAL_MS up to BCUDP_RTO_MAX_MS); -EAGAIN when
 * nothing is due. The data stays valid until the next call on s. */
int bcudp_send_next(struct bcudp_send *s, uint64_t now_ms, struct bcudp_tx *ret);
/* When bcudp_send_next will next have something (UINT64_MAX: nothing queued). */
uint64_t bcudp_send_next_due(const struct bcudp_send *s);
/* Applies a received ACK. Returns 0, or -EBADMSG with a reason when it acknowledges a
 * packet never sent or carries a SACK entry other than 0 or 1 (then nothing changes). */
int bcudp_send_ack(struct bcudp_send *s, uint32_t group, uint32_t last_id, const uint8_t *sack, size_t sack_len,
		   const char **ret_reason);

/* The delivered-payload channel: a ring of at most KP_BCUDP_CHANNEL_ITEMS payloads. */
struct bcudp_chan {
	unsigned head, count;
	uint16_t len[KP_BCUDP_CHANNEL_ITEMS];
	uint8_t data[KP_BCUDP_CHANNEL_ITEMS][BCUDP_CHUNK];
};

void bcudp_chan_init(struct bcudp_chan *c);
/* Copies a payload in; -ENOBUFS when full, -EMSGSIZE over BCUDP_CHUNK. */
int bcudp_chan_push(struct bcudp_chan *c, const uint8_t *data, size_t len);
/* The oldest payload, removed; valid until the next push. -EAGAIN when empty. */
int bcudp_chan_pop(struct bcudp_chan *c, const uint8_t **ret_data, size_t *ret_len);
/* Moves in-order payloads from r into c while c has room; returns how many. */
unsigned bcudp_chan_fill(struct bcudp_chan *c, struct bcudp_recv *r);

#endif
