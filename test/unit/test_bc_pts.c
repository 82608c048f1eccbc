/* Presentation times of Baichuan video (ingestd/baichuan/bc_pts.c): the B-frame fixtures
 * (bframes.h264.ts, bframes.h265.ts) fed in decode order, twice over as the test camera
 * loops them, with the one decode-order time a camera sends (DTS 40 ms apart) get back
 * exactly the PTS - DTS their MPEG-TS packets carry; a stream without B-frames
 * (main.h264, main.h265) is shown at its DTS even when the camera's times jitter; a
 * frame rate from the Info record sets the first frame duration. */
#include <libavformat/avformat.h>

#include "bc_pts.h"
#include "kp_build_config.h"
#include "test.h"

struct au {
	uint8_t *data;
	size_t len;
	bool key;
	int64_t cto; /* PTS - DTS, 90 kHz; 0 without PTS */
};

static unsigned load(const char *name, struct au *out, unsigned max)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, name);
	AVFormatContext *ic = NULL;
	if (avformat_open_input(&ic, path, NULL, NULL) < 0 || avformat_find_stream_info(ic, NULL) < 0) {
		fprintf(stderr, "cannot read fixture %s (build it first)\n", path);
		return 0;
	}
	AVRational tb = ic->streams[0]->time_base;
	AVPacket *pkt = av_packet_alloc();
	unsigned n = 0;
	while (n < max && av_read_frame(ic, pkt) >= 0) {
		out[n].data = malloc((size_t)pkt->size);
		memcpy(out[n].data, pkt->data, (size_t)pkt->size);
		out[n].len = (size_t)pkt->size;
		out[n].key = pkt->flags & AV_PKT_FLAG_KEY;
		out[n].cto =
		    pkt->pts == AV_NOPTS_VALUE ? 0 : av_rescale_q(pkt->pts - pkt->dts, tb, (AVRational){1, 90000});
		n++;
		av_packet_unref(pkt);
	}
	av_packet_free(&pkt);
	avformat_close_input(&ic);
	return n;
}

static void check_fixture(const char *name, enum kp_codec codec, bool bframes, int64_t jitter)
{
	static struct au aus[512];
	unsigned n = load(name, aus, 512);
	CHECK(n >= 100);
	struct bc_pts p;
	bc_pts_init(&p);
	bc_pts_fps(&p, 25);
	unsigned nonzero = 0;
	for (unsigned loop = 0; loop < 2; loop++)
		for (unsigned i = 0; i < n; i++) {
			int64_t k = (int64_t)(loop * n + i);
			int64_t dts = 1000000 + k * 3600 + (k % 2 ? jitter : 0);
			int64_t pts = bc_pts_next(&p, codec, aus[i].data, aus[i].len, aus[i].key, dts);
			CHECK_EQ(pts - dts, aus[i].cto);
			nonzero += pts != dts;
		}
	CHECK(bframes ? nonzero > n : nonzero == 0);
	CHECK_EQ(p.repaired, 0u);
	CHECK_EQ(p.underived, 0u);
	for (unsigned i = 0; i < n; i++)
		free(aus[i].data);
}

static void test_bframes(void)
{
	check_fixture("bframes.h264.ts", KP_CODEC_H264, true, 0);
	check_fixture("bframes.h265.ts", KP_CODEC_H265, true, 0);
}

static void test_no_bframes(void)
{
	check_fixture("main.h264", KP_CODEC_H264, false, 700);
	check_fixture("main.h265", KP_CODEC_H265, false, -700);
}

int main(void)
{
	RUN(test_bframes);
	RUN(test_no_bframes);
	return TEST_EXIT();
}
