/* recorderd's event record log (recorderd/event_log*.c): the item format against torn
 * tails and changed bytes, the writer's segments, tombstones, compaction against a real
 * catalog, and a rebuild from a mix of the log and .ev files of the older layout. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "event_log.h"
#include "event_record.h"
#include "rebuild.h"
#include "test.h"

#define T0 1700000000000ll

static kp_EventRecord mk(const char *id, uint32_t rev, int64_t committed)
{
	kp_EventRecord e = kp_EventRecord_init_zero;
	snprintf(e.event_id, sizeof e.event_id, "%s", id);
	e.revision = rev;
	snprintf(e.camera, sizeof e.camera, "gate");
	e.start_ms = T0 + committed % 100000;
	e.end_ms = e.start_ms + 1000;
	e.committed_ms = committed;
	snprintf(e.labels[0].name, sizeof e.labels[0].name, "person");
	e.labels[0].score = 0.5f;
	e.labels_count = 1;
	snprintf(e.source, sizeof e.source, "analysis");
	return e;
}

static char dir[64];

static int open_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/kp-evlog-test-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void remove_dir(int dirfd)
{
	close(dirfd);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static int exists(int dirfd, const char *path)
{
	return faccessat(dirfd, path, F_OK, 0) == 0;
}

/* A segment of three items; every shorter length parses the whole items before the
 * cut and calls the cut one bad, and no changed byte is ever taken for an item. */
static void test_format(void)
{
	static uint8_t seg[REC_EVLOG_HEADER + 3 * REC_EVLOG_ITEM_MAX];
	rec_evlog_header(0x1234567890ull, seg);
	uint64_t seq = 0;
	CHECK_EQ(rec_evlog_check_header(seg, REC_EVLOG_HEADER, &seq), 0);
	CHECK_EQ(seq, 0x1234567890ull);
	size_t len = REC_EVLOG_HEADER, ends[3];
	kp_EventRecord a = mk("gate.1", 1, T0 + 1), b = mk("gate.2", 3, T0 + 2);
	size_t n;
	CHECK_EQ(rec_evlog_encode(REC_EVLOG_RECORD, &a, seg + len, sizeof seg - len, &n), 0);
	ends[0] = len += n;
	CHECK_EQ(rec_evlog_encode(REC_EVLOG_TOMBSTONE, &a, seg + len, sizeof seg - len, &n), 0);
	CHECK(n < 40); /* a tombstone holds the id, revision and commit time only */
	ends[1] = len += n;
	CHECK_EQ(rec_evlog_encode(REC_EVLOG_RECORD, &b, seg + len, sizeof seg - len, &n), 0);
	ends[2] = len += n;
	CHECK_EQ(rec_evlog_encode(REC_EVLOG_RECORD, &b, seg, 10, &n), -ENOSPC);

	static kp_EventRecord back;
	struct rec_evlog_item it;
	size_t off = REC_EVLOG_HEADER;
	CHECK_EQ(rec_evlog_next(seg, len, &off, &it, &back), 0);
	CHECK(it.kind == REC_EVLOG_RECORD && !strcmp(back.event_id, "gate.1") && back.committed_ms == T0 + 1);
	CHECK_EQ(rec_evlog_next(seg, len, &off, &it, &back), 0);
	CHECK(it.kind == REC_EVLOG_TOMBSTONE && !strcmp(back.event_id, "gate.1") && back.revision == 1 &&
	      back.committed_ms == T0 + 1 && !back.camera[0] && !back.labels_count);
	CHECK_EQ(rec_evlog_next(seg, len, &off, &it, &back), 0);
	CHECK(it.kind == REC_EVLOG_RECORD && !strcmp(back.event_id, "gate.2") && back.revision == 3);
	CHECK_EQ(off, len);
	CHECK_EQ(rec_evlog_next(seg, len, &off, &it, &back), -ENODATA);

	/* Torn at every length. */
	for (size_t cut = REC_EVLOG_HEADER; cut < len; cut++) {
		size_t whole = 0, o = REC_EVLOG_HEADER;
		int r;
		while ((r = rec_evlog_next(seg, cut, &o, &it, &back)) == 0)
			whole++;
		size_t want = (cut >= ends[0]) + (cut >= ends[1]) + (cut >= ends[2]);
		CHECK_EQ(whole, want);
		int boundary = cut == REC_EVLOG_HEADER || cut == ends[0] || cut == ends[1];
		CHECK_EQ(r, boundary ? -ENODATA : -EBADMSG);
	}
	/* Any byte of an item changed: that item and nothing after it. */
	for (size_t i = REC_EVLOG_HEADER; i < len; i++) {
		seg[i] ^= 0x10;
		size_t whole = 0, o = REC_EVLOG_HEADER;
		int r;
		while ((r = rec_evlog_next(seg, len, &o, &it, &back)) == 0)
			whole++;
		CHECK_EQ(r, -EBADMSG);
		CHECK_EQ(whole, (i >= ends[0]) + (i >= ends[1]));
		seg[i] ^= 0x10;
	}
	/* A length past what is there, or past the largest record, is refused before use. */
	uint8_t big[REC_EVLOG_ITEM_HEADER] = {0xff, 0xff, 0xff, 0xff, REC_EVLOG_RECORD};
	off = 0;
	CHECK_EQ(rec_evlog_next(big, sizeof big, &off, &it, &back), -EBADMSG);
	for (size_t i = 0; i < REC_EVLOG_HEADER; i++) {
		seg[i] ^= 0x01;
		CHECK_EQ(rec_evlog_check_header(seg, len, &seq), -EBADMSG);
		seg[i] ^= 0x01;
	}
	CHECK(rec_evlog_parse_name("0000000000000001.evl", &seq) && seq == 1);
	CHECK(!rec_evlog_parse_name("0000000000000000.evl", &seq));
	CHECK(!rec_evlog_parse_name("000000000000001.evl", &seq));
	CHECK(!rec_evlog_parse_name("000000000000000G.evl", &seq));
	CHECK(!rec_evlog_parse_name("0000000000000001.ev", &seq));
}

static uint64_t seg_size(int dirfd, uint64_t seq)
{
	char p[REC_EVLOG_NAME_MAX];
	struct stat st;
	rec_evlog_segment_path(seq, p, sizeof p);
	return fstatat(dirfd, p, &st, 0) == 0 ? (uint64_t)st.st_size : 0;
}

/* One segment per writer (a restart never appends after a possibly torn tail), sealed
 * at the cap; a torn tail is skipped by every reader. */
static void test_writer(void)
{
	int dirfd = open_dir();
	CHECK(dirfd >= 0);
	struct rec_evlog *l;
	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	CHECK_EQ(rec_evlog_flush(l), 0); /* nothing staged: no segment */
	CHECK(!exists(dirfd, REC_EVLOG_DIR));
	kp_EventRecord e = mk("a", 1, T0);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &e), 0);
	e = mk("b", 1, T0);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &e), 0);
	CHECK_EQ(rec_evlog_flush(l), 0);
	CHECK_EQ(rec_evlog_open_segment(l), 1);
	struct rec_evlog_stats st;
	rec_evlog_get_stats(l, &st);
	CHECK(st.flushes == 1 && st.records == 2 && st.segments_made == 1);
	rec_evlog_free(l);

	/* A crash mid-append: half an item at the end of segment 1. */
	static uint8_t item[REC_EVLOG_ITEM_MAX];
	size_t n;
	e = mk("torn", 1, T0);
	CHECK_EQ(rec_evlog_encode(REC_EVLOG_RECORD, &e, item, sizeof item, &n), 0);
	char p[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(1, p, sizeof p);
	int fd = openat(dirfd, p, O_WRONLY | O_APPEND);
	CHECK(write(fd, item, n / 2) == (ssize_t)(n / 2));
	close(fd);

	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	e = mk("c", 1, T0 + 1);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &e), 0);
	CHECK_EQ(rec_evlog_flush(l), 0);
	CHECK_EQ(rec_evlog_open_segment(l), 2); /* a new segment, not after the torn tail */
	struct rec_evlog_index x;
	CHECK_EQ(rec_evlog_index_load(dirfd, &x), 0);
	CHECK_EQ(x.n, 3);
	CHECK(rec_evlog_index_has(&x, "a", 1, T0) && rec_evlog_index_has(&x, "c", 1, T0 + 1));
	CHECK(!rec_evlog_index_has(&x, "torn", 1, T0));
	rec_evlog_index_free(&x);

	/* The cap: no segment grows past it, items staged across it are all kept. */
	unsigned total = 0;
	for (int pass = 0; pass < 60; pass++) {
		for (int i = 0; i < 1000; i++) {
			char id[32];
			snprintf(id, sizeof id, "cap.%d.%d", pass, i);
			e = mk(id, 1, T0 + pass);
			snprintf(e.attributes[0].key, sizeof e.attributes[0].key, "pad");
			memset(e.attributes[0].value, 'x', sizeof e.attributes[0].value - 1);
			e.attributes_count = 1;
			CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &e), 0);
			total++;
		}
		CHECK_EQ(rec_evlog_flush(l), 0);
	}
	uint64_t *seqs;
	size_t nseg;
	CHECK_EQ(rec_evlog_list(dirfd, &seqs, &nseg), 0);
	CHECK(nseg >= 3);
	for (size_t i = 0; i < nseg; i++)
		CHECK(seg_size(dirfd, seqs[i]) <= REC_EVLOG_SEGMENT_CAP);
	free(seqs);
	CHECK_EQ(rec_evlog_index_load(dirfd, &x), 0);
	CHECK_EQ(x.n, 3 + total);
	rec_evlog_index_free(&x);
	rec_evlog_free(l);
	remove_dir(dirfd);
}

static struct cat *open_cat(int dirfd, const char *name)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	mkdirat(dirfd, name, 0700);
	struct cat *cat = NULL;
	CHECK_EQ(cat_open(path, 1ull << 28, &cat), 0);
	return cat;
}

static void store(struct cat *cat, const kp_EventRecord *e)
{
	struct cat_txn *t;
	uint32_t cam;
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	CHECK_EQ(cat_camera(t, e->camera, 0, &cam), 0);
	CHECK_EQ(cat_event_put(t, cam, e, 0, NULL, 0, NULL), 0);
	CHECK_EQ(cat_commit(t), 0);
}

static void forget(struct cat *cat, const char *id)
{
	struct cat_txn *t;
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	CHECK_EQ(cat_event_delete(t, id, NULL), 0);
	CHECK_EQ(cat_commit(t), 0);
}

/* Segment seq of writer l: records id.0 .. id.(n-1), all stored in cat; sealed. */
static void fill(int dirfd, struct cat *cat, const char *id, int n, int64_t committed)
{
	struct rec_evlog *l;
	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof name, "%s.%d", id, i);
		kp_EventRecord e = mk(name, 1, committed);
		CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &e), 0);
		store(cat, &e);
	}
	CHECK_EQ(rec_evlog_flush(l), 0);
	rec_evlog_free(l);
}

static void test_compaction(void)
{
	int dirfd = open_dir();
	struct cat *cat = open_cat(dirfd, "catalog");
	fill(dirfd, cat, "a", 100, T0 + 1); /* segment 1 */
	fill(dirfd, cat, "b", 100, T0 + 2); /* segment 2 */
	fill(dirfd, cat, "c", 100, T0 + 3); /* segment 3 */
	/* 90 of segment 1 gone (their tombstones in the head), all of segment 3, a few of 2. */
	struct rec_evlog *head;
	CHECK_EQ(rec_evlog_new(dirfd, &head), 0);
	for (int i = 0; i < 100; i++) {
		char name[32];
		snprintf(name, sizeof name, "a.%d", i);
		if (i < 90) {
			kp_EventRecord e = mk(name, 1, T0 + 1);
			CHECK_EQ(rec_evlog_add(head, REC_EVLOG_TOMBSTONE, &e), 0);
			forget(cat, name);
		}
		snprintf(name, sizeof name, "c.%d", i);
		kp_EventRecord e = mk(name, 1, T0 + 3);
		CHECK_EQ(rec_evlog_add(head, REC_EVLOG_TOMBSTONE, &e), 0);
		forget(cat, name);
		if (i < 10) {
			snprintf(name, sizeof name, "b.%d", i);
			e = mk(name, 1, T0 + 2);
			CHECK_EQ(rec_evlog_add(head, REC_EVLOG_TOMBSTONE, &e), 0);
			forget(cat, name);
		}
	}
	CHECK_EQ(rec_evlog_flush(head), 0);
	CHECK_EQ(rec_evlog_open_segment(head), 4);
	uint64_t size1 = seg_size(dirfd, 1);

	/* Segment 1 (10 % stored): its stored records written again, removed. Segment 2
	 * (90 % stored) stays, and segment 3 (nothing stored) waits behind it. */
	struct rec_evlog_compact_result res;
	CHECK_EQ(rec_evlog_compact(head, cat, dirfd, &res), 0);
	CHECK_EQ(res.segments_removed, 1);
	CHECK_EQ(res.records_copied, 10);
	CHECK_EQ(res.bytes_freed, size1);
	char p[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(1, p, sizeof p);
	CHECK(!exists(dirfd, p));
	rec_evlog_segment_path(3, p, sizeof p);
	CHECK(exists(dirfd, p));
	struct rec_evlog_index x;
	CHECK_EQ(rec_evlog_index_load(dirfd, &x), 0);
	CHECK(rec_evlog_index_has(&x, "a.95", 1, T0 + 1) && !rec_evlog_index_has(&x, "a.5", 1, T0 + 1));
	CHECK(rec_evlog_index_has(&x, "b.50", 1, T0 + 2) && !rec_evlog_index_has(&x, "b.5", 1, T0 + 2));
	CHECK(!rec_evlog_index_has(&x, "c.5", 1, T0 + 3));
	CHECK_EQ(x.n, 10 + 90);
	rec_evlog_index_free(&x);

	/* Segment 2 dies too: then 2 and 3 go, nothing copied; the open segment stays. */
	for (int i = 10; i < 100; i++) {
		char name[32];
		snprintf(name, sizeof name, "b.%d", i);
		kp_EventRecord e = mk(name, 1, T0 + 2);
		CHECK_EQ(rec_evlog_add(head, REC_EVLOG_TOMBSTONE, &e), 0);
		forget(cat, name);
	}
	CHECK_EQ(rec_evlog_flush(head), 0);
	CHECK_EQ(rec_evlog_compact(head, cat, dirfd, &res), 0);
	CHECK_EQ(res.segments_removed, 2);
	CHECK_EQ(res.records_copied, 0);
	uint64_t *seqs;
	size_t n;
	CHECK_EQ(rec_evlog_list(dirfd, &seqs, &n), 0);
	CHECK(n == 1 && seqs[0] == 4);
	free(seqs);

	/* A revision deleted and published again (same id and revision, a later commit):
	 * the old record is not the stored one. A sealed segment with a torn tail: what
	 * can be read is kept, the segment goes. */
	rec_evlog_free(head);
	CHECK_EQ(rec_evlog_new(dirfd, &head), 0);
	kp_EventRecord again = mk("a.95", 1, T0 + 50);
	forget(cat, "a.95");
	kp_EventRecord dead = mk("a.95", 1, T0 + 1);
	CHECK_EQ(rec_evlog_add(head, REC_EVLOG_TOMBSTONE, &dead), 0);
	CHECK_EQ(rec_evlog_add(head, REC_EVLOG_RECORD, &again), 0);
	store(cat, &again);
	for (int i = 0; i < 5; i++) { /* and what is dead already */
		char name[32];
		snprintf(name, sizeof name, "c.%d", i);
		kp_EventRecord e = mk(name, 1, T0 + 3);
		CHECK_EQ(rec_evlog_add(head, REC_EVLOG_TOMBSTONE, &e), 0);
	}
	CHECK_EQ(rec_evlog_flush(head), 0); /* segment 5 */
	rec_evlog_free(head);
	rec_evlog_segment_path(5, p, sizeof p);
	int fd = openat(dirfd, p, O_WRONLY | O_APPEND);
	CHECK(write(fd, "\x40\0\0\0\1\0\0\0torn", 12) == 12);
	close(fd);
	CHECK_EQ(rec_evlog_new(dirfd, &head), 0);
	kp_EventRecord other = mk("z", 1, T0 + 60);
	CHECK_EQ(rec_evlog_add(head, REC_EVLOG_RECORD, &other), 0);
	store(cat, &other);
	CHECK_EQ(rec_evlog_flush(head), 0); /* segment 6, open */
	CHECK_EQ(rec_evlog_compact(head, cat, dirfd, &res), 0);
	CHECK_EQ(res.segments_removed, 2); /* 4 (its 9 a.* records copied) and 5 (a.95 again) */
	CHECK_EQ(res.records_copied, 10);
	CHECK_EQ(res.bytes_ignored, 12);
	CHECK_EQ(rec_evlog_index_load(dirfd, &x), 0);
	CHECK(rec_evlog_index_has(&x, "a.95", 1, T0 + 50) && !rec_evlog_index_has(&x, "a.95", 1, T0 + 1));
	CHECK(rec_evlog_index_has(&x, "a.91", 1, T0 + 1) && rec_evlog_index_has(&x, "z", 1, T0 + 60));
	CHECK_EQ(x.n, 11);
	rec_evlog_index_free(&x);
	rec_evlog_free(head);
	cat_close(cat);
	remove_dir(dirfd);
}

/* A data directory an older catalog wrote (.ev files) and this one continued (the
 * log): a rebuild restores both, applies the log's tombstones to either, keeps the
 * last revision, and skips a torn tail. */
static void test_rebuild_mix(void)
{
	int dirfd = open_dir();
	kp_EventRecord old1 = mk("old.1", 1, T0 + 1), old2 = mk("old.2", 1, T0 + 2), old3 = mk("old.3", 2, T0 + 3);
	CHECK_EQ(rec_event_record_store(dirfd, &old1), 0);
	CHECK_EQ(rec_event_record_store(dirfd, &old2), 0);
	CHECK_EQ(rec_event_record_store(dirfd, &old3), 0);
	struct rec_evlog *l;
	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	kp_EventRecord new1 = mk("new.1", 1, T0 + 10), old3b = mk("old.3", 3, T0 + 11);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &new1), 0);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_TOMBSTONE, &old2), 0); /* deleted after the upgrade */
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &old3b), 0);   /* replaced after the upgrade */
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_TOMBSTONE, &old3), 0);
	CHECK_EQ(rec_evlog_flush(l), 0);
	rec_evlog_free(l);
	char p[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(1, p, sizeof p);
	int fd = openat(dirfd, p, O_WRONLY | O_APPEND);
	CHECK(write(fd, "\x20\0\0\0\1\0\0\0\0\0\0\0garbage", 19) == 19);
	close(fd);

	CHECK_EQ(rec_data_has_files(dirfd), 1);
	struct cat *cat = open_cat(dirfd, "rebuilt");
	struct rec_rebuild_result res;
	CHECK_EQ(rec_rebuild_into(cat, dirfd, &res), 0);
	CHECK_EQ(res.records, 5);
	CHECK_EQ(res.tombstones, 2);
	CHECK_EQ(res.log_segments, 1);
	CHECK_EQ(res.log_bytes_ignored, 19);
	CHECK_EQ(res.events, 3);
	struct cat_txn *t;
	struct cat_event_row row;
	static kp_EventRecord back;
	CHECK_EQ(cat_begin(cat, 0, &t), 0);
	CHECK_EQ(cat_event_get(t, "old.1", &row, &back), 0);
	CHECK(row.revision == 1 && row.committed_ms == T0 + 1 && !strcmp(back.labels[0].name, "person"));
	CHECK_EQ(cat_event_get(t, "new.1", &row, NULL), 0);
	CHECK_EQ(cat_event_get(t, "old.3", &row, NULL), 0);
	CHECK_EQ(row.revision, 3);
	CHECK_EQ(cat_event_get(t, "old.2", &row, NULL), -ENOENT);
	cat_abort(t);
	cat_close(cat);
	remove_dir(dirfd);
}

/* A crash between the log's fdatasync and the commit: at the next start the log is made
 * to agree with the catalog again (records of the pass ended, tombstones of it undone). */
static void test_reconcile(void)
{
	int dirfd = open_dir();
	struct cat *cat = open_cat(dirfd, "catalog");
	struct rec_evlog *l;
	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	kp_EventRecord kept = mk("kept", 1, T0 + 1), gone = mk("gone", 1, T0 + 1), never = mk("never", 1, T0 + 2),
		       undone = mk("undone", 1, T0 + 1);
	store(cat, &kept);
	store(cat, &undone);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &kept), 0);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &gone), 0);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_TOMBSTONE, &gone), 0); /* deleted, committed */
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &undone), 0);
	/* The last pass: logged, never committed. */
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_RECORD, &never), 0);
	CHECK_EQ(rec_evlog_add(l, REC_EVLOG_TOMBSTONE, &undone), 0);
	CHECK_EQ(rec_evlog_flush(l), 0);
	rec_evlog_free(l);

	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	struct rec_evlog_reconcile_result rr;
	CHECK_EQ(rec_evlog_reconcile(l, cat, dirfd, &rr), 0);
	CHECK_EQ(rr.tombstones, 1);
	CHECK_EQ(rr.records, 1);
	struct rec_evlog_index x;
	CHECK_EQ(rec_evlog_index_load(dirfd, &x), 0);
	CHECK(rec_evlog_index_has(&x, "kept", 1, T0 + 1) && rec_evlog_index_has(&x, "undone", 1, T0 + 1));
	CHECK(!rec_evlog_index_has(&x, "never", 1, T0 + 2) && !rec_evlog_index_has(&x, "gone", 1, T0 + 1));
	CHECK_EQ(x.n, 2);
	rec_evlog_index_free(&x);
	rec_evlog_free(l);
	/* Agreeing already: nothing written. */
	CHECK_EQ(rec_evlog_new(dirfd, &l), 0);
	CHECK_EQ(rec_evlog_reconcile(l, cat, dirfd, &rr), 0);
	CHECK(rr.tombstones == 0 && rr.records == 0 && rec_evlog_open_segment(l) == 0);
	rec_evlog_free(l);
	cat_close(cat);
	remove_dir(dirfd);
}

int main(void)
{
	RUN(test_format);
	RUN(test_writer);
	RUN(test_compaction);
	RUN(test_rebuild_mix);
	RUN(test_reconcile);
	return TEST_EXIT();
}
