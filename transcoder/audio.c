/* AAC decode, resample and Opus encode for one audio job (see audio.h). */
#include "audio.h"

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define BITRATE_PER_CHANNEL 32000 /* bits/s: speech and ambient sound from a camera */

struct tx_audio {
	char name[96];
	unsigned rate, channels, out_channels;
	AVCodecContext *dec, *enc;
	SwrContext *swr;
	AVAudioFifo *fifo;
	AVPacket *in, *out;
	AVFrame *decoded, *chunk;
	int64_t next_in_pts; /* the pts (1/rate) the next input frame should have */
	int64_t fifo_pts;    /* pts (1/48,000) of the first sample in the fifo */
	uint8_t *conv[2];    /* resampled samples of one input frame, planar s16 or packed */
	int conv_cap;
};

static const char *averr(int e, char *buf, size_t cap)
{
	av_strerror(e, buf, cap);
	return buf;
}

static int open_decoder(struct tx_audio *a, const uint8_t *config, size_t config_len)
{
	char eb[128];
	const AVCodec *aac = avcodec_find_decoder(AV_CODEC_ID_AAC);
	if (!aac) {
		kp_err("audio job %s: libavcodec has no aac decoder", a->name);
		return -ENOSYS;
	}
	a->dec = avcodec_alloc_context3(aac);
	if (!a->dec)
		return -ENOMEM;
	a->dec->sample_rate = (int)a->rate;
	av_channel_layout_default(&a->dec->ch_layout, (int)a->channels);
	a->dec->thread_count = 1;
	if (config_len) {
		a->dec->extradata = av_mallocz(config_len + AV_INPUT_BUFFER_PADDING_SIZE);
		if (!a->dec->extradata)
			return -ENOMEM;
		memcpy(a->dec->extradata, config, config_len);
		a->dec->extradata_size = (int)config_len;
	}
	int e = avcodec_open2(a->dec, aac, NULL);
	if (e < 0) {
		kp_err("audio job %s: opening the aac decoder (%u Hz, %u channels, %zu-byte config): %s", a->name,
		       a->rate, a->channels, config_len, averr(e, eb, sizeof eb));
		return -EIO;
	}
	return 0;
}

static int open_encoder(struct tx_audio *a)
{
	char eb[128];
	const AVCodec *opus = avcodec_find_encoder_by_name("libopus");
	if (!opus) {
		kp_err("audio job %s: libavcodec has no libopus encoder (Debian's is built with it)", a->name);
		return -ENOSYS;
	}
	a->enc = avcodec_alloc_context3(opus);
	if (!a->enc)
		return -ENOMEM;
	a->enc->sample_rate = TX_OPUS_RATE;
	a->enc->sample_fmt = AV_SAMPLE_FMT_S16;
	av_channel_layout_default(&a->enc->ch_layout, (int)a->out_channels);
	a->enc->bit_rate = BITRATE_PER_CHANNEL * (int64_t)a->out_channels;
	a->enc->time_base = (AVRational){1, TX_OPUS_RATE};
	av_opt_set(a->enc->priv_data, "frame_duration", "20", 0);
	av_opt_set(a->enc->priv_data, "application", "audio", 0);
	int e = avcodec_open2(a->enc, opus, NULL);
	if (e < 0) {
		kp_err("audio job %s: opening libopus (%u channels): %s", a->name, a->out_channels,
		       averr(e, eb, sizeof eb));
		return -EIO;
	}
	if (a->enc->frame_size != TX_OPUS_SAMPLES) {
		kp_err("audio job %s: libopus wants %d-sample frames, not %d", a->name, a->enc->frame_size,
		       TX_OPUS_SAMPLES);
		return -ENOTSUP;
	}
	return 0;
}

static int open_resampler(struct tx_audio *a)
{
	AVChannelLayout out_layout;
	av_channel_layout_default(&out_layout, (int)a->out_channels);
	int e = swr_alloc_set_opts2(&a->swr, &out_layout, AV_SAMPLE_FMT_S16, TX_OPUS_RATE, &a->dec->ch_layout,
				    a->dec->sample_fmt, a->dec->sample_rate, 0, NULL);
	if (e < 0 || (e = swr_init(a->swr)) < 0) {
		char eb[128];
		kp_err("audio job %s: resampling %d Hz to %d Hz: %s", a->name, a->dec->sample_rate, TX_OPUS_RATE,
		       averr(e, eb, sizeof eb));
		return -EIO;
	}
	a->fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_S16, (int)a->out_channels, TX_OPUS_SAMPLES * 4);
	a->chunk = av_frame_alloc();
	if (!a->fifo || !a->chunk)
		return -ENOMEM;
	a->chunk->format = AV_SAMPLE_FMT_S16;
	a->chunk->nb_samples = TX_OPUS_SAMPLES;
	a->chunk->sample_rate = TX_OPUS_RATE;
	if (av_channel_layout_copy(&a->chunk->ch_layout, &a->enc->ch_layout) < 0 ||
	    av_frame_get_buffer(a->chunk, 0) < 0)
		return -ENOMEM;
	return 0;
}

int tx_audio_open(const char *name, unsigned rate, unsigned channels, const uint8_t *config, size_t config_len,
		  struct tx_audio **ret)
{
	if (rate < 8000 || rate > 96000 || channels < 1 || channels > 8 || config_len > INT32_MAX)
		return -EINVAL;
	struct tx_audio *a = calloc(1, sizeof *a);
	if (!a)
		return -ENOMEM;
	snprintf(a->name, sizeof a->name, "%s", name);
	a->rate = rate;
	a->channels = channels;
	a->out_channels = channels > 2 ? 2 : channels;
	a->next_in_pts = INT64_MIN;
	a->in = av_packet_alloc();
	a->out = av_packet_alloc();
	a->decoded = av_frame_alloc();
	int e = !a->in || !a->out || !a->decoded ? -ENOMEM : 0;
	if (e == 0)
		e = open_decoder(a, config, config_len);
	if (e == 0)
		e = open_encoder(a);
	if (e == 0)
		e = open_resampler(a);
	if (e < 0) {
		tx_audio_free(a);
		return e;
	}
	kp_info("audio job %s: encoding %u Hz %u-channel AAC as %d Hz %u-channel Opus", name, rate, channels,
		TX_OPUS_RATE, a->out_channels);
	*ret = a;
	return 0;
}

static int drain_encoder(struct tx_audio *a, tx_emit_cb out, void *arg)
{
	for (;;) {
		int e = avcodec_receive_packet(a->enc, a->out);
		if (e == AVERROR(EAGAIN) || e == AVERROR_EOF)
			return 0;
		if (e < 0) {
			char eb[128];
			kp_warn("audio job %s: libopus: %s", a->name, averr(e, eb, sizeof eb));
			return -EIO;
		}
		struct tx_packet p = {
		    .data = a->out->data,
		    .len = (size_t)a->out->size,
		    .keyframe = true,
		    /* libavcodec moves Opus packets back by the encoder's pre-skip; RTP wants
		     * the time of the samples the packet carries. */
		    .pts = a->out->pts + a->enc->initial_padding,
		    .rate = TX_OPUS_RATE,
		    .channels = a->out_channels,
		};
		out(arg, &p);
		av_packet_unref(a->out);
	}
}

/* Encodes every whole 20 ms chunk waiting in the fifo. */
static int encode_chunks(struct tx_audio *a, tx_emit_cb out, void *arg)
{
	while (av_audio_fifo_size(a->fifo) >= TX_OPUS_SAMPLES) {
		if (av_frame_make_writable(a->chunk) < 0)
			return -ENOMEM;
		if (av_audio_fifo_read(a->fifo, (void **)a->chunk->data, TX_OPUS_SAMPLES) != TX_OPUS_SAMPLES)
			return -EIO;
		a->chunk->pts = a->fifo_pts;
		a->fifo_pts += TX_OPUS_SAMPLES;
		int e = avcodec_send_frame(a->enc, a->chunk);
		if (e < 0) {
			char eb[128];
			kp_warn("audio job %s: libopus refused 20 ms of samples: %s", a->name, averr(e, eb, sizeof eb));
			return -EIO;
		}
		e = drain_encoder(a, out, arg);
		if (e < 0)
			return e;
	}
	return 0;
}

static int resample(struct tx_audio *a, const AVFrame *f)
{
	int n = swr_get_out_samples(a->swr, f->nb_samples);
	if (n < 0)
		return -EIO;
	if (n > a->conv_cap) {
		av_freep(&a->conv[0]);
		if (av_samples_alloc(a->conv, NULL, (int)a->out_channels, n, AV_SAMPLE_FMT_S16, 0) < 0)
			return -ENOMEM;
		a->conv_cap = n;
	}
	int got = swr_convert(a->swr, a->conv, n, (const uint8_t **)f->extended_data, f->nb_samples);
	if (got < 0)
		return -EIO;
	if (got && av_audio_fifo_write(a->fifo, (void **)a->conv, got) != got)
		return -ENOMEM;
	return 0;
}

int tx_audio_push(struct tx_audio *a, const uint8_t *data, size_t len, int64_t pts, tx_emit_cb out, void *arg)
{
	if (len > INT32_MAX)
		return -EFBIG;
	if (pts != a->next_in_pts) {
		/* The first frame, or frames were dropped: the packets start again from here. */
		av_audio_fifo_reset(a->fifo);
		a->fifo_pts = av_rescale(pts, TX_OPUS_RATE, a->rate);
	}
	av_packet_unref(a->in);
	int e = av_new_packet(a->in, (int)len);
	if (e < 0)
		return -ENOMEM;
	memcpy(a->in->data, data, len);
	a->in->pts = pts;
	e = avcodec_send_packet(a->dec, a->in);
	if (e < 0 && e != AVERROR(EAGAIN)) {
		char eb[128];
		kp_warn("audio job %s: the aac decoder refused a frame: %s", a->name, averr(e, eb, sizeof eb));
		a->next_in_pts = INT64_MIN;
		return -EBADMSG;
	}
	for (;;) {
		e = avcodec_receive_frame(a->dec, a->decoded);
		if (e == AVERROR(EAGAIN) || e == AVERROR_EOF)
			break;
		if (e < 0) {
			char eb[128];
			kp_warn("audio job %s: aac decoding: %s", a->name, averr(e, eb, sizeof eb));
			a->next_in_pts = INT64_MIN;
			return -EBADMSG;
		}
		a->next_in_pts = pts + a->decoded->nb_samples;
		int r = resample(a, a->decoded);
		av_frame_unref(a->decoded);
		if (r < 0)
			return r;
	}
	return encode_chunks(a, out, arg);
}

void tx_audio_free(struct tx_audio *a)
{
	if (!a)
		return;
	avcodec_free_context(&a->dec);
	avcodec_free_context(&a->enc);
	swr_free(&a->swr);
	if (a->fifo)
		av_audio_fifo_free(a->fifo);
	av_packet_free(&a->in);
	av_packet_free(&a->out);
	av_frame_free(&a->decoded);
	av_frame_free(&a->chunk);
	av_freep(&a->conv[0]);
	free(a);
}
