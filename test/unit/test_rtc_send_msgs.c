/* The sendmmsg(2) messages of a batch (rtcd/engine/send_msgs.c): with GSO, runs of
 * equal-sized datagrams (the last one of a run may be shorter) in one UDP_SEGMENT
 * message, a run cut at RTC_ICE_GSO_BYTES (its ceiling and one datagram past it), a
 * full batch of RTC_ICE_BATCH_MAX; without GSO one message per datagram. The datagrams
 * keep their order in every case. */
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>

#include "send_msgs.h"
#include "test.h"

static uint8_t data[RTC_ICE_BATCH_MAX][1300]; /* only their addresses are used */
static struct rtc_ice_pkt pkts[RTC_ICE_BATCH_MAX];
static struct mmsghdr m[RTC_ICE_BATCH_MAX];
static struct iovec iov[RTC_ICE_BATCH_MAX];
static char cm[RTC_ICE_BATCH_MAX][RTC_SEND_CMSG];
static unsigned end[RTC_ICE_BATCH_MAX];
static struct sockaddr_in peer;

static void make(const size_t *lens, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pkts[i] = (struct rtc_ice_pkt){.data = data[i], .len = lens[i]};
}

/* Every datagram once, in order, across the messages; message k has the segment size
 * of its first datagram when it holds several. */
static void check_order(unsigned n, unsigned nm)
{
	unsigned at = 0;
	for (unsigned k = 0; k < nm; k++) {
		struct msghdr *h = &m[k].msg_hdr;
		CHECK(h->msg_name == &peer && h->msg_namelen == sizeof peer);
		size_t total = 0;
		for (size_t i = 0; i < h->msg_iovlen; i++, at++) {
			CHECK(h->msg_iov[i].iov_base == pkts[at].data);
			CHECK_EQ(h->msg_iov[i].iov_len, pkts[at].len);
			total += pkts[at].len;
		}
		CHECK_EQ(end[k], at);
		if (h->msg_iovlen > 1) {
			struct cmsghdr *c = CMSG_FIRSTHDR(h);
			CHECK(c && c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_SEGMENT);
			uint16_t seg;
			memcpy(&seg, CMSG_DATA(c), sizeof seg);
			CHECK_EQ(seg, h->msg_iov[0].iov_len);
			CHECK(total <= RTC_ICE_GSO_BYTES);
		} else {
			CHECK(h->msg_control == NULL);
		}
	}
	CHECK_EQ(at, n);
}

static unsigned msgs(unsigned n, bool gso)
{
	memset(m, 0, sizeof m);
	unsigned nm = rtc_send_msgs(pkts, n, gso, &peer, sizeof peer, m, iov, cm, end);
	check_order(n, nm);
	return nm;
}

static void test_runs(void)
{
	/* STAP-A, three full FU-A and a shorter last one, two full and a shorter, one alone. */
	static const size_t lens[] = {40, 1210, 1210, 1210, 800, 1210, 1210, 500, 90};
	make(lens, 9);
	CHECK_EQ(msgs(9, true), 4);
	CHECK_EQ(m[0].msg_hdr.msg_iovlen, 1);
	CHECK_EQ(m[1].msg_hdr.msg_iovlen, 4);
	CHECK_EQ(m[2].msg_hdr.msg_iovlen, 3);
	CHECK_EQ(m[3].msg_hdr.msg_iovlen, 1);
	CHECK_EQ(msgs(9, false), 9);
	/* A longer one after a run starts a new message. */
	static const size_t grow[] = {600, 600, 1210, 1210};
	make(grow, 4);
	CHECK_EQ(msgs(4, true), 2);
}

static void test_ceilings(void)
{
	/* A full batch of equal datagrams: cut where the next one would pass the GSO ceiling. */
	size_t lens[RTC_ICE_BATCH_MAX];
	for (unsigned i = 0; i < RTC_ICE_BATCH_MAX; i++)
		lens[i] = 1210;
	make(lens, RTC_ICE_BATCH_MAX);
	unsigned per = RTC_ICE_GSO_BYTES / 1210; /* 49 */
	unsigned nm = msgs(RTC_ICE_BATCH_MAX, true);
	CHECK_EQ(nm, (RTC_ICE_BATCH_MAX + per - 1) / per);
	CHECK_EQ(m[0].msg_hdr.msg_iovlen, per);
	CHECK_EQ(msgs(RTC_ICE_BATCH_MAX, false), RTC_ICE_BATCH_MAX);
	/* Exactly at the ceiling, then one byte past it. */
	size_t at[] = {RTC_ICE_GSO_BYTES / 4, RTC_ICE_GSO_BYTES / 4, RTC_ICE_GSO_BYTES / 4, RTC_ICE_GSO_BYTES / 4};
	make(at, 4);
	CHECK_EQ(RTC_ICE_GSO_BYTES % 4, 0);
	CHECK_EQ(msgs(4, true), 1);
	at[3] = RTC_ICE_GSO_BYTES / 4 - 1; /* shorter last: still one */
	make(at, 4);
	CHECK_EQ(msgs(4, true), 1);
	size_t past[] = {RTC_ICE_GSO_BYTES / 3, RTC_ICE_GSO_BYTES / 3, RTC_ICE_GSO_BYTES / 3, 1};
	make(past, 4);
	CHECK_EQ(RTC_ICE_GSO_BYTES % 3, 0);
	CHECK_EQ(msgs(4, true), 2); /* 60,001 bytes: the last one goes alone */
}

int main(void)
{
	RUN(test_runs);
	RUN(test_ceilings);
	return TEST_EXIT();
}
