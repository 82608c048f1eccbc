/* libFuzzer harness for ingestd's camera audio decoders and converter
 * (ingestd/audio_adpcm.c, audio_g711.c, audio_conv.c): the input as one IMA ADPCM block,
 * whose sample count must be the header's promise or an error; as G.711 of both laws;
 * and, its first byte choosing the codec and rate, as camera units of up to 512 bytes
 * pushed through one converter to Opus, every packet out checked. */
#include <stddef.h>
#include <stdint.h>

#include "audio_adpcm.h"
#include "audio_conv.h"
#include "audio_g711.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int16_t pcm[2 * ING_AUDIO_CONV_UNIT_MAX];

static void out(void *arg, const struct kp_audio_unit *au)
{
	(void)arg;
	if (au->fmt.codec != KP_AUDIO_OPUS || au->len == 0 || au->len > ING_AUDIO_CONV_PACKET_MAX ||
	    kp_opus_packet_samples(au->data, au->len) != 960)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > ING_AUDIO_CONV_UNIT_MAX)
		return 0;
	const char *why = NULL;
	int n = ing_adpcm_decode_block(data, size, pcm, sizeof pcm / sizeof pcm[0], &why);
	if ((n >= 0 && (size_t)n != ing_adpcm_block_samples(size)) || (n < 0 && !why))
		__builtin_trap();
	ing_g711_decode(data, size, pcm, 0);
	ing_g711_decode(data, size, pcm, 1);
	if (size < 1)
		return 0;
	static const enum kp_audio_codec codecs[] = {KP_AUDIO_ADPCM_IMA, KP_AUDIO_PCMU, KP_AUDIO_PCMA};
	static const uint32_t rates[] = {8000, 16000, 48000, 44100};
	struct kp_audio_unit in = {
	    .fmt = {.codec = codecs[data[0] % 3], .rate = rates[(data[0] / 3) % 4], .channels = 1}};
	struct ing_audio_conv *c = NULL;
	for (size_t at = 1; at < size; at += 512) {
		in.data = data + at;
		in.len = size - at < 512 ? size - at : 512;
		in.pts_90k += 5760;
		ing_audio_conv_push(&c, &in, out, NULL, &why);
	}
	ing_audio_conv_free(&c);
	return 0;
}
