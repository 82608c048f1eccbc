/* fmp4-writer-bench: writes the access units of an Annex-B fixture (looped to --frames)
 * to a fragmented MP4 file, (a) with recorderd's own writer (common/fmp4_write.c,
 * common/h26x.c, common/h26x_config.c, driven the way recorderd/stream.c drives them: split each access unit
 * into NAL units, convert it to a length-prefixed sample in a GOP buffer, and at the next
 * keyframe pwrite a prft+moof+mdat header and the GOP) and (b) with libavformat's mp4
 * muxer on a custom AVIO (movflags=frag_keyframe+empty_moov+default_base_moof), whose
 * write callback writes to the file and records where each fragment ends (the byte
 * ranges recorderd's catalog needs). Warm-up runs first, then the measured runs, (a) and
 * (b) interleaved so that background load hits both alike. Prints one JSON document with
 * every run's wall and CPU time; perf/fmp4-writer/run.py computes the statistics and
 * checks the files. Input reading is not timed: the access units are loaded first. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmp4.h"
#include "h26x.h"
#include "h26x_config.h"

#define FRAME_90K 3600 /* 25 fps */
#define GOP_MAX   (32u << 20)

struct au {
	uint8_t *data;
	size_t len;
	int keyframe;
};

struct input {
	enum kp_codec codec;
	int width, height;
	struct au *aus;
	size_t n;
	uint8_t extradata[3 * (4 + H26X_PS_MAX)]; /* Annex-B VPS/SPS/PPS of the first keyframe */
	size_t extradata_len;
};

struct result {
	double wall_ms, cpu_ms;
	uint64_t bytes;        /* file size */
	uint64_t sample_bytes; /* length-prefixed sample bytes (own writer) */
	unsigned fragments;    /* fragments written (own) or fragment ends seen by the AVIO callback */
	unsigned writes;       /* write system calls */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "fmp4-writer-bench: %s: %s\n", what, err < 0 ? av_err2str(err) : strerror(err));
	exit(1);
}

static double ms_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static void load(const char *path, struct input *in)
{
	AVFormatContext *fmt = NULL;
	const AVInputFormat *f = av_find_input_format(in->codec == KP_CODEC_H264 ? "h264" : "hevc");
	int r = avformat_open_input(&fmt, path, f, NULL);
	if (r < 0)
		die(path, r);
	r = avformat_find_stream_info(fmt, NULL);
	if (r < 0 || fmt->nb_streams != 1)
		die("reading the fixture's stream info", r < 0 ? r : AVERROR_INVALIDDATA);
	in->width = fmt->streams[0]->codecpar->width;
	in->height = fmt->streams[0]->codecpar->height;
	AVPacket *pkt = av_packet_alloc();
	size_t cap = 0;
	while (av_read_frame(fmt, pkt) >= 0) {
		if (in->n == cap) {
			cap = cap ? cap * 2 : 256;
			in->aus = realloc(in->aus, cap * sizeof *in->aus);
			if (!in->aus)
				die("realloc", ENOMEM);
		}
		struct au *a = &in->aus[in->n++];
		a->data = malloc((size_t)pkt->size + AV_INPUT_BUFFER_PADDING_SIZE);
		if (!a->data)
			die("malloc", ENOMEM);
		memcpy(a->data, pkt->data, (size_t)pkt->size);
		memset(a->data + pkt->size, 0, AV_INPUT_BUFFER_PADDING_SIZE);
		a->len = (size_t)pkt->size;
		a->keyframe = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
		av_packet_unref(pkt);
	}
	av_packet_free(&pkt);
	avformat_close_input(&fmt);
	if (!in->n || !in->aus[0].keyframe)
		die("the fixture does not start with a keyframe", EINVAL);
	/* Annex-B parameter sets for libavformat's extradata (it builds avcC/hvcC from them). */
	struct h26x_nal nals[H26X_NAL_MAX_PER_AU];
	int nn = h26x_split(in->aus[0].data, in->aus[0].len, nals, H26X_NAL_MAX_PER_AU);
	if (nn < 0)
		die("splitting the first keyframe", -nn);
	for (int i = 0; i < nn; i++) {
		if (nals[i].len < h26x_nal_header_size(in->codec) ||
		    !h26x_is_param_set(in->codec, h26x_nal_type(in->codec, nals[i].data)) || nals[i].len > H26X_PS_MAX)
			continue;
		static const uint8_t sc[4] = {0, 0, 0, 1};
		memcpy(in->extradata + in->extradata_len, sc, 4);
		memcpy(in->extradata + in->extradata_len + 4, nals[i].data, nals[i].len);
		in->extradata_len += 4 + nals[i].len;
	}
}

/* ---- (a) recorderd's writer, driven as recorderd/stream.c drives it ---- */

struct own {
	int fd;
	uint64_t off;
	uint8_t *gop;
	size_t gop_len, gop_cap;
	struct fmp4_sample samples[FMP4_FRAG_MAX_SAMPLES];
	unsigned n;
	uint32_t seq;
	uint64_t first_pts, last_pts;
	struct h26x_param_sets ps;
	int have_file;
	struct result *res;
};

static void pwrite_all(struct own *o, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = pwrite(o->fd, p, n, (off_t)o->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("pwrite", w < 0 ? errno : EIO);
		o->res->writes++;
		p += w;
		n -= (size_t)w;
		o->off += (uint64_t)w;
	}
}

static void own_flush(struct own *o)
{
	if (!o->n)
		return;
	struct fmp4_frag_desc d = {.seq = ++o->seq,
				   .base_time = o->first_pts,
				   .wall_us = 1700000000000000ll + (int64_t)o->first_pts * 100 / 9,
				   .samples = o->samples,
				   .nsamples = o->n};
	static uint8_t hdr[FMP4_FRAG_HEADER_MAX];
	size_t hlen;
	int r = fmp4_write_frag_header(&d, hdr, sizeof hdr, &hlen);
	if (r < 0)
		die("fmp4_write_frag_header", -r);
	pwrite_all(o, hdr, hlen);
	pwrite_all(o, o->gop, o->gop_len);
	o->res->fragments++;
	o->n = 0;
	o->gop_len = 0;
}

static void own_frame(struct own *o, const struct input *in, const struct au *a, uint64_t pts)
{
	static struct h26x_nal nals[H26X_NAL_MAX_PER_AU];
	int nn = h26x_split(a->data, a->len, nals, H26X_NAL_MAX_PER_AU);
	if (nn < 0)
		die("h26x_split", -nn);
	if (o->n) /* the previous frame lasts until this one, as in stream.c */
		o->samples[o->n - 1].duration = (uint32_t)(pts - o->last_pts);
	o->last_pts = pts;
	if (a->keyframe) {
		own_flush(o);
		struct h26x_param_sets ps = o->ps;
		int r = h26x_param_sets(in->codec, nals, (unsigned)nn, &ps);
		if (r < 0)
			die("h26x_param_sets", -r);
		o->ps = ps;
		if (!o->have_file) {
			struct fmp4_track t = {
			    .codec = in->codec, .width = (uint16_t)in->width, .height = (uint16_t)in->height};
			r = h26x_config_write(in->codec, &ps, t.config, sizeof t.config, &t.config_len);
			if (r < 0)
				die("h26x_config_write", -r);
			static uint8_t init[FMP4_INIT_MAX];
			size_t init_len;
			r = fmp4_write_init(&t, init, sizeof init, &init_len);
			if (r < 0)
				die("fmp4_write_init", -r);
			pwrite_all(o, init, init_len);
			o->have_file = 1;
		}
	}
	size_t size = h26x_sample_size(nals, (unsigned)nn);
	if (o->gop_len + size > GOP_MAX || o->n == FMP4_FRAG_MAX_SAMPLES)
		own_flush(o);
	if (o->gop_len + size > o->gop_cap) {
		size_t cap = o->gop_cap ? o->gop_cap : 256 * 1024;
		while (cap < o->gop_len + size)
			cap *= 2;
		uint8_t *g = realloc(o->gop, cap);
		if (!g)
			die("realloc", ENOMEM);
		o->gop = g;
		o->gop_cap = cap;
	}
	h26x_to_sample(nals, (unsigned)nn, o->gop + o->gop_len);
	o->gop_len += size;
	o->res->sample_bytes += size;
	if (o->n == 0)
		o->first_pts = pts;
	o->samples[o->n++] = (struct fmp4_sample){.size = (uint32_t)size, .keyframe = (uint8_t)a->keyframe};
}

static void run_own(const struct input *in, unsigned frames, const char *path, struct result *res)
{
	struct own *o = calloc(1, sizeof *o);
	if (!o)
		die("calloc", ENOMEM);
	o->res = res;
	o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o->fd < 0)
		die(path, errno);
	for (unsigned i = 0; i < frames; i++)
		own_frame(o, in, &in->aus[i % in->n], (uint64_t)i * FRAME_90K);
	if (o->n) /* the last frame's duration is guessed, as stream.c's end_gop does */
		o->samples[o->n - 1].duration = FRAME_90K;
	own_flush(o);
	if (close(o->fd) < 0)
		die("close", errno);
	res->bytes = o->off;
	free(o->gop);
	free(o);
}

/* ---- (b) libavformat's mp4 muxer on a custom AVIO ---- */

struct sink {
	int fd;
	uint64_t off;
	struct result *res;
};

/* libavformat 61 (FFmpeg 7) made the buffer of AVIO write callbacks const. */
#if LIBAVFORMAT_VERSION_MAJOR >= 61
typedef const uint8_t avio_wbuf;
#else
typedef uint8_t avio_wbuf;
#endif

static int sink_write(void *opaque, avio_wbuf *buf, int len, enum AVIODataMarkerType type, int64_t time)
{
	(void)time;
	struct sink *s = opaque;
	/* A fragment ends where the muxer flushes after it: the only place the byte ranges
	 * recorderd's catalog needs could come from. */
	if (type == AVIO_DATA_MARKER_SYNC_POINT || type == AVIO_DATA_MARKER_FLUSH_POINT)
		s->res->fragments++;
	while (len > 0) {
		ssize_t w = write(s->fd, buf, (size_t)len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return AVERROR(w < 0 ? errno : EIO);
		s->res->writes++;
		buf += w;
		len -= (int)w;
		s->off += (uint64_t)w;
	}
	return 0;
}

static void no_free(void *opaque, uint8_t *data)
{
	(void)opaque;
	(void)data;
}

static void run_lavf(const struct input *in, unsigned frames, const char *path, int avio_buffer, struct result *res)
{
	struct sink s = {.res = res};
	s.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s.fd < 0)
		die(path, errno);
	AVFormatContext *oc = NULL;
	int r = avformat_alloc_output_context2(&oc, NULL, "mp4", NULL);
	if (r < 0)
		die("avformat_alloc_output_context2", r);
	uint8_t *buf = av_malloc((size_t)avio_buffer);
	oc->pb = avio_alloc_context(buf, avio_buffer, 1, &s, NULL, NULL, NULL);
	if (!buf || !oc->pb)
		die("avio_alloc_context", ENOMEM);
	oc->pb->write_data_type = sink_write;
	oc->flags |= AVFMT_FLAG_CUSTOM_IO;
	AVStream *st = avformat_new_stream(oc, NULL);
	if (!st)
		die("avformat_new_stream", ENOMEM);
	st->time_base = (AVRational){1, 90000};
	AVCodecParameters *par = st->codecpar;
	par->codec_type = AVMEDIA_TYPE_VIDEO;
	par->codec_id = in->codec == KP_CODEC_H264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC;
	par->width = in->width;
	par->height = in->height;
	par->extradata = av_mallocz(in->extradata_len + AV_INPUT_BUFFER_PADDING_SIZE);
	if (!par->extradata)
		die("av_mallocz", ENOMEM);
	memcpy(par->extradata, in->extradata, in->extradata_len);
	par->extradata_size = (int)in->extradata_len;
	AVDictionary *opts = NULL;
	av_dict_set(&opts, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
	r = avformat_write_header(oc, &opts);
	if (r < 0)
		die("avformat_write_header", r);
	if (av_dict_count(opts))
		die("the mp4 muxer refused an option", EINVAL);
	av_dict_free(&opts);
	AVPacket *pkt = av_packet_alloc();
	if (!pkt)
		die("av_packet_alloc", ENOMEM);
	for (unsigned i = 0; i < frames; i++) {
		const struct au *a = &in->aus[i % in->n];
		/* Best case for libavformat: the packet references the bytes without a copy. */
		pkt->buf = av_buffer_create(a->data, (int)a->len + AV_INPUT_BUFFER_PADDING_SIZE, no_free, NULL,
					    AV_BUFFER_FLAG_READONLY);
		if (!pkt->buf)
			die("av_buffer_create", ENOMEM);
		pkt->data = a->data;
		pkt->size = (int)a->len;
		pkt->pts = pkt->dts = (int64_t)i * FRAME_90K;
		pkt->duration = FRAME_90K;
		pkt->flags = a->keyframe ? AV_PKT_FLAG_KEY : 0;
		pkt->stream_index = 0;
		pkt->time_base = (AVRational){1, 90000};
		av_packet_rescale_ts(pkt, (AVRational){1, 90000}, st->time_base);
		r = av_write_frame(oc, pkt);
		if (r < 0)
			die("av_write_frame", r);
		av_packet_unref(pkt);
	}
	r = av_write_trailer(oc);
	if (r < 0)
		die("av_write_trailer", r);
	av_packet_free(&pkt);
	avio_flush(oc->pb);
	av_freep(&oc->pb->buffer);
	avio_context_free(&oc->pb);
	avformat_free_context(oc);
	if (close(s.fd) < 0)
		die("close", errno);
	res->bytes = s.off;
}

static void timed(int which, const struct input *in, unsigned frames, const char *path, int avio_buffer,
		  struct result *res)
{
	memset(res, 0, sizeof *res);
	unlink(path); /* not timed: no page-cache truncation inside the measurement */
	struct timespec w0, w1, c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	if (which == 0)
		run_own(in, frames, path, res);
	else
		run_lavf(in, frames, path, avio_buffer, res);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	res->wall_ms = ms_between(&w0, &w1);
	res->cpu_ms = ms_between(&c0, &c1);
}

static void print_runs(const char *name, const struct result *r, unsigned n, int last)
{
	printf("  \"%s\": [", name);
	for (unsigned i = 0; i < n; i++)
		printf("%s{\"wall_ms\": %.4f, \"cpu_ms\": %.4f, \"bytes\": %llu, \"sample_bytes\": %llu, "
		       "\"fragments\": %u, \"writes\": %u}",
		       i ? ",\n    " : "\n    ", r[i].wall_ms, r[i].cpu_ms, (unsigned long long)r[i].bytes,
		       (unsigned long long)r[i].sample_bytes, r[i].fragments, r[i].writes);
	printf("\n  ]%s\n", last ? "" : ",");
}

static void usage(void)
{
	fprintf(stderr, "usage: fmp4-writer-bench --input FILE.h264|FILE.h265 --out-own FILE --out-lavf FILE\n"
			"       [--frames 3000] [--runs 15] [--warmup 3] [--avio-buffer 32768]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *input = NULL, *out_own = NULL, *out_lavf = NULL;
	unsigned frames = 3000, runs = 15, warmup = 3;
	int avio_buffer = 32768; /* libavformat's own IO_BUFFER_SIZE */
	static const struct option lo[] = {
	    {"input", required_argument, NULL, 'i'},       {"out-own", required_argument, NULL, 'a'},
	    {"out-lavf", required_argument, NULL, 'b'},    {"frames", required_argument, NULL, 'f'},
	    {"runs", required_argument, NULL, 'r'},        {"warmup", required_argument, NULL, 'w'},
	    {"avio-buffer", required_argument, NULL, 'B'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'a':
			out_own = optarg;
			break;
		case 'b':
			out_lavf = optarg;
			break;
		case 'f':
			frames = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			warmup = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'B':
			avio_buffer = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!input || !out_own || !out_lavf || !frames || !runs || avio_buffer < 4096)
		usage();
	size_t il = strlen(input);
	struct input in = {.codec = il > 5 && (!strcmp(input + il - 5, ".h265") || !strcmp(input + il - 5, ".hevc"))
					? KP_CODEC_H265
					: KP_CODEC_H264};
	av_log_set_level(AV_LOG_ERROR);
	load(input, &in);
	struct result *own = calloc(runs, sizeof *own), *lavf = calloc(runs, sizeof *lavf), tmp;
	if (!own || !lavf)
		die("calloc", ENOMEM);
	for (unsigned i = 0; i < warmup; i++) {
		timed(0, &in, frames, out_own, avio_buffer, &tmp);
		timed(1, &in, frames, out_lavf, avio_buffer, &tmp);
	}
	/* Interleaved, alternating which goes first, so drift and background load hit both. */
	for (unsigned i = 0; i < runs; i++) {
		int first = i & 1;
		timed(first, &in, frames, first ? out_lavf : out_own, avio_buffer, first ? &lavf[i] : &own[i]);
		timed(!first, &in, frames, !first ? out_lavf : out_own, avio_buffer, !first ? &lavf[i] : &own[i]);
	}
	printf("{\n  \"input\": \"%s\",\n  \"codec\": \"%s\",\n  \"width\": %d,\n  \"height\": %d,\n"
	       "  \"fixture_frames\": %zu,\n  \"frames\": %u,\n  \"runs\": %u,\n  \"warmup\": %u,\n"
	       "  \"avio_buffer\": %d,\n  \"libavformat\": \"%s\",\n",
	       input, in.codec == KP_CODEC_H265 ? "h265" : "h264", in.width, in.height, in.n, frames, runs, warmup,
	       avio_buffer, LIBAVFORMAT_IDENT);
	print_runs("own", own, runs, 0);
	print_runs("lavf", lavf, runs, 1);
	printf("}\n");
	return 0;
}
