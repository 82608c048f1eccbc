/* Relays a question to recorderd and its QueryReply pieces back as the HTTP answer. */
#include "relay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct relay {
	uint64_t req;
	bool begun;
	char extra[128];
};

void webd_relay_error(struct web_req *r, uint32_t status, const char *code, const uint8_t *tail, size_t len)
{
	if (status < 400 || status > 599)
		status = 502;
	if (len > 400)
		len = 400;
	web_reply_error(r, (int)status, code[0] ? code : "error", "%.*s", (int)len,
			len ? (const char *)tail : "recorderd refused the request");
}

static void relay_cb(void *arg, struct kp_ipc_frame *f)
{
	struct relay *st = arg;
	struct web_req *r = web_req_find(st->req);
	if (!f) {
		if (r && !st->begun && webd_answer_lost())
			web_reply_error(r, 503, "recorderd_unavailable",
					"recorderd stopped while answering; it is being restarted, retry shortly");
		else if (r && !st->begun)
			web_reply_error(r, 504, "no_answer", "recorderd did not answer in time");
		else if (r)
			web_stream_end(r);
		free(st);
		return;
	}
	if (f->env->which_msg != kp_Envelope_query_reply_tag) {
		if (r && !st->begun)
			web_reply_error(r, 502, "bad_answer", "recorderd answered with an unexpected message");
		st->req = 0;
		return;
	}
	const kp_QueryReply *q = &f->env->msg.query_reply;
	if (r && !st->begun) {
		if (q->status < 200 || q->status > 299) {
			webd_relay_error(r, q->status, q->error_code, f->tail, f->tail_len);
			r = NULL;
			st->req = 0;
		} else {
			uint64_t total = q->total_len ? q->total_len : (q->done ? f->tail_len : UINT64_MAX);
			const char *ct = q->content_type[0] ? q->content_type : "application/octet-stream";
			if (web_stream_begin(r, (int)q->status, ct, total, st->extra[0] ? st->extra : NULL) < 0) {
				kp_warn("relay: request %" PRIu64 ": cannot begin the answer", st->req);
				st->req = 0;
				r = NULL;
			} else {
				st->begun = true;
			}
		}
	}
	if (r && st->begun) {
		if (f->tail_len && web_stream_bytes(r, f->tail, f->tail_len) < 0) {
			kp_warn("relay: request %" PRIu64 ": cannot queue %zu bytes of the answer", st->req,
				f->tail_len);
			st->req = 0;
		} else if (q->done) {
			web_stream_end(r);
		}
	}
	if (q->done)
		free(st);
}

uint32_t webd_relay_send(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
			 webd_answer_cb cb, void *arg)
{
	uint32_t id = webd_answer_expect(kp_Peer_PEER_RECORDERD, cb, arg);
	if (id == 0) {
		web_reply_error(r, 503, "busy", "too many questions waiting for recorderd");
		return 0;
	}
	*id_field = id;
	struct webd *d = web_req_app(r);
	int rc = kp_worker_send_peer(d->worker, kp_Peer_PEER_RECORDERD, env, tail, len);
	if (rc < 0) {
		webd_answer_cancel(id);
		kp_warn("relay: cannot send a question to recorderd: %s", strerror(-rc));
		web_reply_error(r, 503, "recorderd_unavailable", "recorderd cannot be reached: %s", strerror(-rc));
		return 0;
	}
	return id;
}

void webd_relay(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
		const char *extra_headers)
{
	struct relay *st = calloc(1, sizeof(*st));
	if (!st) {
		web_reply_error(r, 503, "out_of_memory", "out of memory");
		return;
	}
	st->req = web_req_id(r);
	if (extra_headers && strlen(extra_headers) < sizeof(st->extra))
		strcpy(st->extra, extra_headers);
	if (webd_relay_send(r, env, id_field, tail, len, relay_cb, st) == 0)
		free(st);
}
