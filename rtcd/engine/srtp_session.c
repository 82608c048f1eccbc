/* SRTP sessions through libsrtp2 (srtp_session.h); the primitives are OpenSSL's
 * (srtp_crypto.c, decision 0020). */
#include "srtp_session.h"

#include <errno.h>
#include <srtp2/srtp.h>
#include <string.h>

#include "log.h"
#include "srtp_crypto.h"

_Static_assert(RTC_SRTP_TRAILER_MAX >= SRTP_MAX_TRAILER_LEN, "RTC_SRTP_TRAILER_MAX below libsrtp2's trailer");

/* struct rtc_srtp is never defined: a pointer to one is libsrtp2's srtp_t. */

int rtc_srtp_global_init(void)
{
	if (srtp_init() != srtp_err_status_ok) {
		kp_err("libsrtp2 initialisation failed");
		return -EIO;
	}
	if (rtc_srtp_crypto_init() < 0) {
		kp_err("libsrtp2: OpenSSL's AES-128-CM or HMAC-SHA1 failed its self-test or is missing");
		return -EIO;
	}
	return 0;
}

struct rtc_srtp *rtc_srtp_new(const uint8_t key[RTC_SRTP_KEY], const uint8_t salt[RTC_SRTP_SALT], bool outbound)
{
	uint8_t master[RTC_SRTP_KEY + RTC_SRTP_SALT];
	memcpy(master, key, RTC_SRTP_KEY);
	memcpy(master + RTC_SRTP_KEY, salt, RTC_SRTP_SALT);
	srtp_policy_t p;
	memset(&p, 0, sizeof p);
	srtp_crypto_policy_set_rtp_default(&p.rtp);
	srtp_crypto_policy_set_rtcp_default(&p.rtcp);
	p.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound;
	p.key = master;
	p.window_size = 1024;
	p.allow_repeat_tx = 1;
	srtp_t s = NULL;
	if (srtp_create(&s, &p) != srtp_err_status_ok)
		return NULL;
	return (struct rtc_srtp *)s;
}

void rtc_srtp_free(struct rtc_srtp *s)
{
	if (s)
		srtp_dealloc((srtp_t)s);
}

int rtc_srtp_protect(struct rtc_srtp *s, uint8_t *pkt, int *len)
{
	return srtp_protect((srtp_t)s, pkt, len) == srtp_err_status_ok ? 0 : -EIO;
}

int rtc_srtp_protect_rtcp(struct rtc_srtp *s, uint8_t *pkt, int *len)
{
	return srtp_protect_rtcp((srtp_t)s, pkt, len) == srtp_err_status_ok ? 0 : -EIO;
}

int rtc_srtp_unprotect_rtcp(struct rtc_srtp *s, uint8_t *pkt, int *len)
{
	return srtp_unprotect_rtcp((srtp_t)s, pkt, len) == srtp_err_status_ok ? 0 : -EIO;
}
