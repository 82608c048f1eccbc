/* libFuzzer harness for the camera audio parsers (common/audio.c): the input is a run
 * of ADTS frames as a Baichuan 05wb record carries them, each header read and every
 * frame's bytes touched; and the same bytes as an RTSP camera's AudioSpecificConfig and
 * as an Opus packet. */
#include <stddef.h>
#include <stdint.h>

#include "audio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0, sum = 0;
	struct kp_audio_format f;
	while (off < size) {
		size_t hl, fl;
		if (kp_adts_parse(data + off, size - off, &hl, &fl, &f) < 0)
			break;
		if (hl >= fl || fl > size - off || f.rate == 0 || f.channels == 0)
			__builtin_trap();
		for (size_t i = hl; i < fl; i++)
			sum += data[off + i];
		off += fl;
	}
	if (kp_aac_config_parse(data, size, &f) == 0 && (f.config_len != size || f.rate == 0 || f.channels == 0))
		__builtin_trap();
	if (kp_opus_packet_samples(data, size) > 5760)
		__builtin_trap();
	return (int)(sum & 0);
}
