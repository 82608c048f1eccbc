/* recorderd's answers to relayed keeppeekctl questions (see requests.h). */
#include "requests.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup.h"
#include "catalog.h"
#include "catalog_keys.h"
#include "jbuf.h"
#include "check.h"
#include "h26x.h"
#include "keyframe.h"
#include "log.h"
#include "snapshot.h"
#include "tier_cache.h"

#define TRAILER_RESERVE 1024 /* the check's summary after its problem lines */

struct answer {
	char *buf;
	size_t len;
	int full;
};

static struct {
	struct kp_worker *w;
	struct cat *cat;
	int dirfd;
	uv_async_t done;
	int open;
	const struct rec_request_hooks *hooks;
	/* the check that runs, if any */
	int running;
	pthread_t thread;
	int cancel;
	uint32_t id;
	int json;
	struct answer out;
	unsigned lines, omitted;
	struct rec_check_result res;
	int err;
	uint32_t backup_id; /* the backup that runs, 0: none */
} Q;

static int answer_init(struct answer *a)
{
	a->len = 0;
	a->full = 0;
	a->buf = malloc(REC_ANSWER_MAX);
	return a->buf ? 0 : -ENOMEM;
}

static void put(struct answer *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct answer *a, const char *fmt, ...)
{
	if (a->full)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(a->buf + a->len, REC_ANSWER_MAX - a->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= REC_ANSWER_MAX - a->len)
		a->full = 1; /* the caller keeps room for what must be said */
	else
		a->len += (size_t)n;
}

static void put_json_string(struct answer *a, const char *s)
{
	put(a, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			put(a, "\\%c", c);
		else if (c < 0x20)
			put(a, "\\u%04x", c);
		else
			put(a, "%c", c);
	}
	put(a, "\"");
}

void rec_send_answer(struct kp_worker *w, uint32_t id, int code, const void *data, size_t len)
{
	size_t off = 0;
	do {
		size_t n = len - off < REC_ANSWER_PIECE ? len - off : REC_ANSWER_PIECE;
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_recorder_reply_tag;
		env.msg.recorder_reply.id = id;
		env.msg.recorder_reply.done = off + n == len;
		env.msg.recorder_reply.exit_code = code;
		int r = kp_worker_send_supervisor_tail(w, &env, (const uint8_t *)data + off, n);
		if (r < 0) {
			kp_err("answer %u to the supervisor failed: %s", (unsigned)id, strerror(-r));
			return;
		}
		off += n;
	} while (off < len);
}

void rec_send_text(struct kp_worker *w, uint32_t id, int code, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	rec_send_answer(w, id, code, text, strlen(text));
}

/* check thread */
static void on_problem(void *arg, const char *line)
{
	(void)arg;
	if (Q.out.len + 2 * strlen(line) + 16 > REC_ANSWER_MAX - TRAILER_RESERVE) {
		Q.omitted++;
		return;
	}
	if (Q.json) {
		put(&Q.out, "%s", Q.lines ? "," : "");
		put_json_string(&Q.out, line);
	} else {
		put(&Q.out, "%s\n", line);
	}
	Q.lines++;
}

static void *check_thread(void *arg)
{
	const struct rec_check_opts *o = arg;
	Q.err = rec_check(Q.cat, Q.dirfd, o, &Q.res);
	uv_async_send(&Q.done);
	return NULL;
}

/* loop thread, when the check thread is done */
static void on_check_done(uv_async_t *h)
{
	(void)h;
	if (!Q.running)
		return;
	pthread_join(Q.thread, NULL);
	Q.running = 0;
	const struct rec_check_result *r = &Q.res;
	int code = Q.err < 0 || r->remaining ? 1 : 0;
	if (Q.err < 0 && !Q.json)
		put(&Q.out, "check failed: %s\n", strerror(-Q.err));
	else if (Q.json)
		put(&Q.out,
		    "],\"omitted\":%u,\"streams\":%u,\"recordings\":%u,\"fragments\":%u,\"keyframes\":%u,\"events\":%u,"
		    "\"problem_count\":%u,\"repaired\":%u,\"remaining\":%u,\"damaged\":%s%s%s%s}\n",
		    Q.omitted, r->streams, r->recordings, r->fragments, r->keyframes, r->events, r->problems,
		    r->repaired, r->remaining, r->damaged ? "true" : "false", Q.err < 0 ? ",\"error\":\"" : "",
		    Q.err < 0 ? strerror(-Q.err) : "", Q.err < 0 ? "\"" : "");
	else {
		if (Q.omitted)
			put(&Q.out, "(%u more problems not shown)\n", Q.omitted);
		put(&Q.out, "checked %u streams, %u recordings, %u fragments, %u keyframes: %u problems", r->streams,
		    r->recordings, r->fragments, r->keyframes, r->problems);
		if (r->repaired)
			put(&Q.out, ", %u repaired, %u remain", r->repaired, r->remaining);
		put(&Q.out, "\n");
	}
	kp_info("check: %u problems, %u repaired, %u remain%s%s", r->problems, r->repaired, r->remaining,
		Q.err < 0 ? "; failed: " : "", Q.err < 0 ? strerror(-Q.err) : "");
	rec_send_answer(Q.w, Q.id, code, Q.out.buf, Q.out.len);
	free(Q.out.buf);
	Q.out.buf = NULL;
}

static void check(struct kp_worker *w, const kp_CheckRequest *q)
{
	if (Q.running) {
		rec_send_text(w, q->id, 1, "a check is already running; try again when it is done\n");
		return;
	}
	if (answer_init(&Q.out) < 0) {
		rec_send_text(w, q->id, 1, "check: out of memory\n");
		return;
	}
	static struct rec_check_opts o;
	o = (struct rec_check_opts){.repair = q->repair, .cancel = &Q.cancel, .problem = on_problem};
	Q.id = q->id;
	Q.json = q->json;
	Q.lines = Q.omitted = 0;
	Q.cancel = 0;
	memset(&Q.res, 0, sizeof Q.res);
	if (Q.json)
		put(&Q.out, "{\"problems\":[");
	int r = -pthread_create(&Q.thread, NULL, check_thread, &o);
	if (r < 0) {
		free(Q.out.buf);
		Q.out.buf = NULL;
		rec_send_text(w, q->id, 1, "check: cannot start its thread: %s\n", strerror(-r));
		return;
	}
	Q.running = 1;
	kp_info("check%s started", q->repair ? " --repair" : "");
}

static int stream_of(uint32_t id, const char *camera, uint32_t stream, uint32_t *ret)
{
	if (stream > 1) {
		rec_send_text(Q.w, id, 2, "stream must be main or sub\n");
		return -EINVAL;
	}
	struct cat_txn *t;
	uint32_t camera_id;
	int r = cat_begin(Q.cat, 0, &t);
	if (r == 0) {
		r = cat_camera_lookup(t, camera, &camera_id, NULL);
		cat_abort(t);
	}
	if (r == -ENOENT)
		rec_send_text(Q.w, id, 1, "no recordings of camera '%s'\n", camera);
	else if (r < 0)
		rec_send_text(Q.w, id, 1, "catalog: %s\n", strerror(-r));
	else
		*ret = cat_stream_id(camera_id, stream);
	return r;
}

static void render_snapshot(struct answer *a, const kp_CoverageRequest *q, const struct rec_snapshot *s)
{
	const char *stream = q->stream ? "sub" : "main";
	if (q->json) {
		put(a, "{\"camera\":");
		put_json_string(a, q->camera);
		put(a,
		    ",\"stream\":\"%s\",\"from_ms\":%lld,\"to_ms\":%lld,\"bucket_ms\":%lld,\"exact_from_ms\":", stream,
		    (long long)s->from_ms, (long long)s->to_ms, (long long)s->bucket_ms);
		if (s->exact_from_ms == INT64_MIN)
			put(a, "null");
		else
			put(a, "%lld", (long long)s->exact_from_ms);
		put(a, ",\"ranges\":[");
		for (uint32_t i = 0; i < s->n; i++)
			put(a, "%s[%lld,%lld]", i ? "," : "", (long long)s->r[i].start_ms, (long long)s->r[i].end_ms);
		put(a, "],\"buckets\":[");
		for (uint32_t i = 0; i < s->nbuckets; i++)
			put(a, "%s[%lld,%lld]", i ? "," : "", (long long)s->b[i].start_ms,
			    (long long)s->b[i].covered_ms);
		put(a, "]}\n");
		return;
	}
	int64_t total = 0;
	for (uint32_t i = 0; i < s->n; i++)
		total += s->r[i].end_ms - s->r[i].start_ms;
	put(a, "%s/%s from %lld to %lld ms: %u exact ranges, %.3f s covered\n", q->camera, stream,
	    (long long)s->from_ms, (long long)s->to_ms, (unsigned)s->n, (double)total / 1000.0);
	if (s->exact_from_ms != INT64_MIN)
		put(a, "before %lld ms only the buckets describe coverage\n", (long long)s->exact_from_ms);
	for (uint32_t i = 0; i < s->n; i++)
		put(a, "range %lld %lld (%.3f s)\n", (long long)s->r[i].start_ms, (long long)s->r[i].end_ms,
		    (double)(s->r[i].end_ms - s->r[i].start_ms) / 1000.0);
	for (uint32_t i = 0; i < s->nbuckets; i++)
		put(a, "bucket %lld %lld ms\n", (long long)s->b[i].start_ms, (long long)s->b[i].covered_ms);
}

static void coverage(struct kp_worker *w, const kp_CoverageRequest *q)
{
	uint32_t stream_id;
	if (stream_of(q->id, q->camera, q->stream, &stream_id) < 0)
		return;
	static struct rec_snapshot snap;
	struct cat_txn *t;
	int r = cat_begin(Q.cat, 0, &t);
	if (r == 0) {
		r = rec_snapshot(t, stream_id, q->from_ms, q->to_ms, q->bucket_ms, &snap);
		cat_abort(t);
	}
	if (r == -EINVAL || r == -E2BIG) {
		rec_send_text(w, q->id, 2,
			      "coverage: the range must be non-empty, the bucket a multiple of one hour, and at most "
			      "%d buckets\n",
			      REC_SNAPSHOT_MAX_BUCKETS);
		return;
	}
	if (r < 0) {
		rec_send_text(w, q->id, 1, "coverage: catalog: %s\n", strerror(-r));
		return;
	}
	struct answer a;
	if (answer_init(&a) < 0) {
		rec_send_text(w, q->id, 1, "coverage: out of memory\n");
		return;
	}
	render_snapshot(&a, q, &snap);
	rec_send_answer(w, q->id, 0, a.buf, a.len);
	free(a.buf);
}

static void keyframe(struct kp_worker *w, const kp_KeyframeRequest *q)
{
	uint32_t stream_id;
	if (stream_of(q->id, q->camera, q->stream, &stream_id) < 0)
		return;
	struct rec_keyframe k;
	int r = rec_keyframe_find(Q.cat, stream_id, q->time_ms, &k);
	if (r == -ENOENT) {
		rec_send_text(w, q->id, 1, "no recording of %s/%s covers %lld ms\n", q->camera,
			      q->stream ? "sub" : "main", (long long)q->time_ms);
		return;
	}
	if (r == 0 && k.length > REC_ANSWER_MAX)
		r = -EMSGSIZE;
	uint8_t *buf = r == 0 ? malloc(k.length) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	if (r == 0)
		r = rec_tier_keyframe_read(Q.dirfd, &k, buf);
	if (r == 0)
		r = h26x_sample_to_annexb(buf, k.length);
	if (r == -EINPROGRESS) /* parked until its bytes come from the store */
		;
	else if (r < 0)
		rec_send_text(w, q->id, 1, "keyframe of %s/%s at %lld ms: %s\n", q->camera, q->stream ? "sub" : "main",
			      (long long)q->time_ms, strerror(-r));
	else
		rec_send_answer(w, q->id, 0, buf, k.length);
	free(buf);
}

static void tier_status(struct kp_worker *w, uint32_t id, int json)
{
	struct jbuf b;
	jb_init(&b, REC_ANSWER_MAX);
	Q.hooks->tier_status(&b, Q.cat, json);
	if (b.failed)
		rec_send_text(w, id, 1, "tier status: the answer does not fit in %u bytes\n", (unsigned)REC_ANSWER_MAX);
	else
		rec_send_answer(w, id, 0, b.p, b.len);
	jb_free(&b);
}

/* keeppeekctl keyframe of a remote recording waits, like a query, for its bytes. */
static void keyframe_again(kp_Peer from, const kp_Envelope *env, int err, const char *why)
{
	(void)from;
	const kp_KeyframeRequest *q = &env->msg.keyframe_request;
	if (err) {
		rec_send_text(Q.w, q->id, 1, "keyframe of %s/%s at %lld ms: %s\n", q->camera,
			      q->stream ? "sub" : "main", (long long)q->time_ms, why);
		return;
	}
	keyframe(Q.w, q);
	rec_tier_cache_end(kp_Peer_PEER_SUPERVISOR, env, keyframe_again);
}

static void keyframe_parked(struct kp_worker *w, const kp_Envelope *env)
{
	rec_tier_cache_begin(0);
	keyframe(w, &env->msg.keyframe_request);
	rec_tier_cache_end(kp_Peer_PEER_SUPERVISOR, env, keyframe_again);
}

void rec_request(struct kp_worker *w, const kp_Envelope *env)
{
	uint32_t id = env->which_msg == kp_Envelope_check_request_tag         ? env->msg.check_request.id
		      : env->which_msg == kp_Envelope_coverage_request_tag    ? env->msg.coverage_request.id
		      : env->which_msg == kp_Envelope_keyframe_request_tag    ? env->msg.keyframe_request.id
		      : env->which_msg == kp_Envelope_event_search_tag        ? env->msg.event_search.id
		      : env->which_msg == kp_Envelope_tier_status_request_tag ? env->msg.tier_status_request.id
									      : 0;
	if (!id)
		return;
	if (env->which_msg == kp_Envelope_check_request_tag && env->msg.check_request.rebuild) {
		/* Also, above all, without a usable catalog. */
		if (Q.running)
			rec_send_text(w, id, 1, "a check is running; rebuild when it is done\n");
		else if (Q.backup_id)
			rec_send_text(w, id, 1, "a backup is running; rebuild when it is done\n");
		else
			Q.hooks->rebuild(w, id, env->msg.check_request.json);
		return;
	}
	if (!Q.open) {
		const char *why = Q.hooks->catalog_error();
		rec_send_text(w, id, 1, "recorderd has no catalog open: %s\n", why[0] ? why : "see its log");
		return;
	}
	if (env->which_msg == kp_Envelope_check_request_tag)
		check(w, &env->msg.check_request);
	else if (env->which_msg == kp_Envelope_event_search_tag)
		Q.hooks->event_search(w, Q.cat, &env->msg.event_search);
	else if (env->which_msg == kp_Envelope_coverage_request_tag)
		coverage(w, &env->msg.coverage_request);
	else if (env->which_msg == kp_Envelope_tier_status_request_tag)
		tier_status(w, id, env->msg.tier_status_request.json);
	else
		keyframe_parked(w, env);
}

void rec_request_frame(struct kp_worker *w, struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	if (env->which_msg != kp_Envelope_backup_request_tag) {
		rec_request(w, env);
		return;
	}
	uint32_t id = env->msg.backup_request.id;
	if (!id || f->nfds != 1)
		return;
	if (!Q.open) {
		rec_send_text(w, id, 1, "recorderd has no catalog open (see its log); nothing to back up\n");
		return;
	}
	int r = rec_backup_start(id, f->fds[0]);
	f->fds[0] = -1; /* taken */
	if (r == -EBUSY)
		rec_send_text(w, id, 1, "a backup is already running; try again when it is done\n");
	else if (r < 0)
		rec_send_text(w, id, 1, "backup: cannot start copying the catalog: %s\n", strerror(-r));
	else {
		Q.backup_id = id;
		kp_info("backup: copying the catalog");
	}
}

static void on_backup_done(uint32_t id, int err, const struct rec_backup_result *res)
{
	Q.backup_id = 0;
	if (err < 0) {
		kp_err("backup: copying the catalog failed: %s", strerror(-err));
		rec_send_text(Q.w, id, 1, "backup: copying the catalog failed: %s\n", strerror(-err));
		return;
	}
	kp_info("backup: catalog copied in %llu ms: %llu bytes, %llu recordings, %llu events",
		(unsigned long long)res->ms, (unsigned long long)res->catalog_bytes,
		(unsigned long long)res->recordings, (unsigned long long)res->events);
	rec_send_text(Q.w, id, 0, "catalog_schema=%u\ncatalog_bytes=%llu\nrecordings=%llu\nevents=%llu\n",
		      (unsigned)CAT_SCHEMA_VERSION, (unsigned long long)res->catalog_bytes,
		      (unsigned long long)res->recordings, (unsigned long long)res->events);
}

void rec_requests_hooks(const struct rec_request_hooks *h)
{
	Q.hooks = h;
}

void rec_requests_open(struct kp_worker *w, struct cat *cat, int data_dirfd)
{
	rec_backup_open(kp_worker_loop(w), cat, on_backup_done);
	Q.w = w;
	Q.cat = cat;
	Q.dirfd = data_dirfd;
	uv_async_init(kp_worker_loop(w), &Q.done, on_check_done);
	Q.open = 1;
}

void rec_requests_close(void)
{
	if (!Q.open)
		return;
	if (Q.running) {
		__atomic_store_n(&Q.cancel, 1, __ATOMIC_RELAXED);
		pthread_join(Q.thread, NULL);
		Q.running = 0;
		free(Q.out.buf);
		Q.out.buf = NULL;
	}
	uv_close((uv_handle_t *)&Q.done, NULL);
	rec_backup_close();
	Q.backup_id = 0;
	Q.open = 0;
}
