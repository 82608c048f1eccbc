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

void catrec_reset(struct catrec_buf *b)
{
	b->len = 0;
	b->failed = 0;
}

#define LEN_MAX 5 /* a varint of a record's length (< 2^32) */

int catrec_add(struct catrec_buf *b, const kp_CatalogRecord *rec)
{
	if (b->failed)
		return b->failed;
	/* Room for the largest record, so that it is encoded once, straight in place (a
	 * size pass first would double nanopb's work at every level of nesting). */
	size_t room = LEN_MAX + kp_CatalogRecord_size;
	if (b->cap - b->len < room) {
		size_t cap = b->cap ? b->cap : 4 * room;
		while (cap - b->len < room)
			cap *= 2;
		if (cap > b->max + room) /* never more than the ceiling needs */
			cap = b->max + room;
		uint8_t *np = realloc(b->p, cap);
		if (!np)
			return b->failed = -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	uint8_t *at = b->p + b->len;
	pb_ostream_t o = pb_ostream_from_buffer(at + LEN_MAX, kp_CatalogRecord_size);
	if (!pb_encode(&o, kp_CatalogRecord_fields, rec))
		return b->failed = -EINVAL;
	uint8_t len[LEN_MAX];
	pb_ostream_t lo = pb_ostream_from_buffer(len, sizeof len);
	pb_encode_varint(&lo, o.bytes_written);
	size_t n = lo.bytes_written + o.bytes_written;
	if (n > b->max - b->len)
		return b->failed = -E2BIG;
	memmove(at + lo.bytes_written, at + LEN_MAX, o.bytes_written);
	memcpy(at, len, lo.bytes_written);
	b->len += n;
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
		if (!pb_decode_ex(&s, kp_CatalogRecord_fields, rec, PB_DECODE_DELIMITED | PB_DECODE_NOINIT))
			return -EBADMSG;
		int r = cb(arg, rec);
		if (r)
			return r;
	}
	return 0;
}
