/* Unit tests for common/h26x.c and common/h26x_config.c: lenient and strict Annex-B
 * scanning, NAL unit types, parameter sets, length-prefixed samples both ways, and
 * avcC/hvcC records written from parameter sets and read back. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "h26x.h"
#include "h26x_config.h"
#include "test.h"

static void test_annexb_scan(void)
{
	const uint8_t b[] = {0xff, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3, 0, 0, 1, 0, 0, 1, 0x65, 4, 0, 0};
	size_t off = 0, n;
	const uint8_t *nal;
	CHECK(h26x_annexb_next(b, sizeof b, &off, &nal, &n));
	CHECK_EQ(n, 3);
	CHECK_EQ(nal[0], 0x67);
	CHECK(h26x_annexb_next(b, sizeof b, &off, &nal, &n));
	CHECK_EQ(n, 2);
	CHECK_EQ(nal[0], 0x68);
	CHECK(h26x_annexb_next(b, sizeof b, &off, &nal, &n)); /* the empty NAL between is skipped */
	CHECK_EQ(n, 2);
	CHECK_EQ(nal[0], 0x65);
	CHECK(!h26x_annexb_next(b, sizeof b, &off, &nal, &n));
	off = 0;
	CHECK(!h26x_annexb_next(b, 3, &off, &nal, &n));
	const uint8_t none[] = {1, 2, 3, 4, 5};
	off = 0;
	CHECK(!h26x_annexb_next(none, sizeof none, &off, &nal, &n));
	CHECK_EQ(h26x_start_code(b, sizeof b, 0), 1);
	CHECK_EQ(h26x_start_code(b, sizeof b, 2), 8);
	CHECK_EQ(h26x_start_code(none, sizeof none, 0), sizeof none);
	CHECK(h26x_is_annexb(b + 1, sizeof b - 1));
	CHECK(h26x_is_annexb(b + 7, sizeof b - 7));
	CHECK(!h26x_is_annexb(b, sizeof b));
}

static void test_split(void)
{
	struct h26x_nal nals[4];
	const uint8_t ok[] = {0, 0, 0, 1, 0x67, 1, 0, 0, 1, 0x68, 2, 0, 0};
	CHECK_EQ(h26x_split(ok, sizeof ok, nals, 4), 2);
	CHECK_EQ(nals[0].len, 2);
	CHECK_EQ(nals[1].len, 2); /* trailing zero bytes belong to no unit */
	CHECK_EQ(h26x_split(ok, sizeof ok, nals, 1), -E2BIG);
	const uint8_t junk[] = {7, 0, 0, 1, 0x67};
	CHECK_EQ(h26x_split(junk, sizeof junk, nals, 4), -EBADMSG);
	const uint8_t empty[] = {0, 0, 1, 0, 0, 1, 0x65};
	CHECK_EQ(h26x_split(empty, sizeof empty, nals, 4), -EBADMSG);
	CHECK_EQ(h26x_split(ok, 3, nals, 4), -EBADMSG);
}

static void test_types(void)
{
	const uint8_t h265_idr[] = {19 << 1, 1}, h264_sps[] = {0x67};
	CHECK_EQ(h26x_nal_type(KP_CODEC_H265, h265_idr), 19);
	CHECK_EQ(h26x_nal_type(KP_CODEC_H264, h264_sps), 7);
	CHECK_EQ(h26x_nal_header_size(KP_CODEC_H264), 1);
	CHECK_EQ(h26x_nal_header_size(KP_CODEC_H265), 2);
	CHECK(h26x_is_keyframe(KP_CODEC_H264, 5));
	CHECK(!h26x_is_keyframe(KP_CODEC_H264, 1));
	CHECK(h26x_is_keyframe(KP_CODEC_H265, 19));
	CHECK(h26x_is_keyframe(KP_CODEC_H265, 21));
	CHECK(!h26x_is_keyframe(KP_CODEC_H265, 1));
	CHECK(h26x_is_param_set(KP_CODEC_H265, 32));
	CHECK(!h26x_is_param_set(KP_CODEC_H265, 35));
	CHECK(h26x_is_param_set(KP_CODEC_H264, 8));
	CHECK(h26x_is_vcl(KP_CODEC_H264, 1));
	CHECK(!h26x_is_vcl(KP_CODEC_H264, 6));
	CHECK(h26x_is_vcl(KP_CODEC_H265, 0));
	CHECK(!h26x_is_vcl(KP_CODEC_H265, 32));
}

static void test_samples(void)
{
	const uint8_t au[] = {0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 1, 0x65, 4, 5, 6};
	struct h26x_nal nals[4];
	CHECK_EQ(h26x_split(au, sizeof au, nals, 4), 3);
	struct h26x_param_sets ps = {0};
	CHECK_EQ(h26x_param_sets(KP_CODEC_H264, nals, 3, &ps), 2);
	CHECK_EQ(ps.sps.len, 3);
	CHECK_EQ(ps.pps.len, 2);
	uint8_t sample[64];
	size_t n = h26x_sample_size(nals, 3);
	CHECK_EQ(n, 3 * 4 + 3 + 2 + 4);
	h26x_to_sample(nals, 3, sample);
	CHECK_EQ(sample[3], 3);
	size_t off = 0;
	struct h26x_nal nal;
	CHECK_EQ(h26x_prefixed_next(sample, n, 4, &off, &nal), 1);
	CHECK_EQ(nal.len, 3);
	CHECK_EQ(nal.data[0], 0x67);
	CHECK_EQ(h26x_prefixed_next(sample, n - 1, 4, &off, &nal), 1);
	CHECK_EQ(h26x_prefixed_next(sample, n - 1, 4, &off, &nal), -EBADMSG);
	CHECK_EQ(h26x_sample_to_annexb(sample, n - 1), -EBADMSG);
	CHECK_EQ(sample[3], 3); /* left as it was */
	CHECK_EQ(h26x_sample_to_annexb(sample, n), 0);
	const uint8_t expect[] = {0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5, 6};
	CHECK(n == sizeof expect && !memcmp(sample, expect, n));
}

/* An SPS of the fixture camera (H.264 Baseline, 640x480) and a PPS. */
static const uint8_t sps264[] = {0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xf6, 0x84, 0x00};
static const uint8_t pps264[] = {0x68, 0xce, 0x3c, 0x80};

static void test_config_roundtrip(void)
{
	struct h26x_param_sets ps = {0};
	memcpy(ps.sps.data, sps264, sizeof sps264);
	ps.sps.len = sizeof sps264;
	uint8_t cfg[H26X_CONFIG_MAX];
	size_t cfg_len, len;
	CHECK_EQ(h26x_config_write(KP_CODEC_H264, &ps, cfg, sizeof cfg, &cfg_len), -EINVAL);
	memcpy(ps.pps.data, pps264, sizeof pps264);
	ps.pps.len = sizeof pps264;
	CHECK_EQ(h26x_config_write(KP_CODEC_H264, &ps, cfg, sizeof cfg, &cfg_len), 0);
	CHECK_EQ(h26x_config_write(KP_CODEC_H264, &ps, cfg, 8, &len), -ENOSPC);
	uint8_t params[64];
	unsigned lsz;
	const char *why = NULL;
	CHECK_EQ(h26x_config_read(KP_CODEC_H264, cfg, cfg_len, params, sizeof params, &len, &lsz, &why), 0);
	CHECK_EQ(lsz, 4);
	CHECK_EQ(len, 4 + sizeof sps264 + 4 + sizeof pps264);
	CHECK(!memcmp(params + 4, sps264, sizeof sps264));
	CHECK(!memcmp(params + 8 + sizeof sps264, pps264, sizeof pps264));
	CHECK_EQ(h26x_config_read(KP_CODEC_H264, cfg, cfg_len, params, 8, &len, &lsz, &why), -ENOBUFS);
	CHECK_EQ(h26x_config_read(KP_CODEC_H264, cfg, cfg_len - 1, params, sizeof params, &len, &lsz, &why), -EBADMSG);
	CHECK_EQ(h26x_config_read(KP_CODEC_H265, cfg, cfg_len, params, sizeof params, &len, &lsz, &why), -EBADMSG);
	cfg[4] = 0xfe; /* NAL length size 3 */
	CHECK_EQ(h26x_config_read(KP_CODEC_H264, cfg, cfg_len, params, sizeof params, &len, &lsz, &why), -EBADMSG);
}

int main(void)
{
	RUN(test_annexb_scan);
	RUN(test_split);
	RUN(test_types);
	RUN(test_samples);
	RUN(test_config_roundtrip);
	return TEST_EXIT();
}
