/* libFuzzer harness for common/h26x.c and common/h26x_config.c over untrusted access
 * units: strict and lenient Annex-B splitting (which must agree on every unit),
 * parameter-set extraction, the avcC/hvcC record from them and back, and conversion to a
 * length-prefixed sample and back to Annex-B, and picture order counts (h26x_poc.c: the
 * unit's parameter sets, then its first slice, twice so that the POC state is used). The
 * first byte chooses the codec. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h26x.h"
#include "h26x_config.h"
#include "h26x_poc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum kp_codec codec = data[0] & 1 ? KP_CODEC_H265 : KP_CODEC_H264;
	const uint8_t *au = data + 1;
	size_t len = size - 1;
	static struct h26x_nal nals[H26X_NAL_MAX_PER_AU];
	int n = h26x_split(au, len, nals, H26X_NAL_MAX_PER_AU);
	if (n <= 0)
		return 0;
	size_t off = 0, nl;
	const uint8_t *nal;
	for (int i = 0; i < n; i++) {
		if (!h26x_annexb_next(au, len, &off, &nal, &nl) || nal != nals[i].data || nl != nals[i].len)
			abort();
		if (nals[i].len >= h26x_nal_header_size(codec))
			(void)h26x_is_keyframe(codec, h26x_nal_type(codec, nals[i].data));
	}
	static struct h26x_param_sets ps;
	memset(&ps, 0, sizeof ps); /* this input's parameter sets only, all of its codec */
	if (h26x_param_sets(codec, nals, (unsigned)n, &ps) > 0) {
		static uint8_t cfg[H26X_CONFIG_MAX], params[4 * (4 + H26X_PS_MAX)];
		size_t cfg_len, params_len;
		unsigned lsz;
		const char *why;
		if (h26x_config_write(codec, &ps, cfg, sizeof cfg, &cfg_len) == 0 &&
		    h26x_config_read(codec, cfg, cfg_len, params, sizeof params, &params_len, &lsz, &why) != 0)
			abort();
	}
	struct h26x_poc poc;
	h26x_poc_init(&poc, codec);
	int32_t poc_value;
	bool reset;
	for (int k = 0; k < 2; k++)
		(void)h26x_poc_au(&poc, au, len, &poc_value, &reset);
	(void)h26x_poc_reorder(&poc);
	size_t out = h26x_sample_size(nals, (unsigned)n);
	uint8_t *buf = malloc(out);
	if (buf) {
		h26x_to_sample(nals, (unsigned)n, buf);
		if (h26x_sample_to_annexb(buf, out) != 0)
			abort();
		free(buf);
	}
	return 0;
}
