/* rtcd's access unit packetized once for every viewer (rtcd/rtp_plan.c): the plan's
 * payloads and marker bits are exactly what the common packetizer emits at rtcd's MTU
 * (STAP-A of SPS and PPS, FU-A fragments of a large IDR slice), a plan already made is
 * not packetized again, and the next access unit reuses its buffers (no allocation per
 * packet, none per access unit once they are large enough). */
#include <errno.h>
#include <stdint.h>

#include "rtcd.h"
#include "test.h"

#define MAXPKT 64

struct capture {
	unsigned n;
	size_t len[MAXPKT];
	uint8_t pkt[MAXPKT][RTC_MTU];
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

static size_t add_nal(uint8_t *au, size_t off, uint8_t hdr, size_t len)
{
	static const uint8_t sc[4] = {0, 0, 0, 1};
	memcpy(au + off, sc, 4);
	off += 4;
	au[off] = hdr;
	for (size_t i = 1; i < len; i++)
		au[off + i] = (uint8_t)(0x40 + i % 37); /* never 0: no false start codes */
	return off + len;
}

static uint8_t au[32 * 1024];
static struct capture cap;
static struct rtc_plan plan;

static void same_as_packetizer(size_t len)
{
	struct rtp_packetizer pk;
	memset(&cap, 0, sizeof cap);
	CHECK_EQ(rtp_packetizer_init(&pk, KP_CODEC_H264, 96, 1, 0, RTC_MTU), 0);
	CHECK_EQ(rtp_packetize(&pk, au, len, 0, capture, &cap), 0);
	CHECK_EQ(plan.n, cap.n);
	for (unsigned i = 0; i < plan.n && i < MAXPKT; i++) {
		const struct rtc_plan_pkt *p = &plan.pkts[i];
		CHECK_EQ(p->len, cap.len[i] - RTP_HEADER_SIZE);
		CHECK_EQ(p->marker, (cap.pkt[i][1] & 0x80) != 0);
		CHECK(memcmp(plan.buf + p->off, cap.pkt[i] + RTP_HEADER_SIZE, p->len) == 0);
		CHECK_EQ(p->marker, i + 1 == plan.n);
	}
}

static void test_plan(void)
{
	size_t len = add_nal(au, 0, 0x67, 20); /* SPS */
	len = add_nal(au, len, 0x68, 6);       /* PPS */
	len = add_nal(au, len, 0x65, 20000);   /* IDR slice: FU-A */
	rtc_plan_reset(&plan);
	CHECK_EQ(rtc_plan_make(&plan, KP_CODEC_H264, au, len, RTC_MTU), 0);
	CHECK(plan.n > 16);
	same_as_packetizer(len);
	/* Made once: a second viewer's call does not packetize again. */
	unsigned n = plan.n;
	plan.n = 0;
	CHECK_EQ(rtc_plan_make(&plan, KP_CODEC_H264, au, len, RTC_MTU), 0);
	CHECK_EQ(plan.n, 0);
	plan.n = n;
	/* The next (smaller) access unit reuses the buffers. */
	const uint8_t *buf = plan.buf;
	const struct rtc_plan_pkt *pkts = plan.pkts;
	size_t cap_bytes = plan.cap;
	len = add_nal(au, 0, 0x41, 9000); /* non-IDR slice */
	rtc_plan_reset(&plan);
	CHECK_EQ(rtc_plan_make(&plan, KP_CODEC_H264, au, len, RTC_MTU), 0);
	CHECK(plan.buf == buf && plan.pkts == pkts && plan.cap == cap_bytes);
	same_as_packetizer(len);
	/* No NAL unit: -ENODATA, kept for every viewer of it. */
	rtc_plan_reset(&plan);
	memset(au, 0, 64);
	CHECK_EQ(rtc_plan_make(&plan, KP_CODEC_H264, au, 64, RTC_MTU), -ENODATA);
	CHECK_EQ(rtc_plan_make(&plan, KP_CODEC_H264, au, 64, RTC_MTU), -ENODATA);
	CHECK_EQ(plan.n, 0);
	rtc_plan_free(&plan);
}

int main(void)
{
	RUN(test_plan);
	return TEST_EXIT();
}
