/* rtcd's RTCP: generic NACK with its bitmask, PLI and FIR for our SSRC only, REMB and
 * transport-cc skipped, malformed compounds refused with a reason, sender reports. */
#include <errno.h>
#include <stdint.h>

#include "rtcp.h"
#include "test.h"

static size_t put(uint8_t *b, size_t off, uint8_t v0, uint8_t pt, const uint8_t *body, size_t blen)
{
	size_t words = (4 + blen) / 4 - 1;
	b[off] = v0;
	b[off + 1] = pt;
	b[off + 2] = (uint8_t)(words >> 8);
	b[off + 3] = (uint8_t)words;
	memcpy(b + off + 4, body, blen);
	return off + 4 + blen;
}

static void test_feedback(void)
{
	uint8_t b[256];
	size_t n = 0;
	const uint8_t rr[] = {0, 0, 0, 9};
	n = put(b, n, 0x80, 201, rr, sizeof rr);
	const uint8_t nack[] = {0, 0, 0, 9, 0xca, 0xfe, 0xba, 0xbe, 0x01, 0x00, 0x00, 0x05}; /* 256, +1, +3 */
	n = put(b, n, 0x81, 205, nack, sizeof nack);
	const uint8_t pli[] = {0, 0, 0, 9, 0xca, 0xfe, 0xba, 0xbe};
	n = put(b, n, 0x81, 206, pli, sizeof pli);
	const uint8_t remb[] = {0,   0,   0, 9,    0,    0,    0,    0,    'R',  'E',
				'M', 'B', 1, 0x0a, 0xbc, 0xde, 0xca, 0xfe, 0xba, 0xbe};
	n = put(b, n, 0x8f, 206, remb, sizeof remb);
	const uint8_t twcc[] = {0, 0, 0, 9, 0xca, 0xfe, 0xba, 0xbe, 0, 1, 0, 2, 0, 0, 0, 0};
	n = put(b, n, 0x8f, 205, twcc, sizeof twcc);
	struct rtcp_feedback fb;
	const char *why = NULL;
	CHECK_EQ(rtcp_parse(b, n, 0xcafebabe, &fb, &why), 0);
	CHECK_EQ(fb.packets, 5);
	CHECK_EQ(fb.ignored, 3);
	CHECK(fb.pli);
	CHECK(!fb.fir);
	CHECK_EQ(fb.nnack, 3);
	CHECK_EQ(fb.nack[0], 256);
	CHECK_EQ(fb.nack[1], 257);
	CHECK_EQ(fb.nack[2], 259);
	/* The same feedback for another SSRC is not ours. */
	CHECK_EQ(rtcp_parse(b, n, 0x12345678, &fb, &why), 0);
	CHECK(!fb.pli);
	CHECK_EQ(fb.nnack, 0);
	/* FIR names the SSRC in its FCI. */
	n = 0;
	const uint8_t fir[] = {0, 0, 0, 9, 0, 0, 0, 0, 0xca, 0xfe, 0xba, 0xbe, 7, 0, 0, 0};
	n = put(b, n, 0x84, 206, fir, sizeof fir);
	CHECK_EQ(rtcp_parse(b, n, 0xcafebabe, &fb, &why), 0);
	CHECK(fb.fir);
	/* NACK with a full bitmask wraps around 65535. */
	n = 0;
	const uint8_t wrap[] = {0, 0, 0, 9, 0xca, 0xfe, 0xba, 0xbe, 0xff, 0xfe, 0xff, 0xff};
	n = put(b, n, 0x81, 205, wrap, sizeof wrap);
	CHECK_EQ(rtcp_parse(b, n, 0xcafebabe, &fb, &why), 0);
	CHECK_EQ(fb.nnack, 17);
	CHECK_EQ(fb.nack[16], 14);
}

static void expect_bad(const uint8_t *b, size_t n, const char *reason)
{
	struct rtcp_feedback fb;
	const char *why = NULL;
	CHECK_EQ(rtcp_parse(b, n, 1, &fb, &why), -EBADMSG);
	CHECK(why != NULL);
	if (why)
		CHECK_STR_CONTAINS(why, reason);
}

static void test_malformed(void)
{
	const uint8_t short_hdr[] = {0x80, 201};
	expect_bad(short_hdr, sizeof short_hdr, "shorter");
	const uint8_t v1[] = {0x40, 201, 0, 0};
	expect_bad(v1, sizeof v1, "version");
	const uint8_t longer[] = {0x80, 201, 0, 5, 0, 0, 0, 0};
	expect_bad(longer, sizeof longer, "length");
	const uint8_t trailing[] = {0x80, 201, 0, 0, 0x80};
	expect_bad(trailing, sizeof trailing, "trailing");
	const uint8_t pli[] = {0x81, 206, 0, 1, 0, 0, 0, 1};
	expect_bad(pli, sizeof pli, "PLI");
	const uint8_t nack[] = {0x81, 205, 0, 1, 0, 0, 0, 1};
	expect_bad(nack, sizeof nack, "NACK");
	const uint8_t pad0[] = {0xa0, 201, 0, 1, 0, 0, 0, 0};
	expect_bad(pad0, sizeof pad0, "padding");
	const uint8_t padbig[] = {0xa0, 201, 0, 1, 0, 0, 0, 9};
	expect_bad(padbig, sizeof padbig, "padding");
}

static void test_sender_report(void)
{
	uint8_t b[128];
	struct rtcp_sr sr = {.ssrc = 0x01020304,
			     .ntp = 0x1122334455667788ull,
			     .rtp_ts = 90000,
			     .packets = 7,
			     .octets = 7000,
			     .cname = "keeppeek"};
	int n = rtcp_write_sr(&sr, b, sizeof b);
	CHECK(n > 28);
	CHECK_EQ(n % 4, 0);
	CHECK_EQ(b[1], 200);
	CHECK_EQ(b[3], 6);
	CHECK_EQ(b[8], 0x11);
	CHECK_EQ(b[28 + 1], 202);
	CHECK_EQ(b[28 + 9], 8);
	CHECK(memcmp(b + 28 + 10, "keeppeek", 8) == 0);
	struct rtcp_feedback fb;
	const char *why;
	CHECK_EQ(rtcp_parse(b, (size_t)n, 1, &fb, &why), 0);
	CHECK_EQ(fb.packets, 2);
	CHECK(rtcp_is_rtcp(b, (size_t)n));
	CHECK_EQ(rtcp_write_sr(&sr, b, 40), -ENOBUFS);
}

int main(void)
{
	RUN(test_feedback);
	RUN(test_malformed);
	RUN(test_sender_report);
	return TEST_EXIT();
}
