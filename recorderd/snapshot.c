/* Coverage snapshots from the summaries (see snapshot.h). */
#include "snapshot.h"

#include <errno.h>

static int64_t floor_to(int64_t v, int64_t step)
{
	int64_t q = v / step;
	if (v % step != 0 && v < 0)
		q--;
	return q * step;
}

static int add_bucket(void *arg, int64_t bucket_ms, int64_t covered_ms)
{
	struct rec_snapshot *s = arg;
	int64_t i = (floor_to(bucket_ms, s->bucket_ms) - s->b[0].start_ms) / s->bucket_ms;
	if (i >= 0 && i < (int64_t)s->nbuckets)
		s->b[i].covered_ms += covered_ms;
	return 0;
}

int rec_snapshot(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms, int64_t bucket_ms,
		 struct rec_snapshot *ret)
{
	if (from_ms >= to_ms || bucket_ms <= 0 || bucket_ms % REC_COV_BUCKET_MS)
		return -EINVAL;
	int64_t first = floor_to(from_ms, bucket_ms);
	if ((to_ms - first + bucket_ms - 1) / bucket_ms > REC_SNAPSHOT_MAX_BUCKETS) /* buckets needed */
		return -E2BIG;
	ret->from_ms = from_ms;
	ret->to_ms = to_ms;
	ret->bucket_ms = bucket_ms;
	ret->nbuckets = 0;
	for (int64_t b = first; b < to_ms; b += bucket_ms)
		ret->b[ret->nbuckets++] = (struct rec_bucket){.start_ms = b};
	struct rec_cov cov;
	int r = cat_coverage(t, stream_id, &cov);
	if (r < 0)
		return r;
	ret->exact_from_ms = cov.exact_from_ms > from_ms ? cov.exact_from_ms : INT64_MIN;
	ret->n = 0;
	for (uint32_t i = 0; i < cov.n; i++) {
		struct rec_range x = cov.r[i];
		if (x.end_ms <= from_ms || x.start_ms >= to_ms)
			continue;
		ret->r[ret->n++] = (struct rec_range){.start_ms = x.start_ms > from_ms ? x.start_ms : from_ms,
						      .end_ms = x.end_ms < to_ms ? x.end_ms : to_ms};
	}
	return cat_each_coverage_bucket(t, stream_id, first, to_ms, add_bucket, ret);
}
