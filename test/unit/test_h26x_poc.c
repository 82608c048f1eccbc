/* Picture order counts (common/h26x_poc.c) on the B-frame fixtures (bframes.h264.ts:
 * x264 high profile, 2 B-frames; bframes.h265.ts: x265, 3 B-frames) read in decode
 * order with libavformat: each access unit's POC, over the POC step, differs from its
 * PTS in frames by the same constant within each closed GOP, a keyframe starts the
 * count, and the reorder depth the SPS states is the fixture's PTS - DTS of the
 * keyframe; on the fixtures without B-frames (main.h264, main.h265) the POC follows the
 * decode order (across main.h265's CRA keyframes) and the reorder depth is 0. Malformed slices are refused, not read
 * past. */
#include <errno.h>
#include <libavformat/avformat.h>

#include "h26x_poc.h"
#include "kp_build_config.h"
#include "test.h"

static void check_fixture(const char *name, enum kp_codec codec, uint32_t reorder)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, name);
	AVFormatContext *ic = NULL;
	if (avformat_open_input(&ic, path, NULL, NULL) < 0 || avformat_find_stream_info(ic, NULL) < 0) {
		fprintf(stderr, "cannot read fixture %s (build it first)\n", path);
		CHECK(0);
		return;
	}
	AVRational tb = ic->streams[0]->time_base;
	struct h26x_poc p;
	h26x_poc_init(&p, codec);
	AVPacket *pkt = av_packet_alloc();
	unsigned n = 0, keys = 0;
	int64_t base = 0;
	while (av_read_frame(ic, pkt) >= 0) {
		int32_t poc = -1;
		bool reset = false;
		int r = h26x_poc_au(&p, pkt->data, (size_t)pkt->size, &poc, &reset);
		CHECK_EQ(r, 0);
		bool key = pkt->flags & AV_PKT_FLAG_KEY;
		/* The raw demuxer knows no PTS: without B-frames it is the decode order. */
		bool raw = pkt->pts == AV_NOPTS_VALUE;
		int64_t pts_frames = raw ? n : av_rescale_q(pkt->pts, tb, (AVRational){1, 25});
		/* The MPEG-TS fixtures open every GOP with an IDR; main.h265's later keyframes are
		 * CRA pictures, whose POC goes on. */
		CHECK(raw ? !reset || key : reset == key);
		keys += key;
		if (reset) {
			CHECK_EQ(poc, 0);
			base = pts_frames;
		}
		if (key && !raw) /* the keyframe waits reorder frames: its PTS - DTS */
			CHECK_EQ(av_rescale_q(pkt->pts - pkt->dts, tb, (AVRational){1, 25}), (int64_t)reorder);
		CHECK_EQ(poc % (int32_t)h26x_poc_step(&p), 0);
		CHECK_EQ(pts_frames - base, (int64_t)(poc / (int32_t)h26x_poc_step(&p)));
		n++;
		av_packet_unref(pkt);
	}
	CHECK_EQ(h26x_poc_reorder(&p), reorder);
	fprintf(stderr, "  %s: %u access units, %u keyframes, reorder %u\n", name, n, keys, h26x_poc_reorder(&p));
	CHECK(n >= 100 && keys >= 4);
	av_packet_free(&pkt);
	avformat_close_input(&ic);
}

static void test_fixtures(void)
{
	check_fixture("bframes.h264.ts", KP_CODEC_H264, 2);
	check_fixture("bframes.h265.ts", KP_CODEC_H265, 2);
	check_fixture("main.h264", KP_CODEC_H264, 0);
	check_fixture("main.h265", KP_CODEC_H265, 0);
}

static void test_malformed(void)
{
	struct h26x_poc p;
	h26x_poc_init(&p, KP_CODEC_H264);
	int32_t poc;
	bool reset;
	/* A slice before any SPS/PPS, an access unit without a slice. */
	const uint8_t idr[] = {0, 0, 0, 1, 0x65, 0x88, 0x84};
	CHECK_EQ(h26x_poc_au(&p, idr, sizeof idr, &poc, &reset), -ENOENT);
	const uint8_t sei[] = {0, 0, 0, 1, 0x06, 0x05};
	CHECK_EQ(h26x_poc_au(&p, sei, sizeof sei, &poc, &reset), -ENOENT);
	/* An SPS cut short, an SPS with POC type 3. */
	const uint8_t short_sps[] = {0, 0, 0, 1, 0x67, 0x64};
	CHECK_EQ(h26x_poc_au(&p, short_sps, sizeof short_sps, &poc, &reset), -EBADMSG);
	/* baseline, level 31, sps 0 (1), log2_max_frame_num-4 0 (1), poc type 3 (00100). */
	const uint8_t bad_type[] = {0, 0, 0, 1, 0x67, 0x42, 0, 31, 0xc8, 0xff, 0xff, 0xff};
	CHECK_EQ(h26x_poc_au(&p, bad_type, sizeof bad_type, &poc, &reset), -EBADMSG);
	/* H.265: a slice that is not the first segment of its picture has no POC here. */
	h26x_poc_init(&p, KP_CODEC_H265);
	p.have_sps = p.have_pps = true;
	p.log2_max_poc_lsb = 8;
	const uint8_t second[] = {0, 0, 0, 1, 0x02, 0x01, 0x40};
	CHECK_EQ(h26x_poc_au(&p, second, sizeof second, &poc, &reset), -ENOENT);
	/* A TRAIL_R slice whose header ends before the POC lsb. */
	const uint8_t cut[] = {0, 0, 0, 1, 0x02, 0x01, 0x80};
	CHECK_EQ(h26x_poc_au(&p, cut, sizeof cut, &poc, &reset), -EBADMSG);
}

int main(void)
{
	RUN(test_fixtures);
	RUN(test_malformed);
	return TEST_EXIT();
}
