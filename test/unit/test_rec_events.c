/* recorderd events in a real LMDB catalog in a temporary directory: term and time keys,
 * revision rules (higher replaces with its terms, equal/lower refused), search (labels,
 * prefix terms, camera, time range, newest first, cursor paging), publication and
 * delete jobs on the commit path with their JPEG files, event->keyframe links against a
 * recorded fixture, input checks (ids, times, JPEG headers, cursors) and thumbnails. */
#include <errno.h>
#include <lmdb.h>
#include <pb_encode.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "catalog_events.h"
#include "catalog_json.h"
#include "check.h"
#include "event_log.h"
#include "event_record.h"
#include "catalog_keys.h"
#include "event_check.h"
#include "event_sweep.h"
#include "event_terms.h"
#include "jobs.h"
#include "keyframe.h"
#include "media.h"
#include "retention.h"
#include "search.h"
#include "test.h"
#include "test_rec_fixture.h"
#include "thumbnail.h"

#define T0 1764460800000ll

static kp_EventRecord mk(const char *id, uint32_t rev, const char *camera, int64_t start, const char *label,
			 const char *attr)
{
	kp_EventRecord e = kp_EventRecord_init_zero;
	snprintf(e.event_id, sizeof e.event_id, "%s", id);
	e.revision = rev;
	snprintf(e.camera, sizeof e.camera, "%s", camera);
	e.start_ms = start;
	e.end_ms = start + 1000;
	if (label) {
		snprintf(e.labels[0].name, sizeof e.labels[0].name, "%s", label);
		e.labels[0].score = 0.5f;
		e.labels_count = 1;
	}
	if (attr) {
		snprintf(e.attributes[0].key, sizeof e.attributes[0].key, "note");
		snprintf(e.attributes[0].value, sizeof e.attributes[0].value, "%s", attr);
		e.attributes_count = 1;
	}
	snprintf(e.source, sizeof e.source, "analysis");
	return e;
}

static int put(struct rec_setup *rs, uint32_t cam, const kp_EventRecord *e)
{
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs->cat, 1, &t), 0);
	int r = cat_event_put(t, cam, e, 0, NULL, 0, NULL);
	if (r == 0)
		CHECK_EQ(cat_commit(t), 0);
	else
		cat_abort(t);
	return r;
}

static uint32_t max_candidates; /* 0: the default */

/* Runs a search and returns the ids in answer order, space-separated, and the cursor. */
static void run_search(struct rec_setup *rs, const kp_EventSearch *s, char *ids, size_t cap, char *cursor)
{
	static struct rec_search_q q;
	char why[160];
	struct cat_txn *t;
	struct catrec_buf b;
	static char json[1 << 20];
	catrec_init(&b, 1 << 20);
	CHECK_EQ(cat_begin(rs->cat, 0, &t), 0);
	CHECK_EQ(rec_search_prepare(t, s, &q, why, sizeof why), 0);
	if (max_candidates)
		q.max_candidates = max_candidates;
	CHECK_EQ(rec_search(t, &q, &b), 0);
	cat_abort(t);
	/* As webd renders the page. */
	long n = catj_render(CATJ_SEARCH, b.p, b.len, json, sizeof json);
	CHECK(n > 0);
	ids[0] = '\0';
	const char *p = json;
	while ((p = strstr(p, "{\"id\":\"")) != NULL) {
		p += 7;
		const char *e = strchr(p, '"');
		size_t used = strlen(ids);
		snprintf(ids + used, cap - used, "%s%.*s", used ? " " : "", (int)(e - p), p);
	}
	const char *c = strstr(json, "\"next_cursor\":");
	CHECK(c != NULL);
	cursor[0] = '\0';
	if (c && c[14] == '"')
		snprintf(cursor, REC_CURSOR_LEN + 1, "%.*s", REC_CURSOR_LEN, c + 15);
	catrec_free(&b);
}

static void test_keys(void)
{
	uint8_t k[CAT_KEY_TERM_MAX];
	size_t n = cat_key_term(k, "person", -5, 7);
	CHECK_EQ(n, 6 + 17);
	size_t tl;
	int64_t ms;
	uint64_t seq;
	CHECK_EQ(cat_parse_term_key(k, n, &tl, &ms, &seq), 0);
	CHECK_EQ(tl, 6);
	CHECK_EQ(ms, -5);
	CHECK_EQ(seq, 7);
	CHECK_EQ(cat_parse_term_key(k, n - 1, &tl, &ms, &seq), -EBADMSG);
	/* Time keys sort by time then seq, negative times first. */
	uint8_t a[CAT_KEY_EVENT_BY_TIME], b[CAT_KEY_EVENT_BY_TIME], c[CAT_KEY_EVENT_BY_TIME];
	cat_key_event_by_time(a, -1, 9);
	cat_key_event_by_time(b, 0, 1);
	cat_key_event_by_time(c, 0, 2);
	CHECK(memcmp(a, b, sizeof a) < 0 && memcmp(b, c, sizeof b) < 0);
	uint8_t d[CAT_KEY_EVENT_BY_CAM], e[CAT_KEY_EVENT_BY_CAM];
	cat_key_event_by_cam(d, 1, T0 + 5, 1);
	cat_key_event_by_cam(e, 2, T0 - 5, 1);
	CHECK(memcmp(d, e, sizeof d) < 0);
}

static void test_terms(void)
{
	static kp_EventRecord e;
	e = mk("x", 1, "cam", T0, "Person", "Red CAR, parked near Gate-7");
	static struct rec_terms t, w;
	rec_event_terms(&e, &t);
	/* label, whole value, and its words, lower-cased */
	CHECK_EQ(t.n, 1 + 1 + 6);
	CHECK_STR_CONTAINS(t.t[0], "person");
	CHECK_EQ(rec_query_words("CAR gat", &w), 0);
	CHECK(rec_terms_match(&t, &w));
	CHECK_EQ(rec_query_words("car bus", &w), 0);
	CHECK(!rec_terms_match(&t, &w));
	CHECK_EQ(rec_query_words("a b c d e f g h i", &w), -E2BIG);
	CHECK(rec_event_has_label(&e, "person"));
	CHECK(!rec_event_has_label(&e, "pers"));
}

static void test_revisions(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	static kp_EventRecord e;
	e = mk("ev:1", 1, "cam", T0, "dog", "brown");
	CHECK_EQ(put(&rs, rs.camera_id, &e), 0);
	CHECK_EQ(put(&rs, rs.camera_id, &e), -EEXIST); /* equal */
	e = mk("ev:1", 3, "cam", T0 + 10, "cat", "grey");
	CHECK_EQ(put(&rs, rs.camera_id, &e), 0);
	e = mk("ev:1", 2, "cam", T0, "dog", "brown");
	CHECK_EQ(put(&rs, rs.camera_id, &e), -EEXIST); /* lower */
	e.revision = 0;
	CHECK_EQ(put(&rs, rs.camera_id, &e), -EINVAL);

	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	static kp_EventRecord got;
	struct cat_event_row row;
	CHECK_EQ(cat_event_get(t, "ev:1", &row, &got), 0);
	CHECK_EQ(row.revision, 3);
	CHECK_EQ(row.start_ms, T0 + 10);
	CHECK_STR_CONTAINS(got.labels[0].name, "cat");
	uint64_t n;
	CHECK_EQ(cat_event_count(t, &n), 0);
	CHECK_EQ(n, 1);
	cat_abort(t);

	/* The replaced revision's terms and time keys are gone with it. */
	kp_EventSearch s = kp_EventSearch_init_zero;
	char ids[512], cur[64];
	snprintf(s.q, sizeof s.q, "brown");
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK_EQ(strlen(ids), 0);
	snprintf(s.q, sizeof s.q, "gr");
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "ev:1"));
	s.q[0] = '\0';
	s.to_ms = T0 + 5; /* the old start no longer matches */
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK_EQ(strlen(ids), 0);

	CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
	CHECK_EQ(cat_event_delete(t, "ev:1", &row), 0);
	CHECK_EQ(cat_event_delete(t, "ev:1", &row), -ENOENT);
	CHECK_EQ(cat_commit(t), 0);
	s.to_ms = 0;
	snprintf(s.q, sizeof s.q, "grey");
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK_EQ(strlen(ids), 0);
	rec_setup_close(&rs);
}

static void test_search(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "front"), 0);
	uint32_t back;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
	CHECK_EQ(cat_camera(t, "back", 0, &back), 0);
	CHECK_EQ(cat_commit(t), 0);
	/* 30 events: even on front, odd on back; every third a person, the rest cars; two
	 * share each start time so that the seq tie-break is exercised. */
	for (int i = 0; i < 30; i++) {
		char id[16];
		snprintf(id, sizeof id, "e%02d", i);
		static kp_EventRecord e;
		e = mk(id, 1, i % 2 ? "back" : "front", T0 + (i / 2) * 1000, i % 3 ? "car" : "person",
		       i % 3 ? "Volvo estate" : "delivery driver");
		CHECK_EQ(put(&rs, i % 2 ? back : rs.camera_id, &e), 0);
	}
	kp_EventSearch s = kp_EventSearch_init_zero;
	char ids[1024], cur[64];
	s.limit = 5;
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e29 e28 e27 e26 e25"));
	/* Paging through everything with the cursor: newest first, each once. */
	char all[1024] = "";
	for (int page = 0; page < 10; page++) {
		size_t used = strlen(all);
		snprintf(all + used, sizeof all - used, "%s%s", used && ids[0] ? " " : "", ids);
		if (!cur[0])
			break;
		snprintf(s.cursor, sizeof s.cursor, "%s", cur);
		run_search(&rs, &s, ids, sizeof ids, cur);
	}
	CHECK(!strcmp(all, "e29 e28 e27 e26 e25 e24 e23 e22 e21 e20 e19 e18 e17 e16 e15 e14 e13 e12 e11 e10 e09 e08 "
			   "e07 e06 e05 e04 e03 e02 e01 e00"));
	/* Label (case-insensitive), camera, time range. */
	s = (kp_EventSearch)kp_EventSearch_init_zero;
	snprintf(s.label, sizeof s.label, "PERSON");
	snprintf(s.camera, sizeof s.camera, "front");
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e24 e18 e12 e06 e00"));
	s.from_ms = T0 + 3000;
	s.to_ms = T0 + 10000;
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e18 e12 e06"));
	/* Prefix terms, every word must match; paging over the term path. */
	s = (kp_EventSearch)kp_EventSearch_init_zero;
	snprintf(s.q, sizeof s.q, "deliv DRI");
	s.limit = 4;
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e27 e24 e21 e18"));
	CHECK(cur[0] != '\0');
	snprintf(s.cursor, sizeof s.cursor, "%s", cur);
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e15 e12 e09 e06"));
	snprintf(s.cursor, sizeof s.cursor, "%s", cur);
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e03 e00"));
	CHECK_EQ(cur[0], '\0');
	/* More candidates than the term path takes: the time index gives the same pages. */
	max_candidates = 3;
	s.cursor[0] = '\0';
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e27 e24 e21 e18"));
	snprintf(s.cursor, sizeof s.cursor, "%s", cur);
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK(!strcmp(ids, "e15 e12 e09 e06"));
	max_candidates = 0;
	s = (kp_EventSearch)kp_EventSearch_init_zero;
	snprintf(s.q, sizeof s.q, "volvo driver");
	run_search(&rs, &s, ids, sizeof ids, cur);
	CHECK_EQ(strlen(ids), 0);
	/* A cursor this server did not give, an unknown camera, a bad limit. */
	static struct rec_search_q q;
	char why[160];
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	snprintf(s.cursor, sizeof s.cursor, "c1.zz");
	CHECK_EQ(rec_search_prepare(t, &s, &q, why, sizeof why), -EBADMSG);
	s.cursor[0] = '\0';
	snprintf(s.camera, sizeof s.camera, "side");
	CHECK_EQ(rec_search_prepare(t, &s, &q, why, sizeof why), -ENOENT);
	s.camera[0] = '\0';
	s.limit = REC_SEARCH_MAX_LIMIT + 1;
	CHECK_EQ(rec_search_prepare(t, &s, &q, why, sizeof why), -EINVAL);
	cat_abort(t);
	rec_setup_close(&rs);
}

/* A w x h gradient JPEG (malloc'ed). */
static uint8_t *make_jpeg(int w, int h, size_t *ret_len)
{
	uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
	for (int i = 0; i < w * h * 3; i++)
		rgb[i] = (uint8_t)(i * 7);
	tjhandle c = tjInitCompress();
	unsigned char *out = NULL;
	unsigned long len = 0;
	CHECK_EQ(tjCompress2(c, rgb, w, 0, h, TJPF_RGB, &out, &len, TJSAMP_420, 85, 0), 0);
	tjDestroy(c);
	free(rgb);
	uint8_t *copy = malloc(len);
	memcpy(copy, out, len);
	tjFree(out);
	*ret_len = len;
	return copy;
}

static void test_checks(void)
{
	CHECK_EQ(rec_event_id_ok("a.b_c:d-9"), 0);
	CHECK_EQ(rec_event_id_ok(""), -EINVAL);
	CHECK_EQ(rec_event_id_ok("a/b"), -EINVAL);
	CHECK_EQ(rec_event_id_ok("0123456789012345678901234567890123456789012345678901234567890123"), 0);
	CHECK_EQ(rec_event_id_ok("01234567890123456789012345678901234567890123456789012345678901234"), -EINVAL);
	struct rec_reject rej;
	CHECK_EQ(rec_event_times_check(T0, 0, T0, &rej), 0);
	CHECK_EQ(rec_event_times_check(T0, T0 - 1, T0, &rej), -EINVAL);
	CHECK(!strcmp(rej.code, "bad_times"));
	CHECK_EQ(rec_event_times_check(0, 0, T0, &rej), -EINVAL);
	CHECK_EQ(rec_event_times_check(REC_EVENT_EARLIEST_MS - 1, 0, T0, &rej), -EINVAL);
	CHECK_EQ(rec_event_times_check(REC_EVENT_EARLIEST_MS, 0, T0, &rej), 0);
	CHECK_EQ(rec_event_times_check(T0 + REC_EVENT_AHEAD_MS, 0, T0, &rej), 0);
	CHECK_EQ(rec_event_times_check(T0 + REC_EVENT_AHEAD_MS + 1, 0, T0, &rej), -EINVAL);
	CHECK_EQ(rec_event_times_check(INT64_MAX, 0, T0, &rej), -EINVAL);
	CHECK_EQ(rec_event_times_check(T0, T0 + REC_EVENT_MAX_SPAN_MS + 1, T0, &rej), -EINVAL);

	size_t len;
	uint8_t *j = make_jpeg(64, 48, &len);
	uint32_t w, h;
	CHECK_EQ(rec_jpeg_check(j, len, &w, &h, &rej), 0);
	CHECK_EQ(w, 64);
	CHECK_EQ(h, 48);
	CHECK_EQ(rec_jpeg_check(j, len - 1, &w, &h, &rej), -EINVAL); /* no EOI */
	CHECK(!strcmp(rej.code, "bad_jpeg"));
	uint8_t bad[] = {0xff, 0xd8, 0x00, 0x01, 0x02, 0xff, 0xd9};
	CHECK_EQ(rec_jpeg_check(bad, sizeof bad, &w, &h, &rej), -EINVAL); /* header does not parse */
	CHECK(!strcmp(rej.code, "bad_jpeg"));
	CHECK_EQ(rec_jpeg_check(j, KP_ANALYSIS_JPEG_MAX + 1, &w, &h, &rej), -EMSGSIZE);
	CHECK(!strcmp(rej.code, "jpeg_too_large"));
	CHECK_EQ(rej.result, kp_CatalogResult_CATALOG_TOO_LARGE);
	free(j);

	char c[REC_CURSOR_LEN + 1];
	int64_t ms;
	uint64_t seq;
	rec_cursor_encode(-42, 99, c);
	CHECK_EQ(strlen(c), REC_CURSOR_LEN);
	CHECK_EQ(rec_cursor_decode(c, &ms, &seq), 0);
	CHECK_EQ(ms, -42);
	CHECK_EQ(seq, 99);
	c[5] = 'G';
	CHECK_EQ(rec_cursor_decode(c, &ms, &seq), -EINVAL);
	CHECK_EQ(rec_cursor_decode("c1.", &ms, &seq), -EINVAL);
}

static void test_thumbnail(void)
{
	size_t len, tl;
	uint8_t *j = make_jpeg(1280, 720, &len), *th;
	CHECK_EQ(rec_thumbnail_make(j, len, &th, &tl), 0);
	struct rec_reject rej;
	uint32_t w = 0, h = 0;
	CHECK_EQ(rec_jpeg_check(th, tl, &w, &h, &rej), 0);
	CHECK_EQ(w, 320);
	CHECK_EQ(h, 180);
	free(th);
	free(j);
	j = make_jpeg(200, 100, &len); /* narrower: kept as it is */
	CHECK_EQ(rec_thumbnail_make(j, len, &th, &tl), 0);
	CHECK_EQ(rec_jpeg_check(th, tl, &w, &h, &rej), 0);
	CHECK_EQ(w, 200);
	free(th);
	free(j);
}

static struct rec_job *job(uint32_t cam, const kp_EventRecord *e, const uint8_t *jpeg, size_t len)
{
	struct rec_job *j = calloc(1, sizeof *j);
	j->kind = REC_JOB_EVENT;
	j->camera_id = cam;
	j->ev = *e;
	if (len) {
		j->jpeg = malloc(len);
		memcpy(j->jpeg, jpeg, len);
		j->jpeg_len = len;
	}
	return j;
}

/* The fan-out's EventCommitted from the bytes kept at commit is the one nanopb encodes
 * from the record and its links. */
static void same_committed(const struct rec_job *j)
{
	static uint8_t a[kp_EventCommitted_size], b[kp_EventCommitted_size];
	static kp_EventCommitted ec;
	ec = (kp_EventCommitted)kp_EventCommitted_init_zero;
	ec.has_event = true;
	ec.event = j->ev;
	memcpy(ec.keyframes, j->keyframes, sizeof j->keyframes);
	ec.keyframes_count = j->nkeyframes;
	pb_ostream_t o = pb_ostream_from_buffer(a, sizeof a);
	CHECK(pb_encode(&o, kp_EventCommitted_fields, &ec));
	size_t n = 0;
	CHECK_EQ(rec_job_committed_encode(j, b, sizeof b, &n), 0);
	CHECK_EQ(n, o.bytes_written);
	CHECK(n == o.bytes_written && !memcmp(a, b, n));
}

static int exists(struct rec_setup *rs, const char *path)
{
	struct stat st;
	return fstatat(rs->dirfd, path, &st, 0) == 0;
}

static void free_list(struct rec_job *j)
{
	while (j) {
		struct rec_job *n = j->next;
		rec_job_free(j);
		j = n;
	}
}

static struct fixture fx[2];

/* One batch of 300 publications (envelope-only and with JPEGs) over many events/<hh>
 * directories, written, synced and committed together (jobs.c write_files): each stored
 * one has its JPEG on disk and its record in the event log, all records written with
 * one flush (one write, one fdatasync), and one whose JPEG cannot be created (a
 * directory holds its name) fails alone and leaves no record. */
static void test_jobs_batch(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	size_t len;
	uint8_t *jpeg = make_jpeg(64, 48, &len);
	enum { N = 300, BAD = 123 };
	static kp_EventRecord e;
	struct rec_job *head = NULL, **tail = &head;
	char path[CAT_PATH_MAX], id[32];
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "batch.%d", i);
		e = mk(id, 1, "cam", T0 + i, "person", NULL);
		*tail = job(rs.camera_id, &e, jpeg, i % 3 == 0 || i == BAD ? len : 0);
		tail = &(*tail)->next;
	}
	snprintf(id, sizeof id, "batch.%d", BAD);
	rec_event_jpeg_path(id, 1, path, sizeof path);
	CHECK(mkdirat(rs.dirfd, "events", 0750) == 0 || errno == EEXIST);
	char dir[16];
	snprintf(dir, sizeof dir, "%.9s", path);
	CHECK(mkdirat(rs.dirfd, dir, 0750) == 0 || errno == EEXIST);
	CHECK_EQ(mkdirat(rs.dirfd, path, 0750), 0);
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, head);
	struct rec_evlog_stats ls;
	rec_evlog_get_stats(rs.log, &ls);
	CHECK_EQ(ls.flushes, 1);
	CHECK_EQ(ls.records, N - 1);
	CHECK_EQ(ls.tombstones, 0);
	struct rec_evlog_index logged;
	CHECK_EQ(rec_evlog_index_load(rs.dirfd, &logged), 0);
	CHECK_EQ(logged.n, N - 1);
	int i = 0, stored = 0;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	for (struct rec_job *j = head; j; j = j->next, i++) {
		uint32_t rev = 0;
		int r = cat_event_revision(t, j->ev.event_id, &rev);
		if (i == BAD) {
			CHECK_EQ(j->state, REC_JOB_FAILED);
			CHECK(r == -ENOENT || rev == 0);
			CHECK(!rec_evlog_index_has(&logged, j->ev.event_id, 1, j->ev.committed_ms));
			continue;
		}
		CHECK_EQ(j->state, REC_JOB_DONE);
		CHECK_EQ(r, 0);
		CHECK_EQ(rev, 1);
		CHECK(rec_evlog_index_has(&logged, j->ev.event_id, 1, j->ev.committed_ms));
		rec_event_record_path(j->ev.event_id, 1, path, sizeof path);
		CHECK(!exists(&rs, path)); /* no file per event */
		rec_event_jpeg_path(j->ev.event_id, 1, path, sizeof path);
		CHECK_EQ(exists(&rs, path), j->jpeg != NULL);
		same_committed(j);
		stored++;
	}
	cat_abort(t);
	CHECK_EQ(stored, N - 1);
	rec_evlog_index_free(&logged);
	free_list(head);
	free(jpeg);
	rec_setup_close(&rs);
}

/* Publication jobs with JPEGs, links to the recorded fixture, revision replacement
 * (the old JPEG goes), conflicts inside one batch, and a delete job. */
static void test_jobs_and_links(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	static struct rec_stream s[2];
	for (uint32_t i = 0; i < 2; i++) {
		uint64_t seq = 0;
		rec_stream_init(&s[i], &rs.env, "cam", i, rs.camera_id);
		rec_feed(&s[i], &fx[i], 2, T0, &seq);
		rec_stream_close(&s[i]);
	}
	rec_commit_free(rs.env.commit); /* everything indexed */
	rs.env.commit = NULL;

	size_t len;
	uint8_t *jpeg = make_jpeg(640, 360, &len);
	static kp_EventRecord e;
	e = mk("pub.1", 1, "cam", T0 + 2300, "person", NULL);
	struct rec_job *a = job(rs.camera_id, &e, jpeg, len);
	e.revision = 2;
	a->next = job(rs.camera_id, &e, jpeg, len);
	e.revision = 2; /* the same revision again in the same batch */
	a->next->next = job(rs.camera_id, &e, NULL, 0);
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, a);
	CHECK_EQ(a->state, REC_JOB_DONE);
	CHECK_EQ(a->next->state, REC_JOB_DONE);
	CHECK_EQ(a->next->next->state, REC_JOB_FAILED);
	CHECK_EQ(a->next->next->result, kp_CatalogResult_CATALOG_CONFLICT);
	CHECK(!strcmp(a->next->next->code, "revision_conflict"));
	CHECK(a->next->ev.committed_ms > 0);
	CHECK_EQ(a->next->nkeyframes, 2);
	same_committed(a);
	same_committed(a->next);
	{
		uint8_t none[16];
		size_t nlen;
		CHECK_EQ(rec_job_committed_encode(a->next->next, none, sizeof none, &nlen), -ENOENT); /* not stored */
	}
	char p1[CAT_PATH_MAX], p2[CAT_PATH_MAX];
	rec_event_jpeg_path("pub.1", 1, p1, sizeof p1);
	rec_event_jpeg_path("pub.1", 2, p2, sizeof p2);
	CHECK(!exists(&rs, p1)); /* replaced in the same batch: unlinked after the commit */
	CHECK(exists(&rs, p2));
	free_list(a);

	/* The stored JPEG is the published one, byte for byte. */
	int fd = openat(rs.dirfd, p2, O_RDONLY);
	uint8_t *back = malloc(len);
	CHECK(fd >= 0 && read(fd, back, len) == (ssize_t)len);
	CHECK(!memcmp(back, jpeg, len));
	free(back);
	close(fd);

	/* Links: the keyframe at or before the start, in each stream, resolves to the same
	 * keyframe as a lookup by time. */
	for (uint32_t st = 0; st < 2; st++) {
		struct rec_keyframe byev, bytime;
		CHECK_EQ(rec_keyframe_find_event(rs.cat, "pub.1", st, &byev), 0);
		CHECK_EQ(rec_keyframe_find(rs.cat, cat_stream_id(rs.camera_id, st), T0 + 2300, &bytime), 0);
		CHECK_EQ(byev.ms, bytime.ms);
		CHECK_EQ(byev.offset, bytime.offset);
		CHECK(byev.ms <= T0 + 2300);
	}
	struct cat_txn *t;
	struct catrec_buf b;
	static char json[1 << 16];
	catrec_init(&b, 1 << 16);
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(rec_event_row_get(t, "pub.1", &b), 0);
	cat_abort(t);
	CHECK(catj_render(CATJ_EVENT, b.p, b.len, json, sizeof json) > 0);
	CHECK_STR_CONTAINS(json, "\"revision\":2");
	CHECK_STR_CONTAINS(json, "\"keyframes\":[{\"stream\":\"main\",\"time_ms\":");
	CHECK_STR_CONTAINS(json, "{\"stream\":\"sub\"");
	CHECK_STR_CONTAINS(json, "\"has_jpeg\":true");
	catrec_free(&b);

	/* Before everything recorded: no link and no keyframe. */
	e = mk("early", 1, "cam", T0 - 60000, "person", NULL);
	a = job(rs.camera_id, &e, NULL, 0);
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, a);
	CHECK_EQ(a->state, REC_JOB_DONE);
	free_list(a);
	struct rec_keyframe k;
	CHECK_EQ(rec_keyframe_find_event(rs.cat, "early", 0, &k), -ENOENT);
	/* After everything recorded: not yet (its GOP may still come), with its start. */
	e = mk("late", 1, "cam", T0 + 3600000, "person", NULL);
	a = job(rs.camera_id, &e, NULL, 0);
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, a);
	CHECK_EQ(a->state, REC_JOB_DONE);
	free_list(a);
	for (uint32_t st = 0; st < 2; st++) {
		CHECK_EQ(rec_keyframe_find_event(rs.cat, "late", st, &k), -EAGAIN);
		CHECK_EQ(k.ms, T0 + 3600000);
	}

	/* keeppeekctl check: clean; a JPEG gone is a problem; repair keeps the event without
	 * its JPEG, and the check is clean again. */
	struct rec_check_opts co = {0};
	struct rec_check_result cr;
	CHECK_EQ(rec_check(rs.cat, rs.dirfd, &co, &cr), 0);
	CHECK_EQ(cr.problems, 0);
	CHECK_EQ(cr.events, 3); /* pub.1, early, late */
	char moved[CAT_PATH_MAX + 8];
	snprintf(moved, sizeof moved, "%s.away", p2);
	CHECK_EQ(renameat(rs.dirfd, p2, rs.dirfd, moved), 0);
	CHECK_EQ(rec_check(rs.cat, rs.dirfd, &co, &cr), 0);
	CHECK_EQ(cr.problems, 1);
	co.repair = 1;
	CHECK_EQ(rec_check(rs.cat, rs.dirfd, &co, &cr), 0);
	CHECK_EQ(cr.repaired, 1);
	CHECK_EQ(cr.remaining, 0);
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	struct cat_event_row er;
	CHECK_EQ(cat_event_get(t, "pub.1", &er, NULL), 0);
	CHECK_EQ(er.jpeg_len, 0);
	CHECK_EQ(er.revision, 2);
	cat_abort(t);
	CHECK_EQ(renameat(rs.dirfd, moved, rs.dirfd, p2), 0); /* an orphan now: the sweep's */
	e = mk("pub.1", 3, "cam", T0 + 2300, "person", NULL);
	a = job(rs.camera_id, &e, jpeg, len);
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, a);
	CHECK_EQ(a->state, REC_JOB_DONE);
	free_list(a);
	char p3[CAT_PATH_MAX];
	rec_event_jpeg_path("pub.1", 3, p3, sizeof p3);
	CHECK(exists(&rs, p3));

	/* Delete: one event (its JPEG goes), one recording, unknown ids listed. */
	struct cat_recording rec;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_get_recording(t, 1, &rec), 0);
	cat_abort(t);
	a = calloc(1, sizeof *a);
	a->kind = REC_JOB_DELETE;
	a->del = calloc(1, sizeof *a->del);
	a->del->recordings[0] = 1;
	a->del->recordings[1] = 999;
	a->del->recordings_count = 2;
	snprintf(a->del->events[0], sizeof a->del->events[0], "pub.1");
	snprintf(a->del->events[1], sizeof a->del->events[1], "nope");
	a->del->events_count = 2;
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, a);
	CHECK_EQ(a->state, REC_JOB_DONE);
	CHECK(a->body != NULL);
	if (a->body)
		CHECK(catj_render(CATJ_DELETE, a->body, a->body_len, json, sizeof json) > 0 &&
		      !strcmp(json, "{\"deleted_recordings\":1,\"deleted_events\":1,\"missing_recordings\":[999],"
				    "\"missing_events\":[\"nope\"],\"busy_recordings\":[]}"));
	free_list(a);
	CHECK(!exists(&rs, p3));
	CHECK(!exists(&rs, rec.path));
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_get_recording(t, 1, &rec), -ENOENT);
	struct cat_event_row row;
	CHECK_EQ(cat_event_get(t, "pub.1", &row, NULL), -ENOENT);
	cat_abort(t);
	free(jpeg);
	rec_setup_close(&rs);
}

/* Writes the span's pieces, concatenated, to path (hdr: pieces of the headers buffer). */
static void concat(struct rec_setup *rs, const struct rec_span *s, const uint8_t *hdr, const char *path)
{
	FILE *out = fopen(path, "wb");
	CHECK(out != NULL);
	for (unsigned i = 0; out && i < s->n; i++) {
		const struct rec_piece *p = &s->p[i];
		if (p->hdr) {
			fwrite(hdr + p->off, 1, p->len, out);
			continue;
		}
		int fd = openat(rs->dirfd, s->recs[p->rec].path, O_RDONLY);
		uint8_t *buf = malloc(p->len);
		CHECK(fd >= 0 && pread(fd, buf, p->len, (off_t)p->off) == (ssize_t)p->len);
		fwrite(buf, 1, p->len, out);
		free(buf);
		close(fd);
	}
	if (out)
		fclose(out);
}

static double probe_duration(const char *path)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "ffprobe -v error -show_entries format=start_time,duration -of csv=p=0 '%s'", path);
	FILE *p = popen(cmd, "r");
	double start = -1, d = -1;
	if (p && fscanf(p, "%lf,%lf", &start, &d) != 2)
		d = -1;
	CHECK(start == 0);
	if (p)
		CHECK_EQ(pclose(p), 0);
	return d;
}

static int64_t longest_gop;

static int gop(void *arg, const struct cat_fragment *f)
{
	(void)arg;
	if (f->end_ms - f->start_ms > longest_gop)
		longest_gop = f->end_ms - f->start_ms;
	return 0;
}

/* MediaOpen's spans: an export from the middle of a file is one valid MP4 whose length
 * is within one GOP of the asked one; playback crosses files with an init per file. */
static void test_media(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	rs.env.rollover_ms = 6000;
	static struct rec_stream st;
	uint64_t seq = 0;
	rec_stream_init(&st, &rs.env, "cam", 0, rs.camera_id);
	rec_feed(&st, &fx[0], 3, T0, &seq);
	rec_stream_close(&st);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	uint32_t sid = cat_stream_id(rs.camera_id, 0);
	static struct rec_span s;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_each_fragment(t, 1, gop, NULL), 0);
	CHECK(longest_gop > 0);
	CHECK_EQ(rec_media_span(t, sid, T0 + 1300, T0 + 4300, 1, &s), 0);
	CHECK(s.n >= 2);
	CHECK(s.p[0].init && !s.p[1].init);
	CHECK(s.p[1].start_ms <= T0 + 1300 && s.p[1].start_ms > T0 + 1300 - longest_gop);
	CHECK(s.p[1].start_ms > T0); /* from the middle of the file: its timeline must move */
	unsigned frags = s.n - 1;
	uint8_t *hdr;
	size_t hdr_len;
	CHECK_EQ(rec_media_export_headers(rs.dirfd, &s, &hdr, &hdr_len), 0);
	CHECK_EQ(s.n, 1 + 2 * frags);
	char path[400];
	snprintf(path, sizeof path, "%s/export.mp4", rs.dir);
	concat(&rs, &s, hdr, path);
	free(hdr);
	/* ffprobe counts the duration from time 0: it is the span's own length. */
	double d = probe_duration(path);
	CHECK(d > 0 && d * 1000 >= 3000 - 1 && d * 1000 <= 3000 + longest_gop + 1);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "ffmpeg -v error -i '%s' -f null - 2>&1 | head -c 1 | wc -c | grep -qx 0", path);
	CHECK_EQ(system(cmd), 0); /* decodes without a single error line */

	/* Playback across the rollover: an init piece for each file, fragments in order. */
	CHECK_EQ(rec_media_span(t, sid, T0, 0, 0, &s), 0);
	CHECK_EQ(s.nrecs, 2);
	unsigned inits = 0;
	int64_t last = INT64_MIN;
	for (unsigned i = 0; i < s.n; i++) {
		inits += s.p[i].init;
		if (!s.p[i].init) {
			CHECK(s.p[i].start_ms >= last);
			last = s.p[i].end_ms;
		}
	}
	CHECK_EQ(inits, 2);
	CHECK_EQ(last, T0 + 12000);
	CHECK_EQ(rec_media_span(t, sid, T0 - 60000, T0 - 30000, 1, &s), -ENOENT);
	CHECK_EQ(rec_media_span(t, sid, T0 + 60000, 0, 0, &s), -ENOENT);
	cat_abort(t);
	rec_setup_close(&rs);
}

/* Retention: events older than their camera's days go, with their JPEG; newer stay. */
static void test_event_retention(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	struct cat_txn *t;
	uint32_t id;
	CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
	CHECK_EQ(cat_camera(t, "cam", 1, &id), 0); /* one day */
	CHECK_EQ(cat_commit(t), 0);
	size_t len;
	uint8_t *jpeg = make_jpeg(32, 32, &len);
	int64_t now = T0 + 10 * 86400000ll;
	static kp_EventRecord e;
	e = mk("old", 1, "cam", now - 2 * 86400000ll, "person", NULL);
	struct rec_job *a = job(id, &e, jpeg, len);
	e = mk("new", 1, "cam", now - 3600000, "person", NULL);
	a->next = job(id, &e, jpeg, len);
	rec_jobs_run(rs.cat, rs.dirfd, rs.log, a);
	CHECK_EQ(a->state, REC_JOB_DONE);
	CHECK_EQ(a->next->state, REC_JOB_DONE);
	free_list(a);
	char old_path[CAT_PATH_MAX];
	rec_event_jpeg_path("old", 1, old_path, sizeof old_path);
	CHECK(exists(&rs, old_path));
	/* Start-up sweep: a JPEG no row names (a crash before its commit) and a stale
	 * thumbnail go; the stored revision's JPEG stays. */
	char ghost[CAT_PATH_MAX], stale[CAT_PATH_MAX], keep[CAT_PATH_MAX];
	rec_event_jpeg_path("ghost", 1, ghost, sizeof ghost);
	rec_event_thumb_path("new", 7, stale, sizeof stale);
	rec_event_jpeg_path("new", 1, keep, sizeof keep);
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "%.9s", ghost);
	mkdirat(rs.dirfd, dir, 0750);
	snprintf(dir, sizeof dir, "%.9s", stale);
	mkdirat(rs.dirfd, dir, 0750);
	close(openat(rs.dirfd, ghost, O_WRONLY | O_CREAT, 0600));
	close(openat(rs.dirfd, stale, O_WRONLY | O_CREAT, 0600));
	struct rec_sweep_result sw;
	CHECK_EQ(rec_events_sweep(rs.cat, rs.dirfd, &sw), 0);
	CHECK_EQ(sw.files_removed, 2);
	CHECK(!exists(&rs, ghost) && !exists(&rs, stale) && exists(&rs, keep) && exists(&rs, old_path));

	struct rec_retention_policy p = {.now_ms = now, .events = 1};
	struct rec_retention_result res;
	CHECK_EQ(rec_retention_run(rs.cat, rs.dirfd, rs.log, &p, &res), 0);
	CHECK_EQ(res.events_deleted, 1);
	CHECK(!exists(&rs, old_path));
	struct cat_event_row row;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_event_get(t, "old", &row, NULL), -ENOENT);
	CHECK_EQ(cat_event_get(t, "new", &row, NULL), 0);
	cat_abort(t);
	free(jpeg);
	rec_setup_close(&rs);
}

/* record = events: nothing is written until an event arms the stream; then the GOP in
 * memory (the keyframe at or before the event) and every GOP starting before the armed
 * end are written into one file; afterwards nothing again. */
static void test_record_events(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	static struct rec_stream st;
	rec_stream_init(&st, &rs.env, "cam", 0, rs.camera_id);
	st.events_only = 1;
	const struct fixture *f = &fx[0];
	int64_t event_ms = T0 + 5000, until = T0 + 7000, key_before = -1, key_after = -1;
	for (unsigned k = 0; k < 3 * f->n; k++) {
		int64_t at = T0 + 40 * (int64_t)k;
		if (f->au[k % f->n].key && at <= event_ms)
			key_before = at;
		if (f->au[k % f->n].key && at > until && key_after < 0)
			key_after = at;
		if (at == event_ms)
			rec_stream_arm(&st, until);
		rec_stream_frame(&st, f->codec, f->au[k % f->n].key, 1000000 + (int64_t)k * 3600,
				 1000000 + (int64_t)k * 3600, at * 1000, f->width, f->height, k + 1,
				 f->au[k % f->n].data, f->au[k % f->n].len);
	}
	rec_stream_close(&st);
	CHECK(st.gops_skipped > 0);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	CHECK(key_before > T0 && key_after > until);
	static struct rec_cov cov;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_coverage(t, cat_stream_id(rs.camera_id, 0), &cov), 0);
	uint64_t newest;
	CHECK_EQ(cat_stream_last_recording(t, cat_stream_id(rs.camera_id, 0), &newest), 0);
	cat_abort(t);
	CHECK_EQ(cov.n, 1);
	CHECK_EQ(cov.r[0].start_ms, key_before);
	CHECK_EQ(cov.r[0].end_ms, key_after);
	CHECK_EQ(newest, 1); /* one file, created only when the first GOP was kept */
	rec_setup_close(&rs);
}

/* A version 1 catalog (camera alarms keyed by number) opens as version 2 with its old
 * event rows gone and everything else kept. */
static void test_migration(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	cat_close(rs.cat);
	char dir[300];
	snprintf(dir, sizeof dir, "%s/catalog", rs.dir);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta, events;
	CHECK_EQ(mdb_env_create(&env), 0);
	CHECK_EQ(mdb_env_set_maxdbs(env, 16), 0);
	CHECK_EQ(mdb_env_open(env, dir, 0, 0600), 0);
	CHECK_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CHECK_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
	CHECK_EQ(mdb_dbi_open(txn, "events", 0, &events), 0);
	uint64_t one = 1;
	uint8_t old_key[8] = {0, 0, 0, 0, 0, 0, 0, 1}, old_val[168] = {0};
	MDB_val k = {7, "version"}, v = {sizeof one, &one}, ek = {8, old_key}, ev = {sizeof old_val, old_val};
	CHECK_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
	CHECK_EQ(mdb_put(txn, events, &ek, &ev, 0), 0);
	CHECK_EQ(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	struct cat_open_report rep;
	CHECK_EQ(cat_open_full(dir, 1ull << 30, &rep, &rs.cat), 0);
	CHECK_EQ(rep.found_version, 1);
	CHECK_EQ(rep.version, CAT_SCHEMA_VERSION);
	CHECK_EQ(rep.migrated, 1);
	CHECK_EQ(rep.created, 0);
	CHECK_EQ(rep.dropped_events, 1); /* what recorderd logs */
	CHECK_EQ(rep.dropped_event_times, 0);
	struct cat_txn *t;
	uint64_t n = 99;
	uint32_t id;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_event_count(t, &n), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(cat_camera_lookup(t, "cam", &id, NULL), 0);
	CHECK_EQ(id, rs.camera_id);
	cat_abort(t);
	CHECK_EQ(rec_commit_new(rs.cat, rs.dirfd, &rs.env.commit), 0);
	rec_setup_close(&rs);
}

int main(void)
{
	if (fixture_load("main.h264", &fx[0]) < 0 || fixture_load("sub.h265", &fx[1]) < 0)
		return 1;
	RUN(test_keys);
	RUN(test_terms);
	RUN(test_revisions);
	RUN(test_search);
	RUN(test_checks);
	RUN(test_thumbnail);
	RUN(test_jobs_and_links);
	RUN(test_jobs_batch);
	RUN(test_media);
	RUN(test_event_retention);
	RUN(test_record_events);
	RUN(test_migration);
	fixture_free(&fx[0]);
	fixture_free(&fx[1]);
	return TEST_EXIT();
}
