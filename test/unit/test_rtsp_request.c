/* Unit tests for the test camera's RTSP request parser, Digest fields and check, and
 * Transport parsing: valid requests, pipelining, and each malformed case rejected with
 * its specific error. */
#include <errno.h>

#include "rtsp_digest.h"
#include "rtsp_request.h"
#include "test.h"

static int parse(const char *text, struct rtsp_request *r, size_t *used, const char **why)
{
	*why = "";
	return rtsp_request_parse((const uint8_t *)text, strlen(text), r, used, why);
}

static struct rtsp_str S(const char *s) {
	return (struct rtsp_str){s, strlen(s)};
}

static struct rtsp_request req;

static void test_parse_ok(void)
{
	const char *t =
	    "\r\nDESCRIBE rtsp://127.0.0.1:8554/main RTSP/1.0\r\nCSeq: 2\r\n"
	    "Accept:   application/sdp  \r\nUser-Agent: Lavf59\r\n\r\nOPTIONS * RTSP/1.0\r\nCSeq: 3\r\n\r\n";
	size_t used;
	const char *why;
	CHECK_EQ(parse(t, &req, &used, &why), 0);
	CHECK(strcmp(req.method, "DESCRIBE") == 0);
	CHECK(rtsp_str_eq(req.uri, "rtsp://127.0.0.1:8554/main"));
	CHECK_EQ(req.cseq, 2);
	CHECK_EQ(req.n_headers, 3);
	const struct rtsp_str *a = rtsp_request_header(&req, "accept");
	CHECK(a && rtsp_str_eq(*a, "application/sdp"));
	CHECK(rtsp_request_header(&req, "Session") == NULL);
	CHECK_EQ(parse(t + used, &req, &used, &why), 0);
	CHECK(strcmp(req.method, "OPTIONS") == 0);
	CHECK_EQ(req.cseq, 3);
	/* Bare LF line ends and a body. */
	const char *b = "SET_PARAMETER rtsp://h/main RTSP/1.0\nCSeq: 9\nContent-Length: 5\n\nhello";
	CHECK_EQ(parse(b, &req, &used, &why), 0);
	CHECK_EQ(used, strlen(b));
	CHECK_EQ(req.body_len, 5);
}

static void test_parse_incomplete(void)
{
	const char *t = "PLAY rtsp://h/main RTSP/1.0\r\nCSeq: 4\r\nSession: abc\r\n\r\n";
	size_t used;
	const char *why;
	for (size_t n = 0; n < strlen(t); n++)
		CHECK_EQ(rtsp_request_parse((const uint8_t *)t, n, &req, &used, &why), -EAGAIN);
	const char *b = "SET_PARAMETER * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 10\r\n\r\nabc";
	CHECK_EQ(parse(b, &req, &used, &why), -EAGAIN);
}

static void expect(const char *text, int err, const char *reason)
{
	size_t used;
	const char *why;
	int r = parse(text, &req, &used, &why);
	CHECK_EQ(r, err);
	CHECK_STR_CONTAINS(why, reason);
}

static void test_parse_malformed(void)
{
	expect("OPTIONS * RTSP/1.0\r\n\r\n", -EBADMSG, "without CSeq");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: x1\r\n\r\n", -EBADMSG, "CSeq is not a number");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: 1234567890\r\n\r\n", -EBADMSG, "CSeq is not a number");
	expect("OPTIONS * RTSP/1.0\r\nCSeq:\r\n\r\n", -EBADMSG, "CSeq is not a number");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nCSeq: 2\r\n\r\n", -EBADMSG, "duplicate CSeq");
	expect("OPTIONS * HTTP/1.1\r\nCSeq: 1\r\n\r\n", -EPROTONOSUPPORT, "not RTSP/1.0");
	expect("OPTIONS * RTSP/2.0\r\nCSeq: 1\r\n\r\n", -EPROTONOSUPPORT, "not RTSP/1.0");
	expect("OPTIONS\r\nCSeq: 1\r\n\r\n", -EBADMSG, "without a method");
	expect(" * RTSP/1.0\r\nCSeq: 1\r\n\r\n", -EBADMSG, "without a method");
	expect("OPTIONS RTSP/1.0\r\nCSeq: 1\r\n\r\n", -EBADMSG, "without a URI");
	expect("options * RTSP/1.0\r\nCSeq: 1\r\n\r\n", -EBADMSG, "upper-case");
	expect("OPTIONSOPTIONSOPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n", -EBADMSG, "method name too long");
	expect("OPTIONS a\x01 RTSP/1.0\r\nCSeq: 1\r\n\r\n", -EBADMSG, "control character in the request URI");
	expect("OPTIONS * RTSP/1.0\r\nCSeq 1\r\n\r\n", -EBADMSG, "without a colon");
	expect("OPTIONS * RTSP/1.0\r\n: 1\r\n\r\n", -EBADMSG, "empty name");
	expect("OPTIONS * RTSP/1.0\r\nC(Seq: 1\r\n\r\n", -EBADMSG, "invalid character in a header name");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n folded\r\n\r\n", -EBADMSG, "folded");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: 1\x7f\r\n\r\n", -EBADMSG, "control character in a header");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 8193\r\n\r\n", -EMSGSIZE, "body longer");
	expect("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: -1\r\n\r\n", -EBADMSG, "Content-Length");
}

static void test_parse_ceilings(void)
{
	static char buf[80 * 1024];
	size_t used;
	const char *why;
	/* A request line of exactly 8 KiB is fine; one byte more is not. */
	int prefix = snprintf(buf, sizeof buf, "OPTIONS /");
	memset(buf + prefix, 'a', RTSP_MAX_LINE - (size_t)prefix - 9);
	strcpy(buf + RTSP_MAX_LINE - 9, " RTSP/1.0\r\nCSeq: 1\r\n\r\n");
	CHECK_EQ(parse(buf, &req, &used, &why), 0);
	memset(buf + prefix, 'a', RTSP_MAX_LINE - (size_t)prefix - 8);
	strcpy(buf + RTSP_MAX_LINE - 8, " RTSP/1.0\r\nCSeq: 1\r\n\r\n");
	expect(buf, -EMSGSIZE, "line longer than 8 KiB");
	/* An unterminated line past the ceiling is refused before it ends. */
	memset(buf, 'a', RTSP_MAX_LINE + 2);
	buf[RTSP_MAX_LINE + 2] = '\0';
	expect(buf, -EMSGSIZE, "line longer than 8 KiB");
	buf[RTSP_MAX_LINE + 1] = '\0';
	expect(buf, -EAGAIN, "");
	/* 100 headers pass, 101 do not. */
	size_t n = (size_t)snprintf(buf, sizeof buf, "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n");
	for (int i = 0; i < 99; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "X-%d: v\r\n", i);
	strcpy(buf + n, "\r\n");
	CHECK_EQ(parse(buf, &req, &used, &why), 0);
	CHECK_EQ(req.n_headers, 100);
	strcpy(buf + n, "X-last: v\r\n\r\n");
	expect(buf, -E2BIG, "more than 100 headers");
	/* 64 KiB of header lines in all. */
	n = (size_t)snprintf(buf, sizeof buf, "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n");
	for (int i = 0; i < 9; i++) {
		n += (size_t)snprintf(buf + n, sizeof buf - n, "X-%d: ", i);
		memset(buf + n, 'v', 8000);
		n += 8000;
		n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n");
	}
	strcpy(buf + n, "\r\n");
	expect(buf, -EMSGSIZE, "header block longer than 64 KiB");
	buf[n - 2] = '\0'; /* incomplete, already over the ceiling */
	expect(buf, -EMSGSIZE, "header block longer than 64 KiB");
}

static void expect_digest(const char *v, int err, const char *reason)
{
	struct rtsp_digest d;
	const char *why = "";
	CHECK_EQ(rtsp_digest_parse(S(v), &d, &why), err);
	CHECK_STR_CONTAINS(why, reason);
}

static void test_digest(void)
{
	/* RFC 2617 section 3.5's example. */
	const char *v = "Digest username=\"Mufasa\", realm=\"testrealm@host.com\", "
			"nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", uri=\"/dir/index.html\", qop=auth, "
			"nc=00000001, cnonce=\"0a4f113b\", response=\"6629fae49393a05397450978507c4ef1\", "
			"opaque=\"5ccc069c403ebaf9f0171e9517f40e41\"";
	struct rtsp_digest d;
	const char *why;
	CHECK_EQ(rtsp_digest_parse(S(v), &d, &why), 0);
	CHECK(rtsp_str_eq(d.username, "Mufasa"));
	CHECK(rtsp_str_eq(d.nc, "00000001"));
	char out[33];
	CHECK_EQ(cam_digest_response(&d, "GET", "Circle Of Life", out), 0);
	CHECK(strcmp(out, "6629fae49393a05397450978507c4ef1") == 0);
	CHECK(cam_digest_check(&d, "GET", "Mufasa", "Circle Of Life", "testrealm@host.com",
			       "dcd98b7102dd2f0e8b11d0f600bfb0c093"));
	CHECK(!cam_digest_check(&d, "GET", "Mufasa", "Circle of Life", "testrealm@host.com",
				"dcd98b7102dd2f0e8b11d0f600bfb0c093"));
	CHECK(!cam_digest_check(&d, "GET", "mufasa", "Circle Of Life", "testrealm@host.com",
				"dcd98b7102dd2f0e8b11d0f600bfb0c093"));
	CHECK(!cam_digest_check(&d, "GET", "Mufasa", "Circle Of Life", "testrealm@host.com", "other"));
	CHECK(!cam_digest_check(&d, "DESCRIBE", "Mufasa", "Circle Of Life", "testrealm@host.com",
				"dcd98b7102dd2f0e8b11d0f600bfb0c093"));

	/* Without qop, as libavformat answers a challenge that offers none. */
	const char *v2 = "Digest username=\"admin\", realm=\"KeepPeek\", nonce=\"abc\", uri=\"rtsp://h/main\", "
			 "response=\"00000000000000000000000000000000\"";
	CHECK_EQ(rtsp_digest_parse(S(v2), &d, &why), 0);
	CHECK_EQ(cam_digest_response(&d, "DESCRIBE", "secret", out), 0);
	char fixed[512];
	snprintf(fixed, sizeof fixed,
		 "Digest username=\"admin\", realm=\"KeepPeek\", nonce=\"abc\", uri=\"rtsp://h/main\", "
		 "response=\"%s\"",
		 out);
	CHECK_EQ(rtsp_digest_parse(S(fixed), &d, &why), 0);
	CHECK(cam_digest_check(&d, "DESCRIBE", "admin", "secret", "KeepPeek", "abc"));

	expect_digest("Basic YWRtaW46c2VjcmV0", -EPROTONOSUPPORT, "not Digest");
	expect_digest("Digest", -EPROTONOSUPPORT, "not Digest");
	expect_digest("Digest username=\"a\", realm=\"r\", nonce=\"n\", uri=\"u\"", -EBADMSG, "lacks");
	expect_digest("Digest username=\"a\", realm=\"r\", nonce=\"n\", uri=\"u\", response=\"xyz\"", -EBADMSG,
		      "32 hex");
	expect_digest("Digest username=\"a, realm=r", -EBADMSG, "unterminated");
	expect_digest("Digest username=\"a\", username=\"b\"", -EBADMSG, "duplicate");
	expect_digest("Digest username", -EBADMSG, "without '='");
	expect_digest("Digest =x", -EBADMSG, "without '='");
	expect_digest("Digest username=a, realm=r, nonce=n, uri=u, response=00000000000000000000000000000000, "
		      "algorithm=SHA-256",
		      -EPROTONOSUPPORT, "not MD5");
	expect_digest("Digest username=a, realm=r, nonce=n, uri=u, response=00000000000000000000000000000000, "
		      "qop=auth-int, nc=00000001, cnonce=x",
		      -EPROTONOSUPPORT, "qop is not auth");
	expect_digest("Digest username=a, realm=r, nonce=n, uri=u, response=00000000000000000000000000000000, "
		      "qop=auth",
		      -EBADMSG, "without nc or cnonce");
}

static void expect_transport(const char *v, int err, bool tcp, int a, int b)
{
	struct rtsp_transport t = {0};
	const char *why = "";
	int r = rtsp_transport_parse(S(v), &t, &why);
	CHECK_EQ(r, err);
	if (r == 0) {
		CHECK_EQ(t.tcp, tcp);
		if (tcp) {
			CHECK_EQ(t.interleaved[0], a);
			CHECK_EQ(t.interleaved[1], b);
		}
	} else {
		CHECK(why[0] != '\0');
	}
}

/* RFC 2326 12.39: client_port=a-b gives the client's RTP and RTCP ports. */
static void expect_udp(const char *v, int err, unsigned rtp, unsigned rtcp, bool first)
{
	struct rtsp_transport t = {0};
	const char *why = "";
	int r = rtsp_transport_parse(S(v), &t, &why);
	CHECK_EQ(r, err);
	if (r == 0 && rtp) {
		CHECK(t.udp);
		CHECK_EQ(t.client_port[0], rtp);
		CHECK_EQ(t.client_port[1], rtcp);
		CHECK_EQ(t.udp_first, first);
	} else if (r == 0) {
		CHECK(!t.udp);
	} else {
		CHECK(why[0] != '\0');
	}
}

static void test_transport(void)
{
	expect_transport("RTP/AVP/TCP;unicast;interleaved=0-1", 0, true, 0, 1);
	expect_transport("rtp/avp/tcp;interleaved=4-5;mode=play", 0, true, 4, 5);
	expect_transport("RTP/AVP/TCP;unicast", 0, true, 0, 1);
	expect_transport("RTP/AVP/TCP;unicast;interleaved=6", 0, true, 6, 7);
	expect_transport("RTP/AVP;unicast;client_port=5000-5001", 0, false, 0, 0);
	expect_transport("RTP/AVP/UDP;unicast;client_port=5000-5001", 0, false, 0, 0);
	expect_transport("RTP/AVP/TCP;multicast;interleaved=0-1", 0, false, 0, 0);
	expect_transport("RTP/AVP;unicast;client_port=1-2,RTP/AVP/TCP;unicast;interleaved=2-3", 0, true, 2, 3);
	expect_transport("", -EBADMSG, false, 0, 0);
	expect_transport("  ", -EBADMSG, false, 0, 0);
	expect_transport(";unicast", -EBADMSG, false, 0, 0);
	expect_transport("RTP/AVP/TCP;interleaved=x", -EBADMSG, false, 0, 0);
	expect_transport("RTP/AVP/TCP;interleaved=300-301", -EBADMSG, false, 0, 0);
	expect_transport("RTP/AVP/TCP;interleaved=1-1", -EBADMSG, false, 0, 0);
	expect_transport("RTP/AVP/TCP;interleaved=1-2x", -EBADMSG, false, 0, 0);
	expect_transport("RTP/AVP/TCP;interleaved=255", -EBADMSG, false, 0, 0);
	expect_udp("RTP/AVP;unicast;client_port=5000-5001", 0, 5000, 5001, true);
	expect_udp("RTP/AVP/UDP;unicast;client_port=40002-40003;mode=play", 0, 40002, 40003, true);
	expect_udp("RTP/AVP;unicast;client_port=6000", 0, 6000, 6001, true);
	expect_udp("RTP/AVP/TCP;unicast;interleaved=0-1,RTP/AVP;unicast;client_port=7000-7001", 0, 7000, 7001, false);
	expect_udp("RTP/AVP;unicast", 0, 0, 0, false);
	expect_udp("RTP/AVP;multicast;client_port=5000-5001", 0, 0, 0, false);
	expect_udp("RTP/AVP;unicast;client_port=0-1", -EBADMSG, 0, 0, false);
	expect_udp("RTP/AVP;unicast;client_port=65535", -EBADMSG, 0, 0, false);
	expect_udp("RTP/AVP;unicast;client_port=5000-70000", -EBADMSG, 0, 0, false);
	expect_udp("RTP/AVP;unicast;client_port=5000-5000", -EBADMSG, 0, 0, false);
}

int main(void)
{
	RUN(test_parse_ok);
	RUN(test_parse_incomplete);
	RUN(test_parse_malformed);
	RUN(test_parse_ceilings);
	RUN(test_digest);
	RUN(test_transport);
	return TEST_EXIT();
}
