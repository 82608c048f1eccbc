/* Coverage snapshots from the summaries (see snapshot.h). */
#include "snapshot.h"

#include <errno.h>

#include "kp_checked.h"

static int add_bucket(void *arg, int64_t bucket_ms, int64_t covered_ms)
{
	struct rec_snapshot *s = arg;
	int64_t off;
	if (kp_sub_i64(bucket_ms, s->b[0].start_ms, &off) < 0 || off < 0)
		return 0;
	int64_t i = off / s->bucket_ms; /* the bucket that holds bucket_ms */
	if (i < (int64_t)s->nbuckets)
		s->b[i].covered_ms += covered_ms;
	return 0;
}

int rec_snapshot(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms, int64_t bucket_ms,
		 struct rec_snapshot *ret)
{
	if (from_ms >= to_ms || bucket_ms <= 0 || bucket_ms % REC_COV_BUCKET_MS)
		return -EINVAL;
	int64_t first, n;
	if (kp_floor_i64(from_ms, bucket_ms, &first) < 0 || kp_steps_i64(first, to_ms, bucket_ms, &n) < 0 ||
	    n > REC_SNAPSHOT_MAX_BUCKETS)
		return -E2BIG; /* buckets needed: more than fit, or more than 64 bits count */
	ret->from_ms = from_ms;
	ret->to_ms = to_ms;
	ret->bucket_ms = bucket_ms;
	ret->nbuckets = (uint32_t)n;
	for (int64_t i = 0; i < n; i++) /* first + i * bucket_ms < to_ms: no overflow */
		ret->b[i] = (struct rec_bucket){.start_ms = first + i * bucket_ms};
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
