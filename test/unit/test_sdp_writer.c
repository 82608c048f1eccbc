/* Unit tests for the test camera's SDP writer and base64. */
#include <errno.h>

#include "rtsp_sdp.h"
#include "test.h"

static void test_base64(void)
{
	char out[16];
	const struct {
		const char *in, *want;
	} v[] = {{"", ""},
		 {"f", "Zg=="},
		 {"fo", "Zm8="},
		 {"foo", "Zm9v"},
		 {"foob", "Zm9vYg=="},
		 {"fooba", "Zm9vYmE="},
		 {"foobar", "Zm9vYmFy"}};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		CHECK_EQ(cam_base64((const uint8_t *)v[i].in, strlen(v[i].in), out, sizeof out), 0);
		CHECK(strcmp(out, v[i].want) == 0);
	}
	CHECK_EQ(cam_base64((const uint8_t *)"foo", 3, out, 4), -ENOBUFS);
	CHECK_EQ(cam_base64((const uint8_t *)"foo", 3, out, 5), 0);
	const uint8_t bin[] = {0xfb, 0xff};
	CHECK_EQ(cam_base64(bin, 2, out, sizeof out), 0);
	CHECK(strcmp(out, "+/8=") == 0);
}

static const uint8_t sps264[] = {0x67, 0x42, 0xc0, 0x1f, 0xda, 0x01};
static const uint8_t pps264[] = {0x68, 0xce, 0x3c, 0x80};
static const uint8_t vps265[] = {0x40, 0x01, 0x0c};
static const uint8_t sps265[] = {0x42, 0x01, 0x01};
static const uint8_t pps265[] = {0x44, 0x01, 0xc1};

static void test_h264(void)
{
	struct cam_sdp_track t = {.codec = KP_CODEC_H264,
				  .payload_type = 96,
				  .param = {NULL, sps264, pps264},
				  .param_len = {0, sizeof sps264, sizeof pps264},
				  .width = 640,
				  .height = 360,
				  .fps = 25,
				  .control = "trackID=0"};
	char out[CAM_SDP_MAX];
	size_t n;
	CHECK_EQ(cam_sdp_write(&t, 42, "127.0.0.1", out, sizeof out, &n), 0);
	CHECK_EQ(n, strlen(out));
	CHECK(strncmp(out, "v=0\r\no=- 42 1 IN IP4 127.0.0.1\r\n", 31) == 0);
	CHECK_STR_CONTAINS(out, "m=video 0 RTP/AVP 96\r\n");
	CHECK_STR_CONTAINS(out, "a=rtpmap:96 H264/90000\r\n");
	CHECK_STR_CONTAINS(out, "a=fmtp:96 packetization-mode=1;profile-level-id=42C01F;"
				"sprop-parameter-sets=Z0LAH9oB,aM48gA==\r\n");
	CHECK_STR_CONTAINS(out, "a=control:trackID=0\r\n");
	CHECK_STR_CONTAINS(out, "a=control:*\r\n");
	CHECK_STR_CONTAINS(out, "a=framerate:25\r\n");
	CHECK(out[n - 1] == '\n' && out[n - 2] == '\r');
	/* Too small a buffer, missing or short parameter sets, a static payload type. */
	CHECK_EQ(cam_sdp_write(&t, 42, "127.0.0.1", out, 100, &n), -ENOBUFS);
	CHECK_EQ(cam_sdp_write(&t, 42, "127.0.0.1", out, 0, &n), -ENOBUFS);
	t.param_len[1] = 3;
	CHECK_EQ(cam_sdp_write(&t, 42, "127.0.0.1", out, sizeof out, &n), -EINVAL);
	t.param_len[1] = sizeof sps264;
	t.param[2] = NULL;
	CHECK_EQ(cam_sdp_write(&t, 42, "127.0.0.1", out, sizeof out, &n), -EINVAL);
	t.param[2] = pps264;
	t.payload_type = 33;
	CHECK_EQ(cam_sdp_write(&t, 42, "127.0.0.1", out, sizeof out, &n), -EINVAL);
}

static void test_h265(void)
{
	struct cam_sdp_track t = {.codec = KP_CODEC_H265,
				  .payload_type = 97,
				  .param = {vps265, sps265, pps265},
				  .param_len = {3, 3, 3},
				  .control = "trackID=0"};
	char out[CAM_SDP_MAX];
	size_t n;
	CHECK_EQ(cam_sdp_write(&t, 1, "::1", out, sizeof out, &n), 0);
	CHECK_STR_CONTAINS(out, "a=rtpmap:97 H265/90000\r\n");
	CHECK_STR_CONTAINS(out, "a=fmtp:97 sprop-vps=QAEM;sprop-sps=QgEB;sprop-pps=RAHB\r\n");
	CHECK(!strstr(out, "framerate"));
	t.param[0] = NULL;
	CHECK_EQ(cam_sdp_write(&t, 1, "::1", out, sizeof out, &n), -EINVAL);
}

int main(void)
{
	RUN(test_base64);
	RUN(test_h264);
	RUN(test_h265);
	return TEST_EXIT();
}
