/* The transcoder's H.265 -> H.264 job through its real thread, queues and uv_async
 * (transcoder/job.c): the 1080p H.265 fixture fed at 25 fps comes out as H.264 that
 * libavcodec decodes at 640x360 (sub-stream size), with SPS/PPS before every IDR and an
 * IDR at least every 2 s; a second viewer joining at the 60th frame (rtcd's transcode.c
 * then asks for an IDR with force_key) starts at an IDR; beyond the configured number
 * of video jobs an open fails with EBUSY; the close stops the thread. All of it inside
 * the transcoder's confinement (transcoder/main.c: the base seccomp set, no file system,
 * its address-space ceiling), so a system call the codec threads need and the
 * allow-list refuses kills the test. */
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <math.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <string.h>

#include "kp_build_config.h"
#include "kp_limits.h"
#include "job.h"
#include "sandbox.h"
#include "scale.h"
#include "test.h"

#define MAX_AUS 128

static struct {
	uint8_t *data[MAX_AUS];
	int size[MAX_AUS];
	bool key[MAX_AUS];
	unsigned n;
} fx;

struct viewer {
	AVCodecContext *dec;
	unsigned aus, keyframes, keyframes_with_sps, decoded, first_key_at, compared;
	double min_psnr;
	int64_t last_key_pts, max_key_gap;
	unsigned width, height;
};

static struct viewer v1, v2;
/* The first source pictures, decoded here and downscaled: what the output should show. */
#define REF_FRAMES 25
static uint8_t ref_luma[REF_FRAMES][640 * 360];

static int make_reference(void)
{
	const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_HEVC);
	AVCodecContext *dec = avcodec_alloc_context3(c);
	AVPacket *pkt = av_packet_alloc();
	AVFrame *frame = av_frame_alloc();
	static uint8_t chroma[2][320 * 180];
	unsigned n = 0;
	if (avcodec_open2(dec, c, NULL) < 0)
		return -1;
	for (unsigned i = 0; i <= REF_FRAMES && n < REF_FRAMES; i++) {
		if (i < REF_FRAMES) {
			av_new_packet(pkt, fx.size[i]);
			memcpy(pkt->data, fx.data[i], (size_t)fx.size[i]);
			avcodec_send_packet(dec, pkt);
			av_packet_unref(pkt);
		} else {
			avcodec_send_packet(dec, NULL);
		}
		while (n < REF_FRAMES && avcodec_receive_frame(dec, frame) == 0) {
			struct tx_plane src[3], dst[3] = {{ref_luma[n], 640}, {chroma[0], 320}, {chroma[1], 320}};
			for (int p = 0; p < 3; p++)
				src[p] = (struct tx_plane){frame->data[p], frame->linesize[p]};
			tx_scale_yuv420(src, (unsigned)frame->width, (unsigned)frame->height, dst);
			n++;
			av_frame_unref(frame);
		}
	}
	av_frame_free(&frame);
	av_packet_free(&pkt);
	avcodec_free_context(&dec);
	return n == REF_FRAMES ? 0 : -1;
}

static double psnr(const AVFrame *f, const uint8_t *ref)
{
	double se = 0;
	for (int y = 0; y < 360; y++)
		for (int x = 0; x < 640; x++) {
			int d = f->data[0][y * f->linesize[0] + x] - ref[y * 640 + x];
			se += d * d;
		}
	double mse = se / (640.0 * 360.0);
	return mse == 0 ? 99 : 10 * log10(255.0 * 255.0 / mse);
}
static bool v2_joined, closed;
static unsigned fed;
static uv_timer_t feeder;

static int load(const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, name);
	AVFormatContext *ic = NULL;
	if (avformat_open_input(&ic, path, NULL, NULL) < 0 || avformat_find_stream_info(ic, NULL) < 0)
		return -1;
	AVPacket *pkt = av_packet_alloc();
	while (fx.n < MAX_AUS && av_read_frame(ic, pkt) >= 0) {
		fx.data[fx.n] = malloc((size_t)pkt->size);
		memcpy(fx.data[fx.n], pkt->data, (size_t)pkt->size);
		fx.size[fx.n] = pkt->size;
		fx.key[fx.n++] = pkt->flags & AV_PKT_FLAG_KEY;
		av_packet_unref(pkt);
	}
	av_packet_free(&pkt);
	avformat_close_input(&ic);
	return 0;
}

static bool has_sps(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 4 < len; i++)
		if (p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1 && (p[i + 3] & 0x1f) == 7)
			return true;
	return false;
}

static void on_au(struct viewer *v, const struct tx_frame *au)
{
	CHECK_EQ(au->job, 7);
	if (au->keyframe) {
		if (!v->keyframes)
			v->first_key_at = v->aus;
		else if (au->pts - v->last_key_pts > v->max_key_gap)
			v->max_key_gap = au->pts - v->last_key_pts;
		v->last_key_pts = au->pts;
		v->keyframes++;
		v->keyframes_with_sps += has_sps(au->data, au->len);
	}
	v->aus++;
	v->width = au->width;
	v->height = au->height;
	if (!v->keyframes)
		return; /* a viewer starts at an IDR */
	AVPacket *pkt = av_packet_alloc();
	AVFrame *frame = av_frame_alloc();
	CHECK_EQ(av_new_packet(pkt, (int)au->len), 0);
	memcpy(pkt->data, au->data, au->len);
	pkt->pts = au->pts;
	CHECK_EQ(avcodec_send_packet(v->dec, pkt), 0);
	while (avcodec_receive_frame(v->dec, frame) == 0) {
		CHECK_EQ(frame->width, 640);
		CHECK_EQ(frame->height, 360);
		int64_t i = frame->pts / 3600; /* the fed frame number */
		if (frame->pts % 3600 == 0 && i >= 0 && i < REF_FRAMES) {
			double q = psnr(frame, ref_luma[i]);
			if (!v->compared || q < v->min_psnr)
				v->min_psnr = q;
			v->compared++;
		}
		v->decoded++;
		av_frame_unref(frame);
	}
	av_packet_free(&pkt);
	av_frame_free(&frame);
}

static bool on_out(void *arg, const struct tx_frame *f)
{
	(void)arg;
	on_au(&v1, f);
	if (v2_joined)
		on_au(&v2, f);
	return true;
}

static void on_ended(void *arg, kp_Peer peer, uint32_t job, int err, const char *reason)
{
	(void)arg;
	(void)peer;
	fprintf(stderr, "job %u ended: %s (%s)\n", (unsigned)job, reason, strerror(err < 0 ? -err : err));
	CHECK(0);
}

static void open_viewer(struct viewer *v)
{
	const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_H264);
	v->dec = avcodec_alloc_context3(c);
	CHECK_EQ(avcodec_open2(v->dec, c, NULL), 0);
}

/* The feeder keeps at most IN_FLIGHT access units ahead of viewer 1, so the transcoder
 * never drops input however slow this machine (or its sanitizer build) is: the counts
 * checked below are exact, not a measure of speed. STALL_TICKS without any output end
 * the feed, and the count checks then fail instead of the test hanging. */
#define IN_FLIGHT   12
#define STALL_TICKS 750 /* 30 s at 40 ms */
static unsigned stalled, last_aus;

static void feed(uv_timer_t *t)
{
	stalled = v1.aus == last_aus ? stalled + 1 : 0;
	last_aus = v1.aus;
	bool done = fed == 2 * fx.n, stuck = stalled >= STALL_TICKS;
	if (!stuck && (done ? v1.aus < fed : fed - v1.aus >= IN_FLIGHT))
		return; /* the transcoder has not caught up yet */
	if (done || stuck) {
		uv_timer_stop(t);
		tx_job_close(kp_Peer_PEER_NONE, 7);
		CHECK_EQ(tx_jobs_running(kp_TranscodeKind_TRANSCODE_H265_H264), 0);
		closed = true;
		return;
	}
	unsigned i = fed % fx.n;
	bool join = fed == 60;
	if (join)
		v2_joined = true;
	tx_job_input(kp_Peer_PEER_NONE, 7, fx.data[i], (size_t)fx.size[i], 3600ll * fed, 1700000000000 + 40ll * fed,
		     fx.key[i], join);
	fed++;
}

static void test_transcode(void)
{
	CHECK_EQ(load("main.h265"), 0);
	CHECK_EQ(fx.n, 100);
	CHECK_EQ(make_reference(), 0);
	const struct kp_sandbox tx_box = {
	    .name = "transcoder",
	    .rlimit_as = KP_TRANSCODER_AS,
	    .rlimit_nofile = 64,
	    .syscalls = 0,
	};
	struct kp_sandbox_report rep;
	const char *step = "";
	int e = kp_sandbox_apply(&tx_box, &rep, &step);
	if (e < 0)
		fprintf(stderr, "confining like the transcoder failed at %s: %s\n", step, strerror(-e));
	CHECK_EQ(e, 0);
	open_viewer(&v1);
	open_viewer(&v2);
	uv_loop_t *loop = uv_default_loop();
	static const struct tx_job_hooks hooks = {.out = on_out, .ended = on_ended};
	tx_jobs_init(loop, &hooks);
	tx_jobs_set_max(1, 1);
	char why[128];
	struct tx_job_open o = {.job = 7, .kind = kp_TranscodeKind_TRANSCODE_H265_H264, .name = "cam-h265 stream 0"};
	CHECK_EQ(tx_job_open(&o, why, sizeof why), 0);
	CHECK_EQ(tx_jobs_running(kp_TranscodeKind_TRANSCODE_H265_H264), 1);
	CHECK_EQ(tx_job_open(&o, why, sizeof why), -EEXIST);
	struct tx_job_open other = {.job = 8, .kind = kp_TranscodeKind_TRANSCODE_H265_H264, .name = "other-cam"};
	CHECK_EQ(tx_job_open(&other, why, sizeof why), -EBUSY);
	CHECK(strstr(why, "1 video jobs run") != NULL);
	/* The live source: 25 fps, as the camera sends it. */
	CHECK_EQ(uv_timer_init(loop, &feeder), 0);
	CHECK_EQ(uv_timer_start(&feeder, feed, 0, 40), 0);
	uv_run(loop, UV_RUN_DEFAULT); /* ends when the job's thread is joined */
	CHECK(closed);
	fprintf(stderr,
		"viewer 1: %u access units, %u keyframes, %u decoded, luma PSNR >= %.1f dB over %u; "
		"viewer 2: %u, %u, %u (first IDR at %u)\n",
		v1.aus, v1.keyframes, v1.decoded, v1.min_psnr, v1.compared, v2.aus, v2.keyframes, v2.decoded,
		v2.first_key_at);
	CHECK(v1.compared >= 20);
	CHECK(v1.min_psnr > 30.0);  /* the picture, not just a decodable stream */
	CHECK_EQ(v1.aus, 2 * fx.n); /* every access unit fed, none dropped */
	CHECK(v1.decoded + 4 >= v1.aus);
	CHECK_EQ(v1.first_key_at, 0);
	CHECK_EQ(v1.keyframes, v1.keyframes_with_sps);
	CHECK(v1.keyframes >= 3);
	CHECK(v1.max_key_gap <= 2 * 90000);
	CHECK_EQ(v1.width, 640);
	CHECK_EQ(v1.height, 360);
	CHECK(v2.aus + 60 + IN_FLIGHT >= 2 * fx.n); /* from its join at the 60th on */
	CHECK(v2.first_key_at <= 8);
	CHECK(v2.decoded + 4 >= v2.aus);
	/* Once stopped, the stream can be transcoded again. */
	CHECK_EQ(tx_job_open(&other, why, sizeof why), 0);
	tx_job_close(kp_Peer_PEER_NONE, 8);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK_EQ(tx_jobs_running(kp_TranscodeKind_TRANSCODE_H265_H264), 0);
	avcodec_free_context(&v1.dec);
	avcodec_free_context(&v2.dec);
	for (unsigned i = 0; i < fx.n; i++)
		free(fx.data[i]);
	uv_close((uv_handle_t *)&feeder, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK_EQ(uv_loop_close(loop), 0);
}

int main(void)
{
	RUN(test_transcode);
	return TEST_EXIT();
}
