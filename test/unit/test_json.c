/* The common bounded JSON reader and writer (common/json.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "test.h"

static int parse(struct json_doc *d, const char *s, struct json_tok *toks, unsigned cap)
{
	return json_parse(d, s, strlen(s), toks, cap);
}

static void test_reader(void)
{
	struct json_tok toks[64];
	struct json_doc d;
	const char *s = " {\"id\":\"det-42\",\"revision\":3,\"n\":[1,2.5,-3e2],\"o\":{\"a\":true,\"b\":null},"
			"\"esc\":\"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\\/\"} ";
	CHECK_EQ(parse(&d, s, toks, 64), 0);
	CHECK_EQ(d.toks[0].type, JSON_OBJECT);
	CHECK_EQ(d.toks[0].size, 5);
	char buf[64];
	CHECK_EQ(json_get_str(&d, json_obj_get(&d, 0, "id"), buf, sizeof(buf)), 6);
	CHECK(strcmp(buf, "det-42") == 0);
	int64_t v = 0;
	CHECK_EQ(json_get_int(&d, json_obj_get(&d, 0, "revision"), &v), 0);
	CHECK_EQ(v, 3);
	int n = json_obj_get(&d, 0, "n");
	CHECK_EQ(d.toks[n].size, 3);
	CHECK_EQ(json_get_int(&d, json_arr_get(&d, n, 0), &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(json_get_int(&d, json_arr_get(&d, n, 1), &v), -EINVAL);
	double x = 0;
	CHECK_EQ(json_get_double(&d, json_arr_get(&d, n, 2), &x), 0);
	CHECK(x == -300.0);
	CHECK_EQ(json_arr_get(&d, n, 3), -1);
	int o = json_obj_get(&d, 0, "o");
	CHECK_EQ(d.toks[json_obj_get(&d, o, "a")].type, JSON_TRUE);
	CHECK_EQ(d.toks[json_obj_get(&d, o, "b")].type, JSON_NULL);
	CHECK_EQ(json_obj_get(&d, o, "id"), -1); /* keys of the outer object are not inner keys */
	CHECK_EQ(json_get_str(&d, json_obj_get(&d, 0, "esc"), buf, sizeof(buf)), 12);
	CHECK(strcmp(buf, "a\"b\\c\xc3\xa9\xf0\x9f\x98\x80/") == 0);
	CHECK_EQ(json_get_str(&d, json_obj_get(&d, 0, "esc"), buf, 5), -ENAMETOOLONG);
	CHECK_EQ(json_obj_get(&d, 0, "missing"), -1);
}

static void test_reader_errors(void)
{
	struct json_tok toks[8];
	struct json_doc d;
	const char *bad[] = {"",      "{",       "{\"a\"}",     "{\"a\":1,}",  "[1,]",     "01", "1.",   "tru",
			     "\"abc", "\"\\x\"", "\"\\u12g4\"", "{\"a\":1} x", "\"a\nb\"", "-",  "[1 2]"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(&d, bad[i], toks, 8);
		if (rc != -EINVAL)
			fprintf(stderr, "accepted or wrong error for: %s\n", bad[i]);
		CHECK_EQ(rc, -EINVAL);
		CHECK(d.err_why != NULL);
	}
	CHECK_EQ(parse(&d, "[1,2,3,4,5,6,7,8]", toks, 8), -E2BIG);
	static struct json_tok many[128];
	char deep[40];
	memset(deep, '[', 20);
	memset(deep + 20, ']', 19);
	deep[39] = 0;
	CHECK_EQ(parse(&d, deep, many, 128), -EINVAL); /* unbalanced */
	char deep2[81];
	memset(deep2, '[', 40);
	memset(deep2 + 40, ']', 40);
	deep2[80] = 0;
	CHECK_EQ(parse(&d, deep2, many, 128), -E2BIG); /* deeper than JSON_MAX_DEPTH */
	struct json_tok t2[4];
	CHECK_EQ(parse(&d, "\"a\\u0000b\"", t2, 4), 0);
	char buf[8];
	CHECK_EQ(json_get_str(&d, 0, buf, sizeof(buf)), -EILSEQ); /* NUL inside */
	CHECK_EQ(parse(&d, "\"\\udc00\"", t2, 4), -EINVAL);       /* lone low surrogate */
	CHECK_EQ(parse(&d, "\"\\ud83d\"", t2, 4), -EINVAL);       /* high surrogate alone */
	CHECK_EQ(parse(&d, "\"\\ud83d\\u0041\"", t2, 4), -EINVAL);
	CHECK_EQ(parse(&d, "\"\\ud83d\\ude00\"", t2, 4), 0); /* a pair */
	CHECK_EQ(json_get_str(&d, 0, buf, sizeof(buf)), 4);
	/* Strict UTF-8 (RFC 3629): stray continuation, overlong, surrogate, above U+10FFFF, cut short. */
	const char *bad_utf8[] = {"\"\x80\"",
				  "\"\xc0\xaf\"",
				  "\"\xe0\x80\xaf\"",
				  "\"\xed\xa0\x80\"",
				  "\"\xf4\x90\x80\x80\"",
				  "\"\xf8\x88\x80\x80\x80\"",
				  "\"\xe2\x82\"",
				  "\"a\xff\""};
	for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
		CHECK_EQ(parse(&d, bad_utf8[i], t2, 4), -EINVAL);
		CHECK(strstr(d.err_why, "UTF-8") != NULL);
	}
	CHECK_EQ(parse(&d, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", t2, 4), 0); /* é € 😀 */
	/* Duplicate keys are refused, also when spelled with an escape; nested objects have their own. */
	static struct json_tok t3[16];
	CHECK_EQ(parse(&d, "{\"a\":1,\"b\":2,\"a\":3}", t3, 16), -EINVAL);
	CHECK(strstr(d.err_why, "duplicate") != NULL);
	CHECK_EQ(parse(&d, "{\"a\":1,\"\\u0061\":2}", t3, 16), -EINVAL);
	CHECK_EQ(parse(&d, "{\"a\":{\"a\":1},\"b\":[{\"a\":2},{\"a\":3}]}", t3, 16), 0);
	CHECK_EQ(parse(&d, "99999999999999999999", t2, 4), 0);
	int64_t v;
	CHECK_EQ(json_get_int(&d, 0, &v), -ERANGE);
}

static void test_writer(void)
{
	char buf[256];
	struct json_w w;
	jw_init(&w, buf, sizeof(buf));
	jw_obj(&w);
	jw_key(&w, "type");
	jw_str(&w, "event");
	jw_key(&w, "list");
	jw_arr(&w);
	jw_int(&w, -5);
	jw_bool(&w, true);
	jw_strn(&w, "q\"\\\n\x01", 5);
	jw_obj(&w);
	jw_obj_end(&w);
	jw_arr_end(&w);
	jw_key(&w, "x");
	jw_double(&w, 0.5);
	jw_obj_end(&w);
	size_t len = 0;
	CHECK_EQ(jw_finish(&w, &len), 0);
	const char *want = "{\"type\":\"event\",\"list\":[-5,true,\"q\\\"\\\\\\n\\u0001\",{}],\"x\":0.5}";
	CHECK(strcmp(buf, want) == 0);
	CHECK_EQ(len, strlen(want));
	/* What it writes, the reader reads back. */
	struct json_tok toks[16];
	struct json_doc d;
	CHECK_EQ(json_parse(&d, buf, len, toks, 16), 0);
	char s[16];
	CHECK_EQ(json_get_str(&d, json_arr_get(&d, json_obj_get(&d, 0, "list"), 2), s, sizeof(s)), 5);
	CHECK(memcmp(s, "q\"\\\n\x01", 5) == 0);

	char small[8];
	jw_init(&w, small, sizeof(small));
	jw_obj(&w);
	jw_key(&w, "long key");
	jw_int(&w, 1);
	jw_obj_end(&w);
	CHECK_EQ(jw_finish(&w, NULL), -ENOBUFS);
	CHECK(strlen(small) < sizeof(small));

	jw_init(&w, buf, sizeof(buf));
	jw_obj(&w);
	CHECK_EQ(jw_finish(&w, NULL), -ENOBUFS); /* unbalanced */
}

static void test_strict(void)
{
	struct json_doc d;
	struct json_tok t[16];
	char buf[16];
	/* A key longer than any buffer, spelled once raw and once escaped, is still a duplicate. */
	static char dup[2 * 600 + 64];
	char key[300];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	snprintf(dup, sizeof(dup), "{\"%s\":1,\"\\u006b%s\":2}", key, key + 1);
	CHECK_EQ(json_parse(&d, dup, strlen(dup), t, 16), -EINVAL);
	CHECK(strstr(d.err_why, "duplicate") != NULL);
	snprintf(dup, sizeof(dup), "{\"\\u006b%s\":7}", key + 1);
	CHECK_EQ(json_parse(&d, dup, strlen(dup), t, 16), 0);
	int64_t v = 0;
	CHECK_EQ(json_get_int(&d, json_obj_get(&d, 0, key), &v), 0);
	CHECK_EQ(v, 7);
	/* "\u0000" parses (valid JSON) but is not read into a C string. */
	CHECK_EQ(parse(&d, "{\"sdp\":\"v=0\\u0000x\",\"a\":\"ok\"}", t, 16), 0);
	CHECK_EQ(json_get_str(&d, json_obj_get(&d, 0, "sdp"), buf, sizeof(buf)), -EILSEQ);
	CHECK_EQ(json_get_str(&d, json_obj_get(&d, 0, "a"), buf, sizeof(buf)), 2);
	CHECK_EQ(json_obj_get(&d, 0, "sdp\x01"), -1);
}

static void test_writer_extras(void)
{
	char buf[64];
	struct json_w w;
	jw_init(&w, buf, sizeof(buf));
	jw_arr(&w);
	jw_null(&w);
	jw_json(&w, "{\"a\":1}", 7);
	jw_str(&w, "a\xff"
		   "b\xc3\xa9");
	jw_double(&w, 1.0 / 3.0);
	jw_arr_end(&w);
	size_t len = 0;
	CHECK_EQ(jw_finish(&w, &len), 0);
	CHECK(strcmp(buf, "[null,{\"a\":1},\"a\\ufffdb\xc3\xa9\",0.333333]") == 0);
	struct json_tok t[8];
	struct json_doc d;
	CHECK_EQ(json_parse(&d, buf, len, t, 8), 0);
	CHECK_EQ(json_quote(buf, sizeof(buf), "x\"y"), 6);
	CHECK(strcmp(buf, "\"x\\\"y\"") == 0);
	CHECK_EQ(json_quote(buf, 4, "long"), -ENOBUFS);
}

int main(void)
{
	RUN(test_reader);
	RUN(test_reader_errors);
	RUN(test_writer);
	RUN(test_strict);
	RUN(test_writer_extras);
	return TEST_EXIT();
}
