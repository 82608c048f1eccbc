/* libsrtp2's AES-128-CM and HMAC-SHA1 replaced by OpenSSL's (srtp_crypto.c). */
#ifndef KP_RTC_SRTP_CRYPTO_H
#define KP_RTC_SRTP_CRYPTO_H

/* After srtp_init(): registers both, each after its self-test. 0, or -1 (logged by the
 * caller) when OpenSSL has no HMAC or a self-test failed. */
int rtc_srtp_crypto_init(void);

#endif
