/* recorderd's read cache of remote recordings (recorderd/tier_cache.c, decision 0037) at
 * each of its ceilings and one past it. The test stands where tierd stands: the send
 * function keeps each TierFetch and its cache file, and the test writes the object's
 * bytes into that file and answers TierFetched, as tierd's fetch lane does. A request
 * that needs bytes not cached is parked and run again once they are there (served from
 * the cache file, the same bytes); a failed fetch answers it with the reason; the
 * fetches ask for whole ranges, adjacent pieces merged, beginning with the bytes the
 * stripped file keeps. Ceilings: REC_TIER_PARKED_MAX requests wait and one more is
 * refused busy; REC_TIER_FETCHES_MAX fetches and one more is -EBUSY; REC_TIER_REQ_FETCHES
 * for one request (it asks for the rest when run again); the cache's bytes (the
 * recording read least recently leaves; more than all of it is -ENOSPC);
 * REC_TIER_RANGES_MAX ranges of one recording; REC_TIER_CACHED_MAX recordings;
 * REC_TIER_ATTEMPTS runs. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tier_cache.h"
#include "tier_local.h"

#define REC_BYTES (4u * 1024 * 1024)

static int dirfd_;
static uv_loop_t loop;

/* What the "store" holds for recording id: byte i of the object is (i * 7 + id) & 0xff. */
static uint8_t object_byte(uint64_t id, uint64_t i)
{
	return (uint8_t)((i * 7 + id) & 0xff);
}

struct sent {
	kp_TierFetch m;
	int fd;
};
static struct sent sent[64];
static unsigned nsent;
static int send_fails;

static int send_fetch(const kp_Envelope *env, int fd)
{
	if (send_fails)
		return -ENOTCONN;
	if (nsent == sizeof sent / sizeof sent[0])
		return -ENOBUFS;
	sent[nsent].m = env->msg.tier_fetch;
	sent[nsent].fd = dup(fd);
	nsent++;
	return 0;
}

/* tierd's part: the object's bytes into the cache file, then TierFetched. */
static void answer(unsigned i, uint32_t error)
{
	struct sent *s = &sent[i];
	if (!error) {
		uint8_t *buf = malloc(s->m.length);
		for (uint32_t k = 0; k < s->m.length; k++)
			buf[k] = object_byte(s->m.recording, s->m.offset + k);
		CHECK_EQ(pwrite(s->fd, buf, s->m.length, (off_t)s->m.offset), (ssize_t)s->m.length);
		free(buf);
	}
	close(s->fd);
	s->fd = -1;
	kp_TierFetched done = {.recording = s->m.recording, .fetch = s->m.fetch, .error = error};
	if (error)
		snprintf(done.why, sizeof done.why, "GET timed out");
	rec_tier_cache_fetched(&done);
}

/* A stripped recording file: its first bytes (the "headers") are the object's. */
static struct cat_recording remote_rec(uint64_t id)
{
	struct cat_recording r = {.id = id, .bytes = REC_BYTES, .flags = CAT_REC_REMOTE, .fragments = 1};
	snprintf(r.path, sizeof r.path, "rec-%llu.mp4", (unsigned long long)id);
	int fd = openat(dirfd_, r.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	CHECK(fd >= 0);
	uint8_t head[4096];
	for (unsigned k = 0; k < sizeof head; k++)
		head[k] = object_byte(id, k);
	CHECK_EQ(pwrite(fd, head, sizeof head, 0), (ssize_t)sizeof head);
	for (uint64_t off = 65536; off < REC_BYTES; off += 65536) /* each "fragment" header */
		for (unsigned k = 0; k < 16; k++)
			CHECK_EQ(pwrite(fd, &(uint8_t){object_byte(id, off + k)}, 1, (off_t)(off + k)), 1);
	CHECK_EQ(ftruncate(fd, REC_BYTES), 0);
	close(fd);
	return r;
}

static kp_Envelope request(uint32_t id)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_media_open_tag;
	env.msg.media_open.id = id;
	return env;
}

struct outcome {
	unsigned runs, errors;
	int err;
	char why[160];
};
static struct outcome out[128];

/* The request's handler: it needs [off, off + len) of the recording named by its id's
 * high bits (off from its low bits). */
static struct cat_recording recs[REC_TIER_CACHED_MAX + 2];

static int handle(const kp_Envelope *env)
{
	uint32_t id = env->msg.media_open.id;
	const struct cat_recording *r = &recs[id >> 16];
	uint64_t off = (uint64_t)(id & 0xff) * 65536, len = 65536;
	int fd = -1;
	int res = rec_tier_cache_need(r, off, len, 0, &fd);
	if (res == 0) {
		uint8_t b[16];
		CHECK_EQ(pread(fd, b, sizeof b, (off_t)off), (ssize_t)sizeof b);
		for (unsigned k = 0; k < sizeof b; k++)
			CHECK_EQ(b[k], object_byte(r->id, off + k));
		close(fd);
	}
	return res;
}

/* For requests whose handler is not handle(): only what happened is kept. */
static void again_record(kp_Peer from, const kp_Envelope *env, int err, const char *why)
{
	(void)from;
	struct outcome *o = &out[env->msg.media_open.id & 0x7f];
	o->runs += !err;
	o->errors += !!err;
	o->err = err;
	snprintf(o->why, sizeof o->why, "%s", why ? why : "");
}

static void again(kp_Peer from, const kp_Envelope *env, int err, const char *why)
{
	struct outcome *o = &out[env->msg.media_open.id & 0x7f];
	if (err) {
		o->errors++;
		o->err = err;
		snprintf(o->why, sizeof o->why, "%s", why);
		return;
	}
	o->runs++;
	o->err = -handle(env) == EINPROGRESS ? EINPROGRESS : 0;
	rec_tier_cache_end(from, env, again);
}

/* Runs request id as rec_query_frame does: 1 when it was parked. */
static int run_request(uint32_t id, int *ret)
{
	kp_Envelope env = request(id);
	rec_tier_cache_begin(0);
	*ret = handle(&env);
	return rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again);
}

static void open_cache(uint64_t bytes)
{
	rec_tier_cache_close();
	uv_run(&loop, UV_RUN_NOWAIT);
	for (unsigned i = 0; i < nsent; i++)
		if (sent[i].fd >= 0)
			close(sent[i].fd);
	nsent = 0;
	memset(out, 0, sizeof out);
	CHECK_EQ(rec_tier_cache_open(&loop, NULL, dirfd_, bytes, send_fetch), 0);
	rec_tier_cache_link(1);
}

static void test_fetch_and_serve(void)
{
	open_cache(64 * 1024 * 1024);
	struct cat_recording local = recs[0];
	local.flags = 0;
	int fd = -1;
	CHECK_EQ(rec_tier_cache_need(&local, 0, 100, 0, &fd), 1); /* local: its own file */
	int r;
	CHECK_EQ(run_request(1 << 16 | 3, &r), 1);
	CHECK_EQ(r, -EINPROGRESS);
	CHECK_EQ(nsent, 1u);
	CHECK_EQ(sent[0].m.recording, recs[1].id);
	CHECK_EQ(sent[0].m.offset, 3u * 65536);
	CHECK_EQ(sent[0].m.length, 65536u);
	CHECK_STR_EQ(sent[0].m.key, recs[1].path);
	CHECK_EQ(sent[0].m.expect.size, 16);
	CHECK_EQ(sent[0].m.expect.bytes[5], object_byte(recs[1].id, 3 * 65536 + 5));
	answer(0, 0);
	CHECK_EQ(out[3].runs, 1u); /* run again, served from the cache file */
	CHECK_EQ(out[3].err, 0);
	CHECK_EQ(run_request(1 << 16 | 3, &r), 0); /* now a hit: not parked, nothing asked */
	CHECK_EQ(r, 0);
	CHECK_EQ(nsent, 1u);
	/* A failed fetch answers the request with its reason. */
	CHECK_EQ(run_request(1 << 16 | 4, &r), 1);
	answer(1, ETIMEDOUT);
	CHECK_EQ(out[4].errors, 1u);
	CHECK_EQ(out[4].err, ETIMEDOUT);
	CHECK_STR_CONTAINS(out[4].why, "GET timed out");
	/* tierd gone: the request waiting is answered, a new one refused at once. */
	CHECK_EQ(run_request(1 << 16 | 5, &r), 1);
	rec_tier_cache_link(0);
	CHECK_EQ(out[5].errors, 1u);
	CHECK_EQ(run_request(1 << 16 | 6, &r), 0);
	CHECK_EQ(r, -ENOTCONN);
	rec_tier_cache_link(1);
	/* Nor does a send that fails leave the request parked. */
	send_fails = 1;
	CHECK_EQ(run_request(1 << 16 | 7, &r), 1);
	CHECK_EQ(out[7].errors, 1u);
	CHECK_EQ(out[7].err, ENOTCONN);
	send_fails = 0;
}

/* REC_TIER_PARKED_MAX requests wait on one fetch; one more is refused busy at once. */
static void test_parked_ceiling(void)
{
	open_cache(64 * 1024 * 1024);
	int r;
	for (unsigned i = 0; i < REC_TIER_PARKED_MAX; i++) {
		kp_Envelope env = request(2 << 16 | 9);
		env.msg.media_open.id = 2u << 16 | (i + 0x10) << 8 | 9;
		rec_tier_cache_begin(0);
		CHECK_EQ(handle(&env), -EINPROGRESS);
		CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again), 1);
	}
	CHECK_EQ(nsent, 1u); /* one fetch for all of them */
	CHECK_EQ(run_request(2 << 16 | 9, &r), 1);
	CHECK_EQ(out[9].errors, 1u); /* (every one of them reports in slot 9) */
	CHECK_EQ(out[9].err, EBUSY);
	answer(0, 0);
	CHECK_EQ(out[9].runs, (unsigned)REC_TIER_PARKED_MAX); /* each run again, served */
	CHECK_EQ(out[9].errors, 1u);
}

/* REC_TIER_FETCHES_MAX fetches at once; one more is -EBUSY. */
static void test_fetch_ceiling(void)
{
	open_cache(512 * 1024 * 1024);
	int r;
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX; i++)
		CHECK_EQ(run_request((10 + i) << 16 | 1, &r), 1);
	CHECK_EQ(nsent, (unsigned)REC_TIER_FETCHES_MAX);
	CHECK_EQ(run_request(30 << 16 | 1, &r), 0);
	CHECK_EQ(r, -EBUSY);
	answer(0, 0);
	CHECK_EQ(run_request(30 << 16 | 1, &r), 1); /* room again */
}

/* One request asks for REC_TIER_REQ_FETCHES ranges; run again, it asks for the rest. */
static void test_request_ceiling(void)
{
	open_cache(512 * 1024 * 1024);
	kp_Envelope env = request(3 << 16 | 2);
	rec_tier_cache_begin(0);
	int fd = -1;
	/* Separate ranges (every other 64 KiB): no merging. */
	for (unsigned i = 0; i < REC_TIER_REQ_FETCHES + 1; i++)
		CHECK_EQ(rec_tier_cache_need(&recs[3], (uint64_t)(2 * i + 1) * 65536, 65536, 0, &fd), -EINPROGRESS);
	CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again), 1);
	CHECK_EQ(nsent, (unsigned)REC_TIER_REQ_FETCHES);
	/* Adjacent pieces merge into one range. */
	nsent = 0;
	open_cache(512 * 1024 * 1024);
	rec_tier_cache_begin(0);
	for (unsigned i = 0; i < 10; i++)
		CHECK_EQ(rec_tier_cache_need(&recs[4], (uint64_t)(i + 1) * 65536, 65536, 0, &fd), -EINPROGRESS);
	CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again), 1);
	CHECK_EQ(nsent, 1u);
	CHECK_EQ(sent[0].m.offset, 65536u);
	CHECK_EQ(sent[0].m.length, 10u * 65536);
	/* A run past REC_TIER_ATTEMPTS that still misses gives up: cache_full. */
	rec_tier_cache_begin(REC_TIER_ATTEMPTS);
	CHECK_EQ(rec_tier_cache_need(&recs[4], 20 * 65536, 65536, 0, &fd), -ENOSPC);
	rec_tier_cache_cancel();
	CHECK_STR_EQ(rec_tier_error_code(-ENOSPC), "cache_full");
}

/* The cache's bytes: the recording read least recently leaves for room; more than the
 * whole cache is -ENOSPC. */
static void test_size_ceiling(void)
{
	open_cache(3 * 65536);
	int r;
	CHECK_EQ(run_request(5 << 16 | 1, &r), 1);
	answer(0, 0);
	CHECK_EQ(run_request(6 << 16 | 1, &r), 1);
	answer(1, 0);
	CHECK_EQ(run_request(5 << 16 | 1, &r), 0); /* 5 read again: 6 is now the oldest */
	CHECK_EQ(r, 0);
	CHECK_EQ(run_request(7 << 16 | 1, &r), 1); /* the third of 3 x 64 KiB: fits */
	answer(2, 0);
	CHECK_EQ(run_request(8 << 16 | 1, &r), 1); /* one past: 6 leaves */
	answer(3, 0);
	CHECK_EQ(run_request(5 << 16 | 1, &r), 0);
	CHECK_EQ(r, 0);
	CHECK_EQ(run_request(6 << 16 | 1, &r), 1); /* fetched again */
	CHECK_EQ(r, -EINPROGRESS);
	rec_tier_cache_link(0);
	rec_tier_cache_link(1);
	int fd = -1;
	rec_tier_cache_begin(0);
	CHECK_EQ(rec_tier_cache_need(&recs[9], 65536, 4 * 65536, 0, &fd), -ENOSPC);
	rec_tier_cache_cancel();
}

/* REC_TIER_RANGES_MAX separate ranges of one recording; one more drops it from the cache
 * (it starts anew) and answers that request with an error. */
static void test_ranges_ceiling(void)
{
	open_cache(512 * 1024 * 1024);
	struct cat_recording big = recs[10];
	big.bytes = 2 * (REC_TIER_RANGES_MAX + 1) * 16;
	int fd = -1;
	for (unsigned i = 0; i <= REC_TIER_RANGES_MAX; i++) {
		kp_Envelope env = request(10u << 16 | 20);
		rec_tier_cache_begin(0);
		CHECK_EQ(rec_tier_cache_need(&big, (uint64_t)i * 32, 16, 0, &fd), -EINPROGRESS);
		CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again_record), 1);
		nsent = 0;
		answer(0, 0);
		if (i < REC_TIER_RANGES_MAX) {
			CHECK_EQ(out[20].errors, 0u);
			CHECK_EQ(out[20].runs, 1u);
		} else {
			CHECK_EQ(out[20].errors, 1u);
			CHECK_EQ(out[20].err, E2BIG);
		}
		out[20] = (struct outcome){0};
	}
}

/* REC_TIER_CACHED_MAX recordings in the cache; one more and the least recently read
 * leaves. */
static void test_count_ceiling(void)
{
	open_cache(1024ull * 1024 * 1024);
	int r;
	for (unsigned i = 0; i <= REC_TIER_CACHED_MAX; i++) {
		nsent = 0;
		CHECK_EQ(run_request((i + 1) << 16 | 1, &r), 1);
		answer(0, 0);
	}
	CHECK_EQ(run_request(2 << 16 | 1, &r), 0); /* the second is still there */
	CHECK_EQ(r, 0);
	nsent = 0;
	CHECK_EQ(run_request(1 << 16 | 1, &r), 1); /* the first left for the last */
	CHECK_EQ(r, -EINPROGRESS);
	CHECK_EQ(nsent, 1u);
}

/* An event JPEG: fetched whole, from offset 0, beginning with SOI and checked against its
 * sidecar's ETag by tierd; then served from the cache. A JPEG larger than the whole cache
 * is -ENOSPC; an empty one -EBADMSG. */
static void test_event_jpeg(void)
{
	open_cache(1024 * 1024);
	struct cat_tier side = {.size = 5000, .state = CAT_TIER_REMOTE};
	snprintf(side.key, sizeof side.key, "events/ab/ev-1-1796280364985.jpg");
	snprintf(side.etag, sizeof side.etag, "0123456789abcdef0123456789abcdef");
	uint64_t id = REC_TIER_EVENT_ID(42);
	CHECK(REC_TIER_IS_EVENT(id));
	CHECK(!REC_TIER_IS_EVENT(recs[1].id));
	int fd = -1;
	rec_tier_cache_begin(0);
	CHECK_EQ(rec_tier_cache_need_jpeg(id, &side, &fd), -EINPROGRESS);
	kp_Envelope env = request(9);
	CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again_record), 1);
	CHECK_EQ(nsent, 1u);
	CHECK_EQ(sent[0].m.recording, id);
	CHECK_EQ(sent[0].m.offset, 0u);
	CHECK_EQ(sent[0].m.length, 5000u);
	CHECK_STR_EQ(sent[0].m.key, side.key);
	CHECK_STR_EQ(sent[0].m.etag, side.etag);
	CHECK_EQ(sent[0].m.expect.size, 3);
	CHECK_EQ(sent[0].m.expect.bytes[0], 0xff);
	CHECK_EQ(sent[0].m.expect.bytes[1], 0xd8);
	answer(0, 0);
	CHECK_EQ(out[9].runs, 1u);
	rec_tier_cache_begin(0);
	CHECK_EQ(rec_tier_cache_need_jpeg(id, &side, &fd), 0);
	CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again_record), 0);
	uint8_t b[5000];
	CHECK_EQ(pread(fd, b, sizeof b, 0), (ssize_t)sizeof b);
	for (unsigned k = 0; k < sizeof b; k++)
		CHECK_EQ(b[k], object_byte(id, k));
	close(fd);
	side.size = 2 * 1024 * 1024;
	rec_tier_cache_begin(0);
	CHECK_EQ(rec_tier_cache_need_jpeg(REC_TIER_EVENT_ID(43), &side, &fd), -ENOSPC);
	side.size = 0;
	CHECK_EQ(rec_tier_cache_need_jpeg(REC_TIER_EVENT_ID(44), &side, &fd), -EBADMSG);
	CHECK_EQ(rec_tier_cache_end(kp_Peer_PEER_WEBD, &env, again_record), 0);
	CHECK_EQ(nsent, 1u);
}

int main(void)
{
	char dir[] = "/tmp/kp-tier-cache-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dirfd_ >= 0);
	uv_loop_init(&loop);
	for (unsigned i = 0; i < sizeof recs / sizeof recs[0]; i++)
		recs[i] = remote_rec(100 + i);
	RUN(test_fetch_and_serve);
	RUN(test_parked_ceiling);
	RUN(test_fetch_ceiling);
	RUN(test_request_ceiling);
	RUN(test_size_ceiling);
	RUN(test_ranges_ceiling);
	RUN(test_count_ceiling);
	RUN(test_event_jpeg);
	rec_tier_cache_close();
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	return TEST_EXIT();
}
