/* The test camera's audio, a fixture read once with libavformat and looped:
 * - ADTS AAC: one packet per ADTS frame (header included) from the ADTS demuxer, each
 *   also passed through libavcodec's aac_adtstoasc filter for the raw frame and the
 *   AudioSpecificConfig, so that none of it comes from KeepPeek's own ADTS parser;
 * - IMA ADPCM in WAV: cut into its blocks (block_align bytes: a 4-byte predictor state
 *   and 4-bit samples, the DVI-4 layout neolink's bcmedia/model.rs describes for
 *   Baichuan's 01wb records), each (block_align - 4) * 2 + 1 samples;
 * - G.711 mu-law in WAV: cut into 20 ms packets (160 bytes at 8 kHz, RFC 3551 4.5's
 *   default packetization for PCMU);
 * - Opus in Ogg: its packets as the Ogg demuxer gives them, all of one duration.
 * Frames are paced in real time with timestamps that keep increasing across loops,
 * frame i due at i * samples / rate seconds after the camera started, the same origin
 * as the video. */
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"

#define MAX_AUDIO_FRAMES 4096
#define MAX_AUDIO_SUBS   64
#define AAC_FRAME        1024 /* samples per AAC-LC frame */
#define PCMU_PACKET      160  /* 20 ms at 8 kHz */

struct stored_audio {
	uint8_t *adts, *raw;
	size_t adts_len, raw_len;
};

struct cam_audio_sub {
	struct cam_audio *a;
	cam_audio_cb cb;
	void *arg;
	uint64_t from_us;
	bool used;
};

struct cam_audio {
	uv_timer_t timer;
	enum cam_audio_kind kind;
	uint32_t rate, channels, frame_samples;
	uint8_t asc[64];
	size_t asc_len;
	struct stored_audio frames[MAX_AUDIO_FRAMES];
	size_t nframes;
	uint64_t next, start_ms;
	struct cam_audio_sub subs[MAX_AUDIO_SUBS];
};

static uint64_t frame_us(const struct cam_audio *a, uint64_t index)
{
	return index * a->frame_samples * 1000000ull / a->rate;
}

static void on_tick(uv_timer_t *t)
{
	struct cam_audio *a = t->data;
	if (cam_sources_paused())
		return;
	uint64_t now_us = (uv_now(t->loop) - a->start_ms) * 1000;
	while (frame_us(a, a->next) <= now_us) {
		const struct stored_audio *s = &a->frames[a->next % a->nframes];
		struct cam_audio_frame f = {.pts_us = frame_us(a, a->next),
					    .seq = a->next,
					    .adts = s->adts,
					    .adts_len = s->adts_len,
					    .raw = s->raw,
					    .raw_len = s->raw_len};
		a->next++;
		for (int i = 0; i < MAX_AUDIO_SUBS; i++)
			if (a->subs[i].used && f.pts_us >= a->subs[i].from_us)
				a->subs[i].cb(&f, a->subs[i].arg);
	}
}

/* One ADTS packet: kept as it is and filtered; the filter gives the AudioSpecificConfig
 * as new-extradata side data of its first output. */
static int start(uv_loop_t *loop, struct cam_audio *a, struct cam_audio **ret)
{
	uv_timer_init(loop, &a->timer);
	a->timer.data = a;
	a->start_ms = uv_now(loop);
	uv_timer_start(&a->timer, on_tick, 0, 5);
	*ret = a;
	return 0;
}

static int filter_frame(struct cam_audio *a, AVBSFContext *bsf, AVPacket *pkt, struct stored_audio *s)
{
	s->adts = malloc((size_t)pkt->size);
	if (!s->adts)
		return -ENOMEM;
	memcpy(s->adts, pkt->data, (size_t)pkt->size);
	s->adts_len = (size_t)pkt->size;
	int r = av_bsf_send_packet(bsf, pkt);
	if (r == 0)
		r = av_bsf_receive_packet(bsf, pkt);
	size_t asc_len;
	const uint8_t *asc = r == 0 ? av_packet_get_side_data(pkt, AV_PKT_DATA_NEW_EXTRADATA, &asc_len) : NULL;
	if (asc && !a->asc_len && asc_len <= sizeof a->asc) {
		memcpy(a->asc, asc, asc_len);
		a->asc_len = asc_len;
	}
	if (r == 0 && (s->raw = malloc((size_t)pkt->size))) {
		memcpy(s->raw, pkt->data, (size_t)pkt->size);
		s->raw_len = (size_t)pkt->size;
	} else if (r == 0) {
		r = -ENOMEM;
	}
	if (r < 0)
		free(s->adts);
	return r;
}

/* The whole file's bytes cut into units of n bytes (a partial last one dropped). */
static int cut(struct cam_audio *a, AVFormatContext *fmt, AVPacket *pkt, size_t n)
{
	uint8_t *all = NULL;
	size_t len = 0;
	while (av_read_frame(fmt, pkt) >= 0) {
		uint8_t *b = realloc(all, len + (size_t)pkt->size);
		if (!b) {
			av_packet_unref(pkt);
			free(all);
			return -ENOMEM;
		}
		all = b;
		memcpy(all + len, pkt->data, (size_t)pkt->size);
		len += (size_t)pkt->size;
		av_packet_unref(pkt);
	}
	for (size_t off = 0; off + n <= len && a->nframes < MAX_AUDIO_FRAMES; off += n) {
		struct stored_audio *s = &a->frames[a->nframes];
		if (!(s->raw = malloc(n)))
			break;
		memcpy(s->raw, all + off, n);
		s->raw_len = n;
		a->nframes++;
	}
	free(all);
	return 0;
}

/* Every packet of the file as one frame (Opus). */
static int packets(struct cam_audio *a, AVFormatContext *fmt, AVPacket *pkt)
{
	while (av_read_frame(fmt, pkt) >= 0) {
		struct stored_audio *s = &a->frames[a->nframes];
		if (!a->frame_samples && pkt->duration > 0)
			a->frame_samples = (uint32_t)pkt->duration;
		if (a->nframes < MAX_AUDIO_FRAMES && pkt->size > 0 && (s->raw = malloc((size_t)pkt->size))) {
			memcpy(s->raw, pkt->data, (size_t)pkt->size);
			s->raw_len = (size_t)pkt->size;
			a->nframes++;
		}
		av_packet_unref(pkt);
	}
	return a->frame_samples ? 0 : -EINVAL;
}

static int open_pcm(struct cam_audio *a, AVFormatContext *fmt, AVPacket *pkt)
{
	const AVCodecParameters *par = fmt->streams[0]->codecpar;
	a->rate = (uint32_t)par->sample_rate;
	a->channels = (uint32_t)par->ch_layout.nb_channels;
	if (par->codec_id == AV_CODEC_ID_OPUS && a->rate == 48000 && (a->channels == 1 || a->channels == 2)) {
		a->kind = CAM_AUDIO_OPUS;
		return packets(a, fmt, pkt);
	}
	if (a->channels != 1 || !a->rate)
		return -EINVAL;
	if (par->codec_id == AV_CODEC_ID_ADPCM_IMA_WAV && par->block_align > 4) {
		a->kind = CAM_AUDIO_ADPCM;
		a->frame_samples = (uint32_t)(par->block_align - 4) * 2 + 1;
		return cut(a, fmt, pkt, (size_t)par->block_align);
	}
	if (par->codec_id == AV_CODEC_ID_PCM_MULAW && a->rate == 8000) {
		a->kind = CAM_AUDIO_PCMU;
		a->frame_samples = PCMU_PACKET;
		return cut(a, fmt, pkt, PCMU_PACKET);
	}
	return -EINVAL;
}

int cam_audio_open(uv_loop_t *loop, const char *path, struct cam_audio **ret)
{
	AVFormatContext *fmt = NULL;
	int r = avformat_open_input(&fmt, path, NULL, NULL);
	if (r < 0)
		return r;
	if (fmt->nb_streams != 1 || fmt->streams[0]->codecpar->codec_id != AV_CODEC_ID_AAC) {
		struct cam_audio *a = calloc(1, sizeof *a);
		AVPacket *pkt = av_packet_alloc();
		r = a && pkt ? open_pcm(a, fmt, pkt) : -ENOMEM;
		av_packet_free(&pkt);
		avformat_close_input(&fmt);
		return r < 0 || !a->nframes ? (free(a), r < 0 ? r : -EINVAL) : start(loop, a, ret);
	}
	struct cam_audio *a = calloc(1, sizeof *a);
	AVBSFContext *bsf = NULL;
	AVPacket *pkt = av_packet_alloc();
	const AVBitStreamFilter *f = av_bsf_get_by_name("aac_adtstoasc");
	r = a && pkt && f ? avformat_find_stream_info(fmt, NULL) : -ENOMEM;
	if (r >= 0)
		r = av_bsf_alloc(f, &bsf);
	if (r >= 0)
		r = avcodec_parameters_copy(bsf->par_in, fmt->streams[0]->codecpar);
	if (r >= 0)
		r = av_bsf_init(bsf);
	while (r >= 0 && av_read_frame(fmt, pkt) >= 0) {
		if (a->nframes < MAX_AUDIO_FRAMES && filter_frame(a, bsf, pkt, &a->frames[a->nframes]) == 0)
			a->nframes++;
		av_packet_unref(pkt);
	}
	if (r >= 0) {
		a->kind = CAM_AUDIO_AAC;
		a->frame_samples = AAC_FRAME;
		a->rate = (uint32_t)fmt->streams[0]->codecpar->sample_rate;
		a->channels = (uint32_t)fmt->streams[0]->codecpar->ch_layout.nb_channels;
	}
	av_bsf_free(&bsf);
	av_packet_free(&pkt);
	avformat_close_input(&fmt);
	if (r < 0 || !a || !a->nframes || !a->asc_len || !a->rate) {
		if (a)
			for (size_t i = 0; i < a->nframes; i++) {
				free(a->frames[i].adts);
				free(a->frames[i].raw);
			}
		free(a);
		return r < 0 ? r : -EINVAL;
	}
	return start(loop, a, ret);
}

int cam_audio_subscribe(struct cam_audio *a, uint64_t from_us, cam_audio_cb cb, void *arg, struct cam_audio_sub **ret)
{
	for (int i = 0; i < MAX_AUDIO_SUBS; i++) {
		struct cam_audio_sub *s = &a->subs[i];
		if (s->used)
			continue;
		*s = (struct cam_audio_sub){.a = a, .cb = cb, .arg = arg, .from_us = from_us, .used = true};
		*ret = s;
		return 0;
	}
	return -ENOSPC;
}

void cam_audio_unsubscribe(struct cam_audio_sub *sub)
{
	if (sub)
		sub->used = false;
}

enum cam_audio_kind cam_audio_kind(const struct cam_audio *a)
{
	return a->kind;
}

uint32_t cam_audio_samples(const struct cam_audio *a)
{
	return a->frame_samples;
}

uint32_t cam_audio_rate(const struct cam_audio *a)
{
	return a->rate;
}

uint32_t cam_audio_channels(const struct cam_audio *a)
{
	return a->channels;
}

void cam_audio_config(const struct cam_audio *a, const uint8_t **asc, size_t *len)
{
	*asc = a->asc;
	*len = a->asc_len;
}
