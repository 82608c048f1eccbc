/* libFuzzer harness for rtcd's stored-playback reader: the input is a recording file
 * (seeds: files recorded by recorderd's writer); the init segment is what precedes the
 * first moof/prft, then fragment after fragment is parsed and every sample converted to
 * Annex-B, as playback does with the byte ranges recorderd sends. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmp4_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rtc_fmp4_track t;
	static struct rtc_fmp4_frag f;
	size_t init_len = 0;
	while (size - init_len >= 8 && memcmp(data + init_len + 4, "moof", 4) &&
	       memcmp(data + init_len + 4, "prft", 4)) {
		uint32_t box = be32(data + init_len);
		if (box < 8 || box > size - init_len)
			break;
		init_len += box;
	}
	if (rtc_fmp4_parse_init(data, init_len, &t) < 0)
		return 0;
	size_t at = init_len;
	while (at < size && rtc_fmp4_parse_frag(&t, data + at, size - at, &f) == 0) {
		for (unsigned i = 0; i < f.nsamples; i++) {
			const struct rtc_fmp4_sample *s = &f.samples[i];
			size_t cap = rtc_fmp4_annexb_cap(&t, s->size), len;
			uint8_t *out = malloc(cap);
			if (!out)
				return 0;
			rtc_fmp4_annexb(&t, data + at + s->offset, s->size, s->keyframe, out, cap, &len);
			free(out);
		}
		at += f.total_len;
	}
	return 0;
}
