/* Fixture media for the test camera: an Annex-B elementary stream read once with
 * libavformat's raw H.264/H.265 demuxer (which splits it into access units), or an
 * MPEG-TS file (B-frame fixtures: the raw demuxer knows no presentation times, the
 * transport stream's PES headers carry PTS and DTS, ISO/IEC 13818-1 2.4.3.7), then
 * looped and paced in real time, in decode order, on a libuv timer with timestamps that
 * keep increasing across loops. Subscribers start at the next keyframe. */
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"

#define MAX_FRAMES 4096
#define MAX_SUBS   64
#define MAX_PARAM  512

struct stored_frame {
	uint8_t *data;
	size_t len;
	bool keyframe;
	int64_t cto_us; /* PTS - DTS in the fixture (B-frames), else 0 */
};

struct cam_sub {
	struct cam_source *src;
	cam_frame_cb cb;
	void *arg;
	bool started; /* has seen a keyframe */
	bool used;
};

static bool paused;

void cam_sources_pause(void)
{
	paused = true;
}

bool cam_sources_paused(void)
{
	return paused;
}

struct cam_source {
	uv_timer_t timer;
	enum kp_codec codec;
	unsigned fps;
	uint32_t width, height;
	struct stored_frame frames[MAX_FRAMES];
	size_t nframes;
	uint64_t next;     /* index of the next frame to send, over all loops */
	uint64_t start_ms; /* loop time of frame 0 */
	struct cam_sub subs[MAX_SUBS];
	uint8_t params[3][MAX_PARAM];
	size_t param_len[3];
};

/* Remembers VPS/SPS/PPS from a keyframe's NAL units, for SDP: the first of each. */
static void collect_params(struct cam_source *src, const uint8_t *p, size_t n)
{
	size_t off = 0, len;
	const uint8_t *nal;
	while (h26x_annexb_next(p, n, &off, &nal, &len)) {
		if (len < h26x_nal_header_size(src->codec))
			continue;
		unsigned t = h26x_nal_type(src->codec, nal);
		int slot = -1;
		if (src->codec == KP_CODEC_H264)
			slot = t == 7 ? 1 : t == 8 ? 2 : -1;
		else
			slot = t == 32 ? 0 : t == 33 ? 1 : t == 34 ? 2 : -1;
		if (slot >= 0 && !src->param_len[slot] && len <= MAX_PARAM) {
			memcpy(src->params[slot], nal, len);
			src->param_len[slot] = len;
		}
	}
}

static void deliver(struct cam_source *src, uint64_t index)
{
	const struct stored_frame *sf = &src->frames[index % src->nframes];
	struct cam_frame f = {
	    .codec = src->codec,
	    .keyframe = sf->keyframe,
	    .pts_us = cam_source_dts_us(src, index) + (uint64_t)sf->cto_us,
	    .dts_us = cam_source_dts_us(src, index),
	    .seq = index,
	    .width = src->width,
	    .height = src->height,
	    .data = sf->data,
	    .len = sf->len,
	};
	for (int i = 0; i < MAX_SUBS; i++) {
		struct cam_sub *s = &src->subs[i];
		if (!s->used)
			continue;
		if (!s->started && !f.keyframe)
			continue;
		s->started = true;
		s->cb(&f, s->arg);
	}
}

static void on_tick(uv_timer_t *t)
{
	struct cam_source *src = t->data;
	if (paused)
		return;
	uint64_t now = uv_now(t->loop);
	/* Send every frame that is due; after a long stall, skip ahead instead of bursting. */
	uint64_t due = (now - src->start_ms) * src->fps / 1000 + 1;
	if (due > src->next + (uint64_t)src->fps * 2)
		src->next = due - 1;
	while (src->next < due)
		deliver(src, src->next++);
}

static bool is_ts(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && !strcmp(path + n - 3, ".ts");
}

int cam_source_open(uv_loop_t *loop, const char *path, enum kp_codec codec, unsigned fps, struct cam_source **ret)
{
	AVFormatContext *fmt = NULL;
	const AVInputFormat *in = av_find_input_format(is_ts(path)              ? "mpegts"
						       : codec == KP_CODEC_H264 ? "h264"
										: "hevc");
	int r = avformat_open_input(&fmt, path, in, NULL);
	if (r < 0)
		return r;
	struct cam_source *src = calloc(1, sizeof *src);
	if (!src) {
		avformat_close_input(&fmt);
		return -ENOMEM;
	}
	src->codec = codec;
	src->fps = fps;
	r = avformat_find_stream_info(fmt, NULL);
	if (r >= 0 && fmt->nb_streams == 1) {
		src->width = (uint32_t)fmt->streams[0]->codecpar->width;
		src->height = (uint32_t)fmt->streams[0]->codecpar->height;
	}
	AVPacket *pkt = av_packet_alloc();
	while (r >= 0 && pkt && av_read_frame(fmt, pkt) >= 0) {
		if (src->nframes < MAX_FRAMES) {
			struct stored_frame *sf = &src->frames[src->nframes];
			sf->data = malloc((size_t)pkt->size);
			if (sf->data) {
				memcpy(sf->data, pkt->data, (size_t)pkt->size);
				sf->len = (size_t)pkt->size;
				sf->keyframe = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
				if (pkt->pts != AV_NOPTS_VALUE && pkt->dts != AV_NOPTS_VALUE && pkt->pts > pkt->dts)
					sf->cto_us = av_rescale_q(pkt->pts - pkt->dts,
								  fmt->streams[pkt->stream_index]->time_base,
								  (AVRational){1, 1000000});
				if (sf->keyframe)
					collect_params(src, sf->data, sf->len);
				src->nframes++;
			}
		}
		av_packet_unref(pkt);
	}
	av_packet_free(&pkt);
	avformat_close_input(&fmt);
	if (src->nframes == 0 || !src->frames[0].keyframe || !src->width) {
		for (size_t i = 0; i < src->nframes; i++)
			free(src->frames[i].data);
		free(src);
		return -EINVAL;
	}
	uv_timer_init(loop, &src->timer);
	src->timer.data = src;
	src->start_ms = uv_now(loop);
	uv_timer_start(&src->timer, on_tick, 0, 1000 / (fps * 2) ? 1000 / (fps * 2) : 1);
	*ret = src;
	return 0;
}

int cam_source_subscribe(struct cam_source *src, cam_frame_cb cb, void *arg, struct cam_sub **ret)
{
	for (int i = 0; i < MAX_SUBS; i++) {
		struct cam_sub *s = &src->subs[i];
		if (s->used)
			continue;
		*s = (struct cam_sub){.src = src, .cb = cb, .arg = arg, .used = true};
		*ret = s;
		return 0;
	}
	return -ENOSPC;
}

void cam_source_unsubscribe(struct cam_sub *sub)
{
	if (sub)
		sub->used = false;
}

enum kp_codec cam_source_codec(const struct cam_source *src)
{
	return src->codec;
}

void cam_source_size(const struct cam_source *src, uint32_t *w, uint32_t *h)
{
	*w = src->width;
	*h = src->height;
}

unsigned cam_source_fps(const struct cam_source *src)
{
	return src->fps;
}

void cam_source_stop_pacing(struct cam_source *src)
{
	uv_timer_stop(&src->timer);
}

size_t cam_source_loop_len(const struct cam_source *src)
{
	return src->nframes;
}

void cam_source_loop_frame(const struct cam_source *src, size_t i, const uint8_t **data, size_t *len, bool *keyframe)
{
	const struct stored_frame *sf = &src->frames[i % src->nframes];
	*data = sf->data;
	*len = sf->len;
	*keyframe = sf->keyframe;
}

uint64_t cam_source_dts_us(const struct cam_source *src, uint64_t index)
{
	return index * 1000000ull / src->fps;
}

int cam_source_param_set(const struct cam_source *src, int index, const uint8_t **data, size_t *len)
{
	if (index < 0 || index > 2 || !src->param_len[index])
		return -ENOENT;
	*data = src->params[index];
	*len = src->param_len[index];
	return 0;
}
