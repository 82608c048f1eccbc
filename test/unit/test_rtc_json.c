/* rtcd's signaling messages (signal_msg.c over common/json.h): members of each type,
 * escapes (surrogate pairs included), nested values skipped, "\u0000" accepted but not
 * read as a string, malformed input refused with a reason; what the common writer
 * writes reads back; the text builder's overflow. */
#include <errno.h>
#include <stdint.h>

#include "signal_msg.h"
#include "text.h"
#include "test.h"

static struct rtc_json j;

static void test_parse(void)
{
	const char *in = "{\"type\":\"offer\",\"sid\":\"t1\",\"at_ms\":1764470000000,\"rate\":2,"
			 "\"x\":{\"a\":[1,2,{\"b\":null}]},\"ok\":true,\"n\":null,"
			 "\"sdp\":\"v=0\\r\\na=x:\\\"q\\\" \\u00e9\\ud83d\\ude00\"}";
	const char *why = NULL;
	CHECK_EQ(rtc_json_parse(in, strlen(in), &j, &why), 0);
	CHECK(rtc_json_str(&j, "type") && strcmp(rtc_json_str(&j, "type"), "offer") == 0);
	CHECK(rtc_json_str(&j, "sdp") &&
	      strcmp(rtc_json_str(&j, "sdp"), "v=0\r\na=x:\"q\" \xc3\xa9\xf0\x9f\x98\x80") == 0);
	double d = 0;
	CHECK(rtc_json_num(&j, "at_ms", &d));
	CHECK(d == 1764470000000.0);
	CHECK(!rtc_json_num(&j, "type", &d));
	CHECK(rtc_json_str(&j, "x") == NULL);
	CHECK(rtc_json_str(&j, "missing") == NULL);
	const char *nul = "{\"sdp\":\"v=0\\u0000\",\"type\":\"offer\"}";
	CHECK_EQ(rtc_json_parse(nul, strlen(nul), &j, &why), 0); /* valid JSON */
	CHECK(rtc_json_str(&j, "sdp") == NULL);                  /* but no C string */
	CHECK(rtc_json_str(&j, "type") && strcmp(rtc_json_str(&j, "type"), "offer") == 0);
	CHECK_EQ(rtc_json_parse("{}", 2, &j, &why), 0);
	CHECK_EQ(j.n, 0);
}

static void expect_bad(const char *in, const char *reason)
{
	const char *why = NULL;
	CHECK_EQ(rtc_json_parse(in, strlen(in), &j, &why), -EBADMSG);
	CHECK(why != NULL);
	if (why)
		CHECK_STR_CONTAINS(why, reason);
}

static void test_malformed(void)
{
	expect_bad("", "expected a value");
	expect_bad("[1]", "not a JSON object");
	expect_bad("{\"a\":1", "unterminated");
	expect_bad("{\"a\":\"x}", "unterminated");
	expect_bad("{\"a\":\"\\q\"}", "bad escape");
	expect_bad("{\"a\":\"\\u12\"}", "\\u");
	expect_bad("{\"a\":\"\\ud800\"}", "surrogate");
	expect_bad("{\"a\":\"x\ny\"}", "control character");
	expect_bad("{\"a\":tru}", "unexpected");
	expect_bad("{\"a\":-}", "number");
	expect_bad("{\"a\":1,\"a\":2}", "duplicate");
	expect_bad("{\"a\":1} x", "after the value");
	expect_bad("{a:1}", "key");
	char deep[200] = "{\"a\":";
	for (int i = 0; i < 40; i++)
		strcat(deep, "[");
	expect_bad(deep, "nested too deeply");
	static char big[KP_CONTROL_MESSAGE_MAX + 2];
	memset(big, ' ', sizeof big - 1);
	big[0] = '{';
	big[sizeof big - 2] = '}';
	expect_bad(big, "64 KiB");
}

/* What rtcd writes (with the common writer) it reads back as a signaling message. */
static void test_round_trip(void)
{
	char buf[64];
	struct json_w w;
	size_t len;
	jw_init(&w, buf, sizeof buf);
	jw_obj(&w);
	jw_key(&w, "s");
	jw_str(&w, "a\"b\\c\r\n\x01");
	jw_obj_end(&w);
	CHECK_EQ(jw_finish(&w, &len), 0);
	CHECK(strcmp(buf, "{\"s\":\"a\\\"b\\\\c\\r\\n\\u0001\"}") == 0);
	const char *why;
	CHECK_EQ(rtc_json_parse(buf, len, &j, &why), 0);
	CHECK(strcmp(rtc_json_str(&j, "s"), "a\"b\\c\r\n\x01") == 0);
}

static void test_text(void)
{
	char buf[8];
	struct rtc_text t;
	rtc_text_init(&t, buf, sizeof buf);
	rtc_text_add(&t, "a=%d", 12);
	CHECK(rtc_text_ok(&t) && strcmp(buf, "a=12") == 0);
	rtc_text_add(&t, "0123456789");
	CHECK(!rtc_text_ok(&t));
	CHECK(strcmp(buf, "a=12") == 0);
}

int main(void)
{
	RUN(test_parse);
	RUN(test_malformed);
	RUN(test_round_trip);
	RUN(test_text);
	return TEST_EXIT();
}
