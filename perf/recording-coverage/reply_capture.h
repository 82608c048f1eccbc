/* The last answer recorderd's query code gave through reply.h (reply_capture.c). */
#ifndef KP_PERF_REPLY_CAPTURE_H
#define KP_PERF_REPLY_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

struct capture {
	char *body;
	size_t len, cap;
	uint32_t id;
	kp_CatalogResult result;
	kp_CatalogBody kind;
	char code[32];
};

const struct capture *capture_last(void);
/* MediaPiece frames handed to rec_reply_envelope. */
uint64_t capture_envelopes(void);
void capture_free(void);

#endif
