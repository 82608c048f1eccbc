/* libFuzzer harness for recorderd's checks of untrusted event input from webd. The first
 * byte chooses: 0 the JPEG check (SOI/EOI, libturbojpeg header) and, for a small picture
 * that passes, the thumbnail decode/encode; 1 the search-cursor decoder (and its
 * round trip); 2 the query-word splitter and the event-id check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event_check.h"
#include "event_terms.h"
#include "thumbnail.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (data[0] == 0) {
		struct rec_reject rej;
		uint32_t w, h;
		if (rec_jpeg_check(p, n, &w, &h, &rej) == 0 && (uint64_t)w * h <= 1024 * 1024) {
			uint8_t *th;
			size_t tl;
			if (rec_thumbnail_make(p, n, &th, &tl) == 0)
				free(th);
		}
		return 0;
	}
	char s[300];
	if (n >= sizeof s)
		n = sizeof s - 1;
	memcpy(s, p, n);
	s[n] = '\0';
	if (data[0] == 1) {
		int64_t ms;
		uint64_t seq;
		if (rec_cursor_decode(s, &ms, &seq) == 0) {
			char again[REC_CURSOR_LEN + 1];
			rec_cursor_encode(ms, seq, again);
			if (strcmp(again, s))
				abort(); /* a cursor that decodes is exactly one the encoder writes */
		}
	} else {
		static struct rec_terms words;
		(void)rec_query_words(s, &words);
		(void)rec_event_id_ok(s);
	}
	return 0;
}
