/* The event JSON of docs/queries.md (common/event_json.c), the one rendering used by
 * recorderd's search answers and webd's live fan-out: fields, escapes, keyframes, the
 * largest record. */
#include <string.h>

#include "event_json.h"
#include "json.h"
#include "test.h"

static void test_event_json(void)
{
	static kp_EventRecord e;
	memset(&e, 0, sizeof(e));
	strcpy(e.event_id, "det-42");
	e.revision = 3;
	strcpy(e.camera, "front \"door\"");
	e.stream = 1;
	e.start_ms = 1764461230000;
	e.labels_count = 1;
	strcpy(e.labels[0].name, "person");
	e.labels[0].score = 0.5f;
	e.attributes_count = 1;
	strcpy(e.attributes[0].key, "zone");
	strcpy(e.attributes[0].value, "a\nb");
	strcpy(e.source, "analysis");
	e.has_jpeg = true;
	e.jpeg_width = 640;
	e.committed_ms = 1764461234567;
	static char buf[KP_EVENT_JSON_MAX];
	struct json_w w;
	jw_init(&w, buf, sizeof(buf));
	const kp_EventKeyframe kf[2] = {{.stream = 0, .time_ms = 1764461229000},
					{.stream = 1, .time_ms = 1764461229500}};
	e.labels[0].score = 0.912345678f;
	kp_event_json(&w, &e, 1234, kf, 2);
	size_t len;
	CHECK_EQ(jw_finish(&w, &len), 0);
	struct json_tok toks[128];
	struct json_doc d;
	CHECK_EQ(json_parse(&d, buf, len, toks, 128), 0);
	char s[80];
	int64_t v = 0;
	CHECK(json_get_str(&d, json_obj_get(&d, 0, "camera"), s, sizeof(s)) > 0 && strcmp(s, "front \"door\"") == 0);
	CHECK(json_get_str(&d, json_obj_get(&d, 0, "stream"), s, sizeof(s)) > 0 && strcmp(s, "sub") == 0);
	CHECK_EQ(json_get_int(&d, json_obj_get(&d, 0, "end_ms"), &v), 0);
	CHECK_EQ(v, 1764461230000); /* 0: instantaneous, the start */
	CHECK_EQ(json_get_int(&d, json_obj_get(&d, 0, "jpeg_bytes"), &v), 0);
	CHECK_EQ(v, 1234);
	int attr = json_arr_get(&d, json_obj_get(&d, 0, "attributes"), 0);
	CHECK(json_get_str(&d, json_obj_get(&d, attr, "value"), s, sizeof(s)) == 3 && strcmp(s, "a\nb") == 0);
	CHECK_EQ(d.toks[json_obj_get(&d, 0, "has_jpeg")].type, JSON_TRUE);
	CHECK(strstr(buf, "\"labels\":[{\"name\":\"person\",\"score\":0.912346}]") != NULL); /* %.6g */
	int kfs = json_obj_get(&d, 0, "keyframes");
	CHECK_EQ(d.toks[kfs].size, 2);
	CHECK(json_get_str(&d, json_obj_get(&d, json_arr_get(&d, kfs, 1), "stream"), s, sizeof(s)) == 3 &&
	      strcmp(s, "sub") == 0);
	CHECK_EQ(json_get_int(&d, json_obj_get(&d, json_arr_get(&d, kfs, 0), "time_ms"), &v), 0);
	CHECK_EQ(v, 1764461229000);
	/* The largest record nanopb holds, every character needing an escape, fits. */
	memset(&e, 0, sizeof(e));
	memset(e.event_id, 1, sizeof(e.event_id) - 1);
	memset(e.camera, 1, sizeof(e.camera) - 1);
	memset(e.source, 1, sizeof(e.source) - 1);
	memset(e.principal, 1, sizeof(e.principal) - 1);
	e.labels_count = sizeof(e.labels) / sizeof(e.labels[0]);
	for (unsigned i = 0; i < e.labels_count; i++)
		memset(e.labels[i].name, 1, sizeof(e.labels[i].name) - 1);
	e.boxes_count = sizeof(e.boxes) / sizeof(e.boxes[0]);
	for (unsigned i = 0; i < e.boxes_count; i++)
		memset(e.boxes[i].label, 1, sizeof(e.boxes[i].label) - 1);
	e.attributes_count = sizeof(e.attributes) / sizeof(e.attributes[0]);
	for (unsigned i = 0; i < e.attributes_count; i++) {
		memset(e.attributes[i].key, 1, sizeof(e.attributes[i].key) - 1);
		memset(e.attributes[i].value, 1, sizeof(e.attributes[i].value) - 1);
	}
	e.start_ms = INT64_MIN;
	e.end_ms = INT64_MIN;
	e.committed_ms = INT64_MIN;
	jw_init(&w, buf, sizeof(buf));
	kp_event_json(&w, &e, SIZE_MAX / 2, kf, 2);
	CHECK_EQ(jw_finish(&w, &len), 0);
	CHECK(len < KP_EVENT_JSON_MAX);
}

int main(void)
{
	RUN(test_event_json);
	return TEST_EXIT();
}
