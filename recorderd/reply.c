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

/* A CatalogReply is sent as the message itself (kp_frame_msg): no envelope, whose union
 * is sized for the largest message, to clear and copy per answer. */
static int send_piece(kp_Peer to, const kp_CatalogReply *q, const uint8_t *p, size_t n)
{
	struct kp_frame_msg m = {.which = kp_Envelope_catalog_reply_tag, .fields = kp_CatalogReply_fields, .msg = q};
	int r = kp_worker_send_peer_msg(W, to, &m, p, n);
	if (r < 0) {
		lost++;
		kp_warn("answer %u to %s lost: %s", (unsigned)q->id, kp_peer_name(to), strerror(-r));
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
		kp_CatalogReply q = kp_CatalogReply_init_zero;
		q.id = id;
		q.done = off + n == len;
		q.body = kind;
		if (off == 0)
			q.total_len = len;
		int r = send_piece(to, &q, body + off, n);
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
	kp_CatalogReply q = kp_CatalogReply_init_zero;
	q.id = id;
	q.done = true;
	q.body = kp_CatalogBody_CATALOG_BODY_JPEG;
	q.total_len = len;
	q.span_from_ms = from_ms;
	q.span_to_ms = to_ms;
	return send_piece(to, &q, jpeg, len);
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
	kp_CatalogReply q = kp_CatalogReply_init_zero;
	q.id = id;
	q.done = true;
	q.result = result;
	snprintf(q.error_code, sizeof q.error_code, "%s", code);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q.why, sizeof q.why, fmt, ap);
	va_end(ap);
	return send_piece(to, &q, NULL, 0);
}
