/* Events in the LMDB catalog (see catalog_events.h and docs/catalog.md). */
#include "catalog_events.h"

#include <errno.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "catalog_keys.h"
#include "event_terms.h"

#define ROW_MAX (sizeof(struct cat_event_row) + kp_EventRecord_size)

static int id_ok(const char *id)
{
	size_t n = strlen(id);
	return n >= 1 && n <= CAT_EVENT_ID_MAX;
}

static int read_row(const MDB_val *v, struct cat_event_row *ret, kp_EventRecord *ev)
{
	if (v->mv_size < sizeof *ret)
		return -EBADMSG;
	memcpy(ret, v->mv_data, sizeof *ret);
	if (v->mv_size != sizeof *ret + ret->pb_len)
		return -EBADMSG;
	if (!ev)
		return 0;
	*ev = (kp_EventRecord)kp_EventRecord_init_zero;
	pb_istream_t in = pb_istream_from_buffer((const uint8_t *)v->mv_data + sizeof *ret, ret->pb_len);
	return pb_decode(&in, kp_EventRecord_fields, ev) ? 0 : -EBADMSG;
}

int cat_event_get(struct cat_txn *t, const char *id, struct cat_event_row *ret, kp_EventRecord *ev)
{
	if (!id_ok(id))
		return -ENOENT;
	MDB_val key = {.mv_size = strlen(id), .mv_data = (void *)id}, v;
	int r = cat_map_err(mdb_get(t->txn, t->c->dbi[DB_EVENTS], &key, &v));
	return r < 0 ? r : read_row(&v, ret, ev);
}

int cat_event_revision(struct cat_txn *t, const char *id, uint32_t *ret)
{
	struct cat_event_row row;
	int r = cat_event_get(t, id, &row, NULL);
	if (r == -ENOENT) {
		*ret = 0;
		return 0;
	}
	if (r == 0)
		*ret = row.revision;
	return r;
}

/* Every key of a stored revision except its row: terms, time keys, links. */
static int remove_keys(struct cat_txn *t, const struct cat_event_row *row, const kp_EventRecord *ev)
{
	uint8_t k[CAT_KEY_EVENT_BY_CAM];
	cat_key_event_by_time(k, row->start_ms, row->seq);
	int r = cat_db_del(t, DB_EVENTS_BY_TIME, k, CAT_KEY_EVENT_BY_TIME);
	cat_key_event_by_cam(k, row->camera_id, row->start_ms, row->seq);
	if (r == 0)
		r = cat_db_del(t, DB_EVENTS_BY_CAMERA, k, CAT_KEY_EVENT_BY_CAM);
	for (uint32_t s = 0; s < 2 && r == 0; s++) {
		uint8_t lk[CAT_KEY_EVENT_LINK];
		cat_key_event_link(lk, row->seq, s);
		r = cat_db_del(t, DB_EVENT_KEYFRAMES, lk, sizeof lk);
	}
	static struct rec_terms terms;
	rec_event_terms(ev, &terms);
	for (unsigned i = 0; i < terms.n && r == 0; i++) {
		uint8_t tk[CAT_KEY_TERM_MAX];
		size_t n = cat_key_term(tk, terms.t[i], row->start_ms, row->seq);
		r = cat_db_del(t, DB_EVENT_TERMS, tk, n);
	}
	return r;
}

static int next_seq(struct cat_txn *t, uint64_t *ret)
{
	uint64_t next = 0;
	int r = cat_db_get(t, DB_META, "next_event", 10, &next, sizeof next);
	if (r < 0 && r != -ENOENT)
		return r;
	*ret = next + 1;
	return cat_db_put(t, DB_META, "next_event", 10, ret, sizeof *ret);
}

int cat_event_put(struct cat_txn *t, uint32_t camera_id, const kp_EventRecord *ev, uint32_t jpeg_len,
		  const struct cat_event_link *links, unsigned nlinks, struct cat_event_row *ret_old)
{
	const uint8_t *pb;
	size_t n;
	return cat_event_put_pb(t, camera_id, ev, jpeg_len, links, nlinks, ret_old, &pb, &n);
}

int cat_event_put_pb(struct cat_txn *t, uint32_t camera_id, const kp_EventRecord *ev, uint32_t jpeg_len,
		     const struct cat_event_link *links, unsigned nlinks, struct cat_event_row *ret_old,
		     const uint8_t **ret_pb, size_t *ret_pb_len)
{
	static _Thread_local uint8_t buf[ROW_MAX];
	if (!id_ok(ev->event_id) || !ev->revision)
		return -EINVAL;
	static kp_EventRecord old;
	struct cat_event_row row;
	int r = cat_event_get(t, ev->event_id, &row, &old);
	if (r == 0 && row.revision >= ev->revision)
		return -EEXIST;
	if (r == 0)
		r = remove_keys(t, &row, &old);
	else if (r == -ENOENT) {
		memset(&row, 0, sizeof row);
		r = 0;
	}
	if (r < 0)
		return r;
	if (ret_old)
		*ret_old = row;
	struct cat_event_row nr = {.revision = ev->revision,
				   .camera_id = camera_id,
				   .start_ms = ev->start_ms,
				   .end_ms = ev->end_ms ? ev->end_ms : ev->start_ms,
				   .committed_ms = ev->committed_ms,
				   .jpeg_len = jpeg_len};
	pb_ostream_t out = pb_ostream_from_buffer(buf + sizeof nr, kp_EventRecord_size);
	r = pb_encode(&out, kp_EventRecord_fields, ev) ? next_seq(t, &nr.seq) : -EINVAL;
	nr.pb_len = (uint32_t)out.bytes_written;
	memcpy(buf, &nr, sizeof nr);
	if (r == 0)
		r = cat_db_put(t, DB_EVENTS, ev->event_id, strlen(ev->event_id), buf, sizeof nr + nr.pb_len);
	*ret_pb = buf + sizeof nr;
	*ret_pb_len = nr.pb_len;
	uint8_t k[CAT_KEY_EVENT_BY_CAM];
	cat_key_event_by_time(k, nr.start_ms, nr.seq);
	if (r == 0)
		r = cat_db_put(t, DB_EVENTS_BY_TIME, k, CAT_KEY_EVENT_BY_TIME, ev->event_id, strlen(ev->event_id));
	cat_key_event_by_cam(k, camera_id, nr.start_ms, nr.seq);
	if (r == 0)
		r = cat_db_put(t, DB_EVENTS_BY_CAMERA, k, CAT_KEY_EVENT_BY_CAM, ev->event_id, strlen(ev->event_id));
	for (unsigned i = 0; i < nlinks && r == 0; i++) {
		uint8_t lk[CAT_KEY_EVENT_LINK];
		cat_key_event_link(lk, nr.seq, links[i].stream);
		r = cat_db_put(t, DB_EVENT_KEYFRAMES, lk, sizeof lk, &links[i], sizeof links[i]);
	}
	static struct rec_terms terms;
	if (r == 0)
		rec_event_terms(ev, &terms);
	for (unsigned i = 0; r == 0 && i < terms.n; i++) {
		uint8_t tk[CAT_KEY_TERM_MAX];
		size_t n = cat_key_term(tk, terms.t[i], nr.start_ms, nr.seq);
		r = cat_db_put(t, DB_EVENT_TERMS, tk, n, "", 0);
	}
	return r;
}

int cat_event_delete(struct cat_txn *t, const char *id, struct cat_event_row *ret_old)
{
	static kp_EventRecord old;
	struct cat_event_row row;
	int r = cat_event_get(t, id, &row, &old);
	if (r == 0)
		r = remove_keys(t, &row, &old);
	if (r == 0)
		r = cat_db_del(t, DB_EVENTS, id, strlen(id));
	if (r == 0 && ret_old)
		*ret_old = row;
	return r;
}

int cat_event_link_get(struct cat_txn *t, uint64_t seq, uint32_t stream, struct cat_event_link *ret)
{
	uint8_t lk[CAT_KEY_EVENT_LINK];
	cat_key_event_link(lk, seq, stream);
	return cat_db_get(t, DB_EVENT_KEYFRAMES, lk, sizeof lk, ret, sizeof *ret);
}

int cat_event_link_put(struct cat_txn *t, uint64_t seq, const struct cat_event_link *l)
{
	uint8_t lk[CAT_KEY_EVENT_LINK];
	cat_key_event_link(lk, seq, l->stream);
	return cat_db_put(t, DB_EVENT_KEYFRAMES, lk, sizeof lk, l, sizeof *l);
}

struct time_walk {
	uint32_t camera_id;
	int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id);
	void *arg;
};

static int visit_time(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct time_walk *w = ctx;
	const uint8_t *k = key->mv_data;
	size_t off = 0;
	if (w->camera_id) {
		if (key->mv_size != CAT_KEY_EVENT_BY_CAM || cat_get_be32(k) != w->camera_id)
			return CAT_WALK_END;
		off = 4;
	} else if (key->mv_size != CAT_KEY_EVENT_BY_TIME) {
		return -EBADMSG;
	}
	char id[CAT_EVENT_ID_MAX + 1];
	if (v->mv_size < 1 || v->mv_size > CAT_EVENT_ID_MAX)
		return -EBADMSG;
	memcpy(id, v->mv_data, v->mv_size);
	id[v->mv_size] = '\0';
	return w->fn(w->arg, cat_get_be_time(k + off), cat_get_be64(k + off + 8), id);
}

int cat_each_event_back(struct cat_txn *t, uint32_t camera_id, int64_t before_ms, uint64_t before_seq,
			int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id), void *arg)
{
	struct time_walk w = {.camera_id = camera_id, .fn = fn, .arg = arg};
	uint8_t k[CAT_KEY_EVENT_BY_CAM];
	if (camera_id) {
		cat_key_event_by_cam(k, camera_id, before_ms, before_seq);
		return cat_db_walk_back(t, DB_EVENTS_BY_CAMERA, k, CAT_KEY_EVENT_BY_CAM, visit_time, &w);
	}
	cat_key_event_by_time(k, before_ms, before_seq);
	return cat_db_walk_back(t, DB_EVENTS_BY_TIME, k, CAT_KEY_EVENT_BY_TIME, visit_time, &w);
}

int cat_each_event(struct cat_txn *t, int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id), void *arg)
{
	struct time_walk w = {.fn = fn, .arg = arg};
	return cat_db_walk(t, DB_EVENTS_BY_TIME, NULL, 0, visit_time, &w);
}

int cat_each_event_from(struct cat_txn *t, int64_t from_ms, uint64_t from_seq,
			int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id), void *arg)
{
	struct time_walk w = {.fn = fn, .arg = arg};
	uint8_t k[CAT_KEY_EVENT_BY_TIME];
	cat_key_event_by_time(k, from_ms, from_seq);
	return cat_db_walk(t, DB_EVENTS_BY_TIME, k, CAT_KEY_EVENT_BY_TIME, visit_time, &w);
}

struct term_walk {
	const char *prefix;
	size_t len;
	int exact;
	int (*fn)(void *arg, int64_t start_ms, uint64_t seq);
	void *arg;
};

static int visit_term(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct term_walk *w = ctx;
	(void)v;
	size_t tlen;
	int64_t start;
	uint64_t seq;
	if (key->mv_size < w->len || memcmp(key->mv_data, w->prefix, w->len))
		return CAT_WALK_END;
	if (cat_parse_term_key(key->mv_data, key->mv_size, &tlen, &start, &seq) < 0)
		return -EBADMSG;
	if (w->exact && tlen != w->len)
		return 0;
	return w->fn(w->arg, start, seq);
}

int cat_each_term(struct cat_txn *t, const char *prefix, int exact,
		  int (*fn)(void *arg, int64_t start_ms, uint64_t seq), void *arg)
{
	struct term_walk w = {.prefix = prefix, .len = strlen(prefix), .exact = exact, .fn = fn, .arg = arg};
	if (!w.len || w.len > REC_TERM_MAX)
		return -EINVAL;
	return cat_db_walk(t, DB_EVENT_TERMS, prefix, w.len, visit_term, &w);
}

int cat_event_id_at(struct cat_txn *t, int64_t start_ms, uint64_t seq, char id[CAT_EVENT_ID_MAX + 1])
{
	uint8_t k[CAT_KEY_EVENT_BY_TIME];
	cat_key_event_by_time(k, start_ms, seq);
	MDB_val key = {.mv_size = sizeof k, .mv_data = k}, v;
	int r = cat_map_err(mdb_get(t->txn, t->c->dbi[DB_EVENTS_BY_TIME], &key, &v));
	if (r < 0)
		return r;
	if (v.mv_size < 1 || v.mv_size > CAT_EVENT_ID_MAX)
		return -EBADMSG;
	memcpy(id, v.mv_data, v.mv_size);
	id[v.mv_size] = '\0';
	return 0;
}

int cat_event_count(struct cat_txn *t, uint64_t *ret)
{
	MDB_stat st;
	int r = cat_map_err(mdb_stat(t->txn, t->c->dbi[DB_EVENTS], &st));
	if (r == 0)
		*ret = st.ms_entries;
	return r;
}

int cat_event_drop_jpeg(struct cat_txn *t, const char *id)
{
	static kp_EventRecord ev;
	struct cat_event_row row;
	int r = cat_event_get(t, id, &row, &ev);
	if (r < 0 || !row.jpeg_len)
		return r;
	ev.has_jpeg = false;
	ev.jpeg_width = 0;
	ev.jpeg_height = 0;
	uint8_t *buf = malloc(ROW_MAX);
	if (!buf)
		return -ENOMEM;
	pb_ostream_t out = pb_ostream_from_buffer(buf + sizeof row, kp_EventRecord_size);
	r = pb_encode(&out, kp_EventRecord_fields, &ev) ? 0 : -EINVAL;
	row.jpeg_len = 0;
	row.pb_len = (uint32_t)out.bytes_written;
	memcpy(buf, &row, sizeof row);
	if (r == 0)
		r = cat_db_put(t, DB_EVENTS, id, strlen(id), buf, sizeof row + row.pb_len);
	free(buf);
	return r;
}
