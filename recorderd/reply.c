/* QueryReply pieces to peers (see reply.h). */
#include "reply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static struct kp_worker *W;
static uint64_t lost;

void rec_reply_init(struct kp_worker *w)
{
	W = w;
}

uint64_t rec_reply_lost(void)
{
	return lost;
}

int rec_reply(kp_Peer to, uint32_t id, unsigned status, const char *code, const char *content_type, const void *body,
	      size_t len)
{
	size_t off = 0;
	do {
		size_t n = len - off < REC_QUERY_PIECE ? len - off : REC_QUERY_PIECE;
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_query_reply_tag;
		kp_QueryReply *q = &env.msg.query_reply;
		q->id = id;
		q->done = off + n == len;
		q->status = status;
		snprintf(q->error_code, sizeof q->error_code, "%s", code ? code : "");
		snprintf(q->content_type, sizeof q->content_type, "%s", content_type);
		if (off == 0)
			q->total_len = len;
		int r = kp_worker_send_peer(W, to, &env, (const uint8_t *)body + off, n);
		if (r < 0) {
			lost++;
			kp_warn("answer %u to %s lost: %s", (unsigned)id, kp_peer_name(to), strerror(-r));
			return r;
		}
		off += n;
	} while (off < len);
	return 0;
}

int rec_reply_envelope(kp_Peer to, const kp_Envelope *env, const int *fds, unsigned nfds)
{
	int r =
	    nfds ? kp_worker_send_peer_fds(W, to, env, NULL, 0, fds, nfds) : kp_worker_send_peer(W, to, env, NULL, 0);
	if (r < 0)
		lost++;
	return r;
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
