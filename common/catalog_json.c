/* recorderd's answers as JSON (see catalog_json.h), through the common writer. */
#include "catalog_json.h"

#include <errno.h>

#include "catalog_records.h"

static const char *const codec_name[] = {"none", "h264", "h265"};

static void key_int(struct json_w *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_int(w, v);
}

static void key_str(struct json_w *w, const char *key, const char *v)
{
	jw_key(w, key);
	jw_str(w, v);
}

static void key_bool(struct json_w *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}

static void key_ids(struct json_w *w, const char *key, const uint64_t *v, pb_size_t n)
{
	jw_key(w, key);
	jw_arr(w);
	for (pb_size_t i = 0; i < n; i++)
		jw_int(w, (int64_t)v[i]);
	jw_arr_end(w);
}

void catj_begin(struct catj *c, enum catj_kind kind, char *buf, size_t cap)
{
	*c = (struct catj){.kind = kind};
	jw_init(&c->w, buf, cap);
	if (kind == CATJ_RECORDINGS || kind == CATJ_SEARCH) {
		jw_obj(&c->w);
		jw_key(&c->w, kind == CATJ_RECORDINGS ? "recordings" : "events");
		jw_arr(&c->w);
	}
}

static void close_camera(struct catj *c)
{
	if (c->in_camera) {
		jw_arr_end(&c->w);
		jw_obj_end(&c->w);
		c->in_camera = false;
	}
}

static int coverage(struct catj *c, const kp_CatalogRecord *rec)
{
	struct json_w *w = &c->w;
	if (rec->which_rec == kp_CatalogRecord_coverage_head_tag) {
		if (c->records)
			return -EBADMSG;
		const kp_CoverageHead *h = &rec->rec.coverage_head;
		jw_obj(w);
		key_int(w, "from_ms", h->from_ms);
		key_int(w, "to_ms", h->to_ms);
		key_int(w, "bucket_ms", h->bucket_ms);
		key_int(w, "total_cameras", h->total_cameras);
		jw_key(w, "cameras");
		jw_arr(w);
		return 0;
	}
	if (!c->records)
		return -EBADMSG;
	if (rec->which_rec == kp_CatalogRecord_coverage_camera_tag) {
		close_camera(c);
		jw_obj(w);
		key_str(w, "name", rec->rec.coverage_camera.name);
		jw_key(w, "streams");
		jw_arr(w);
		c->in_camera = true;
		return 0;
	}
	if (rec->which_rec != kp_CatalogRecord_coverage_stream_tag || !c->in_camera)
		return -EBADMSG;
	const kp_CoverageStream *s = &rec->rec.coverage_stream;
	jw_obj(w);
	key_str(w, "name", kp_stream_name(s->stream));
	jw_key(w, "exact_from_ms");
	if (s->has_exact_from)
		jw_int(w, s->exact_from_ms);
	else
		jw_null(w);
	jw_key(w, "ranges");
	jw_arr(w);
	if (s->ranges_count % 2)
		return -EBADMSG;
	for (pb_size_t i = 0; i < s->ranges_count; i += 2) {
		jw_arr(w);
		jw_int(w, s->ranges[i]);
		jw_int(w, s->ranges[i + 1]);
		jw_arr_end(w);
	}
	jw_arr_end(w);
	key_bool(w, "ranges_truncated", s->has_exact_from);
	jw_key(w, "buckets");
	jw_arr(w);
	for (pb_size_t i = 0; i < s->buckets_count; i++)
		jw_int(w, s->buckets[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	return 0;
}

static int recordings(struct catj *c, const kp_CatalogRecord *rec)
{
	struct json_w *w = &c->w;
	if (rec->which_rec == kp_CatalogRecord_recordings_end_tag) {
		jw_arr_end(w);
		key_bool(w, "truncated", rec->rec.recordings_end.truncated);
		jw_obj_end(w);
		c->ended = true;
		return 0;
	}
	if (rec->which_rec != kp_CatalogRecord_recording_tag)
		return -EBADMSG;
	const kp_RecordingRow *x = &rec->rec.recording;
	jw_obj(w);
	key_int(w, "id", (int64_t)x->id);
	key_str(w, "camera", x->camera);
	key_str(w, "stream", kp_stream_name(x->stream));
	key_int(w, "start_ms", x->start_ms);
	key_int(w, "end_ms", x->end_ms);
	key_int(w, "bytes", (int64_t)x->bytes);
	key_str(w, "codec", (unsigned)x->codec < 3 ? codec_name[x->codec] : "none");
	key_int(w, "width", x->width);
	key_int(w, "height", x->height);
	key_int(w, "fragments", x->fragments);
	key_bool(w, "open", x->open);
	jw_obj_end(w);
	return 0;
}

static void event(struct json_w *w, const kp_EventRow *e)
{
	kp_event_json(w, &e->event, (size_t)e->jpeg_bytes, e->keyframes, e->keyframes_count);
}

static int search(struct catj *c, const kp_CatalogRecord *rec)
{
	struct json_w *w = &c->w;
	if (rec->which_rec == kp_CatalogRecord_search_end_tag) {
		jw_arr_end(w);
		jw_key(w, "next_cursor");
		if (rec->rec.search_end.next_cursor[0])
			jw_str(w, rec->rec.search_end.next_cursor);
		else
			jw_null(w);
		jw_obj_end(w);
		c->ended = true;
		return 0;
	}
	if (rec->which_rec != kp_CatalogRecord_event_tag)
		return -EBADMSG;
	event(w, &rec->rec.event);
	return 0;
}

static int one(struct catj *c, const kp_CatalogRecord *rec)
{
	struct json_w *w = &c->w;
	if (c->kind == CATJ_EVENT && rec->which_rec == kp_CatalogRecord_event_tag) {
		event(w, &rec->rec.event);
	} else if (c->kind == CATJ_ACK && rec->which_rec == kp_CatalogRecord_ack_tag) {
		jw_obj(w);
		key_str(w, "id", rec->rec.ack.event_id);
		key_int(w, "revision", rec->rec.ack.revision);
		key_int(w, "committed_ms", rec->rec.ack.committed_ms);
		jw_obj_end(w);
	} else if (c->kind == CATJ_DELETE && rec->which_rec == kp_CatalogRecord_deleted_tag) {
		const kp_DeleteResult *d = &rec->rec.deleted;
		jw_obj(w);
		key_int(w, "deleted_recordings", d->deleted_recordings);
		key_int(w, "deleted_events", d->deleted_events);
		key_ids(w, "missing_recordings", d->missing_recordings, d->missing_recordings_count);
		jw_key(w, "missing_events");
		jw_arr(w);
		for (pb_size_t i = 0; i < d->missing_events_count; i++)
			jw_str(w, d->missing_events[i]);
		jw_arr_end(w);
		key_ids(w, "busy_recordings", d->busy_recordings, d->busy_recordings_count);
		jw_obj_end(w);
	} else {
		return -EBADMSG;
	}
	c->ended = true;
	return 0;
}

int catj_record(struct catj *c, const kp_CatalogRecord *rec)
{
	if (c->ended)
		return -EBADMSG;
	int r;
	switch (c->kind) {
	case CATJ_COVERAGE:
		r = coverage(c, rec);
		break;
	case CATJ_RECORDINGS:
		r = recordings(c, rec);
		break;
	case CATJ_SEARCH:
		r = search(c, rec);
		break;
	default:
		r = one(c, rec);
		break;
	}
	if (r == 0)
		c->records++;
	return r < 0 ? r : c->w.overflow ? -ENOBUFS : 0;
}

int catj_end(struct catj *c)
{
	if (c->kind == CATJ_COVERAGE && c->records && !c->ended) {
		close_camera(c);
		jw_arr_end(&c->w);
		jw_obj_end(&c->w);
		c->ended = true;
	}
	if (!c->ended)
		return -EBADMSG;
	return c->w.overflow || c->w.depth ? -ENOBUFS : 0;
}

const char *catj_text(const struct catj *c, size_t *len)
{
	*len = c->w.len;
	return c->w.buf;
}

bool catj_full(const struct catj *c)
{
	return c->w.cap - c->w.len < CATJ_RECORD_MAX;
}

void catj_take(struct catj *c)
{
	jw_take(&c->w);
}

static int render_one(void *arg, const kp_CatalogRecord *rec)
{
	return catj_record(arg, rec);
}

long catj_render(enum catj_kind kind, const uint8_t *p, size_t len, char *buf, size_t cap)
{
	static kp_CatalogRecord rec;
	struct catj c;
	catj_begin(&c, kind, buf, cap);
	int r = catrec_each(p, len, &rec, render_one, &c);
	if (r == 0)
		r = catj_end(&c);
	return r < 0 ? r : (long)c.w.len;
}
