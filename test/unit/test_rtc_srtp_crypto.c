/* rtcd's OpenSSL AES-128-CM and HMAC-SHA1 for libsrtp2 (rtcd/srtp_crypto.c): SRTP and
 * SRTCP packets protected with them are byte for byte those of the build's own libsrtp2
 * primitives (Debian's: NSS), for the same master key, across a sequence-number wrap
 * (the rollover counter enters both the IV and the tag); and each side unprotects the
 * other's. */
#include <srtp2/srtp.h>
#include <string.h>

#include "srtp_crypto.h"
#include "test.h"

#define NPKT    40
#define PKT_MAX 256

static const uint8_t master[30] = {0xe1, 0xf9, 0x7a, 0x0d, 0x3e, 0x01, 0x8b, 0xe0, 0xd6, 0x4f,
				   0xa3, 0x2c, 0x06, 0xde, 0x41, 0x39, 0x0e, 0xc6, 0x75, 0xad,
				   0x49, 0x8a, 0xfe, 0xeb, 0xb6, 0x96, 0x0b, 0x3a, 0xab, 0xe6};

struct out {
	uint8_t pkt[NPKT + 1][PKT_MAX];
	int len[NPKT + 1];
};

static srtp_t session(srtp_ssrc_type_t type)
{
	srtp_policy_t p;
	memset(&p, 0, sizeof p);
	srtp_crypto_policy_set_rtp_default(&p.rtp);
	srtp_crypto_policy_set_rtcp_default(&p.rtcp);
	p.ssrc.type = type;
	p.key = (unsigned char *)master;
	p.window_size = 1024;
	srtp_t s = NULL;
	CHECK_EQ(srtp_create(&s, &p), srtp_err_status_ok);
	return s;
}

/* NPKT RTP packets from sequence number 65520 (so it wraps), then one RTCP SR. */
static int plain(unsigned i, uint8_t *b)
{
	if (i == NPKT) {
		static const uint8_t sr[28] = {0x80, 200, 0, 6,  0x12, 0x34, 0x56, 0x78, 1,  2,  3,  4,  5,  6,
					       7,    8,   9, 10, 11,   12,   13,   14,   15, 16, 17, 18, 19, 20};
		memcpy(b, sr, sizeof sr);
		return sizeof sr;
	}
	uint16_t seq = (uint16_t)(65520 + i);
	int n = 12 + 20 + (int)(i * 5 % 150);
	memset(b, 0, PKT_MAX);
	b[0] = 0x80;
	b[1] = 96;
	b[2] = (uint8_t)(seq >> 8);
	b[3] = (uint8_t)seq;
	b[4] = 0, b[5] = 0, b[6] = (uint8_t)i, b[7] = 0;
	b[8] = 0x12, b[9] = 0x34, b[10] = 0x56, b[11] = 0x78;
	for (int k = 12; k < n; k++)
		b[k] = (uint8_t)(k * 7 + i);
	return n;
}

static void protect_all(struct out *o)
{
	srtp_t s = session(ssrc_any_outbound);
	for (unsigned i = 0; i <= NPKT; i++) {
		o->len[i] = plain(i, o->pkt[i]);
		srtp_err_status_t e =
		    i == NPKT ? srtp_protect_rtcp(s, o->pkt[i], &o->len[i]) : srtp_protect(s, o->pkt[i], &o->len[i]);
		CHECK_EQ(e, srtp_err_status_ok);
	}
	srtp_dealloc(s);
}

static void unprotect_all(const struct out *o)
{
	srtp_t s = session(ssrc_any_inbound);
	for (unsigned i = 0; i <= NPKT; i++) {
		uint8_t b[PKT_MAX], want[PKT_MAX];
		int n = o->len[i], wn = plain(i, want);
		memcpy(b, o->pkt[i], (size_t)n);
		srtp_err_status_t e = i == NPKT ? srtp_unprotect_rtcp(s, b, &n) : srtp_unprotect(s, b, &n);
		CHECK_EQ(e, srtp_err_status_ok);
		CHECK_EQ(n, wn);
		CHECK(memcmp(b, want, (size_t)wn) == 0);
	}
	srtp_dealloc(s);
}

static struct out stock, ours;

static void test_same_bytes_as_stock(void)
{
	CHECK_EQ(srtp_init(), srtp_err_status_ok);
	protect_all(&stock);
	CHECK_EQ(rtc_srtp_crypto_init(), 0);
	protect_all(&ours);
	for (unsigned i = 0; i <= NPKT; i++) {
		CHECK_EQ(ours.len[i], stock.len[i]);
		CHECK(memcmp(ours.pkt[i], stock.pkt[i], (size_t)stock.len[i]) == 0);
	}
	unprotect_all(&stock); /* ours unprotects what the stock primitives protected */
}

/* A flipped bit in the tag or in the payload is refused. */
static void test_tampered_refused(void)
{
	srtp_t s = session(ssrc_any_inbound);
	uint8_t b[PKT_MAX];
	int n = ours.len[0];
	memcpy(b, ours.pkt[0], (size_t)n);
	b[n - 1] ^= 1;
	CHECK_EQ(srtp_unprotect(s, b, &n), srtp_err_status_auth_fail);
	n = ours.len[1];
	memcpy(b, ours.pkt[1], (size_t)n);
	b[20] ^= 0x80;
	CHECK_EQ(srtp_unprotect(s, b, &n), srtp_err_status_auth_fail);
	srtp_dealloc(s);
}

int main(void)
{
	RUN(test_same_bytes_as_stock);
	RUN(test_tampered_refused);
	CHECK_EQ(srtp_shutdown(), srtp_err_status_ok);
	return TEST_EXIT();
}
