/* Answers to webd over its peer link: CatalogReply pieces of at most REC_QUERY_PIECE
 * bytes (records cut between records, bytes split in order; the first piece with
 * total_len, the last done), and error answers (a CatalogResult, an error code, a
 * sentence). recorderd speaks no HTTP and writes no JSON for webd. A failed send is
 * logged and counted, never retried. */
#ifndef KP_REC_REPLY_H
#define KP_REC_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "catalog_records.h"
#include "kp_limits.h"
#include "worker.h"

#define REC_QUERY_PIECE (1 * KP_MIB)

void rec_reply_init(struct kp_worker *w);
/* A successful answer of body bytes (a JPEG, a keyframe, Prometheus text). */
int rec_reply(kp_Peer to, uint32_t id, kp_CatalogBody kind, const void *body, size_t len);
/* A successful answer of records (b->failed must be 0). */
/* A JPEG of at most REC_QUERY_PIECE bytes that stands for the span [from_ms, to_ms) of a
 * recording (a PictureQuery's answer), in one piece. */
int rec_reply_span(kp_Peer to, uint32_t id, const uint8_t *jpeg, size_t len, int64_t from_ms, int64_t to_ms);
int rec_reply_records(kp_Peer to, uint32_t id, const struct catrec_buf *b);
int rec_reply_error(kp_Peer to, uint32_t id, kp_CatalogResult result, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Any other message to a peer, with descriptors (duplicated; the caller keeps its own):
 * MediaPiece frames. 0 or a negative errno. */
int rec_reply_envelope(kp_Peer to, const kp_Envelope *env, const int *fds, unsigned nfds);
/* Answers that could not be queued. */
uint64_t rec_reply_lost(void);

#endif
