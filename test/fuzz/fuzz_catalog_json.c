/* libFuzzer harness for webd's reading of recorderd's answers (common/catalog_records.c,
 * catalog_json.c): the first byte picks the answer kind and a piece size, the rest is
 * the tail of CatalogReply pieces, cut where catrec_piece cuts and rendered a piece at
 * a time into a bounded buffer emptied as it fills, as webd's relay does. Whatever
 * renders must be one JSON document the common reader accepts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_json.h"
#include "catalog_records.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (8u << 20)

struct sink {
	struct catj c;
	char *out;
	size_t len;
};

static void drain(struct sink *s)
{
	size_t n;
	const char *t = catj_text(&s->c, &n);
	if (s->len + n >= OUT_MAX)
		abort(); /* the input cannot hold that many records */
	memcpy(s->out + s->len, t, n);
	s->len += n;
	catj_take(&s->c);
}

static int one(void *arg, const kp_CatalogRecord *rec)
{
	struct sink *s = arg;
	if (catj_full(&s->c))
		drain(s);
	return catj_record(&s->c, rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[CATJ_BUF_MIN];
	static char *out;
	static kp_CatalogRecord rec;
	static struct json_tok toks[4096];
	if (size < 1)
		return 0;
	if (!out && !(out = malloc(OUT_MAX)))
		abort();
	enum catj_kind kind = (enum catj_kind)(data[0] % 6);
	size_t piece = (size_t)16 << (data[0] >> 4);
	const uint8_t *p = data + 1;
	size_t len = size - 1;
	struct sink s = {.out = out};
	catj_begin(&s.c, kind, buf, sizeof buf);
	int r = 0;
	for (size_t off = 0; off < len && r == 0;) {
		size_t n = catrec_piece(p, len, off, piece);
		if (n == 0 || n > len - off)
			abort(); /* a piece must advance and stay inside the tail */
		r = catrec_each(p + off, n, &rec, one, &s);
		off += n;
	}
	if (r == 0)
		r = catj_end(&s.c);
	if (r < 0)
		return 0;
	drain(&s);
	struct json_doc d;
	int pr = json_parse(&d, out, s.len, toks, 4096);
	if (pr < 0 && pr != -E2BIG)
		abort(); /* rendered text that is not JSON */
	return 0;
}
