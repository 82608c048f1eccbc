/* RTCP (RFC 3550, RFC 4585, RFC 5104) as rtcd needs it: a bounded parser of the
 * browser's compound packets that extracts what a sender acts on (generic NACK, PLI,
 * FIR) and skips everything else (receiver reports, REMB, transport-cc, SDES, BYE), and
 * the writer of sender reports. */
#ifndef KP_RTC_RTCP_H
#define KP_RTC_RTCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTCP_MAX_NACK 256 /* lost sequence numbers kept per compound packet */

struct rtcp_feedback {
	bool pli;
	bool fir;
	uint16_t nack[RTCP_MAX_NACK];
	unsigned nnack;
	unsigned packets; /* RTCP packets in the compound */
	unsigned ignored; /* packets of other types (RR, REMB, TWCC, SDES, ...) */
};

/* Parses a compound RTCP packet (decrypted) and collects feedback about media_ssrc.
 * Returns 0, or -EBADMSG with *ret_why set (the packets before the bad one count). */
int rtcp_parse(const uint8_t *pkt, size_t len, uint32_t media_ssrc, struct rtcp_feedback *fb, const char **ret_why);

/* True when an RTP/RTCP packet (first two bytes) is RTCP (payload type 192..223). */
static inline bool rtcp_is_rtcp(const uint8_t *pkt, size_t len)
{
	return len >= 2 && (pkt[1] & 0x7f) >= 64 && (pkt[1] & 0x7f) <= 95;
}

struct rtcp_sr {
	uint32_t ssrc;
	uint64_t ntp; /* NTP timestamp, 32.32 */
	uint32_t rtp_ts;
	uint32_t packets;
	uint32_t octets;
	const char *cname;
};

/* Writes SR + SDES(CNAME); returns the length or -ENOBUFS. */
int rtcp_write_sr(const struct rtcp_sr *sr, uint8_t *buf, size_t cap);

#endif
