/* The thumbnail cache (recorderd/picture_cache.c): bounded by bytes whatever is put,
 * least recently used out first, a get refreshes an entry, revisions are distinct
 * entries, an event's and a keyframe's pictures never meet, a picture larger than the
 * cap is not kept, a sweep drops exactly what its test refuses. */
#include <stdio.h>
#include <string.h>

#include "picture_cache.h"
#include "test.h"

static uint8_t pic[20000];

static const struct rec_pkey *ev(const char *id, uint32_t revision)
{
	static struct rec_pkey k[4];
	static unsigned i;
	struct rec_pkey *p = &k[i++ % 4];
	*p = (struct rec_pkey){.revision = revision};
	snprintf(p->id, sizeof p->id, "%s", id);
	return p;
}

static const struct rec_pkey *kf(uint32_t stream_id, uint64_t recording_id, uint32_t seq)
{
	static struct rec_pkey k;
	k = (struct rec_pkey){.stream_id = stream_id, .recording_id = recording_id, .seq = seq};
	return &k;
}

static void test_bound(void)
{
	struct rec_pcache c = {.cap = 100000};
	char id[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(id, sizeof id, "ev-%d", i);
		rec_pcache_put(&c, ev(id, 1), pic, 7000 + (size_t)(i % 5) * 1000);
		CHECK(c.bytes <= c.cap);
	}
	CHECK(c.entries >= 10 && c.entries <= 14);
	CHECK_EQ(c.evicted, 1000 - c.entries);
	size_t len;
	CHECK(rec_pcache_get(&c, ev("ev-999", 1), &len) != NULL);
	CHECK(rec_pcache_get(&c, ev("ev-0", 1), &len) == NULL);
	rec_pcache_clear(&c);
	CHECK_EQ(c.bytes, 0);
	CHECK_EQ(c.entries, 0);
}

static void test_lru(void)
{
	struct rec_pcache c = {.cap = 30000};
	size_t len = 0;
	memset(pic, 0xab, sizeof pic);
	rec_pcache_put(&c, ev("a", 1), pic, 10000);
	rec_pcache_put(&c, ev("b", 1), pic, 10000);
	rec_pcache_put(&c, ev("c", 1), pic, 10000);
	CHECK(rec_pcache_get(&c, ev("a", 1), &len) != NULL); /* a is now the most recent */
	CHECK_EQ(len, 10000);
	rec_pcache_put(&c, ev("d", 1), pic, 10000); /* b goes */
	CHECK(rec_pcache_get(&c, ev("b", 1), &len) == NULL);
	CHECK(rec_pcache_get(&c, ev("a", 1), &len) != NULL);
	CHECK(rec_pcache_get(&c, ev("c", 1), &len) != NULL);
	CHECK(rec_pcache_get(&c, ev("a", 2), &len) == NULL); /* another revision */
	rec_pcache_put(&c, ev("a", 2), pic, 10000);
	CHECK(rec_pcache_get(&c, ev("a", 2), &len) != NULL);
	rec_pcache_put(&c, ev("big", 1), pic, 20000);
	CHECK(c.bytes <= c.cap);
	struct rec_pcache tiny = {.cap = 100};
	rec_pcache_put(&tiny, ev("x", 1), pic, 101);
	CHECK_EQ(tiny.entries, 0);
	rec_pcache_clear(&c);
}

static int keep_odd_recordings(void *arg, const struct rec_pkey *k)
{
	(void)arg;
	return k->id[0] || k->recording_id % 2;
}

static void test_keyframes_and_sweep(void)
{
	struct rec_pcache c = {.cap = 100000};
	size_t len;
	for (uint32_t i = 0; i < 8; i++)
		rec_pcache_put(&c, kf(5, i, 3), pic, 1000);
	rec_pcache_put(&c, ev("e", 0), pic, 1000);
	CHECK_EQ(c.entries, 9);
	CHECK(rec_pcache_get(&c, kf(5, 2, 3), &len) != NULL);
	CHECK(rec_pcache_get(&c, kf(5, 2, 4), &len) == NULL); /* another fragment */
	CHECK(rec_pcache_get(&c, kf(6, 2, 3), &len) == NULL); /* another stream */
	CHECK_EQ(rec_pcache_sweep(&c, keep_odd_recordings, NULL), 4);
	CHECK_EQ(c.entries, 5);
	CHECK_EQ(c.bytes, 5000);
	CHECK_EQ(c.purged, 4);
	CHECK(rec_pcache_get(&c, kf(5, 2, 3), &len) == NULL);
	CHECK(rec_pcache_get(&c, kf(5, 3, 3), &len) != NULL);
	CHECK(rec_pcache_get(&c, ev("e", 0), &len) != NULL);
	rec_pcache_clear(&c);
}

int main(void)
{
	RUN(test_bound);
	RUN(test_lru);
	RUN(test_keyframes_and_sweep);
	return TEST_EXIT();
}
