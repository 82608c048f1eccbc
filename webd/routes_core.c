/* webd's own routes: GET /healthz and GET /api/v1/cameras (answered by the supervisor
 * through TopicQuery), GET /metrics (the supervisor's, recorderd's and rtcd's Prometheus
 * text plus webd's own counters), and the table naming the two WebSockets. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub.h"
#include "log.h"
#include "web_limits.h"
#include "webd.h"

/* Answers larger than this from one process are cut (a /metrics or cameras answer of
 * 128 cameras is far below it). */
#define TOPIC_MAX_BYTES (1024 * 1024)
/* How long /metrics waits for recorderd and rtcd before answering without them. */
#define METRICS_WAIT_MS 2000

struct text {
	char *buf;
	size_t len;
	bool cut;
};

static void text_add(struct text *t, const void *data, size_t len)
{
	if (t->len + len > TOPIC_MAX_BYTES) {
		t->cut = true;
		return;
	}
	char *n = realloc(t->buf, t->len + len + 1);
	if (!n) {
		t->cut = true;
		return;
	}
	t->buf = n;
	memcpy(t->buf + t->len, data, len);
	t->len += len;
	t->buf[t->len] = 0;
}

static int send_topic(struct webd *d, kp_Peer to, kp_SupervisorTopic topic, uint32_t id)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_topic_query_tag;
	env.msg.topic_query.id = id;
	env.msg.topic_query.topic = topic;
	if (to == kp_Peer_PEER_SUPERVISOR)
		return kp_worker_send_supervisor(d->worker, &env);
	return kp_worker_send_peer(d->worker, to, &env, NULL, 0);
}

/* ---- /healthz and /api/v1/cameras: one question to the supervisor ---- */

struct relay {
	uint64_t req;
	bool json_errors; /* a status >= 400 is answered as {"error", "message"} */
	uint32_t status;
	char ctype[48];
	char code[32];
	struct text body;
};

static void relay_answer(void *arg, struct kp_ipc_frame *f)
{
	struct relay *x = arg;
	if (f) {
		const kp_QueryReply *q = &f->env->msg.query_reply;
		if (f->env->which_msg != kp_Envelope_query_reply_tag)
			return;
		if (q->status)
			x->status = q->status;
		if (q->content_type[0])
			snprintf(x->ctype, sizeof x->ctype, "%s", q->content_type);
		if (q->error_code[0])
			snprintf(x->code, sizeof x->code, "%s", q->error_code);
		text_add(&x->body, f->tail, f->tail_len);
		if (!q->done)
			return;
	}
	struct web_req *r = web_req_find(x->req);
	if (r && !f)
		web_reply_error(r, 504, "upstream_timeout", "the supervisor did not answer");
	else if (r && x->body.cut)
		web_reply_error(r, 500, "too_large", "the supervisor's answer is too large");
	else if (r && x->json_errors && x->status >= 400)
		web_reply_error(r, (int)x->status, x->code[0] ? x->code : "error", "%.*s", (int)x->body.len,
				x->body.buf ? x->body.buf : "");
	else if (r)
		web_reply(r, (int)x->status, x->ctype[0] ? x->ctype : "text/plain; charset=utf-8",
			  x->body.buf ? x->body.buf : "", x->body.len, NULL);
	free(x->body.buf);
	free(x);
}

void webd_ask_supervisor(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
			 bool json_errors)
{
	struct relay *x = calloc(1, sizeof *x);
	if (!x) {
		web_reply_error(r, 503, "busy", "no memory");
		return;
	}
	x->req = web_req_id(r);
	x->status = 500;
	x->json_errors = json_errors;
	uint32_t id = webd_answer_expect(kp_Peer_PEER_SUPERVISOR, relay_answer, x);
	if (!id) {
		free(x);
		web_reply_error(r, 503, "busy", "too many questions in flight");
		return;
	}
	*id_field = id;
	struct webd *d = web_req_app(r);
	int e =
	    len ? kp_worker_send_supervisor_tail(d->worker, env, tail, len) : kp_worker_send_supervisor(d->worker, env);
	if (e < 0) {
		webd_answer_cancel(id);
		free(x);
		web_reply_error(r, 503, "supervisor_unreachable", "asking the supervisor failed: %s", strerror(-e));
	}
}

static void ask_supervisor(struct web_req *r, kp_SupervisorTopic topic)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_topic_query_tag;
	env.msg.topic_query.topic = topic;
	webd_ask_supervisor(r, &env, &env.msg.topic_query.id, NULL, 0, false);
}

static void route_healthz(struct web_req *r)
{
	ask_supervisor(r, kp_SupervisorTopic_TOPIC_HEALTHZ);
}

static void route_cameras(struct web_req *r)
{
	ask_supervisor(r, kp_SupervisorTopic_TOPIC_CAMERAS);
}

/* ---- /metrics ---- */

enum { SRC_SUPERVISOR, SRC_RECORDERD, SRC_RTCD, NSRC };
static const char *const src_names[NSRC] = {"supervisor", "recorderd", "rtcd"};
static const kp_Peer src_peers[NSRC] = {kp_Peer_PEER_SUPERVISOR, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_RTCD};

struct metrics_job;
struct metrics_piece {
	struct metrics_job *job;
	int src;
};

struct metrics_job {
	uint64_t req;
	struct metrics_piece piece[NSRC];
	uint32_t ids[NSRC];
	bool waiting[NSRC], up[NSRC], answered[NSRC];
	struct text part[NSRC];
	uv_timer_t timer;
	bool finished;
};

static void counters_text(struct text *t)
{
	const struct web_counters *k = &web_counters;
	char buf[8192];
	int n = 0;
#define ADD(...) n += snprintf(buf + n, sizeof buf - (size_t)n, __VA_ARGS__)
	ADD("# HELP keeppeek_http_responses_total HTTP answers by status class.\n"
	    "# TYPE keeppeek_http_responses_total counter\n");
	for (int c = 1; c <= 5; c++)
		ADD("keeppeek_http_responses_total{class=\"%dxx\"} %llu\n", c, (unsigned long long)k->responses[c]);
	ADD("# HELP keeppeek_http_connections_accepted_total HTTP connections accepted.\n"
	    "# TYPE keeppeek_http_connections_accepted_total counter\n"
	    "keeppeek_http_connections_accepted_total %llu\n",
	    (unsigned long long)k->connections_accepted);
	ADD("# HELP keeppeek_http_connections Open HTTP connections (at most %d).\n"
	    "# TYPE keeppeek_http_connections gauge\nkeeppeek_http_connections %u\n",
	    KP_HTTP_MAX_CONNECTIONS, k->connections_active);
	ADD("# HELP keeppeek_http_connections_anonymous Open HTTP connections not yet shown valid credentials "
	    "(at most %d per address; evicted while unfinished when the connections run out).\n"
	    "# TYPE keeppeek_http_connections_anonymous gauge\nkeeppeek_http_connections_anonymous %u\n",
	    WEB_CONNECTIONS_PER_ADDRESS, k->connections_anonymous);
	ADD("# HELP keeppeek_http_handlers Requests in progress (at most %d).\n"
	    "# TYPE keeppeek_http_handlers gauge\nkeeppeek_http_handlers %u\n",
	    KP_HTTP_MAX_HANDLERS, k->handlers_active);
	ADD("# HELP keeppeek_http_received_bytes_total Bytes read from HTTP clients.\n"
	    "# TYPE keeppeek_http_received_bytes_total counter\nkeeppeek_http_received_bytes_total %llu\n",
	    (unsigned long long)k->bytes_in);
	ADD("# HELP keeppeek_http_sent_bytes_total Bytes written to HTTP clients.\n"
	    "# TYPE keeppeek_http_sent_bytes_total counter\nkeeppeek_http_sent_bytes_total %llu\n",
	    (unsigned long long)k->bytes_out);
	ADD("# HELP keeppeek_limit_rejections_total Requests or connections refused by a webd ceiling.\n"
	    "# TYPE keeppeek_limit_rejections_total counter\n");
	for (int i = 0; i < WEB_LIMIT_COUNT; i++)
		ADD("keeppeek_limit_rejections_total{process=\"webd\",limit=\"%s\"} %llu\n", web_limit_names[i],
		    (unsigned long long)k->limit_rejections[i]);
	ADD("# HELP keeppeek_websocket_opened_total WebSockets opened.\n"
	    "# TYPE keeppeek_websocket_opened_total counter\nkeeppeek_websocket_opened_total %llu\n",
	    (unsigned long long)k->ws_opened);
	ADD("# HELP keeppeek_websockets Open WebSockets by route.\n# TYPE keeppeek_websockets gauge\n"
	    "keeppeek_websockets{route=\"live\"} %u\nkeeppeek_websockets{route=\"rtc\"} %u\n",
	    k->ws_active[WEBD_WS_LIVE], k->ws_active[WEBD_WS_RTC]);
#undef ADD
	text_add(t, buf, (size_t)n);
}

static void metrics_closed(uv_handle_t *h)
{
	struct metrics_job *j = h->data;
	for (int i = 0; i < NSRC; i++)
		free(j->part[i].buf);
	free(j);
}

static void metrics_finish(struct metrics_job *j)
{
	if (j->finished)
		return;
	j->finished = true;
	for (int i = 0; i < NSRC; i++)
		if (j->waiting[i]) {
			webd_answer_cancel(j->ids[i]);
			j->waiting[i] = false;
		}
	uv_timer_stop(&j->timer);
	struct web_req *r = web_req_find(j->req);
	if (r) {
		struct text t = {0};
		for (int i = 0; i < NSRC; i++)
			if (j->answered[i] && !j->part[i].cut && j->part[i].len)
				text_add(&t, j->part[i].buf, j->part[i].len);
		static const char up_head[] =
		    "# HELP keeppeek_peer_up Whether the process answered webd for these metrics.\n"
		    "# TYPE keeppeek_peer_up gauge\nkeeppeek_peer_up{peer=\"webd\"} 1\n";
		text_add(&t, up_head, sizeof up_head - 1);
		char line[96];
		for (int i = 0; i < NSRC; i++) {
			int n = snprintf(line, sizeof line, "keeppeek_peer_up{peer=\"%s\"} %d\n", src_names[i],
					 j->up[i] && j->answered[i] ? 1 : 0);
			text_add(&t, line, (size_t)n);
		}
		counters_text(&t);
		char *live = malloc(32 * 1024);
		if (live) {
			webd_live_metrics(live, 32 * 1024);
			text_add(&t, live, strlen(live));
			webd_integrations_metrics(live, 32 * 1024);
			text_add(&t, live, strlen(live));
			webd_rtc_metrics(live, 32 * 1024);
			text_add(&t, live, strlen(live));
			webd_hub_metrics(live, 32 * 1024);
			text_add(&t, live, strlen(live));
			free(live);
		}
		if (t.cut)
			web_reply_error(r, 500, "too_large", "metrics text too large");
		else
			web_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", t.buf, t.len, NULL);
		free(t.buf);
	}
	uv_close((uv_handle_t *)&j->timer, metrics_closed);
}

static void metrics_answer(void *arg, struct kp_ipc_frame *f)
{
	struct metrics_piece *p = arg;
	struct metrics_job *j = p->job;
	int s = p->src;
	const kp_Envelope *env = f ? f->env : NULL;
	bool query = env && env->which_msg == kp_Envelope_query_reply_tag;
	bool catalog = env && env->which_msg == kp_Envelope_catalog_reply_tag; /* recorderd's */
	bool done = !f || (query && env->msg.query_reply.done) || (catalog && env->msg.catalog_reply.done);
	if ((query && env->msg.query_reply.status == 200) ||
	    (catalog && env->msg.catalog_reply.result == kp_CatalogResult_CATALOG_OK))
		text_add(&j->part[s], f->tail, f->tail_len);
	if (!done)
		return;
	j->waiting[s] = false;
	j->answered[s] = f != NULL;
	for (int i = 0; i < NSRC; i++)
		if (j->waiting[i])
			return;
	metrics_finish(j);
}

static void metrics_timeout(uv_timer_t *t)
{
	struct metrics_job *j = t->data;
	for (int i = 0; i < NSRC; i++)
		if (j->waiting[i])
			kp_warn("/metrics: %s did not answer within %d ms", src_names[i], METRICS_WAIT_MS);
	metrics_finish(j);
}

static void route_metrics(struct web_req *r)
{
	struct webd *d = web_req_app(r);
	struct metrics_job *j = calloc(1, sizeof *j);
	if (!j || uv_timer_init(kp_worker_loop(d->worker), &j->timer) < 0) {
		free(j);
		web_reply_error(r, 503, "busy", "no memory");
		return;
	}
	j->timer.data = j;
	j->req = web_req_id(r);
	for (int i = 0; i < NSRC; i++) {
		struct metrics_piece *p = &j->piece[i];
		p->job = j;
		p->src = i;
		uint32_t id = webd_answer_expect(src_peers[i], metrics_answer, p);
		if (!id)
			continue;
		if (send_topic(d, src_peers[i], kp_SupervisorTopic_TOPIC_METRICS, id) < 0) {
			webd_answer_cancel(id);
			continue;
		}
		j->ids[i] = id;
		j->waiting[i] = j->up[i] = true;
	}
	bool any = false;
	for (int i = 0; i < NSRC; i++)
		any |= j->waiting[i];
	if (!any) {
		metrics_finish(j);
		return;
	}
	uv_timer_start(&j->timer, metrics_timeout, METRICS_WAIT_MS, 0);
}

const struct web_route webd_core_routes[] = {
    {WEB_GET | WEB_HEAD, "/healthz", WEB_PUBLIC | WEB_HEALTH, 0, route_healthz},
    {WEB_GET, "/metrics", 0, 0, route_metrics},
    {WEB_GET, "/api/v1/cameras", 0, 0, route_cameras},
    {0, NULL, 0, 0, NULL},
};

const struct web_ws_route webd_ws_routes[] = {
    [WEBD_WS_LIVE] = {"/api/v1/live", 0, webd_live_open, webd_live_message, webd_live_close},
    [WEBD_WS_RTC] = {"/api/v1/rtc", 0, webd_rtc_open, webd_rtc_message, webd_rtc_close},
    {NULL, 0, NULL, NULL, NULL},
};
