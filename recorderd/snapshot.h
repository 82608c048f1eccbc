/* Coverage snapshot of one stream for a time range, answered from the maintained
 * summaries only (never by scanning fragments): the merged exact ranges inside the range
 * (at most REC_COV_MAX_RANGES per stream; before exact_from_ms only buckets describe
 * coverage) and the covered milliseconds per fixed bucket (a multiple of the stored
 * one-hour buckets, default 6 h), every bucket of the range listed, empty ones too. */
#ifndef KP_REC_SNAPSHOT_H
#define KP_REC_SNAPSHOT_H

#include <stdint.h>

#include "catalog.h"
#include "coverage.h"

#define REC_SNAPSHOT_DEFAULT_BUCKET_MS (6 * REC_COV_BUCKET_MS)
#define REC_SNAPSHOT_MAX_BUCKETS       2048

struct rec_snapshot {
	int64_t from_ms, to_ms, bucket_ms;
	int64_t exact_from_ms; /* INT64_MIN: the exact ranges describe the whole range */
	uint32_t n;
	struct rec_range r[REC_COV_MAX_RANGES];
	uint32_t nbuckets;
	struct rec_bucket b[REC_SNAPSHOT_MAX_BUCKETS];
};

/* -EINVAL when from_ms >= to_ms or bucket_ms is not a positive multiple of
 * REC_COV_BUCKET_MS; -E2BIG when the range spans more than REC_SNAPSHOT_MAX_BUCKETS. */
int rec_snapshot(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms, int64_t bucket_ms,
		 struct rec_snapshot *ret);

#endif
