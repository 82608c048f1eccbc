/* common/fmp4_live.c: a keyframe's parameter sets make an init segment the one fMP4
 * reader accepts, and each access unit one fragment of one sample whose bytes are the
 * access unit's slices, length-prefixed, its parameter sets left out, on a decode
 * timeline that starts at 0 and advances by each sample's duration, with its
 * composition offset. The codecs string is the record's (RFC 6381, ISO/IEC 14496-15
 * annex E). The B-frame fixtures (bframes.h264.ts: x264, 2 B-frames; bframes.h265.ts:
 * x265, 3), fed in decode order as rtcd gets them, make a file (init + fragments) in
 * which ffprobe finds every packet with a strictly increasing, non-negative DTS and
 * the source's PTS - DTS, and whose frames ffmpeg shows in strictly increasing PTS
 * without a message. */
#include <errno.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fmp4_live.h"
#include "kp_build_config.h"
#include "test.h"

/* The fixture camera's SPS (H.264 Baseline, 640x480) and PPS, then an IDR slice. */
static const uint8_t idr_au[] = {0, 0, 0, 1,    0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xf6, 0x84, 0x00, 0,
				 0, 0, 1, 0x68, 0xce, 0x3c, 0x80, 0,    0,    1,    0x65, 0x88, 0x84, 0x21};
static const uint8_t p_au[] = {0, 0, 0, 1, 0x41, 0x9a, 0x02, 0x03};

static void test_init_and_fragments(void)
{
	static uint8_t init[FMP4_INIT_MAX], frag[32768];
	size_t len;
	struct fmp4_live l = {0};
	CHECK_EQ(fmp4_live_init(&l, KP_CODEC_H264, p_au, sizeof p_au, 640, 480, init, sizeof init, &len), -EINVAL);
	CHECK_EQ(fmp4_live_init(&l, KP_CODEC_H264, idr_au, sizeof idr_au, 640, 480, init, sizeof init, &len), 0);
	CHECK_STR_EQ(l.codecs, "avc1.42c01e");
	static struct fmp4_init in;
	CHECK_EQ(fmp4_read_init(init, len, &in), 0);
	CHECK_EQ(in.len, len);
	CHECK_EQ(in.track.codec, KP_CODEC_H264);
	CHECK_EQ(in.track.width, 640);
	CHECK_EQ(in.nal_len_size, 4);

	static struct fmp4_frag f;
	CHECK(fmp4_live_frag_cap(sizeof idr_au) <= sizeof frag);
	CHECK_EQ(fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 0, 0, 0, frag, sizeof frag, &len), -ERANGE);
	CHECK_EQ(fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 3000, -1, 0, frag, sizeof frag, &len), -ERANGE);
	CHECK_EQ(
	    fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 3000, FMP4_LIVE_CTO_MAX + 1, 0, frag, sizeof frag, &len),
	    -ERANGE);
	CHECK_EQ(fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 3000, 0, 5000, frag, sizeof frag, &len), 0);
	CHECK_EQ(fmp4_read_frag(&in, frag, len, &f), 0);
	CHECK_EQ(f.total_len, len);
	CHECK_EQ(f.seq, 1);
	CHECK_EQ(f.base_time, 0);
	CHECK_EQ(f.nsamples, 1);
	CHECK(f.samples[0].keyframe);
	CHECK_EQ(f.samples[0].size, 4 + 4);
	CHECK_EQ(f.samples[0].cts, 0);
	const uint8_t idr_sample[] = {0, 0, 0, 4, 0x65, 0x88, 0x84, 0x21};
	CHECK(!memcmp(frag + f.samples[0].offset, idr_sample, sizeof idr_sample));

	CHECK_EQ(fmp4_live_frag(&l, p_au, sizeof p_au, false, 3600, 7200, 5040, frag, sizeof frag, &len), 0);
	CHECK_EQ(fmp4_read_frag(&in, frag, len, &f), 0);
	CHECK_EQ(f.seq, 2);
	CHECK_EQ(f.base_time, 3000);
	CHECK_EQ(f.samples[0].duration, 3600);
	CHECK_EQ(f.samples[0].cts, 7200);
	CHECK(!f.samples[0].keyframe);
	CHECK_EQ(fmp4_live_frag(&l, p_au, sizeof p_au, false, 3600, 0, 0, frag, 40, &len), -ENOSPC);
	/* A new init segment (a piece was dropped) keeps the viewer's timeline. */
	CHECK_EQ(fmp4_live_init(&l, KP_CODEC_H264, idr_au, sizeof idr_au, 640, 480, init, sizeof init, &len), 0);
	CHECK_EQ(fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 3600, 0, 0, frag, sizeof frag, &len), 0);
	CHECK_EQ(fmp4_read_frag(&in, frag, len, &f), 0);
	CHECK_EQ(f.seq, 3);
	CHECK_EQ(f.base_time, 3000 + 3600);
	const uint8_t junk[] = {1, 2, 3};
	CHECK_EQ(fmp4_live_frag(&l, junk, sizeof junk, false, 3600, 0, 0, frag, sizeof frag, &len), -EBADMSG);
}

/* hvcC records by hand: byte 1 profile space, tier, profile; 2-5 compatibility flags;
 * 6-11 constraint flags; 12 level. */
static void test_codecs(void)
{
	char s[FMP4_LIVE_CODECS_MAX];
	const uint8_t avcc[] = {1, 0x64, 0x00, 0x28};
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H264, avcc, sizeof avcc, s, sizeof s), 0);
	CHECK_STR_EQ(s, "avc1.640028");
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H264, avcc, 3, s, sizeof s), -EBADMSG);
	/* Main, flags 1 and 2, progressive + frame-only constraints, level 3.1. */
	const uint8_t main31[13] = {1, 0x01, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 93};
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H265, main31, sizeof main31, s, sizeof s), 0);
	CHECK_STR_EQ(s, "hev1.1.6.L93.90");
	/* The examples of ISO/IEC 14496-15 E.3: Main 10, high tier level 4 (space 0), and a
	 * space-1 profile 4 with flags 0 and 6 and two constraint bytes. */
	const uint8_t main10[13] = {1, 0x22, 0x20, 0, 0, 0, 0xb0, 0, 0, 0, 0, 0, 120};
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H265, main10, sizeof main10, s, sizeof s), 0);
	CHECK_STR_EQ(s, "hev1.2.4.H120.B0");
	const uint8_t a4[13] = {1, 0x44, 0x82, 0, 0, 0, 0xb0, 0x23, 0, 0, 0, 0, 120};
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H265, a4, sizeof a4, s, sizeof s), 0);
	CHECK_STR_EQ(s, "hev1.A4.41.L120.B0.23");
	const uint8_t none[13] = {1, 0x01, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60};
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H265, none, sizeof none, s, sizeof s), 0);
	CHECK_STR_EQ(s, "hev1.1.2.L60");
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H265, a4, sizeof a4, s, 12), -ENOSPC);
	CHECK_EQ(fmp4_live_codecs(KP_CODEC_H265, a4, 12, s, sizeof s), -EBADMSG);
}

struct au {
	uint8_t *data;
	size_t len;
	bool key;
	int64_t pts, dts; /* 90 kHz */
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
	AVRational tb = ic->streams[0]->time_base, k90 = {1, 90000};
	AVPacket *pkt = av_packet_alloc();
	unsigned n = 0;
	while (n < max && av_read_frame(ic, pkt) >= 0) {
		out[n].data = malloc((size_t)pkt->size);
		memcpy(out[n].data, pkt->data, (size_t)pkt->size);
		out[n].len = (size_t)pkt->size;
		out[n].key = pkt->flags & AV_PKT_FLAG_KEY;
		out[n].pts = av_rescale_q(pkt->pts, tb, k90);
		out[n].dts = av_rescale_q(pkt->dts, tb, k90);
		n++;
		av_packet_unref(pkt);
	}
	av_packet_free(&pkt);
	avformat_close_input(&ic);
	return n;
}

static int run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	return pclose(p);
}

/* The live fragments of a fixture, as rtcd makes them, through ffprobe and ffmpeg. */
static void check_bframes(const char *name, enum kp_codec codec, const char *want_codecs)
{
	static struct au aus[512];
	unsigned n = load(name, aus, 512);
	CHECK(n >= 100);
	if (n < 100)
		return;
	char path[] = "/tmp/kp-fmp4-live-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	static uint8_t buf[4 * 1024 * 1024];
	size_t len;
	struct fmp4_live l = {0};
	CHECK(aus[0].key);
	CHECK_EQ(fmp4_live_init(&l, codec, aus[0].data, aus[0].len, 640, 360, buf, sizeof buf, &len), 0);
	CHECK_STR_EQ(l.codecs, want_codecs);
	CHECK_EQ(fwrite(buf, 1, len, f), len);
	unsigned reordered = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t dur = i + 1 < n ? (uint32_t)(aus[i + 1].dts - aus[i].dts) : 3600;
		int32_t cto = (int32_t)(aus[i].pts - aus[i].dts);
		reordered += cto != 0;
		CHECK(fmp4_live_frag_cap(aus[i].len) <= sizeof buf);
		CHECK_EQ(fmp4_live_frag(&l, aus[i].data, aus[i].len, aus[i].key, dur, cto, 0, buf, sizeof buf, &len),
			 0);
		CHECK_EQ(fwrite(buf, 1, len, f), len);
	}
	CHECK(reordered > n / 2); /* the fixture has B-frames */
	CHECK_EQ(fclose(f), 0);

	static char out[65536];
	char cmd[1200];
	snprintf(cmd, sizeof cmd,
		 "ffprobe -v error -select_streams v -show_entries packet=pts,dts -of csv=p=0 '%s' 2>&1", path);
	CHECK_EQ(run(cmd, out, sizeof out), 0);
	unsigned np = 0, dup_or_back = 0, negative = 0, wrong_cto = 0;
	long long prev = -1;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), np++) {
		long long pts, dts;
		if (sscanf(line, "%lld,%lld", &pts, &dts) != 2) {
			fprintf(stderr, "%s: ffprobe said: %s\n", name, line);
			CHECK(0);
			break;
		}
		negative += dts < 0;
		dup_or_back += np && dts <= prev;
		prev = dts;
		wrong_cto += np < n && pts - dts != aus[np].pts - aus[np].dts;
	}
	CHECK_EQ(np, n);
	CHECK_EQ(negative, 0);
	CHECK_EQ(dup_or_back, 0);
	CHECK_EQ(wrong_cto, 0);

	snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v -show_entries frame=pts -of csv=p=0 '%s' 2>&1",
		 path);
	CHECK_EQ(run(cmd, out, sizeof out), 0);
	unsigned nf = 0, out_of_order = 0;
	prev = -1;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), nf++) {
		long long pts = atoll(line);
		out_of_order += nf && pts <= prev;
		prev = pts;
	}
	CHECK_EQ(nf, n);
	CHECK_EQ(out_of_order, 0);

	snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v warning -i '%s' -f null - 2>&1", path);
	CHECK_EQ(run(cmd, out, sizeof out), 0);
	CHECK_EQ(strlen(out), 0);
	if (out[0])
		fprintf(stderr, "%s: ffmpeg said: %s\n", name, out);
	unlink(path);
	for (unsigned i = 0; i < n; i++)
		free(aus[i].data);
}

/* The codecs strings: the profile and level ffprobe reports for the fixtures (High 3.0;
 * Main 2.1, progressive and frame-only). */
static void test_bframes(void)
{
	check_bframes("bframes.h264.ts", KP_CODEC_H264, "avc1.64001e");
	check_bframes("bframes.h265.ts", KP_CODEC_H265, "hev1.1.6.L63.90");
}

int main(void)
{
	RUN(test_init_and_fragments);
	RUN(test_codecs);
	RUN(test_bframes);
	return TEST_EXIT();
}
