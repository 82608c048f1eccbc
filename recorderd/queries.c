/* Answers to webd and rtcd (see queries.h). */
#include "queries.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_events.h"
#include "catalog_keys.h"
#include "event_check.h"
#include "h26x.h"
#include "jobs.h"
#include "keyframe.h"
#include "log.h"
#include "media.h"
#include "picture.h"
#include "reply.h"
#include "tier_cache.h"
#include "tier_local.h"
#include "search.h"
#include "snapshot.h"
#include "thumbnail.h"

static struct {
	struct cat *cat;
	int dirfd;
	int open;
	const struct rec_query_hooks *hooks;
} Q;

#define BAD  kp_CatalogResult_CATALOG_BAD_REQUEST
#define GONE kp_CatalogResult_CATALOG_NOT_FOUND

_Static_assert(sizeof(((kp_CoverageStream *)0)->ranges) / sizeof(int64_t) == 2 * REC_COV_MAX_RANGES,
	       "CoverageStream.ranges holds a snapshot's ranges");
_Static_assert(sizeof(((kp_CoverageStream *)0)->buckets) / sizeof(int64_t) == REC_SNAPSHOT_MAX_BUCKETS,
	       "CoverageStream.buckets holds a snapshot's buckets");

static void send_records(kp_Peer to, uint32_t id, const struct catrec_buf *b)
{
	if (b->failed)
		rec_reply_error(to, id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"the answer is larger than %d bytes or memory ran out", REC_QUERY_ANSWER_MAX);
	else
		rec_reply_records(to, id, b);
}

static void catalog_error(kp_Peer to, uint32_t id, const char *what, int r)
{
	kp_err("%s for %s failed: %s", what, kp_peer_name(to), strerror(-r));
	rec_reply_error(to, id, kp_CatalogResult_CATALOG_FAILED, "catalog_error", "%s failed: %s", what, strerror(-r));
}

/* ---- coverage ---- */

struct cam {
	char name[KP_CAMERA_NAME_MAX + 1];
	uint32_t id;
};

struct cams {
	struct cam c[1024];
	unsigned n;
};

static int add_cam(void *arg, const char *name, uint32_t id, uint32_t days)
{
	struct cams *cs = arg;
	(void)days;
	if (cs->n < 1024 && strlen(name) <= KP_CAMERA_NAME_MAX) {
		snprintf(cs->c[cs->n].name, sizeof cs->c[0].name, "%s", name);
		cs->c[cs->n++].id = id;
	}
	return 0;
}

static int cameras(struct cat_txn *t, const char *only, struct cams *cs)
{
	cs->n = 0;
	if (!only[0])
		return cat_each_camera(t, add_cam, cs);
	uint32_t id;
	int r = cat_camera_lookup(t, only, &id, NULL);
	if (r == 0)
		add_cam(cs, only, id, 0);
	return r;
}

static void coverage_stream(struct catrec_buf *b, uint32_t stream, const struct rec_snapshot *snap)
{
	static kp_CatalogRecord rec;
	rec.which_rec = kp_CatalogRecord_coverage_stream_tag;
	kp_CoverageStream *cs = &rec.rec.coverage_stream; /* every field set below */
	cs->stream = stream;
	cs->has_exact_from = snap->exact_from_ms != INT64_MIN;
	cs->exact_from_ms = cs->has_exact_from ? snap->exact_from_ms : 0;
	cs->ranges_count = (pb_size_t)(2 * snap->n);
	for (uint32_t k = 0; k < snap->n; k++) {
		cs->ranges[2 * k] = snap->r[k].start_ms;
		cs->ranges[2 * k + 1] = snap->r[k].end_ms;
	}
	cs->buckets_count = (pb_size_t)snap->nbuckets;
	for (uint32_t k = 0; k < snap->nbuckets; k++)
		cs->buckets[k] = snap->b[k].covered_ms;
	catrec_add(b, &rec);
}

static void coverage(kp_Peer from, const kp_CoverageQuery *q)
{
	int64_t bucket = q->bucket_ms ? q->bucket_ms : REC_SNAPSHOT_DEFAULT_BUCKET_MS;
	if (q->stream < -1 || q->stream > 1 || q->from_ms >= q->to_ms || bucket % REC_COV_BUCKET_MS || bucket <= 0) {
		rec_reply_error(from, q->id, BAD, "bad_request",
				"coverage needs from_ms < to_ms, stream -1, 0 or 1, and a bucket that is a multiple of "
				"one hour");
		return;
	}
	static struct cams cs;
	static struct rec_snapshot snap;
	struct cat_txn *t = NULL;
	int r = cat_begin(Q.cat, 0, &t);
	if (r == 0)
		r = cameras(t, q->camera, &cs);
	if (r == -ENOENT) {
		cat_abort(t);
		rec_reply_error(from, q->id, GONE, "not_found", "camera \"%s\" has nothing in the catalog", q->camera);
		return;
	}
	struct catrec_buf b;
	catrec_init(&b, REC_QUERY_ANSWER_MAX);
	kp_CatalogRecord head = {
	    .which_rec = kp_CatalogRecord_coverage_head_tag,
	    .rec.coverage_head = {
		.from_ms = q->from_ms, .to_ms = q->to_ms, .bucket_ms = bucket, .total_cameras = cs.n}};
	catrec_add(&b, &head);
	uint64_t end = q->limit ? (uint64_t)q->offset + q->limit : cs.n; /* both up to 2^32 - 1: no wrap */
	for (unsigned i = q->offset; r == 0 && i < cs.n && i < end; i++) {
		kp_CatalogRecord cam = {.which_rec = kp_CatalogRecord_coverage_camera_tag};
		snprintf(cam.rec.coverage_camera.name, sizeof cam.rec.coverage_camera.name, "%s", cs.c[i].name);
		catrec_add(&b, &cam);
		for (int s = 0; s < 2 && r == 0; s++) {
			if (q->stream >= 0 && q->stream != s)
				continue;
			r = rec_snapshot(t, cat_stream_id(cs.c[i].id, (uint32_t)s), q->from_ms, q->to_ms, bucket,
					 &snap);
			if (r == 0)
				coverage_stream(&b, (uint32_t)s, &snap);
		}
	}
	cat_abort(t);
	if (r == -E2BIG || r == -EINVAL)
		rec_reply_error(from, q->id, BAD, "bad_request", "coverage spans at most %d buckets",
				REC_SNAPSHOT_MAX_BUCKETS);
	else if (r < 0)
		catalog_error(from, q->id, "coverage", r);
	else
		send_records(from, q->id, &b);
	catrec_free(&b);
}

/* ---- recordings ---- */

struct rec_item {
	struct cat_recording r;
	uint32_t cam;
};

struct rec_list {
	struct rec_item *v;
	size_t n, cap;
	int64_t from_ms;
	uint32_t cam;
	int err;
};

static int add_rec(void *arg, const struct cat_recording *r)
{
	struct rec_list *l = arg;
	if (r->end_ms <= l->from_ms && r->start_ms < l->from_ms)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct rec_item *nv = realloc(l->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = (struct rec_item){.r = *r, .cam = l->cam};
	return l->n > REC_RECORDINGS_MAX * 2 ? 1 : 0;
}

static int by_start(const void *a, const void *b)
{
	const struct rec_item *x = a, *y = b;
	if (x->r.start_ms != y->r.start_ms)
		return x->r.start_ms < y->r.start_ms ? -1 : 1;
	return x->r.id < y->r.id ? -1 : x->r.id > y->r.id;
}

static void recordings(kp_Peer from, const kp_RecordingsQuery *q)
{
	uint32_t limit = q->limit ? q->limit : REC_RECORDINGS_DEFAULT;
	int64_t to = q->to_ms ? q->to_ms : INT64_MAX;
	if (q->stream < -1 || q->stream > 1 || q->from_ms >= to || limit > REC_RECORDINGS_MAX) {
		rec_reply_error(from, q->id, BAD, "bad_request",
				"recordings needs from_ms < to_ms, stream -1, 0 or 1 and a limit up to %d",
				REC_RECORDINGS_MAX);
		return;
	}
	static struct cams cs;
	struct rec_list l = {.from_ms = q->from_ms};
	struct cat_txn *t = NULL;
	int r = cat_begin(Q.cat, 0, &t);
	if (r == 0)
		r = cameras(t, q->camera, &cs);
	for (unsigned i = 0; r == 0 && i < cs.n; i++)
		for (int s = 0; s < 2 && r == 0; s++) {
			if (q->stream >= 0 && q->stream != s)
				continue;
			uint32_t sid = cat_stream_id(cs.c[i].id, (uint32_t)s);
			struct cat_recording before;
			l.cam = i;
			r = cat_stream_recording_before(t, sid, q->from_ms, &before);
			if (r == 0)
				r = add_rec(&l, &before);
			if (r == -ENOENT)
				r = 0;
			if (r == 0)
				r = cat_each_stream_recording(t, sid, q->from_ms, to, add_rec, &l);
			if (r == 1)
				r = 0;
		}
	cat_abort(t);
	if (r == -ENOENT) {
		rec_reply_error(from, q->id, GONE, "not_found", "camera \"%s\" has nothing in the catalog", q->camera);
		free(l.v);
		return;
	}
	if (r < 0) {
		catalog_error(from, q->id, "recordings", r);
		free(l.v);
		return;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof *l.v, by_start);
	struct catrec_buf b;
	catrec_init(&b, REC_QUERY_ANSWER_MAX);
	for (size_t i = 0; i < l.n && i < limit; i++) {
		const struct cat_recording *x = &l.v[i].r;
		kp_CatalogRecord rec = {.which_rec = kp_CatalogRecord_recording_tag,
					.rec.recording = {.id = x->id,
							  .stream = x->stream_id & 0xff ? 1 : 0,
							  .start_ms = x->start_ms,
							  .end_ms = x->end_ms,
							  .bytes = x->bytes,
							  .codec = (kp_Codec)x->codec,
							  .width = x->width,
							  .height = x->height,
							  .fragments = x->fragments,
							  .open = x->open}};
		snprintf(rec.rec.recording.camera, sizeof rec.rec.recording.camera, "%s", cs.c[l.v[i].cam].name);
		catrec_add(&b, &rec);
	}
	kp_CatalogRecord tail = {.which_rec = kp_CatalogRecord_recordings_end_tag,
				 .rec.recordings_end.truncated = l.n > limit};
	catrec_add(&b, &tail);
	free(l.v);
	send_records(from, q->id, &b);
	catrec_free(&b);
}

/* ---- events ---- */

static void search(kp_Peer from, const kp_EventSearch *s)
{
	static struct rec_search_q q;
	char why[160];
	struct cat_txn *t = NULL;
	int r = cat_begin(Q.cat, 0, &t);
	if (r < 0) {
		catalog_error(from, s->id, "event search", r);
		return;
	}
	r = rec_search_prepare(t, s, &q, why, sizeof why);
	if (r == -EINVAL || r == -EBADMSG || r == -ENOENT) {
		cat_abort(t);
		rec_reply_error(from, s->id, r == -ENOENT ? GONE : BAD,
				r == -EBADMSG  ? "bad_cursor"
				: r == -ENOENT ? "not_found"
					       : "bad_request",
				"%s", why);
		return;
	}
	struct catrec_buf b;
	catrec_init(&b, REC_QUERY_ANSWER_MAX);
	if (r == 0)
		r = rec_search(t, &q, &b);
	cat_abort(t);
	if (r < 0 && r != -E2BIG)
		catalog_error(from, s->id, "event search", r);
	else
		send_records(from, s->id, &b);
	catrec_free(&b);
}

/* The whole file at path (at most max bytes), malloc'ed. */
/* All of fd (at most max bytes) into a new buffer; fd stays the caller's. */
static int read_fd(int fd, size_t max, uint8_t **ret, size_t *ret_len)
{
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && (st.st_size < 0 || (uint64_t)st.st_size > max))
		r = -EFBIG;
	uint8_t *buf = r == 0 ? malloc(st.st_size ? (size_t)st.st_size : 1) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	size_t got = 0;
	while (r == 0 && got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n == 0)
			r = -ENODATA;
		else if (n > 0)
			got += (size_t)n;
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = got;
	return 0;
}

static int read_file(const char *path, size_t max, uint8_t **ret, size_t *ret_len)
{
	int fd = openat(Q.dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = read_fd(fd, max, ret, ret_len);
	close(fd);
	return r;
}

/* A revision's JPEG at path: its file, or, when it moved to the store (its sidecar says
 * where), the read cache's copy; -EINPROGRESS when it is being fetched (the request is
 * parked), -ENOTCONN, -ENOSPC, -EBUSY when the store cannot be read now. */
static int read_event_jpeg(const char *path, const struct cat_event_row *row, uint8_t **ret, size_t *ret_len)
{
	int r = read_file(path, KP_ANALYSIS_JPEG_MAX, ret, ret_len);
	if (r != -ENOENT)
		return r;
	struct cat_tier side;
	int e = rec_tier_sidecar_read(Q.dirfd, path, &side);
	if (e < 0 || !side.etag[0]) /* none, or an intent only: the JPEG is gone */
		return e == -ENOENT || e == 0 ? r : e;
	int fd = -1;
	e = rec_tier_cache_need_jpeg(REC_TIER_EVENT_ID(row->seq), &side, &fd);
	if (e < 0)
		return e;
	e = read_fd(fd, KP_ANALYSIS_JPEG_MAX, ret, ret_len);
	close(fd);
	return e;
}

static int jpeg_whole(const uint8_t *p, size_t n)
{
	return n >= 4 && p[0] == 0xff && p[1] == 0xd8 && p[n - 2] == 0xff && p[n - 1] == 0xd9;
}

/* Cached next to the snapshot (tmp + rename; not synced: it can be made again). */
static void cache_thumb(const char *path, const uint8_t *p, size_t n)
{
	char tmp[CAT_PATH_MAX + 8];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = openat(Q.dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return;
	ssize_t w = write(fd, p, n);
	close(fd);
	if (w != (ssize_t)n || renameat(Q.dirfd, tmp, Q.dirfd, path) < 0)
		unlinkat(Q.dirfd, tmp, 0);
}

static void event_image(kp_Peer from, const kp_EventGet *g, const struct cat_event_row *row)
{
	char path[CAT_PATH_MAX];
	if (!row->jpeg_len) {
		rec_picture_ask(Q.dirfd, from, g, row->revision);
		return;
	}
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;
	if (g->part == kp_EventPart_EVENT_PART_THUMBNAIL) {
		rec_event_thumb_path(g->event_id, row->revision, path, sizeof path);
		r = read_file(path, KP_ANALYSIS_JPEG_MAX, &buf, &len);
		if (r == 0 && jpeg_whole(buf, len)) {
			rec_reply(from, g->id, kp_CatalogBody_CATALOG_BODY_JPEG, buf, len);
			free(buf);
			return;
		}
		free(buf);
		buf = NULL;
	}
	rec_event_jpeg_path(g->event_id, row->revision, path, sizeof path);
	r = read_event_jpeg(path, row, &buf, &len);
	if (r == 0 && g->part == kp_EventPart_EVENT_PART_THUMBNAIL) {
		uint8_t *th;
		size_t tl;
		r = rec_thumbnail_make(buf, len, &th, &tl);
		free(buf);
		buf = r == 0 ? th : NULL;
		len = r == 0 ? tl : 0;
		if (r == 0) {
			rec_event_thumb_path(g->event_id, row->revision, path, sizeof path);
			cache_thumb(path, buf, len);
		}
	}
	if (r == -EINPROGRESS) { /* parked until it is read back from the store */
	} else if (r == -ENOTCONN || r == -ENOSPC || r == -EBUSY) {
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(r),
				"the JPEG is in the object store and cannot be read now: %s", strerror(-r));
	} else if (r < 0) {
		kp_err("%s: reading event %s's JPEG failed: %s", path, g->event_id, strerror(-r));
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error",
				"reading the JPEG failed: %s", strerror(-r));
	} else {
		rec_reply(from, g->id, kp_CatalogBody_CATALOG_BODY_JPEG, buf, len);
	}
	free(buf);
}

static void event_keyframe(kp_Peer from, const kp_EventGet *g)
{
	struct rec_keyframe k;
	if (g->stream > 1) {
		rec_reply_error(from, g->id, BAD, "bad_request", "stream must be 0 (main) or 1 (sub)");
		return;
	}
	int r = rec_keyframe_find_event(Q.cat, g->event_id, g->stream, &k);
	if (r == -ENOENT) {
		rec_reply_error(from, g->id, GONE, "not_found", "no keyframe of the %s stream at or before event %s",
				g->stream ? "sub" : "main", g->event_id);
		return;
	}
	if (r == -EAGAIN) {
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_UNAVAILABLE, "not_yet_recorded",
				"the %s stream's video at event %s is not recorded yet; retry in a second",
				g->stream ? "sub" : "main", g->event_id);
		return;
	}
	uint8_t *buf = r == 0 ? malloc(k.length ? k.length : 1) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	if (r == 0)
		r = rec_tier_keyframe_read(Q.dirfd, &k, buf);
	if (r == 0)
		r = h26x_sample_to_annexb(buf, k.length);
	if (r == -EINPROGRESS) /* parked until its bytes come from the store */
		;
	else if (r == -ENOTCONN || r == -ENOSPC || r == -EBUSY)
		rec_reply_error(from, g->id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(r),
				"the keyframe is in the object store and cannot be read now: %s", strerror(-r));
	else if (r < 0)
		catalog_error(from, g->id, "keyframe read", r);
	else
		rec_reply(from, g->id,
			  k.codec == 2 ? kp_CatalogBody_CATALOG_BODY_H265 : kp_CatalogBody_CATALOG_BODY_H264, buf,
			  k.length);
	free(buf);
}

static void event_get(kp_Peer from, const kp_EventGet *g)
{
	struct cat_txn *t = NULL;
	struct cat_event_row row;
	struct catrec_buf b;
	catrec_init(&b, REC_QUERY_ANSWER_MAX);
	int r = cat_begin(Q.cat, 0, &t);
	if (r == 0) {
		r = cat_event_get(t, g->event_id, &row, NULL);
		if (r == 0 && g->part == kp_EventPart_EVENT_PART_JSON)
			r = rec_event_row_get(t, g->event_id, &b);
		cat_abort(t);
	}
	if (r == -ENOENT)
		rec_reply_error(from, g->id, GONE, "not_found", "no event %s", g->event_id);
	else if (r < 0)
		catalog_error(from, g->id, "event read", r);
	else if (g->part == kp_EventPart_EVENT_PART_JSON)
		send_records(from, g->id, &b);
	else if (g->part == kp_EventPart_EVENT_PART_KEYFRAME)
		event_keyframe(from, g);
	else
		event_image(from, g, &row);
	catrec_free(&b);
}

/* ---- media ---- */

static void media_error(kp_Peer to, uint32_t id, kp_CatalogResult result, const char *code)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_media_piece_tag;
	env.msg.media_piece.id = id;
	env.msg.media_piece.done = 1;
	env.msg.media_piece.result = result;
	snprintf(env.msg.media_piece.error_code, sizeof env.msg.media_piece.error_code, "%s", code);
	if (rec_reply_envelope(to, &env, NULL, 0) < 0)
		kp_warn("media answer %u to %s lost", (unsigned)id, kp_peer_name(to));
}

/* The rebased fragment headers of an export as a read-only descriptor of a file that
 * is already unlinked (data_dir/exports/, emptied at start). */
static int headers_fd(uint32_t id, const uint8_t *p, size_t len, int *ret)
{
	char path[64];
	snprintf(path, sizeof path, "exports/%u-%u", (unsigned)getpid(), (unsigned)id);
	if (mkdirat(Q.dirfd, "exports", 0750) < 0 && errno != EEXIST)
		return -errno;
	int w = openat(Q.dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w < 0)
		return -errno;
	int r = 0;
	for (size_t off = 0; off < len && r == 0;) {
		ssize_t n = write(w, p + off, len - off);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	close(w);
	int fd = r == 0 ? openat(Q.dirfd, path, O_RDONLY | O_CLOEXEC) : -1;
	if (r == 0 && fd < 0)
		r = -errno;
	unlinkat(Q.dirfd, path, 0);
	if (r == 0)
		*ret = fd;
	return r;
}

/* The pieces of remote recordings in s: each cached, or fetched first (0: the request is
 * parked by rec_query_frame, or answered here with an error). Playback (not an export)
 * is cut before the first piece not cached once it has a fragment, and asks for at most
 * REC_TIER_PLAYBACK_BYTES: the player asks for what follows as it plays. */
static int remote_ready(kp_Peer from, const kp_MediaOpen *m, struct rec_span *s)
{
	uint64_t asked = 0;
	int waiting = 0;
	unsigned fragments = 0;
	for (unsigned i = 0; i < s->n; i++) {
		const struct rec_piece *p = &s->p[i];
		const struct cat_recording *rec = &s->recs[p->rec];
		if (p->hdr || !(rec->flags & CAT_REC_REMOTE)) {
			fragments += !p->init && !p->hdr;
			continue;
		}
		if (waiting && !s->export && asked + p->len > REC_TIER_PLAYBACK_BYTES)
			break;
		int fd = -1;
		int r = rec_tier_cache_need(rec, p->off, p->len, p->init, &fd);
		if (fd >= 0)
			close(fd);
		if (r == -EINPROGRESS && !s->export && fragments && !waiting) {
			rec_tier_cache_cancel();
			s->n = i > 0 && s->p[i - 1].init ? i - 1 : i; /* what is cached plays now */
			return 1;
		}
		if (r == -EINPROGRESS) {
			waiting = 1;
			asked += p->len;
			continue;
		}
		if (r < 0) {
			rec_tier_cache_cancel();
			kp_warn("media of %s/%s: recording %llu is in the object store: %s", m->camera,
				m->stream ? "sub" : "main", (unsigned long long)rec->id, strerror(-r));
			media_error(from, m->id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(r));
			return 0;
		}
		fragments += !p->init;
	}
	return !waiting;
}

static void media(kp_Peer from, const kp_MediaOpen *m)
{
	if (m->stream > 1 || (m->to_ms && m->from_ms >= m->to_ms)) {
		media_error(from, m->id, BAD, "bad_request");
		return;
	}
	static struct rec_span s;
	memset(&s, 0, sizeof s);
	struct cat_txn *t = NULL;
	uint32_t cam;
	int r = cat_begin(Q.cat, 0, &t);
	if (r == 0) {
		r = cat_camera_lookup(t, m->camera, &cam, NULL);
		if (r == 0)
			r = rec_media_span(t, cat_stream_id(cam, m->stream), m->from_ms, m->to_ms, m->for_export, &s);
		cat_abort(t);
	}
	if (r == -ENOENT) {
		media_error(from, m->id, GONE, "nothing_recorded");
		return;
	}
	if (r < 0) {
		kp_err("media span of %s/%s: catalog: %s", m->camera, m->stream ? "sub" : "main", strerror(-r));
		media_error(from, m->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error");
		return;
	}
	if (!remote_ready(from, m, &s))
		return;
	int hdr_fd = -1;
	if (s.export) {
		uint8_t *hdr;
		size_t hdr_len;
		r = rec_media_export_headers(Q.dirfd, &s, &hdr, &hdr_len);
		if (r == 0) {
			r = headers_fd(m->id, hdr, hdr_len, &hdr_fd);
			free(hdr);
		}
		if (r < 0) {
			kp_err("export of %s/%s: preparing the fragment headers failed: %s", m->camera,
			       m->stream ? "sub" : "main", strerror(-r));
			media_error(from, m->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error");
			return;
		}
	}
	int fd = -1;
	unsigned fd_rec = ~0u;
	for (unsigned i = 0; i < s.n; i++) {
		const struct rec_piece *p = &s.p[i];
		const struct cat_recording *rec = &s.recs[p->rec];
		if (!p->hdr && p->rec != fd_rec) {
			if (fd >= 0)
				close(fd);
			fd_rec = p->rec;
			fd = -1;
			/* A remote recording's pieces are read from its cache file (all cached now:
			 * remote_ready saw them, and they are pinned until the request ends). */
			int tr = rec_tier_cache_need(rec, p->off, p->len, p->init, &fd);
			if (tr < 0) {
				rec_tier_cache_cancel();
				kp_err("%s: its cached samples for %s are gone: %s", rec->path, kp_peer_name(from),
				       strerror(-tr));
				media_error(from, m->id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(tr));
				break;
			}
			if (tr == 1)
				fd = openat(Q.dirfd, rec->path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				kp_err("%s: opening it for %s failed: %s", rec->path, kp_peer_name(from),
				       strerror(errno));
				media_error(from, m->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error");
				break;
			}
		}
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_media_piece_tag;
		env.fd_count = 1;
		kp_MediaPiece *mp = &env.msg.media_piece;
		mp->id = m->id;
		mp->index = i;
		mp->done = i + 1 == s.n;
		mp->recording_id = rec->id;
		mp->init = p->init;
		mp->offset = p->off;
		mp->length = p->len;
		mp->start_ms = p->start_ms;
		mp->duration_ms = (uint32_t)(p->end_ms - p->start_ms);
		mp->codec = (kp_Codec)rec->codec;
		mp->width = rec->width;
		mp->height = rec->height;
		r = rec_reply_envelope(from, &env, p->hdr ? &hdr_fd : &fd, 1);
		if (r < 0) {
			kp_warn("media answer %u to %s cut after %u pieces: %s", (unsigned)m->id, kp_peer_name(from), i,
				strerror(-r));
			break;
		}
	}
	if (hdr_fd >= 0)
		close(hdr_fd);
	if (fd >= 0)
		close(fd);
}

/* ---- metrics ---- */

static void event_metrics(struct jbuf *b)
{
	if (Q.hooks)
		Q.hooks->event_metrics(b);
}

static void metrics(kp_Peer from, const kp_TopicQuery *q)
{
	if (q->topic != kp_SupervisorTopic_TOPIC_METRICS) {
		rec_reply_error(from, q->id, BAD, "bad_request", "recorderd answers TOPIC_METRICS only");
		return;
	}
	struct jbuf b;
	jb_init(&b, REC_QUERY_ANSWER_MAX);
	if (Q.hooks)
		Q.hooks->core_metrics(&b, Q.cat);
	event_metrics(&b);
	rec_picture_metrics(&b);
	jb_printf(&b,
		  "# HELP keeppeek_recorderd_answers_lost_total Answers to webd/rtcd that could not be queued.\n"
		  "# TYPE keeppeek_recorderd_answers_lost_total counter\n"
		  "keeppeek_recorderd_answers_lost_total %llu\n",
		  (unsigned long long)rec_reply_lost());
	if (b.failed)
		rec_reply_error(from, q->id, kp_CatalogResult_CATALOG_FAILED, "catalog_error", "metrics did not fit");
	else
		rec_reply(from, q->id, kp_CatalogBody_CATALOG_BODY_METRICS, b.p, b.len);
	jb_free(&b);
}

/* ---- dispatch ---- */

/* Export header files a crash left behind (each is unlinked right after it is opened). */
static void clean_exports(void)
{
	int dfd = openat(Q.dirfd, "exports", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && unlinkat(dfd, e->d_name, 0) < 0)
			kp_warn("exports/%s: removing a leftover failed: %s", e->d_name, strerror(errno));
	closedir(d);
}

void rec_queries_hooks(const struct rec_query_hooks *h)
{
	Q.hooks = h;
}

void rec_queries_open(struct kp_worker *w, struct cat *cat, int data_dirfd)
{
	rec_reply_init(w);
	Q.cat = cat;
	Q.dirfd = data_dirfd;
	Q.open = 1;
	clean_exports();
}

void rec_queries_close(void)
{
	Q.open = 0;
}

static uint32_t query_id(const kp_Envelope *env)
{
	switch (env->which_msg) {
	case kp_Envelope_coverage_query_tag:
		return env->msg.coverage_query.id;
	case kp_Envelope_recordings_query_tag:
		return env->msg.recordings_query.id;
	case kp_Envelope_event_publish_tag:
		return env->msg.event_publish.id;
	case kp_Envelope_event_search_tag:
		return env->msg.event_search.id;
	case kp_Envelope_event_get_tag:
		return env->msg.event_get.id;
	case kp_Envelope_picture_query_tag:
		return env->msg.picture_query.id;
	case kp_Envelope_delete_request_tag:
		return env->msg.delete_request.id;
	case kp_Envelope_media_open_tag:
		return env->msg.media_open.id;
	case kp_Envelope_topic_query_tag:
		return env->msg.topic_query.id;
	default:
		return 0;
	}
}

static void dispatch(kp_Peer from, struct kp_ipc_frame *f);

/* A request parked for bytes from the store: run again, or answered with its error. */
static void query_again(kp_Peer from, const kp_Envelope *env, int err, const char *why)
{
	if (err) {
		int r = -err;
		uint32_t id = query_id(env);
		if (env->which_msg == kp_Envelope_media_open_tag)
			media_error(from, id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(r));
		else
			rec_reply_error(from, id, kp_CatalogResult_CATALOG_UNAVAILABLE, rec_tier_error_code(r), "%s",
					why);
		return;
	}
	struct kp_ipc_frame f = {.env = env};
	dispatch(from, &f);
	rec_tier_cache_end(from, env, query_again);
}

void rec_query_frame(kp_Peer from, struct kp_ipc_frame *f)
{
	rec_tier_cache_begin(0);
	dispatch(from, f);
	rec_tier_cache_end(from, f->env, query_again);
}

static void dispatch(kp_Peer from, struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	uint32_t id = query_id(env);
	if (!id) {
		kp_warn("ignoring message %u from %s: not a query recorderd answers", (unsigned)env->which_msg,
			kp_peer_name(from));
		return;
	}
	if (!Q.open && env->which_msg != kp_Envelope_topic_query_tag) {
		if (env->which_msg == kp_Envelope_media_open_tag)
			media_error(from, id, kp_CatalogResult_CATALOG_UNAVAILABLE, "no_catalog");
		else
			rec_reply_error(from, id, kp_CatalogResult_CATALOG_UNAVAILABLE, "no_catalog",
					"recorderd has no catalog open (see its log)");
		return;
	}
	switch (env->which_msg) {
	case kp_Envelope_coverage_query_tag:
		coverage(from, &env->msg.coverage_query);
		break;
	case kp_Envelope_recordings_query_tag:
		recordings(from, &env->msg.recordings_query);
		break;
	case kp_Envelope_event_publish_tag:
		if (!Q.hooks)
			rec_reply_error(from, id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
					"recorderd takes no publications here");
		else
			Q.hooks->publish(from, &env->msg.event_publish, f->tail, f->tail_len);
		break;
	case kp_Envelope_event_search_tag:
		search(from, &env->msg.event_search);
		break;
	case kp_Envelope_event_get_tag:
		event_get(from, &env->msg.event_get);
		break;
	case kp_Envelope_picture_query_tag:
		rec_picture_at(Q.cat, Q.dirfd, from, &env->msg.picture_query);
		break;
	case kp_Envelope_delete_request_tag:
		if (!Q.hooks)
			rec_reply_error(from, id, kp_CatalogResult_CATALOG_UNAVAILABLE, "busy",
					"recorderd takes no deletes here");
		else
			Q.hooks->remove(from, &env->msg.delete_request);
		break;
	case kp_Envelope_media_open_tag:
		media(from, &env->msg.media_open);
		break;
	case kp_Envelope_topic_query_tag:
		if (!Q.open) {
			struct jbuf b;
			jb_init(&b, 4096);
			event_metrics(&b);
			rec_reply(from, id, kp_CatalogBody_CATALOG_BODY_METRICS, b.p, b.len);
			jb_free(&b);
		} else {
			metrics(from, &env->msg.topic_query);
		}
		break;
	}
}
