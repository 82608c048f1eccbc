/* Coverage interval merging and bucket splitting (see coverage.h). */
#include "coverage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void drop_oldest(struct rec_cov *c)
{
	c->exact_from_ms = c->r[0].end_ms;
	memmove(&c->r[0], &c->r[1], (c->n - 1) * sizeof c->r[0]);
	c->n--;
}

void rec_cov_add(struct rec_cov *c, int64_t start_ms, int64_t end_ms)
{
	if (end_ms <= start_ms || end_ms <= c->exact_from_ms)
		return;
	if (start_ms < c->exact_from_ms)
		start_ms = c->exact_from_ms;
	/* First range that ends at or after start (touching counts), last that starts at or before end. */
	uint32_t lo = 0;
	while (lo < c->n && c->r[lo].end_ms < start_ms)
		lo++;
	uint32_t hi = lo;
	while (hi < c->n && c->r[hi].start_ms <= end_ms)
		hi++;
	if (hi > lo) {
		if (c->r[lo].start_ms < start_ms)
			start_ms = c->r[lo].start_ms;
		if (c->r[hi - 1].end_ms > end_ms)
			end_ms = c->r[hi - 1].end_ms;
		memmove(&c->r[lo + 1], &c->r[hi], (c->n - hi) * sizeof c->r[0]);
		c->n -= hi - lo - 1;
	} else {
		if (c->n == REC_COV_MAX_RANGES) {
			if (lo == 0) { /* older than everything kept: buckets only */
				c->exact_from_ms = end_ms;
				return;
			}
			drop_oldest(c);
			lo--;
		}
		memmove(&c->r[lo + 1], &c->r[lo], (c->n - lo) * sizeof c->r[0]);
		c->n++;
	}
	c->r[lo].start_ms = start_ms;
	c->r[lo].end_ms = end_ms;
}

void rec_cov_remove(struct rec_cov *c, int64_t start_ms, int64_t end_ms)
{
	if (end_ms <= start_ms)
		return;
	for (uint32_t i = 0; i < c->n; i++) {
		struct rec_range *r = &c->r[i];
		if (r->end_ms <= start_ms || r->start_ms >= end_ms)
			continue;
		if (r->start_ms < start_ms && r->end_ms > end_ms) { /* split */
			if (c->n == REC_COV_MAX_RANGES) {
				if (i == 0) { /* the oldest range: keep its newer part only */
					r->start_ms = end_ms;
					c->exact_from_ms = end_ms;
					return;
				}
				drop_oldest(c);
				i--;
			}
			memmove(&c->r[i + 1], &c->r[i], (c->n - i) * sizeof c->r[0]);
			c->n++;
			c->r[i].end_ms = start_ms;
			c->r[i + 1].start_ms = end_ms;
			return;
		}
		if (r->start_ms >= start_ms && r->end_ms <= end_ms) { /* whole range goes */
			memmove(&c->r[i], &c->r[i + 1], (c->n - i - 1) * sizeof c->r[0]);
			c->n--;
			i--;
			continue;
		}
		if (r->start_ms < start_ms)
			r->end_ms = start_ms;
		else
			r->start_ms = end_ms;
	}
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int rec_cov_next_bucket(int64_t start_ms, int64_t end_ms, int64_t *b_start, int64_t *ret_covered_ms)
{
	if (end_ms <= start_ms)
		return 0;
	int64_t b = *b_start == INT64_MIN ? floor_div(start_ms, REC_COV_BUCKET_MS) * REC_COV_BUCKET_MS
					  : *b_start + REC_COV_BUCKET_MS;
	if (b >= end_ms)
		return 0;
	int64_t s = start_ms > b ? start_ms : b;
	int64_t e = end_ms < b + REC_COV_BUCKET_MS ? end_ms : b + REC_COV_BUCKET_MS;
	*b_start = b;
	*ret_covered_ms = e - s;
	return 1;
}

static int reserve(void **p, size_t *cap, size_t want, size_t size)
{
	if (want <= *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	void *np = realloc(*p, ncap * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

int rec_ranges_add(struct rec_ranges *rs, int64_t start_ms, int64_t end_ms)
{
	if (end_ms <= start_ms)
		return 0;
	/* First range ending at or after start (touching merges), as in rec_cov_add; from
	 * the end, because fragments mostly arrive in time order. */
	size_t lo = rs->n;
	while (lo > 0 && rs->r[lo - 1].end_ms >= start_ms)
		lo--;
	size_t hi = lo;
	while (hi < rs->n && rs->r[hi].start_ms <= end_ms)
		hi++;
	if (hi > lo) {
		if (rs->r[lo].start_ms < start_ms)
			start_ms = rs->r[lo].start_ms;
		if (rs->r[hi - 1].end_ms > end_ms)
			end_ms = rs->r[hi - 1].end_ms;
		memmove(&rs->r[lo + 1], &rs->r[hi], (rs->n - hi) * sizeof rs->r[0]);
		rs->n -= hi - lo - 1;
	} else {
		if (reserve((void **)&rs->r, &rs->cap, rs->n + 1, sizeof rs->r[0]) < 0)
			return -ENOMEM;
		memmove(&rs->r[lo + 1], &rs->r[lo], (rs->n - lo) * sizeof rs->r[0]);
		rs->n++;
	}
	rs->r[lo].start_ms = start_ms;
	rs->r[lo].end_ms = end_ms;
	return 0;
}

int rec_buckets_add(struct rec_buckets *bs, int64_t start_ms, int64_t end_ms)
{
	int64_t b = INT64_MIN, part;
	while (rec_cov_next_bucket(start_ms, end_ms, &b, &part)) {
		size_t i = bs->n;
		while (i > 0 && bs->b[i - 1].start_ms > b)
			i--;
		if (i > 0 && bs->b[i - 1].start_ms == b) {
			bs->b[i - 1].covered_ms += part;
			continue;
		}
		if (reserve((void **)&bs->b, &bs->cap, bs->n + 1, sizeof bs->b[0]) < 0)
			return -ENOMEM;
		memmove(&bs->b[i + 1], &bs->b[i], (bs->n - i) * sizeof bs->b[0]);
		bs->n++;
		bs->b[i] = (struct rec_bucket){.start_ms = b, .covered_ms = part};
	}
	return 0;
}

void rec_ranges_free(struct rec_ranges *rs)
{
	free(rs->r);
	memset(rs, 0, sizeof *rs);
}

void rec_buckets_free(struct rec_buckets *bs)
{
	free(bs->b);
	memset(bs, 0, sizeof *bs);
}
