/* The test camera's RTSP server on loopback, read by libavformat's RTSP client (the one
 * ingestd's driver uses) for H.264 and H.265 with digest authentication, plus raw-socket
 * checks of its protocol answers: 401, UDP (RFC 2326 12.39) and 461 for UDP from a
 * camera with the udp-461 fault, 404, 455, 400 and 505. Needs the
 * fixtures generated in the build directory (test/fixtures). */
#include <arpa/inet.h>
#include <errno.h>
#include <libavformat/avformat.h>
#include <libavutil/time.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "camera.h"
#include "kp_build_config.h"
#include "rtsp_au.h"
#include "test.h"

struct cam_stats cam_stats;

static uv_loop_t loop;
static uv_async_t stop_async;
static struct cam_config cfg_auth, cfg_wrong, cfg_open, cfg_tcp_only;
static uint16_t port_auth, port_wrong, port_open, port_tcp_only;

static void on_stop(uv_async_t *h)
{
	uv_stop(h->loop);
}

static void *loop_thread(void *arg)
{
	(void)arg;
	uv_run(&loop, UV_RUN_DEFAULT);
	return NULL;
}

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	bind(fd, (struct sockaddr *)&a, sizeof a);
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	return ntohs(a.sin_port);
}

static bool has_nal(enum kp_codec codec, const uint8_t *p, size_t n, unsigned type)
{
	for (size_t i = 0; i + 4 < n; i++)
		if (p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1) {
			unsigned t = codec == KP_CODEC_H264 ? (p[i + 3] & 0x1fu) : ((p[i + 3] >> 1) & 0x3fu);
			if (t == type)
				return true;
		}
	return false;
}

static int open_rtsp(const char *url, const char *transport, AVFormatContext **ret)
{
	AVDictionary *o = NULL;
	av_dict_set(&o, "rtsp_transport", transport, 0);
	av_dict_set(&o, "timeout", "5000000", 0);
	*ret = NULL;
	int r = avformat_open_input(ret, url, NULL, &o);
	av_dict_free(&o);
	return r;
}

/* Reads a stream for two seconds the way the driver does and checks what arrives. */
static void read_stream(const char *path, enum kp_codec codec, int stream)
{
	char url[256];
	snprintf(url, sizeof url, "rtsp://admin:secret@127.0.0.1:%u%s", port_auth, path);
	AVFormatContext *fmt;
	int r = open_rtsp(url, "tcp", &fmt);
	CHECK_EQ(r, 0);
	if (r < 0)
		return;
	CHECK(avformat_find_stream_info(fmt, NULL) >= 0);
	CHECK_EQ(fmt->nb_streams, 1);
	AVStream *st = fmt->streams[0];
	CHECK_EQ(st->codecpar->codec_id, codec == KP_CODEC_H264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC);
	CHECK_EQ(st->codecpar->width, 640);
	CHECK_EQ(st->codecpar->height, 360);
	uint8_t params[ING_RTSP_MAX_PARAMS];
	size_t params_len = 0;
	unsigned lsz = 9;
	const char *why = "";
	CHECK_EQ(ing_rtsp_extradata_params(codec, st->codecpar->extradata, (size_t)st->codecpar->extradata_size, params,
					   sizeof params, &params_len, &lsz, &why),
		 0);
	CHECK(params_len > 0);
	CHECK_EQ(lsz, 0);
	AVPacket *pkt = av_packet_alloc();
	uint8_t *buf = NULL;
	size_t cap = 0;
	int frames = 0, keyframes = 0;
	int64_t last_pts = INT64_MIN, start = av_gettime_relative();
	while (av_gettime_relative() - start < 2000000 && av_read_frame(fmt, pkt) >= 0) {
		bool key = pkt->flags & AV_PKT_FLAG_KEY;
		if (frames == 0)
			CHECK(key);
		size_t n;
		CHECK_EQ(ing_rtsp_au_build(codec, pkt->data, (size_t)pkt->size, lsz, key, params, params_len, &buf,
					   &cap, &n, &why),
			 0);
		if (key) {
			keyframes++;
			CHECK(has_nal(codec, buf, n, codec == KP_CODEC_H264 ? 7 : 33));
			CHECK(has_nal(codec, buf, n, codec == KP_CODEC_H264 ? 8 : 34));
			CHECK(has_nal(codec, buf, n, codec == KP_CODEC_H264 ? 5 : 19) ||
			      has_nal(codec, buf, n, codec == KP_CODEC_H264 ? 5 : 20) ||
			      has_nal(codec, buf, n, codec == KP_CODEC_H264 ? 5 : 21));
		}
		/* libavformat leaves the first packet without a timestamp (the driver numbers it). */
		if (pkt->pts == AV_NOPTS_VALUE) {
			CHECK_EQ(frames, 0);
		} else {
			int64_t pts = av_rescale_q(pkt->pts, st->time_base, (AVRational){1, 90000});
			if (last_pts != INT64_MIN)
				CHECK_EQ(pts - last_pts, 3600); /* 25 fps on the 90 kHz clock */
			last_pts = pts;
		}
		frames++;
		av_packet_unref(pkt);
	}
	fprintf(stderr, "  %s: %d frames, %d keyframes in 2 s\n", path, frames, keyframes);
	CHECK(frames >= 40);
	CHECK(keyframes >= 1);
	CHECK(cam_stats.rtsp[stream].sessions >= 1);
	CHECK(cam_stats.rtsp[stream].frames_sent >= 40);
	free(buf);
	av_packet_free(&pkt);
	avformat_close_input(&fmt);
}

static void test_h264_main(void)
{
	read_stream("/main", KP_CODEC_H264, 0);
}

static void test_h265_sub_alias(void)
{
	read_stream("/h264Preview_01_sub", KP_CODEC_H265, 1);
}

static void test_wrong_password(void)
{
	char url[256];
	AVFormatContext *fmt;
	uint64_t refused = cam_stats.logins_refused;
	snprintf(url, sizeof url, "rtsp://admin:secret@127.0.0.1:%u/main", port_wrong);
	int r = open_rtsp(url, "tcp", &fmt);
	char msg[AV_ERROR_MAX_STRING_SIZE];
	av_strerror(r, msg, sizeof msg);
	fprintf(stderr, "  wrong password: %d %s\n", r, msg);
	/* What the driver keys its auth-failed state on. */
	CHECK(r == AVERROR_HTTP_UNAUTHORIZED || strstr(msg, "401") || strstr(msg, "Unauthorized"));
	CHECK(cam_stats.logins_refused > refused);
	snprintf(url, sizeof url, "rtsp://admin:nope@127.0.0.1:%u/main", port_auth);
	r = open_rtsp(url, "tcp", &fmt);
	CHECK(r == AVERROR_HTTP_UNAUTHORIZED);
}

/* libavformat/rtsp.c turns a 461 with no other transport allowed into EPROTONOSUPPORT:
 * what the driver's auto mode falls back to TCP on. */
static void test_udp_refused(void)
{
	char url[256];
	AVFormatContext *fmt;
	snprintf(url, sizeof url, "rtsp://127.0.0.1:%u/main", port_tcp_only);
	CHECK_EQ(open_rtsp(url, "udp", &fmt), AVERROR(EPROTONOSUPPORT));
}

/* RTP over UDP: libavformat's client gets packets on its client_port pair. */
static void test_udp_stream(void)
{
	char url[256];
	AVFormatContext *fmt;
	snprintf(url, sizeof url, "rtsp://127.0.0.1:%u/main", port_open);
	int r = open_rtsp(url, "udp", &fmt);
	CHECK_EQ(r, 0);
	if (r < 0)
		return;
	AVPacket *pkt = av_packet_alloc();
	int got = 0;
	for (int i = 0; i < 30 && av_read_frame(fmt, pkt) >= 0; i++, got++)
		av_packet_unref(pkt);
	CHECK_EQ(got, 30);
	av_packet_free(&pkt);
	avformat_close_input(&fmt);
}

/* True when out holds a whole response, body included. */
static bool complete(const char *out)
{
	const char *end = strstr(out, "\r\n\r\n");
	if (!end)
		return false;
	const char *cl = strstr(out, "Content-Length: ");
	size_t body = cl && cl < end ? (size_t)atoi(cl + 16) : 0;
	return strlen(end + 4) >= body;
}

/* Sends text on a fresh connection and returns the first response (NUL-terminated). */
static size_t exchange(uint16_t port, const char *text, size_t text_len, char *out, size_t cap, bool *closed)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 3};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	size_t n = 0;
	out[0] = '\0';
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && send(fd, text, text_len, MSG_NOSIGNAL) >= 0) {
		while (n < cap - 1 && !complete(out)) {
			ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
			if (r <= 0)
				break;
			n += (size_t)r;
			out[n] = '\0';
		}
	}
	out[n] = '\0';
	if (closed) {
		char c;
		*closed = recv(fd, &c, 1, 0) == 0;
	}
	close(fd);
	return n;
}

static void expect_answer(uint16_t port, const char *req, const char *status, const char *also, bool want_close)
{
	static char resp[16384];
	bool closed = false;
	exchange(port, req, strlen(req), resp, sizeof resp, &closed);
	CHECK_STR_CONTAINS(resp, status);
	if (also)
		CHECK_STR_CONTAINS(resp, also);
	if (want_close)
		CHECK(closed);
}

static void test_raw_protocol(void)
{
	expect_answer(port_open, "OPTIONS * RTSP/1.0\r\nCSeq: 7\r\n\r\n", "RTSP/1.0 200 OK\r\n", "CSeq: 7\r\n", false);
	expect_answer(port_auth, "DESCRIBE rtsp://127.0.0.1/main RTSP/1.0\r\nCSeq: 2\r\n\r\n", "RTSP/1.0 401 ",
		      "WWW-Authenticate: Digest realm=\"KeepPeek\", nonce=\"", false);
	expect_answer(port_auth,
		      "DESCRIBE rtsp://127.0.0.1/main RTSP/1.0\r\nCSeq: 2\r\nAuthorization: Digest username=\"admin\", "
		      "realm=\"KeepPeek\", nonce=\"x\", uri=\"rtsp://127.0.0.1/main\", "
		      "response=\"00000000000000000000000000000000\"\r\n\r\n",
		      "RTSP/1.0 401 ", NULL, false);
	expect_answer(port_tcp_only,
		      "SETUP rtsp://127.0.0.1/main/trackID=0 RTSP/1.0\r\nCSeq: 3\r\n"
		      "Transport: RTP/AVP;unicast;client_port=5000-5001\r\n\r\n",
		      "RTSP/1.0 461 Unsupported Transport", "CSeq: 3", false);
	expect_answer(port_open,
		      "SETUP rtsp://127.0.0.1/main/trackID=0 RTSP/1.0\r\nCSeq: 3\r\n"
		      "Transport: RTP/AVP;unicast;client_port=5000-5001\r\n\r\n",
		      "RTSP/1.0 200 OK", "client_port=5000-5001;server_port=", false);
	expect_answer(port_open,
		      "SETUP rtsp://127.0.0.1/main/trackID=0 RTSP/1.0\r\nCSeq: 3\r\n"
		      "Transport: RTP/AVP;multicast\r\n\r\n",
		      "RTSP/1.0 461 Unsupported Transport", "CSeq: 3", false);
	expect_answer(port_open,
		      "SETUP rtsp://127.0.0.1/main/trackID=0 RTSP/1.0\r\nCSeq: 3\r\n"
		      "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n\r\n",
		      "RTSP/1.0 200 OK", "interleaved=0-1", false);
	expect_answer(port_open, "DESCRIBE rtsp://127.0.0.1/nothing RTSP/1.0\r\nCSeq: 4\r\n\r\n", "RTSP/1.0 404 ", NULL,
		      false);
	expect_answer(port_open, "DESCRIBE /main RTSP/1.0\r\nCSeq: 4\r\n\r\n", "RTSP/1.0 200 OK",
		      "sprop-parameter-sets=", false);
	expect_answer(port_open, "DESCRIBE /sub RTSP/1.0\r\nCSeq: 4\r\n\r\n", "RTSP/1.0 200 OK", "sprop-vps=", false);
	expect_answer(port_open, "PLAY rtsp://127.0.0.1/main RTSP/1.0\r\nCSeq: 5\r\n\r\n", "RTSP/1.0 455 ", NULL,
		      false);
	expect_answer(port_open, "ANNOUNCE rtsp://127.0.0.1/main RTSP/1.0\r\nCSeq: 6\r\n\r\n", "RTSP/1.0 501 ", NULL,
		      false);
	expect_answer(port_open, "OPTIONS * HTTP/1.1\r\nCSeq: 1\r\n\r\n", "RTSP/1.0 505 ", NULL, true);
	expect_answer(port_open, "OPTIONS * RTSP/1.0\r\n\r\n", "RTSP/1.0 400 ", NULL, true);
	static char longline[9 * 1024];
	memset(longline, 'A', sizeof longline - 1);
	expect_answer(port_open, longline, "RTSP/1.0 400 ", NULL, true);
}

int main(void)
{
	char main264[512], sub265[512];
	snprintf(main264, sizeof main264, "%s/test/fixtures/sub.h264", KP_TEST_BUILD_ROOT);
	snprintf(sub265, sizeof sub265, "%s/test/fixtures/sub.h265", KP_TEST_BUILD_ROOT);
	uv_loop_init(&loop);
	struct cam_source *src264, *src265;
	int r = cam_source_open(&loop, main264, KP_CODEC_H264, 25, &src264);
	if (r == 0)
		r = cam_source_open(&loop, sub265, KP_CODEC_H265, 25, &src265);
	if (r < 0) {
		fprintf(stderr, "fixtures %s, %s: %s (build them first)\n", main264, sub265, av_err2str(r));
		return 1;
	}
	cfg_auth = (struct cam_config){.user = "admin", .password = "secret", .main = src264, .sub = src265};
	cfg_wrong = cfg_auth;
	cfg_wrong.faults.wrong_password = true;
	cfg_open = (struct cam_config){.main = src264, .sub = src265};
	cfg_tcp_only = cfg_open;
	cfg_tcp_only.faults.udp_461 = true;
	port_tcp_only = free_port();
	port_auth = free_port();
	port_wrong = free_port();
	port_open = free_port();
	CHECK_EQ(cam_rtsp_listen(&loop, &cfg_auth, "127.0.0.1", port_auth), 0);
	CHECK_EQ(cam_rtsp_listen(&loop, &cfg_wrong, "127.0.0.1", port_wrong), 0);
	CHECK_EQ(cam_rtsp_listen(&loop, &cfg_open, "127.0.0.1", port_open), 0);
	CHECK_EQ(cam_rtsp_listen(&loop, &cfg_tcp_only, "127.0.0.1", port_tcp_only), 0);
	uv_async_init(&loop, &stop_async, on_stop);
	pthread_t t;
	pthread_create(&t, NULL, loop_thread, NULL);
	av_log_set_level(AV_LOG_ERROR);
	RUN(test_h264_main);
	RUN(test_h265_sub_alias);
	RUN(test_wrong_password);
	RUN(test_udp_refused);
	RUN(test_udp_stream);
	RUN(test_raw_protocol);
	uv_async_send(&stop_async);
	pthread_join(t, NULL);
	return TEST_EXIT();
}
