/* Unit tests for ingestd/rtsp/rtsp_au.c: parameter sets from Annex-B, avcC and hvcC
 * extradata, packets to Annex-B access units with parameter sets on keyframes, and each
 * malformed input's specific rejection. */
#include <errno.h>

#include "rtsp_au.h"
#include "test.h"

static const uint8_t sps[] = {0x67, 0x42, 0xc0, 0x1f}, pps[] = {0x68, 0xce, 0x3c};
static const uint8_t idr[] = {0x65, 0x88, 0x84}, slice[] = {0x41, 0x9a, 0x02};

static const uint8_t annexb_params[] = {0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1f, 0, 0, 0, 1, 0x68, 0xce, 0x3c};

static void test_extradata(void)
{
	uint8_t out[256];
	size_t n;
	unsigned lsz;
	const char *why = "";
	/* Annex-B (what libavformat's RTSP demuxer makes of sprop-parameter-sets), 3-byte codes. */
	const uint8_t ab[] = {0, 0, 1, 0x67, 0x42, 0xc0, 0x1f, 0, 0, 1, 0x68, 0xce, 0x3c, 0, 0, 1, 0x06, 5};
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, ab, sizeof ab, out, sizeof out, &n, &lsz, &why), 0);
	CHECK_EQ(lsz, 0);
	CHECK(n == sizeof annexb_params && !memcmp(out, annexb_params, n)); /* SEI left out */
	/* avcC with 4-byte lengths. */
	const uint8_t avcc[] = {1,    0x42, 0xc0, 0x1f, 0xff, 0xe1, 0,    4,    0x67,
				0x42, 0xc0, 0x1f, 1,    0,    3,    0x68, 0xce, 0x3c};
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, avcc, sizeof avcc, out, sizeof out, &n, &lsz, &why), 0);
	CHECK_EQ(lsz, 4);
	CHECK(n == sizeof annexb_params && !memcmp(out, annexb_params, n));
	/* hvcC: 23-byte header, then arrays of (type, count, (length, NAL)...). */
	uint8_t hvcc[23 + 3 * 8] = {1};
	hvcc[21] = 0x03;
	hvcc[22] = 3;
	size_t o = 23;
	const uint8_t types[3] = {32, 33, 34};
	for (int i = 0; i < 3; i++) {
		hvcc[o++] = types[i];
		hvcc[o++] = 0;
		hvcc[o++] = 1;
		hvcc[o++] = 0;
		hvcc[o++] = 3;
		hvcc[o++] = (uint8_t)(types[i] << 1);
		hvcc[o++] = 1;
		hvcc[o++] = 0xaa;
	}
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H265, hvcc, o, out, sizeof out, &n, &lsz, &why), 0);
	CHECK_EQ(lsz, 4);
	CHECK_EQ(n, 3 * 7);
	CHECK_EQ(out[4], 0x40);
	CHECK_EQ(out[18], 0x44);
	/* Empty extradata: no parameter sets, Annex-B packets. */
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H265, NULL, 0, out, sizeof out, &n, &lsz, &why), 0);
	CHECK_EQ(n, 0);

	/* Malformed. */
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_NONE, ab, sizeof ab, out, sizeof out, &n, &lsz, &why), -EINVAL);
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, avcc, 6, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "avcC extradata too short");
	uint8_t bad[sizeof avcc];
	memcpy(bad, avcc, sizeof avcc);
	bad[0] = 2;
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, bad, sizeof bad, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "not version 1");
	memcpy(bad, avcc, sizeof avcc);
	bad[7] = 40;
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, bad, sizeof bad, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "overruns");
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, avcc, 12, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "lacks its PPS count");
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, avcc, 14, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "length truncated");
	memcpy(bad, avcc, sizeof avcc);
	bad[4] = 0xfe;
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, bad, sizeof bad, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "length size 3");
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H264, avcc, sizeof avcc, out, 10, &n, &lsz, &why), -ENOBUFS);
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H265, hvcc, 22, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "hvcC extradata too short");
	CHECK_EQ(ing_rtsp_extradata_params(KP_CODEC_H265, hvcc, 25, out, sizeof out, &n, &lsz, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "hvcC array header truncated");
}

/* Builds "start code + NAL" sequences. */
static size_t annexb(uint8_t *out, const uint8_t *const *nals, const size_t *lens, int count)
{
	size_t n = 0;
	for (int i = 0; i < count; i++) {
		memcpy(out + n, "\0\0\0\1", 4);
		memcpy(out + n + 4, nals[i], lens[i]);
		n += 4 + lens[i];
	}
	return n;
}

static void test_build(void)
{
	uint8_t *buf = NULL;
	size_t cap = 0, n;
	const char *why = "";
	uint8_t want[128];
	/* A keyframe without parameter sets gets both, a 3-byte start code becomes 4 bytes. */
	const uint8_t pkt[] = {0, 0, 1, 0x65, 0x88, 0x84};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, pkt, sizeof pkt, 0, true, annexb_params, sizeof annexb_params, &buf,
				   &cap, &n, &why),
		 0);
	const uint8_t *w1[] = {sps, pps, idr};
	const size_t l1[] = {sizeof sps, sizeof pps, sizeof idr};
	size_t wn = annexb(want, w1, l1, 3);
	CHECK(n == wn && !memcmp(buf, want, n));
	/* Not a keyframe: nothing added. */
	const uint8_t p2[] = {0, 0, 0, 1, 0x41, 0x9a, 0x02};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, p2, sizeof p2, 0, false, annexb_params, sizeof annexb_params, &buf,
				   &cap, &n, &why),
		 0);
	CHECK(n == sizeof p2 && !memcmp(buf, p2, n));
	/* A keyframe with its SPS but not its PPS: only the PPS is added. */
	const uint8_t *w3[] = {sps, idr};
	const size_t l3[] = {sizeof sps, sizeof idr};
	uint8_t p3[64];
	size_t p3n = annexb(p3, w3, l3, 2);
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, p3, p3n, 0, true, annexb_params, sizeof annexb_params, &buf, &cap, &n,
				   &why),
		 0);
	const uint8_t *w3b[] = {pps, sps, idr};
	const size_t l3b[] = {sizeof pps, sizeof sps, sizeof idr};
	wn = annexb(want, w3b, l3b, 3);
	CHECK(n == wn && !memcmp(buf, want, n));
	/* Length-prefixed (2-byte) packets become Annex-B. */
	const uint8_t p4[] = {0, 3, 0x65, 0x88, 0x84, 0, 3, 0x41, 0x9a, 0x02};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, p4, sizeof p4, 2, false, NULL, 0, &buf, &cap, &n, &why), 0);
	const uint8_t *w4[] = {idr, slice};
	const size_t l4[] = {sizeof idr, sizeof slice};
	wn = annexb(want, w4, l4, 2);
	CHECK(n == wn && !memcmp(buf, want, n));

	/* Malformed. */
	const uint8_t raw[] = {0x65, 0x88};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, raw, sizeof raw, 0, false, NULL, 0, &buf, &cap, &n, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "neither Annex-B nor length-prefixed");
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, p4, 1, 2, false, NULL, 0, &buf, &cap, &n, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "prefix truncated");
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, p4, 4, 2, false, NULL, 0, &buf, &cap, &n, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "overruns");
	const uint8_t zero[] = {0, 0, 0, 3, 0x65, 0x88, 0x84};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, zero, sizeof zero, 2, false, NULL, 0, &buf, &cap, &n, &why),
		 -EBADMSG);
	CHECK_STR_CONTAINS(why, "zero-length");
	const uint8_t empty[] = {0, 0, 0, 1, 0, 0};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, empty, sizeof empty, 0, false, NULL, 0, &buf, &cap, &n, &why),
		 -ENODATA);
	const uint8_t short265[] = {0, 0, 1, 0x26};
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H265, short265, sizeof short265, 0, false, NULL, 0, &buf, &cap, &n, &why),
		 -EBADMSG);
	CHECK_STR_CONTAINS(why, "shorter than its header");
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_H264, p4, sizeof p4, 3, false, NULL, 0, &buf, &cap, &n, &why), -EINVAL);
	CHECK_EQ(ing_rtsp_au_build(KP_CODEC_NONE, p4, sizeof p4, 2, false, NULL, 0, &buf, &cap, &n, &why), -EINVAL);
	free(buf);
}

int main(void)
{
	RUN(test_extradata);
	RUN(test_build);
	return TEST_EXIT();
}
