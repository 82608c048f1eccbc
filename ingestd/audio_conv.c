/* Camera audio to AAC with libavcodec (see audio_conv.h). */
#include "audio_conv.h"

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <stdlib.h>
#include <string.h>

struct ing_audio_conv {
	enum kp_audio_codec codec;
	uint32_t rate, block;
	AVCodecContext *dec, *enc;
	AVAudioFifo *fifo;
	AVPacket *pkt;
	AVFrame *in, *out;
	struct kp_audio_format fmt; /* of the AAC out */
	bool anchored;
	int64_t anchor_pts;  /* 90 kHz time of input sample 0 */
	uint64_t in_samples; /* decoded so far */
	int64_t next_out;    /* encoder time (samples) of the next frame fed */
};

void ing_audio_conv_free(struct ing_audio_conv **cp)
{
	struct ing_audio_conv *c = *cp;
	if (!c)
		return;
	avcodec_free_context(&c->dec);
	avcodec_free_context(&c->enc);
	av_audio_fifo_free(c->fifo);
	av_packet_free(&c->pkt);
	av_frame_free(&c->in);
	av_frame_free(&c->out);
	free(c);
	*cp = NULL;
}

static int open_decoder(struct ing_audio_conv *c, const char **why)
{
	enum AVCodecID id = c->codec == KP_AUDIO_ADPCM_IMA ? AV_CODEC_ID_ADPCM_IMA_WAV
			    : c->codec == KP_AUDIO_PCMU    ? AV_CODEC_ID_PCM_MULAW
							   : AV_CODEC_ID_PCM_ALAW;
	const AVCodec *d = avcodec_find_decoder(id);
	if (!d || !(c->dec = avcodec_alloc_context3(d))) {
		*why = "no decoder for the camera's audio";
		return -ENOSYS;
	}
	c->dec->sample_rate = (int)c->rate;
	av_channel_layout_default(&c->dec->ch_layout, 1);
	c->dec->block_align = (int)c->block;
	c->dec->bits_per_coded_sample = c->codec == KP_AUDIO_ADPCM_IMA ? 4 : 8;
	if (avcodec_open2(c->dec, d, NULL) < 0) {
		*why = "opening the audio decoder failed";
		return -EINVAL;
	}
	return 0;
}

static int open_encoder(struct ing_audio_conv *c, const char **why)
{
	const AVCodec *e = avcodec_find_encoder(AV_CODEC_ID_AAC);
	if (!e || !(c->enc = avcodec_alloc_context3(e))) {
		*why = "no AAC encoder";
		return -ENOSYS;
	}
	c->enc->sample_rate = (int)c->rate;
	av_channel_layout_default(&c->enc->ch_layout, 1);
	c->enc->sample_fmt = AV_SAMPLE_FMT_FLTP;
	c->enc->bit_rate = ING_AUDIO_CONV_BITRATE;
	c->enc->time_base = (AVRational){1, (int)c->rate};
	c->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
	if (avcodec_open2(c->enc, e, NULL) < 0 || c->enc->frame_size <= 0 || !c->enc->extradata ||
	    kp_aac_config_parse(c->enc->extradata, (size_t)c->enc->extradata_size, &c->fmt) < 0) {
		*why = "opening the AAC encoder failed";
		return -EINVAL;
	}
	c->fmt.frame_samples = (uint32_t)c->enc->frame_size;
	return 0;
}

static int conv_new(const struct kp_audio_unit *in, struct ing_audio_conv **ret, const char **why)
{
	if (in->fmt.channels != 1 || !in->fmt.rate || in->fmt.rate > 48000) {
		*why = "only mono audio up to 48 kHz is converted";
		return -EPROTONOSUPPORT;
	}
	struct ing_audio_conv *c = calloc(1, sizeof *c);
	if (!c) {
		*why = "out of memory";
		return -ENOMEM;
	}
	c->codec = in->fmt.codec;
	c->rate = in->fmt.rate;
	c->block = c->codec == KP_AUDIO_ADPCM_IMA ? (uint32_t)in->len : 1;
	int r = open_decoder(c, why);
	if (r == 0)
		r = open_encoder(c, why);
	if (r == 0) {
		c->fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, 1, c->enc->frame_size * 4);
		c->pkt = av_packet_alloc();
		c->in = av_frame_alloc();
		c->out = av_frame_alloc();
		if (!c->fifo || !c->pkt || !c->in || !c->out) {
			*why = "out of memory";
			r = -ENOMEM;
		}
	}
	if (r < 0) {
		ing_audio_conv_free(&c);
		return r;
	}
	*ret = c;
	return 0;
}

/* The decoded samples of c->in (16-bit, one channel) as floats into the FIFO. */
static int collect(struct ing_audio_conv *c)
{
	int n = c->in->nb_samples;
	if (c->in->format != AV_SAMPLE_FMT_S16 && c->in->format != AV_SAMPLE_FMT_S16P)
		return -EPROTONOSUPPORT;
	float buf[1024];
	const int16_t *s = (const int16_t *)c->in->data[0];
	for (int at = 0; at < n;) {
		int k = n - at < 1024 ? n - at : 1024;
		for (int i = 0; i < k; i++)
			buf[i] = (float)s[at + i] / 32768.0f;
		void *planes[1] = {buf};
		if (av_audio_fifo_write(c->fifo, planes, k) < k)
			return -ENOMEM;
		at += k;
	}
	c->in_samples += (uint64_t)n;
	return 0;
}

static void drain(struct ing_audio_conv *c, int64_t wall_us, ing_audio_out out, void *arg)
{
	while (avcodec_receive_packet(c->enc, c->pkt) == 0) {
		struct kp_audio_unit au = {
		    .fmt = c->fmt,
		    .pts_90k = c->anchor_pts + c->pkt->pts * 90000 / (int64_t)c->rate,
		    .wall_us = wall_us,
		    .data = c->pkt->data,
		    .len = (size_t)c->pkt->size,
		};
		out(arg, &au);
		av_packet_unref(c->pkt);
	}
}

static int encode(struct ing_audio_conv *c, int64_t wall_us, ing_audio_out out, void *arg)
{
	int fs = c->enc->frame_size;
	while (av_audio_fifo_size(c->fifo) >= fs) {
		av_frame_unref(c->out);
		c->out->nb_samples = fs;
		c->out->format = AV_SAMPLE_FMT_FLTP;
		c->out->sample_rate = (int)c->rate;
		av_channel_layout_default(&c->out->ch_layout, 1);
		if (av_frame_get_buffer(c->out, 0) < 0 || av_audio_fifo_read(c->fifo, (void **)c->out->data, fs) < fs)
			return -ENOMEM;
		c->out->pts = c->next_out;
		c->next_out += fs;
		if (avcodec_send_frame(c->enc, c->out) < 0)
			return -EINVAL;
		drain(c, wall_us, out, arg);
	}
	return 0;
}

int ing_audio_conv_push(struct ing_audio_conv **cp, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			const char **ret_reason)
{
	struct ing_audio_conv *c = *cp;
	if (c && (c->codec != in->fmt.codec || c->rate != in->fmt.rate ||
		  (c->codec == KP_AUDIO_ADPCM_IMA && c->block != in->len)))
		ing_audio_conv_free(cp);
	if (!*cp) {
		int r = conv_new(in, cp, ret_reason);
		if (r < 0)
			return r;
	}
	c = *cp;
	/* Where the run expects this unit; too far off (lost audio, a new run): move it. */
	int64_t expect = c->anchor_pts + (int64_t)(c->in_samples * 90000 / c->rate);
	int64_t off = in->pts_90k - expect;
	if (!c->anchored || off > ING_AUDIO_CONV_RESYNC_MS * 90 || off < -ING_AUDIO_CONV_RESYNC_MS * 90) {
		c->anchor_pts += off;
		c->anchored = true;
	}
	if (av_new_packet(c->pkt, (int)in->len) < 0) {
		*ret_reason = "out of memory";
		return -ENOMEM;
	}
	memcpy(c->pkt->data, in->data, in->len);
	int r = avcodec_send_packet(c->dec, c->pkt);
	av_packet_unref(c->pkt);
	if (r < 0) {
		*ret_reason = "the camera's audio does not decode";
		return -EBADMSG;
	}
	while ((r = avcodec_receive_frame(c->dec, c->in)) == 0) {
		r = collect(c);
		av_frame_unref(c->in);
		if (r < 0) {
			*ret_reason = "decoded audio in an unexpected sample format";
			return r;
		}
	}
	if (encode(c, in->wall_us, out, arg) < 0) {
		*ret_reason = "encoding AAC failed";
		return -EINVAL;
	}
	return 0;
}
