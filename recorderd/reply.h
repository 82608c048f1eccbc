/* Answers to webd and rtcd over their peer links: QueryReply pieces of at most
 * REC_QUERY_PIECE bytes (the body split in order, the first with total_len, the last
 * done), and error answers (status, error code, a sentence). A failed send is logged and
 * counted, never retried. */
#ifndef KP_REC_REPLY_H
#define KP_REC_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "kp_limits.h"
#include "worker.h"

#define REC_QUERY_PIECE (1 * KP_MIB)

void rec_reply_init(struct kp_worker *w);
int rec_reply(kp_Peer to, uint32_t id, unsigned status, const char *code, const char *content_type, const void *body,
	      size_t len);
int rec_reply_error(kp_Peer to, uint32_t id, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Any other message to a peer, with descriptors (duplicated; the caller keeps its own):
 * MediaPiece frames. 0 or a negative errno. */
int rec_reply_envelope(kp_Peer to, const kp_Envelope *env, const int *fds, unsigned nfds);
/* Answers that could not be queued. */
uint64_t rec_reply_lost(void);

#endif
