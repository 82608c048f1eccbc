/* Relays a question to recorderd and its CatalogReply pieces back as the HTTP answer. */
#include "relay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_records.h"
#include "log.h"

struct relay {
	uint64_t req;
	enum catj_kind kind;
	bool begun; /* the HTTP answer's head is out: pieces follow */
	bool json;  /* the body is records, rendered into json */
	struct catj render;
	char extra[128];
};

/* The JSON of the piece being relayed: every piece's text is passed on before the
 * callback returns, so one buffer serves every answer in flight. */
static char json_buf[CATJ_BUF_MIN];

int webd_catalog_status(kp_CatalogResult result)
{
	switch (result) {
	case kp_CatalogResult_CATALOG_OK:
		return 200;
	case kp_CatalogResult_CATALOG_BAD_REQUEST:
		return 400;
	case kp_CatalogResult_CATALOG_NOT_FOUND:
		return 404;
	case kp_CatalogResult_CATALOG_CONFLICT:
		return 409;
	case kp_CatalogResult_CATALOG_TOO_LARGE:
		return 413;
	case kp_CatalogResult_CATALOG_FAILED:
		return 500;
	case kp_CatalogResult_CATALOG_UNAVAILABLE:
		return 503;
	}
	return 502;
}

void webd_relay_error(struct web_req *r, const kp_CatalogReply *q)
{
	web_reply_error(r, webd_catalog_status(q->result), q->error_code[0] ? q->error_code : "error", "%s",
			q->why[0] ? q->why : "recorderd refused the request");
}

static const char *body_type(kp_CatalogBody body)
{
	switch (body) {
	case kp_CatalogBody_CATALOG_BODY_RECORDS:
		return "application/json";
	case kp_CatalogBody_CATALOG_BODY_JPEG:
		return "image/jpeg";
	case kp_CatalogBody_CATALOG_BODY_H264:
		return "video/h264";
	case kp_CatalogBody_CATALOG_BODY_H265:
		return "video/h265";
	case kp_CatalogBody_CATALOG_BODY_METRICS:
		return "text/plain; version=0.0.4";
	default:
		return "application/octet-stream";
	}
}

/* Passes the JSON written so far on (beginning a chunked answer first). */
static int flush(struct relay *st, struct web_req *r)
{
	size_t n;
	const char *text = catj_text(&st->render, &n);
	if (!st->begun) {
		if (web_stream_begin(r, 200, "application/json", UINT64_MAX, st->extra[0] ? st->extra : NULL) < 0)
			return -EIO;
		st->begun = true;
	}
	int rc = n ? web_stream_bytes(r, text, n) : 0;
	catj_take(&st->render);
	return rc < 0 ? -EIO : 0;
}

struct piece {
	struct relay *st;
	struct web_req *r;
};

static int render_one(void *arg, const kp_CatalogRecord *rec)
{
	struct piece *p = arg;
	if (catj_full(&p->st->render) && flush(p->st, p->r) < 0)
		return -EIO;
	return catj_record(&p->st->render, rec);
}

/* The piece's records as JSON: passed on, or with the last piece and nothing passed on
 * yet, answered whole with its length. */
static int relay_records(struct relay *st, struct web_req *r, const struct kp_ipc_frame *f, bool done)
{
	static kp_CatalogRecord rec;
	st->render.w.buf = json_buf;
	st->render.w.cap = sizeof json_buf;
	struct piece p = {.st = st, .r = r};
	int rc = catrec_each(f->tail, f->tail_len, &rec, render_one, &p);
	if (rc == 0 && done)
		rc = catj_end(&st->render);
	if (rc < 0) {
		kp_warn("relay: request %" PRIu64 ": recorderd's answer does not render: %s", st->req, strerror(-rc));
		if (!st->begun)
			web_reply_error(r, 502, "bad_answer", "recorderd's answer does not read");
		return rc;
	}
	if (done && !st->begun) {
		size_t n;
		const char *text = catj_text(&st->render, &n);
		web_reply(r, 200, "application/json", text, n, st->extra[0] ? st->extra : NULL);
		catj_take(&st->render);
		return 1;
	}
	return flush(st, r);
}

/* The first piece: an error, or the head of the answer. 0 to go on, else r is done. */
static int relay_first(struct relay *st, struct web_req *r, const struct kp_ipc_frame *f)
{
	const kp_CatalogReply *q = &f->env->msg.catalog_reply;
	if (q->result != kp_CatalogResult_CATALOG_OK) {
		webd_relay_error(r, q);
		return 1;
	}
	st->json = q->body == kp_CatalogBody_CATALOG_BODY_RECORDS;
	if (st->json) {
		catj_begin(&st->render, st->kind, json_buf, sizeof json_buf);
		return 0;
	}
	uint64_t total = q->total_len ? q->total_len : (q->done ? f->tail_len : UINT64_MAX);
	if (q->span_to_ms > q->span_from_ms)
		snprintf(st->extra, sizeof st->extra, "Keyframe-Time: %" PRId64 "\r\nKeyframe-Until: %" PRId64 "\r\n",
			 q->span_from_ms, q->span_to_ms);
	if (web_stream_begin(r, 200, body_type(q->body), total, st->extra[0] ? st->extra : NULL) < 0) {
		kp_warn("relay: request %" PRIu64 ": cannot begin the answer", st->req);
		return -EIO;
	}
	st->begun = true;
	return 0;
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
	if (f->env->which_msg != kp_Envelope_catalog_reply_tag) {
		if (r && !st->begun)
			web_reply_error(r, 502, "bad_answer", "recorderd answered with an unexpected message");
		st->req = 0;
		return;
	}
	const kp_CatalogReply *q = &f->env->msg.catalog_reply;
	bool first = !st->begun && !st->json;
	int rc = r && first ? relay_first(st, r, f) : 0;
	if (r && rc == 0 && st->json) {
		rc = relay_records(st, r, f, q->done);
	} else if (r && rc == 0 && f->tail_len && web_stream_bytes(r, f->tail, f->tail_len) < 0) {
		kp_warn("relay: request %" PRIu64 ": cannot queue %zu bytes of the answer", st->req, f->tail_len);
		rc = -EIO;
	}
	if (r && rc == 0 && q->done)
		web_stream_end(r);
	if (rc != 0)
		st->req = 0;
	if (q->done)
		free(st);
}

/* Questions to recorderd asked in one loop iteration (the requests of every connection
 * that became readable) leave together: the link is corked at the first and uncorked by
 * a check handle after the iteration's I/O callbacks, so that they take a few sendmsg
 * calls and recorderd a few wake-ups instead of one each. */
static struct {
	uv_check_t check;
	struct kp_worker *worker;
	bool open, corked;
} batch;

static void uncork(uv_check_t *h)
{
	uv_check_stop(h);
	batch.corked = false;
	kp_worker_cork_peer(batch.worker, kp_Peer_PEER_RECORDERD, 0);
}

static void cork(struct kp_worker *w)
{
	if (batch.corked)
		return;
	if (!batch.open) {
		if (uv_check_init(kp_worker_loop(w), &batch.check) < 0)
			return; /* sent one by one */
		batch.open = true;
	}
	if (uv_check_start(&batch.check, uncork) < 0)
		return;
	batch.worker = w;
	batch.corked = true;
	kp_worker_cork_peer(w, kp_Peer_PEER_RECORDERD, 1);
}

void webd_relay_close(void)
{
	if (batch.corked)
		uncork(&batch.check);
	if (batch.open)
		uv_close((uv_handle_t *)&batch.check, NULL);
	batch.open = false;
}

uint32_t webd_relay_send_msg(struct web_req *r, const struct kp_frame_msg *m, uint32_t *id_field, const void *tail,
			     size_t len, webd_answer_cb cb, void *arg)
{
	uint32_t id = webd_answer_expect(kp_Peer_PEER_RECORDERD, cb, arg);
	if (id == 0) {
		web_reply_error(r, 503, "busy", "too many questions waiting for recorderd");
		return 0;
	}
	*id_field = id;
	struct webd *d = web_req_app(r);
	cork(d->worker);
	int rc = kp_worker_send_peer_msg(d->worker, kp_Peer_PEER_RECORDERD, m, tail, len);
	if (rc < 0) {
		webd_answer_cancel(id);
		kp_warn("relay: cannot send a question to recorderd: %s", strerror(-rc));
		web_reply_error(r, 503, "recorderd_unavailable", "recorderd cannot be reached: %s", strerror(-rc));
		return 0;
	}
	return id;
}

uint32_t webd_relay_send(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
			 webd_answer_cb cb, void *arg)
{
	struct kp_frame_msg m;
	if (kp_frame_msg_of(env, &m) < 0) {
		kp_err("relay: message %u is not one an envelope can carry", (unsigned)env->which_msg);
		web_reply_error(r, 500, "internal", "cannot encode the question to recorderd");
		return 0;
	}
	return webd_relay_send_msg(r, &m, id_field, tail, len, cb, arg);
}

void webd_relay(struct web_req *r, kp_Envelope *env, uint32_t *id_field, enum catj_kind kind, const char *extra_headers)
{
	struct relay *st = calloc(1, sizeof(*st));
	if (!st) {
		web_reply_error(r, 503, "out_of_memory", "out of memory");
		return;
	}
	st->req = web_req_id(r);
	st->kind = kind;
	if (extra_headers && strlen(extra_headers) < sizeof(st->extra))
		strcpy(st->extra, extra_headers);
	if (webd_relay_send(r, env, id_field, NULL, 0, relay_cb, st) == 0)
		free(st);
}
