/* Start-up recovery: a small recording truncated at every byte offset is cut back to its
 * last complete fragment with exactly those fragments indexed; a recording left open by
 * a "crash" with a partial fragment at its end is repaired, closed and decodes cleanly;
 * a file unknown to the catalog is indexed when newest, removed when older. */
#include "test_rec_fixture.h"
#include "recovery.h"
#include "test.h"

static struct fixture fx;

/* Records the first frames frames of sub.h264 into rs; returns the stream's recording. */
static void record_small(struct rec_setup *rs, unsigned frames, struct cat_recording *ret, uint64_t *ret_bounds,
			 unsigned *ret_nbounds)
{
	struct rec_stream s;
	rec_stream_init(&s, &rs->env, "cam", 1, rs->camera_id);
	struct fixture part = fx;
	part.n = frames;
	uint64_t seq = 0;
	rec_feed(&s, &part, 1, 1700000000000ll, &seq);
	*ret = s.rec;
	rec_stream_close(&s);
	rec_commit_free(rs->env.commit);
	rs->env.commit = NULL;
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs->cat, 0, &t), 0);
	CHECK_EQ(cat_get_recording(t, ret->id, ret), 0);
	*ret_nbounds = 0;
	for (uint32_t q = 1; q <= ret->fragments; q++) {
		struct cat_fragment f;
		CHECK_EQ(cat_get_fragment(t, ret->id, q, &f), 0);
		ret_bounds[(*ret_nbounds)++] = f.offset + f.length;
	}
	cat_abort(t);
}

static void test_truncate_every_offset(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	struct cat_recording rec;
	uint64_t bounds[8];
	unsigned nb;
	record_small(&rs, 50, &rec, bounds, &nb);
	CHECK_EQ(nb, 2);
	char path[600];
	snprintf(path, sizeof path, "%s/%s", rs.dir, rec.path);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;
	CHECK_EQ(fstat(fd, &st), 0);
	size_t size = (size_t)st.st_size;
	CHECK_EQ(size, bounds[1]);
	uint8_t *orig = malloc(size);
	CHECK_EQ(pread(fd, orig, size, 0), (ssize_t)size);
	/* A recording the catalog knows only up to its init segment. */
	struct cat_recording tmpl = rec;
	tmpl.id = 1000;
	tmpl.bytes = bounds[0] - 0; /* replaced below */
	uint64_t init_len = 0;
	{
		struct cat_txn *t;
		CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
		struct cat_fragment f;
		CHECK_EQ(cat_get_fragment(t, rec.id, 1, &f), 0);
		init_len = f.offset;
		cat_abort(t);
	}
	tmpl.bytes = init_len;
	tmpl.fragments = 0;
	uint64_t have = size; /* bytes currently in the file equal to orig */
	unsigned bad = 0;
	for (uint64_t off = size; off >= init_len; off--) {
		if (have < off)
			CHECK_EQ(pwrite(fd, orig + have, off - have, (off_t)have), (ssize_t)(off - have));
		CHECK_EQ(ftruncate(fd, (off_t)off), 0);
		struct cat_txn *t;
		CHECK_EQ(cat_begin(rs.cat, 1, &t), 0);
		unsigned frags = 9;
		int truncated = -1;
		int r = rec_recover_file(t, rs.dirfd, &tmpl, &frags, &truncated);
		cat_abort(t);
		unsigned want = off >= bounds[1] ? 2 : off >= bounds[0] ? 1 : 0;
		uint64_t want_size = want ? bounds[want - 1] : init_len;
		CHECK_EQ(fstat(fd, &st), 0);
		if (r != 0 || frags != want || (uint64_t)st.st_size != want_size || truncated != (off != want_size)) {
			if (bad++ < 5)
				fprintf(stderr, "offset %llu: r %d, %u fragments (want %u), size %lld (want %llu)\n",
					(unsigned long long)off, r, frags, want, (long long)st.st_size,
					(unsigned long long)want_size);
		}
		have = (uint64_t)st.st_size;
		if (off == init_len)
			break;
	}
	CHECK_EQ(bad, 0);
	free(orig);
	close(fd);
	rec_setup_close(&rs);
}

static int run_quiet(const char *cmd)
{
	char full[1400];
	snprintf(full, sizeof full, "%s 2>&1 | grep -q . && exit 1 || exit 0", cmd);
	return system(full);
}

static void test_crashed_open_recording(void)
{
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam"), 0);
	struct rec_stream s;
	rec_stream_init(&s, &rs.env, "cam", 0, rs.camera_id);
	uint64_t seq = 0;
	rec_feed(&s, &fx, 1, 1700000000000ll, &seq);
	CHECK_EQ(s.fragments, 3);
	/* Wait for the group commit, then write half a fragment more and "crash". */
	usleep(3 * REC_COMMIT_INTERVAL_MS * 1000);
	uint64_t committed = s.off;
	uint8_t junk[4096];
	char path[600];
	snprintf(path, sizeof path, "%s/%s", rs.dir, s.rec.path);
	int rfd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK_EQ(pread(rfd, junk, sizeof junk, (off_t)(committed - sizeof junk)), (ssize_t)sizeof junk);
	close(rfd);
	CHECK_EQ(pwrite(s.fd, junk, sizeof junk, (off_t)committed), (ssize_t)sizeof junk);
	struct cat_recording rec = s.rec;
	close(s.fd);
	free(s.gop);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	/* Also a file created just before the crash, and a retention leftover. */
	char newest[600], older[600];
	snprintf(newest, sizeof newest, "%s/recordings/cam/main/1800000000000.mp4", rs.dir);
	snprintf(older, sizeof older, "%s/recordings/cam/main/1600000000000.mp4", rs.dir);
	char cmd[2000];
	snprintf(cmd, sizeof cmd, "head -c %llu '%s' > '%s' && cp '%s' '%s'", (unsigned long long)committed - 100, path,
		 newest, path, older);
	CHECK_EQ(system(cmd), 0);

	struct rec_recovery_result rr;
	CHECK_EQ(rec_recover(rs.cat, rs.dirfd, &rr), 0);
	CHECK_EQ(rr.files_truncated, 2); /* the crashed one and the newest copy */
	CHECK_EQ(rr.files_removed, 1);
	CHECK_EQ(rr.fragments_indexed, 2); /* the copy's two complete fragments */
	struct stat st;
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ((uint64_t)st.st_size, committed);
	CHECK(stat(older, &st) < 0);
	CHECK_EQ(stat(newest, &st), 0);
	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	struct cat_recording after;
	CHECK_EQ(cat_get_recording(t, rec.id, &after), 0);
	CHECK_EQ(after.open, 0);
	CHECK_EQ(after.fragments, 3);
	CHECK_EQ(after.bytes, committed);
	CHECK_EQ(cat_get_recording(t, rec.id + 1, &after), 0);
	CHECK_EQ(after.fragments, 2);
	CHECK_EQ((uint64_t)st.st_size, after.bytes);
	cat_abort(t);
	snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -i '%s' -f null -", path);
	CHECK_EQ(run_quiet(cmd), 0);
	snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -i '%s' -f null -", newest);
	CHECK_EQ(run_quiet(cmd), 0);
	rec_setup_close(&rs);
}

int main(void)
{
	if (fixture_load("sub.h264", &fx) < 0)
		return 1;
	RUN(test_truncate_every_offset);
	RUN(test_crashed_open_recording);
	fixture_free(&fx);
	return TEST_EXIT();
}
