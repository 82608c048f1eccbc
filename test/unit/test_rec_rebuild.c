/* Rebuilding the catalog from the files (rebuild.c) and the event records it needs
 * (event_record.c, written by jobs.c). Two cameras record the fixtures through the real
 * stream, committer and catalog (timestamps that are not whole milliseconds, a jump in
 * wall-clock time, short rollovers: many files, anchors with remainders); events are
 * published through the commit jobs (JPEG, no JPEG, a replaced revision, a deleted
 * event, a camera alarm). The catalog is then deleted, or truncated, and rebuilt: every
 * recording, fragment, keyframe, coverage summary, byte total and event (with its
 * revision, record, JPEG length and keyframes) is what it was, field by field (only the
 * ids differ); start-up recovery and the event sweep then remove nothing, and check
 * finds no problem. Files the rebuild cannot use are moved under unindexed/, a partial
 * tail is left in its file, a JPEG gone means an event without JPEG. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "catalog_keys.h"
#include "check.h"
#include "event_log.h"
#include "event_record.h"
#include "event_sweep.h"
#include "jbuf.h"
#include "jobs.h"
#include "keyframe.h"
#include "rebuild.h"
#include "recovery.h"
#include "test.h"
#include "test_rec_fixture.h"

#define T0 1764460800123ll

static struct fixture fx[2];
static void (*const unused_feed)(struct rec_stream *, const struct fixture *, unsigned, int64_t, uint64_t *)
    __attribute__((unused)) = rec_feed; /* the shared helper; this test feeds its own timestamps */

/* Frames 40 ms apart in wall time, 3597 ticks apart in the camera's clock (not a whole
 * millisecond: the anchors get remainders); jump_at: from that frame on, wall time is
 * 9 s later (a camera clock step: a re-anchored run at the next file). */
static void feed(struct rec_stream *s, const struct fixture *f, unsigned loops, uint64_t *seq, uint64_t jump_at)
{
	for (unsigned l = 0; l < loops; l++)
		for (unsigned i = 0; i < f->n; i++) {
			int64_t frame = (int64_t)*seq;
			int64_t wall_ms = T0 + frame * 40 + ((uint64_t)frame >= jump_at ? 9000 : 0);
			rec_stream_frame(s, f->codec, f->au[i].key, 777 + frame * 3597, 777 + frame * 3597,
					 wall_ms * 1000 + 17, f->width, f->height, ++*seq, f->au[i].data, f->au[i].len);
		}
}

static uint8_t *make_jpeg(size_t *ret_len)
{
	int w = 64, h = 48;
	uint8_t rgb[64 * 48 * 3];
	for (int i = 0; i < w * h * 3; i++)
		rgb[i] = (uint8_t)(i * 5);
	tjhandle c = tjInitCompress();
	unsigned char *out = NULL;
	unsigned long len = 0;
	CHECK_EQ(tjCompress2(c, rgb, w, 0, h, TJPF_RGB, &out, &len, TJSAMP_420, 85, 0), 0);
	tjDestroy(c);
	uint8_t *copy = malloc(len);
	memcpy(copy, out, len);
	tjFree(out);
	*ret_len = len;
	return copy;
}

static kp_EventRecord mk(const char *id, uint32_t rev, const char *camera, int64_t start, const char *label)
{
	kp_EventRecord e = kp_EventRecord_init_zero;
	snprintf(e.event_id, sizeof e.event_id, "%s", id);
	e.revision = rev;
	snprintf(e.camera, sizeof e.camera, "%s", camera);
	e.start_ms = start;
	e.end_ms = start + 1500;
	snprintf(e.labels[0].name, sizeof e.labels[0].name, "%s", label);
	e.labels[0].score = 0.75f;
	e.labels_count = 1;
	snprintf(e.attributes[0].key, sizeof e.attributes[0].key, "plate");
	snprintf(e.attributes[0].value, sizeof e.attributes[0].value, "KP-%u %s", rev, id);
	e.attributes_count = 1;
	e.boxes_count = 1;
	snprintf(e.boxes[0].label, sizeof e.boxes[0].label, "%s", label);
	e.boxes[0].x = 0.25f;
	e.boxes[0].w = 0.5f;
	snprintf(e.source, sizeof e.source, "analysis");
	snprintf(e.principal, sizeof e.principal, "token:detector");
	return e;
}

static void publish(struct rec_setup *rs, uint32_t cam, kp_EventRecord e, const uint8_t *jpeg, size_t len)
{
	struct rec_job *j = calloc(1, sizeof *j);
	j->kind = REC_JOB_EVENT;
	j->camera_id = cam;
	j->ev = e;
	if (jpeg) {
		j->jpeg = malloc(len);
		memcpy(j->jpeg, jpeg, len);
		j->jpeg_len = len;
		j->ev.jpeg_width = 64;
		j->ev.jpeg_height = 48;
	}
	rec_jobs_run(rs->cat, rs->dirfd, rs->log, j);
	CHECK_EQ(j->state, REC_JOB_DONE);
	rec_job_free(j);
}

static void delete_event(struct rec_setup *rs, const char *id)
{
	struct rec_job *j = calloc(1, sizeof *j);
	j->kind = REC_JOB_DELETE;
	j->del = calloc(1, sizeof *j->del);
	snprintf(j->del->events[0], sizeof j->del->events[0], "%s", id);
	j->del->events_count = 1;
	rec_jobs_run(rs->cat, rs->dirfd, rs->log, j);
	CHECK_EQ(j->state, REC_JOB_DONE);
	rec_job_free(j);
}

struct find_logged {
	const char *id;
	uint32_t revision;
	kp_EventRecord *ev;
	int found;
};

static int find_one(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev)
{
	struct find_logged *f = arg;
	(void)seq;
	if (!strcmp(ev->event_id, f->id) && ev->revision == f->revision) {
		f->found = item->kind == REC_EVLOG_RECORD;
		if (f->found)
			*f->ev = *ev;
	}
	return 0;
}

/* 1 when the event log's last item for (id, revision) is its record (ev gets it), 0
 * when a tombstone ended it or there is none. */
static int logged(int dirfd, const char *id, uint32_t revision, kp_EventRecord *ev)
{
	struct find_logged f = {.id = id, .revision = revision, .ev = ev};
	struct rec_evlog_scan sc;
	CHECK_EQ(rec_evlog_each(dirfd, find_one, &f, &sc), 0);
	return f.found;
}

static int exists(int dirfd, const char *path)
{
	struct stat st;
	return fstatat(dirfd, path, &st, 0) == 0;
}

/* ---- a dump of everything the catalog says, without ids ---- */

struct dump {
	struct jbuf *b;
	struct cat_txn *t;
	char cams[8][CAT_PATH_MAX];
	uint32_t cam_ids[8];
	unsigned ncams;
	uint32_t streams[16];
	unsigned nstreams;
};

static const char *cam_name(struct dump *d, uint32_t camera_id)
{
	for (unsigned i = 0; i < d->ncams; i++)
		if (d->cam_ids[i] == camera_id)
			return d->cams[i];
	return "?";
}

static int on_camera(void *arg, const char *name, uint32_t id, uint32_t days)
{
	struct dump *d = arg;
	(void)days;
	snprintf(d->cams[d->ncams], sizeof d->cams[0], "%s", name);
	d->cam_ids[d->ncams++] = id;
	return 0;
}

static int on_stream(void *arg, uint32_t stream_id)
{
	struct dump *d = arg;
	d->streams[d->nstreams++] = stream_id;
	return 0;
}

static int on_fragment(void *arg, const struct cat_fragment *f)
{
	struct dump *d = arg;
	jb_printf(d->b, "  fragment %u samples %u %lld-%lld tfdt %llu dur %llu at %llu+%llu key %llu+%u\n", f->seq,
		  f->samples, (long long)f->start_ms, (long long)f->end_ms, (unsigned long long)f->base_time,
		  (unsigned long long)f->duration, (unsigned long long)f->offset, (unsigned long long)f->length,
		  (unsigned long long)f->keyframe_offset, f->keyframe_length);
	return 0;
}

static int on_recording(void *arg, const struct cat_recording *r)
{
	struct dump *d = arg;
	jb_printf(d->b, "recording %s/%u %s codec %u %ux%u open %u %lld-%lld bytes %llu fragments %u\n",
		  cam_name(d, r->stream_id >> 8), r->stream_id & 0xff, r->path, r->codec, r->width, r->height, r->open,
		  (long long)r->start_ms, (long long)r->end_ms, (unsigned long long)r->bytes, r->fragments);
	return cat_each_fragment(d->t, r->id, on_fragment, d);
}

static int on_keyframe(void *arg, int64_t ms, const struct cat_keyframe *k)
{
	struct dump *d = arg;
	struct cat_recording r;
	CHECK_EQ(cat_get_recording(d->t, k->recording_id, &r), 0);
	jb_printf(d->b, "  keyframe %lld %s at %llu+%u seq %u\n", (long long)ms, r.path, (unsigned long long)k->offset,
		  k->length, k->seq);
	return 0;
}

static int on_bucket(void *arg, int64_t bucket_ms, int64_t covered_ms)
{
	struct dump *d = arg;
	jb_printf(d->b, "  bucket %lld %lld\n", (long long)bucket_ms, (long long)covered_ms);
	return 0;
}

static int on_event(void *arg, int64_t start_ms, uint64_t seq, const char *id)
{
	struct dump *d = arg;
	(void)seq;
	static kp_EventRecord ev;
	struct cat_event_row row;
	CHECK_EQ(cat_event_get(d->t, id, &row, &ev), 0);
	static uint8_t pb[REC_EVENT_RECORD_MAX];
	size_t len = 0;
	CHECK_EQ(rec_event_record_encode(&ev, pb, sizeof pb, &len), 0);
	jb_printf(d->b, "event %s start %lld rev %u camera %s %lld-%lld committed %lld jpeg %u pb", id,
		  (long long)start_ms, row.revision, cam_name(d, row.camera_id), (long long)row.start_ms,
		  (long long)row.end_ms, (long long)row.committed_ms, row.jpeg_len);
	for (size_t i = 0; i < len; i++)
		jb_printf(d->b, "%02x", pb[i]);
	jb_printf(d->b, "\n");
	return 0;
}

static char *dump(struct cat *cat)
{
	static struct jbuf b;
	jb_init(&b, 64 << 20);
	struct dump d = {.b = &b};
	CHECK_EQ(cat_begin(cat, 0, &d.t), 0);
	CHECK_EQ(cat_each_camera(d.t, on_camera, &d), 0);
	CHECK_EQ(cat_each_stream(d.t, on_stream, &d), 0);
	/* Streams by camera name: ids are given anew by a rebuild. */
	for (unsigned i = 1; i < d.nstreams; i++)
		for (unsigned j = i; j > 0; j--) {
			uint32_t a = d.streams[j - 1], c = d.streams[j];
			int cmp = strcmp(cam_name(&d, a >> 8), cam_name(&d, c >> 8));
			if (cmp < 0 || (cmp == 0 && (a & 0xff) < (c & 0xff)))
				break;
			d.streams[j - 1] = c;
			d.streams[j] = a;
		}
	uint64_t total = 0;
	CHECK_EQ(cat_total_bytes(d.t, &total), 0);
	jb_printf(&b, "total %llu\n", (unsigned long long)total);
	for (unsigned i = 0; i < d.nstreams; i++) {
		uint32_t sid = d.streams[i];
		jb_printf(&b, "stream %s/%u\n", cam_name(&d, sid >> 8), sid & 0xff);
		CHECK_EQ(cat_each_stream_recording(d.t, sid, INT64_MIN, INT64_MAX, on_recording, &d), 0);
		CHECK_EQ(cat_each_keyframe(d.t, sid, on_keyframe, &d), 0);
		static struct rec_cov cov;
		CHECK_EQ(cat_coverage(d.t, sid, &cov), 0);
		jb_printf(&b, "  coverage from %lld:", (long long)cov.exact_from_ms);
		for (uint32_t k = 0; k < cov.n; k++)
			jb_printf(&b, " [%lld,%lld)", (long long)cov.r[k].start_ms, (long long)cov.r[k].end_ms);
		jb_printf(&b, "\n");
		CHECK_EQ(cat_each_coverage_bucket(d.t, sid, INT64_MIN, INT64_MAX, on_bucket, &d), 0);
	}
	CHECK_EQ(cat_each_event(d.t, on_event, &d), 0);
	cat_abort(d.t);
	/* Each event's keyframe in each stream, through its link (or by time). */
	static const char *const ids[] = {"gate.1", "gate.2", "cam.motion.1", "door.1"};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		for (uint32_t s = 0; s < 2; s++) {
			struct rec_keyframe k;
			int r = rec_keyframe_find_event(cat, ids[i], s, &k);
			jb_printf(&b, "event %s stream %u keyframe %d %lld %s %llu+%u\n", ids[i], s, r,
				  r ? 0ll : (long long)k.ms, r ? "" : k.path, r ? 0ull : (unsigned long long)k.offset,
				  r ? 0 : k.length);
		}
	CHECK(!b.failed);
	return b.p;
}

static void diff(const char *a, const char *b)
{
	if (!strcmp(a, b))
		return;
	size_t i = 0, line = 1, at = 0;
	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '\n') {
			line++;
			at = i + 1;
		}
	fprintf(stderr, "dumps differ at line %zu:\nbefore: %.300s\nafter:  %.300s\n", line, a + at, b + at);
	CHECK(0);
}

static char dir[256];
static char cat_dir[300];

static struct cat *reopen(void)
{
	struct cat *cat;
	CHECK_EQ(cat_open(cat_dir, 1ull << 30, &cat), 0);
	return cat;
}

static void rebuild(int dirfd, const char *tag, struct rec_rebuild_result *res)
{
	char why[200] = "";
	int r = rec_rebuild(dirfd, dir, 1ull << 30, tag, res, why, sizeof why);
	if (r < 0)
		fprintf(stderr, "rebuild: %s\n", why);
	CHECK_EQ(r, 0);
}

static void test_rebuild(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "gate"), 0);
	snprintf(dir, sizeof dir, "%s", rs.dir);
	snprintf(cat_dir, sizeof cat_dir, "%s/catalog", rs.dir);
	uint32_t door;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
	CHECK_EQ(cat_camera(t, "door", 3, &door), 0);
	CHECK_EQ(cat_commit(t), 0);
	rs.env.rollover_ms = 3000; /* several files per stream */
	static struct rec_stream s[3];
	rec_stream_init(&s[0], &rs.env, "gate", 0, rs.camera_id);
	rec_stream_init(&s[1], &rs.env, "gate", 1, rs.camera_id);
	rec_stream_init(&s[2], &rs.env, "door", 0, door);
	for (int i = 0; i < 3; i++) {
		uint64_t seq = 0;
		feed(&s[i], &fx[i == 1], 2, &seq, i == 0 ? 120 : UINT64_MAX);
		rec_stream_close(&s[i]);
	}
	rec_commit_free(rs.env.commit); /* everything indexed */
	rs.env.commit = NULL;

	/* Events: a replaced revision, no JPEG, a deleted one, a camera alarm. */
	size_t len;
	uint8_t *jpeg = make_jpeg(&len);
	publish(&rs, rs.camera_id, mk("gate.1", 1, "gate", T0 + 2000, "person"), jpeg, len);
	publish(&rs, rs.camera_id, mk("gate.1", 4, "gate", T0 + 2100, "car"), jpeg, len);
	publish(&rs, rs.camera_id, mk("gate.2", 1, "gate", T0 + 5000, "dog"), NULL, 0);
	publish(&rs, door, mk("door.1", 1, "door", T0 + 8000, "person"), jpeg, len);
	publish(&rs, door, mk("door.gone", 1, "door", T0 + 9000, "cat"), jpeg, len);
	kp_EventRecord alarm = mk("cam.motion.1", 1, "gate", T0 + 6000, "motion");
	snprintf(alarm.source, sizeof alarm.source, "camera");
	publish(&rs, rs.camera_id, alarm, NULL, 0);
	delete_event(&rs, "door.gone");
	/* Their records are in the event log, no file per event: a tombstone ended gate.1's
	 * first revision and door.gone. */
	char p[CAT_PATH_MAX];
	rec_event_record_path("gate.1", 4, p, sizeof p);
	CHECK(!exists(rs.dirfd, p));
	static kp_EventRecord back;
	CHECK_EQ(logged(rs.dirfd, "gate.1", 1, &back), 0);
	CHECK_EQ(logged(rs.dirfd, "door.gone", 1, &back), 0);
	CHECK_EQ(logged(rs.dirfd, "gate.2", 1, &back), 1); /* no JPEG, still a record */
	CHECK_EQ(logged(rs.dirfd, "cam.motion.1", 1, &back), 1);
	CHECK_EQ(logged(rs.dirfd, "gate.1", 4, &back), 1);
	CHECK_EQ(back.revision, 4);
	CHECK(back.committed_ms > 0 && back.has_jpeg && !strcmp(back.labels[0].name, "car"));

	char *before = dump(rs.cat);
	CHECK(strstr(before, "recording gate/0") && strstr(before, "recording gate/1") &&
	      strstr(before, "recording door/0"));
	CHECK(strstr(before, "event gate.1 start") && strstr(before, "event cam.motion.1 start"));
	const char *gate0 = strstr(before, "stream gate/0");
	CHECK(gate0 && strstr(gate0, ") [")); /* the clock step: two runs, two exact ranges */
	cat_close(rs.cat);
	rs.cat = NULL;

	/* What a crash and stray writers leave: a partial fragment after the last complete
	 * one, a file that is not an MP4, a name that is not a recording, a JPEG without a
	 * record, a damaged record. */
	char last[CAT_PATH_MAX];
	const char *rec0 = strstr(before, "recording door/0 ");
	CHECK(rec0 != NULL);
	const char *lastrec = rec0;
	for (const char *q = rec0; (q = strstr(q + 1, "recording door/0 ")) != NULL;)
		lastrec = q;
	sscanf(lastrec, "recording door/0 %159s", last);
	struct stat st0;
	CHECK_EQ(fstatat(rs.dirfd, last, &st0, 0), 0);
	int fd = openat(rs.dirfd, last, O_WRONLY | O_APPEND);
	CHECK(write(fd, "\0\0\0\x20prft", 8) == 8);
	close(fd);
	fd = openat(rs.dirfd, "recordings/gate/main/1000.mp4", O_WRONLY | O_CREAT | O_EXCL, 0640);
	CHECK(write(fd, "not an mp4 file at all", 22) == 22);
	close(fd);
	fd = openat(rs.dirfd, "recordings/gate/main/notes.txt", O_WRONLY | O_CREAT | O_EXCL, 0640);
	close(fd);
	char orphan[CAT_PATH_MAX];
	rec_event_jpeg_path("stray", 1, orphan, sizeof orphan);
	char hh[16];
	snprintf(hh, sizeof hh, "%.9s", orphan);
	mkdirat(rs.dirfd, hh, 0750);
	fd = openat(rs.dirfd, orphan, O_WRONLY | O_CREAT | O_EXCL, 0640);
	CHECK(write(fd, jpeg, len) == (ssize_t)len);
	close(fd);
	char broken[CAT_PATH_MAX];
	rec_event_record_path("broken", 2, broken, sizeof broken);
	snprintf(hh, sizeof hh, "%.9s", broken);
	mkdirat(rs.dirfd, hh, 0750);
	fd = openat(rs.dirfd, broken, O_WRONLY | O_CREAT | O_EXCL, 0640);
	CHECK(write(fd, "KPEV\1\0\0\0\4\0\0\0\0\0\0\0abcd", 20) == 20);
	close(fd);

	/* data.mdb deleted. */
	CHECK_EQ(unlinkat(rs.dirfd, "catalog/data.mdb", 0), 0);
	char why[200];
	CHECK_EQ(rec_catalog_assess(rs.dirfd, why, sizeof why), -ENOENT);
	CHECK_STR_CONTAINS(why, "catalog/data.mdb is missing");
	struct rec_rebuild_result res;
	rebuild(rs.dirfd, "damaged", &res);
	CHECK_EQ(rec_catalog_assess(rs.dirfd, why, sizeof why), 0);
	CHECK_EQ(res.moved_to[0], '\0');
	CHECK_EQ(res.cameras, 2);
	CHECK_EQ(res.files, res.recordings + 1);
	CHECK_EQ(res.files_set_aside, 1);
	CHECK(res.recordings > 6);
	CHECK_EQ(res.records, 6); /* every revision logged */
	CHECK_EQ(res.tombstones, 2);
	CHECK_EQ(res.log_segments, 1);
	CHECK_EQ(res.log_bytes_ignored, 0);
	CHECK_EQ(res.events, 4);
	CHECK_EQ(res.events_jpeg_gone, 0);
	CHECK_EQ(res.event_files_set_aside, 2);
	CHECK(exists(rs.dirfd, "unindexed/recordings/gate/main/1000.mp4"));
	CHECK(!exists(rs.dirfd, "recordings/gate/main/1000.mp4"));
	CHECK(exists(rs.dirfd, "recordings/gate/main/notes.txt")); /* not a recording's name: left alone */
	char aside[CAT_PATH_MAX + 16];
	snprintf(aside, sizeof aside, "unindexed/%s", orphan);
	CHECK(exists(rs.dirfd, aside));
	snprintf(aside, sizeof aside, "unindexed/%s", broken);
	CHECK(exists(rs.dirfd, aside));
	struct stat st1;
	CHECK_EQ(fstatat(rs.dirfd, last, &st1, 0), 0);
	CHECK_EQ(st1.st_size, st0.st_size + 8); /* only read */
	CHECK(!exists(rs.dirfd, "catalog.rebuild"));

	rs.cat = reopen();
	char *after = dump(rs.cat);
	diff(before, after);
	free(after);

	/* What recorderd does next at its start: nothing is removed, nothing is wrong. */
	struct rec_recovery_result rr;
	CHECK_EQ(rec_recover(rs.cat, rs.dirfd, &rr), 0);
	CHECK_EQ(rr.files_removed, 0);
	CHECK_EQ(rr.rows_removed, 0);
	CHECK_EQ(rr.fragments_indexed, 0);
	struct rec_sweep_result sw;
	CHECK_EQ(rec_events_sweep(rs.cat, rs.dirfd, &sw), 0);
	CHECK_EQ(sw.files_removed, 0);
	struct rec_check_opts co = {0};
	struct rec_check_result cr;
	CHECK_EQ(rec_check(rs.cat, rs.dirfd, &co, &cr), 0);
	CHECK_EQ(cr.problems, 0);
	CHECK_EQ(cr.events, 4);
	after = dump(rs.cat);
	diff(before, after);
	free(after);

	/* The records gone (the event log removed): check says so, repair writes each
	 * again from the catalog, as a record file of the older layout, which rebuilds read
	 * as before. */
	char seg[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(1, seg, sizeof seg);
	CHECK_EQ(unlinkat(rs.dirfd, seg, 0), 0);
	CHECK_EQ(rec_check(rs.cat, rs.dirfd, &co, &cr), 0);
	CHECK_EQ(cr.problems, 4);
	co.repair = 1;
	CHECK_EQ(rec_check(rs.cat, rs.dirfd, &co, &cr), 0);
	CHECK_EQ(cr.repaired, 4);
	CHECK_EQ(cr.remaining, 0);
	co.repair = 0;
	rec_event_record_path("gate.2", 1, p, sizeof p);
	CHECK_EQ(rec_event_record_read(rs.dirfd, p, &back), 0);
	CHECK(!strcmp(back.event_id, "gate.2") && back.revision == 1 && back.committed_ms > 0);
	cat_close(rs.cat);

	/* data.mdb truncated, and one event's JPEG gone: the damaged file is kept aside, the
	 * event comes back without its JPEG. */
	struct stat st;
	CHECK_EQ(fstatat(rs.dirfd, "catalog/data.mdb", &st, 0), 0);
	char data_mdb[320];
	snprintf(data_mdb, sizeof data_mdb, "%s/data.mdb", cat_dir);
	CHECK_EQ(truncate(data_mdb, st.st_size / 2), 0);
	CHECK_EQ(rec_catalog_assess(rs.dirfd, why, sizeof why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "truncated");
	rec_event_jpeg_path("door.1", 1, p, sizeof p);
	CHECK_EQ(unlinkat(rs.dirfd, p, 0), 0);
	rebuild(rs.dirfd, "damaged", &res);
	CHECK(!strncmp(res.moved_to, "data.mdb.damaged-", 17));
	snprintf(aside, sizeof aside, "catalog/%s", res.moved_to);
	CHECK_EQ(fstatat(rs.dirfd, aside, &st1, 0), 0);
	CHECK_EQ(st1.st_size, st.st_size / 2);
	CHECK_EQ(res.events, 4);
	CHECK_EQ(res.events_jpeg_gone, 1);
	CHECK_EQ(res.files_set_aside, 0);
	CHECK_EQ(res.event_files_set_aside, 0);
	rs.cat = reopen();
	struct cat_event_row row;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_event_get(t, "door.1", &row, &back), 0);
	CHECK_EQ(row.jpeg_len, 0);
	CHECK(!back.has_jpeg);
	CHECK_EQ(cat_event_get(t, "gate.1", &row, &back), 0);
	CHECK_EQ(row.jpeg_len, len);
	CHECK_EQ(row.revision, 4);
	uint64_t flag = 0;
	CHECK_EQ(cat_meta_get(t, "event_records", &flag), 0);
	CHECK_EQ(flag, 1);
	cat_abort(t);
	after = dump(rs.cat);
	const char *recs_before = strstr(before, "event "), *recs_after = strstr(after, "event ");
	CHECK(recs_before && recs_after && !strncmp(before, after, (size_t)(recs_before - before)) &&
	      recs_after - after == recs_before - before); /* recordings, keyframes, coverage: the same */
	free(after);
	free(before);
	free(jpeg);
	rec_setup_close(&rs);
}

/* The records of events stored before records existed are written once, at start. */
static void test_backfill(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "gate"), 0);
	kp_EventRecord e = mk("old.1", 2, "gate", T0, "person");
	e.committed_ms = T0 + 5;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
	CHECK_EQ(cat_event_put(t, rs.camera_id, &e, 0, NULL, 0, NULL), 0);
	CHECK_EQ(cat_commit(t), 0);
	char p[CAT_PATH_MAX];
	rec_event_record_path("old.1", 2, p, sizeof p);
	CHECK(!exists(rs.dirfd, p));
	struct rec_backfill *b;
	CHECK_EQ(rec_event_records_backfill_start(rs.cat, rs.dirfd, &b), 0);
	uint64_t flag = 0;
	for (int i = 0; i < 500 && !flag; i++) {
		usleep(10000);
		CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
		CHECK_EQ(cat_meta_get(t, "event_records", &flag), 0);
		cat_abort(t);
	}
	rec_event_records_backfill_stop(b);
	CHECK_EQ(flag, 1);
	static kp_EventRecord back;
	CHECK_EQ(rec_event_record_read(rs.dirfd, p, &back), 0);
	CHECK(!strcmp(back.event_id, "old.1") && back.revision == 2 && back.committed_ms == T0 + 5);
	rec_setup_close(&rs);
}

static void test_record_format(void)
{
	kp_EventRecord e = mk("x", 1, "gate", T0, "person");
	static uint8_t buf[REC_EVENT_RECORD_MAX];
	size_t len;
	CHECK_EQ(rec_event_record_encode(&e, buf, sizeof buf, &len), 0);
	static kp_EventRecord back;
	CHECK_EQ(rec_event_record_decode(buf, len, &back), 0);
	CHECK(!strcmp(back.event_id, "x") && back.revision == 1);
	CHECK_EQ(rec_event_record_decode(buf, len - 1, &back), -EBADMSG); /* torn */
	for (size_t i = 0; i < len; i++) {                                /* any byte changed */
		buf[i] ^= 0x40;
		CHECK_EQ(rec_event_record_decode(buf, len, &back), -EBADMSG);
		buf[i] ^= 0x40;
	}
}

int main(void)
{
	if (fixture_load("main.h264", &fx[0]) < 0 || fixture_load("sub.h265", &fx[1]) < 0)
		return 1;
	RUN(test_record_format);
	RUN(test_rebuild);
	RUN(test_backfill);
	fixture_free(&fx[0]);
	fixture_free(&fx[1]);
	return TEST_EXIT();
}
