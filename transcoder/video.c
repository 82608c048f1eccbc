/* libavcodec decode + downscale + libx264 encode for one transcode (see
 * video.h). */
#include "video.h"

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "scale.h"

#define MAX_RATE 1500000 /* bits/s: constant quality below this ceiling */
#define FPS      25      /* for rate control and the level; timestamps come from the source */

struct tx_video {
	char name[96]; /* "cam-1 stream 0", for log lines */
	AVCodecContext *dec, *enc;
	AVPacket *in, *out;
	AVFrame *decoded, *scaled;
	unsigned src_w, src_h;
	int64_t last_key_pts;
	bool force_key;
};

static const char *averr(int e, char *buf, size_t cap)
{
	av_strerror(e, buf, cap);
	return buf;
}

int tx_video_open(const char *name, struct tx_video **ret)
{
	struct tx_video *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	snprintf(c->name, sizeof c->name, "%s", name);
	const AVCodec *hevc = avcodec_find_decoder(AV_CODEC_ID_HEVC);
	c->in = av_packet_alloc();
	c->out = av_packet_alloc();
	c->decoded = av_frame_alloc();
	if (!hevc || !c->in || !c->out || !c->decoded) {
		kp_err("transcode of %s: libavcodec has no hevc decoder or no memory", name);
		tx_video_free(c);
		return -ENOSYS;
	}
	c->dec = avcodec_alloc_context3(hevc);
	if (!c->dec) {
		tx_video_free(c);
		return -ENOMEM;
	}
	c->dec->thread_count = 1;       /* the transcode's own thread is the only one */
	av_log_set_level(AV_LOG_ERROR); /* libx264's banners and statistics: not for our log */
	char eb[128];
	int e = avcodec_open2(c->dec, hevc, NULL);
	if (e < 0) {
		kp_err("transcode of %s: opening the hevc decoder: %s", name, averr(e, eb, sizeof eb));
		tx_video_free(c);
		return -EIO;
	}
	c->last_key_pts = INT64_MIN;
	*ret = c;
	return 0;
}

static int open_encoder(struct tx_video *c, unsigned w, unsigned h)
{
	char eb[128];
	avcodec_free_context(&c->enc);
	av_frame_free(&c->scaled);
	const AVCodec *x264 = avcodec_find_encoder_by_name("libx264");
	if (!x264) {
		kp_err("transcode of %s: libavcodec has no libx264 encoder", c->name);
		return -ENOSYS;
	}
	unsigned ow, oh;
	tx_scale_size(w, h, &ow, &oh);
	if (ow < 16 || oh < 16) {
		kp_warn("transcode of %s: a %ux%u picture is too small to encode", c->name, w, h);
		return -EINVAL;
	}
	c->enc = avcodec_alloc_context3(x264);
	c->scaled = av_frame_alloc();
	if (!c->enc || !c->scaled)
		return -ENOMEM;
	c->enc->width = (int)ow;
	c->enc->height = (int)oh;
	c->enc->pix_fmt = AV_PIX_FMT_YUV420P;
	c->enc->time_base = (AVRational){1, 90000};
	c->enc->framerate = (AVRational){FPS, 1};
	c->enc->rc_max_rate = MAX_RATE;
	c->enc->rc_buffer_size = MAX_RATE;
	c->enc->gop_size = 250; /* IDRs come from force_key and the 2 s rule */
	c->enc->max_b_frames = 0;
	c->enc->thread_count = 1;
	c->enc->flags &= ~AV_CODEC_FLAG_GLOBAL_HEADER;
	av_opt_set(c->enc->priv_data, "preset", "veryfast", 0);
	av_opt_set(c->enc->priv_data, "tune", "zerolatency", 0);
	av_opt_set(c->enc->priv_data, "profile", "baseline", 0);
	av_opt_set(c->enc->priv_data, "crf", "26", 0);
	av_opt_set(c->enc->priv_data, "x264-params", "repeat-headers=1:annexb=1", 0);
	av_opt_set_int(c->enc->priv_data, "forced-idr", 1, 0);
	int e = avcodec_open2(c->enc, x264, NULL);
	if (e < 0) {
		kp_err("transcode of %s: opening libx264 at %ux%u: %s", c->name, ow, oh, averr(e, eb, sizeof eb));
		avcodec_free_context(&c->enc);
		return -EIO;
	}
	c->scaled->format = AV_PIX_FMT_YUV420P;
	c->scaled->width = (int)ow;
	c->scaled->height = (int)oh;
	e = av_frame_get_buffer(c->scaled, 0);
	if (e < 0) {
		avcodec_free_context(&c->enc);
		return -ENOMEM;
	}
	c->src_w = w;
	c->src_h = h;
	c->force_key = true;
	kp_info("transcode of %s: encoding %ux%u H.265 as %ux%u H.264", c->name, w, h, ow, oh);
	return 0;
}

static int drain_encoder(struct tx_video *c, tx_emit_cb out, void *arg)
{
	for (;;) {
		int e = avcodec_receive_packet(c->enc, c->out);
		if (e == AVERROR(EAGAIN) || e == AVERROR_EOF)
			return 0;
		if (e < 0) {
			char eb[128];
			kp_warn("transcode of %s: libx264: %s", c->name, averr(e, eb, sizeof eb));
			return -EIO;
		}
		struct tx_packet p = {
		    .data = c->out->data,
		    .len = (size_t)c->out->size,
		    .keyframe = c->out->flags & AV_PKT_FLAG_KEY,
		    .pts = c->out->pts,
		    .width = (unsigned)c->enc->width,
		    .height = (unsigned)c->enc->height,
		};
		out(arg, &p);
		av_packet_unref(c->out);
	}
}

static int encode(struct tx_video *c, AVFrame *f, tx_emit_cb out, void *arg)
{
	if (f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P) {
		kp_warn("transcode of %s: decoded pictures are %s, only 8-bit 4:2:0 is transcoded", c->name,
			av_get_pix_fmt_name(f->format) ? av_get_pix_fmt_name(f->format) : "unknown");
		return -ENOTSUP;
	}
	unsigned w = (unsigned)f->width, h = (unsigned)f->height;
	if (!c->enc || w != c->src_w || h != c->src_h) {
		int e = open_encoder(c, w, h);
		if (e < 0)
			return e;
	}
	int e = av_frame_make_writable(c->scaled);
	if (e < 0)
		return -ENOMEM;
	struct tx_plane src[3], dst[3];
	for (int i = 0; i < 3; i++) {
		src[i] = (struct tx_plane){f->data[i], f->linesize[i]};
		dst[i] = (struct tx_plane){c->scaled->data[i], c->scaled->linesize[i]};
	}
	tx_scale_yuv420(src, w, h, dst);
	int64_t pts = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
	c->scaled->pts = pts;
	bool key = c->force_key || c->last_key_pts == INT64_MIN || pts - c->last_key_pts >= TX_VIDEO_KEY_US * 9 / 100 ||
		   pts < c->last_key_pts;
	c->scaled->pict_type = key ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
	if (key) {
		c->last_key_pts = pts;
		c->force_key = false;
	}
	e = avcodec_send_frame(c->enc, c->scaled);
	if (e < 0) {
		char eb[128];
		kp_warn("transcode of %s: libx264 refused a picture: %s", c->name, averr(e, eb, sizeof eb));
		return -EIO;
	}
	return drain_encoder(c, out, arg);
}

int tx_video_push(struct tx_video *c, const uint8_t *data, size_t len, int64_t pts_90k, bool force_key, tx_emit_cb out,
		  void *arg)
{
	if (len > INT32_MAX)
		return -EFBIG;
	if (force_key)
		c->force_key = true;
	av_packet_unref(c->in);
	int e = av_new_packet(c->in, (int)len);
	if (e < 0)
		return -ENOMEM;
	memcpy(c->in->data, data, len);
	c->in->pts = pts_90k;
	c->in->dts = pts_90k;
	e = avcodec_send_packet(c->dec, c->in);
	if (e < 0 && e != AVERROR(EAGAIN)) {
		char eb[128];
		kp_warn("transcode of %s: the hevc decoder refused an access unit: %s", c->name,
			averr(e, eb, sizeof eb));
		return -EBADMSG;
	}
	for (;;) {
		e = avcodec_receive_frame(c->dec, c->decoded);
		if (e == AVERROR(EAGAIN) || e == AVERROR_EOF)
			return 0;
		if (e < 0) {
			char eb[128];
			kp_warn("transcode of %s: hevc decoding: %s", c->name, averr(e, eb, sizeof eb));
			return -EBADMSG;
		}
		int r = encode(c, c->decoded, out, arg);
		av_frame_unref(c->decoded);
		if (r < 0)
			return r;
	}
}

void tx_video_free(struct tx_video *c)
{
	if (!c)
		return;
	avcodec_free_context(&c->dec);
	avcodec_free_context(&c->enc);
	av_packet_free(&c->in);
	av_packet_free(&c->out);
	av_frame_free(&c->decoded);
	av_frame_free(&c->scaled);
	free(c);
}
