/* An access unit packetized once for all the sessions that send it: the RTP payloads
 * (RFC 6184 / RFC 7798, common/rtp_h26x.c) and their marker bits, without a header.
 * Each session writes its own header (payload type, sequence number, timestamp, SSRC),
 * protects its copy with its own SRTP context and sends it (session.c). Live fan-out
 * makes one plan per access unit for every viewer of the stream (live.c); other sources
 * make one per session. The buffers are reused from one access unit to the next: no
 * allocation per packet. Loop thread only. */
#ifndef KP_RTCD_RTP_PLAN_H
#define KP_RTCD_RTP_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h26x.h"

struct rtc_plan_pkt {
	uint32_t off; /* in buf */
	uint16_t len; /* payload bytes */
	bool marker;
};

struct rtc_plan {
	bool ready; /* holds the current access unit (or its error) */
	int err;    /* 0, or rtp_packetize's negative errno, or -ENOMEM */
	uint8_t *buf;
	size_t len, cap;
	struct rtc_plan_pkt *pkts;
	unsigned n, cap_pkts;
};

/* Forgets the access unit held, keeping the buffers. */
void rtc_plan_reset(struct rtc_plan *p);
/* Packetizes the Annex-B access unit au into p for packets of at most mtu bytes (header
 * included) unless p is already ready: 0 or p->err. */
int rtc_plan_make(struct rtc_plan *p, enum kp_codec codec, const uint8_t *au, size_t len, size_t mtu);
void rtc_plan_free(struct rtc_plan *p);

#endif
