/* rtcd's packetization at its MTU (1,200 bytes): NAL units of MTU-1, MTU and MTU+1
 * payload bytes, STAP-A aggregation of SPS/PPS, FU-A (and H.265 FU) start/end bits and
 * the marker bit, through common/rtp_h26x.c as rtcd configures it. */
#include <errno.h>
#include <stdint.h>

#include "rtcd.h"
#include "test.h"

#define MAXPKT 64

struct capture {
	unsigned n;
	size_t len[MAXPKT];
	uint8_t pkt[MAXPKT][RTC_MTU + 16];
};

static int capture(void *arg, const uint8_t *pkt, size_t len)
{
	struct capture *c = arg;
	if (c->n < MAXPKT && len <= sizeof c->pkt[0]) {
		memcpy(c->pkt[c->n], pkt, len);
		c->len[c->n] = len;
	}
	c->n++;
	return 0;
}

static size_t add_nal(uint8_t *au, size_t off, uint8_t hdr0, uint8_t hdr1, size_t len, bool h265)
{
	au[off++] = 0;
	au[off++] = 0;
	au[off++] = 0;
	au[off++] = 1;
	au[off] = hdr0;
	size_t i = 1;
	if (h265)
		au[off + i++] = hdr1;
	for (; i < len; i++)
		au[off + i] = (uint8_t)(0x40 + i % 37); /* never 0: no false start codes */
	return off + len;
}

static struct rtp_packetizer pk;
static uint8_t au[4 * RTC_MTU + 256];
static struct capture cap;

static void one_nal(size_t nal_len, unsigned *ret_packets)
{
	memset(&cap, 0, sizeof cap);
	CHECK_EQ(rtp_packetizer_init(&pk, KP_CODEC_H264, 102, 0xabcdef, 100, RTC_MTU), 0);
	size_t len = add_nal(au, 0, 0x65, 0, nal_len, false); /* IDR slice, nal_ref_idc 3 */
	CHECK_EQ(rtp_packetize(&pk, au, len, 9000, capture, &cap), 0);
	*ret_packets = cap.n;
	for (unsigned i = 0; i < cap.n && i < MAXPKT; i++) {
		CHECK(cap.len[i] <= RTC_MTU);
		bool last = i + 1 == cap.n;
		CHECK_EQ((cap.pkt[i][1] >> 7) & 1, last ? 1 : 0); /* marker on the last packet only */
		CHECK_EQ(cap.pkt[i][1] & 0x7f, 102);
		CHECK_EQ(cap.pkt[i][2] << 8 | cap.pkt[i][3], 100 + i);
	}
}

static void test_mtu_boundaries(void)
{
	const size_t room = RTC_MTU - RTP_HEADER_SIZE;
	unsigned n;
	/* MTU-1 and MTU payload bytes: one single-NAL packet carrying the NAL as is. */
	one_nal(room - 1, &n);
	CHECK_EQ(n, 1);
	CHECK_EQ(cap.len[0], RTC_MTU - 1);
	CHECK_EQ(cap.pkt[0][RTP_HEADER_SIZE], 0x65);
	one_nal(room, &n);
	CHECK_EQ(n, 1);
	CHECK_EQ(cap.len[0], RTC_MTU);
	CHECK_EQ(cap.pkt[0][RTP_HEADER_SIZE], 0x65);
	/* MTU+1: FU-A in two packets, start bit then end bit. */
	one_nal(room + 1, &n);
	CHECK_EQ(n, 2);
	for (unsigned i = 0; i < 2; i++) {
		const uint8_t *p = cap.pkt[i] + RTP_HEADER_SIZE;
		CHECK_EQ(p[0] & 0x1f, 28);   /* FU indicator: type 28 */
		CHECK_EQ(p[0] & 0x60, 0x60); /* NRI kept */
		CHECK_EQ(p[1] & 0x1f, 5);    /* FU header: original type */
		CHECK_EQ((p[1] >> 7) & 1, i == 0);
		CHECK_EQ((p[1] >> 6) & 1, i == 1);
	}
	CHECK_EQ(cap.len[0] + cap.len[1] - 2 * (RTP_HEADER_SIZE + 2), room + 1 - 1);
	/* Three fragments: the middle one has neither bit. */
	one_nal(3 * room, &n);
	CHECK_EQ(n, 4);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *p = cap.pkt[i] + RTP_HEADER_SIZE;
		CHECK_EQ((p[1] >> 7) & 1, i == 0);
		CHECK_EQ((p[1] >> 6) & 1, i == n - 1);
	}
}

static void test_stap_a(void)
{
	memset(&cap, 0, sizeof cap);
	CHECK_EQ(rtp_packetizer_init(&pk, KP_CODEC_H264, 96, 1, 0, RTC_MTU), 0);
	size_t len = add_nal(au, 0, 0x67, 0, 20, false); /* SPS */
	len = add_nal(au, len, 0x68, 0, 6, false);       /* PPS */
	len = add_nal(au, len, 0x65, 0, 500, false);     /* IDR */
	CHECK_EQ(rtp_packetize(&pk, au, len, 0, capture, &cap), 0);
	CHECK_EQ(cap.n, 2);
	const uint8_t *p = cap.pkt[0] + RTP_HEADER_SIZE;
	CHECK_EQ(p[0] & 0x1f, 24); /* STAP-A */
	CHECK_EQ(p[1] << 8 | p[2], 20);
	CHECK_EQ(p[3], 0x67);
	CHECK_EQ(p[3 + 20] << 8 | p[4 + 20], 6);
	CHECK_EQ(p[5 + 20], 0x68);
	CHECK_EQ(cap.len[0], RTP_HEADER_SIZE + 1 + 2 + 20 + 2 + 6);
	CHECK_EQ(cap.pkt[0][1] >> 7, 0);
	CHECK_EQ(cap.pkt[1][RTP_HEADER_SIZE], 0x65);
	CHECK_EQ(cap.pkt[1][1] >> 7, 1);
}

static void test_h265_fu(void)
{
	memset(&cap, 0, sizeof cap);
	CHECK_EQ(rtp_packetizer_init(&pk, KP_CODEC_H265, 98, 1, 0, RTC_MTU), 0);
	size_t len = add_nal(au, 0, 19 << 1, 1, 2 * RTC_MTU, true); /* IDR_W_RADL */
	CHECK_EQ(rtp_packetize(&pk, au, len, 0, capture, &cap), 0);
	CHECK(cap.n >= 3);
	for (unsigned i = 0; i < cap.n && i < MAXPKT; i++) {
		const uint8_t *p = cap.pkt[i] + RTP_HEADER_SIZE;
		CHECK(cap.len[i] <= RTC_MTU);
		CHECK_EQ((p[0] >> 1) & 0x3f, 49); /* FU */
		CHECK_EQ(p[2] & 0x3f, 19);
		CHECK_EQ((p[2] >> 7) & 1, i == 0);
		CHECK_EQ((p[2] >> 6) & 1, i + 1 == cap.n);
	}
}

int main(void)
{
	RUN(test_mtu_boundaries);
	RUN(test_stap_a);
	RUN(test_h265_fu);
	return TEST_EXIT();
}
