/* The bounded big-endian box writer of the fMP4 writer (fmp4_write.c, fmp4_audio.c):
 * every byte past cap is counted as an overflow instead of written, and box()/end()
 * patch each box's size when it closes. */
#ifndef KP_FMP4_BW_H
#define KP_FMP4_BW_H

#include <stddef.h>
#include <stdint.h>

struct bw {
	uint8_t *p;
	size_t len, cap;
	size_t stack[8];
	unsigned depth;
	int overflow;
};

static inline void u8(struct bw *b, uint32_t v)
{
	if (b->len < b->cap)
		b->p[b->len] = (uint8_t)v;
	else
		b->overflow = 1;
	b->len++;
}

static inline void u16(struct bw *b, uint32_t v)
{
	u8(b, v >> 8);
	u8(b, v);
}

static inline void u32(struct bw *b, uint32_t v)
{
	u16(b, v >> 16);
	u16(b, v);
}

static inline void u64(struct bw *b, uint64_t v)
{
	u32(b, (uint32_t)(v >> 32));
	u32(b, (uint32_t)v);
}

static inline void zeros(struct bw *b, size_t n)
{
	while (n--)
		u8(b, 0);
}

static inline void bytes(struct bw *b, const void *d, size_t n)
{
	const uint8_t *s = d;
	for (size_t i = 0; i < n; i++)
		u8(b, s[i]);
}

static inline void box(struct bw *b, const char type[4])
{
	b->stack[b->depth++] = b->len;
	u32(b, 0);
	bytes(b, type, 4);
}

static inline void full_box(struct bw *b, const char type[4], uint8_t version, uint32_t flags)
{
	box(b, type);
	u32(b, (uint32_t)version << 24 | flags);
}

static inline void end(struct bw *b)
{
	size_t at = b->stack[--b->depth];
	uint32_t size = (uint32_t)(b->len - at);
	if (at + 4 <= b->cap) {
		b->p[at] = (uint8_t)(size >> 24);
		b->p[at + 1] = (uint8_t)(size >> 16);
		b->p[at + 2] = (uint8_t)(size >> 8);
		b->p[at + 3] = (uint8_t)size;
	}
}

static inline void matrix(struct bw *b)
{
	static const uint32_t unity[9] = {0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000};
	for (int i = 0; i < 9; i++)
		u32(b, unity[i]);
}

/* A dinf whose one data reference is "in this file". */
static inline void dinf(struct bw *b)
{
	box(b, "dinf");
	full_box(b, "dref", 0, 0);
	u32(b, 1);
	full_box(b, "url ", 0, 1);
	end(b);
	end(b);
	end(b);
}

#endif
