/* Moving a fragment header that fmp4_write.c wrote earlier on the timeline: the media
 * time of prft and the tfdt of its traf (see fmp4.h). The header is read whole first. */
#include "fmp4.h"

#include <errno.h>
#include <string.h>

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The first child box of [from, end) named type: its start; 0 when none. */
static size_t child(const uint8_t *buf, size_t from, size_t end, const char *type)
{
	while (from + 8 <= end) {
		uint32_t size = get32(buf + from);
		if (size < 8 || size > end - from)
			return 0;
		if (!memcmp(buf + from + 4, type, 4))
			return from;
		from += size;
	}
	return 0;
}

int fmp4_frag_rebase(uint8_t *buf, size_t len, uint64_t minus)
{
	struct fmp4_frag f;
	int r = fmp4_read_frag(NULL, buf, len, &f);
	if (r < 0)
		return r;
	if (f.base_time < minus)
		return -ERANGE;
	/* As written: prft (32 bytes, version 1, its media time at 24), then moof. */
	if (get32(buf) != 32 || memcmp(buf + 4, "prft", 4) || buf[8] != 1 || memcmp(buf + 36, "moof", 4))
		return -EBADMSG;
	size_t moof = 32, moof_end = moof + get32(buf + moof);
	size_t traf = child(buf, moof + 8, moof_end, "traf");
	size_t tfdt = traf ? child(buf, traf + 8, traf + get32(buf + traf), "tfdt") : 0;
	if (!tfdt || get32(buf + tfdt) != 20 || buf[tfdt + 8] != 1)
		return -EBADMSG;
	put64(buf + 24, get64(buf + 24) - minus);
	put64(buf + tfdt + 12, f.base_time - minus);
	return 0;
}
