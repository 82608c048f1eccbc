/* The transcoder's keyframe -> JPEG (transcoder/picture.c, issue 20): the first keyframe
 * of the 640x360 H.264 and the 1920x1080 H.265 fixtures, as Annex-B with their parameter
 * sets, comes out as a JPEG 320 px wide (and at full size) whose luma matches the frame
 * ffmpeg decodes and scales (scale=320:-2) at PSNR >= 30 dB; garbage and an oversized
 * input are refused with -EINVAL and -E2BIG, not a crash. */
#include <errno.h>
#include <libavformat/avformat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "kp_build_config.h"
#include "picture.h"
#include "test.h"

static void fixture(const char *name, char *path, size_t cap)
{
	snprintf(path, cap, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, name);
}

/* The first packet of a raw Annex-B fixture: the keyframe with its parameter sets. */
static uint8_t *first_keyframe(const char *name, size_t *len)
{
	char path[1024];
	fixture(name, path, sizeof path);
	AVFormatContext *ic = NULL;
	if (avformat_open_input(&ic, path, NULL, NULL) < 0)
		return NULL;
	AVPacket *pkt = av_packet_alloc();
	uint8_t *out = NULL;
	if (av_read_frame(ic, pkt) >= 0 && (pkt->flags & AV_PKT_FLAG_KEY)) {
		out = malloc((size_t)pkt->size);
		memcpy(out, pkt->data, (size_t)pkt->size);
		*len = (size_t)pkt->size;
	}
	av_packet_free(&pkt);
	avformat_close_input(&ic);
	return out;
}

/* ffmpeg's luma of the first frame at width w (0: as decoded), w x h bytes. */
static uint8_t *ffmpeg_luma(const char *name, int w, int h)
{
	char path[1024], cmd[1400];
	fixture(name, path, sizeof path);
	snprintf(cmd, sizeof cmd, "ffmpeg -v error -i '%s' -frames:v 1 -vf scale=%d:-2 -pix_fmt gray -f rawvideo -",
		 path, w);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	uint8_t *buf = malloc((size_t)w * (size_t)h);
	size_t got = fread(buf, 1, (size_t)w * (size_t)h, p);
	pclose(p);
	if (got != (size_t)w * (size_t)h) {
		free(buf);
		return NULL;
	}
	return buf;
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n)
{
	double se = 0;
	for (size_t i = 0; i < n; i++)
		se += (double)(a[i] - b[i]) * (a[i] - b[i]);
	return se == 0 ? 99 : 10 * log10(255.0 * 255.0 * (double)n / se);
}

static void check_picture(const char *name, enum tx_picture_codec codec, unsigned width, int want_w, int want_h)
{
	size_t len = 0;
	uint8_t *kf = first_keyframe(name, &len);
	CHECK(kf != NULL);
	if (!kf)
		return;
	uint8_t *jpeg = NULL;
	size_t jlen = 0;
	CHECK_EQ(tx_picture_make(codec, kf, len, width, &jpeg, &jlen), 0);
	free(kf);
	if (!jpeg)
		return;
	tjhandle d = tjInitDecompress();
	int w = 0, h = 0, sub, cs;
	CHECK_EQ(tjDecompressHeader3(d, jpeg, (unsigned long)jlen, &w, &h, &sub, &cs), 0);
	CHECK_EQ(w, want_w);
	CHECK_EQ(h, want_h);
	uint8_t *gray = malloc((size_t)w * (size_t)h);
	CHECK_EQ(tjDecompress2(d, jpeg, (unsigned long)jlen, gray, w, 0, h, TJPF_GRAY, 0), 0);
	tjDestroy(d);
	uint8_t *ref = ffmpeg_luma(name, w, h);
	CHECK(ref != NULL);
	if (ref) {
		double db = psnr(gray, ref, (size_t)w * (size_t)h);
		printf("%s at %dx%d: %zu bytes, luma PSNR %.1f dB against ffmpeg\n", name, w, h, jlen, db);
		CHECK(db >= 30.0);
	}
	free(ref);
	free(gray);
	free(jpeg);
}

static void test_thumbnails(void)
{
	check_picture("sub.h264", TX_PICTURE_H264, TX_PICTURE_THUMB_WIDTH, 320, 180);
	check_picture("main.h265", TX_PICTURE_H265, TX_PICTURE_THUMB_WIDTH, 320, 180);
	check_picture("main.h264", TX_PICTURE_H264, 0, 1920, 1080);
}

static void test_refused(void)
{
	static uint8_t junk[4096];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	junk[0] = junk[1] = junk[2] = 0;
	junk[3] = 1;
	uint8_t *jpeg = NULL;
	size_t jlen = 0;
	CHECK_EQ(tx_picture_make(TX_PICTURE_H264, junk, sizeof junk, 320, &jpeg, &jlen), -EINVAL);
	CHECK_EQ(tx_picture_make(TX_PICTURE_H265, junk, sizeof junk, 320, &jpeg, &jlen), -EINVAL);
	CHECK_EQ(tx_picture_make(TX_PICTURE_H264, junk, 0, 320, &jpeg, &jlen), -EINVAL);
	CHECK_EQ(tx_picture_make(TX_PICTURE_H264, junk, TX_PICTURE_INPUT_MAX + 1, 320, &jpeg, &jlen), -E2BIG);
	CHECK(jpeg == NULL);
}

int main(void)
{
	RUN(test_thumbnails);
	RUN(test_refused);
	return TEST_EXIT();
}
