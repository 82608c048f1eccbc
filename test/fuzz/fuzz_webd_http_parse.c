/* libFuzzer harness for webd's request-head parser: the input is what a client sends,
 * parsed once whole and once fed in two slices (the first byte chooses the cut); both
 * must agree, and every span of a complete head must lie inside it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > HTTP_HEAD_MAX + 1024)
		return 0;
	size_t cut = size > 1 ? data[0] * (size - 1) / 255 : 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	struct http_head *a = malloc(sizeof *a), *b = malloc(sizeof *b);
	if (!a || !b)
		abort();
	http_head_init(a);
	enum http_parse_status ra = http_parse_head(s, n, a);
	http_head_init(b);
	enum http_parse_status rb = http_parse_head(s, cut < n ? cut : n, b);
	if (rb == HP_INCOMPLETE)
		rb = http_parse_head(s, n, b);
	if (ra != rb)
		abort();
	if (ra == HP_DONE) {
		if (a->head_len > n || a->head_len != b->head_len || a->nheaders > KP_HTTP_MAX_HEADERS)
			abort();
		for (unsigned i = 0; i < a->nheaders; i++)
			if (a->name[i].off + a->name[i].len > a->head_len ||
			    a->value[i].off + a->value[i].len > a->head_len)
				abort();
	}
	free(a);
	free(b);
	return 0;
}
