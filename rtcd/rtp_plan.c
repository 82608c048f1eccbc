/* Packetizing an access unit once into reusable buffers (rtp_plan.h). */
#include "rtp_plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rtp_h26x.h"

/* The common packetizer writes whole packets into its 64 KiB buffer; one for the
 * process, as everything here runs on the loop thread. */
static struct rtp_packetizer pk;

void rtc_plan_reset(struct rtc_plan *p)
{
	p->ready = false;
	p->err = 0;
	p->len = 0;
	p->n = 0;
}

static int grow(void **ptr, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : first;
	while (c < need)
		c *= 2;
	void *q = realloc(*ptr, c * elem);
	if (!q)
		return -ENOMEM;
	*ptr = q;
	*cap = c;
	return 0;
}

static int add(void *arg, const uint8_t *pkt, size_t len)
{
	struct rtc_plan *p = arg;
	size_t payload = len - RTP_HEADER_SIZE;
	size_t cap_pkts = p->cap_pkts;
	if (grow((void **)&p->buf, &p->cap, p->len + payload, 1, 64 * 1024) < 0 ||
	    grow((void **)&p->pkts, &cap_pkts, (size_t)p->n + 1, sizeof *p->pkts, 64) < 0)
		return -ENOMEM;
	p->cap_pkts = (unsigned)cap_pkts;
	memcpy(p->buf + p->len, pkt + RTP_HEADER_SIZE, payload);
	p->pkts[p->n++] =
	    (struct rtc_plan_pkt){.off = (uint32_t)p->len, .len = (uint16_t)payload, .marker = pkt[1] & 0x80};
	p->len += payload;
	return 0;
}

int rtc_plan_make(struct rtc_plan *p, enum kp_codec codec, const uint8_t *au, size_t len, size_t mtu)
{
	if (p->ready)
		return p->err;
	p->ready = true;
	p->len = 0;
	p->n = 0;
	p->err = rtp_packetizer_init(&pk, codec, 0, 0, 0, mtu);
	if (p->err == 0)
		p->err = rtp_packetize(&pk, au, len, 0, add, p);
	return p->err;
}

void rtc_plan_free(struct rtc_plan *p)
{
	free(p->buf);
	free(p->pkts);
	*p = (struct rtc_plan){0};
}
