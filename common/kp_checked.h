/* Checked arithmetic for times, sizes and counts that come from outside (requests,
 * camera streams, files): each returns 0 and sets *ret, or -ERANGE and leaves *ret
 * alone when the exact result does not fit. The one place such arithmetic is done; see
 * docs/limits.md. Header-only, no logging (common/ is library code). */
#ifndef KP_CHECKED_H
#define KP_CHECKED_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

static inline int kp_add_i64(int64_t a, int64_t b, int64_t *ret)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

static inline int kp_sub_i64(int64_t a, int64_t b, int64_t *ret)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

static inline int kp_mul_i64(int64_t a, int64_t b, int64_t *ret)
{
	int64_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

static inline int kp_add_u64(uint64_t a, uint64_t b, uint64_t *ret)
{
	uint64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

static inline int kp_mul_u64(uint64_t a, uint64_t b, uint64_t *ret)
{
	uint64_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

static inline int kp_add_size(size_t a, size_t b, size_t *ret)
{
	size_t r;
	if (__builtin_add_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

static inline int kp_mul_size(size_t a, size_t b, size_t *ret)
{
	size_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

/* v rounded down to a multiple of step (step > 0), towards minus infinity. */
static inline int kp_floor_i64(int64_t v, int64_t step, int64_t *ret)
{
	if (step <= 0)
		return -ERANGE;
	int64_t q = v / step;
	if (v % step != 0 && v < 0)
		q--;
	return kp_mul_i64(q, step, ret);
}

/* How many steps of step cover [from, to): 0 for an empty range, -ERANGE when the
 * span itself does not fit in 64 bits. */
static inline int kp_steps_i64(int64_t from, int64_t to, int64_t step, int64_t *ret)
{
	int64_t span;
	if (step <= 0 || kp_sub_i64(to, from, &span) < 0)
		return -ERANGE;
	*ret = span <= 0 ? 0 : span / step + (span % step != 0);
	return 0;
}

#endif
