/* Keyframe -> JPEG (see picture.h). */
#include "picture.h"

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "log.h"

/* Box average of a sw x sh plane into dw x dh (dw <= sw, dh <= sh), each result mapped
 * through lut. */
static void reduce(const uint8_t *src, int sstride, int sw, int sh, uint8_t *dst, int dw, int dh,
		   const uint8_t lut[256])
{
	for (int y = 0; y < dh; y++) {
		int y0 = (int)((int64_t)y * sh / dh), y1 = (int)((int64_t)(y + 1) * sh / dh);
		if (y1 <= y0)
			y1 = y0 + 1;
		for (int x = 0; x < dw; x++) {
			int x0 = (int)((int64_t)x * sw / dw), x1 = (int)((int64_t)(x + 1) * sw / dw);
			if (x1 <= x0)
				x1 = x0 + 1;
			unsigned sum = 0, n = 0;
			for (int yy = y0; yy < y1; yy++)
				for (int xx = x0; xx < x1; xx++, n++)
					sum += src[(size_t)yy * (size_t)sstride + (size_t)xx];
			dst[(size_t)y * (size_t)dw + (size_t)x] = lut[(sum + n / 2) / n];
		}
	}
}

/* Decodes the one picture of the keyframe into f: 0 or a negative errno. */
static int decode(enum tx_picture_codec codec, const uint8_t *annexb, size_t len, AVFrame *f)
{
	const AVCodec *dc = avcodec_find_decoder(codec == TX_PICTURE_H265 ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264);
	if (!dc)
		return -ENOSYS;
	AVCodecContext *c = avcodec_alloc_context3(dc);
	AVPacket *p = av_packet_alloc();
	int r = c && p ? 0 : -ENOMEM;
	if (r == 0) {
		c->thread_count = 1;
		/* A keyframe with bitstream errors is refused, not concealed into a picture
		 * that looks like the camera's. */
		c->err_recognition = AV_EF_EXPLODE | AV_EF_BITSTREAM | AV_EF_BUFFER;
		r = avcodec_open2(c, dc, NULL) < 0 ? -ENOSYS : 0;
	}
	if (r == 0)
		r = av_new_packet(p, (int)len) < 0 ? -ENOMEM : 0;
	if (r == 0) {
		memcpy(p->data, annexb, len);
		p->flags = AV_PKT_FLAG_KEY;
		if (avcodec_send_packet(c, p) < 0 || avcodec_send_packet(c, NULL) < 0 ||
		    avcodec_receive_frame(c, f) < 0)
			r = -EINVAL;
	}
	if (r == 0 && (f->decode_error_flags || (f->flags & AV_FRAME_FLAG_CORRUPT))) {
		kp_warn("picture: the keyframe decodes with errors (flags %#x)", (unsigned)f->decode_error_flags);
		r = -EINVAL;
	}
	if (r == 0 && f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P) {
		kp_warn("picture: the keyframe decodes to pixel format %d, not YUV 4:2:0", f->format);
		r = -EINVAL;
	}
	av_packet_free(&p);
	avcodec_free_context(&c);
	return r;
}

/* JFIF's YCbCr is full range; a camera's H.26x is nearly always limited range (luma
 * 16..235, chroma 16..240, ITU-R BT.601/709): expanded here, else the JPEG comes out
 * washed out. */
static void range_luts(const AVFrame *f, uint8_t y[256], uint8_t c[256])
{
	int full = f->color_range == AVCOL_RANGE_JPEG || f->format == AV_PIX_FMT_YUVJ420P;
	for (int i = 0; i < 256; i++) {
		int ly = full ? i : ((i - 16) * 255 + 109) / 219;
		int lc = full ? i : 128 + ((i - 128) * 255 + (i >= 128 ? 112 : -112)) / 224;
		y[i] = (uint8_t)(ly < 0 ? 0 : ly > 255 ? 255 : ly);
		c[i] = (uint8_t)(lc < 0 ? 0 : lc > 255 ? 255 : lc);
	}
}

int tx_picture_make(enum tx_picture_codec codec, const uint8_t *annexb, size_t len, unsigned width, uint8_t **ret,
		    size_t *ret_len)
{
	if (len > TX_PICTURE_INPUT_MAX)
		return -E2BIG;
	if (!len)
		return -EINVAL;
	AVFrame *f = av_frame_alloc();
	if (!f)
		return -ENOMEM;
	int r = decode(codec, annexb, len, f);
	int sw = f->width, sh = f->height;
	int dw = width && (int)width < sw ? (int)width : sw;
	int dh = (int)((int64_t)sh * dw / (sw ? sw : 1)) & ~1;
	if (r == 0 && (sw < 2 || sh < 2 || dh < 2))
		r = -EINVAL;
	uint8_t *planes = NULL;
	const unsigned char *src[3];
	int strides[3];
	int cw = (dw + 1) / 2, ch = dh / 2;
	if (r == 0 && !(planes = malloc((size_t)dw * (size_t)dh + 2 * (size_t)cw * (size_t)ch)))
		r = -ENOMEM;
	if (r == 0) {
		uint8_t ly[256], lc[256];
		range_luts(f, ly, lc);
		uint8_t *u = planes + (size_t)dw * (size_t)dh, *v = u + (size_t)cw * (size_t)ch;
		reduce(f->data[0], f->linesize[0], sw, sh, planes, dw, dh, ly);
		reduce(f->data[1], f->linesize[1], (sw + 1) / 2, (sh + 1) / 2, u, cw, ch, lc);
		reduce(f->data[2], f->linesize[2], (sw + 1) / 2, (sh + 1) / 2, v, cw, ch, lc);
		src[0] = planes;
		src[1] = u;
		src[2] = v;
		strides[0] = dw;
		strides[1] = strides[2] = cw;
	}
	tjhandle tj = r == 0 ? tjInitCompress() : NULL;
	unsigned char *out = NULL;
	unsigned long out_len = 0;
	if (r == 0 && (!tj || tjCompressFromYUVPlanes(tj, src, dw, strides, dh, TJSAMP_420, &out, &out_len,
						      TX_PICTURE_QUALITY, TJFLAG_FASTDCT) < 0))
		r = -ENOMEM;
	if (tj)
		tjDestroy(tj);
	free(planes);
	av_frame_free(&f);
	/* Handed back as malloc'ed memory so that callers need not know libturbojpeg. */
	if (r == 0 && !(*ret = malloc(out_len)))
		r = -ENOMEM;
	if (r == 0) {
		memcpy(*ret, out, out_len);
		*ret_len = out_len;
	}
	tjFree(out);
	return r;
}
