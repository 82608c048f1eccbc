/* sendmmsg(2) messages for a batch of datagrams, with UDP GSO runs (send_msgs.h). */
#include "send_msgs.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>

unsigned rtc_send_msgs(const struct rtc_ice_pkt *pkts, unsigned n, bool gso, void *peer, socklen_t peer_len,
		       struct mmsghdr *m, struct iovec *iov, char (*cm)[RTC_SEND_CMSG], unsigned *end)
{
	unsigned nm = 0;
	for (unsigned i = 0; i < n; i++) {
		iov[i].iov_base = (void *)pkts[i].data;
		iov[i].iov_len = pkts[i].len;
	}
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		size_t total = pkts[i].len;
		if (gso) {
			while (j < n && pkts[j].len <= pkts[i].len && total + pkts[j].len <= RTC_ICE_GSO_BYTES) {
				total += pkts[j].len;
				j++;
				if (pkts[j - 1].len < pkts[i].len)
					break; /* a shorter one ends the run */
			}
		}
		struct msghdr *h = &m[nm].msg_hdr;
		memset(h, 0, sizeof *h);
		h->msg_name = peer;
		h->msg_namelen = peer_len;
		h->msg_iov = &iov[i];
		h->msg_iovlen = j - i;
		if (j - i > 1) {
			memset(cm[nm], 0, sizeof cm[nm]);
			h->msg_control = cm[nm];
			h->msg_controllen = sizeof cm[nm];
			struct cmsghdr *c = CMSG_FIRSTHDR(h);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			uint16_t seg = (uint16_t)pkts[i].len;
			memcpy(CMSG_DATA(c), &seg, sizeof seg);
		}
		end[nm++] = j;
		i = j;
	}
	return nm;
}
