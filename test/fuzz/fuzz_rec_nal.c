/* libFuzzer harness for recorderd's handling of an access unit from ingestd: Annex-B NAL
 * splitting, parameter-set extraction, the avcC/hvcC record from them, and conversion to
 * a length-prefixed sample. The first byte chooses the codec. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "codec_config.h"
#include "nal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum rec_codec codec = data[0] & 1 ? REC_CODEC_H265 : REC_CODEC_H264;
	static struct rec_nal nals[REC_NAL_MAX_PER_AU];
	int n = rec_nal_split(data + 1, size - 1, nals, REC_NAL_MAX_PER_AU);
	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		int t = rec_nal_type(codec, &nals[i]);
		if (t >= 0)
			(void)rec_nal_is_keyframe_slice(codec, t);
	}
	static struct rec_param_sets ps;
	if (rec_nal_param_sets(codec, nals, (unsigned)n, &ps) > 0) {
		static uint8_t cfg[REC_CODEC_CONFIG_MAX];
		size_t len;
		rec_codec_config(codec, &ps, cfg, sizeof cfg, &len);
	}
	size_t out = rec_nal_sample_size(nals, (unsigned)n);
	uint8_t *buf = malloc(out);
	if (buf) {
		rec_nal_to_sample(nals, (unsigned)n, buf);
		free(buf);
	}
	return 0;
}
