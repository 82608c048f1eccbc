/* RTP depacketization of AAC as RFC 3640 (mpeg4-generic, modes AAC-hbr and AAC-lbr)
 * carries it, pure code: the AU-headers section (16-bit length in bits, then per access
 * unit a size of sizeLength bits and an index or index delta), the access units after
 * it, and one access unit fragmented over packets up to the marker bit (3.2.3). Each
 * access unit is bounded by KP_AAC_FRAME_MAX. Used by ingestd's RTSP client. */
#ifndef KP_RTP_AAC_H
#define KP_RTP_AAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio.h"

#define RTP_AAC_MAX_AUS 64 /* access units in one packet */

struct rtp_aac {
	unsigned size_len, index_len, delta_len; /* bits, from the fmtp */
	uint8_t frag[KP_AAC_FRAME_MAX];
	size_t frag_len, frag_size;
	bool in_frag;
	uint32_t frag_ts;
};

/* size_len 1..16, index_len and delta_len 0..8 (RFC 3640 4.1). 0 or -EINVAL. */
int rtp_aac_init(struct rtp_aac *a, unsigned size_len, unsigned index_len, unsigned delta_len);

/* One access unit of a packet: k-th of the n it carries (its time is the packet's plus k
 * frames; the packet's samples end n frames after the packet's time). */
typedef void (*rtp_aac_fn)(void *arg, const uint8_t *au, size_t len, unsigned k, unsigned n);

/* One RTP payload. Calls fn for each whole access unit; returns 0, or -EBADMSG /
 * -EMSGSIZE with *ret_reason set (a fragment in progress is then dropped). A gap in the
 * sequence is the caller's: it calls rtp_aac_reset. */
int rtp_aac_push(struct rtp_aac *a, const uint8_t *payload, size_t len, bool marker, uint32_t ts, rtp_aac_fn fn,
		 void *arg, const char **ret_reason);

void rtp_aac_reset(struct rtp_aac *a);

#endif
