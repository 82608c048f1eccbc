/* Catalog <-> files verification and repair (see check.h). */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "catalog_keys.h"
#include "catalog_verify.h"
#include "coverage.h"
#include "event_log.h"
#include "event_record.h"
#include "jobs.h"
#include "kp_io.h"
#include "h26x.h"
#include "rebuild.h"
#include "tier_local.h"

#define CHECK_CAMERAS 1024
#define KEYFRAME_NALS 64 /* units looked at for the picture of a keyframe */
#define FIX_ALL_AFTER UINT32_MAX
#define FIX_ALL       0

enum fix_kind {
	FIX_DELETE_RECORDING,
	FIX_TRUNCATE,
	FIX_DROP_KEYFRAME,
	FIX_KEYFRAME_ROW,
	FIX_STREAM,
	FIX_RECOUNT,
	FIX_EVENT_JPEG,
	FIX_EVENT_RECORD
};

struct fix {
	enum fix_kind kind;
	uint32_t stream_id;
	uint32_t seq;                     /* FIX_TRUNCATE: the first fragment to drop */
	uint64_t id;                      /* recording */
	int64_t ms;                       /* FIX_KEYFRAME_ROW */
	char event[CAT_EVENT_ID_MAX + 1]; /* FIX_EVENT_JPEG, FIX_EVENT_RECORD */
};

struct camera_name {
	uint32_t id;
	char name[CAT_PATH_MAX];
};

struct run {
	struct cat *cat;
	int dirfd;
	const struct rec_check_opts *o;
	const char *prefix;
	struct rec_check_result res;
	unsigned problems;
	struct fix *fixes; /* NULL: not repairing */
	unsigned nfixes;
	struct camera_name *cams;
	unsigned ncams;
	uint32_t *streams;
	size_t nstreams, cap;
	/* the stream being checked */
	struct cat_txn *t;
	uint32_t stream_id;
	struct rec_ranges ranges;
	struct rec_buckets buckets;
};

static int cancelled(const struct run *run)
{
	return run->o->cancel && __atomic_load_n(run->o->cancel, __ATOMIC_RELAXED);
}

static void problem(struct run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct run *run, const char *fmt, ...)
{
	char line[512];
	int n = snprintf(line, sizeof line, "%s", run->prefix);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	run->problems++;
	if (run->o->problem)
		run->o->problem(run->o->arg, line);
}

static void fix(struct run *run, struct fix f)
{
	if (run->fixes && run->nfixes < REC_CHECK_MAX_REPAIRS)
		run->fixes[run->nfixes++] = f;
}

static void stream_label(const struct run *run, uint32_t stream_id, char *buf, size_t len)
{
	const char *cam = NULL;
	for (unsigned i = 0; i < run->ncams && !cam; i++)
		if (run->cams[i].id == stream_id >> 8)
			cam = run->cams[i].name;
	const char *s = (stream_id & 0xff) == 0 ? "main" : (stream_id & 0xff) == 1 ? "sub" : "?";
	if (cam)
		snprintf(buf, len, "%s/%s", cam, s);
	else
		snprintf(buf, len, "camera %u/%s", (unsigned)(stream_id >> 8), s);
}

/* Walks the length-prefixed units of a keyframe range to its first picture slice; NULL
 * when that is an IDR/IRAP slice, else why not (possibly in why). */
static const char *keyframe_problem(int fd, enum kp_codec codec, uint64_t off, uint32_t len, char *why, size_t whylen)
{
	uint64_t pos = off, end = off + len;
	for (int i = 0; i < KEYFRAME_NALS; i++) {
		uint8_t h[6];
		if (pos + sizeof h > end || kp_pread_all(fd, h, sizeof h, pos) < 0)
			return "ends before its first picture NAL unit";
		uint32_t n = cat_get_be32(h);
		if (n < 2 || pos + 4 + n > end)
			return "holds a NAL unit length that crosses the range";
		unsigned type = h26x_nal_type(codec, h + 4);
		if (h26x_is_vcl(codec, type)) {
			if (h26x_is_keyframe(codec, type))
				return NULL;
			snprintf(why, whylen, "starts with a %s picture (NAL type %u), not a keyframe",
				 codec == KP_CODEC_H265 ? "non-IRAP" : "non-IDR", type);
			return why;
		}
		pos += 4 + n;
	}
	return "has no picture among its first NAL units";
}

struct walk {
	struct run *run;
	const struct cat_recording *rec;
	int fd;
	uint64_t size;
	uint32_t expect_seq;
	uint64_t expect_off;
	int stop; /* a problem was found: the following rows go with it */
	unsigned n;
	uint64_t last_end;
};

static int check_fragment(void *arg, const struct cat_fragment *f)
{
	struct walk *w = arg;
	struct run *run = w->run;
	const char *path = w->rec->path;
	run->res.fragments++;
	w->n++;
	w->last_end = f->offset + f->length;
	if (rec_ranges_add(&run->ranges, f->start_ms, f->end_ms) < 0 ||
	    rec_buckets_add(&run->buckets, f->start_ms, f->end_ms) < 0)
		return -ENOMEM;
	if (w->stop)
		return 0;
	struct fix cut = {.kind = FIX_TRUNCATE, .stream_id = w->rec->stream_id, .id = w->rec->id, .seq = f->seq};
	if (f->seq != w->expect_seq || (w->expect_off && f->offset != w->expect_off)) {
		problem(run, "%s: fragment %u at byte %llu does not follow fragment %u ending at byte %llu", path,
			(unsigned)f->seq, (unsigned long long)f->offset, (unsigned)w->expect_seq - 1,
			(unsigned long long)w->expect_off);
		fix(run, cut);
		w->stop = 1;
		return 0;
	}
	w->expect_seq = f->seq + 1;
	w->expect_off = f->offset + f->length;
	if (f->offset + f->length > w->size) {
		problem(run, "%s: fragment %u [%llu, %llu) lies beyond the end of the file (%llu bytes)", path,
			(unsigned)f->seq, (unsigned long long)f->offset, (unsigned long long)(f->offset + f->length),
			(unsigned long long)w->size);
		fix(run, cut);
		w->stop = 1;
		return 0;
	}
	uint8_t head[8];
	if (kp_pread_all(w->fd, head, sizeof head, f->offset) < 0 || memcmp(head + 4, "prft", 4)) {
		problem(run, "%s: fragment %u at byte %llu does not start with a fragment header", path,
			(unsigned)f->seq, (unsigned long long)f->offset);
		fix(run, cut);
		w->stop = 1;
		return 0;
	}
	if (f->keyframe_length) {
		run->res.keyframes++;
		char buf[96];
		const char *why = NULL;
		if (f->keyframe_offset < f->offset || f->keyframe_offset + f->keyframe_length > f->offset + f->length)
			why = "lies outside its fragment";
		else if (!(w->rec->flags & CAT_REC_REMOTE)) /* its samples are in the store only */
			why = keyframe_problem(w->fd, (enum kp_codec)w->rec->codec, f->keyframe_offset,
					       f->keyframe_length, buf, sizeof buf);
		if (why) {
			problem(run, "%s: keyframe of fragment %u [%llu, +%u) %s", path, (unsigned)f->seq,
				(unsigned long long)f->keyframe_offset, (unsigned)f->keyframe_length, why);
			fix(run, (struct fix){.kind = FIX_DROP_KEYFRAME,
					      .stream_id = w->rec->stream_id,
					      .id = w->rec->id,
					      .seq = f->seq});
		}
	}
	return cancelled(run) ? -ECANCELED : 0;
}

/* Whether the recording is still in the catalog now (retention may have removed it
 * after this stream's snapshot was taken). */
static int still_catalogued(struct run *run, uint64_t id)
{
	struct cat_txn *t;
	if (cat_begin(run->cat, 0, &t) < 0)
		return 1;
	struct cat_recording r;
	int found = cat_get_recording(t, id, &r) == 0;
	cat_abort(t);
	return found;
}

static int check_recording(void *arg, const struct cat_recording *rec)
{
	struct run *run = arg;
	run->res.recordings++;
	struct walk w = {.run = run, .rec = rec, .fd = -1, .expect_seq = 1};
	w.fd = openat(run->dirfd, rec->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (w.fd >= 0 && fstat(w.fd, &st) == 0) {
		w.size = (uint64_t)st.st_size;
	} else {
		int e = errno;
		if (e == ENOENT && !still_catalogued(run, rec->id))
			w.stop = 1; /* removed by retention meanwhile: not a problem */
		else {
			problem(run, "%s: %s (recording %llu, %u fragments)", rec->path,
				e == ENOENT ? "file missing" : strerror(e), (unsigned long long)rec->id,
				(unsigned)rec->fragments);
			if (e == ENOENT)
				fix(run, (struct fix){
					     .kind = FIX_DELETE_RECORDING, .stream_id = rec->stream_id, .id = rec->id});
			w.stop = 2;
		}
	}
	/* The rows are walked either way: coverage is compared with all of them. */
	int r = cat_each_fragment(run->t, rec->id, check_fragment, &w);
	if (w.fd >= 0)
		close(w.fd);
	if (r < 0)
		return r;
	if (w.stop)
		return 0;
	if (w.n == 0) {
		problem(run, "%s: recording %llu has no fragments", rec->path, (unsigned long long)rec->id);
		fix(run,
		    (struct fix){.kind = FIX_TRUNCATE, .stream_id = rec->stream_id, .id = rec->id, .seq = FIX_ALL});
	} else if (w.n != rec->fragments || w.last_end != rec->bytes) {
		problem(run, "%s: the recording row counts %u fragments and %llu bytes, its fragments %u and %llu",
			rec->path, (unsigned)rec->fragments, (unsigned long long)rec->bytes, w.n,
			(unsigned long long)w.last_end);
		fix(run, (struct fix){
			     .kind = FIX_TRUNCATE, .stream_id = rec->stream_id, .id = rec->id, .seq = FIX_ALL_AFTER});
	}
	return 0;
}

static int check_keyframe_row(void *arg, int64_t ms, const struct cat_keyframe *kf)
{
	struct run *run = arg;
	struct cat_recording r;
	struct cat_fragment f;
	int e = cat_get_recording(run->t, kf->recording_id, &r);
	if (e == 0)
		e = cat_get_fragment(run->t, kf->recording_id, kf->seq, &f);
	if (e < 0 && e != -ENOENT)
		return e;
	if (e == -ENOENT || r.stream_id != run->stream_id || f.start_ms != ms || f.keyframe_offset != kf->offset ||
	    f.keyframe_length != kf->length) {
		char label[CAT_PATH_MAX + 8];
		stream_label(run, run->stream_id, label, sizeof label);
		problem(run, "%s: keyframe row at %lld ms names no such keyframe (recording %llu, fragment %u)", label,
			(long long)ms, (unsigned long long)kf->recording_id, (unsigned)kf->seq);
		fix(run, (struct fix){.kind = FIX_KEYFRAME_ROW, .stream_id = run->stream_id, .ms = ms});
	}
	return 0;
}

struct bucket_cmp {
	const struct rec_buckets *want;
	size_t i;
	int64_t bad_ms, stored, computed; /* the first difference */
	int differ;
};

static int compare_bucket(void *arg, int64_t bucket_ms, int64_t covered_ms)
{
	struct bucket_cmp *c = arg;
	const struct rec_bucket *w = c->i < c->want->n ? &c->want->b[c->i] : NULL;
	if (w && w->start_ms < bucket_ms) { /* computed, not stored */
		*c =
		    (struct bucket_cmp){.want = c->want, .bad_ms = w->start_ms, .computed = w->covered_ms, .differ = 1};
		return 1;
	}
	if (!w || w->start_ms != bucket_ms || w->covered_ms != covered_ms) {
		c->differ = 1;
		c->bad_ms = bucket_ms;
		c->stored = covered_ms;
		c->computed = w && w->start_ms == bucket_ms ? w->covered_ms : 0;
		return 1;
	}
	c->i++;
	return 0;
}

static int check_coverage(struct run *run)
{
	struct rec_cov *cov = malloc(sizeof *cov);
	if (!cov)
		return -ENOMEM;
	int r = cat_coverage(run->t, run->stream_id, cov);
	if (r < 0) {
		free(cov);
		return r;
	}
	/* The exact ranges from exact_from_ms on must be the union of the fragments. */
	uint32_t k = 0;
	int64_t bad_ms = 0;
	int differ = 0;
	for (size_t i = 0; i < run->ranges.n && !differ; i++) {
		struct rec_range c = run->ranges.r[i];
		if (c.end_ms <= cov->exact_from_ms)
			continue;
		if (c.start_ms < cov->exact_from_ms)
			c.start_ms = cov->exact_from_ms;
		if (k >= cov->n || cov->r[k].start_ms != c.start_ms || cov->r[k].end_ms != c.end_ms) {
			differ = 1;
			bad_ms = c.start_ms;
		}
		k++;
	}
	if (!differ && k != cov->n) {
		differ = 1;
		bad_ms = cov->r[k].start_ms;
	}
	char label[CAT_PATH_MAX + 8];
	stream_label(run, run->stream_id, label, sizeof label);
	if (differ)
		problem(run, "%s: the exact coverage ranges (%u stored) differ from the fragments' from %lld ms on",
			label, (unsigned)cov->n, (long long)bad_ms);
	free(cov);
	struct bucket_cmp bc = {.want = &run->buckets};
	r = cat_each_coverage_bucket(run->t, run->stream_id, INT64_MIN, INT64_MAX, compare_bucket, &bc);
	if (r < 0)
		return r;
	if (!bc.differ && bc.i < run->buckets.n) {
		bc.differ = 1;
		bc.bad_ms = run->buckets.b[bc.i].start_ms;
		bc.computed = run->buckets.b[bc.i].covered_ms;
	}
	if (bc.differ)
		problem(run, "%s: the coverage bucket at %lld ms holds %lld ms, its fragments cover %lld ms", label,
			(long long)bc.bad_ms, (long long)bc.stored, (long long)bc.computed);
	if (differ || bc.differ)
		fix(run, (struct fix){.kind = FIX_STREAM, .stream_id = run->stream_id});
	return 0;
}

static int check_stream(struct run *run, uint32_t stream_id)
{
	run->res.streams++;
	run->stream_id = stream_id;
	run->ranges.n = 0;
	run->buckets.n = 0;
	int r = cat_begin(run->cat, 0, &run->t);
	if (r < 0)
		return r;
	r = cat_each_stream_recording(run->t, stream_id, INT64_MIN, INT64_MAX, check_recording, run);
	if (r == 0)
		r = cat_each_keyframe(run->t, stream_id, check_keyframe_row, run);
	if (r == 0)
		r = check_coverage(run);
	cat_abort(run->t);
	run->t = NULL;
	return r;
}

static int add_camera(void *arg, const char *name, uint32_t id, uint32_t days)
{
	struct run *run = arg;
	(void)days;
	if (run->ncams < CHECK_CAMERAS) {
		run->cams[run->ncams].id = id;
		snprintf(run->cams[run->ncams++].name, CAT_PATH_MAX, "%s", name);
	}
	return 0;
}

static int add_stream(void *arg, uint32_t stream_id)
{
	struct run *run = arg;
	if (run->nstreams == run->cap) {
		size_t cap = run->cap ? run->cap * 2 : 64;
		uint32_t *ns = realloc(run->streams, cap * sizeof *ns);
		if (!ns)
			return -ENOMEM;
		run->streams = ns;
		run->cap = cap;
	}
	run->streams[run->nstreams++] = stream_id;
	return 0;
}

struct event_walk {
	struct run *run;
	struct cat_txn *t;
	struct rec_evlog_index logged; /* read after the snapshot t: holds every record t needs */
};

/* Whether the event still has that revision, in a snapshot taken now. */
static int still_stored(struct run *run, const char *id, uint32_t revision)
{
	struct cat_txn *t;
	uint32_t now = 0;
	if (cat_begin(run->cat, 0, &t) < 0)
		return 1;
	int r = cat_event_revision(t, id, &now);
	cat_abort(t);
	return r < 0 || now == revision;
}

static int check_event(void *arg, int64_t start_ms, uint64_t seq, const char *id)
{
	struct event_walk *w = arg;
	struct run *run = w->run;
	(void)start_ms;
	(void)seq;
	struct cat_event_row row;
	int r = cat_event_get(w->t, id, &row, NULL);
	if (r < 0)
		return r;
	run->res.events++;
	/* Its record, in the event log or (older catalogs) a file: what a rebuild of the
	 * catalog restores it from. A revision replaced since this snapshot ended its
	 * record: not a problem. */
	char path[CAT_PATH_MAX];
	rec_event_record_path(id, row.revision, path, sizeof path);
	if (!rec_evlog_index_has(&w->logged, id, row.revision, row.committed_ms) &&
	    faccessat(run->dirfd, path, F_OK, 0) < 0 && errno == ENOENT && still_stored(run, id, row.revision)) {
		problem(run,
			"event %s: its record is missing (neither in %s/ nor %s; a rebuild of the catalog could not "
			"restore it)",
			id, REC_EVLOG_DIR, path);
		struct fix f = {.kind = FIX_EVENT_RECORD};
		snprintf(f.event, sizeof f.event, "%s", id);
		fix(run, f);
	}
	if (!row.jpeg_len)
		return cancelled(run) ? -ECANCELED : 0;
	rec_event_jpeg_path(id, row.revision, path, sizeof path);
	struct stat st;
	struct cat_tier side;
	if (fstatat(run->dirfd, path, &st, 0) < 0) {
		int e = errno;
		int m = e == ENOENT ? rec_tier_sidecar_read(run->dirfd, path, &side) : -e;
		if (m == 0 && !side.etag[0])
			m = -ENOENT; /* an intent only: the copy never ended, and the JPEG is gone */
		if (m == 0 && side.size == row.jpeg_len)
			return 0; /* in the object store, its sidecar says (docs/tier.md, step 8) */
		if (m == 0)
			problem(run, "event %s: the sidecar of its JPEG %s says %llu bytes, the catalog says %u", id,
				path, (unsigned long long)side.size, (unsigned)row.jpeg_len);
		else if (e != ENOENT || m == -ENOENT)
			problem(run, "event %s: its JPEG %s: %s", id, path, strerror(e));
		else
			problem(run, "event %s: the sidecar of its JPEG %s: %s", id, path, strerror(-m));
	} else if ((uint64_t)st.st_size != row.jpeg_len)
		problem(run, "event %s: its JPEG %s has %llu bytes, the catalog says %u", id, path,
			(unsigned long long)st.st_size, (unsigned)row.jpeg_len);
	else
		return 0;
	struct fix f = {.kind = FIX_EVENT_JPEG};
	snprintf(f.event, sizeof f.event, "%s", id);
	fix(run, f);
	return 0;
}

static int check_events(struct run *run)
{
	struct event_walk w = {.run = run};
	int r = cat_begin(run->cat, 0, &w.t);
	if (r < 0)
		return r;
	r = rec_evlog_index_load(run->dirfd, &w.logged);
	if (r == 0)
		r = cat_each_event(w.t, check_event, &w);
	cat_abort(w.t);
	rec_evlog_index_free(&w.logged);
	return r;
}

static int check_all(struct run *run)
{
	struct cat_txn *t;
	int r = cat_begin(run->cat, 0, &t);
	if (r < 0)
		return r;
	run->ncams = 0;
	run->nstreams = 0;
	uint64_t total = 0, sum = 0;
	r = cat_each_camera(t, add_camera, run);
	if (r == 0)
		r = cat_each_stream(t, add_stream, run);
	if (r == 0)
		r = cat_total_bytes(t, &total);
	if (r == 0)
		r = cat_sum_local_bytes(t, &sum);
	cat_abort(t);
	if (r < 0)
		return r;
	if (total != sum) {
		problem(run, "catalog: the byte total is %llu, the recordings hold %llu", (unsigned long long)total,
			(unsigned long long)sum);
		fix(run, (struct fix){.kind = FIX_RECOUNT});
	}
	for (size_t i = 0; i < run->nstreams && r == 0; i++) {
		r = check_stream(run, run->streams[i]);
		if (r == 0 && cancelled(run))
			r = -ECANCELED;
	}
	if (r == 0)
		r = check_events(run);
	return r;
}

static int apply_one(struct cat_txn *t, int dirfd, const struct fix *f)
{
	struct cat_recording rec;
	int r = 0;
	switch (f->kind) {
	case FIX_DELETE_RECORDING:
		r = cat_get_recording(t, f->id, &rec);
		if (r == 0 && faccessat(dirfd, rec.path, F_OK, 0) < 0 && errno == ENOENT)
			r = cat_delete_recording(t, f->id, NULL);
		break;
	case FIX_TRUNCATE:
		r = cat_truncate_recording(t, f->id, f->seq);
		break;
	case FIX_DROP_KEYFRAME:
		r = cat_drop_keyframe(t, f->id, f->seq);
		break;
	case FIX_KEYFRAME_ROW:
		r = cat_delete_keyframe_row(t, f->stream_id, f->ms);
		break;
	case FIX_EVENT_JPEG:
		r = cat_event_drop_jpeg(t, f->event);
		break;
	case FIX_EVENT_RECORD: {
		/* Inside the write transaction: the commit thread cannot replace the revision
		 * meanwhile. */
		static kp_EventRecord ev;
		struct cat_event_row row;
		char path[CAT_PATH_MAX];
		r = cat_event_get(t, f->event, &row, &ev);
		if (r == 0)
			rec_event_record_path(f->event, row.revision, path, sizeof path);
		if (r == 0 && faccessat(dirfd, path, F_OK, 0) < 0 && errno == ENOENT)
			r = rec_event_record_store(dirfd, &ev);
		break;
	}
	case FIX_STREAM:
	case FIX_RECOUNT:
		break; /* below, once per stream */
	}
	return r == -ENOENT ? 0 : r; /* gone meanwhile */
}

/* One transaction: the row fixes, then the coverage of every stream touched rebuilt
 * and the byte total recounted. */
static int apply(struct run *run)
{
	struct cat_txn *t;
	int r = cat_begin(run->cat, 1, &t);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < run->nfixes && r == 0; i++)
		r = apply_one(t, run->dirfd, &run->fixes[i]);
	for (unsigned i = 0; i < run->nfixes && r == 0; i++) {
		const struct fix *f = &run->fixes[i];
		int seen = f->kind == FIX_RECOUNT || f->kind == FIX_EVENT_JPEG || f->kind == FIX_EVENT_RECORD;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = run->fixes[j].kind != FIX_RECOUNT && run->fixes[j].stream_id == f->stream_id;
		if (!seen)
			r = cat_rebuild_coverage(t, f->stream_id);
	}
	if (r == 0)
		r = cat_recount_bytes(t);
	if (r < 0) {
		cat_abort(t);
		return r;
	}
	return cat_commit(t);
}

/* The data file's structure first: LMDB trusts its pages, and a damaged one would abort
 * the reads below (or crash the process). Nothing else is checked or repaired then. */
static int check_structure(struct run *run)
{
	struct cat_verify_report rep;
	int r = cat_verify(run->cat, &rep);
	if (r == -ENOTSUP)
		return 0; /* a 32-bit build: the rows are checked as before */
	if (r == -EBADMSG) {
		problem(run,
			"catalog: %s/data.mdb is damaged: %s; nothing else was checked or repaired: rebuild it from "
			"the files with keeppeekctl check --rebuild",
			REC_CATALOG_DIR, rep.why);
		return 1;
	}
	return r;
}

int rec_check(struct cat *cat, int data_dirfd, const struct rec_check_opts *o, struct rec_check_result *ret)
{
	struct run *run = calloc(1, sizeof *run);
	if (!run)
		return -ENOMEM;
	*run = (struct run){.cat = cat, .dirfd = data_dirfd, .o = o, .prefix = ""};
	int damaged = check_structure(run);
	if (damaged) {
		if (damaged > 0) {
			memset(ret, 0, sizeof *ret);
			ret->problems = ret->remaining = 1;
			ret->damaged = 1;
			damaged = 0;
		}
		free(run);
		return damaged;
	}
	run->cams = calloc(CHECK_CAMERAS, sizeof *run->cams);
	if (o->repair)
		run->fixes = calloc(REC_CHECK_MAX_REPAIRS, sizeof *run->fixes);
	int r = !run->cams || (o->repair && !run->fixes) ? -ENOMEM : check_all(run);
	unsigned found = run->problems;
	if (r == 0 && run->nfixes) {
		r = apply(run);
		if (r == 0) {
			run->res.repaired = run->nfixes;
			run->problems = 0;
			run->nfixes = 0;
			run->prefix = "remaining: ";
			struct rec_check_result first = run->res;
			r = check_all(run);
			run->res = first;
			run->res.repaired = first.repaired;
		}
	}
	if (r == 0) {
		run->res.problems = found;
		run->res.remaining = run->res.repaired ? run->problems : found;
		*ret = run->res;
	}
	rec_ranges_free(&run->ranges);
	rec_buckets_free(&run->buckets);
	free(run->streams);
	free(run->fixes);
	free(run->cams);
	free(run);
	return r;
}
