/* The event thumbnail cache (recorderd/picture_cache.c): bounded by bytes whatever is
 * put, least recently used out first, a get refreshes an entry, revisions are distinct
 * entries, a picture larger than the cap is not kept. */
#include <string.h>

#include "picture_cache.h"
#include "test.h"

static uint8_t pic[20000];

static void test_bound(void)
{
	struct rec_pcache c = {.cap = 100000};
	char id[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(id, sizeof id, "ev-%d", i);
		rec_pcache_put(&c, id, 1, pic, 7000 + (size_t)(i % 5) * 1000);
		CHECK(c.bytes <= c.cap);
	}
	CHECK(c.entries >= 10 && c.entries <= 14);
	CHECK_EQ(c.evicted, 1000 - c.entries);
	size_t len;
	CHECK(rec_pcache_get(&c, "ev-999", 1, &len) != NULL);
	CHECK(rec_pcache_get(&c, "ev-0", 1, &len) == NULL);
	rec_pcache_clear(&c);
	CHECK_EQ(c.bytes, 0);
	CHECK_EQ(c.entries, 0);
}

static void test_lru(void)
{
	struct rec_pcache c = {.cap = 30000};
	size_t len = 0;
	memset(pic, 0xab, sizeof pic);
	rec_pcache_put(&c, "a", 1, pic, 10000);
	rec_pcache_put(&c, "b", 1, pic, 10000);
	rec_pcache_put(&c, "c", 1, pic, 10000);
	CHECK(rec_pcache_get(&c, "a", 1, &len) != NULL); /* a is now the most recent */
	CHECK_EQ(len, 10000);
	rec_pcache_put(&c, "d", 1, pic, 10000); /* b goes */
	CHECK(rec_pcache_get(&c, "b", 1, &len) == NULL);
	CHECK(rec_pcache_get(&c, "a", 1, &len) != NULL);
	CHECK(rec_pcache_get(&c, "c", 1, &len) != NULL);
	CHECK(rec_pcache_get(&c, "a", 2, &len) == NULL); /* another revision */
	rec_pcache_put(&c, "a", 2, pic, 10000);
	CHECK(rec_pcache_get(&c, "a", 2, &len) != NULL);
	rec_pcache_put(&c, "big", 1, pic, 20000);
	CHECK(c.bytes <= c.cap);
	struct rec_pcache tiny = {.cap = 100};
	rec_pcache_put(&tiny, "x", 1, pic, 101);
	CHECK_EQ(tiny.entries, 0);
	rec_pcache_clear(&c);
}

int main(void)
{
	RUN(test_bound);
	RUN(test_lru);
	return TEST_EXIT();
}
