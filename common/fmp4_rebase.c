/* Moving a fragment header that fmp4_write.c wrote earlier on the timeline: the media
 * time of prft and the tfdt of its trafs (see fmp4.h). The header is read whole first.
 * The audio traf moves by the same time in its own timescale; an audio traf that starts
 * less than that before the video (audio received late, up to one audio frame) starts
 * at 0. */
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

static int tfdt_at(const uint8_t *buf, size_t traf, size_t *ret)
{
	size_t tfdt = child(buf, traf + 8, traf + get32(buf + traf), "tfdt");
	if (!tfdt || get32(buf + tfdt) != 20 || buf[tfdt + 8] != 1)
		return -EBADMSG;
	*ret = tfdt + 12;
	return 0;
}

int fmp4_frag_rebase(uint8_t *buf, size_t len, uint64_t minus, uint32_t audio_rate)
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
	size_t traf = child(buf, moof + 8, moof_end, "traf"), video_tfdt, audio_tfdt = 0;
	if (!traf || tfdt_at(buf, traf, &video_tfdt) < 0)
		return -EBADMSG;
	size_t next = traf + get32(buf + traf);
	size_t audio = next < moof_end ? child(buf, next, moof_end, "traf") : 0;
	if (audio && (!audio_rate || tfdt_at(buf, audio, &audio_tfdt) < 0))
		return -EBADMSG;
	if (audio && minus > (UINT64_MAX - 45000) / audio_rate)
		return -ERANGE;
	put64(buf + 24, get64(buf + 24) - minus);
	put64(buf + video_tfdt, f.base_time - minus);
	if (audio) {
		uint64_t a = get64(buf + audio_tfdt), am = (minus * audio_rate + 45000) / 90000;
		put64(buf + audio_tfdt, a > am ? a - am : 0);
	}
	return 0;
}
