/* RTCP parsing of browser feedback and sender-report writing (see rtcp.h). */
#include "rtcp.h"

#include <errno.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void add_nack(struct rtcp_feedback *fb, uint16_t seq)
{
	if (fb->nnack < RTCP_MAX_NACK)
		fb->nack[fb->nnack++] = seq;
}

int rtcp_parse(const uint8_t *pkt, size_t len, uint32_t media_ssrc, struct rtcp_feedback *fb, const char **ret_why)
{
	memset(fb, 0, sizeof *fb);
	size_t off = 0;
	if (len < 4) {
		*ret_why = "RTCP packet shorter than its header";
		return -EBADMSG;
	}
	while (off < len) {
		if (len - off < 4) {
			*ret_why = "trailing bytes after the last RTCP packet";
			return -EBADMSG;
		}
		const uint8_t *p = pkt + off;
		if ((p[0] >> 6) != 2) {
			*ret_why = "RTCP version is not 2";
			return -EBADMSG;
		}
		unsigned fmt = p[0] & 0x1f;
		unsigned pt = p[1];
		size_t plen = ((size_t)(p[2] << 8 | p[3]) + 1) * 4;
		if (plen > len - off) {
			*ret_why = "RTCP length beyond the packet";
			return -EBADMSG;
		}
		if (p[0] & 0x20) {
			/* Padding: only legal on the last packet; its count must fit. */
			if (off + plen != len || p[plen - 1] == 0 || p[plen - 1] > plen - 4) {
				*ret_why = "bad RTCP padding";
				return -EBADMSG;
			}
			plen -= p[plen - 1];
		}
		fb->packets++;
		if (pt == 205 && fmt == 1) {
			/* Generic NACK: sender SSRC, media SSRC, then PID/BLP pairs. */
			if (plen < 12) {
				*ret_why = "short generic NACK";
				return -EBADMSG;
			}
			if (rd32(p + 8) == media_ssrc) {
				for (size_t i = 12; i + 4 <= plen; i += 4) {
					uint16_t pid = (uint16_t)(p[i] << 8 | p[i + 1]);
					uint16_t blp = (uint16_t)(p[i + 2] << 8 | p[i + 3]);
					add_nack(fb, pid);
					for (unsigned b = 0; b < 16; b++)
						if (blp & (1u << b))
							add_nack(fb, (uint16_t)(pid + b + 1));
				}
			}
		} else if (pt == 206 && fmt == 1) {
			if (plen < 12) {
				*ret_why = "short PLI";
				return -EBADMSG;
			}
			if (rd32(p + 8) == media_ssrc)
				fb->pli = true;
		} else if (pt == 206 && fmt == 4) {
			/* FIR: FCI entries of SSRC + sequence number + reserved. */
			if (plen < 12) {
				*ret_why = "short FIR";
				return -EBADMSG;
			}
			for (size_t i = 12; i + 8 <= plen; i += 8)
				if (rd32(p + i) == media_ssrc)
					fb->fir = true;
		} else {
			fb->ignored++;
		}
		off += ((size_t)(p[2] << 8 | p[3]) + 1) * 4;
	}
	return 0;
}

int rtcp_write_sr(const struct rtcp_sr *sr, uint8_t *buf, size_t cap)
{
	size_t clen = strlen(sr->cname);
	if (clen > 255)
		return -EINVAL;
	/* SDES chunk: SSRC, CNAME item (2 + clen), END, padded to 4 bytes. */
	size_t chunk = 4 + 2 + clen + 1;
	chunk = (chunk + 3) & ~(size_t)3;
	size_t total = 28 + 4 + chunk;
	if (total > cap)
		return -ENOBUFS;
	memset(buf, 0, total);
	buf[0] = 0x80;
	buf[1] = 200;
	buf[2] = 0;
	buf[3] = 6;
	wr32(buf + 4, sr->ssrc);
	wr32(buf + 8, (uint32_t)(sr->ntp >> 32));
	wr32(buf + 12, (uint32_t)sr->ntp);
	wr32(buf + 16, sr->rtp_ts);
	wr32(buf + 20, sr->packets);
	wr32(buf + 24, sr->octets);
	uint8_t *s = buf + 28;
	s[0] = 0x81;
	s[1] = 202;
	size_t words = (4 + chunk) / 4 - 1;
	s[2] = (uint8_t)(words >> 8);
	s[3] = (uint8_t)words;
	wr32(s + 4, sr->ssrc);
	s[8] = 1;
	s[9] = (uint8_t)clen;
	memcpy(s + 10, sr->cname, clen);
	return (int)total;
}
