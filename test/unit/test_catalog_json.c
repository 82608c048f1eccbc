/* recorderd's answers as webd renders them (common/catalog_records.c, catalog_json.c):
 * records built as recorderd builds them, cut into pieces between records, rendered a
 * piece at a time into a bounded buffer that is emptied as it fills, compared byte for
 * byte with the JSON of docs/queries.md; records that do not belong to the answer, an
 * answer cut short, and a record that does not read are refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_json.h"
#include "catalog_records.h"
#include "json.h"
#include "test.h"

#define OUT_MAX (4u << 20)

static struct catrec_buf B;
static kp_CatalogRecord Rec;

static void add(const kp_CatalogRecord *r)
{
	CHECK_EQ(catrec_add(&B, r), 0);
}

struct sink {
	struct catj c;
	char *out;
	size_t len;
	unsigned drains;
};

static void drain(struct sink *s)
{
	size_t n;
	const char *t = catj_text(&s->c, &n);
	CHECK(s->len + n < OUT_MAX);
	memcpy(s->out + s->len, t, n);
	s->len += n;
	s->out[s->len] = 0;
	catj_take(&s->c);
	s->drains++;
}

static int one(void *arg, const kp_CatalogRecord *rec)
{
	struct sink *s = arg;
	if (catj_full(&s->c))
		drain(s);
	return catj_record(&s->c, rec);
}

/* As webd's relay does: pieces of at most piece bytes, each rendered on arrival into a
 * buffer of CATJ_BUF_MIN bytes. The JSON in *out (malloc'ed), or a negative errno. */
static int render_pieces(enum catj_kind kind, size_t piece, char **out, unsigned *drains)
{
	static char buf[CATJ_BUF_MIN];
	struct sink s = {.out = malloc(OUT_MAX)};
	CHECK(s.out != NULL);
	catj_begin(&s.c, kind, buf, sizeof buf);
	int r = 0;
	for (size_t off = 0; off < B.len && r == 0;) {
		size_t n = catrec_piece(B.p, B.len, off, piece);
		CHECK(n > 0 && n <= B.len - off);
		/* at most piece bytes, unless one record alone is larger (piece 0: one record) */
		CHECK(n <= piece || n == catrec_piece(B.p, B.len, off, 0));
		r = catrec_each(B.p + off, n, &Rec, one, &s);
		off += n;
	}
	if (r == 0)
		r = catj_end(&s.c);
	if (r == 0)
		drain(&s);
	*out = s.out;
	if (drains)
		*drains = s.drains;
	return r;
}

/* The JSON of the records in B rendered both ways must be expect (NULL: only equal). */
static void check_json(enum catj_kind kind, const char *expect)
{
	char *one_shot = malloc(OUT_MAX), *pieces;
	CHECK(one_shot != NULL);
	long n = catj_render(kind, B.p, B.len, one_shot, OUT_MAX);
	CHECK(n > 0);
	CHECK_EQ(render_pieces(kind, 64, &pieces, NULL), 0);
	CHECK(!strcmp(one_shot, pieces));
	if (expect && strcmp(one_shot, expect))
		fprintf(stderr, "got      %s\nexpected %s\n", one_shot, expect);
	CHECK(!expect || !strcmp(one_shot, expect));
	struct json_tok toks[256];
	struct json_doc d;
	if (n < 4096)
		CHECK_EQ(json_parse(&d, one_shot, (size_t)n, toks, 256), 0);
	free(one_shot);
	free(pieces);
}

static void coverage_head(uint32_t cameras)
{
	kp_CatalogRecord r = {
	    .which_rec = kp_CatalogRecord_coverage_head_tag,
	    .rec.coverage_head = {.from_ms = 1000, .to_ms = 2000, .bucket_ms = 21600000, .total_cameras = cameras}};
	add(&r);
}

static void coverage_camera(const char *name)
{
	kp_CatalogRecord r = {.which_rec = kp_CatalogRecord_coverage_camera_tag};
	snprintf(r.rec.coverage_camera.name, sizeof r.rec.coverage_camera.name, "%s", name);
	add(&r);
}

static void test_coverage(void)
{
	catrec_init(&B, 1 << 20);
	coverage_head(2);
	coverage_camera("front \"door\"");
	memset(&Rec, 0, sizeof Rec);
	Rec.which_rec = kp_CatalogRecord_coverage_stream_tag;
	kp_CoverageStream *s = &Rec.rec.coverage_stream;
	s->ranges_count = 4;
	s->ranges[0] = 1000;
	s->ranges[1] = 1500;
	s->ranges[2] = 1600;
	s->ranges[3] = 2000;
	s->buckets_count = 2;
	s->buckets[0] = 500;
	s->buckets[1] = 0;
	add(&Rec);
	s->stream = 1;
	s->has_exact_from = true;
	s->exact_from_ms = 1600;
	s->ranges_count = 2;
	s->ranges[0] = 1600;
	s->ranges[1] = 2000;
	add(&Rec);
	coverage_camera("yard");
	catrec_add(&B, &Rec);
	check_json(CATJ_COVERAGE,
		   "{\"from_ms\":1000,\"to_ms\":2000,\"bucket_ms\":21600000,\"total_cameras\":2,\"cameras\":["
		   "{\"name\":\"front \\\"door\\\"\",\"streams\":["
		   "{\"name\":\"main\",\"exact_from_ms\":null,\"ranges\":[[1000,1500],[1600,2000]],"
		   "\"ranges_truncated\":false,\"buckets\":[500,0]},"
		   "{\"name\":\"sub\",\"exact_from_ms\":1600,\"ranges\":[[1600,2000]],\"ranges_truncated\":true,"
		   "\"buckets\":[500,0]}]},"
		   "{\"name\":\"yard\",\"streams\":[{\"name\":\"sub\",\"exact_from_ms\":1600,\"ranges\":[[1600,2000]],"
		   "\"ranges_truncated\":true,\"buckets\":[500,0]}]}]}");
	catrec_free(&B);

	/* No camera at all. */
	catrec_init(&B, 1 << 20);
	coverage_head(0);
	check_json(CATJ_COVERAGE, "{\"from_ms\":1000,\"to_ms\":2000,\"bucket_ms\":21600000,\"total_cameras\":0,"
				  "\"cameras\":[]}");
	catrec_free(&B);
}

static int count(void *arg, const kp_CatalogRecord *rec)
{
	(void)rec;
	(*(unsigned *)arg)++;
	return 0;
}

/* Far more JSON than the render buffer holds: it is emptied as it fills, and the pieces
 * (cut between records, at 256 KiB here, 1 MiB in recorderd) render the same text as
 * one buffer does. */
static void test_coverage_large(void)
{
	catrec_init(&B, 16 << 20);
	coverage_head(40);
	memset(&Rec, 0, sizeof Rec);
	Rec.which_rec = kp_CatalogRecord_coverage_stream_tag;
	kp_CoverageStream *s = &Rec.rec.coverage_stream;
	s->ranges_count = sizeof s->ranges / sizeof s->ranges[0];
	for (pb_size_t i = 0; i < s->ranges_count; i++)
		s->ranges[i] = 1764460800000 + i * 5000;
	s->buckets_count = sizeof s->buckets / sizeof s->buckets[0];
	for (pb_size_t i = 0; i < s->buckets_count; i++)
		s->buckets[i] = 21600000 - i;
	for (int c = 0; c < 40; c++) {
		char name[16];
		snprintf(name, sizeof name, "cam%02d", c);
		coverage_camera(name);
		s->stream = 0;
		add(&Rec);
		s->stream = 1;
		add(&Rec);
	}
	char *whole = malloc(OUT_MAX), *pieces;
	long n = catj_render(CATJ_COVERAGE, B.p, B.len, whole, OUT_MAX);
	CHECK(n > 4 * CATJ_BUF_MIN);
	unsigned drains = 0;
	CHECK_EQ(render_pieces(CATJ_COVERAGE, 1 << 18, &pieces, &drains), 0);
	CHECK(drains > 4);
	CHECK(!strcmp(whole, pieces));
	/* Each piece holds whole records, and no more than its size; together, every record. */
	unsigned records = 0, npieces = 0;
	for (size_t off = 0, k; off < B.len; off += k, npieces++) {
		k = catrec_piece(B.p, B.len, off, 1 << 18);
		CHECK(k > 0 && k <= 1 << 18);
		CHECK_EQ(catrec_each(B.p + off, k, &Rec, count, &records), 0);
	}
	CHECK_EQ(records, 1 + 40 * 3);
	CHECK(npieces > 1);
	free(whole);
	free(pieces);
	catrec_free(&B);
}

static void test_recordings(void)
{
	catrec_init(&B, 1 << 20);
	kp_CatalogRecord r = {.which_rec = kp_CatalogRecord_recording_tag,
			      .rec.recording = {.id = 17,
						.stream = 1,
						.start_ms = 1000,
						.end_ms = 2000,
						.bytes = 12345,
						.codec = kp_Codec_CODEC_H265,
						.width = 640,
						.height = 360,
						.fragments = 3,
						.open = true}};
	strcpy(r.rec.recording.camera, "front");
	add(&r);
	kp_CatalogRecord end = {.which_rec = kp_CatalogRecord_recordings_end_tag, .rec.recordings_end.truncated = true};
	add(&end);
	check_json(CATJ_RECORDINGS, "{\"recordings\":[{\"id\":17,\"camera\":\"front\",\"stream\":\"sub\","
				    "\"start_ms\":1000,\"end_ms\":2000,\"bytes\":12345,\"codec\":\"h265\","
				    "\"width\":640,\"height\":360,\"fragments\":3,\"open\":true}],\"truncated\":true}");
	catrec_free(&B);
	catrec_init(&B, 1 << 20);
	end.rec.recordings_end.truncated = false;
	add(&end);
	check_json(CATJ_RECORDINGS, "{\"recordings\":[],\"truncated\":false}");
	catrec_free(&B);
}

static void event_row(const char *id, int64_t start)
{
	memset(&Rec, 0, sizeof Rec);
	Rec.which_rec = kp_CatalogRecord_event_tag;
	kp_EventRow *e = &Rec.rec.event;
	e->has_event = true;
	snprintf(e->event.event_id, sizeof e->event.event_id, "%s", id);
	e->event.revision = 2;
	strcpy(e->event.camera, "front");
	e->event.start_ms = start;
	strcpy(e->event.source, "analysis");
	e->jpeg_bytes = 99;
	e->keyframes_count = 1;
	e->keyframes[0] = (kp_EventKeyframe){.stream = 1, .time_ms = start - 500};
	add(&Rec);
}

static const char ev_a[] =
    "{\"id\":\"a\",\"revision\":2,\"camera\":\"front\",\"stream\":\"main\",\"start_ms\":5000,\"end_ms\":5000,"
    "\"labels\":[],\"boxes\":[],\"attributes\":[],\"source\":\"analysis\",\"principal\":\"\",\"has_jpeg\":true,"
    "\"jpeg_width\":0,\"jpeg_height\":0,\"jpeg_bytes\":99,\"committed_ms\":0,"
    "\"keyframes\":[{\"stream\":\"sub\",\"time_ms\":4500}]}";

static void test_events(void)
{
	catrec_init(&B, 1 << 20);
	event_row("a", 5000);
	event_row("b", 4000);
	kp_CatalogRecord end = {.which_rec = kp_CatalogRecord_search_end_tag};
	strcpy(end.rec.search_end.next_cursor, "c1.0.1");
	add(&end);
	char *json = malloc(OUT_MAX);
	CHECK(catj_render(CATJ_SEARCH, B.p, B.len, json, OUT_MAX) > 0);
	CHECK(!strncmp(json, "{\"events\":[", 11) && !strncmp(json + 11, ev_a, strlen(ev_a)));
	CHECK(strstr(json, "],\"next_cursor\":\"c1.0.1\"}") != NULL);
	check_json(CATJ_SEARCH, NULL);
	catrec_free(&B);

	catrec_init(&B, 1 << 20);
	end.rec.search_end.next_cursor[0] = 0;
	add(&end);
	check_json(CATJ_SEARCH, "{\"events\":[],\"next_cursor\":null}");
	catrec_free(&B);

	catrec_init(&B, 1 << 20);
	event_row("a", 5000);
	check_json(CATJ_EVENT, ev_a);
	/* One event is the whole answer: a second is refused. */
	event_row("b", 4000);
	CHECK_EQ(catj_render(CATJ_EVENT, B.p, B.len, json, OUT_MAX), -EBADMSG);
	catrec_free(&B);
	free(json);
}

static void test_ack_delete(void)
{
	catrec_init(&B, 1 << 20);
	kp_CatalogRecord a = {.which_rec = kp_CatalogRecord_ack_tag,
			      .rec.ack = {.event_id = "det-1", .revision = 3, .committed_ms = 1764461234567}};
	add(&a);
	check_json(CATJ_ACK, "{\"id\":\"det-1\",\"revision\":3,\"committed_ms\":1764461234567}");
	/* Reset (recorderd's one buffer for every acknowledgement): empty, memory kept. */
	const uint8_t *mem = B.p;
	size_t one = B.len;
	catrec_reset(&B);
	CHECK_EQ(B.len, 0);
	a.rec.ack.revision = 4;
	add(&a);
	CHECK_EQ(B.len, one);
	CHECK(B.p == mem);
	check_json(CATJ_ACK, "{\"id\":\"det-1\",\"revision\":4,\"committed_ms\":1764461234567}");
	catrec_free(&B);

	catrec_init(&B, 1 << 20);
	kp_CatalogRecord d = {.which_rec = kp_CatalogRecord_deleted_tag,
			      .rec.deleted = {.deleted_recordings = 1,
					      .deleted_events = 1,
					      .missing_recordings_count = 1,
					      .missing_recordings = {999},
					      .missing_events_count = 1,
					      .missing_events = {"nope"}}};
	add(&d);
	check_json(CATJ_DELETE, "{\"deleted_recordings\":1,\"deleted_events\":1,\"missing_recordings\":[999],"
				"\"missing_events\":[\"nope\"],\"busy_recordings\":[]}");
	catrec_free(&B);
}

/* What does not belong is refused: a record of another answer, a coverage stream before
 * its camera, records after the end, an answer without its end, bytes that do not read. */
static void test_refused(void)
{
	static char json[1 << 16];
	catrec_init(&B, 1 << 20);
	kp_CatalogRecord end = {.which_rec = kp_CatalogRecord_recordings_end_tag};
	add(&end);
	CHECK_EQ(catj_render(CATJ_SEARCH, B.p, B.len, json, sizeof json), -EBADMSG);
	CHECK_EQ(catj_render(CATJ_COVERAGE, B.p, B.len, json, sizeof json), -EBADMSG);
	add(&end);
	CHECK_EQ(catj_render(CATJ_RECORDINGS, B.p, B.len, json, sizeof json), -EBADMSG);
	catrec_free(&B);

	catrec_init(&B, 1 << 20);
	CHECK_EQ(catj_render(CATJ_RECORDINGS, B.p, B.len, json, sizeof json), -EBADMSG); /* no end */
	CHECK_EQ(catj_render(CATJ_COVERAGE, B.p, B.len, json, sizeof json), -EBADMSG);   /* no head */
	coverage_head(1);
	memset(&Rec, 0, sizeof Rec);
	Rec.which_rec = kp_CatalogRecord_coverage_stream_tag;
	add(&Rec);
	CHECK_EQ(catj_render(CATJ_COVERAGE, B.p, B.len, json, sizeof json), -EBADMSG); /* stream, no camera */
	catrec_free(&B);
	catrec_init(&B, 1 << 20);
	coverage_head(1);
	coverage_camera("front");
	Rec.rec.coverage_stream.ranges_count = 3; /* half a range */
	add(&Rec);
	CHECK_EQ(catj_render(CATJ_COVERAGE, B.p, B.len, json, sizeof json), -EBADMSG);
	catrec_free(&B);

	catrec_init(&B, 1 << 20);
	coverage_head(1);
	B.p[B.len - 1] ^= 0x80; /* a varint that does not end */
	CHECK_EQ(catj_render(CATJ_COVERAGE, B.p, B.len, json, sizeof json), -EBADMSG);
	B.len = 1;
	B.p[0] = 0x7f; /* a length past the end */
	CHECK_EQ(catj_render(CATJ_COVERAGE, B.p, B.len, json, sizeof json), -EBADMSG);
	catrec_free(&B);

	/* The ceiling of the records' buffer holds. */
	catrec_init(&B, 4);
	CHECK_EQ(catrec_add(&B, &Rec), -E2BIG);
	CHECK_EQ(B.failed, -E2BIG);
	kp_CatalogRecord small = {.which_rec = kp_CatalogRecord_recordings_end_tag};
	CHECK_EQ(catrec_add(&B, &small), -E2BIG); /* sticky */
	catrec_reset(&B);                         /* until reset */
	CHECK_EQ(B.failed, 0);
	CHECK_EQ(catrec_add(&B, &small), 0);
	catrec_free(&B);
}

int main(void)
{
	RUN(test_coverage);
	RUN(test_coverage_large);
	RUN(test_recordings);
	RUN(test_events);
	RUN(test_ack_delete);
	RUN(test_refused);
	return TEST_EXIT();
}
