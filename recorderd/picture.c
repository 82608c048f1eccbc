/* Event and timeline pictures through the transcoder, and their cache (see picture.h). */
#include "picture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_events.h"
#include "catalog_keys.h"
#include "h26x.h"
#include "keyframe.h"
#include "kp_checked.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "picture_cache.h"
#include "reply.h"
#include "tier_cache.h"

#define THUMB_WIDTH 320

struct pending {
	int used, sent;
	int hold; /* not sent before the next tick (the transcoder or the link refused it) */
	uint32_t job;
	kp_Peer from;
	uint32_t query_id;
	char name[96]; /* "event ID thumbnail", "CAM/sub at MS": for logs and the job */
	struct rec_pkey key;
	int thumb, at; /* cached; a PictureQuery's (answered with its span) */
	int64_t span_from_ms, span_to_ms;
	uint32_t codec;
	uint8_t *keyframe; /* Annex-B, until the job is done */
	size_t len;
	int64_t deadline_ms;
};

/* An event's picture waiting for its GOP to commit (picture.h). */
struct gop_wait {
	int used;
	kp_Peer from;
	kp_EventGet g;
	uint32_t revision;
	int data_dirfd;
	int64_t until_ms; /* monotonic: then it has none */
};

static struct {
	struct kp_worker *w;
	struct cat *cat;
	uv_timer_t timer;
	uv_async_t removed;
	atomic_int removed_on; /* removed is initialized: other threads may send to it */
	int timer_on, link_up;
	uint32_t next_job, demand;
	struct pending p[REC_PICTURE_PENDING];
	struct gop_wait gw[REC_PICTURE_GOP_WAITING];
	/* Jobs the transcoder holds (0: none), from their open to their TranscodeEnded or
	 * our close: it runs KP_TRANSCODE_PICTURE_JOBS at once and refuses more. */
	uint32_t in_tx[KP_TRANSCODE_PICTURE_JOBS];
	struct rec_pcache cache;
	uint64_t made, hits, failed, timeouts, busy;
	uint64_t gop_came, gop_missed; /* pictures that waited for their GOP: it came; it did not */
} P = {.cache = {.cap = REC_PICTURE_CACHE_BYTES}};

void rec_picture_worker(struct kp_worker *w)
{
	P.w = w;
}

static unsigned waiting(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < REC_PICTURE_PENDING; i++)
		n += P.p[i].used;
	return n;
}

/* Tells keeppeekd how many jobs wait, when that changed. */
static void demand(void)
{
	uint32_t n = waiting();
	if (n == P.demand || !P.w)
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcoder_demand_tag;
	env.msg.transcoder_demand.jobs = n;
	int r = kp_worker_send_supervisor(P.w, &env);
	if (r < 0)
		kp_warn("telling keeppeekd of %u picture jobs failed: %s", (unsigned)n, strerror(-r));
	else
		P.demand = n;
}

static void send_next(void);

static void done(struct pending *p)
{
	free(p->keyframe);
	memset(p, 0, sizeof *p);
	demand();
	send_next();
}

/* The transcoder is to drop job (its picture is no longer wanted). */
static void close_job(uint32_t job)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_close_tag;
	env.msg.transcode_close.job = job;
	int r = kp_worker_send_peer(P.w, kp_Peer_PEER_TRANSCODER, &env, NULL, 0);
	if (r < 0 && r != -ENOTCONN)
		kp_warn("closing picture job %u in the transcoder failed: %s", (unsigned)job, strerror(-r));
}

/* The transcoder no longer holds job: its slot is free. */
static void left_tx(uint32_t job)
{
	for (unsigned i = 0; i < KP_TRANSCODE_PICTURE_JOBS; i++)
		if (P.in_tx[i] == job)
			P.in_tx[i] = 0;
}

/* Sends p's job and keyframe when the transcoder has a free slot. */
static void send_job(struct pending *p)
{
	uint32_t *slot = NULL;
	for (unsigned i = 0; i < KP_TRANSCODE_PICTURE_JOBS && !slot; i++)
		if (!P.in_tx[i])
			slot = &P.in_tx[i];
	if (!slot)
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_open_tag;
	kp_TranscodeOpen *o = &env.msg.transcode_open;
	o->job = p->job;
	o->kind = kp_TranscodeKind_TRANSCODE_PICTURE;
	snprintf(o->name, sizeof o->name, "%s", p->name);
	o->width = p->thumb ? THUMB_WIDTH : 0;
	o->codec = p->codec;
	int r = rec_reply_envelope(kp_Peer_PEER_TRANSCODER, &env, NULL, 0);
	if (r == 0) {
		env = (kp_Envelope)kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_transcode_input_tag;
		env.msg.transcode_input.job = p->job;
		env.msg.transcode_input.keyframe = true;
		r = kp_worker_send_peer(P.w, kp_Peer_PEER_TRANSCODER, &env, p->keyframe, p->len);
		if (r < 0)
			close_job(p->job); /* no job waits there without its keyframe */
	}
	if (r < 0) {
		kp_warn(
		    "picture of %s: sending its keyframe to the transcoder failed: %s; tried again at the next tick",
		    p->name, strerror(-r));
		p->hold = 1;
		return;
	}
	p->sent = 1;
	*slot = p->job;
}

/* Sends waiting jobs, oldest first, while the transcoder has room for them. */
static void send_next(void)
{
	while (P.link_up) {
		struct pending *next = NULL;
		for (unsigned i = 0; i < REC_PICTURE_PENDING; i++) {
			struct pending *p = &P.p[i];
			if (p->used && !p->sent && !p->hold && (!next || p->job - next->job > UINT32_MAX / 2))
				next = p;
		}
		if (!next)
			return;
		send_job(next);
		if (!next->sent)
			return; /* no room, or the link is full: tried again later */
	}
}

static void ask(int data_dirfd, kp_Peer from, const kp_EventGet *g, uint32_t revision, int64_t until_ms);
static void ticking(void);

static unsigned gop_waiting(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < REC_PICTURE_GOP_WAITING; i++)
		n += P.gw[i].used;
	return n;
}

/* Asks again for the pictures waiting for their GOP: each is parked again, answered
 * (no_catalog when the catalog was closed) or sent to the transcoder. */
static void gop_retry(void)
{
	for (unsigned i = 0; i < REC_PICTURE_GOP_WAITING; i++) {
		struct gop_wait w = P.gw[i];
		if (!w.used)
			continue;
		P.gw[i].used = 0;
		ask(w.data_dirfd, w.from, &w.g, w.revision, w.until_ms);
	}
}

static void on_tick(uv_timer_t *t)
{
	(void)t;
	gop_retry();
	int64_t now = (int64_t)kp_mono_ms();
	unsigned left = gop_waiting();
	for (unsigned i = 0; i < REC_PICTURE_PENDING; i++) {
		struct pending *p = &P.p[i];
		if (!p->used)
			continue;
		p->hold = 0;
		if (now < p->deadline_ms) {
			left++;
			continue;
		}
		if (p->sent) {
			close_job(p->job);
			left_tx(p->job);
		}
		P.timeouts++;
		kp_warn("picture of %s: the transcoder did not answer within %d ms", p->name, REC_PICTURE_WAIT_MS);
		rec_reply_error(p->from, p->query_id, kp_CatalogResult_CATALOG_UNAVAILABLE, "transcoder_unavailable",
				"the transcoder did not make the picture within %d ms", REC_PICTURE_WAIT_MS);
		done(p);
	}
	if (!left) {
		uv_timer_stop(&P.timer);
		P.timer_on = 0;
	}
	send_next();
}

static int room(void)
{
	return waiting() < REC_PICTURE_PENDING;
}

/* The tick runs while a picture waits. */
static void ticking(void)
{
	if (P.timer_on || !P.w)
		return;
	if (!P.timer.data) {
		uv_timer_init(kp_worker_loop(P.w), &P.timer);
		P.timer.data = &P;
	}
	uv_timer_start(&P.timer, on_tick, REC_PICTURE_TICK_MS, REC_PICTURE_TICK_MS);
	P.timer_on = 1;
}

static struct pending *free_slot(kp_Peer from, uint32_t query_id)
{
	for (unsigned i = 0; i < REC_PICTURE_PENDING && P.w; i++)
		if (!P.p[i].used)
			return &P.p[i];
	P.busy++;
	rec_reply_error(from, query_id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
			"%d pictures wait for the transcoder; retry shortly", REC_PICTURE_PENDING);
	return NULL;
}

/* Reads k's keyframe into p (filled but for the job) and sends its job; answers the
 * asker when the keyframe cannot be read. */
static void start(struct pending *p, int data_dirfd, const struct rec_keyframe *k)
{
	uint8_t *buf = malloc(k->length ? k->length : 1);
	int r = buf ? rec_tier_keyframe_read(data_dirfd, k, buf) : -ENOMEM;
	if (r == 0)
		r = h26x_sample_to_annexb(buf, k->length);
	if (r == -EINPROGRESS) { /* the request is parked until its bytes come from the store */
		free(buf);
		memset(p, 0, sizeof *p);
		return;
	}
	if (r == -ENOTCONN || r == -ENOSPC || r == -EBUSY) {
		free(buf);
		rec_reply_error(p->from, p->query_id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(r),
				"the keyframe is in the object store and cannot be read now: %s", strerror(-r));
		memset(p, 0, sizeof *p);
		return;
	}
	if (r < 0) {
		free(buf);
		kp_err("%s: reading the keyframe of %s failed: %s", k->path, p->name, strerror(-r));
		rec_reply_error(p->from, p->query_id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"reading the keyframe failed: %s", strerror(-r));
		memset(p, 0, sizeof *p);
		return;
	}
	p->used = 1;
	p->job = ++P.next_job;
	p->codec = k->codec;
	p->keyframe = buf;
	p->len = k->length;
	p->deadline_ms = (int64_t)kp_mono_ms() + REC_PICTURE_WAIT_MS;
	demand();
	send_next();
	ticking();
}

/* Parks g until until_ms (monotonic) for its event's GOP; 503 when all places are taken. */
static void gop_park(int data_dirfd, kp_Peer from, const kp_EventGet *g, uint32_t revision, int64_t until_ms)
{
	for (unsigned i = 0; i < REC_PICTURE_GOP_WAITING; i++) {
		struct gop_wait *w = &P.gw[i];
		if (w->used)
			continue;
		*w = (struct gop_wait){.used = 1,
				       .from = from,
				       .g = *g,
				       .revision = revision,
				       .data_dirfd = data_dirfd,
				       .until_ms = until_ms};
		ticking();
		return;
	}
	P.busy++;
	rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
			"%d pictures wait for their events' video to be recorded; retry shortly",
			REC_PICTURE_GOP_WAITING);
}

/* rec_picture_ask; until_ms is 0 the first time, else how long it may still wait. */
static void ask(int data_dirfd, kp_Peer from, const kp_EventGet *g, uint32_t revision, int64_t until_ms)
{
	int thumb = g->part == kp_EventPart_EVENT_PART_THUMBNAIL;
	struct rec_pkey key = {.revision = revision};
	snprintf(key.id, sizeof key.id, "%s", g->event_id);
	size_t len;
	const uint8_t *jpeg = thumb ? rec_pcache_get(&P.cache, &key, &len) : NULL;
	if (jpeg) {
		P.hits++;
		rec_reply(from, g->id, kp_CatalogBody_CATALOG_BODY_JPEG, jpeg, len);
		return;
	}
	if (!P.cat) {
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "no_catalog",
				"recorderd has no catalog open (see its log)");
		return;
	}
	struct rec_keyframe k;
	int r = rec_keyframe_find_event(P.cat, g->event_id, thumb ? 1 : 0, &k);
	if (r == -ENOENT && thumb)
		r = rec_keyframe_find_event(P.cat, g->event_id, 0, &k); /* no sub stream recorded */
	int waited = until_ms != 0;
	if (r == -EAGAIN) {
		int64_t now = (int64_t)kp_mono_ms();
		if (!waited) {
			/* From the event's start; a start ahead of our clock waits the whole
			 * time, one that overflows not at all. */
			int64_t left = 0;
			if (kp_add_i64(k.ms, REC_PICTURE_GOP_WAIT_MS, &left) < 0 ||
			    kp_sub_i64(left, kp_wall_ms(), &left) < 0)
				left = 0;
			until_ms = now + (left < 0                         ? 0
					  : left > REC_PICTURE_GOP_WAIT_MS ? REC_PICTURE_GOP_WAIT_MS
									   : left);
		}
		if (now < until_ms) {
			gop_park(data_dirfd, from, g, revision, until_ms);
			return;
		}
		P.gop_missed += waited;
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_NOT_FOUND, "not_found",
				"event %s has no JPEG, and no video of its start was recorded within %d ms of it",
				g->event_id, REC_PICTURE_GOP_WAIT_MS);
		return;
	}
	if (r == -ENOENT) {
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_NOT_FOUND, "not_found",
				"event %s has no JPEG and no recorded keyframe", g->event_id);
		return;
	}
	if (r < 0) {
		kp_err("catalog: finding the keyframe of event %s failed: %s", g->event_id, strerror(-r));
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"finding the keyframe failed: %s", strerror(-r));
		return;
	}
	if (waited && !room() && (int64_t)kp_mono_ms() < until_ms) {
		gop_park(data_dirfd, from, g, revision, until_ms); /* its video came: it waits for room */
		return;
	}
	P.gop_came += waited;
	struct pending *p = free_slot(from, g->id);
	if (!p)
		return;
	*p = (struct pending){.from = from, .query_id = g->id, .key = key, .thumb = thumb};
	snprintf(p->name, sizeof p->name, "event %.40s %s", g->event_id, thumb ? "thumbnail" : "snapshot");
	start(p, data_dirfd, &k);
}

void rec_picture_ask(int data_dirfd, kp_Peer from, const kp_EventGet *g, uint32_t revision)
{
	ask(data_dirfd, from, g, revision, 0);
}

/* The keyframe at or before q->time_ms: the sub stream's first unless a stream is asked;
 * *stream_id is where it was found. */
static int find_at(struct cat *cat, const kp_PictureQuery *q, struct rec_keyframe *k, uint32_t *stream_id)
{
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r < 0)
		return r;
	uint32_t cam;
	r = cat_camera_lookup(t, q->camera, &cam, NULL);
	if (r == -ENOENT)
		r = -ENODEV;
	for (uint32_t i = 0; i < 2 && r == 0; i++) {
		uint32_t s = q->stream < 0 ? 1 - i : (uint32_t)q->stream;
		*stream_id = cat_stream_id(cam, s);
		r = rec_keyframe_find_txn(t, *stream_id, q->time_ms, k);
		if (r != -ENOENT || q->stream >= 0)
			break;
		if (i == 0)
			r = 0; /* no sub stream recorded then: the main's */
	}
	cat_abort(t);
	return r;
}

void rec_picture_at(struct cat *cat, int data_dirfd, kp_Peer from, const kp_PictureQuery *q)
{
	struct rec_keyframe k;
	uint32_t stream_id = 0;
	int r = q->time_ms < 0 || q->stream > 1 ? -EINVAL : find_at(cat, q, &k, &stream_id);
	if (r == -EINVAL) {
		rec_reply_error(from, q->id, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_request",
				"a time is Unix milliseconds from 0, a stream main or sub");
		return;
	}
	if (r == -ENODEV) {
		rec_reply_error(from, q->id, kp_CatalogResult_CATALOG_NOT_FOUND, "not_found",
				"no camera %s was ever recorded", q->camera);
		return;
	}
	if (r == -ENOENT) {
		rec_reply_error(from, q->id, kp_CatalogResult_CATALOG_NOT_FOUND, "no_recording",
				"no recording of %s covers %" PRId64 " ms", q->camera, q->time_ms);
		return;
	}
	if (r < 0) {
		kp_err("catalog: finding the keyframe of %s at %" PRId64 " ms failed: %s", q->camera, q->time_ms,
		       strerror(-r));
		rec_reply_error(from, q->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"finding the keyframe failed: %s", strerror(-r));
		return;
	}
	/* The catalog was read first: a keyframe retention or a delete removed is never
	 * served from the cache. */
	struct rec_pkey key = {.stream_id = stream_id, .recording_id = k.recording_id, .seq = k.seq};
	size_t len;
	const uint8_t *jpeg = rec_pcache_get(&P.cache, &key, &len);
	if (jpeg) {
		P.hits++;
		rec_reply_span(from, q->id, jpeg, len, k.ms, k.until_ms);
		return;
	}
	struct pending *p = free_slot(from, q->id);
	if (!p)
		return;
	*p = (struct pending){.from = from,
			      .query_id = q->id,
			      .key = key,
			      .thumb = 1,
			      .at = 1,
			      .span_from_ms = k.ms,
			      .span_to_ms = k.until_ms};
	snprintf(p->name, sizeof p->name, "%.64s/%s at %" PRId64 " ms", q->camera,
		 (stream_id & 1) == 1 ? "sub" : "main", k.ms);
	start(p, data_dirfd, &k);
}

static struct pending *by_job(uint32_t job)
{
	for (unsigned i = 0; i < REC_PICTURE_PENDING; i++)
		if (P.p[i].used && P.p[i].job == job)
			return &P.p[i];
	return NULL;
}

void rec_picture_frame(struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	if (env->which_msg == kp_Envelope_transcode_output_tag) {
		struct pending *p = by_job(env->msg.transcode_output.job);
		if (!p)
			return;
		P.made++;
		if (p->thumb)
			rec_pcache_put(&P.cache, &p->key, f->tail, f->tail_len);
		if (p->at)
			rec_reply_span(p->from, p->query_id, f->tail, f->tail_len, p->span_from_ms, p->span_to_ms);
		else
			rec_reply(p->from, p->query_id, kp_CatalogBody_CATALOG_BODY_JPEG, f->tail, f->tail_len);
		done(p);
	} else if (env->which_msg == kp_Envelope_transcode_ended_tag) {
		const kp_TranscodeEnded *e = &env->msg.transcode_ended;
		left_tx(e->job);
		struct pending *p = by_job(e->job);
		if (!p) {
			send_next(); /* its picture came first; its slot is free now */
			return;
		}
		if (e->error == EBUSY) {
			/* The transcoder still ran jobs of a link that was lost: sent again at the
			 * next tick, within the request's deadline. */
			p->sent = 0;
			p->hold = 1;
			send_next();
			return;
		}
		P.failed++;
		kp_warn("picture of %s: the transcoder made none: %s", p->name, e->reason);
		rec_reply_error(p->from, p->query_id, kp_CatalogResult_CATALOG_FAILED, "picture_failed",
				"the keyframe made no picture: %s", e->reason);
		done(p);
	}
}

void rec_picture_link(kp_Peer peer, int up)
{
	if (peer != kp_Peer_PEER_TRANSCODER)
		return;
	P.link_up = up;
	memset(P.in_tx, 0, sizeof P.in_tx); /* the transcoder drops a lost link's jobs */
	for (unsigned i = 0; i < REC_PICTURE_PENDING; i++)
		P.p[i].sent = 0; /* a lost link lost the job: sent again when it is back */
	send_next();
}

/* Whether the catalog still has what k is a picture of (an error keeps it). */
static int still_there(void *arg, const struct rec_pkey *k)
{
	struct cat_txn *t = arg;
	if (k->id[0]) {
		struct cat_event_row row;
		int r = cat_event_get(t, k->id, &row, NULL);
		return r == -ENOENT ? 0 : r < 0 || row.revision == k->revision;
	}
	struct cat_fragment f;
	return cat_get_fragment(t, k->recording_id, k->seq, &f) != -ENOENT;
}

static void on_removed(uv_async_t *h)
{
	(void)h;
	struct cat_txn *t;
	if (!P.cat || !P.cache.entries)
		return;
	int r = cat_begin(P.cat, 0, &t);
	if (r < 0) {
		kp_warn("picture cache: reading the catalog to drop removed pictures failed: %s", strerror(-r));
		return;
	}
	size_t n = rec_pcache_sweep(&P.cache, still_there, t);
	cat_abort(t);
	if (n)
		kp_info("picture cache: dropped %zu pictures of removed events and recordings", n);
}

void rec_picture_open(struct kp_worker *w, struct cat *cat)
{
	P.w = w;
	P.cat = cat;
	if (atomic_load(&P.removed_on))
		return;
	uv_async_init(kp_worker_loop(w), &P.removed, on_removed);
	atomic_store(&P.removed_on, 1);
}

void rec_picture_close(void)
{
	if (!atomic_exchange(&P.removed_on, 0))
		return;
	uv_close((uv_handle_t *)&P.removed, NULL);
	P.cat = NULL;
	rec_pcache_clear(&P.cache);
}

void rec_picture_removed(void)
{
	if (atomic_load(&P.removed_on))
		uv_async_send(&P.removed);
}

void rec_picture_metrics(struct jbuf *b)
{
	jb_printf(
	    b,
	    "# HELP keeppeek_recorderd_pictures_total Event and timeline pictures asked of the transcoder or the "
	    "cache, by "
	    "result.\n"
	    "# TYPE keeppeek_recorderd_pictures_total counter\n"
	    "keeppeek_recorderd_pictures_total{result=\"made\"} %llu\n"
	    "keeppeek_recorderd_pictures_total{result=\"cached\"} %llu\n"
	    "keeppeek_recorderd_pictures_total{result=\"decode_failed\"} %llu\n"
	    "keeppeek_recorderd_pictures_total{result=\"timeout\"} %llu\n"
	    "keeppeek_recorderd_pictures_total{result=\"busy\"} %llu\n"
	    "# HELP keeppeek_recorderd_pictures_waiting Pictures waiting for the transcoder (at most %d).\n"
	    "# TYPE keeppeek_recorderd_pictures_waiting gauge\n"
	    "keeppeek_recorderd_pictures_waiting %u\n"
	    "# HELP keeppeek_recorderd_pictures_waiting_video Pictures of fresh events waiting for their video to "
	    "be recorded (at most %d).\n"
	    "# TYPE keeppeek_recorderd_pictures_waiting_video gauge\n"
	    "keeppeek_recorderd_pictures_waiting_video %u\n"
	    "# HELP keeppeek_recorderd_picture_video_waits_total Pictures of fresh events that waited for their "
	    "video, by whether it came within %d ms of the event's start.\n"
	    "# TYPE keeppeek_recorderd_picture_video_waits_total counter\n"
	    "keeppeek_recorderd_picture_video_waits_total{result=\"came\"} %llu\n"
	    "keeppeek_recorderd_picture_video_waits_total{result=\"none\"} %llu\n"
	    "# HELP keeppeek_recorderd_picture_cache_bytes Bytes of thumbnails in the cache (at most %d).\n"
	    "# TYPE keeppeek_recorderd_picture_cache_bytes gauge\n"
	    "keeppeek_recorderd_picture_cache_bytes %zu\n"
	    "# HELP keeppeek_recorderd_picture_cache_entries Thumbnails in the cache.\n"
	    "# TYPE keeppeek_recorderd_picture_cache_entries gauge\n"
	    "keeppeek_recorderd_picture_cache_entries %zu\n"
	    "# HELP keeppeek_recorderd_picture_cache_evicted_total Thumbnails dropped to stay within the bound.\n"
	    "# TYPE keeppeek_recorderd_picture_cache_evicted_total counter\n"
	    "keeppeek_recorderd_picture_cache_evicted_total %llu\n"
	    "# HELP keeppeek_recorderd_picture_cache_purged_total Thumbnails dropped because retention or a delete "
	    "removed their event or recording.\n"
	    "# TYPE keeppeek_recorderd_picture_cache_purged_total counter\n"
	    "keeppeek_recorderd_picture_cache_purged_total %llu\n",
	    (unsigned long long)P.made, (unsigned long long)P.hits, (unsigned long long)P.failed,
	    (unsigned long long)P.timeouts, (unsigned long long)P.busy, REC_PICTURE_PENDING, waiting(),
	    REC_PICTURE_GOP_WAITING, gop_waiting(), REC_PICTURE_GOP_WAIT_MS, (unsigned long long)P.gop_came,
	    (unsigned long long)P.gop_missed, REC_PICTURE_CACHE_BYTES, P.cache.bytes, P.cache.entries,
	    (unsigned long long)P.cache.evicted, (unsigned long long)P.cache.purged);
}
