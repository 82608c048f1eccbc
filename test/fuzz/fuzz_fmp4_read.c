/* libFuzzer harness for the one fMP4 reader (common/fmp4_read.c) as recovery and stored
 * playback use it: the input is a recording file (seeds: files recorderd wrote, one cut
 * in the middle of a fragment); the init segment is read, then fragment after fragment
 * while it lies whole in the input, every sample converted to Annex-B and a copy of
 * each fragment header rebased (common/fmp4_rebase.c), as an export does; the audio
 * track's samples are kept and each one's bytes read, as stored playback does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmp4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink; /* the audio bytes are read, as playback sends them */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fmp4_init t;
	static struct fmp4_frag f;
	static uint8_t hdr[FMP4_FRAG_HEADER_MAX];
	static struct fmp4_sample_info audio[FMP4_AUDIO_MAX_SAMPLES];
	f.audio = audio;
	if (fmp4_read_init(data, size, &t) < 0)
		return 0;
	size_t at = t.len;
	while (at < size && fmp4_read_frag(&t, data + at, size - at, &f) == 0) {
		if (f.header_len > sizeof hdr || f.header_len > size - at)
			abort(); /* the header is bounded and inside the input; the samples may not be */
		memcpy(hdr, data + at, f.header_len);
		fmp4_frag_rebase(hdr, f.header_len, f.base_time / 2, t.audio_timescale);
		if (f.total_len > size - at)
			break;
		for (unsigned i = 0; i < f.nsamples; i++) {
			const struct fmp4_sample_info *s = &f.samples[i];
			size_t cap = fmp4_annexb_cap(&t, s->size), len;
			uint8_t *out = malloc(cap);
			if (!out)
				return 0;
			fmp4_annexb(&t, data + at + s->offset, s->size, s->keyframe, out, cap, &len);
			free(out);
		}
		for (unsigned i = 0; i < f.naudio; i++)
			for (uint32_t k = 0; k < f.audio[i].size; k++)
				sink ^= data[at + f.audio[i].offset + k];
		at += f.total_len;
	}
	return 0;
}
