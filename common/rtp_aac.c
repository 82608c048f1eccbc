/* RFC 3640 AAC depacketization (see rtp_aac.h). */
#include "rtp_aac.h"

#include <errno.h>
#include <string.h>

int rtp_aac_init(struct rtp_aac *a, unsigned size_len, unsigned index_len, unsigned delta_len)
{
	if (size_len < 1 || size_len > 16 || index_len > 8 || delta_len > 8)
		return -EINVAL;
	memset(a, 0, sizeof *a);
	a->size_len = size_len;
	a->index_len = index_len;
	a->delta_len = delta_len;
	return 0;
}

void rtp_aac_reset(struct rtp_aac *a)
{
	a->in_frag = false;
	a->frag_len = 0;
}

/* n bits (n <= 16) at bit offset *pos of p. */
static unsigned bits(const uint8_t *p, size_t *pos, unsigned n)
{
	unsigned v = 0;
	for (unsigned i = 0; i < n; i++, (*pos)++)
		v = v << 1 | (p[*pos / 8] >> (7 - *pos % 8) & 1);
	return v;
}

int rtp_aac_push(struct rtp_aac *a, const uint8_t *payload, size_t len, bool marker, uint32_t ts, rtp_aac_fn fn,
		 void *arg, const char **ret_reason)
{
	if (len < 2) {
		*ret_reason = "AAC payload shorter than its AU-headers-length";
		rtp_aac_reset(a);
		return -EBADMSG;
	}
	size_t hbits = (size_t)payload[0] << 8 | payload[1];
	size_t hbytes = (hbits + 7) / 8;
	if (hbytes > len - 2) {
		*ret_reason = "AAC AU-headers longer than the payload";
		rtp_aac_reset(a);
		return -EBADMSG;
	}
	const uint8_t *h = payload + 2;
	const uint8_t *data = h + hbytes;
	size_t data_len = len - 2 - hbytes;
	unsigned sizes[RTP_AAC_MAX_AUS], n = 0;
	size_t pos = 0;
	while (hbits - pos >= a->size_len + (n ? a->delta_len : a->index_len) && hbits > pos) {
		if (n == RTP_AAC_MAX_AUS) {
			*ret_reason = "more AAC access units in one packet than allowed";
			rtp_aac_reset(a);
			return -EMSGSIZE;
		}
		sizes[n++] = bits(h, &pos, a->size_len);
		bits(h, &pos, n == 1 ? a->index_len : a->delta_len);
	}
	if (n == 0) {
		*ret_reason = "AAC packet without an AU header";
		rtp_aac_reset(a);
		return -EBADMSG;
	}
	if (a->in_frag && (n != 1 || a->frag_ts != ts || a->frag_size != sizes[0]))
		rtp_aac_reset(a); /* the fragmented one lost its tail: this packet starts afresh */
	if (n == 1 && (a->in_frag || sizes[0] > data_len)) {
		/* A fragment (3.2.3): one AU header, its size the whole AU's. */
		if (!a->in_frag) {
			if (sizes[0] > sizeof a->frag) {
				*ret_reason = "AAC access unit larger than allowed";
				return -EMSGSIZE;
			}
			a->in_frag = true;
			a->frag_ts = ts;
			a->frag_size = sizes[0];
			a->frag_len = 0;
		}
		if (data_len > a->frag_size - a->frag_len) {
			*ret_reason = "AAC fragments longer than their access unit";
			rtp_aac_reset(a);
			return -EBADMSG;
		}
		memcpy(a->frag + a->frag_len, data, data_len);
		a->frag_len += data_len;
		if (!marker)
			return 0;
		bool whole = a->frag_len == a->frag_size;
		rtp_aac_reset(a);
		if (!whole) {
			*ret_reason = "AAC fragments shorter than their access unit at the marker";
			return -EBADMSG;
		}
		fn(arg, a->frag, a->frag_size, 0, 1);
		return 0;
	}
	size_t off = 0;
	for (unsigned k = 0; k < n; k++) {
		if (sizes[k] > data_len - off) {
			*ret_reason = "AAC access unit sizes overrun the payload";
			return -EBADMSG;
		}
		if (sizes[k] > KP_AAC_FRAME_MAX) {
			*ret_reason = "AAC access unit larger than allowed";
			return -EMSGSIZE;
		}
		if (sizes[k])
			fn(arg, data + off, sizes[k], k, n);
		off += sizes[k];
	}
	return 0;
}
