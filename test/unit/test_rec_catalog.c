/* Catalog keys (order of big-endian ids and signed times), coverage merging (adjacent,
 * overlapping, out of order, more than 256 ranges, removal), and catalog rows with
 * their coverage added and removed in one transaction; the tier journal's rows through
 * the group commit. */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_keys.h"
#include "commit.h"
#include "coverage.h"
#include "test.h"

static void test_keys_order(void)
{
	int64_t times[] = {-5000, -1, 0, 1, 255, 256, 1700000000000ll};
	uint8_t prev[CAT_KEY_KEYFRAME], k[CAT_KEY_KEYFRAME];
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		cat_key_keyframe(k, 0x0102, times[i]);
		CHECK_EQ(cat_get_be_time(k + 4), times[i]);
		if (i)
			CHECK(memcmp(prev, k, sizeof k) < 0);
		memcpy(prev, k, sizeof k);
	}
	uint8_t a[CAT_KEY_FRAGMENT], b[CAT_KEY_FRAGMENT];
	cat_key_fragment(a, 1, 0xffffffffu);
	cat_key_fragment(b, 2, 0);
	CHECK(memcmp(a, b, sizeof a) < 0);
	cat_key_fragment(a, 0x100, 1);
	CHECK_EQ(a[6], 1);
	CHECK_EQ(cat_get_be64(a), 0x100);
	CHECK_EQ(cat_stream_id(3, 1), 0x301);
	uint8_t r1[CAT_KEY_COV_RANGES], c1[CAT_KEY_COV_BUCKET];
	cat_key_cov_ranges(r1, 7);
	cat_key_cov_bucket(c1, 7, -100);
	CHECK(memcmp(r1, c1, sizeof r1) < 0); /* ranges sort before the stream's buckets */
}

static struct rec_cov *cov_new(void)
{
	struct rec_cov *c = calloc(1, sizeof *c);
	c->exact_from_ms = INT64_MIN;
	return c;
}

static void test_cov_merge(void)
{
	struct rec_cov *c = cov_new();
	rec_cov_add(c, 1000, 2000);
	rec_cov_add(c, 2000, 3000); /* adjacent */
	CHECK_EQ(c->n, 1);
	CHECK_EQ(c->r[0].end_ms, 3000);
	rec_cov_add(c, 2500, 3500); /* overlapping */
	CHECK_EQ(c->n, 1);
	CHECK_EQ(c->r[0].end_ms, 3500);
	rec_cov_add(c, 5000, 6000);
	rec_cov_add(c, 0, 500); /* out of order, before everything */
	CHECK_EQ(c->n, 3);
	CHECK_EQ(c->r[0].start_ms, 0);
	rec_cov_add(c, 3500, 5000); /* fills the hole: two ranges become one */
	CHECK_EQ(c->n, 2);
	CHECK_EQ(c->r[1].start_ms, 1000);
	CHECK_EQ(c->r[1].end_ms, 6000);
	rec_cov_add(c, 400, 7000); /* swallows everything */
	CHECK_EQ(c->n, 1);
	CHECK_EQ(c->r[0].start_ms, 0);
	CHECK_EQ(c->r[0].end_ms, 7000);
	rec_cov_remove(c, 1000, 2000); /* split */
	CHECK_EQ(c->n, 2);
	CHECK_EQ(c->r[0].end_ms, 1000);
	CHECK_EQ(c->r[1].start_ms, 2000);
	rec_cov_remove(c, 0, 1000);
	CHECK_EQ(c->n, 1);
	rec_cov_remove(c, 6000, 9000); /* trims the end */
	CHECK_EQ(c->r[0].end_ms, 6000);
	free(c);
}

static void test_cov_overflow(void)
{
	struct rec_cov *c = cov_new();
	for (int i = 0; i < 300; i++)
		rec_cov_add(c, i * 10000, i * 10000 + 5000);
	CHECK_EQ(c->n, REC_COV_MAX_RANGES);
	CHECK_EQ(c->r[0].start_ms, 44 * 10000); /* the newest 256 stay exact */
	CHECK_EQ(c->exact_from_ms, 43 * 10000 + 5000);
	rec_cov_add(c, 1000, 2000); /* older than the exact part: buckets only */
	CHECK_EQ(c->n, REC_COV_MAX_RANGES);
	CHECK_EQ(c->r[0].start_ms, 44 * 10000);
	rec_cov_remove(c, 299 * 10000 + 1000, 299 * 10000 + 2000); /* a split when full drops the oldest */
	CHECK_EQ(c->n, REC_COV_MAX_RANGES);
	CHECK_EQ(c->r[0].start_ms, 45 * 10000);
	CHECK_EQ(c->r[REC_COV_MAX_RANGES - 1].start_ms, 299 * 10000 + 2000);
	free(c);
}

static void test_cov_buckets(void)
{
	int64_t b = INT64_MIN, part, total = 0;
	int n = 0;
	while (rec_cov_next_bucket(REC_COV_BUCKET_MS - 10, 2 * REC_COV_BUCKET_MS + 20, &b, &part)) {
		total += part;
		n++;
	}
	CHECK_EQ(n, 3);
	CHECK_EQ(total, REC_COV_BUCKET_MS + 30);
	b = INT64_MIN;
	CHECK_EQ(rec_cov_next_bucket(-10, -5, &b, &part), 1);
	CHECK_EQ(b, -REC_COV_BUCKET_MS);
	CHECK_EQ(part, 5);
}

static void test_catalog_rows(void)
{
	char dir[] = "/tmp/kp-rec-cat-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct cat *cat;
	CHECK_EQ(cat_open(dir, 64ull << 20, &cat), 0);
	struct cat_txn *t;
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	uint32_t cam;
	CHECK_EQ(cat_camera(t, "yard", 7, &cam), 0);
	uint32_t again, days;
	CHECK_EQ(cat_camera(t, "yard", 7, &again), 0);
	CHECK_EQ(again, cam);
	CHECK_EQ(cat_camera_lookup(t, "yard", &again, &days), 0);
	CHECK_EQ(days, 7);
	uint32_t sid = cat_stream_id(cam, 1);
	/* Two recordings of three fragments each, fragments added out of time order. */
	for (uint64_t id = 1; id <= 2; id++) {
		struct cat_recording rec = {.id = id,
					    .stream_id = sid,
					    .codec = 1,
					    .width = 640,
					    .height = 360,
					    .start_ms = (int64_t)id * 100000,
					    .bytes = 1000,
					    .anchor_ms = (int64_t)id * 100000};
		snprintf(rec.path, sizeof rec.path, "recordings/yard/sub/%llu.mp4", (unsigned long long)id);
		for (uint32_t seq = 1; seq <= 3; seq++) {
			struct cat_fragment f = {.recording_id = id,
						 .seq = seq,
						 .samples = 25,
						 .start_ms = rec.start_ms + (seq - 1) * 1000,
						 .end_ms = rec.start_ms + seq * 1000,
						 .offset = 1000 + (seq - 1) * 500,
						 .length = 500,
						 .keyframe_offset = 1100 + (seq - 1) * 500,
						 .keyframe_length = 100};
			CHECK_EQ(cat_add_fragment(t, &rec, &f), 0);
		}
		struct cat_fragment bad = {.recording_id = id, .seq = 9, .offset = 1, .length = 5};
		CHECK_EQ(cat_add_fragment(t, &rec, &bad), -EINVAL); /* a hole in the file */
	}
	CHECK_EQ(cat_commit(t), 0);
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	uint64_t total;
	CHECK_EQ(cat_total_bytes(t, &total), 0);
	CHECK_EQ(total, 2 * 2500);
	struct rec_cov cov;
	CHECK_EQ(cat_coverage(t, sid, &cov), 0);
	CHECK_EQ(cov.n, 2);
	CHECK_EQ(cov.r[0].start_ms, 100000);
	CHECK_EQ(cov.r[0].end_ms, 103000);
	int64_t covered;
	CHECK_EQ(cat_coverage_bucket(t, sid, 0, &covered), 0);
	CHECK_EQ(covered, 6000);
	uint64_t next;
	CHECK_EQ(cat_next_recording_id(t, &next), 0);
	CHECK_EQ(next, 3);
	struct cat_recording gone;
	CHECK_EQ(cat_delete_recording(t, 1, &gone), 0);
	CHECK_EQ(gone.fragments, 3);
	CHECK_EQ(cat_coverage(t, sid, &cov), 0);
	CHECK_EQ(cov.n, 1);
	CHECK_EQ(cov.r[0].start_ms, 200000);
	CHECK_EQ(cat_coverage_bucket(t, sid, 0, &covered), 0);
	CHECK_EQ(covered, 3000);
	CHECK_EQ(cat_total_bytes(t, &total), 0);
	CHECK_EQ(total, 2500);
	struct cat_fragment f;
	CHECK_EQ(cat_get_fragment(t, 1, 2, &f), -ENOENT);
	int64_t kms;
	struct cat_keyframe kf;
	CHECK_EQ(cat_keyframe_at(t, sid, 150000, &kms, &kf), -ENOENT);
	CHECK_EQ(cat_keyframe_at(t, sid, 201500, &kms, &kf), 0);
	CHECK_EQ(kms, 201000);
	CHECK_EQ(kf.offset, 1600);
	CHECK_EQ(cat_commit(t), 0);
	cat_close(cat);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

static int count_tier(void *arg, uint64_t id, const struct cat_tier *row)
{
	(void)id;
	(void)row;
	(*(unsigned *)arg)++;
	return 0;
}

static struct cat_tier *tier_row(uint32_t state, const char *key, const char *upload_id)
{
	struct cat_tier *row = calloc(1, sizeof *row);
	CHECK(row != NULL);
	row->state = state;
	snprintf(row->key, sizeof row->key, "%s", key);
	snprintf(row->upload_id, sizeof row->upload_id, "%s", upload_id);
	return row;
}

/* The tier journal (decisions 0035, 0036): rows go through the group commit
 * (REC_ITEM_TIER), the newest of a recording wins; a row for a recording already gone
 * goes to the deletes (an upload under way may have left an object), keeping the upload
 * id an older one had; a deleted recording's row moves to the deletes; a delete done
 * (REC_ITEM_TIER_DELETED) takes its row away. */
static void test_tier_journal(void)
{
	char dir[] = "/tmp/kp-rec-tier-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct cat *cat;
	CHECK_EQ(cat_open(dir, 64ull << 20, &cat), 0);
	struct cat_txn *t;
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	uint32_t cam;
	CHECK_EQ(cat_camera(t, "yard", 0, &cam), 0);
	struct cat_recording rec = {.id = 1,
				    .stream_id = cat_stream_id(cam, 0),
				    .codec = 1,
				    .start_ms = 1000,
				    .bytes = 1000,
				    .anchor_ms = 1000};
	snprintf(rec.path, sizeof rec.path, "recordings/yard/main/1000.mp4");
	struct cat_fragment f = {.recording_id = 1,
				 .seq = 1,
				 .samples = 25,
				 .start_ms = 1000,
				 .end_ms = 2000,
				 .offset = 1000,
				 .length = 500};
	CHECK_EQ(cat_add_fragment(t, &rec, &f), 0);
	CHECK_EQ(cat_commit(t), 0);

	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dirfd >= 0);
	struct rec_committer *c;
	CHECK_EQ(rec_commit_new(cat, dirfd, &c), 0);
	static const uint32_t states[] = {CAT_TIER_QUEUED, CAT_TIER_UPLOADING, CAT_TIER_UPLOADED};
	for (unsigned i = 0; i < 3; i++) {
		struct cat_tier *row = calloc(1, sizeof *row);
		row->state = states[i];
		row->parts_done = i;
		row->size = 1500;
		snprintf(row->key, sizeof row->key, "%s", rec.path);
		snprintf(row->etag, sizeof row->etag, "%s", i == 2 ? "0123456789abcdef0123456789abcdef-2" : "");
		struct rec_commit_item it = {.kind = REC_ITEM_TIER, .fd = -1, .rec.id = 1, .tier = row};
		CHECK_EQ(rec_commit_push(c, &it), 0);
	}
	/* Recording 99 does not exist: an upload of it that began, then failed. */
	struct rec_commit_item it = {.kind = REC_ITEM_TIER,
				     .fd = -1,
				     .rec.id = 99,
				     .tier = tier_row(CAT_TIER_UPLOADING, "recordings/yard/main/99.mp4", "2~upload")};
	CHECK_EQ(rec_commit_push(c, &it), 0);
	it.tier = tier_row(CAT_TIER_QUEUED, "recordings/yard/main/99.mp4", "");
	CHECK_EQ(rec_commit_push(c, &it), 0);
	rec_commit_stop(c); /* commits what is pending */
	rec_commit_free(c);

	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	struct cat_tier got;
	CHECK_EQ(cat_tier_get(t, 1, &got), 0);
	CHECK_EQ(got.state, CAT_TIER_UPLOADED);
	CHECK_EQ(got.parts_done, 2);
	CHECK_EQ(got.size, 1500);
	CHECK_STR_CONTAINS(got.etag, "-2");
	CHECK_EQ(cat_tier_get(t, 99, &got), -ENOENT);
	CHECK_EQ(cat_tier_delete_get(t, 99, &got), 0);
	CHECK_STR_EQ(got.key, "recordings/yard/main/99.mp4");
	CHECK_STR_EQ(got.upload_id, "2~upload");
	CHECK_EQ(cat_tier_delete_get(t, 1, &got), -ENOENT);
	CHECK_EQ(cat_delete_recording(t, 1, NULL), 0);
	CHECK_EQ(cat_tier_get(t, 1, &got), -ENOENT);
	CHECK_EQ(cat_tier_delete_get(t, 1, &got), 0);
	CHECK_EQ(got.state, CAT_TIER_UPLOADED);
	CHECK_STR_EQ(got.key, rec.path);
	unsigned n = 0;
	CHECK_EQ(cat_each_tier_delete(t, 0, count_tier, &n), 0);
	CHECK_EQ(n, 2);
	n = 0;
	CHECK_EQ(cat_each_tier_delete(t, 2, count_tier, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(cat_commit(t), 0);

	CHECK_EQ(rec_commit_new(cat, dirfd, &c), 0);
	struct rec_commit_item done = {.kind = REC_ITEM_TIER_DELETED, .fd = -1, .rec.id = 99};
	CHECK_EQ(rec_commit_push(c, &done), 0);
	rec_commit_stop(c);
	rec_commit_free(c);
	CHECK_EQ(cat_begin(cat, 0, &t), 0);
	CHECK_EQ(cat_tier_delete_get(t, 99, &got), -ENOENT);
	CHECK_EQ(cat_tier_delete_get(t, 1, &got), 0);
	cat_abort(t);
	cat_close(cat);
	close(dirfd);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

/* Sets meta/version of the catalog in dir to version, with LMDB directly. */
static void set_version(const char *dir, uint64_t version)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta;
	CHECK_EQ(mdb_env_create(&env), 0);
	CHECK_EQ(mdb_env_set_maxdbs(env, 16), 0);
	CHECK_EQ(mdb_env_open(env, dir, 0, 0600), 0);
	CHECK_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CHECK_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
	MDB_val k = {7, "version"}, v = {sizeof version, &version};
	CHECK_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
	CHECK_EQ(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static size_t last_txnid(const char *dir)
{
	MDB_env *env;
	MDB_envinfo info = {0};
	CHECK_EQ(mdb_env_create(&env), 0);
	CHECK_EQ(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
	CHECK_EQ(mdb_env_info(env, &info), 0);
	mdb_env_close(env);
	return info.me_last_txnid;
}

/* A new catalog gets CAT_SCHEMA_VERSION; a catalog of a newer schema (a downgrade) is
 * refused with both versions reported and is not written to at all. */
static void test_schema_versions(void)
{
	char dir[] = "/tmp/kp-rec-cat-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct cat *cat = NULL;
	struct cat_open_report rep;
	CHECK_EQ(cat_open_full(dir, 64ull << 20, &rep, &cat), 0);
	CHECK_EQ(rep.created, 1);
	CHECK_EQ(rep.migrated, 0);
	CHECK_EQ(rep.found_version, 0);
	CHECK_EQ(rep.version, CAT_SCHEMA_VERSION);
	cat_close(cat);
	CHECK_EQ(cat_open_full(dir, 64ull << 20, &rep, &cat), 0);
	CHECK_EQ(rep.created, 0);
	CHECK_EQ(rep.found_version, CAT_SCHEMA_VERSION);
	cat_close(cat);

	set_version(dir, CAT_SCHEMA_VERSION + 1);
	size_t txnid = last_txnid(dir);
	cat = NULL;
	CHECK_EQ(cat_open_full(dir, 64ull << 20, &rep, &cat), -EPROTONOSUPPORT);
	CHECK(cat == NULL);
	CHECK_EQ(rep.found_version, CAT_SCHEMA_VERSION + 1);
	CHECK_EQ(rep.version, CAT_SCHEMA_VERSION);
	CHECK_EQ(rep.created, 0);
	CHECK_EQ(last_txnid(dir), txnid); /* nothing committed */
	CHECK_EQ(cat_open(dir, 64ull << 20, &cat), -EPROTONOSUPPORT);
	CHECK_EQ(last_txnid(dir), txnid);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

/* The backup copy: written to a descriptor while a write transaction is open (a
 * recording going on), it opens as a catalog of the same schema with the committed rows
 * only. */
static void test_copy(void)
{
	char dir[] = "/tmp/kp-rec-cat-XXXXXX", copy[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(copy, sizeof copy, "%s/copy", dir);
	CHECK_EQ(mkdir(copy, 0700), 0);
	struct cat *cat;
	CHECK_EQ(cat_open(dir, 64ull << 20, &cat), 0);
	struct cat_txn *t;
	uint32_t cam;
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	CHECK_EQ(cat_camera(t, "yard", 0, &cam), 0);
	struct cat_recording rec = {.id = 1, .stream_id = cat_stream_id(cam, 0), .start_ms = 1000, .bytes = 100};
	struct cat_fragment f = {
	    .recording_id = 1, .seq = 1, .start_ms = 1000, .end_ms = 2000, .offset = 100, .length = 50};
	CHECK_EQ(cat_add_fragment(t, &rec, &f), 0);
	CHECK_EQ(cat_commit(t), 0);
	CHECK_EQ(cat_begin(cat, 1, &t), 0); /* uncommitted: not in the copy */
	CHECK_EQ(cat_camera(t, "porch", 0, &cam), 0);
	char path[96];
	snprintf(path, sizeof path, "%s/data.mdb", copy);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(cat_copy_to(cat, fd), 0);
	close(fd);
	cat_abort(t);
	cat_close(cat);

	struct cat_open_report rep;
	CHECK_EQ(cat_open_full(copy, 64ull << 20, &rep, &cat), 0);
	CHECK_EQ(rep.found_version, CAT_SCHEMA_VERSION);
	CHECK_EQ(cat_begin(cat, 0, &t), 0);
	uint64_t n = 0;
	uint32_t id;
	CHECK_EQ(cat_recording_count(t, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(cat_camera_lookup(t, "yard", &id, NULL), 0);
	CHECK_EQ(cat_camera_lookup(t, "porch", &id, NULL), -ENOENT);
	struct cat_fragment got;
	CHECK_EQ(cat_get_fragment(t, 1, 1, &got), 0);
	CHECK_EQ(got.end_ms, 2000);
	cat_abort(t);
	cat_close(cat);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	RUN(test_keys_order);
	RUN(test_cov_merge);
	RUN(test_cov_overflow);
	RUN(test_cov_buckets);
	RUN(test_catalog_rows);
	RUN(test_tier_journal);
	RUN(test_schema_versions);
	RUN(test_copy);
	return TEST_EXIT();
}
