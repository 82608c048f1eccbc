/* A hub's merges (webd/hub_merge.c): camera lists renamed SITE/CAMERA with names that
 * are not camera names refused; coverage checked against the range asked (buckets,
 * ranges, the total's overflow); the merged cursor at and one past its ceilings; and a
 * search paged to its end over three simulated sites (the site side as
 * docs/queries.md describes EventSearch: newest first, limit, an opaque cursor) gives
 * every event exactly once, newest first, whatever the page size. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub_merge.h"
#include "test.h"

static char out[1 << 20];

static int parse(struct hub_doc *h, const char *s)
{
	return hub_doc_parse(h, s, strlen(s));
}

static void test_cameras(void)
{
	struct hub_doc d;
	struct json_w w;
	unsigned n = 0;
	CHECK_EQ(parse(&d, "{\"cameras\":[{\"name\":\"front\",\"state\":\"streaming\",\"x\":\"</script><b>\","
			   "\"streams\":[{\"name\":\"main\",\"frames\":12}]},{\"name\":\"back\",\"site\":\"evil\"}]}"),
		 0);
	jw_init(&w, out, sizeof out);
	jw_arr(&w);
	CHECK_EQ(hub_merge_cameras(&d.d, "east", &w, &n), 0);
	jw_arr_end(&w);
	size_t len;
	CHECK_EQ(jw_finish(&w, &len), 0);
	CHECK_EQ(n, 2);
	CHECK_STR_CONTAINS(out, "{\"name\":\"east/front\",\"state\":\"streaming\"");
	CHECK_STR_CONTAINS(out, "\"site\":\"east\",\"site_camera\":\"front\"}");
	CHECK_STR_CONTAINS(out, "{\"name\":\"east/back\",\"site\":\"east\",\"site_camera\":\"back\"}");
	CHECK(!strstr(out, "evil")); /* a site's own "site" member is replaced */
	hub_doc_free(&d);

	/* A name that is not a camera name: the whole answer is refused. */
	static const char *const bad[] = {
	    "{\"cameras\":[{\"name\":\"<img src=x onerror=alert(1)>\"}]}",
	    "{\"cameras\":[{\"name\":\"a/b\"}]}",
	    "{\"cameras\":[{\"name\":\"\"}]}",
	    "{\"cameras\":[{\"state\":\"x\"}]}",
	    "{\"cameras\":{}}",
	    "[]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_EQ(parse(&d, bad[i]), 0);
		jw_init(&w, out, sizeof out);
		jw_arr(&w);
		CHECK_EQ(hub_merge_cameras(&d.d, "east", &w, &n), -EINVAL);
		hub_doc_free(&d);
	}
	/* HUB_CAMERAS_MAX cameras and one past. */
	static char big[64 * 1024];
	for (int k = 0; k < 2; k++) {
		size_t o = (size_t)snprintf(big, sizeof big, "{\"cameras\":[");
		for (int i = 0; i < HUB_CAMERAS_MAX + k; i++)
			o += (size_t)snprintf(big + o, sizeof big - o, "%s{\"name\":\"c%d\"}", i ? "," : "", i);
		snprintf(big + o, sizeof big - o, "]}");
		CHECK_EQ(parse(&d, big), 0);
		jw_init(&w, out, sizeof out);
		jw_arr(&w);
		CHECK_EQ(hub_merge_cameras(&d.d, "east", &w, &n), k ? -EINVAL : 0);
		hub_doc_free(&d);
	}
	char site[KP_SITE_NAME_MAX + 1], cam[KP_CAMERA_NAME_MAX + 1];
	CHECK_EQ(hub_split_camera("east/front", site, sizeof site, cam, sizeof cam), 0);
	CHECK_STR_EQ(site, "east");
	CHECK_STR_EQ(cam, "front");
	CHECK_EQ(hub_split_camera("front", site, sizeof site, cam, sizeof cam), -EINVAL);
	CHECK_EQ(hub_split_camera("a/b/c", site, sizeof site, cam, sizeof cam), -EINVAL);
	CHECK_EQ(hub_split_camera("/b", site, sizeof site, cam, sizeof cam), -EINVAL);
}

static void test_coverage(void)
{
	/* [7200000, 18000000) in 3600000 buckets: 2h..5h -> 3 buckets. */
	const int64_t from = 7200000, to = 18000000, b = 3600000;
	static const char good[] =
	    "{\"from_ms\":7200000,\"to_ms\":18000000,\"bucket_ms\":3600000,\"total_cameras\":1,\"cameras\":[{\"name\":"
	    "\"c\",\"streams\":[{\"name\":\"main\",\"exact_from_ms\":null,\"ranges\":[[7200000,7300000],[8000000,"
	    "18000000]],\"ranges_truncated\":false,\"buckets\":[100000,3200000,3600000]}]}]}";
	struct hub_doc d;
	struct json_w w;
	uint64_t total = 5;
	unsigned n;
	CHECK_EQ(parse(&d, good), 0);
	jw_init(&w, out, sizeof out);
	jw_arr(&w);
	CHECK_EQ(hub_merge_coverage(&d.d, "west", from, to, b, &w, &total, &n), 0);
	CHECK_EQ(total, 6);
	CHECK_STR_CONTAINS(out, "\"name\":\"west/c\"");
	CHECK_STR_CONTAINS(out, "[[7200000,7300000],[8000000,18000000]]");
	/* Not for the range asked. */
	CHECK_EQ(hub_merge_coverage(&d.d, "west", from, to + 1, b, &w, &total, &n), -EINVAL);
	CHECK_EQ(hub_merge_coverage(&d.d, "west", from, to, b * 2, &w, &total, &n), -EINVAL);
	/* The total overflows 64 bits: refused, left as it was. */
	total = UINT64_MAX;
	CHECK_EQ(hub_merge_coverage(&d.d, "west", from, to, b, &w, &total, &n), -ERANGE);
	CHECK(total == UINT64_MAX);
	hub_doc_free(&d);
	static const char *const bad[] = {
	    /* a range past to */
	    "[[7200000,18000001]],\"buckets\":[0,0,0]",
	    /* a range before from */
	    "[[7199999,7300000]],\"buckets\":[0,0,0]",
	    /* empty, reversed, overlapping */
	    "[[8000000,8000000]],\"buckets\":[0,0,0]",
	    "[[9000000,8000000]],\"buckets\":[0,0,0]",
	    "[[8000000,9000000],[8500000,9500000]],\"buckets\":[0,0,0]",
	    /* one bucket too many or too few, one over bucket_ms, negative */
	    "[],\"buckets\":[0,0,0,0]",
	    "[],\"buckets\":[0,0]",
	    "[],\"buckets\":[0,3600001,0]",
	    "[],\"buckets\":[0,-1,0]",
	    /* a time past 2^63 */
	    "[[7200000,9223372036854775808]],\"buckets\":[0,0,0]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[1024];
		snprintf(text, sizeof text,
			 "{\"from_ms\":7200000,\"to_ms\":18000000,\"bucket_ms\":3600000,\"total_cameras\":1,"
			 "\"cameras\":[{\"name\":\"c\",\"streams\":[{\"name\":\"main\",\"ranges\":%s}]}]}",
			 bad[i]);
		int pr = parse(&d, text);
		if (pr < 0)
			continue; /* not even JSON the reader takes */
		total = 0;
		jw_init(&w, out, sizeof out);
		jw_arr(&w);
		CHECK_EQ(hub_merge_coverage(&d.d, "west", from, to, b, &w, &total, &n), -EINVAL);
		hub_doc_free(&d);
	}
}

static void test_cursor(void)
{
	struct hub_cursor c;
	char buf[HUB_CURSOR_MAX + 1];
	CHECK_EQ(hub_cursor_parse("h1", &c), 0);
	CHECK_EQ(c.n, 0);
	CHECK_EQ(hub_cursor_parse("h1~east:x~west:12:c1.0001933a7b1c2d40.0000000000000007~north:0:", &c), 0);
	CHECK_EQ(c.n, 3);
	CHECK(c.p[0].done);
	CHECK_EQ(c.p[1].skip, 12);
	CHECK_STR_EQ(c.p[1].cursor, "c1.0001933a7b1c2d40.0000000000000007");
	CHECK_STR_EQ(c.p[2].cursor, "");
	CHECK(hub_cursor_format(&c, buf, sizeof buf) > 0);
	CHECK_STR_EQ(buf, "h1~east:x~west:12:c1.0001933a7b1c2d40.0000000000000007~north:0:");
	/* Skip: at most HUB_EVENTS_LIMIT - 1. */
	CHECK_EQ(hub_cursor_parse("h1~a:499:", &c), 0);
	CHECK_EQ(hub_cursor_parse("h1~a:500:", &c), -EINVAL);
	CHECK_EQ(hub_cursor_parse("h1~a:1000:", &c), -EINVAL);
	CHECK_EQ(hub_cursor_parse("h1~a:01:", &c), -EINVAL);
	/* A site's cursor of HUB_SITE_CURSOR_MAX characters, and one past. */
	char text[256];
	char cur[HUB_SITE_CURSOR_MAX + 2];
	memset(cur, 'c', sizeof cur);
	cur[HUB_SITE_CURSOR_MAX] = '\0';
	snprintf(text, sizeof text, "h1~a:0:%s", cur);
	CHECK_EQ(hub_cursor_parse(text, &c), 0);
	cur[HUB_SITE_CURSOR_MAX] = 'c';
	cur[HUB_SITE_CURSOR_MAX + 1] = '\0';
	snprintf(text, sizeof text, "h1~a:0:%s", cur);
	CHECK_EQ(hub_cursor_parse(text, &c), -EINVAL);
	/* KP_MAX_SITES places, and one past. */
	size_t o = (size_t)snprintf(text, sizeof text, "h1");
	for (int i = 0; i < KP_MAX_SITES; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "~s%d:x", i);
	CHECK_EQ(hub_cursor_parse(text, &c), 0);
	snprintf(text + o, sizeof text - o, "~s%d:x", KP_MAX_SITES);
	CHECK_EQ(hub_cursor_parse(text, &c), -EINVAL);
	static const char *const bad[] = {"",
					  "h2",
					  "h1~",
					  "h1~a",
					  "h1~a:",
					  "h1~a:y",
					  "h1~a:1",
					  "h1~a:x~a:x",
					  "h1~a:1:bad cursor",
					  "h1~a b:x",
					  "h1~a:1:<script>",
					  "h1~:x",
					  "h1a:x"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_EQ(hub_cursor_parse(bad[i], &c), -EINVAL);
}

/* A simulated site: events with these start times (newest first), each id "SITE-i". */
struct sim {
	const char *name;
	const int64_t *start;
	unsigned n;
};

/* Its answer to limit and cursor ("": first page; else "p" + index), as webd's search. */
static void sim_page(const struct sim *s, const char *cursor, unsigned limit, char *buf, size_t cap)
{
	unsigned at = cursor[0] ? (unsigned)atoi(cursor + 1) : 0;
	size_t o = (size_t)snprintf(buf, cap, "{\"events\":[");
	unsigned i = at;
	for (; i < s->n && i < at + limit; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s{\"id\":\"%s-%u\",\"camera\":\"cam\",\"start_ms\":%lld}",
				      i > at ? "," : "", s->name, i, (long long)s->start[i]);
	if (i < s->n)
		snprintf(buf + o, cap - o, "],\"next_cursor\":\"p%u\"}", i);
	else
		snprintf(buf + o, cap - o, "],\"next_cursor\":null}");
}

static void search_all(const struct sim *sims, unsigned ns, unsigned limit, unsigned total)
{
	struct hub_cursor cur = {0};
	bool first = true, more = true;
	int64_t last = INT64_MAX;
	unsigned got = 0, pages = 0;
	static char seen[3][64];
	memset(seen, 0, sizeof seen);
	while (more && pages < 1000) {
		pages++;
		static char page[KP_MAX_SITES][64 * 1024];
		struct hub_doc docs[KP_MAX_SITES];
		struct hub_page in[KP_MAX_SITES];
		struct hub_place places[KP_MAX_SITES];
		for (unsigned i = 0; i < ns; i++) {
			struct hub_place *p = hub_cursor_place(&cur, sims[i].name, first);
			places[i] = *p;
			in[i] = (struct hub_page){.site = sims[i].name, .in = &places[i], .doc = NULL};
			if (p->done)
				continue;
			unsigned want = p->skip + limit > HUB_EVENTS_LIMIT ? HUB_EVENTS_LIMIT : p->skip + limit;
			sim_page(&sims[i], p->cursor, want, page[i], sizeof page[i]);
			CHECK_EQ(parse(&docs[i], page[i]), 0);
			in[i].doc = &docs[i].d;
		}
		first = false;
		struct json_w w;
		jw_init(&w, out, sizeof out);
		jw_arr(&w);
		struct hub_cursor next;
		unsigned written;
		CHECK_EQ(hub_merge_events(in, ns, limit, &w, &next, &more, &written), 0);
		jw_arr_end(&w);
		size_t len;
		CHECK_EQ(jw_finish(&w, &len), 0);
		CHECK(written <= limit);
		struct hub_doc res;
		CHECK_EQ(parse(&res, out), 0);
		for (unsigned k = 0; k < res.d.toks[0].size; k++) {
			int o = json_arr_get(&res.d, 0, k);
			int64_t st;
			char id[64], site[40], cam[80];
			json_get_int(&res.d, json_obj_get(&res.d, o, "start_ms"), &st);
			json_get_str(&res.d, json_obj_get(&res.d, o, "id"), id, sizeof id);
			json_get_str(&res.d, json_obj_get(&res.d, o, "site"), site, sizeof site);
			json_get_str(&res.d, json_obj_get(&res.d, o, "camera"), cam, sizeof cam);
			CHECK(st <= last);
			last = st;
			char want[80];
			snprintf(want, sizeof want, "%s/cam", site);
			CHECK_STR_EQ(cam, want);
			unsigned si = 0, idx = 0;
			for (; si < ns && strncmp(id, sims[si].name, strlen(sims[si].name)); si++)
				;
			CHECK(si < ns);
			idx = (unsigned)atoi(id + strlen(sims[si].name) + 1);
			CHECK(si < ns && idx < 64 && !seen[si][idx]);
			if (si < ns && idx < 64)
				seen[si][idx] = 1;
			got++;
		}
		hub_doc_free(&res);
		for (unsigned i = 0; i < ns; i++)
			if (in[i].doc)
				hub_doc_free(&docs[i]);
		/* The cursor goes through its text, as a browser carries it. */
		char text[HUB_CURSOR_MAX + 1];
		CHECK(hub_cursor_format(&next, text, sizeof text) > 0);
		CHECK_EQ(hub_cursor_parse(text, &cur), 0);
	}
	CHECK_EQ(got, total);
	CHECK(!more);
}

static void test_events(void)
{
	static const int64_t a[] = {100, 90, 90, 50, 40, 30, 20, 10, 5, 1};
	static const int64_t b[] = {95, 90, 60, 59, 58, 57, 3};
	static const int64_t c[] = {1000};
	const struct sim sims[] = {{"east", a, 10}, {"west", b, 7}, {"north", c, 1}};
	for (unsigned limit = 1; limit <= 20; limit++)
		search_all(sims, 3, limit, 18);
	/* A site whose page is malformed (older event first) is refused. */
	struct hub_doc d;
	CHECK_EQ(parse(&d, "{\"events\":[{\"camera\":\"c\",\"start_ms\":1},{\"camera\":\"c\",\"start_ms\":2}],"
			   "\"next_cursor\":null}"),
		 0);
	CHECK_EQ(hub_check_events(&d.d, 0), -EINVAL);
	hub_doc_free(&d);
	CHECK_EQ(parse(&d, "{\"events\":[],\"next_cursor\":\"has space\"}"), 0);
	CHECK_EQ(hub_check_events(&d.d, 0), -EINVAL);
	hub_doc_free(&d);
	CHECK_EQ(parse(&d, "{\"events\":[{\"camera\":\"<b>\",\"start_ms\":1}],\"next_cursor\":null}"), 0);
	CHECK_EQ(hub_check_events(&d.d, 0), -EINVAL);
	hub_doc_free(&d);
}

int main(void)
{
	RUN(test_cameras);
	RUN(test_coverage);
	RUN(test_cursor);
	RUN(test_events);
	return TEST_EXIT();
}
