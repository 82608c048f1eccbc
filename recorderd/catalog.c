/* The LMDB catalog (see catalog.h and docs/catalog.md). Values are fixed-layout structs
 * in host byte order (the catalog never leaves its machine); keys are big-endian. */
#include "catalog.h"

#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_keys.h"
#include "catalog_int.h"
#include "catalog_verify.h"
#include "kp_limits.h"

static const char *const db_names[DB_COUNT] = {
    "meta",         "cameras",        "streams",  "recordings",       "rec_by_stream", "fragments",       "keyframes",
    "events",       "events_by_time", "coverage", "events_by_camera", "event_terms",   "event_keyframes", "tier",
    "tier_deletes",
};

struct camera_val {
	uint32_t id;
	uint32_t retention_days;
};

struct stream_val {
	uint32_t camera_id;
	uint32_t stream;
	uint32_t codec;
	uint16_t width, height;
	uint64_t last_recording;
};

int cat_map_err(int rc)
{
	if (rc == 0)
		return 0;
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc == MDB_MAP_FULL)
		return -ENOSPC;
	if (rc > 0)
		return -rc;
	return -EIO;
}

static MDB_val val(const void *p, size_t n)
{
	return (MDB_val){.mv_size = n, .mv_data = (void *)p};
}

int cat_db_get(struct cat_txn *t, int db, const void *k, size_t klen, void *out, size_t olen)
{
	MDB_val key = val(k, klen), v;
	int r = cat_map_err(mdb_get(t->txn, t->c->dbi[db], &key, &v));
	if (r < 0)
		return r;
	if (v.mv_size != olen)
		return -EBADMSG;
	memcpy(out, v.mv_data, olen);
	return 0;
}

int cat_db_put(struct cat_txn *t, int db, const void *k, size_t klen, const void *d, size_t dlen)
{
	MDB_val key = val(k, klen), v = val(d, dlen);
	return cat_map_err(mdb_put(t->txn, t->c->dbi[db], &key, &v, 0));
}

int cat_db_del(struct cat_txn *t, int db, const void *k, size_t klen)
{
	MDB_val key = val(k, klen);
	int r = cat_map_err(mdb_del(t->txn, t->c->dbi[db], &key, NULL));
	return r == -ENOENT ? 0 : r;
}

static int meta_u64(struct cat_txn *t, const char *name, uint64_t *ret)
{
	int r = cat_db_get(t, DB_META, name, strlen(name), ret, sizeof *ret);
	if (r == -ENOENT) {
		*ret = 0;
		return 0;
	}
	return r;
}

static int set_meta_u64(struct cat_txn *t, const char *name, uint64_t v)
{
	return cat_db_put(t, DB_META, name, strlen(name), &v, sizeof v);
}

int cat_meta_get(struct cat_txn *t, const char *name, uint64_t *ret)
{
	return meta_u64(t, name, ret);
}

int cat_meta_set(struct cat_txn *t, const char *name, uint64_t v)
{
	return set_meta_u64(t, name, v);
}

static int db_entries(MDB_txn *txn, MDB_dbi dbi, uint64_t *ret)
{
	MDB_stat st;
	int r = cat_map_err(mdb_stat(txn, dbi, &st));
	if (r == 0)
		*ret = st.ms_entries;
	return r;
}

/* Version 1 stored camera alarms keyed by number in events and events_by_time: a layout
 * that cannot be converted, so those two sub-databases are emptied (and counted). */
static int migrate_v1(MDB_txn *txn, struct cat *c, struct cat_open_report *rep)
{
	int r = db_entries(txn, c->dbi[DB_EVENTS], &rep->dropped_events);
	if (r == 0)
		r = db_entries(txn, c->dbi[DB_EVENTS_BY_TIME], &rep->dropped_event_times);
	if (r == 0)
		r = cat_map_err(mdb_drop(txn, c->dbi[DB_EVENTS], 0));
	if (r == 0)
		r = cat_map_err(mdb_drop(txn, c->dbi[DB_EVENTS_BY_TIME], 0));
	if (r == 0)
		rep->migrated = 1;
	return r;
}

/* LMDB's return code as -errno, its own words for it kept in rep. */
static int open_err(struct cat_open_report *rep, const char *call, int rc)
{
	if (rc && !rep->error[0])
		snprintf(rep->error, sizeof rep->error, "%s: %s", call, mdb_strerror(rc));
	return cat_map_err(rc);
}

static int open_env(const char *dir, size_t map_size, unsigned flags, struct cat_open_report *ret_report,
		    struct cat **ret)
{
	struct cat_open_report rep = {.version = CAT_SCHEMA_VERSION};
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct cat *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	int r = open_err(&rep, "mdb_env_create", mdb_env_create(&c->env));
	if (r < 0)
		goto out_free;
	r = open_err(&rep, "mdb_env_set_maxdbs", mdb_env_set_maxdbs(c->env, DB_COUNT));
	if (r == 0)
		r = open_err(&rep, "mdb_env_set_mapsize", mdb_env_set_mapsize(c->env, map_size));
	if (r == 0)
		r = open_err(&rep, "mdb_env_open", mdb_env_open(c->env, dir, MDB_NOTLS | flags, 0600));
	if (r < 0)
		goto out_env;
	/* Everything below happens in one write transaction, committed only when the
	 * version is one this build reads: a newer catalog is left exactly as it was. */
	MDB_txn *txn;
	r = open_err(&rep, "mdb_txn_begin", mdb_txn_begin(c->env, NULL, 0, &txn));
	if (r < 0)
		goto out_env;
	for (int i = 0; i < DB_COUNT && r == 0; i++)
		r = open_err(&rep, "mdb_dbi_open", mdb_dbi_open(txn, db_names[i], MDB_CREATE, &c->dbi[i]));
	struct cat_txn t = {.c = c, .txn = txn};
	uint64_t version = 0;
	if (r == 0)
		r = meta_u64(&t, "version", &version);
	rep.found_version = version;
	if (r == 0 && version > CAT_SCHEMA_VERSION)
		r = -EPROTONOSUPPORT;
	if (r == 0 && version == 1)
		r = migrate_v1(txn, c, &rep);
	if (r == 0 && version == 0)
		rep.created = 1;
	if (r == 0 && version != CAT_SCHEMA_VERSION)
		r = set_meta_u64(&t, "version", CAT_SCHEMA_VERSION);
	if (r < 0) {
		mdb_txn_abort(txn);
		goto out_env;
	}
	r = open_err(&rep, "mdb_txn_commit", mdb_txn_commit(txn));
	if (r < 0)
		goto out_env;
	if (ret_report)
		*ret_report = rep;
	*ret = c;
	return 0;
out_env:
	mdb_env_close(c->env);
out_free:
	free(c);
	if (ret_report)
		*ret_report = rep;
	return r;
}

int cat_open_full(const char *dir, size_t map_size, struct cat_open_report *ret_report, struct cat **ret)
{
	return open_env(dir, map_size, 0, ret_report, ret);
}

int cat_open(const char *dir, size_t map_size, struct cat **ret)
{
	return cat_open_full(dir, map_size, NULL, ret);
}

int cat_open_bulk(const char *dir, size_t map_size, struct cat **ret)
{
	return open_env(dir, map_size, MDB_NOSYNC, NULL, ret);
}

int cat_sync(struct cat *c)
{
	return cat_map_err(mdb_env_sync(c->env, 1));
}

void cat_close(struct cat *c)
{
	if (!c)
		return;
	mdb_env_close(c->env);
	free(c);
}

int cat_begin(struct cat *c, int write, struct cat_txn **ret)
{
	struct cat_txn *t = malloc(sizeof *t);
	if (!t)
		return -ENOMEM;
	t->c = c;
	int r = cat_map_err(mdb_txn_begin(c->env, NULL, write ? 0 : MDB_RDONLY, &t->txn));
	if (r < 0) {
		free(t);
		return r;
	}
	*ret = t;
	return 0;
}

int cat_commit(struct cat_txn *t)
{
	int r = cat_map_err(mdb_txn_commit(t->txn));
	free(t);
	return r;
}

void cat_abort(struct cat_txn *t)
{
	if (!t)
		return;
	mdb_txn_abort(t->txn);
	free(t);
}

int cat_camera_lookup(struct cat_txn *t, const char *name, uint32_t *ret_id, uint32_t *ret_retention_days)
{
	struct camera_val cv;
	size_t len = strlen(name);
	if (len == 0 || len > KP_CAMERA_NAME_MAX)
		return -ENOENT; /* no such key can exist (LMDB refuses an empty or oversized one) */
	int r = cat_db_get(t, DB_CAMERAS, name, len, &cv, sizeof cv);
	if (r < 0)
		return r;
	*ret_id = cv.id;
	if (ret_retention_days)
		*ret_retention_days = cv.retention_days;
	return 0;
}

int cat_camera(struct cat_txn *t, const char *name, uint32_t retention_days, uint32_t *ret_id)
{
	struct camera_val cv;
	int r = cat_db_get(t, DB_CAMERAS, name, strlen(name), &cv, sizeof cv);
	if (r == -ENOENT) {
		uint64_t next;
		r = meta_u64(t, "next_camera", &next);
		if (r < 0)
			return r;
		if (next >= 1u << 24)
			return -ENOSPC;
		cv.id = (uint32_t)next + 1;
		cv.retention_days = ~retention_days; /* force the write below */
		r = set_meta_u64(t, "next_camera", cv.id);
	}
	if (r < 0)
		return r;
	if (cv.retention_days != retention_days) {
		cv.retention_days = retention_days;
		r = cat_db_put(t, DB_CAMERAS, name, strlen(name), &cv, sizeof cv);
		if (r < 0)
			return r;
	}
	*ret_id = cv.id;
	return 0;
}

int cat_next_recording_id(struct cat_txn *t, uint64_t *ret_id)
{
	uint64_t next;
	int r = meta_u64(t, "next_recording", &next);
	if (r < 0)
		return r;
	*ret_id = next ? next : 1;
	return 0;
}

int cat_get_recording(struct cat_txn *t, uint64_t id, struct cat_recording *ret)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, id);
	return cat_db_get(t, DB_RECORDINGS, k, sizeof k, ret, sizeof *ret);
}

int cat_get_fragment(struct cat_txn *t, uint64_t recording_id, uint32_t seq, struct cat_fragment *ret)
{
	uint8_t k[CAT_KEY_FRAGMENT];
	cat_key_fragment(k, recording_id, seq);
	return cat_db_get(t, DB_FRAGMENTS, k, sizeof k, ret, sizeof *ret);
}

static int put_recording(struct cat_txn *t, const struct cat_recording *r)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, r->id);
	return cat_db_put(t, DB_RECORDINGS, k, sizeof k, r, sizeof *r);
}

int cat_coverage(struct cat_txn *t, uint32_t stream_id, struct rec_cov *ret)
{
	uint8_t k[CAT_KEY_COV_RANGES];
	cat_key_cov_ranges(k, stream_id);
	MDB_val key = val(k, sizeof k), v;
	int r = cat_map_err(mdb_get(t->txn, t->c->dbi[DB_COVERAGE], &key, &v));
	if (r == -ENOENT) {
		ret->n = 0;
		ret->exact_from_ms = INT64_MIN;
		return 0;
	}
	if (r < 0)
		return r;
	size_t head = offsetof(struct rec_cov, r);
	if (v.mv_size < head || v.mv_size > sizeof *ret || (v.mv_size - head) % sizeof ret->r[0])
		return -EBADMSG;
	memcpy(ret, v.mv_data, v.mv_size);
	if (ret->n != (v.mv_size - head) / sizeof ret->r[0])
		return -EBADMSG;
	return 0;
}

static int put_coverage(struct cat_txn *t, uint32_t stream_id, const struct rec_cov *cov)
{
	uint8_t k[CAT_KEY_COV_RANGES];
	cat_key_cov_ranges(k, stream_id);
	return cat_db_put(t, DB_COVERAGE, k, sizeof k, cov, offsetof(struct rec_cov, r) + cov->n * sizeof cov->r[0]);
}

int cat_coverage_bucket(struct cat_txn *t, uint32_t stream_id, int64_t bucket_ms, int64_t *ret_ms)
{
	uint8_t k[CAT_KEY_COV_BUCKET];
	cat_key_cov_bucket(k, stream_id, bucket_ms);
	int r = cat_db_get(t, DB_COVERAGE, k, sizeof k, ret_ms, sizeof *ret_ms);
	if (r == -ENOENT) {
		*ret_ms = 0;
		return 0;
	}
	return r;
}

/* Adds (sign 1) or removes (sign -1) [start, end) from the stream's summaries. */
static int coverage_update(struct cat_txn *t, uint32_t stream_id, int64_t start_ms, int64_t end_ms, int sign)
{
	struct rec_cov *cov = malloc(sizeof *cov);
	if (!cov)
		return -ENOMEM;
	int r = cat_coverage(t, stream_id, cov);
	if (r == 0) {
		if (sign > 0)
			rec_cov_add(cov, start_ms, end_ms);
		else
			rec_cov_remove(cov, start_ms, end_ms);
		r = put_coverage(t, stream_id, cov);
	}
	free(cov);
	int64_t b = INT64_MIN, part;
	while (r == 0 && rec_cov_next_bucket(start_ms, end_ms, &b, &part)) {
		int64_t have;
		r = cat_coverage_bucket(t, stream_id, b, &have);
		if (r < 0)
			break;
		have += sign * part;
		uint8_t k[CAT_KEY_COV_BUCKET];
		cat_key_cov_bucket(k, stream_id, b);
		r = have > 0 ? cat_db_put(t, DB_COVERAGE, k, sizeof k, &have, sizeof have)
			     : cat_db_del(t, DB_COVERAGE, k, sizeof k);
	}
	return r;
}

static int add_bytes(struct cat_txn *t, int64_t delta)
{
	uint64_t total;
	int r = meta_u64(t, "total_bytes", &total);
	if (r < 0)
		return r;
	total = delta < 0 && (uint64_t)-delta > total ? 0 : total + (uint64_t)delta;
	return set_meta_u64(t, "total_bytes", total);
}

int cat_total_bytes(struct cat_txn *t, uint64_t *ret)
{
	return meta_u64(t, "total_bytes", ret);
}

static int create_recording(struct cat_txn *t, const struct cat_recording *tmpl, struct cat_recording *ret)
{
	struct cat_recording r = *tmpl;
	r.open = 1;
	r.end_ms = r.start_ms;
	r.fragments = 0;
	uint8_t k[CAT_KEY_REC_BY_STREAM];
	cat_key_rec_by_stream(k, r.stream_id, r.start_ms, r.id);
	int e = cat_db_put(t, DB_REC_BY_STREAM, k, sizeof k, "", 0);
	uint64_t next;
	if (e == 0)
		e = meta_u64(t, "next_recording", &next);
	if (e == 0 && next <= r.id)
		e = set_meta_u64(t, "next_recording", r.id + 1);
	/* The init segment counts towards the disk use from the start. */
	if (e == 0)
		e = add_bytes(t, (int64_t)r.bytes);
	uint8_t sk[4];
	cat_be32(sk, r.stream_id);
	struct stream_val sv = {.camera_id = r.stream_id >> 8,
				.stream = r.stream_id & 0xff,
				.codec = r.codec,
				.width = r.width,
				.height = r.height,
				.last_recording = r.id};
	if (e == 0)
		e = cat_db_put(t, DB_STREAMS, sk, sizeof sk, &sv, sizeof sv);
	if (e == 0)
		*ret = r;
	return e;
}

int cat_add_fragment(struct cat_txn *t, const struct cat_recording *rec, const struct cat_fragment *f)
{
	struct cat_recording r;
	int e = cat_get_recording(t, rec->id, &r);
	if (e == -ENOENT)
		e = create_recording(t, rec, &r);
	if (e < 0)
		return e;
	if (f->offset != r.bytes)
		return -EINVAL; /* fragments are indexed in file order, without holes */
	uint8_t k[CAT_KEY_FRAGMENT];
	cat_key_fragment(k, f->recording_id, f->seq);
	e = cat_db_put(t, DB_FRAGMENTS, k, sizeof k, f, sizeof *f);
	if (e == 0 && f->keyframe_length) {
		uint8_t kk[CAT_KEY_KEYFRAME];
		cat_key_keyframe(kk, r.stream_id, f->start_ms);
		struct cat_keyframe kf = {
		    .recording_id = r.id, .offset = f->keyframe_offset, .length = f->keyframe_length, .seq = f->seq};
		e = cat_db_put(t, DB_KEYFRAMES, kk, sizeof kk, &kf, sizeof kf);
	}
	if (e == 0)
		e = coverage_update(t, r.stream_id, f->start_ms, f->end_ms, 1);
	if (e == 0)
		e = add_bytes(t, (int64_t)f->length);
	if (e < 0)
		return e;
	r.bytes = f->offset + f->length;
	r.fragments++;
	if (f->end_ms > r.end_ms)
		r.end_ms = f->end_ms;
	return put_recording(t, &r);
}

int cat_close_recording(struct cat_txn *t, uint64_t id)
{
	struct cat_recording r;
	int e = cat_get_recording(t, id, &r);
	if (e < 0 || !r.open)
		return e;
	r.open = 0;
	return put_recording(t, &r);
}

int cat_db_walk(struct cat_txn *t, int db, const void *start, size_t start_len,
		int (*visit)(void *ctx, const MDB_val *key, const MDB_val *v), void *ctx)
{
	MDB_cursor *cur;
	int r = cat_map_err(mdb_cursor_open(t->txn, t->c->dbi[db], &cur));
	if (r < 0)
		return r;
	MDB_val key = {.mv_size = start_len, .mv_data = (void *)start}, v;
	int rc = mdb_cursor_get(cur, &key, &v, start ? MDB_SET_RANGE : MDB_FIRST);
	while (rc == 0 && (r = visit(ctx, &key, &v)) == 0)
		rc = mdb_cursor_get(cur, &key, &v, MDB_NEXT);
	if (rc != 0 && rc != MDB_NOTFOUND)
		r = cat_map_err(rc);
	mdb_cursor_close(cur);
	return r == CAT_WALK_END ? 0 : r;
}

int cat_db_walk_back(struct cat_txn *t, int db, const void *start, size_t start_len,
		     int (*visit)(void *ctx, const MDB_val *key, const MDB_val *v), void *ctx)
{
	MDB_cursor *cur;
	int r = cat_map_err(mdb_cursor_open(t->txn, t->c->dbi[db], &cur));
	if (r < 0)
		return r;
	MDB_val key = {.mv_size = start_len, .mv_data = (void *)start}, v;
	int rc = start ? mdb_cursor_get(cur, &key, &v, MDB_SET_RANGE) : MDB_NOTFOUND;
	rc = mdb_cursor_get(cur, &key, &v, rc == 0 ? MDB_PREV : MDB_LAST);
	while (rc == 0 && (r = visit(ctx, &key, &v)) == 0)
		rc = mdb_cursor_get(cur, &key, &v, MDB_PREV);
	if (rc != 0 && rc != MDB_NOTFOUND)
		r = cat_map_err(rc);
	mdb_cursor_close(cur);
	return r == CAT_WALK_END ? 0 : r;
}

struct fragment_walk {
	uint64_t recording_id;
	int (*fn)(void *arg, const struct cat_fragment *f);
	void *arg;
};

static int visit_fragment(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct fragment_walk *w = ctx;
	if (key->mv_size != CAT_KEY_FRAGMENT || cat_get_be64(key->mv_data) != w->recording_id)
		return CAT_WALK_END;
	if (v->mv_size != sizeof(struct cat_fragment))
		return -EBADMSG;
	struct cat_fragment f;
	memcpy(&f, v->mv_data, sizeof f);
	return w->fn(w->arg, &f);
}

int cat_each_fragment(struct cat_txn *t, uint64_t recording_id, int (*fn)(void *arg, const struct cat_fragment *f),
		      void *arg)
{
	uint8_t k[CAT_KEY_FRAGMENT];
	cat_key_fragment(k, recording_id, 0);
	struct fragment_walk w = {.recording_id = recording_id, .fn = fn, .arg = arg};
	int r = cat_db_walk(t, DB_FRAGMENTS, k, sizeof k, visit_fragment, &w);
	return r < 0 ? r : 0;
}

struct frag_list {
	struct cat_fragment *f;
	size_t n, cap;
};

static int collect_fragment(void *arg, const struct cat_fragment *f)
{
	struct frag_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct cat_fragment *nf = realloc(l->f, cap * sizeof *nf);
		if (!nf)
			return -ENOMEM;
		l->f = nf;
		l->cap = cap;
	}
	l->f[l->n++] = *f;
	return 0;
}

int cat_fragments_of(struct cat_txn *t, uint64_t recording_id, struct cat_fragment **ret, size_t *ret_n)
{
	struct frag_list l = {0};
	int e = cat_each_fragment(t, recording_id, collect_fragment, &l);
	if (e < 0) {
		free(l.f);
		return e;
	}
	*ret = l.f;
	*ret_n = l.n;
	return 0;
}

static int delete_fragment(struct cat_txn *t, uint32_t stream_id, const struct cat_fragment *f)
{
	int r = 0;
	if (f->keyframe_length) {
		uint8_t kk[CAT_KEY_KEYFRAME];
		cat_key_keyframe(kk, stream_id, f->start_ms);
		struct cat_keyframe kf;
		/* Only this fragment's keyframe: another recording may own the same millisecond. */
		if (cat_db_get(t, DB_KEYFRAMES, kk, sizeof kk, &kf, sizeof kf) == 0 &&
		    kf.recording_id == f->recording_id)
			r = cat_db_del(t, DB_KEYFRAMES, kk, sizeof kk);
	}
	if (r == 0)
		r = coverage_update(t, stream_id, f->start_ms, f->end_ms, -1);
	if (r == 0) {
		uint8_t k[CAT_KEY_FRAGMENT];
		cat_key_fragment(k, f->recording_id, f->seq);
		r = cat_db_del(t, DB_FRAGMENTS, k, sizeof k);
	}
	return r;
}

/* A deleted recording's tier row moves to the deletes: the store may hold its object, or
 * an unfinished upload of it, whatever state the row was in (a PUT may be under way). */
static int tier_row_to_deletes(struct cat_txn *t, uint64_t id)
{
	struct cat_tier row;
	int e = cat_tier_get(t, id, &row);
	if (e == -ENOENT)
		return 0;
	uint8_t rk[CAT_KEY_RECORDING];
	cat_be64(rk, id);
	if (e == 0)
		e = cat_tier_delete_put(t, id, &row);
	return e < 0 ? e : cat_db_del(t, DB_TIER, rk, sizeof rk);
}

int cat_delete_recording(struct cat_txn *t, uint64_t id, struct cat_recording *ret_deleted)
{
	struct cat_recording r;
	int e = cat_get_recording(t, id, &r);
	if (e < 0)
		return e;
	/* Collected first: deleting under a walking cursor is not something to rely on. */
	struct frag_list l = {0};
	e = cat_each_fragment(t, id, collect_fragment, &l);
	for (size_t i = 0; e == 0 && i < l.n; i++)
		e = delete_fragment(t, r.stream_id, &l.f[i]);
	free(l.f);
	if (e < 0)
		return e;
	uint8_t k[CAT_KEY_REC_BY_STREAM];
	cat_key_rec_by_stream(k, r.stream_id, r.start_ms, r.id);
	e = cat_db_del(t, DB_REC_BY_STREAM, k, sizeof k);
	uint8_t rk[CAT_KEY_RECORDING];
	cat_be64(rk, id);
	if (e == 0)
		e = cat_db_del(t, DB_RECORDINGS, rk, sizeof rk);
	if (e == 0)
		e = tier_row_to_deletes(t, id);
	if (e == 0 && !(r.flags & CAT_REC_REMOTE))
		e = add_bytes(t, -(int64_t)r.bytes);
	if (e == 0 && ret_deleted)
		*ret_deleted = r;
	return e;
}

struct recording_walk {
	uint32_t stream_id; /* by-stream walks only */
	int64_t to_ms;
	int (*fn)(void *arg, const struct cat_recording *r);
	void *arg;
	struct cat_txn *t;
};

static int visit_recording(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct recording_walk *w = ctx;
	(void)key;
	if (v->mv_size != sizeof(struct cat_recording))
		return -EBADMSG;
	struct cat_recording rec;
	memcpy(&rec, v->mv_data, sizeof rec);
	return w->fn(w->arg, &rec);
}

int cat_each_recording(struct cat_txn *t, int (*fn)(void *arg, const struct cat_recording *r), void *arg)
{
	struct recording_walk w = {.fn = fn, .arg = arg};
	return cat_db_walk(t, DB_RECORDINGS, NULL, 0, visit_recording, &w);
}

int cat_each_recording_from(struct cat_txn *t, uint64_t from_id, int (*fn)(void *arg, const struct cat_recording *r),
			    void *arg)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, from_id);
	struct recording_walk w = {.fn = fn, .arg = arg};
	return cat_db_walk(t, DB_RECORDINGS, k, sizeof k, visit_recording, &w);
}

static int visit_stream_recording(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct recording_walk *w = ctx;
	(void)v;
	if (key->mv_size != CAT_KEY_REC_BY_STREAM || cat_get_be32(key->mv_data) != w->stream_id ||
	    cat_get_be_time((const uint8_t *)key->mv_data + 4) >= w->to_ms)
		return CAT_WALK_END;
	struct cat_recording rec;
	int r = cat_get_recording(w->t, cat_get_be64((const uint8_t *)key->mv_data + 12), &rec);
	return r ? r : w->fn(w->arg, &rec);
}

int cat_each_stream_recording(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms,
			      int (*fn)(void *arg, const struct cat_recording *r), void *arg)
{
	uint8_t k[CAT_KEY_REC_BY_STREAM];
	cat_key_rec_by_stream(k, stream_id, from_ms, 0);
	struct recording_walk w = {.stream_id = stream_id, .to_ms = to_ms, .fn = fn, .arg = arg, .t = t};
	return cat_db_walk(t, DB_REC_BY_STREAM, k, sizeof k, visit_stream_recording, &w);
}

int cat_keyframe_at(struct cat_txn *t, uint32_t stream_id, int64_t ms, int64_t *ret_ms, struct cat_keyframe *ret)
{
	MDB_cursor *cur;
	int r = cat_map_err(mdb_cursor_open(t->txn, t->c->dbi[DB_KEYFRAMES], &cur));
	if (r < 0)
		return r;
	/* The first key after ms, then one step back. */
	uint8_t k[CAT_KEY_KEYFRAME];
	cat_key_keyframe(k, stream_id, ms == INT64_MAX ? ms : ms + 1);
	MDB_val key = val(k, sizeof k), v;
	int rc = mdb_cursor_get(cur, &key, &v, MDB_SET_RANGE);
	rc = mdb_cursor_get(cur, &key, &v, rc == 0 ? MDB_PREV : MDB_LAST);
	if (rc == 0 && (key.mv_size != CAT_KEY_KEYFRAME || cat_get_be32(key.mv_data) != stream_id))
		rc = MDB_NOTFOUND;
	if (rc == 0 && v.mv_size != sizeof *ret)
		r = -EBADMSG;
	else if (rc != 0)
		r = cat_map_err(rc);
	if (r == 0) {
		memcpy(ret, v.mv_data, sizeof *ret);
		*ret_ms = cat_get_be_time((const uint8_t *)key.mv_data + 4);
	}
	mdb_cursor_close(cur);
	return r;
}

struct camera_walk {
	int (*fn)(void *arg, const char *name, uint32_t id, uint32_t days);
	void *arg;
};

static int visit_camera(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct camera_walk *w = ctx;
	struct camera_val cv;
	char name[CAT_PATH_MAX];
	if (v->mv_size != sizeof cv || key->mv_size >= sizeof name)
		return -EBADMSG;
	memcpy(&cv, v->mv_data, sizeof cv);
	memcpy(name, key->mv_data, key->mv_size);
	name[key->mv_size] = '\0';
	return w->fn(w->arg, name, cv.id, cv.retention_days);
}

int cat_each_camera(struct cat_txn *t, int (*fn)(void *arg, const char *name, uint32_t id, uint32_t days), void *arg)
{
	struct camera_walk w = {.fn = fn, .arg = arg};
	return cat_db_walk(t, DB_CAMERAS, NULL, 0, visit_camera, &w);
}

int cat_stream_last_recording(struct cat_txn *t, uint32_t stream_id, uint64_t *ret_id)
{
	uint8_t sk[4];
	cat_be32(sk, stream_id);
	struct stream_val sv;
	int r = cat_db_get(t, DB_STREAMS, sk, sizeof sk, &sv, sizeof sv);
	if (r == -ENOENT) {
		*ret_id = 0;
		return 0;
	}
	if (r == 0)
		*ret_id = sv.last_recording;
	return r;
}

struct stream_walk {
	int (*fn)(void *arg, uint32_t stream_id);
	void *arg;
};

static int visit_stream(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct stream_walk *w = ctx;
	(void)v;
	if (key->mv_size != 4)
		return -EBADMSG;
	return w->fn(w->arg, cat_get_be32(key->mv_data));
}

int cat_each_stream(struct cat_txn *t, int (*fn)(void *arg, uint32_t stream_id), void *arg)
{
	struct stream_walk w = {.fn = fn, .arg = arg};
	return cat_db_walk(t, DB_STREAMS, NULL, 0, visit_stream, &w);
}

struct keyframe_walk {
	uint32_t stream_id;
	int (*fn)(void *arg, int64_t ms, const struct cat_keyframe *k);
	void *arg;
};

static int visit_keyframe(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct keyframe_walk *w = ctx;
	if (key->mv_size != CAT_KEY_KEYFRAME || cat_get_be32(key->mv_data) != w->stream_id)
		return CAT_WALK_END;
	if (v->mv_size != sizeof(struct cat_keyframe))
		return -EBADMSG;
	struct cat_keyframe kf;
	memcpy(&kf, v->mv_data, sizeof kf);
	return w->fn(w->arg, cat_get_be_time((const uint8_t *)key->mv_data + 4), &kf);
}

int cat_each_keyframe(struct cat_txn *t, uint32_t stream_id,
		      int (*fn)(void *arg, int64_t ms, const struct cat_keyframe *k), void *arg)
{
	uint8_t k[CAT_KEY_KEYFRAME];
	cat_key_keyframe(k, stream_id, INT64_MIN);
	struct keyframe_walk w = {.stream_id = stream_id, .fn = fn, .arg = arg};
	return cat_db_walk(t, DB_KEYFRAMES, k, sizeof k, visit_keyframe, &w);
}

struct bucket_walk {
	uint32_t stream_id;
	int64_t to_ms;
	int (*fn)(void *arg, int64_t bucket_ms, int64_t covered_ms);
	void *arg;
};

static int visit_bucket(void *ctx, const MDB_val *key, const MDB_val *v)
{
	const struct bucket_walk *w = ctx;
	const uint8_t *kp = key->mv_data;
	if (key->mv_size != CAT_KEY_COV_BUCKET || cat_get_be32(kp) != w->stream_id || kp[4] != 1 ||
	    cat_get_be_time(kp + 5) >= w->to_ms)
		return CAT_WALK_END;
	int64_t ms;
	if (v->mv_size != sizeof ms)
		return -EBADMSG;
	memcpy(&ms, v->mv_data, sizeof ms);
	return w->fn(w->arg, cat_get_be_time(kp + 5), ms);
}

int cat_each_coverage_bucket(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms,
			     int (*fn)(void *arg, int64_t bucket_ms, int64_t covered_ms), void *arg)
{
	uint8_t k[CAT_KEY_COV_BUCKET];
	cat_key_cov_bucket(k, stream_id, from_ms);
	struct bucket_walk w = {.stream_id = stream_id, .to_ms = to_ms, .fn = fn, .arg = arg};
	return cat_db_walk(t, DB_COVERAGE, k, sizeof k, visit_bucket, &w);
}

int cat_truncate_recording(struct cat_txn *t, uint64_t id, uint32_t from_seq)
{
	struct cat_recording r;
	int e = cat_get_recording(t, id, &r);
	if (e < 0)
		return e;
	struct frag_list l = {0};
	e = cat_each_fragment(t, id, collect_fragment, &l);
	uint64_t bytes = 0;
	uint32_t kept = 0;
	int64_t end_ms = r.start_ms;
	for (size_t i = 0; e == 0 && i < l.n; i++) {
		const struct cat_fragment *f = &l.f[i];
		if (f->seq < from_seq) {
			kept++;
			bytes = f->offset + f->length;
			if (f->end_ms > end_ms)
				end_ms = f->end_ms;
			continue;
		}
		e = delete_fragment(t, r.stream_id, f);
	}
	free(l.f);
	if (e < 0)
		return e;
	if (!kept)
		return cat_delete_recording(t, id, NULL);
	if (!(r.flags & CAT_REC_REMOTE))
		e = add_bytes(t, (int64_t)bytes - (int64_t)r.bytes);
	r.bytes = bytes;
	r.fragments = kept;
	r.end_ms = end_ms;
	return e < 0 ? e : put_recording(t, &r);
}

int cat_drop_keyframe(struct cat_txn *t, uint64_t recording_id, uint32_t seq)
{
	struct cat_recording r;
	struct cat_fragment f;
	int e = cat_get_recording(t, recording_id, &r);
	if (e == 0)
		e = cat_get_fragment(t, recording_id, seq, &f);
	if (e < 0 || !f.keyframe_length)
		return e;
	uint8_t kk[CAT_KEY_KEYFRAME];
	cat_key_keyframe(kk, r.stream_id, f.start_ms);
	struct cat_keyframe kf;
	if (cat_db_get(t, DB_KEYFRAMES, kk, sizeof kk, &kf, sizeof kf) == 0 && kf.recording_id == recording_id)
		e = cat_db_del(t, DB_KEYFRAMES, kk, sizeof kk);
	f.keyframe_offset = 0;
	f.keyframe_length = 0;
	uint8_t k[CAT_KEY_FRAGMENT];
	cat_key_fragment(k, recording_id, seq);
	return e < 0 ? e : cat_db_put(t, DB_FRAGMENTS, k, sizeof k, &f, sizeof f);
}

int cat_delete_keyframe_row(struct cat_txn *t, uint32_t stream_id, int64_t ms)
{
	uint8_t kk[CAT_KEY_KEYFRAME];
	cat_key_keyframe(kk, stream_id, ms);
	return cat_db_del(t, DB_KEYFRAMES, kk, sizeof kk);
}

struct rebuild {
	struct cat_txn *t;
	struct rec_cov *cov;
	struct rec_buckets buckets;
};

static int rebuild_fragment(void *arg, const struct cat_fragment *f)
{
	struct rebuild *rb = arg;
	rec_cov_add(rb->cov, f->start_ms, f->end_ms);
	return rec_buckets_add(&rb->buckets, f->start_ms, f->end_ms);
}

static int rebuild_recording(void *arg, const struct cat_recording *r)
{
	struct rebuild *rb = arg;
	return cat_each_fragment(rb->t, r->id, rebuild_fragment, rb);
}

int cat_rebuild_coverage(struct cat_txn *t, uint32_t stream_id)
{
	/* Every coverage key of the stream goes, then the summaries are written anew. */
	MDB_cursor *cur;
	int r = cat_map_err(mdb_cursor_open(t->txn, t->c->dbi[DB_COVERAGE], &cur));
	if (r < 0)
		return r;
	uint8_t k[CAT_KEY_COV_RANGES];
	cat_key_cov_ranges(k, stream_id);
	MDB_val key = val(k, sizeof k), v;
	int rc = mdb_cursor_get(cur, &key, &v, MDB_SET_RANGE);
	while (rc == 0 && key.mv_size >= 4 && cat_get_be32(key.mv_data) == stream_id) {
		rc = mdb_cursor_del(cur, 0);
		if (rc == 0)
			rc = mdb_cursor_get(cur, &key, &v, MDB_GET_CURRENT);
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND && rc != EINVAL)
		return cat_map_err(rc);
	struct rebuild rb = {.t = t, .cov = calloc(1, sizeof *rb.cov)};
	if (!rb.cov)
		return -ENOMEM;
	rb.cov->exact_from_ms = INT64_MIN;
	r = cat_each_stream_recording(t, stream_id, INT64_MIN, INT64_MAX, rebuild_recording, &rb);
	if (r == 0)
		r = put_coverage(t, stream_id, rb.cov);
	for (size_t i = 0; r == 0 && i < rb.buckets.n; i++) {
		uint8_t bk[CAT_KEY_COV_BUCKET];
		cat_key_cov_bucket(bk, stream_id, rb.buckets.b[i].start_ms);
		r = cat_db_put(t, DB_COVERAGE, bk, sizeof bk, &rb.buckets.b[i].covered_ms, sizeof(int64_t));
	}
	free(rb.cov);
	rec_buckets_free(&rb.buckets);
	return r;
}

/* The bytes total_bytes counts: a remote recording's media is in the store (0037). */
static int sum_bytes(void *arg, const struct cat_recording *r)
{
	if (!(r->flags & CAT_REC_REMOTE))
		*(uint64_t *)arg += r->bytes;
	return 0;
}

int cat_sum_local_bytes(struct cat_txn *t, uint64_t *ret)
{
	*ret = 0;
	return cat_each_recording(t, sum_bytes, ret);
}

int cat_recount_bytes(struct cat_txn *t)
{
	uint64_t total = 0;
	int r = cat_sum_local_bytes(t, &total);
	return r < 0 ? r : set_meta_u64(t, "total_bytes", total);
}

struct first_walk {
	uint32_t stream_id;
	int64_t ms;
	struct cat_keyframe *kf;
	int found;
};

static int visit_first_keyframe(void *ctx, const MDB_val *key, const MDB_val *v)
{
	struct first_walk *w = ctx;
	if (key->mv_size != CAT_KEY_KEYFRAME || cat_get_be32(key->mv_data) != w->stream_id)
		return CAT_WALK_END;
	if (v->mv_size != sizeof *w->kf)
		return -EBADMSG;
	memcpy(w->kf, v->mv_data, sizeof *w->kf);
	w->ms = cat_get_be_time((const uint8_t *)key->mv_data + 4);
	w->found = 1;
	return CAT_WALK_END;
}

int cat_keyframe_from(struct cat_txn *t, uint32_t stream_id, int64_t ms, int64_t *ret_ms, struct cat_keyframe *ret)
{
	uint8_t k[CAT_KEY_KEYFRAME];
	cat_key_keyframe(k, stream_id, ms);
	struct first_walk w = {.stream_id = stream_id, .kf = ret};
	int r = cat_db_walk(t, DB_KEYFRAMES, k, sizeof k, visit_first_keyframe, &w);
	if (r == 0 && !w.found)
		r = -ENOENT;
	if (r == 0)
		*ret_ms = w.ms;
	return r;
}

struct before_walk {
	struct cat_txn *t;
	uint32_t stream_id;
	struct cat_recording *rec;
	int found;
};

static int visit_before(void *ctx, const MDB_val *key, const MDB_val *v)
{
	struct before_walk *w = ctx;
	(void)v;
	if (key->mv_size != CAT_KEY_REC_BY_STREAM || cat_get_be32(key->mv_data) != w->stream_id)
		return CAT_WALK_END;
	int r = cat_get_recording(w->t, cat_get_be64((const uint8_t *)key->mv_data + 12), w->rec);
	w->found = r == 0;
	return r < 0 ? r : CAT_WALK_END;
}

int cat_stream_recording_before(struct cat_txn *t, uint32_t stream_id, int64_t ms, struct cat_recording *ret)
{
	uint8_t k[CAT_KEY_REC_BY_STREAM];
	cat_key_rec_by_stream(k, stream_id, ms, 0);
	struct before_walk w = {.t = t, .stream_id = stream_id, .rec = ret};
	int r = cat_db_walk_back(t, DB_REC_BY_STREAM, k, sizeof k, visit_before, &w);
	return r < 0 ? r : w.found ? 0 : -ENOENT;
}

int cat_size(struct cat *c, uint64_t *ret_bytes)
{
	MDB_envinfo info;
	MDB_stat st;
	int r = cat_map_err(mdb_env_info(c->env, &info));
	if (r == 0)
		r = cat_map_err(mdb_env_stat(c->env, &st));
	if (r == 0)
		*ret_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	return r;
}

int cat_copy_to(struct cat *c, int fd)
{
	int r = cat_map_err(mdb_env_copyfd2(c->env, fd, MDB_CP_COMPACT));
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	return r;
}

int cat_recording_count(struct cat_txn *t, uint64_t *ret)
{
	MDB_stat st;
	int r = cat_map_err(mdb_stat(t->txn, t->c->dbi[DB_RECORDINGS], &st));
	if (r == 0)
		*ret = st.ms_entries;
	return r;
}

int cat_verify(struct cat *c, struct cat_verify_report *ret)
{
	/* The snapshot of a read transaction: LMDB reuses none of its pages while it lives.
	 * Its meta page is overwritten two commits later, then a new one is taken. */
	int r = -EAGAIN;
	for (int tries = 0; tries < 20 && r == -EAGAIN; tries++) {
		MDB_txn *txn;
		mdb_filehandle_t fd;
		r = cat_map_err(mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn));
		if (r < 0)
			return r;
		r = cat_map_err(mdb_env_get_fd(c->env, &fd));
		if (r == 0)
			r = cat_verify_fd(fd, mdb_txn_id(txn), ret);
		mdb_txn_abort(txn);
	}
	return r;
}

/* The tier journal: one fixed-size row per recording, keyed by its id (be64). */
int cat_tier_get(struct cat_txn *t, uint64_t id, struct cat_tier *ret)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, id);
	return cat_db_get(t, DB_TIER, k, sizeof k, ret, sizeof *ret);
}

int cat_tier_put(struct cat_txn *t, uint64_t id, const struct cat_tier *row)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, id);
	return cat_db_put(t, DB_TIER, k, sizeof k, row, sizeof *row);
}

int cat_mark_remote(struct cat_txn *t, uint64_t id)
{
	struct cat_recording r;
	int e = cat_get_recording(t, id, &r);
	if (e < 0 || (r.flags & CAT_REC_REMOTE))
		return e;
	r.flags |= CAT_REC_REMOTE;
	e = put_recording(t, &r);
	return e < 0 ? e : add_bytes(t, -(int64_t)r.bytes);
}

int cat_tier_counts(struct cat_txn *t, uint64_t *ret_rows, uint64_t *ret_deletes)
{
	MDB_stat st;
	int r = cat_map_err(mdb_stat(t->txn, t->c->dbi[DB_TIER], &st));
	if (r < 0)
		return r;
	*ret_rows = st.ms_entries;
	r = cat_map_err(mdb_stat(t->txn, t->c->dbi[DB_TIER_DELETES], &st));
	if (r == 0)
		*ret_deletes = st.ms_entries;
	return r;
}

int cat_tier_delete_put(struct cat_txn *t, uint64_t id, const struct cat_tier *row)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, id);
	return cat_db_put(t, DB_TIER_DELETES, k, sizeof k, row, sizeof *row);
}

int cat_tier_delete_get(struct cat_txn *t, uint64_t id, struct cat_tier *ret)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, id);
	return cat_db_get(t, DB_TIER_DELETES, k, sizeof k, ret, sizeof *ret);
}

int cat_tier_delete_done(struct cat_txn *t, uint64_t id)
{
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, id);
	return cat_db_del(t, DB_TIER_DELETES, k, sizeof k);
}

struct tier_walk {
	int (*fn)(void *arg, uint64_t id, const struct cat_tier *row);
	void *arg;
};

static int visit_tier(void *ctx, const MDB_val *key, const MDB_val *v)
{
	struct tier_walk *w = ctx;
	struct cat_tier row;
	if (key->mv_size != CAT_KEY_RECORDING || v->mv_size != sizeof row)
		return -EBADMSG;
	memcpy(&row, v->mv_data, sizeof row);
	return w->fn(w->arg, cat_get_be64(key->mv_data), &row);
}

static int each_tier(struct cat_txn *t, int db, uint64_t from_id,
		     int (*fn)(void *arg, uint64_t id, const struct cat_tier *row), void *arg)
{
	struct tier_walk w = {fn, arg};
	uint8_t k[CAT_KEY_RECORDING];
	cat_be64(k, from_id);
	int r = cat_db_walk(t, db, k, sizeof k, visit_tier, &w);
	return r == 1 ? 0 : r;
}

int cat_each_tier_delete(struct cat_txn *t, uint64_t from_id,
			 int (*fn)(void *arg, uint64_t id, const struct cat_tier *row), void *arg)
{
	return each_tier(t, DB_TIER_DELETES, from_id, fn, arg);
}

int cat_each_tier(struct cat_txn *t, uint64_t from_id, int (*fn)(void *arg, uint64_t id, const struct cat_tier *row),
		  void *arg)
{
	return each_tier(t, DB_TIER, from_id, fn, arg);
}
