/* recorderd/reply.h for processes without peer links (the recording-coverage benchmark
 * and the recorderd request fuzzer): instead of queueing QueryReply frames on a link to
 * webd, rec_reply copies the body recorderd's query code built into one buffer that the
 * caller then writes out and checks; MediaPiece frames are counted. The answers are
 * produced by recorderd's own code (queries.c); only the transport is this file. */
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

int rec_reply(kp_Peer to, uint32_t id, unsigned status, const char *code, const char *content_type, const void *body,
	      size_t len)
{
	(void)to;
	if (len > Last.cap) {
		char *p = realloc(Last.body, len);
		if (!p) {
			lost++;
			return -1;
		}
		Last.body = p;
		Last.cap = len;
	}
	memcpy(Last.body, body, len);
	Last.len = len;
	Last.id = id;
	Last.status = status;
	snprintf(Last.code, sizeof Last.code, "%s", code ? code : "");
	snprintf(Last.content_type, sizeof Last.content_type, "%s", content_type);
	return 0;
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
	Last.status = env->which_msg == kp_Envelope_media_piece_tag ? env->msg.media_piece.status : 0;
	return 0;
}

uint64_t capture_envelopes(void)
{
	return envelopes;
}

int rec_reply_error(kp_Peer to, uint32_t id, unsigned status, const char *code, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return rec_reply(to, id, status, code, "text/plain", why, strlen(why));
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
