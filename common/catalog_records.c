/* Length-prefixed CatalogRecord messages (see catalog_records.h), through nanopb. */
#include "catalog_records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>
#include <pb_encode.h>

void catrec_init(struct catrec_buf *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max;
}

void catrec_free(struct catrec_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

long catrec_encode(const kp_CatalogRecord *rec, uint8_t *buf, size_t cap)
{
	pb_ostream_t o = pb_ostream_from_buffer(buf, cap);
	return pb_encode_delimited(&o, kp_CatalogRecord_fields, rec) ? (long)o.bytes_written : -EINVAL;
}

int catrec_add(struct catrec_buf *b, const kp_CatalogRecord *rec)
{
	if (b->failed)
		return b->failed;
	size_t n;
	if (!pb_get_encoded_size(&n, kp_CatalogRecord_fields, rec))
		return b->failed = -EINVAL;
	n += 10; /* the varint length */
	if (n > b->max - b->len)
		return b->failed = -E2BIG;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		if (cap > b->max)
			cap = b->max;
		uint8_t *np = realloc(b->p, cap);
		if (!np)
			return b->failed = -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	long w = catrec_encode(rec, b->p + b->len, b->cap - b->len);
	if (w < 0)
		return b->failed = -EINVAL;
	b->len += (size_t)w;
	return 0;
}

/* The whole length (prefix included) of the record at p[0..len), or 0 when it does
 * not fit in len. */
static size_t record_len(const uint8_t *p, size_t len)
{
	pb_istream_t s = pb_istream_from_buffer(p, len);
	uint64_t n;
	if (!pb_decode_varint(&s, &n) || n > s.bytes_left)
		return 0;
	return (size_t)(len - s.bytes_left + n);
}

size_t catrec_piece(const uint8_t *p, size_t len, size_t off, size_t piece)
{
	size_t n = 0;
	while (off + n < len) {
		size_t r = record_len(p + off + n, len - off - n);
		if (r == 0)
			return len - off; /* not ours to cut: the reader refuses it */
		if (n && n + r > piece)
			break;
		n += r;
	}
	return n;
}

int catrec_each(const uint8_t *p, size_t len, kp_CatalogRecord *rec, int (*cb)(void *arg, const kp_CatalogRecord *rec),
		void *arg)
{
	pb_istream_t s = pb_istream_from_buffer(p, len);
	while (s.bytes_left) {
		memset(rec, 0, sizeof *rec);
		if (!pb_decode_delimited(&s, kp_CatalogRecord_fields, rec))
			return -EBADMSG;
		int r = cb(arg, rec);
		if (r)
			return r;
	}
	return 0;
}
