/* Box-average downscaling of YUV 4:2:0 (see scale.h). */
#include "scale.h"

#include <stddef.h>

unsigned tx_scale_factor(unsigned width)
{
	return width <= TX_VIDEO_WIDTH ? 1 : (width + TX_VIDEO_WIDTH - 1) / TX_VIDEO_WIDTH;
}

void tx_scale_size(unsigned w, unsigned h, unsigned *ret_w, unsigned *ret_h)
{
	unsigned k = tx_scale_factor(w);
	*ret_w = w / k & ~1u;
	*ret_h = h / k & ~1u;
}

static void plane(const struct tx_plane *src, const struct tx_plane *dst, unsigned ow, unsigned oh, unsigned k)
{
	for (unsigned y = 0; y < oh; y++) {
		uint8_t *out = dst->data + (size_t)y * (size_t)dst->stride;
		for (unsigned x = 0; x < ow; x++) {
			unsigned sum = 0;
			for (unsigned dy = 0; dy < k; dy++) {
				const uint8_t *in = src->data + (size_t)(y * k + dy) * (size_t)src->stride + x * k;
				for (unsigned dx = 0; dx < k; dx++)
					sum += in[dx];
			}
			out[x] = (uint8_t)((sum + k * k / 2) / (k * k));
		}
	}
}

void tx_scale_yuv420(const struct tx_plane src[3], unsigned w, unsigned h, struct tx_plane dst[3])
{
	unsigned k = tx_scale_factor(w), ow, oh;
	tx_scale_size(w, h, &ow, &oh);
	plane(&src[0], &dst[0], ow, oh, k);
	plane(&src[1], &dst[1], ow / 2, oh / 2, k);
	plane(&src[2], &dst[2], ow / 2, oh / 2, k);
}
