/* Event pictures through the transcoder and their cache (see picture.h). */
#include "picture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_events.h"
#include "h26x.h"
#include "keyframe.h"
#include "kp_time.h"
#include "log.h"
#include "picture_cache.h"
#include "reply.h"

#define THUMB_WIDTH 320

struct pending {
	int used, sent;
	uint32_t job;
	kp_Peer from;
	uint32_t query_id;
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
	int thumb;
	uint32_t codec;
	uint8_t *keyframe; /* Annex-B, until the job is done */
	size_t len;
	int64_t deadline_ms;
};

static struct {
	struct kp_worker *w;
	uv_timer_t timer;
	int timer_on, link_up;
	uint32_t next_job, demand;
	struct pending p[REC_PICTURE_PENDING];
	struct rec_pcache cache;
	uint64_t made, hits, failed, timeouts, busy;
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

static void done(struct pending *p)
{
	free(p->keyframe);
	memset(p, 0, sizeof *p);
	demand();
}

static void send_job(struct pending *p)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_open_tag;
	kp_TranscodeOpen *o = &env.msg.transcode_open;
	o->job = p->job;
	o->kind = kp_TranscodeKind_TRANSCODE_PICTURE;
	snprintf(o->name, sizeof o->name, "event %.40s %s", p->id, p->thumb ? "thumbnail" : "snapshot");
	o->width = p->thumb ? THUMB_WIDTH : 0;
	o->codec = p->codec;
	int r = rec_reply_envelope(kp_Peer_PEER_TRANSCODER, &env, NULL, 0);
	if (r == 0) {
		env = (kp_Envelope)kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_transcode_input_tag;
		env.msg.transcode_input.job = p->job;
		env.msg.transcode_input.keyframe = true;
		r = kp_worker_send_peer(P.w, kp_Peer_PEER_TRANSCODER, &env, p->keyframe, p->len);
	}
	if (r < 0)
		kp_warn("picture of event %s: sending its keyframe to the transcoder failed: %s; retried at relink",
			p->id, strerror(-r));
	else
		p->sent = 1;
}

static void on_tick(uv_timer_t *t)
{
	(void)t;
	int64_t now = (int64_t)kp_mono_ms();
	unsigned left = 0;
	for (unsigned i = 0; i < REC_PICTURE_PENDING; i++) {
		struct pending *p = &P.p[i];
		if (!p->used)
			continue;
		if (now < p->deadline_ms) {
			left++;
			continue;
		}
		P.timeouts++;
		kp_warn("picture of event %s: the transcoder did not answer within %d ms", p->id, REC_PICTURE_WAIT_MS);
		rec_reply_error(p->from, p->query_id, kp_CatalogResult_CATALOG_UNAVAILABLE, "transcoder_unavailable",
				"the transcoder did not make the picture within %d ms", REC_PICTURE_WAIT_MS);
		done(p);
	}
	if (!left) {
		uv_timer_stop(&P.timer);
		P.timer_on = 0;
	}
}

void rec_picture_ask(struct cat *cat, int data_dirfd, kp_Peer from, const kp_EventGet *g, uint32_t revision)
{
	int thumb = g->part == kp_EventPart_EVENT_PART_THUMBNAIL;
	size_t len;
	const uint8_t *jpeg = thumb ? rec_pcache_get(&P.cache, g->event_id, revision, &len) : NULL;
	if (jpeg) {
		P.hits++;
		rec_reply(from, g->id, kp_CatalogBody_CATALOG_BODY_JPEG, jpeg, len);
		return;
	}
	struct pending *p = NULL;
	for (unsigned i = 0; i < REC_PICTURE_PENDING && !p; i++)
		if (!P.p[i].used)
			p = &P.p[i];
	if (!p || !P.w) {
		P.busy++;
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
				"%d pictures wait for the transcoder; retry shortly", REC_PICTURE_PENDING);
		return;
	}
	struct rec_keyframe k;
	int r = rec_keyframe_find_event(cat, g->event_id, thumb ? 1 : 0, &k);
	if (r == -ENOENT && thumb)
		r = rec_keyframe_find_event(cat, g->event_id, 0, &k); /* no sub stream recorded */
	if (r == -ENOENT) {
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_NOT_FOUND, "not_found",
				"event %s has no JPEG and no recorded keyframe", g->event_id);
		return;
	}
	uint8_t *buf = r == 0 ? malloc(k.length ? k.length : 1) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	if (r == 0)
		r = rec_keyframe_read(data_dirfd, &k, buf);
	if (r == 0)
		r = h26x_sample_to_annexb(buf, k.length);
	if (r < 0) {
		free(buf);
		kp_err("%s: reading the keyframe of event %s failed: %s", k.path, g->event_id, strerror(-r));
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"reading the keyframe failed: %s", strerror(-r));
		return;
	}
	*p = (struct pending){.used = 1,
			      .job = ++P.next_job,
			      .from = from,
			      .query_id = g->id,
			      .revision = revision,
			      .thumb = thumb,
			      .codec = k.codec,
			      .keyframe = buf,
			      .len = k.length,
			      .deadline_ms = (int64_t)kp_mono_ms() + REC_PICTURE_WAIT_MS};
	snprintf(p->id, sizeof p->id, "%s", g->event_id);
	demand();
	if (P.link_up)
		send_job(p);
	if (!P.timer_on) {
		if (!P.timer.data) {
			uv_timer_init(kp_worker_loop(P.w), &P.timer);
			P.timer.data = &P;
		}
		uv_timer_start(&P.timer, on_tick, 1000, 1000);
		P.timer_on = 1;
	}
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
			rec_pcache_put(&P.cache, p->id, p->revision, f->tail, f->tail_len);
		rec_reply(p->from, p->query_id, kp_CatalogBody_CATALOG_BODY_JPEG, f->tail, f->tail_len);
		done(p);
	} else if (env->which_msg == kp_Envelope_transcode_ended_tag) {
		const kp_TranscodeEnded *e = &env->msg.transcode_ended;
		struct pending *p = by_job(e->job);
		if (!p)
			return; /* its picture came first */
		P.failed++;
		kp_warn("picture of event %s: the transcoder made none: %s", p->id, e->reason);
		rec_reply_error(p->from, p->query_id, kp_CatalogResult_CATALOG_FAILED, "picture_failed",
				"the event's keyframe made no picture: %s", e->reason);
		done(p);
	}
}

void rec_picture_link(kp_Peer peer, int up)
{
	if (peer != kp_Peer_PEER_TRANSCODER)
		return;
	P.link_up = up;
	for (unsigned i = 0; i < REC_PICTURE_PENDING; i++)
		if (P.p[i].used) {
			P.p[i].sent = 0; /* a lost link lost the job: sent again when it is back */
			if (up)
				send_job(&P.p[i]);
		}
}

void rec_picture_metrics(struct jbuf *b)
{
	jb_printf(b,
		  "# HELP keeppeek_recorderd_pictures_total Event pictures asked of the transcoder or the cache, by "
		  "result.\n"
		  "# TYPE keeppeek_recorderd_pictures_total counter\n"
		  "keeppeek_recorderd_pictures_total{result=\"made\"} %llu\n"
		  "keeppeek_recorderd_pictures_total{result=\"cached\"} %llu\n"
		  "keeppeek_recorderd_pictures_total{result=\"decode_failed\"} %llu\n"
		  "keeppeek_recorderd_pictures_total{result=\"timeout\"} %llu\n"
		  "keeppeek_recorderd_pictures_total{result=\"busy\"} %llu\n"
		  "# HELP keeppeek_recorderd_picture_cache_bytes Bytes of thumbnails in the cache (at most %d).\n"
		  "# TYPE keeppeek_recorderd_picture_cache_bytes gauge\n"
		  "keeppeek_recorderd_picture_cache_bytes %zu\n"
		  "# HELP keeppeek_recorderd_picture_cache_entries Thumbnails in the cache.\n"
		  "# TYPE keeppeek_recorderd_picture_cache_entries gauge\n"
		  "keeppeek_recorderd_picture_cache_entries %zu\n"
		  "# HELP keeppeek_recorderd_picture_cache_evicted_total Thumbnails dropped to stay within the bound.\n"
		  "# TYPE keeppeek_recorderd_picture_cache_evicted_total counter\n"
		  "keeppeek_recorderd_picture_cache_evicted_total %llu\n",
		  (unsigned long long)P.made, (unsigned long long)P.hits, (unsigned long long)P.failed,
		  (unsigned long long)P.timeouts, (unsigned long long)P.busy, REC_PICTURE_CACHE_BYTES, P.cache.bytes,
		  P.cache.entries, (unsigned long long)P.cache.evicted);
}
