/* Events on the loop thread (see events.h). */
#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_events.h"
#include "event_check.h"
#include "event_terms.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "reply.h"
#include "tier_events.h"

#define REASONS_MAX 16

static struct {
	struct kp_worker *w;
	struct cat *cat;
	struct rec_committer *commit;
	void (*arm)(const char *camera, int64_t event_end_ms);
	uv_async_t done;
	int open;
	unsigned inflight;
	uint64_t inflight_bytes;
	uint64_t committed_analysis, committed_camera, fanout_lost, camera_dropped;
	struct {
		char code[32];
		uint64_t n;
	} rejected[REASONS_MAX];
} E;

static void count_reject(const char *code)
{
	for (int i = 0; i < REASONS_MAX; i++) {
		if (!E.rejected[i].code[0])
			snprintf(E.rejected[i].code, sizeof E.rejected[i].code, "%s", code);
		if (!strcmp(E.rejected[i].code, code)) {
			E.rejected[i].n++;
			return;
		}
	}
}

static void reject(kp_Peer to, uint32_t id, kp_CatalogResult result, const char *code, const char *why)
{
	count_reject(code);
	rec_reply_error(to, id, result, code, "%s", why);
}

/* The EventCommitted is sent as the message itself (kp_frame_msg), without an envelope
 * to clear and copy, from the record's bytes encoded once at commit. */
static void fan_out(const struct rec_job *j)
{
	static uint8_t body[kp_EventCommitted_size];
	static kp_EventCommitted ec;
	struct kp_frame_msg m = {.which = kp_Envelope_event_committed_tag, .body = body};
	if (rec_job_committed_encode(j, body, sizeof body, &m.body_len) < 0) {
		/* Its bytes were not kept (no memory then): encoded from the record. */
		ec.has_event = true;
		ec.event = j->ev;
		memcpy(ec.keyframes, j->keyframes, sizeof j->keyframes);
		ec.keyframes_count = j->nkeyframes;
		m = (struct kp_frame_msg){
		    .which = kp_Envelope_event_committed_tag, .fields = kp_EventCommitted_fields, .msg = &ec};
	}
	int r = kp_worker_send_peer_msg(E.w, kp_Peer_PEER_WEBD, &m, j->jpeg, j->jpeg ? j->jpeg_len : 0);
	if (r < 0)
		E.fanout_lost++;
}

static void finish(struct rec_job *j)
{
	E.inflight--;
	E.inflight_bytes -= j->jpeg_len;
	if (j->kind == REC_JOB_EVENT && j->state == REC_JOB_DONE) {
		if (j->asker == kp_Peer_PEER_NONE)
			E.committed_camera++;
		else
			E.committed_analysis++;
		fan_out(j);
		if (j->jpeg_len)
			rec_tier_events_stored(j->ev.start_ms);
	} else if (j->kind == REC_JOB_EVENT) {
		count_reject(j->code);
		if (j->asker == kp_Peer_PEER_NONE)
			kp_warn("%s: camera event %s not stored: %s", j->ev.camera, j->ev.event_id, j->why);
	}
	if (j->asker == kp_Peer_PEER_NONE)
		return;
	if (j->state != REC_JOB_DONE) {
		rec_reply_error(j->asker, j->query_id, j->result, j->code, "%s", j->why);
	} else if (j->kind == REC_JOB_EVENT) {
		/* Only its ack member is set: the record's union is sized for its largest kind. */
		static kp_CatalogRecord ack;
		static struct catrec_buf b; /* its memory kept from one acknowledgement to the next */
		ack.which_rec = kp_CatalogRecord_ack_tag;
		ack.rec.ack = (kp_CatalogAck){.revision = j->ev.revision, .committed_ms = j->ev.committed_ms};
		memcpy(ack.rec.ack.event_id, j->ev.event_id, sizeof ack.rec.ack.event_id);
		if (!b.max)
			catrec_init(&b, 256);
		catrec_reset(&b);
		if (catrec_add(&b, &ack) < 0)
			rec_reply_error(j->asker, j->query_id, kp_CatalogResult_CATALOG_FAILED, "encode_failed",
					"the acknowledgement did not fit");
		else
			rec_reply_records(j->asker, j->query_id, &b);
	} else {
		rec_reply(j->asker, j->query_id, kp_CatalogBody_CATALOG_BODY_RECORDS, j->body, j->body_len);
	}
}

static void on_done(uv_async_t *h)
{
	(void)h;
	struct rec_job *j = rec_commit_take_done(E.commit), *n;
	/* The answers and fan-outs of a pass leave in a few sendmsg calls, not two each. */
	kp_worker_cork_peer(E.w, kp_Peer_PEER_WEBD, 1);
	for (; j; j = n) {
		n = j->next;
		if (E.open)
			finish(j);
		rec_job_free(j);
	}
	kp_worker_cork_peer(E.w, kp_Peer_PEER_WEBD, 0);
}

static void wake(void *arg)
{
	uv_async_send(arg);
}

void rec_events_open(struct kp_worker *w, struct cat *cat, struct rec_committer *commit,
		     void (*arm)(const char *camera, int64_t event_end_ms))
{
	E.arm = arm;
	E.w = w;
	E.cat = cat;
	E.commit = commit;
	E.inflight = 0; /* a new committer holds no job */
	E.inflight_bytes = 0;
	uv_async_init(kp_worker_loop(w), &E.done, on_done);
	rec_commit_on_done(commit, wake, &E.done);
	E.open = 1;
}

void rec_events_finish(void)
{
	if (E.open)
		on_done(&E.done);
}

void rec_events_close(void)
{
	if (!E.open)
		return;
	E.open = 0;
	rec_commit_on_done(E.commit, NULL, NULL);
	uv_close((uv_handle_t *)&E.done, NULL);
}

static int busy(size_t bytes)
{
	return E.inflight >= REC_EVENTS_INFLIGHT || E.inflight_bytes + bytes > REC_EVENTS_INFLIGHT_BYTES;
}

static void push(struct rec_job *j)
{
	E.inflight++;
	E.inflight_bytes += j->jpeg_len;
	rec_commit_job(E.commit, j);
}

static int floats_ok(const kp_EventRecord *ev)
{
	for (pb_size_t i = 0; i < ev->labels_count; i++)
		if (!(ev->labels[i].score >= 0 && ev->labels[i].score <= 1))
			return 0;
	for (pb_size_t i = 0; i < ev->boxes_count; i++) {
		const kp_EventBox *b = &ev->boxes[i];
		if (!(b->x >= 0 && b->x <= 1 && b->y >= 0 && b->y <= 1 && b->w >= 0 && b->w <= 1 && b->h >= 0 &&
		      b->h <= 1 && b->score >= 0 && b->score <= 1))
			return 0;
	}
	return 1;
}

void rec_event_publish(kp_Peer from, const kp_EventPublish *p, const uint8_t *jpeg, size_t len)
{
	if (!E.open) {
		rec_reply_error(from, p->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "no_catalog",
				"recorderd has no catalog open (see its log)");
		return;
	}
	const kp_EventRecord *ev = &p->event;
	struct rec_reject rej;
	if (!p->has_event || rec_event_id_ok(ev->event_id) < 0) {
		reject(from, p->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_event_id",
		       "the event id must be 1 to 64 of A-Z a-z 0-9 . _ : -");
		return;
	}
	if (!ev->revision) {
		reject(from, p->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_revision",
		       "the revision must be 1 or more");
		return;
	}
	if (ev->stream > 1) {
		reject(from, p->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_request",
		       "stream must be 0 (main) or 1 (sub)");
		return;
	}
	if (!floats_ok(ev)) {
		reject(from, p->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_request",
		       "scores and box coordinates must be numbers from 0 to 1");
		return;
	}
	if (rec_event_times_check(ev->start_ms, ev->end_ms, kp_wall_ms(), &rej) < 0) {
		reject(from, p->id, rej.result, rej.code, rej.why);
		return;
	}
	uint32_t width = 0, height = 0;
	if (len && rec_jpeg_check(jpeg, len, &width, &height, &rej) < 0) {
		reject(from, p->id, rej.result, rej.code, rej.why);
		return;
	}
	struct cat_txn *t;
	uint32_t camera_id = 0, stored = 0;
	int r = cat_begin(E.cat, 0, &t);
	if (r == 0) {
		r = cat_camera_lookup(t, ev->camera, &camera_id, NULL);
		if (r == 0)
			r = cat_event_revision(t, ev->event_id, &stored);
		cat_abort(t);
	}
	if (r == -ENOENT) {
		char why[128];
		snprintf(why, sizeof why, "camera \"%s\" is not configured", ev->camera);
		reject(from, p->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "unknown_camera", why);
		return;
	}
	if (r < 0) {
		rec_reply_error(from, p->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"catalog read failed: %s", strerror(-r));
		return;
	}
	if (ev->revision <= stored) {
		char why[128];
		snprintf(why, sizeof why, "event %s has revision %u; publish a higher one", ev->event_id,
			 (unsigned)stored);
		reject(from, p->id, kp_CatalogResult_CATALOG_CONFLICT, "revision_conflict", why);
		return;
	}
	if (ev->revision - stored > KP_EVENT_REVISION_STEP_MAX) {
		/* A jump to 4294967295 would leave the detector nothing higher to publish. */
		char why[160];
		snprintf(why, sizeof why, "event %s has revision %u; the next may be at most %u higher", ev->event_id,
			 (unsigned)stored, (unsigned)KP_EVENT_REVISION_STEP_MAX);
		reject(from, p->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_revision", why);
		return;
	}
	if (busy(len)) {
		reject(from, p->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
		       "too many publications wait for their commit; retry shortly");
		return;
	}
	struct rec_job *j = calloc(1, sizeof *j);
	if (j && len) {
		j->jpeg = malloc(len);
		if (!j->jpeg) {
			free(j);
			j = NULL;
		}
	}
	if (!j) {
		rec_reply_error(from, p->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
				"recorderd is out of memory");
		return;
	}
	j->kind = REC_JOB_EVENT;
	j->asker = from;
	j->query_id = p->id;
	j->camera_id = camera_id;
	j->ev = *ev;
	if (len)
		memcpy(j->jpeg, jpeg, len);
	j->jpeg_len = len;
	j->ev.jpeg_width = width;
	j->ev.jpeg_height = height;
	j->ev.has_jpeg = len != 0;
	if (!j->ev.end_ms)
		j->ev.end_ms = j->ev.start_ms;
	snprintf(j->ev.source, sizeof j->ev.source, "analysis");
	E.arm(j->ev.camera, j->ev.end_ms);
	push(j);
}

/* Labels of an alarm: the camera's comma-separated types as they are ("dog_cat" stays
 * one label), else its kind. */
static void alarm_labels(kp_EventRecord *ev, const kp_CameraEvent *e)
{
	char list[sizeof e->labels];
	snprintf(list, sizeof list, "%s", e->labels);
	for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok && ev->labels_count < 16;
	     tok = strtok_r(NULL, ", ", &save))
		if (strlen(tok) < sizeof ev->labels[0].name)
			snprintf(ev->labels[ev->labels_count++].name, sizeof ev->labels[0].name, "%s", tok);
	if (!ev->labels_count)
		snprintf(ev->labels[ev->labels_count++].name, sizeof ev->labels[0].name, "%s",
			 e->kind[0] ? e->kind : "motion");
	for (pb_size_t i = 0; i < ev->labels_count; i++)
		ev->labels[i].score = 1;
}

void rec_event_camera(const kp_CameraEvent *e)
{
	if (!E.open)
		return;
	struct cat_txn *t;
	uint32_t camera_id = 0;
	int r = cat_begin(E.cat, 0, &t);
	if (r == 0) {
		r = cat_camera_lookup(t, e->camera, &camera_id, NULL);
		cat_abort(t);
	}
	struct rec_job *j = r == 0 && !busy(0) ? calloc(1, sizeof *j) : NULL;
	if (!j) {
		E.camera_dropped++;
		kp_warn("%s: %s alarm not stored: %s", e->camera, e->kind, r < 0 ? strerror(-r) : "too busy");
		return;
	}
	j->kind = REC_JOB_EVENT;
	j->asker = kp_Peer_PEER_NONE;
	j->camera_id = camera_id;
	kp_EventRecord *ev = &j->ev;
	snprintf(ev->event_id, sizeof ev->event_id, "%s.%s.%lld", e->camera, e->kind[0] ? e->kind : "motion",
		 (long long)e->wall_ms);
	if (rec_event_id_ok(ev->event_id) < 0)
		snprintf(ev->event_id, sizeof ev->event_id, "camera.%u.%lld", (unsigned)camera_id,
			 (long long)e->wall_ms);
	ev->revision = 1;
	snprintf(ev->camera, sizeof ev->camera, "%s", e->camera);
	ev->start_ms = e->wall_ms;
	ev->end_ms = e->wall_ms;
	snprintf(ev->source, sizeof ev->source, "camera");
	alarm_labels(ev, e);
	if (e->kind[0] && ev->attributes_count < 16) {
		kp_EventAttribute *a = &ev->attributes[ev->attributes_count++];
		snprintf(a->key, sizeof a->key, "kind");
		snprintf(a->value, sizeof a->value, "%s", e->kind);
	}
	push(j);
}

void rec_event_delete(kp_Peer from, const kp_DeleteRequest *d)
{
	if (!E.open) {
		rec_reply_error(from, d->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "no_catalog",
				"recorderd has no catalog open (see its log)");
		return;
	}
	if (busy(0)) {
		rec_reply_error(from, d->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
				"too many catalog changes wait for their commit");
		return;
	}
	struct rec_job *j = calloc(1, sizeof *j);
	if (j && !(j->del = malloc(sizeof *j->del))) {
		free(j);
		j = NULL;
	}
	if (!j) {
		rec_reply_error(from, d->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
				"recorderd is out of memory");
		return;
	}
	j->kind = REC_JOB_DELETE;
	j->asker = from;
	j->query_id = d->id;
	*j->del = *d;
	kp_info("delete asked by %s: %u recordings, %u events", d->principal[0] ? d->principal : "(unnamed)",
		(unsigned)d->recordings_count, (unsigned)d->events_count);
	push(j);
}

void rec_events_metrics(struct jbuf *b)
{
	jb_printf(b,
		  "# HELP keeppeek_recorderd_events_committed_total Event revisions durably committed.\n"
		  "# TYPE keeppeek_recorderd_events_committed_total counter\n"
		  "keeppeek_recorderd_events_committed_total{source=\"analysis\"} %llu\n"
		  "keeppeek_recorderd_events_committed_total{source=\"camera\"} %llu\n",
		  (unsigned long long)E.committed_analysis, (unsigned long long)E.committed_camera);
	jb_printf(b, "# HELP keeppeek_recorderd_events_rejected_total Publications refused, by error code.\n"
		     "# TYPE keeppeek_recorderd_events_rejected_total counter\n");
	for (int i = 0; i < REASONS_MAX && E.rejected[i].code[0]; i++)
		jb_printf(b, "keeppeek_recorderd_events_rejected_total{reason=\"%s\"} %llu\n", E.rejected[i].code,
			  (unsigned long long)E.rejected[i].n);
	jb_printf(b,
		  "# HELP keeppeek_recorderd_event_fanout_lost_total EventCommitted messages webd could not be "
		  "sent.\n"
		  "# TYPE keeppeek_recorderd_event_fanout_lost_total counter\n"
		  "keeppeek_recorderd_event_fanout_lost_total %llu\n"
		  "# HELP keeppeek_recorderd_camera_alarms_dropped_total Camera alarms not stored (busy, unknown "
		  "camera).\n"
		  "# TYPE keeppeek_recorderd_camera_alarms_dropped_total counter\n"
		  "keeppeek_recorderd_camera_alarms_dropped_total %llu\n"
		  "# HELP keeppeek_recorderd_events_inflight Jobs waiting for their commit.\n"
		  "# TYPE keeppeek_recorderd_events_inflight gauge\n"
		  "keeppeek_recorderd_events_inflight %u\n",
		  (unsigned long long)E.fanout_lost, (unsigned long long)E.camera_dropped, E.inflight);
}
