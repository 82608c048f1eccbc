/* keeppeekctl check and the catalog queries, over recordings made from the fixtures
 * through the real stream, committer and catalog (main.h264 as the main stream,
 * sub.h265 as the sub stream, 4-second files):
 * - a clean recording checks clean;
 * - keyframe lookup by time and by event returns exactly the bytes of the fixture's
 *   keyframe (read with libavformat), and nothing for times no fragment covers;
 * - coverage snapshots come from the summaries with the right ranges and buckets;
 * - a keyframe that is not one, a file cut short, a file deleted and a coverage bucket
 *   that no fragment explains are each reported, and --repair leaves a clean catalog. */
#include <lmdb.h>

#include "catalog_keys.h"
#include "check.h"
#include "catalog_events.h"
#include "keyframe.h"
#include "snapshot.h"
#include "test.h"
#include "test_rec_fixture.h"

#define WALL0 1700000000000ll

static struct fixture fx[2]; /* main.h264, sub.h265 */

struct lines {
	char text[16384];
	unsigned n;
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;
	size_t used = strlen(l->text);
	snprintf(l->text + used, sizeof l->text - used, "%s\n", line);
	l->n++;
}

static struct rec_check_result run_check(struct rec_setup *rs, int repair, struct lines *l)
{
	memset(l, 0, sizeof *l);
	struct rec_check_opts o = {.repair = repair, .problem = collect, .arg = l};
	struct rec_check_result res = {0};
	CHECK_EQ(rec_check(rs->cat, rs->dirfd, &o, &res), 0);
	return res;
}

/* Both streams, 3 loops of the 4-second fixtures each, in 4-second files. */
static void record(struct rec_setup *rs)
{
	CHECK_EQ(rec_setup_open(rs, "cam"), 0);
	rs->env.rollover_ms = 4000;
	static struct rec_stream s[2];
	for (uint32_t i = 0; i < 2; i++) {
		uint64_t seq = 0;
		rec_stream_init(&s[i], &rs->env, "cam", i, rs->camera_id);
		rec_feed(&s[i], &fx[i], 3, WALL0, &seq);
		rec_stream_close(&s[i]);
	}
	rec_commit_free(rs->env.commit);
	rs->env.commit = NULL;
}

/* The k-th frame of loop-repeated fixture f as stored: its NAL units, length-prefixed. */
static uint8_t *stored_form(const struct fixture *f, unsigned k, size_t *ret_len)
{
	struct h26x_nal nals[64];
	int nn = h26x_split(f->au[k % f->n].data, f->au[k % f->n].len, nals, 64);
	CHECK(nn > 0);
	*ret_len = h26x_sample_size(nals, (unsigned)nn);
	uint8_t *out = malloc(*ret_len);
	h26x_to_sample(nals, (unsigned)nn, out);
	return out;
}

static unsigned keyframes(const struct fixture *f)
{
	unsigned n = 0;
	for (unsigned k = 0; k < f->n; k++)
		n += f->au[k].key;
	return 3 * n;
}

/* Looks up every keyframe of stream i (by a time inside its GOP) and compares bytes. */
static void lookup_stream(struct rec_setup *rs, uint32_t i)
{
	const struct fixture *f = &fx[i];
	uint32_t stream_id = cat_stream_id(rs->camera_id, i);
	unsigned found = 0;
	for (unsigned k = 0; k < 3 * f->n; k++) {
		if (!f->au[k % f->n].key)
			continue;
		struct rec_keyframe kf;
		int64_t at = WALL0 + 40 * (int64_t)k + 20; /* inside its first frame: GOPs vary */
		if (rec_keyframe_find(rs->cat, stream_id, at, &kf) != 0) {
			CHECK(0);
			continue;
		}
		CHECK_EQ(kf.ms, WALL0 + 40 * (int64_t)k);
		size_t want_len;
		uint8_t *want = stored_form(f, k, &want_len);
		CHECK_EQ(kf.length, want_len);
		uint8_t *got = malloc(kf.length);
		CHECK_EQ(rec_keyframe_read(rs->dirfd, &kf, got), 0);
		CHECK(kf.length == want_len && !memcmp(got, want, want_len));
		/* As Annex-B: the same NAL units, byte for byte, that the camera sent. */
		CHECK_EQ(h26x_sample_to_annexb(got, kf.length), 0);
		struct h26x_nal a[64], b[64];
		int na = h26x_split(got, kf.length, a, 64);
		int nb = h26x_split(f->au[k % f->n].data, f->au[k % f->n].len, b, 64);
		CHECK(na > 0 && na == nb);
		for (int j = 0; j < na && na == nb; j++)
			CHECK(a[j].len == b[j].len && !memcmp(a[j].data, b[j].data, a[j].len));
		free(want);
		free(got);
		found++;
	}
	CHECK_EQ(found, keyframes(f));
	struct rec_keyframe kf;
	CHECK_EQ(rec_keyframe_find(rs->cat, stream_id, WALL0 - 1, &kf), -ENOENT);
	CHECK_EQ(rec_keyframe_find(rs->cat, stream_id, WALL0 + 12000, &kf), -ENOENT);
}

static void test_clean_and_lookup(void)
{
	struct rec_setup rs;
	record(&rs);
	struct lines l;
	struct rec_check_result res = run_check(&rs, 0, &l);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(l.n, 0);
	CHECK_EQ(res.streams, 2);
	CHECK_EQ(res.recordings, 6);
	CHECK_EQ(res.fragments, keyframes(&fx[0]) + keyframes(&fx[1]));
	CHECK_EQ(res.keyframes, res.fragments);
	lookup_stream(&rs, 0);
	lookup_stream(&rs, 1);

	/* By event without a link (resolved by time): the event's camera, the sub stream, at
	 * the event's start. */
	struct cat_txn *t;
	static kp_EventRecord e;
	e = (kp_EventRecord)kp_EventRecord_init_zero;
	snprintf(e.event_id, sizeof e.event_id, "ev-1");
	e.revision = 1;
	e.start_ms = WALL0 + 5300;
	e.end_ms = WALL0 + 6000;
	CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
	CHECK_EQ(cat_event_put(t, rs.camera_id, &e, 0, NULL, 0, NULL), 0);
	CHECK_EQ(cat_commit(t), 0);
	struct rec_keyframe kf;
	CHECK_EQ(rec_keyframe_find_event(rs.cat, "ev-1", 1, &kf), 0);
	CHECK_EQ(kf.ms, WALL0 + 5000);
	CHECK_EQ(kf.codec, KP_CODEC_H265);
	CHECK_EQ(rec_keyframe_find_event(rs.cat, "ev-2", 1, &kf), -ENOENT);

	/* Coverage snapshot from the summaries. */
	static struct rec_snapshot snap;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	uint32_t main_id = cat_stream_id(rs.camera_id, 0);
	CHECK_EQ(rec_snapshot(t, main_id, WALL0 - 1000, WALL0 + 20000, REC_SNAPSHOT_DEFAULT_BUCKET_MS, &snap), 0);
	CHECK_EQ(snap.n, 1);
	CHECK_EQ(snap.r[0].start_ms, WALL0);
	CHECK_EQ(snap.r[0].end_ms, WALL0 + 12000);
	CHECK_EQ(snap.exact_from_ms, INT64_MIN);
	int64_t covered = 0;
	for (uint32_t i = 0; i < snap.nbuckets; i++)
		covered += snap.b[i].covered_ms;
	CHECK_EQ(covered, 12000);
	CHECK_EQ(rec_snapshot(t, main_id, WALL0 + 2000, WALL0 + 3000, REC_COV_BUCKET_MS, &snap), 0);
	CHECK_EQ(snap.n, 1);
	CHECK_EQ(snap.r[0].start_ms, WALL0 + 2000); /* clipped to the range asked */
	CHECK_EQ(snap.r[0].end_ms, WALL0 + 3000);
	CHECK_EQ(rec_snapshot(t, main_id, WALL0, WALL0 + 1000, 1000, &snap), -EINVAL);
	CHECK_EQ(rec_snapshot(t, main_id, 0, WALL0, REC_COV_BUCKET_MS, &snap), -E2BIG);
	/* Spans whose bucket count overflows 64 bits are refused, not wrapped into a small count. */
	CHECK_EQ(rec_snapshot(t, main_id, 0, INT64_MAX, REC_COV_BUCKET_MS, &snap), -E2BIG);
	CHECK_EQ(rec_snapshot(t, main_id, INT64_MIN, INT64_MAX, REC_COV_BUCKET_MS, &snap), -E2BIG);
	CHECK_EQ(rec_snapshot(t, main_id, INT64_MIN, INT64_MIN + 1, REC_COV_BUCKET_MS, &snap), -E2BIG);
	CHECK_EQ(rec_snapshot(t, main_id, INT64_MAX - 1, INT64_MAX, REC_COV_BUCKET_MS, &snap), 0);
	CHECK_EQ(snap.nbuckets, 1);
	CHECK_EQ(
	    rec_snapshot(t, main_id, WALL0 - 1000, WALL0 + 20000, INT64_MAX - INT64_MAX % REC_COV_BUCKET_MS, &snap), 0);
	CHECK_EQ(snap.nbuckets, 1);
	cat_abort(t);
	rec_setup_close(&rs);
}

static int nth_recording(void *arg, const struct cat_recording *r)
{
	struct cat_recording *want = arg; /* in: want->fragments = index, stream_id */
	if (r->stream_id != want->stream_id)
		return 0;
	if (want->fragments-- == 0) {
		*want = *r;
		return 1;
	}
	return 0;
}

static struct cat_recording recording(struct rec_setup *rs, uint32_t stream, uint32_t index)
{
	struct cat_recording r = {.stream_id = cat_stream_id(rs->camera_id, stream), .fragments = index};
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs->cat, 0, &t), 0);
	CHECK_EQ(cat_each_recording(t, nth_recording, &r), 1);
	cat_abort(t);
	return r;
}

static struct cat_fragment fragment(struct rec_setup *rs, uint64_t id, uint32_t seq)
{
	struct cat_fragment f = {0};
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs->cat, 0, &t), 0);
	CHECK_EQ(cat_get_fragment(t, id, seq, &f), 0);
	cat_abort(t);
	return f;
}

/* Turns the first picture of a keyframe range into a non-IDR slice. */
static void spoil_keyframe(struct rec_setup *rs, const struct cat_recording *r, const struct cat_fragment *f)
{
	int fd = openat(rs->dirfd, r->path, O_RDWR | O_CLOEXEC);
	uint64_t pos = f->keyframe_offset;
	for (int i = 0; i < 16; i++) {
		uint8_t h[5];
		CHECK_EQ(pread(fd, h, 5, (off_t)pos), 5);
		if ((h[4] & 0x1f) == 5) {
			h[4] = (uint8_t)((h[4] & 0xe0) | 1);
			CHECK_EQ(pwrite(fd, h + 4, 1, (off_t)pos + 4), 1);
			break;
		}
		pos += 4 + cat_get_be32(h);
	}
	close(fd);
}

/* A coverage bucket no fragment explains, written behind the catalog's back. */
static void spoil_coverage(struct rec_setup *rs, uint32_t stream_id)
{
	cat_close(rs->cat);
	char dir[300];
	snprintf(dir, sizeof dir, "%s/catalog", rs->dir);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	CHECK_EQ(mdb_env_create(&env), 0);
	CHECK_EQ(mdb_env_set_maxdbs(env, 16), 0);
	CHECK_EQ(mdb_env_set_mapsize(env, 1ull << 30), 0);
	CHECK_EQ(mdb_env_open(env, dir, 0, 0600), 0);
	CHECK_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CHECK_EQ(mdb_dbi_open(txn, "coverage", 0, &dbi), 0);
	uint8_t k[CAT_KEY_COV_BUCKET];
	cat_key_cov_bucket(k, stream_id, WALL0 - 10 * REC_COV_BUCKET_MS);
	int64_t ms = 5;
	MDB_val key = {.mv_size = sizeof k, .mv_data = k}, v = {.mv_size = sizeof ms, .mv_data = &ms};
	CHECK_EQ(mdb_put(txn, dbi, &key, &v, 0), 0);
	CHECK_EQ(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	CHECK_EQ(cat_open(dir, 1ull << 30, &rs->cat), 0);
}

static void test_problems_and_repair(void)
{
	struct rec_setup rs;
	record(&rs);
	struct cat_recording a = recording(&rs, 0, 0), b = recording(&rs, 0, 1), c = recording(&rs, 1, 0);
	struct cat_fragment a2 = fragment(&rs, a.id, 2), b2 = fragment(&rs, b.id, 2);
	spoil_keyframe(&rs, &a, &a2);
	char path[600];
	snprintf(path, sizeof path, "%s/%s", rs.dir, b.path);
	CHECK_EQ(truncate(path, (off_t)(b2.offset + b2.length / 2)), 0);
	snprintf(path, sizeof path, "%s/%s", rs.dir, c.path);
	CHECK_EQ(unlink(path), 0);
	spoil_coverage(&rs, cat_stream_id(rs.camera_id, 1));

	struct lines l;
	struct rec_check_result res = run_check(&rs, 0, &l);
	CHECK_EQ(res.problems, 4);
	CHECK_EQ(res.remaining, 4);
	CHECK_EQ(res.repaired, 0);
	CHECK_STR_CONTAINS(l.text, "keyframe of fragment 2");
	CHECK_STR_CONTAINS(l.text, "not a keyframe");
	CHECK_STR_CONTAINS(l.text, "fragment 2");
	CHECK_STR_CONTAINS(l.text, "lies beyond the end of the file");
	CHECK_STR_CONTAINS(l.text, "file missing");
	CHECK_STR_CONTAINS(l.text, "cam/sub: the coverage bucket");
	res = run_check(&rs, 0, &l); /* checking changes nothing */
	CHECK_EQ(res.problems, 4);

	res = run_check(&rs, 1, &l);
	CHECK_EQ(res.problems, 4);
	CHECK_EQ(res.repaired, 4);
	CHECK_EQ(res.remaining, 0);
	res = run_check(&rs, 0, &l);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.recordings, 5);

	struct cat_txn *t;
	struct cat_recording r;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	CHECK_EQ(cat_get_recording(t, c.id, &r), -ENOENT);
	CHECK_EQ(cat_get_recording(t, b.id, &r), 0);
	CHECK_EQ(r.fragments, 1);
	CHECK_EQ(r.bytes, b2.offset);
	cat_abort(t);
	/* The spoiled keyframe is no longer offered: its GOP resolves to the one before. */
	struct rec_keyframe kf;
	CHECK_EQ(rec_keyframe_find(rs.cat, a.stream_id, a2.start_ms + 10, &kf), 0);
	CHECK_EQ(kf.seq, 1);
	rec_setup_close(&rs);
}

int main(void)
{
	if (fixture_load("main.h264", &fx[0]) < 0 || fixture_load("sub.h265", &fx[1]) < 0)
		return 1;
	RUN(test_clean_and_lookup);
	RUN(test_problems_and_repair);
	fixture_free(&fx[0]);
	fixture_free(&fx[1]);
	return TEST_EXIT();
}
