/* An RBSP bit reader for the H.264/H.265 toolkit (ITU-T H.264 7.2, H.265 7.2): a NAL
 * unit's bytes after its header with the emulation-prevention bytes taken out (at most
 * H26X_BITS_MAX of them: parameter sets and the start of slice headers), read as u(n),
 * ue(v) and se(v). Reading past the end sets overrun and returns 0. */
#ifndef KP_H26X_BITS_H
#define KP_H26X_BITS_H

#include <stddef.h>
#include <stdint.h>

#include "h26x.h"

#define H26X_BITS_MAX H26X_PS_MAX

struct h26x_bits {
	uint8_t rbsp[H26X_BITS_MAX];
	size_t len; /* bytes */
	size_t pos; /* bits */
	int overrun;
};

/* The NAL unit nal (len bytes) from byte hdr on, up to H26X_BITS_MAX RBSP bytes. */
static inline void h26x_bits_init(struct h26x_bits *b, const uint8_t *nal, size_t len, size_t hdr)
{
	b->len = 0;
	b->pos = 0;
	b->overrun = 0;
	unsigned zeros = 0;
	for (size_t i = hdr; i < len && b->len < H26X_BITS_MAX; i++) {
		if (zeros >= 2 && nal[i] == 3) {
			zeros = 0;
			continue;
		}
		zeros = nal[i] == 0 ? zeros + 1 : 0;
		b->rbsp[b->len++] = nal[i];
	}
}

static inline uint32_t h26x_bits_u(struct h26x_bits *b, unsigned n)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < n; i++) {
		if (b->pos >= b->len * 8) {
			b->overrun = 1;
			return 0;
		}
		v = v << 1 | ((b->rbsp[b->pos / 8] >> (7 - b->pos % 8)) & 1);
		b->pos++;
	}
	return v;
}

static inline uint32_t h26x_bits_ue(struct h26x_bits *b)
{
	unsigned zeros = 0;
	while (!b->overrun && h26x_bits_u(b, 1) == 0)
		if (++zeros > 31) {
			b->overrun = 1;
			return 0;
		}
	return zeros ? (uint32_t)((1ull << zeros) - 1 + h26x_bits_u(b, zeros)) : 0;
}

/* se(v), within -2^31 + 1 .. 2^31 - 1 (the largest code, 2^32 - 1, would be 2^31). */
static inline int32_t h26x_bits_se(struct h26x_bits *b)
{
	uint32_t k = h26x_bits_ue(b);
	int64_t v = k & 1 ? (int64_t)((k + 1ull) / 2) : -(int64_t)(k / 2);
	return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

#endif
