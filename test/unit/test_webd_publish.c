/* The three encodings of POST /api/v1/events (webd/publish_*.c) and the JPEG check. */
#include <stdlib.h>
#include <string.h>

#include <pb_encode.h>
#include <turbojpeg.h>

#include "analysis.pb.h"
#include "kp_limits.h"
#include "publish.h"
#include "test.h"

static uint8_t *buf; /* the route's JPEG buffer */
static unsigned char *jpeg;
static unsigned long jpeg_len;

static void make_jpeg(void)
{
	static unsigned char pixels[64 * 48 * 3];
	for (size_t i = 0; i < sizeof(pixels); i++)
		pixels[i] = (unsigned char)(i * 7);
	tjhandle tj = tjInitCompress();
	CHECK(tj != NULL);
	CHECK_EQ(tjCompress2(tj, pixels, 64, 0, 48, TJPF_RGB, &jpeg, &jpeg_len, TJSAMP_420, 80, 0), 0);
	tjDestroy(tj);
}

static size_t base64(const uint8_t *in, size_t n, char *out, bool escape_slash)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v =
		    (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
		size_t rem = n - i;
		for (size_t k = 0; k < 4; k++) {
			char c = k <= rem ? tab[(v >> (18 - 6 * k)) & 63] : '=';
			if (c == '/' && escape_slash)
				out[o++] = '\\';
			out[o++] = c;
		}
	}
	out[o] = 0;
	return o;
}

static void init(struct webd_publish *p)
{
	memset(p, 0, sizeof(*p));
	p->jpeg_buf = buf;
	p->jpeg_cap = KP_ANALYSIS_JPEG_MAX;
}

static int publish_json_text(const char *s, struct webd_publish *p, struct publish_err *e)
{
	init(p);
	memset(e, 0, sizeof(*e));
	return webd_publish_json((const uint8_t *)s, strlen(s), p, e);
}

static void test_json(void)
{
	static char body[64 * 1024];
	static char b64[32 * 1024];
	static struct webd_publish p;
	struct publish_err e;
	for (int esc = 0; esc < 2; esc++) {
		base64(jpeg, jpeg_len, b64, esc);
		snprintf(body, sizeof(body),
			 "{\"id\":\"det-42\",\"revision\":2,\"camera\":\"front-door\",\"stream\":\"sub\","
			 "\"start_ms\":1764470000000,\"end_ms\":1764470004000,"
			 "\"labels\":[{\"name\":\"person\",\"score\":0.93}],"
			 "\"boxes\":[{\"label\":\"person\",\"x\":0.1,\"y\":0.2,\"w\":0.3,\"h\":0.4,\"score\":0.9}],"
			 "\"attributes\":{\"zone\":\"porch\",\"color\":\"red\"},\"jpeg_base64\":\"%s\"}",
			 b64);
		CHECK_EQ(publish_json_text(body, &p, &e), 0);
		CHECK(strcmp(p.ev.event_id, "det-42") == 0);
		CHECK_EQ(p.ev.revision, 2);
		CHECK(strcmp(p.ev.camera, "front-door") == 0);
		CHECK_EQ(p.ev.stream, 1);
		CHECK_EQ(p.ev.start_ms, 1764470000000LL);
		CHECK_EQ(p.ev.end_ms, 1764470004000LL);
		CHECK_EQ(p.ev.labels_count, 1);
		CHECK(strcmp(p.ev.labels[0].name, "person") == 0);
		CHECK(p.ev.labels[0].score > 0.929f && p.ev.labels[0].score < 0.931f);
		CHECK_EQ(p.ev.boxes_count, 1);
		CHECK(p.ev.boxes[0].h > 0.399f && p.ev.boxes[0].h < 0.401f);
		CHECK_EQ(p.ev.attributes_count, 2);
		CHECK(strcmp(p.ev.attributes[1].key, "color") == 0);
		CHECK(strcmp(p.ev.attributes[1].value, "red") == 0);
		CHECK_EQ(p.jpeg_len, jpeg_len);
		CHECK(p.jpeg && memcmp(p.jpeg, jpeg, jpeg_len) == 0);
	}
	/* The list form of attributes, no JPEG, default stream. */
	CHECK_EQ(publish_json_text("{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5,"
				   "\"attributes\":[{\"key\":\"k\",\"value\":\"v w\"}]}",
				   &p, &e),
		 0);
	CHECK_EQ(p.ev.stream, 0);
	CHECK_EQ(p.ev.attributes_count, 1);
	CHECK(strcmp(p.ev.attributes[0].value, "v w") == 0);
	CHECK(p.jpeg == NULL);

	struct {
		const char *body, *code;
	} bad[] = {
	    {"{", "bad_json"},
	    {"[]", "bad_json"},
	    {"{\"revision\":1,\"camera\":\"c\",\"start_ms\":5}", "bad_event"},
	    {"{\"id\":\"a\",\"revision\":0,\"camera\":\"c\",\"start_ms\":5}", "bad_revision"},
	    {"{\"id\":\"a\",\"revision\":1.5,\"camera\":\"c\",\"start_ms\":5}", "bad_event"},
	    {"{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"stream\":\"third\",\"start_ms\":5}", "bad_event"},
	    {"{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5,\"jpeg_base64\":\"!!!!\"}", "bad_base64"},
	    {"{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5,\"jpeg_base64\":\"QQ=A\"}", "bad_base64"},
	    {"{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5,\"labels\":{}}", "bad_event"},
	    {"{\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"revision\":1,"
	     "\"camera\":\"c\",\"start_ms\":5}",
	     "bad_event"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(publish_json_text(bad[i].body, &p, &e), -1);
		CHECK_EQ(e.status, 400);
		if (!e.code || strcmp(e.code, bad[i].code) != 0)
			fprintf(stderr, "%s: got %s (%s)\n", bad[i].body, e.code, e.why);
		CHECK(e.code && strcmp(e.code, bad[i].code) == 0);
		CHECK(e.why[0] != 0);
	}
	/* 17 labels: one past the bound. */
	char *s = body;
	s += sprintf(s, "{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5,\"labels\":[");
	for (int i = 0; i < 17; i++)
		s += sprintf(s, "%s{\"name\":\"l%d\"}", i ? "," : "", i);
	sprintf(s, "]}");
	CHECK_EQ(publish_json_text(body, &p, &e), -1);
	CHECK_STR_CONTAINS(e.why, "more than 16");
}

static void test_json_too_large(void)
{
	/* A JPEG of KP_ANALYSIS_JPEG_MAX + 1 bytes as base64: 413 before decoding. */
	size_t n = KP_ANALYSIS_JPEG_MAX + 1;
	uint8_t *big = calloc(1, n);
	char *text = malloc(n / 3 * 4 + 200);
	CHECK(big && text);
	int h = sprintf(text, "{\"id\":\"a\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5,\"jpeg_base64\":\"");
	size_t b = base64(big, n, text + h, false);
	strcpy(text + h + b, "\"}");
	static struct webd_publish p;
	struct publish_err e;
	CHECK_EQ(publish_json_text(text, &p, &e), -1);
	CHECK_EQ(e.status, 413);
	CHECK(strcmp(e.code, "jpeg_too_large") == 0);
	/* Exactly at the ceiling it decodes. */
	b = base64(big, n - 1, text + h, false);
	strcpy(text + h + b, "\"}");
	CHECK_EQ(publish_json_text(text, &p, &e), 0);
	CHECK_EQ(p.jpeg_len, KP_ANALYSIS_JPEG_MAX);
	free(big);
	free(text);
}

static int multipart(const char *ct, const char *parts_fmt, struct webd_publish *p, struct publish_err *e)
{
	static uint8_t body[128 * 1024];
	/* parts_fmt: %J marks where the JPEG goes */
	const char *j = strstr(parts_fmt, "%J");
	size_t n = 0;
	if (j) {
		memcpy(body, parts_fmt, (size_t)(j - parts_fmt));
		n = (size_t)(j - parts_fmt);
		memcpy(body + n, jpeg, jpeg_len);
		n += jpeg_len;
		strcpy((char *)body + n, j + 2);
		n += strlen(j + 2);
	} else {
		strcpy((char *)body, parts_fmt);
		n = strlen(parts_fmt);
	}
	init(p);
	memset(e, 0, sizeof(*e));
	return webd_publish_multipart(body, n, ct, p, e);
}

static void test_multipart(void)
{
	static struct webd_publish p;
	struct publish_err e;
	const char *ev = "{\"id\":\"m1\",\"revision\":1,\"camera\":\"c\",\"start_ms\":5}";
	char fmt[1024];
	snprintf(fmt, sizeof(fmt),
		 "preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"event\"\r\n"
		 "Content-Type: application/json\r\n\r\n%s\r\n--XyZ\r\n"
		 "Content-Disposition: form-data; name=\"jpeg\"; filename=\"a.jpg\"\r\n"
		 "Content-Type: image/jpeg\r\n\r\n%%J\r\n--XyZ--\r\n",
		 ev);
	CHECK_EQ(multipart("multipart/form-data; boundary=XyZ", fmt, &p, &e), 0);
	CHECK(strcmp(p.ev.event_id, "m1") == 0);
	CHECK_EQ(p.jpeg_len, jpeg_len);
	CHECK(p.jpeg && memcmp(p.jpeg, jpeg, jpeg_len) == 0);
	CHECK_EQ(multipart("multipart/form-data; boundary=\"XyZ\"", fmt, &p, &e), 0);
	/* Without the JPEG part, the body opening with the delimiter. */
	snprintf(fmt, sizeof(fmt), "--XyZ\r\nContent-Disposition: form-data; name=\"event\"\r\n\r\n%s\r\n--XyZ--", ev);
	CHECK_EQ(multipart("multipart/form-data;boundary=XyZ", fmt, &p, &e), 0);
	CHECK(p.jpeg == NULL);
	CHECK_EQ(multipart("multipart/form-data", fmt, &p, &e), -1);
	CHECK(strcmp(e.code, "bad_multipart") == 0);
	snprintf(fmt, sizeof(fmt), "--XyZ\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\n%s\r\n--XyZ--", ev);
	CHECK_EQ(multipart("multipart/form-data; boundary=XyZ", fmt, &p, &e), -1);
	CHECK_STR_CONTAINS(e.why, "other");
	snprintf(fmt, sizeof(fmt), "--XyZ\r\nContent-Disposition: form-data; name=\"event\"\r\n\r\n%s", ev);
	CHECK_EQ(multipart("multipart/form-data; boundary=XyZ", fmt, &p, &e), -1);
	CHECK_STR_CONTAINS(e.why, "not closed");
	snprintf(fmt, sizeof(fmt), "--XyZ\r\nContent-Disposition: form-data; name=\"jpeg\"\r\n\r\n%%J\r\n--XyZ--");
	CHECK_EQ(multipart("multipart/form-data; boundary=XyZ", fmt, &p, &e), -1);
	CHECK_STR_CONTAINS(e.why, "no \"event\" part");
}

struct bytes {
	const uint8_t *p;
	size_t n;
};

static bool write_bytes(pb_ostream_t *out, const pb_field_t *field, void *const *arg)
{
	const struct bytes *b = *arg;
	return pb_encode_tag_for_field(out, field) && pb_encode_string(out, b->p, b->n);
}

static size_t encode_proto(const uint8_t *j, size_t jn, uint8_t *out, size_t cap)
{
	keeppeek_analysis_PublishEvent m = keeppeek_analysis_PublishEvent_init_zero;
	strcpy(m.id, "pb-1");
	m.revision = 7;
	strcpy(m.camera, "front");
	strcpy(m.stream, "main");
	m.start_ms = 1000;
	m.labels_count = 1;
	strcpy(m.labels[0].name, "car");
	m.labels[0].score = 0.5f;
	m.attributes_count = 1;
	strcpy(m.attributes[0].key, "plate");
	strcpy(m.attributes[0].value, "AB 123");
	struct bytes b = {j, jn};
	if (j) {
		m.jpeg.funcs.encode = write_bytes;
		m.jpeg.arg = &b;
	}
	pb_ostream_t o = pb_ostream_from_buffer(out, cap);
	CHECK(pb_encode(&o, keeppeek_analysis_PublishEvent_fields, &m));
	return o.bytes_written;
}

static void test_proto(void)
{
	static uint8_t body[64 * 1024];
	static struct webd_publish p;
	struct publish_err e;
	size_t n = encode_proto(jpeg, jpeg_len, body, sizeof(body));
	init(&p);
	CHECK_EQ(webd_publish_proto(body, n, &p, &e), 0);
	CHECK(strcmp(p.ev.event_id, "pb-1") == 0);
	CHECK_EQ(p.ev.revision, 7);
	CHECK_EQ(p.ev.stream, 0);
	CHECK_EQ(p.ev.start_ms, 1000);
	CHECK(strcmp(p.ev.attributes[0].value, "AB 123") == 0);
	CHECK_EQ(p.jpeg_len, jpeg_len);
	CHECK(p.jpeg && memcmp(p.jpeg, jpeg, jpeg_len) == 0);
	init(&p);
	CHECK_EQ(webd_publish_proto(body, n - 1, &p, &e), -1); /* truncated */
	CHECK(strcmp(e.code, "bad_protobuf") == 0);

	size_t big_n = KP_ANALYSIS_JPEG_MAX + 1;
	uint8_t *big = calloc(1, big_n);
	uint8_t *big_body = malloc(big_n + 1024);
	CHECK(big && big_body);
	n = encode_proto(big, big_n, big_body, big_n + 1024);
	init(&p);
	CHECK_EQ(webd_publish_proto(big_body, n, &p, &e), -1);
	CHECK_EQ(e.status, 413);
	CHECK(strcmp(e.code, "jpeg_too_large") == 0);
	free(big);
	free(big_body);
}

static void test_jpeg_check(void)
{
	struct publish_err e;
	uint32_t w = 0, h = 0;
	CHECK_EQ(webd_publish_jpeg_check(jpeg, jpeg_len, &w, &h, &e), 0);
	CHECK_EQ(w, 64);
	CHECK_EQ(h, 48);
	CHECK_EQ(webd_publish_jpeg_check(jpeg, jpeg_len - 1, &w, &h, &e), -1);
	CHECK_STR_CONTAINS(e.why, "EOI");
	CHECK_EQ(webd_publish_jpeg_check(jpeg + 1, jpeg_len - 1, &w, &h, &e), -1);
	CHECK_STR_CONTAINS(e.why, "SOI");
	static const uint8_t garbage[] = {0xff, 0xd8, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xff, 0xd9};
	CHECK_EQ(webd_publish_jpeg_check(garbage, sizeof(garbage), &w, &h, &e), -1);
	CHECK_EQ(e.status, 400);
	CHECK(strcmp(e.code, "bad_jpeg") == 0);
	CHECK_STR_CONTAINS(e.why, "header");
}

int main(void)
{
	buf = malloc(KP_ANALYSIS_JPEG_MAX);
	if (!buf)
		return 1;
	make_jpeg();
	RUN(test_json);
	RUN(test_json_too_large);
	RUN(test_multipart);
	RUN(test_proto);
	RUN(test_jpeg_check);
	tjFree(jpeg);
	free(buf);
	return TEST_EXIT();
}
