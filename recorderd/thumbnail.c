/* Event thumbnails (see thumbnail.h). */
#include "thumbnail.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

/* Box filter from sw x sh RGB to dw x dh RGB (dw <= sw, dh <= sh). */
static void reduce(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh)
{
	for (int y = 0; y < dh; y++) {
		int y0 = (int)((int64_t)y * sh / dh), y1 = (int)((int64_t)(y + 1) * sh / dh);
		if (y1 <= y0)
			y1 = y0 + 1;
		for (int x = 0; x < dw; x++) {
			int x0 = (int)((int64_t)x * sw / dw), x1 = (int)((int64_t)(x + 1) * sw / dw);
			if (x1 <= x0)
				x1 = x0 + 1;
			unsigned sum[3] = {0, 0, 0}, n = 0;
			for (int yy = y0; yy < y1; yy++)
				for (int xx = x0; xx < x1; xx++, n++)
					for (int c = 0; c < 3; c++)
						sum[c] += src[((size_t)yy * (size_t)sw + (size_t)xx) * 3 + (size_t)c];
			for (int c = 0; c < 3; c++)
				dst[((size_t)y * (size_t)dw + (size_t)x) * 3 + (size_t)c] =
				    (uint8_t)((sum[c] + n / 2) / n);
		}
	}
}

int rec_thumbnail_make(const uint8_t *jpeg, size_t len, uint8_t **ret, size_t *ret_len)
{
	tjhandle d = tjInitDecompress();
	if (!d)
		return -ENOMEM;
	int w, h, sub, cs;
	if (tjDecompressHeader3(d, jpeg, (unsigned long)len, &w, &h, &sub, &cs) < 0 || w <= 0 || h <= 0) {
		tjDestroy(d);
		return -EINVAL;
	}
	int nsf = 0;
	tjscalingfactor *sf = tjGetScalingFactors(&nsf);
	int sw = w, sh = h;
	for (int i = 0; sf && i < nsf; i++) {
		int cw = TJSCALED(w, sf[i]), ch = TJSCALED(h, sf[i]);
		if (cw >= REC_THUMB_WIDTH && cw < sw) {
			sw = cw;
			sh = ch;
		}
	}
	uint8_t *rgb = malloc((size_t)sw * (size_t)sh * 3);
	int r = rgb ? 0 : -ENOMEM;
	if (r == 0 && tjDecompress2(d, jpeg, (unsigned long)len, rgb, sw, 0, sh, TJPF_RGB, TJFLAG_FASTDCT) < 0)
		r = -EINVAL;
	tjDestroy(d);
	int dw = sw > REC_THUMB_WIDTH ? REC_THUMB_WIDTH : sw;
	int dh = (int)((int64_t)sh * dw / sw);
	if (dh < 1)
		dh = 1;
	uint8_t *small = NULL;
	if (r == 0 && (dw != sw || dh != sh)) {
		small = malloc((size_t)dw * (size_t)dh * 3);
		if (!small)
			r = -ENOMEM;
		else
			reduce(rgb, sw, sh, small, dw, dh);
	}
	if (r < 0) {
		free(rgb);
		return r;
	}
	tjhandle c = tjInitCompress();
	unsigned char *out = NULL;
	unsigned long out_len = 0;
	if (!c || tjCompress2(c, small ? small : rgb, dw, 0, dh, TJPF_RGB, &out, &out_len, TJSAMP_420,
			      REC_THUMB_QUALITY, TJFLAG_FASTDCT) < 0)
		r = -EINVAL;
	if (c)
		tjDestroy(c);
	free(small);
	free(rgb);
	if (r < 0) {
		tjFree(out);
		return r;
	}
	/* Handed back as malloc'ed memory so that callers need not know libturbojpeg. */
	*ret = malloc(out_len);
	if (!*ret) {
		tjFree(out);
		return -ENOMEM;
	}
	memcpy(*ret, out, out_len);
	*ret_len = out_len;
	tjFree(out);
	return 0;
}
