/* /api/v1/live: every EventCommitted from recorderd goes to every subscriber as the JSON
 * envelope {"type":"event","event":{...},"jpeg_follows":bool} and then (when it follows)
 * the JPEG as one binary message. An event is built once and shared by reference.
 *
 * Each subscriber has its own queue of at most KP_LIVE_QUEUE_COMMANDS commands (one
 * command = an event's envelope + JPEG, or a notice) and KP_LIVE_QUEUE_BYTES reserved
 * bytes (the sum of the commands' message sizes, counted from enqueue until the server
 * has written them). A few commands at a time (LIVE_HANDOVER_*) are handed to the
 * server's send queue; delivery is observed through web_ws_queue_depth (polled by a
 * timer only while something is in flight). A command that does not fit drops every
 * command not yet handed over, counts them with itself, and queues
 * {"type":"resync","dropped":N}: a stalled subscriber costs at most its bound and never
 * delays the others; delivered + dropped is every event it subscribed to. An event
 * whose envelope + JPEG alone would not fit is sent without its JPEG
 * ("jpeg_follows":false; GET /api/v1/events/{id}/snapshot has it).
 *
 * Clients may send {"type":"subscribe","cameras":["front",...]} (empty or absent: all). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_json.h"
#include "json.h"
#include "kp_limits.h"
#include "log.h"
#include "webd.h"

#define LIVE_MAX_FILTER  KP_MAX_CAMERAS
#define LIVE_POLL_MS     2
#define LIVE_POLL_MAX_MS 64
#define LIVE_MAX_SUBS    KP_HTTP_MAX_CONNECTIONS
#define LIVE_FILTER_TOKS (2 * LIVE_MAX_FILTER + 16)
/* The server's queue holds only what this file handed over, which the reservation
 * bounds already; its own count adds up to 10 bytes of frame header per message. */
#define LIVE_WS_ITEMS (2 * KP_LIVE_QUEUE_COMMANDS + 1)
#define LIVE_WS_BYTES (KP_LIVE_QUEUE_BYTES + 10 * LIVE_WS_ITEMS)
/* At most this much is handed to the server at a time (at least one command); the rest
 * stays here, where it can be dropped. */
#define LIVE_HANDOVER_COMMANDS 8
#define LIVE_HANDOVER_BYTES    (1 * KP_MIB)
/* A notice ({"type":"resync"|"error",...}) fits in this, and an event command leaves
 * room for one under the byte bound (its JPEG is omitted otherwise), so that after a
 * drop the notice always fits: at most LIVE_HANDOVER_COMMANDS commands remain. */
#define LIVE_NOTICE_MAX 64

struct live_msg {
	unsigned refs;
	char camera[KP_CAMERA_NAME_MAX + 1]; /* empty: for every subscriber */
	size_t json_len;
	size_t jpeg_len;  /* 0: no binary message */
	uint64_t dropped; /* a resync notice: the events it reports */
	uint8_t *jpeg;
	char json[];
};

struct live_sub {
	uint64_t ws_id;
	struct live_sub *next;
	struct live_msg *q[KP_LIVE_QUEUE_COMMANDS];
	unsigned head, count;
	unsigned handed;      /* commands from head already in the server's queue */
	unsigned handed_msgs; /* their WebSocket messages */
	size_t handed_bytes;  /* and bytes */
	bool failed;          /* closed after a send failure: nothing more goes to it */
	size_t reserved;      /* bytes of the queued commands */
	unsigned nfilter;
	char filter[LIVE_MAX_FILTER][KP_CAMERA_NAME_MAX + 1];
};

static struct {
	struct live_sub *subs;
	unsigned nsubs;
	uv_timer_t poll;
	bool poll_init;
	bool polling;
	uint64_t poll_ms; /* the timer's period: LIVE_POLL_MS, doubled while nothing moves */
	uint64_t events, delivered, dropped, resyncs, jpeg_omitted;
	unsigned hw_commands;
	size_t hw_bytes;
} L;

static size_t msg_size(const struct live_msg *m)
{
	return m->json_len + m->jpeg_len;
}

static unsigned msg_count(const struct live_msg *m)
{
	return m->jpeg_len ? 2 : 1;
}

static void msg_unref(struct live_msg *m)
{
	if (--m->refs == 0) {
		free(m->jpeg);
		free(m);
	}
}

static struct live_msg *msg_new(const char *json, size_t json_len, const char *camera)
{
	struct live_msg *m = malloc(sizeof(*m) + json_len + 1);
	if (!m)
		return NULL;
	memset(m, 0, sizeof(*m));
	m->refs = 1;
	snprintf(m->camera, sizeof(m->camera), "%s", camera);
	m->json_len = json_len;
	memcpy(m->json, json, json_len);
	m->json[json_len] = 0;
	return m;
}

static struct live_msg *q_at(const struct live_sub *s, unsigned i)
{
	return s->q[(s->head + i) % KP_LIVE_QUEUE_COMMANDS];
}

static void q_pop(struct live_sub *s)
{
	struct live_msg *m = s->q[s->head];
	s->q[s->head] = NULL;
	s->head = (s->head + 1) % KP_LIVE_QUEUE_COMMANDS;
	s->count--;
	s->reserved -= msg_size(m);
	msg_unref(m);
}

static void q_push(struct live_sub *s, struct live_msg *m)
{
	m->refs++;
	s->q[(s->head + s->count) % KP_LIVE_QUEUE_COMMANDS] = m;
	s->count++;
	s->reserved += msg_size(m);
	if (s->count > L.hw_commands)
		L.hw_commands = s->count;
	if (s->reserved > L.hw_bytes)
		L.hw_bytes = s->reserved;
}

static struct live_sub *sub_of(uint64_t ws_id)
{
	for (struct live_sub *s = L.subs; s; s = s->next)
		if (s->ws_id == ws_id)
			return s;
	return NULL;
}

/* Retires the handed-over commands the server has written; true when there were any. */
static bool retire(struct live_sub *s, struct web_ws *ws)
{
	bool moved = false;
	unsigned items;
	size_t bytes;
	web_ws_queue_depth(ws, &items, &bytes);
	unsigned written = s->handed_msgs > items ? s->handed_msgs - items : 0;
	while (s->handed > 0 && written >= msg_count(q_at(s, 0))) {
		struct live_msg *m = q_at(s, 0);
		written -= msg_count(m);
		s->handed_msgs -= msg_count(m);
		s->handed_bytes -= msg_size(m);
		s->handed--;
		L.delivered++;
		q_pop(s);
		moved = true;
	}
	return moved;
}

/* Hands over what fits (at least one command when none is handed); -1 when the
 * subscriber failed. */
static int hand_over(struct live_sub *s, struct web_ws *ws)
{
	while (s->handed < s->count) {
		struct live_msg *m = q_at(s, s->handed);
		if (s->handed > 0 &&
		    (s->handed >= LIVE_HANDOVER_COMMANDS || s->handed_bytes + msg_size(m) > LIVE_HANDOVER_BYTES))
			break;
		int rc = web_ws_send(ws, false, m->json, m->json_len, LIVE_WS_ITEMS, LIVE_WS_BYTES);
		if (rc == 0 && m->jpeg_len)
			rc = web_ws_send(ws, true, m->jpeg, m->jpeg_len, LIVE_WS_ITEMS, LIVE_WS_BYTES);
		if (rc < 0) {
			kp_warn("live: subscriber %" PRIu64 " (%s): cannot queue a message: %s; closing it", s->ws_id,
				web_ws_client_addr(ws), strerror(-rc));
			s->failed = true;
			web_ws_close(ws, 1011, "live queue failure");
			return -1;
		}
		s->handed++;
		s->handed_msgs += msg_count(m);
		s->handed_bytes += msg_size(m);
	}
	return 0;
}

/* Retires what the server has written and hands over what fits, until the server keeps
 * what it was handed (a socket that takes everything at once drains the whole queue);
 * true when something was retired. */
static bool pump(struct live_sub *s)
{
	struct web_ws *ws = s->failed ? NULL : web_ws_find(s->ws_id);
	if (!ws)
		return false;
	bool moved = false;
	for (;;) {
		moved |= retire(s, ws);
		unsigned before = s->handed;
		if (hand_over(s, ws) < 0 || s->handed == before)
			return moved;
	}
}

static void poll_cb(uv_timer_t *t)
{
	bool busy = false, moved = false;
	for (struct live_sub *s = L.subs; s; s = s->next) {
		moved |= pump(s);
		if (s->handed > 0 && !s->failed)
			busy = true;
	}
	if (!busy) {
		uv_timer_stop(t);
		L.polling = false;
		return;
	}
	uint64_t next = moved ? LIVE_POLL_MS : L.poll_ms * 2 > LIVE_POLL_MAX_MS ? LIVE_POLL_MAX_MS : L.poll_ms * 2;
	if (next != L.poll_ms) {
		L.poll_ms = next;
		uv_timer_set_repeat(t, next);
	}
}

/* Polls every LIVE_POLL_MS from now (new work may drain at once). */
static void start_polling(void)
{
	if (L.polling && L.poll_ms == LIVE_POLL_MS)
		return;
	if (!L.poll_init)
		return;
	int rc = uv_timer_start(&L.poll, poll_cb, LIVE_POLL_MS, LIVE_POLL_MS);
	if (rc < 0) {
		kp_err("live: cannot start the delivery timer: %s", uv_strerror(rc));
		return;
	}
	L.polling = true;
	L.poll_ms = LIVE_POLL_MS;
}

/* Drops every command not yet handed over, then queues the resync notice; a notice
 * dropped with them passes its count on to the new one. */
static void resync(struct live_sub *s, uint64_t also_dropped)
{
	uint64_t events = also_dropped, carried = 0;
	while (s->count > s->handed) {
		unsigned last = (s->head + s->count - 1) % KP_LIVE_QUEUE_COMMANDS;
		struct live_msg *m = s->q[last];
		s->q[last] = NULL;
		s->count--;
		s->reserved -= msg_size(m);
		if (m->camera[0])
			events++;
		carried += m->dropped;
		msg_unref(m);
	}
	L.dropped += events;
	L.resyncs++;
	char buf[LIVE_NOTICE_MAX];
	int len = snprintf(buf, sizeof(buf), "{\"type\":\"resync\",\"dropped\":%" PRIu64 "}", events + carried);
	struct live_msg *m = msg_new(buf, (size_t)len, "");
	if (!m) {
		kp_err("live: subscriber %" PRIu64 ": out of memory for a resync notice", s->ws_id);
		return;
	}
	m->dropped = events + carried;
	if (s->count < KP_LIVE_QUEUE_COMMANDS && s->reserved + msg_size(m) <= KP_LIVE_QUEUE_BYTES)
		q_push(s, m);
	msg_unref(m);
}

static bool wants(const struct live_sub *s, const struct live_msg *m)
{
	if (s->nfilter == 0 || !m->camera[0])
		return true;
	for (unsigned i = 0; i < s->nfilter; i++)
		if (strcmp(s->filter[i], m->camera) == 0)
			return true;
	return false;
}

static void offer(struct live_sub *s, struct live_msg *m)
{
	if (!wants(s, m))
		return;
	if (s->count >= KP_LIVE_QUEUE_COMMANDS || s->reserved + msg_size(m) > KP_LIVE_QUEUE_BYTES)
		resync(s, 1);
	else
		q_push(s, m);
	pump(s);
	if (s->handed > 0 && !s->failed)
		start_polling();
}

void webd_live_init(uv_loop_t *loop)
{
	int rc = uv_timer_init(loop, &L.poll);
	if (rc < 0) {
		kp_err("live: cannot create the delivery timer: %s", uv_strerror(rc));
		return;
	}
	L.poll_init = true;
}

void webd_live_stop(void)
{
	if (L.poll_init)
		uv_close((uv_handle_t *)&L.poll, NULL);
	L.poll_init = false;
	L.polling = false;
}

void webd_live_on_event(struct kp_ipc_frame *f)
{
	if (!f->env->msg.event_committed.has_event) {
		kp_warn("live: an EventCommitted from recorderd without its event; not fanned out");
		return;
	}
	const kp_EventRecord *e = &f->env->msg.event_committed.event;
	static char json[KP_EVENT_JSON_MAX + 128];
	struct json_w w;
	bool jpeg_follows = f->tail_len > 0;
	if (jpeg_follows && f->tail_len + sizeof(json) + LIVE_NOTICE_MAX > KP_LIVE_QUEUE_BYTES) {
		jpeg_follows = false;
		L.jpeg_omitted++;
	}
	jw_init(&w, json, sizeof(json));
	jw_obj(&w);
	jw_key(&w, "type");
	jw_str(&w, "event");
	jw_key(&w, "event");
	kp_event_json(&w, e, f->tail_len, f->env->msg.event_committed.keyframes,
		      f->env->msg.event_committed.keyframes_count);
	jw_key(&w, "jpeg_follows");
	jw_bool(&w, jpeg_follows);
	jw_obj_end(&w);
	size_t len;
	if (jw_finish(&w, &len) < 0) {
		kp_err("live: event %s revision %u: its JSON does not fit %zu bytes; not fanned out", e->event_id,
		       (unsigned)e->revision, sizeof(json));
		return;
	}
	L.events++;
	if (!L.subs)
		return;
	struct live_msg *m = msg_new(json, len, e->camera);
	if (!m) {
		kp_err("live: event %s: out of memory for its envelope; not fanned out", e->event_id);
		return;
	}
	if (jpeg_follows) {
		m->jpeg = malloc(f->tail_len);
		if (!m->jpeg) {
			kp_err("live: event %s: out of memory for its %zu-byte JPEG; not fanned out", e->event_id,
			       f->tail_len);
			msg_unref(m);
			return;
		}
		memcpy(m->jpeg, f->tail, f->tail_len);
		m->jpeg_len = f->tail_len;
	}
	for (struct live_sub *s = L.subs; s; s = s->next)
		offer(s, m);
	msg_unref(m);
}

void webd_live_open(struct web_ws *ws)
{
	if (L.nsubs >= LIVE_MAX_SUBS) {
		web_ws_close(ws, 1013, "too many live subscribers");
		return;
	}
	struct live_sub *s = calloc(1, sizeof(*s));
	if (!s) {
		kp_err("live: out of memory for a subscriber from %s", web_ws_client_addr(ws));
		web_ws_close(ws, 1011, "out of memory");
		return;
	}
	s->ws_id = web_ws_id(ws);
	s->next = L.subs;
	L.subs = s;
	L.nsubs++;
	web_ws_set_user(ws, s);
}

/* A notice to one subscriber ({"type":"error",...}), in order with its events. */
static void reply_error(struct live_sub *s, const char *code)
{
	char buf[LIVE_NOTICE_MAX];
	int len = snprintf(buf, sizeof(buf), "{\"type\":\"error\",\"code\":\"%s\"}", code);
	struct live_msg *m = msg_new(buf, (size_t)len, "");
	if (!m) {
		kp_err("live: subscriber %" PRIu64 ": out of memory for an error notice", s->ws_id);
		return;
	}
	offer(s, m);
	msg_unref(m);
}

void webd_live_message(struct web_ws *ws, bool binary, const uint8_t *data, size_t len)
{
	struct live_sub *s = sub_of(web_ws_id(ws));
	if (!s)
		return;
	static struct json_tok toks[LIVE_FILTER_TOKS];
	struct json_doc d;
	if (binary || json_parse(&d, (const char *)data, len, toks, LIVE_FILTER_TOKS) < 0) {
		reply_error(s, "bad_message");
		return;
	}
	char type[16];
	if (json_get_str(&d, json_obj_get(&d, 0, "type"), type, sizeof(type)) < 0 || strcmp(type, "subscribe") != 0) {
		reply_error(s, "unknown_type");
		return;
	}
	int cams = json_obj_get(&d, 0, "cameras");
	if (cams >= 0 && d.toks[cams].type != JSON_ARRAY && d.toks[cams].type != JSON_NULL) {
		reply_error(s, "bad_cameras");
		return;
	}
	unsigned n = cams >= 0 && d.toks[cams].type == JSON_ARRAY ? d.toks[cams].size : 0;
	if (n > LIVE_MAX_FILTER) {
		reply_error(s, "too_many_cameras");
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (json_get_str(&d, json_arr_get(&d, cams, i), s->filter[i], sizeof(s->filter[i])) < 1) {
			s->nfilter = 0;
			reply_error(s, "bad_cameras");
			return;
		}
	s->nfilter = n;
}

void webd_live_close(struct web_ws *ws)
{
	uint64_t id = web_ws_id(ws);
	for (struct live_sub **p = &L.subs; *p; p = &(*p)->next) {
		struct live_sub *s = *p;
		if (s->ws_id != id)
			continue;
		*p = s->next;
		while (s->count)
			q_pop(s);
		free(s);
		L.nsubs--;
		return;
	}
}

void webd_live_metrics(char *buf, size_t len)
{
	snprintf(
	    buf, len,
	    "# TYPE keeppeek_webd_live_subscribers gauge\nkeeppeek_webd_live_subscribers %u\n"
	    "# TYPE keeppeek_webd_live_events_total counter\nkeeppeek_webd_live_events_total %" PRIu64 "\n"
	    "# TYPE keeppeek_webd_live_delivered_total counter\nkeeppeek_webd_live_delivered_total %" PRIu64 "\n"
	    "# TYPE keeppeek_webd_live_dropped_total counter\nkeeppeek_webd_live_dropped_total %" PRIu64 "\n"
	    "# TYPE keeppeek_webd_live_resyncs_total counter\nkeeppeek_webd_live_resyncs_total %" PRIu64 "\n"
	    "# TYPE keeppeek_webd_live_jpeg_omitted_total counter\nkeeppeek_webd_live_jpeg_omitted_total %" PRIu64 "\n"
	    "# TYPE keeppeek_webd_live_queue_commands_high_water gauge\n"
	    "keeppeek_webd_live_queue_commands_high_water %u\n"
	    "# TYPE keeppeek_webd_live_queue_commands_bound gauge\nkeeppeek_webd_live_queue_commands_bound %u\n"
	    "# TYPE keeppeek_webd_live_queue_bytes_high_water gauge\nkeeppeek_webd_live_queue_bytes_high_water %zu\n"
	    "# TYPE keeppeek_webd_live_queue_bytes_bound gauge\nkeeppeek_webd_live_queue_bytes_bound %u\n",
	    L.nsubs, L.events, L.delivered, L.dropped, L.resyncs, L.jpeg_omitted, L.hw_commands,
	    (unsigned)KP_LIVE_QUEUE_COMMANDS, L.hw_bytes, (unsigned)KP_LIVE_QUEUE_BYTES);
}
