/* libFuzzer harness for what a hub reads from its sites (webd/hub_merge.c,
 * hub_ws_frame.c): the first byte picks a camera list, a coverage answer or an events
 * page (merged with a second, fixed page), a merged cursor, or the answer to the
 * signaling upgrade and the frames after it, and for signaling messages the rewrite of
 * their camera; the rest is the site's bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub_merge.h"
#include "hub_ws_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[1 << 20];
	if (size < 1)
		return 0;
	const char *s = (const char *)data + 1;
	size_t len = size - 1;
	struct json_w w;
	jw_init(&w, out, sizeof out);
	jw_arr(&w);
	if (data[0] % 6 == 4) {
		int st;
		int h = hub_ws_answer(s, len, 8192, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", &st);
		size_t at = h > 0 ? (size_t)h : 0;
		struct hub_ws_frame f;
		while (at < len && hub_ws_frame_parse(data + 1 + at, len - at, 65536, &f) == 1)
			at += f.header_len + f.payload_len;
		return 0;
	}
	if (data[0] % 6 == 5) {
		struct hub_doc d;
		if (hub_doc_parse(&d, s, len) == 0) {
			hub_copy_with(&d.d, 0, "camera", "site/cam", &w);
			hub_doc_free(&d);
		}
		return 0;
	}
	if (data[0] % 6 == 3) {
		char text[HUB_CURSOR_MAX + 2];
		if (len >= sizeof text)
			return 0;
		memcpy(text, s, len);
		text[len] = '\0';
		struct hub_cursor c;
		if (hub_cursor_parse(text, &c) == 0) {
			char again[HUB_CURSOR_MAX + 1];
			if (hub_cursor_format(&c, again, sizeof again) < 0 || strcmp(again, text))
				abort(); /* what parses formats back the same */
		}
		return 0;
	}
	struct hub_doc d;
	if (hub_doc_parse(&d, s, len) < 0)
		return 0;
	unsigned n;
	uint64_t total = 0;
	if (data[0] % 6 == 0) {
		hub_merge_cameras(&d.d, "site", &w, &n);
	} else if (data[0] % 6 == 1) {
		hub_merge_coverage(&d.d, "site", 7200000, 18000000, 3600000, &w, &total, &n);
	} else {
		static const char other[] = "{\"events\":[{\"camera\":\"c\",\"start_ms\":5}],\"next_cursor\":\"p1\"}";
		struct hub_doc o;
		if (hub_doc_parse(&o, other, sizeof other - 1) == 0) {
			struct hub_place p1 = {0}, p2 = {.skip = 3};
			struct hub_page pages[2] = {{"a", &p2, &d.d}, {"b", &p1, &o.d}};
			struct hub_cursor next;
			bool more;
			hub_merge_events(pages, 2, 50, &w, &next, &more, &n);
			hub_doc_free(&o);
		}
	}
	hub_doc_free(&d);
	return 0;
}
