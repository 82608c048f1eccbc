/* libFuzzer harness for ingestd's RTSP access-unit code: byte 0 picks the codec, the NAL
 * length size and the keyframe flag, a 16-bit length then gives the extradata, and the
 * rest is the packet. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rtsp_au.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	enum kp_codec codec = data[0] & 1 ? KP_CODEC_H265 : KP_CODEC_H264;
	static const unsigned sizes[4] = {0, 1, 2, 4};
	unsigned forced = sizes[(data[0] >> 1) & 3];
	bool key = data[0] & 8;
	size_t extra_len = (size_t)data[1] << 8 | data[2];
	data += 3;
	size -= 3;
	if (extra_len > size)
		extra_len = size;
	uint8_t params[ING_RTSP_MAX_PARAMS];
	size_t params_len = 0;
	unsigned lsz = 0;
	const char *why;
	if (ing_rtsp_extradata_params(codec, data, extra_len, params, sizeof params, &params_len, &lsz, &why) < 0)
		lsz = forced;
	uint8_t *buf = NULL;
	size_t cap = 0, n;
	ing_rtsp_au_build(codec, data + extra_len, size - extra_len, lsz, key, params, params_len, &buf, &cap, &n,
			  &why);
	free(buf);
	return 0;
}
