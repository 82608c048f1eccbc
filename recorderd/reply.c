/* CatalogReply pieces to peers (see reply.h). */
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

static int send_piece(kp_Peer to, kp_Envelope *env, const uint8_t *p, size_t n)
{
	int r = kp_worker_send_peer(W, to, env, p, n);
	if (r < 0) {
		lost++;
		kp_warn("answer %u to %s lost: %s", (unsigned)env->msg.catalog_reply.id, kp_peer_name(to),
			strerror(-r));
	}
	return r;
}

/* The body in pieces; records (kind CATALOG_BODY_RECORDS) are cut between records. */
static int send_body(kp_Peer to, uint32_t id, kp_CatalogBody kind, const uint8_t *body, size_t len)
{
	size_t off = 0;
	do {
		size_t n = kind == kp_CatalogBody_CATALOG_BODY_RECORDS ? catrec_piece(body, len, off, REC_QUERY_PIECE)
			   : len - off < REC_QUERY_PIECE               ? len - off
								       : REC_QUERY_PIECE;
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_catalog_reply_tag;
		kp_CatalogReply *q = &env.msg.catalog_reply;
		q->id = id;
		q->done = off + n == len;
		q->body = kind;
		if (off == 0)
			q->total_len = len;
		int r = send_piece(to, &env, body + off, n);
		if (r < 0)
			return r;
		off += n;
	} while (off < len);
	return 0;
}

int rec_reply(kp_Peer to, uint32_t id, kp_CatalogBody kind, const void *body, size_t len)
{
	return send_body(to, id, kind, body, len);
}

int rec_reply_span(kp_Peer to, uint32_t id, const uint8_t *jpeg, size_t len, int64_t from_ms, int64_t to_ms)
{
	if (len > REC_QUERY_PIECE)
		return -EMSGSIZE;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_catalog_reply_tag;
	kp_CatalogReply *q = &env.msg.catalog_reply;
	q->id = id;
	q->done = true;
	q->body = kp_CatalogBody_CATALOG_BODY_JPEG;
	q->total_len = len;
	q->span_from_ms = from_ms;
	q->span_to_ms = to_ms;
	return send_piece(to, &env, jpeg, len);
}

int rec_reply_records(kp_Peer to, uint32_t id, const struct catrec_buf *b)
{
	return send_body(to, id, kp_CatalogBody_CATALOG_BODY_RECORDS, b->p, b->len);
}

int rec_reply_envelope(kp_Peer to, const kp_Envelope *env, const int *fds, unsigned nfds)
{
	int r =
	    nfds ? kp_worker_send_peer_fds(W, to, env, NULL, 0, fds, nfds) : kp_worker_send_peer(W, to, env, NULL, 0);
	if (r < 0)
		lost++;
	return r;
}

int rec_reply_error(kp_Peer to, uint32_t id, kp_CatalogResult result, const char *code, const char *fmt, ...)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_catalog_reply_tag;
	kp_CatalogReply *q = &env.msg.catalog_reply;
	q->id = id;
	q->done = true;
	q->result = result;
	snprintf(q->error_code, sizeof q->error_code, "%s", code);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->why, sizeof q->why, fmt, ap);
	va_end(ap);
	return send_piece(to, &env, NULL, 0);
}
