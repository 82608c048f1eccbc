/* Where rtcd's ICE agents gather, found before confinement (name service and netlink,
 * which the sandbox does not allow later): the STUN server's address and the host
 * candidates' addresses, handed to the session engine when it is loaded. */
#ifndef KP_RTC_ICE_NET_H
#define KP_RTC_ICE_NET_H

#include "ice.h"

struct rtc_ice_config {
	unsigned port_min, port_max; /* 0: any */
	const char *stun;            /* "HOST[:PORT]" or empty */
	const char *addresses;       /* "IP,IP,..." host candidates; empty: every interface */
};

/* Resolves the STUN server and lists the interfaces into *ret (logged). */
void rtc_ice_net_prepare(const struct rtc_ice_config *cfg, struct rtc_ice_net *ret);

#endif
