/* recorderd/reply.h for processes without peer links (the recording-coverage benchmark
 * and the recorderd request fuzzer): instead of queueing CatalogReply frames on a link to
 * webd, the answer recorderd's query code built (its records or bytes, or an error's
 * sentence) is copied into one buffer that the caller then renders and checks; MediaPiece frames are counted. The
 * answers are produced by recorderd's own code (queries.c); only the transport is this file. */
#include "reply_capture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reply.h"

static struct capture Last;
static uint64_t lost;

void rec_reply_init(struct kp_worker *w)
{
	(void)w; /* no links here */
}

uint64_t rec_reply_lost(void)
{
	return lost;
}

static int keep(uint32_t id, kp_CatalogResult result, const char *code, kp_CatalogBody kind, const void *body,
		size_t len)
{
	if (len > Last.cap) {
		char *p = realloc(Last.body, len);
		if (!p) {
			lost++;
			return -1;
		}
		Last.body = p;
		Last.cap = len;
	}
	if (len)
		memcpy(Last.body, body, len);
	Last.len = len;
	Last.id = id;
	Last.result = result;
	Last.kind = kind;
	snprintf(Last.code, sizeof Last.code, "%s", code);
	return 0;
}

int rec_reply(kp_Peer to, uint32_t id, kp_CatalogBody kind, const void *body, size_t len)
{
	(void)to;
	return keep(id, kp_CatalogResult_CATALOG_OK, "", kind, body, len);
}

int rec_reply_span(kp_Peer to, uint32_t id, const uint8_t *jpeg, size_t len, int64_t from_ms, int64_t to_ms)
{
	(void)to;
	(void)from_ms;
	(void)to_ms;
	return keep(id, kp_CatalogResult_CATALOG_OK, "", kp_CatalogBody_CATALOG_BODY_JPEG, jpeg, len);
}

int rec_reply_records(kp_Peer to, uint32_t id, const struct catrec_buf *b)
{
	(void)to;
	return keep(id, kp_CatalogResult_CATALOG_OK, "", kp_CatalogBody_CATALOG_BODY_RECORDS, b->p, b->len);
}

/* MediaPiece frames: counted, their descriptors (never the caller's own) left alone. */
static uint64_t envelopes;

int rec_reply_envelope(kp_Peer to, const kp_Envelope *env, const int *fds, unsigned nfds)
{
	(void)to;
	(void)fds;
	(void)nfds;
	envelopes++;
	Last.id = env->which_msg == kp_Envelope_media_piece_tag ? env->msg.media_piece.id : 0;
	Last.result =
	    env->which_msg == kp_Envelope_media_piece_tag ? env->msg.media_piece.result : kp_CatalogResult_CATALOG_OK;
	return 0;
}

uint64_t capture_envelopes(void)
{
	return envelopes;
}

int rec_reply_error(kp_Peer to, uint32_t id, kp_CatalogResult result, const char *code, const char *fmt, ...)
{
	(void)to;
	char why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return keep(id, result, code, kp_CatalogBody_CATALOG_BODY_NONE, why, strlen(why));
}

const struct capture *capture_last(void)
{
	return &Last;
}

void capture_free(void)
{
	free(Last.body);
	memset(&Last, 0, sizeof Last);
}
