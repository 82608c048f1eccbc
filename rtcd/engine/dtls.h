/* DTLS 1.2 server endpoints over the ICE transport, with OpenSSL and memory BIOs: one
 * ECDSA P-256 self-signed certificate per rtcd start (its sha-256 fingerprint goes in
 * every answer), the use_srtp extension (SRTP_AES128_CM_SHA1_80), the browser's
 * certificate checked against the fingerprint of its offer, retransmission timers, and
 * the SRTP keys exported once the handshake completes. */
#ifndef KP_RTC_DTLS_H
#define KP_RTC_DTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTC_DTLS_FP_TEXT 96 /* "AB:CD:..." for sha-256, with NUL */
#define RTC_SRTP_KEY     16
#define RTC_SRTP_SALT    14

/* Creates the certificate and context; fills the fingerprint text. */
int rtc_dtls_global_init(char fingerprint[RTC_DTLS_FP_TEXT]);
void rtc_dtls_global_free(void);

struct rtc_dtls;

/* Sends one datagram over ICE. */
typedef void (*rtc_dtls_send_fn)(void *arg, const uint8_t *data, size_t len);

enum rtc_dtls_state { RTC_DTLS_HANDSHAKE, RTC_DTLS_CONNECTED, RTC_DTLS_FAILED, RTC_DTLS_CLOSED };

/* peer_fp: the digest from the offer's a=fingerprint (alg "sha-256", "sha-1", ...). */
struct rtc_dtls *rtc_dtls_new(const char *peer_fp_alg, const uint8_t *peer_fp, size_t peer_fp_len,
			      rtc_dtls_send_fn send, void *arg);
void rtc_dtls_free(struct rtc_dtls *d);

/* Feeds one received DTLS datagram; returns the state afterwards. */
enum rtc_dtls_state rtc_dtls_input(struct rtc_dtls *d, const uint8_t *data, size_t len);
enum rtc_dtls_state rtc_dtls_state(const struct rtc_dtls *d);
/* Why the handshake failed (a sentence), or NULL. */
const char *rtc_dtls_error(const struct rtc_dtls *d);

/* Milliseconds until the retransmission timer expires, or -1 when none runs. */
long rtc_dtls_timeout_ms(struct rtc_dtls *d);
/* Runs the retransmission timer. */
enum rtc_dtls_state rtc_dtls_on_timeout(struct rtc_dtls *d);

/* After RTC_DTLS_CONNECTED: the keys for what we send (server) and receive (client). */
struct rtc_srtp_keys {
	uint8_t local_key[RTC_SRTP_KEY], local_salt[RTC_SRTP_SALT];
	uint8_t remote_key[RTC_SRTP_KEY], remote_salt[RTC_SRTP_SALT];
};
int rtc_dtls_srtp_keys(struct rtc_dtls *d, struct rtc_srtp_keys *ret);

/* True for a DTLS record by its first byte (RFC 7983: 20..63). */
static inline bool rtc_dtls_is_dtls(const uint8_t *pkt, size_t len)
{
	return len >= 13 && pkt[0] >= 20 && pkt[0] <= 63;
}

#endif
