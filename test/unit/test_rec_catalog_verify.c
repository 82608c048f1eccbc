/* The structural check of the catalog file (catalog_verify.c) against real damage: a
 * catalog filled through the catalog code (cameras, thousands of fragments with gaps so
 * that coverage values spill onto overflow pages, events, deletes that leave free pages)
 * is copied and, in turn, every page zeroed, the file truncated at many lengths, and
 * bytes flipped at random. The property: whenever the check calls a file sound, LMDB
 * reads every entry of every sub-database and commits a write to each without crashing
 * (in a forked child: a SIGBUS or an assertion there fails the test); every page the
 * trees reach is found when zeroed; a truncation that cuts a page in use is reported
 * as one. The live check under a read transaction (cat_verify) passes while a writer
 * commits. */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "catalog_keys.h"
#include "catalog_verify.h"
#include "check.h"
#include "test.h"

static char dir[256], copy_dir[300], src[320], dst[320];
static volatile uint8_t sink; /* the bytes LMDB hands out are read, not just pointed at */
static uint64_t a_tree_page;  /* a page of 'fragments', found by test_zero_every_page */

static void fill(struct cat *cat)
{
	struct cat_txn *t;
	uint32_t cam;
	CHECK_EQ(cat_begin(cat, 1, &t), 0);
	CHECK_EQ(cat_camera(t, "yard", 7, &cam), 0);
	int64_t ms = 1700000000000ll;
	for (uint64_t id = 1; id <= 40; id++) {
		struct cat_recording rec = {.id = id,
					    .stream_id = cat_stream_id(cam, id % 2),
					    .codec = 1,
					    .width = 640,
					    .height = 360,
					    .start_ms = ms,
					    .anchor_ms = ms,
					    .bytes = 1000};
		snprintf(rec.path, sizeof rec.path, "recordings/yard/%s/%lld.mp4", id % 2 ? "sub" : "main",
			 (long long)ms);
		uint64_t off = 1000;
		for (uint32_t seq = 1; seq <= 100; seq++) {
			/* A gap after every fragment: one coverage range each, 256 per stream. */
			struct cat_fragment f = {.recording_id = id,
						 .seq = seq,
						 .samples = 50,
						 .start_ms = ms,
						 .end_ms = ms + 2000,
						 .duration = 180000,
						 .offset = off,
						 .length = 50000,
						 .keyframe_offset = off + 200,
						 .keyframe_length = 20000};
			CHECK_EQ(cat_add_fragment(t, &rec, &f), 0);
			off += f.length;
			ms += 2100;
		}
		CHECK_EQ(cat_close_recording(t, id), 0);
	}
	for (int i = 0; i < 200; i++) {
		kp_EventRecord ev = kp_EventRecord_init_zero;
		snprintf(ev.event_id, sizeof ev.event_id, "ev-%d", i);
		snprintf(ev.camera, sizeof ev.camera, "yard");
		ev.revision = 1;
		ev.start_ms = 1700000000000ll + i * 5000;
		ev.labels_count = 2;
		snprintf(ev.labels[0].name, sizeof ev.labels[0].name, "person");
		snprintf(ev.labels[1].name, sizeof ev.labels[1].name, "car%d", i % 7);
		ev.attributes_count = 1;
		snprintf(ev.attributes[0].key, sizeof ev.attributes[0].key, "plate");
		snprintf(ev.attributes[0].value, sizeof ev.attributes[0].value, "AB-%d red sedan", i);
		CHECK_EQ(cat_event_put(t, cam, &ev, 1234, NULL, 0, NULL), 0);
	}
	CHECK_EQ(cat_commit(t), 0);
	/* Deletes in later transactions leave pages on the free list. */
	for (uint64_t id = 1; id <= 10; id++) {
		CHECK_EQ(cat_begin(cat, 1, &t), 0);
		CHECK_EQ(cat_delete_recording(t, id, NULL), 0);
		CHECK_EQ(cat_commit(t), 0);
	}
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char buf[65536];
	ssize_t n;
	int r = in < 0 || out < 0 ? -1 : 0;
	while (r == 0 && (n = read(in, buf, sizeof buf)) > 0)
		r = write(out, buf, (size_t)n) == n ? 0 : -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return r;
}

/* In a child: LMDB opens the damaged copy, reads every entry of every sub-database and
 * commits one write to each. Returns how the child ended: 0 for exit 0 or a clean LMDB
 * error (exit 1), the signal number otherwise. */
static int lmdb_survives(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2); /* LMDB's assertion message is expected noise when it happens */
		MDB_env *env;
		MDB_txn *txn;
		if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 32) || mdb_env_set_mapsize(env, 1ull << 30) ||
		    mdb_env_open(env, copy_dir, MDB_NOTLS | MDB_NOSYNC, 0600))
			_exit(1);
		static const char *const names[] = {"meta",           "cameras",   "streams",          "recordings",
						    "rec_by_stream",  "fragments", "keyframes",        "events",
						    "events_by_time", "coverage",  "events_by_camera", "event_terms",
						    "event_keyframes"};
		MDB_dbi dbi[13];
		if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))
			_exit(1);
		for (int i = 0; i < 13; i++) {
			if (mdb_dbi_open(txn, names[i], 0, &dbi[i]))
				_exit(1);
			MDB_cursor *cur;
			MDB_val k, v;
			if (mdb_cursor_open(txn, dbi[i], &cur))
				_exit(1);
			int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
			while (rc == 0) {
				if (k.mv_size)
					sink ^= ((uint8_t *)k.mv_data)[k.mv_size - 1];
				if (v.mv_size)
					sink ^= ((uint8_t *)v.mv_data)[v.mv_size - 1];
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			}
			mdb_cursor_close(cur);
			if (rc != MDB_NOTFOUND)
				_exit(1);
		}
		mdb_txn_commit(txn); /* keeps the handles */
		for (int i = 0; i < 13; i++) {
			if (mdb_txn_begin(env, NULL, 0, &txn))
				_exit(1);
			char key[16] = "zz-verify-test";
			char val[3000];
			memset(val, i, sizeof val);
			MDB_val k = {.mv_size = sizeof key, .mv_data = key},
				v = {.mv_size = sizeof val, .mv_data = val};
			if (mdb_put(txn, dbi[i], &k, &v, 0) || mdb_txn_commit(txn))
				_exit(1);
		}
		mdb_env_close(env);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return 0;
}

static void damage_page(uint64_t pgno, uint32_t psize, int byte, size_t len, unsigned at)
{
	CHECK_EQ(copy_file(src, dst), 0);
	int fd = open(dst, O_WRONLY | O_CLOEXEC);
	uint8_t *b = calloc(1, psize);
	memset(b, byte, len);
	CHECK_EQ(pwrite(fd, b, len, (off_t)(pgno * psize + at)), (ssize_t)len);
	free(b);
	close(fd);
}

static void test_zero_every_page(void)
{
	struct cat_verify_report rep;
	CHECK_EQ(cat_verify_file(src, &rep), 0);
	CHECK(rep.pages > 100);
	uint64_t npages = rep.last_page + 1;
	uint32_t psize = rep.page_size;
	unsigned found = 0, passed = 0;
	for (uint64_t pg = 0; pg < npages; pg++) {
		damage_page(pg, psize, 0, psize, 0);
		struct cat_verify_report r2;
		int r = cat_verify_file(dst, &r2);
		if (r == 0) {
			passed++;
			int sig = lmdb_survives();
			if (sig)
				fprintf(stderr, "page %llu zeroed: the check passed, LMDB died of signal %d\n",
					(unsigned long long)pg, sig);
			CHECK_EQ(sig, 0);
		} else {
			CHECK_EQ(r, -EBADMSG);
			CHECK(r2.why[0] != '\0');
			found++;
			if (!a_tree_page && strstr(r2.why, "'fragments'")) /* untouched by test_live */
				a_tree_page = pg;
		}
	}
	/* Every page the trees reach (and both meta pages) is found but the overflow pages
	 * after the first of a run, which hold value bytes only; free pages are not. */
	CHECK_EQ(found, rep.pages + 2 - rep.tail_pages);
	CHECK_EQ(passed, npages - rep.pages - 2 + rep.tail_pages);
	fprintf(stderr, "  %llu pages, %u found when zeroed, %u free pages zeroed without harm\n",
		(unsigned long long)npages, found, passed);
}

static void test_truncate(void)
{
	struct cat_verify_report rep;
	CHECK_EQ(cat_verify_file(src, &rep), 0);
	uint64_t size = rep.file_bytes;
	uint64_t cuts[] = {0,
			   1,
			   100,
			   rep.page_size,
			   2ull * rep.page_size,
			   2ull * rep.page_size + 1,
			   size / 3,
			   size / 2,
			   size - rep.page_size,
			   size - 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		CHECK_EQ(copy_file(src, dst), 0);
		CHECK_EQ(truncate(dst, (off_t)cuts[i]), 0);
		struct cat_verify_report r2;
		int r = cat_verify_file(dst, &r2);
		if (cuts[i] == 0)
			CHECK_EQ(r, -ENODATA);
		else if (r == 0)
			CHECK_EQ(lmdb_survives(), 0); /* only free pages were cut */
		else
			CHECK_STR_CONTAINS(r2.why, "truncated");
		if (cuts[i] == size / 2)
			CHECK_EQ(r, -EBADMSG);
	}
}

static void test_random_bytes(void)
{
	struct cat_verify_report rep;
	CHECK_EQ(cat_verify_file(src, &rep), 0);
	uint64_t npages = rep.last_page + 1;
	srand(7);
	unsigned found = 0, passed = 0;
	for (int i = 0; i < 400; i++) {
		uint64_t pg = (uint64_t)rand() % npages;
		unsigned at = (unsigned)rand() % (i % 2 ? 64 : rep.page_size - 8);
		size_t len = 1 + (size_t)rand() % 8;
		damage_page(pg, rep.page_size, rand() & 0xff, len, at);
		struct cat_verify_report r2;
		if (cat_verify_file(dst, &r2) == 0) {
			passed++;
			int sig = lmdb_survives();
			if (sig)
				fprintf(stderr,
					"page %llu, %zu bytes at %u: the check passed, LMDB died of signal %d\n",
					(unsigned long long)pg, len, at, sig);
			CHECK_EQ(sig, 0);
		} else {
			found++;
		}
	}
	fprintf(stderr, "  400 random damages: %u found, %u passed and LMDB survived them\n", found, passed);
}

static void test_live(void)
{
	char cat_dir[300];
	snprintf(cat_dir, sizeof cat_dir, "%s/catalog", dir);
	struct cat *cat;
	CHECK_EQ(cat_open(cat_dir, 1ull << 30, &cat), 0);
	struct cat_verify_report rep;
	CHECK_EQ(cat_verify(cat, &rep), 0);
	CHECK(rep.entries > 4000);
	/* A writer meanwhile does not disturb the reader's snapshot. */
	for (int i = 0; i < 50; i++) {
		struct cat_txn *t;
		uint32_t cam;
		char name[32];
		snprintf(name, sizeof name, "cam%d", i);
		CHECK_EQ(cat_begin(cat, 1, &t), 0);
		CHECK_EQ(cat_camera(t, name, 1, &cam), 0);
		CHECK_EQ(cat_commit(t), 0);
		CHECK_EQ(cat_verify(cat, &rep), 0);
	}
	cat_close(cat);
}

static char problem_line[512];

static void on_problem(void *arg, const char *line)
{
	(void)arg;
	snprintf(problem_line, sizeof problem_line, "%s", line);
}

/* A page zeroed under an open catalog: keeppeekctl check reports the damage before it
 * reads a row (reading the rows would abort), and repairs nothing. */
static void test_check_reports_damage(void)
{
	char cat_dir[300];
	snprintf(cat_dir, sizeof cat_dir, "%s/catalog", dir);
	struct cat *cat;
	CHECK_EQ(cat_open(cat_dir, 1ull << 30, &cat), 0);
	struct cat_verify_report rep;
	CHECK_EQ(cat_verify(cat, &rep), 0);
	CHECK(a_tree_page > 1);
	int fd = open(src, O_WRONLY | O_CLOEXEC);
	uint8_t *zero = calloc(1, rep.page_size);
	CHECK_EQ(pwrite(fd, zero, rep.page_size, (off_t)(a_tree_page * rep.page_size)), (ssize_t)rep.page_size);
	free(zero);
	close(fd);
	CHECK_EQ(cat_verify(cat, &rep), -EBADMSG);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int repair = 0; repair < 2; repair++) {
		struct rec_check_opts o = {.repair = repair, .problem = on_problem};
		struct rec_check_result res;
		problem_line[0] = '\0';
		CHECK_EQ(rec_check(cat, dirfd, &o, &res), 0);
		CHECK_EQ(res.damaged, 1);
		CHECK_EQ(res.problems, 1);
		CHECK_EQ(res.remaining, 1);
		CHECK_EQ(res.repaired, 0);
		CHECK_STR_CONTAINS(problem_line, "catalog/data.mdb is damaged: page ");
		CHECK_STR_CONTAINS(problem_line, "keeppeekctl check --rebuild");
	}
	close(dirfd);
	cat_close(cat);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/kp-verify-test-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	char cat_dir[300];
	snprintf(cat_dir, sizeof cat_dir, "%s/catalog", dir);
	snprintf(copy_dir, sizeof copy_dir, "%s/copy", dir);
	mkdir(copy_dir, 0700);
	snprintf(src, sizeof src, "%s/data.mdb", cat_dir);
	snprintf(dst, sizeof dst, "%s/data.mdb", copy_dir);
	struct cat *cat;
	if (cat_open(cat_dir, 1ull << 30, &cat) < 0)
		return 1;
	fill(cat);
	cat_close(cat);
	struct cat_verify_report rep;
	CHECK_EQ(cat_verify_file("/nonexistent/data.mdb", &rep), -ENOENT);
	RUN(test_zero_every_page);
	RUN(test_truncate);
	RUN(test_random_bytes);
	RUN(test_live);
	RUN(test_check_reports_damage);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return TEST_EXIT();
}
