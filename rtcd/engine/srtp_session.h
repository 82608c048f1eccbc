/* One direction of a session's SRTP (SRTP_AES128_CM_SHA1_80, RFC 3711) with libsrtp2,
 * behind a type of our own so that rtcd's core includes no libsrtp2 header. */
#ifndef KP_RTC_SRTP_SESSION_H
#define KP_RTC_SRTP_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "dtls.h"

/* The most SRTP adds to a packet (libsrtp2's SRTP_MAX_TRAILER_LEN: tag and MKI). */
#define RTC_SRTP_TRAILER_MAX 144

struct rtc_srtp;

/* Once per process, before the first rtc_srtp_new: libsrtp2 and OpenSSL's primitives
 * (srtp_crypto.h). 0, or -EIO (logged). */
int rtc_srtp_global_init(void);

/* outbound: what we send (protect); else what we receive (unprotect). NULL on failure. */
struct rtc_srtp *rtc_srtp_new(const uint8_t key[RTC_SRTP_KEY], const uint8_t salt[RTC_SRTP_SALT], bool outbound);
void rtc_srtp_free(struct rtc_srtp *s);

/* In place; *len is the packet's length before and after (at most RTC_SRTP_TRAILER_MAX
 * more on protect). 0, or -EIO. */
int rtc_srtp_protect(struct rtc_srtp *s, uint8_t *pkt, int *len);
int rtc_srtp_protect_rtcp(struct rtc_srtp *s, uint8_t *pkt, int *len);
int rtc_srtp_unprotect_rtcp(struct rtc_srtp *s, uint8_t *pkt, int *len);

#endif
