/* POST /api/v1/events (publish: JSON, multipart or protobuf, the JPEG checked here
 * before anything goes to recorderd, answered only after recorderd's durable commit),
 * GET /api/v1/events (search) and GET /api/v1/events/{id}[/snapshot|/thumbnail|
 * /keyframe?stream=] (event parts). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <pb_encode.h>

#include "analysis.pb.h"
#include "catalog_records.h"
#include "log.h"
#include "params.h"
#include "publish.h"
#include "relay.h"
#include "routes_data.h"

#define ACK_MAX 1024

enum body_kind { BODY_JSON, BODY_MULTIPART, BODY_PROTO };

struct publish_state {
	uint64_t req;
	bool proto_answer;
	bool overflow;
	size_t len;
	uint8_t body[ACK_MAX];
};

static bool ct_is(const char *ct, const char *type)
{
	size_t n = strlen(type);
	return strncasecmp(ct, type, n) == 0 && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

static int take_ack(void *arg, const kp_CatalogRecord *rec)
{
	kp_CatalogAck *ack = arg;
	if (rec->which_rec != kp_CatalogRecord_ack_tag)
		return -EBADMSG;
	*ack = rec->rec.ack;
	return 0;
}

/* recorderd's CatalogAck as a PublishAck. */
static void reply_proto_ack(struct web_req *r, const struct publish_state *st)
{
	static kp_CatalogRecord rec;
	kp_CatalogAck got = kp_CatalogAck_init_zero;
	if (catrec_each(st->body, st->len, &rec, take_ack, &got) < 0 || !got.event_id[0]) {
		kp_err("publish: recorderd's acknowledgement does not read (%zu bytes)", st->len);
		web_reply_error(r, 502, "bad_answer", "recorderd's acknowledgement does not read");
		return;
	}
	keeppeek_analysis_PublishAck ack = keeppeek_analysis_PublishAck_init_zero;
	_Static_assert(sizeof ack.id >= sizeof got.event_id, "PublishAck.id holds an event id");
	memcpy(ack.id, got.event_id, sizeof got.event_id);
	ack.revision = got.revision;
	ack.committed_ms = got.committed_ms;
	uint8_t buf[keeppeek_analysis_PublishAck_size];
	pb_ostream_t out = pb_ostream_from_buffer(buf, sizeof(buf));
	if (!pb_encode(&out, keeppeek_analysis_PublishAck_fields, &ack)) {
		kp_err("publish: cannot encode a PublishAck: %s", PB_GET_ERROR(&out));
		web_reply_error(r, 500, "encode_failed", "cannot encode the acknowledgement");
		return;
	}
	web_reply(r, 200, "application/x-protobuf", buf, out.bytes_written, NULL);
}

/* recorderd's CatalogAck as {"id","revision","committed_ms"}. */
static void reply_json_ack(struct web_req *r, const struct publish_state *st)
{
	char json[ACK_MAX];
	long n = catj_render(CATJ_ACK, st->body, st->len, json, sizeof json);
	if (n < 0) {
		kp_err("publish: recorderd's acknowledgement does not render: %s", strerror((int)-n));
		web_reply_error(r, 502, "bad_answer", "recorderd's acknowledgement does not read");
		return;
	}
	web_reply(r, 200, "application/json", json, (size_t)n, NULL);
}

static void publish_cb(void *arg, struct kp_ipc_frame *f)
{
	struct publish_state *st = arg;
	struct web_req *r = web_req_find(st->req);
	if (!f) {
		if (r)
			web_reply_error(r, 504, "no_answer", "recorderd did not confirm the commit in time");
		free(st);
		return;
	}
	if (f->env->which_msg != kp_Envelope_catalog_reply_tag)
		return;
	const kp_CatalogReply *q = &f->env->msg.catalog_reply;
	if (st->len + f->tail_len > sizeof(st->body))
		st->overflow = true;
	else if (f->tail_len) { /* an error has no tail */
		memcpy(st->body + st->len, f->tail, f->tail_len);
		st->len += f->tail_len;
	}
	if (!q->done)
		return;
	if (r) {
		if (q->result != kp_CatalogResult_CATALOG_OK)
			webd_relay_error(r, q);
		else if (st->overflow)
			web_reply_error(r, 502, "bad_answer", "recorderd's acknowledgement is too long");
		else if (st->proto_answer)
			reply_proto_ack(r, st);
		else
			reply_json_ack(r, st);
	}
	free(st);
}

void webd_route_events_publish(struct web_req *r)
{
	static uint8_t *jpeg_buf;
	static struct webd_publish p;
	static kp_EventPublish pub; /* the message itself: no envelope to clear and copy */
	const char *ct = web_req_header(r, "content-type");
	enum body_kind kind;
	if (ct && ct_is(ct, "application/json"))
		kind = BODY_JSON;
	else if (ct && ct_is(ct, "multipart/form-data"))
		kind = BODY_MULTIPART;
	else if (ct && (ct_is(ct, "application/x-protobuf") || ct_is(ct, "application/protobuf")))
		kind = BODY_PROTO;
	else {
		web_reply_error(r, 415, "unsupported_media_type",
				"Content-Type must be application/json, multipart/form-data or application/x-protobuf");
		return;
	}
	if (!jpeg_buf && !(jpeg_buf = malloc(KP_ANALYSIS_JPEG_MAX))) {
		kp_err("publish: out of memory for the %u-byte JPEG buffer", (unsigned)KP_ANALYSIS_JPEG_MAX);
		web_reply_error(r, 503, "out_of_memory", "out of memory");
		return;
	}
	memset(&p, 0, sizeof(p));
	p.jpeg_buf = jpeg_buf;
	p.jpeg_cap = KP_ANALYSIS_JPEG_MAX;
	size_t len;
	const uint8_t *body = web_req_body(r, &len);
	struct publish_err e = {0};
	int rc;
	if (kind == BODY_JSON)
		rc = webd_publish_json(body, len, &p, &e);
	else if (kind == BODY_MULTIPART)
		rc = webd_publish_multipart(body, len, ct, &p, &e);
	else
		rc = webd_publish_proto(body, len, &p, &e);
	if (rc == 0 && p.jpeg)
		rc = webd_publish_jpeg_check(p.jpeg, p.jpeg_len, &p.ev.jpeg_width, &p.ev.jpeg_height, &e);
	if (rc < 0) {
		kp_info("publish from %s refused (%d %s): %s", web_req_client_addr(r), e.status, e.code, e.why);
		web_reply_error(r, e.status, e.code, "%s", e.why);
		return;
	}
	p.ev.has_jpeg = p.jpeg != NULL;
	snprintf(p.ev.source, sizeof(p.ev.source), "analysis");
	snprintf(p.ev.principal, sizeof(p.ev.principal), "%s", web_req_principal(r)->name);
	struct publish_state *st = calloc(1, sizeof(*st));
	if (!st) {
		web_reply_error(r, 503, "out_of_memory", "out of memory");
		return;
	}
	st->req = web_req_id(r);
	const char *accept = web_req_header(r, "accept");
	st->proto_answer = kind == BODY_PROTO && !(accept && strstr(accept, "application/json"));
	pub.id = 0;
	pub.has_event = true;
	pub.event = p.ev;
	struct kp_frame_msg m = {.which = kp_Envelope_event_publish_tag, .fields = kp_EventPublish_fields, .msg = &pub};
	if (webd_relay_send_msg(r, &m, &pub.id, p.jpeg, p.jpeg_len, publish_cb, st) == 0)
		free(st);
}

void webd_route_events_search(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_event_search_tag;
	kp_EventSearch *q = &env.msg.event_search;
	if (webd_param_str(r, "camera", false, q->camera, sizeof(q->camera)) < 0 ||
	    webd_param_ms(r, "from", false, &q->from_ms) < 0 || webd_param_ms(r, "to", false, &q->to_ms) < 0 ||
	    webd_param_str(r, "label", false, q->label, sizeof(q->label)) < 0 ||
	    webd_param_str(r, "q", false, q->q, sizeof(q->q)) < 0 || webd_param_uint(r, "limit", 500, &q->limit) < 0 ||
	    webd_param_str(r, "cursor", false, q->cursor, sizeof(q->cursor)) < 0)
		return;
	webd_relay(r, &env, &q->id, CATJ_SEARCH, NULL);
}

static bool event_id_ok(const char *s, size_t n)
{
	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == ':' || c == '-'))
			return false;
	}
	return true;
}

void webd_route_event_get(struct web_req *r)
{
	static const char prefix[] = "/api/v1/events/";
	const char *path = web_req_path(r);
	if (strncmp(path, prefix, sizeof(prefix) - 1) != 0) {
		web_reply_error(r, 404, "not_found", "no such route");
		return;
	}
	const char *id = path + sizeof(prefix) - 1;
	const char *slash = strchr(id, '/');
	size_t id_len = slash ? (size_t)(slash - id) : strlen(id);
	const char *part = slash ? slash + 1 : "";
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_event_get_tag;
	kp_EventGet *q = &env.msg.event_get;
	if (!event_id_ok(id, id_len)) {
		web_reply_error(r, 400, "bad_event_id", "event ids are 1 to 64 of A-Z a-z 0-9 . _ : -");
		return;
	}
	memcpy(q->event_id, id, id_len);
	if (!part[0])
		q->part = kp_EventPart_EVENT_PART_JSON;
	else if (strcmp(part, "snapshot") == 0)
		q->part = kp_EventPart_EVENT_PART_SNAPSHOT;
	else if (strcmp(part, "thumbnail") == 0)
		q->part = kp_EventPart_EVENT_PART_THUMBNAIL;
	else if (strcmp(part, "keyframe") == 0) {
		int32_t stream = 0;
		if (webd_param_stream(r, "stream", false, &stream) < 0)
			return;
		q->part = kp_EventPart_EVENT_PART_KEYFRAME;
		q->stream = (uint32_t)stream;
	} else {
		web_reply_error(r, 404, "not_found", "an event has the parts snapshot, thumbnail and keyframe");
		return;
	}
	webd_relay(r, &env, &q->id, CATJ_EVENT, NULL);
}
