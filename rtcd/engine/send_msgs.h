/* The messages of one sendmmsg(2) for a batch of a session's datagrams (ice.c): one
 * message per datagram, or with gso one per run of equal-sized datagrams (the last of a
 * run may be shorter: udp(7), UDP_SEGMENT) of at most RTC_ICE_GSO_BYTES. Pure code over
 * the caller's arrays, so that the runs and their ceilings have a unit test. */
#ifndef KP_RTC_SEND_MSGS_H
#define KP_RTC_SEND_MSGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ice.h"

#define RTC_SEND_CMSG CMSG_SPACE(sizeof(uint16_t))

/* Fills m (and iov, cm) for pkts[0..n), n at most RTC_ICE_BATCH_MAX, addressed to peer;
 * end[k] is the number of datagrams in messages 0..k. Returns the number of messages. */
unsigned rtc_send_msgs(const struct rtc_ice_pkt *pkts, unsigned n, bool gso, void *peer, socklen_t peer_len,
		       struct mmsghdr *m, struct iovec *iov, char (*cm)[RTC_SEND_CMSG], unsigned *end);

#endif
