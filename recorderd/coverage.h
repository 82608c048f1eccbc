/* Per-stream coverage summaries, maintained on every catalog commit and retention
 * delete: the merged exact intervals (at most REC_COV_MAX_RANGES, newest kept; older
 * time is then described by buckets only) and the covered milliseconds per fixed bucket.
 * Pure; unit-tested by test/unit/test_rec_coverage.c. */
#ifndef KP_REC_COVERAGE_H
#define KP_REC_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#define REC_COV_MAX_RANGES 256
#define REC_COV_BUCKET_MS  (3600 * 1000ll) /* stored granularity; snapshots sum them */

struct rec_range {
	int64_t start_ms, end_ms; /* [start, end) */
};

struct rec_cov {
	uint32_t n;
	uint32_t reserved;
	int64_t exact_from_ms; /* before this, only buckets describe coverage */
	struct rec_range r[REC_COV_MAX_RANGES];
};

/* Adds [start, end): merged with ranges it overlaps or touches, in any order. When more
 * than REC_COV_MAX_RANGES result, the oldest is dropped and exact_from_ms moves past it. */
void rec_cov_add(struct rec_cov *c, int64_t start_ms, int64_t end_ms);

/* Removes [start, end) (a range may split; a split that would overflow drops the oldest). */
void rec_cov_remove(struct rec_cov *c, int64_t start_ms, int64_t end_ms);

/* An uncapped union of intervals and per-bucket sums, built from fragments by
 * keeppeekctl check and by a coverage rebuild. Cheap for intervals that arrive in
 * time order (the usual case); others are inserted. */
struct rec_ranges {
	struct rec_range *r;
	size_t n, cap;
};

struct rec_bucket {
	int64_t start_ms, covered_ms;
};

struct rec_buckets {
	struct rec_bucket *b;
	size_t n, cap;
};

/* Both return -ENOMEM, else 0. */
int rec_ranges_add(struct rec_ranges *rs, int64_t start_ms, int64_t end_ms);
int rec_buckets_add(struct rec_buckets *bs, int64_t start_ms, int64_t end_ms);
void rec_ranges_free(struct rec_ranges *rs);
void rec_buckets_free(struct rec_buckets *bs);

/* The part of [start, end) inside bucket b_start (REC_COV_BUCKET_MS long), walking the
 * buckets an interval touches: first call with *b_start = INT64_MIN; returns 0 when done. */
int rec_cov_next_bucket(int64_t start_ms, int64_t end_ms, int64_t *b_start, int64_t *ret_covered_ms);

#endif
