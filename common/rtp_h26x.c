/* RTP for H.264 (RFC 6184, packetization-mode 1) and H.265 (RFC 7798): the fixed header,
 * the packetizer and the depacketizer (NAL units through common/h26x.c). Pure code, no
 * I/O, no logging. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rtp_h26x.h"

#define H264_STAP_A 24
#define H264_FU_A   28
#define H265_AP     48
#define H265_FU     49
#define H265_PACI   50
/* A packet this far behind the expected sequence number is late; further behind, the
 * sender restarted its numbering and we resynchronise. */
#define RTP_REORDER_WINDOW 256

enum { WHY_GAP, WHY_MALFORMED, WHY_OVERSIZE, WHY_NO_MARKER };

static const uint8_t start_code[4] = {0, 0, 0, 1};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int rtp_header_parse(const uint8_t *pkt, size_t len, struct rtp_header *ret, const char **ret_reason)
{
	struct rtp_header h = {0};
	if (len < RTP_HEADER_SIZE) {
		*ret_reason = "RTP packet shorter than its 12-byte header";
		return -EBADMSG;
	}
	if (pkt[0] >> 6 != 2) {
		*ret_reason = "RTP version is not 2";
		return -EPROTONOSUPPORT;
	}
	h.marker = pkt[1] & 0x80;
	h.payload_type = pkt[1] & 0x7f;
	h.seq = be16(pkt + 2);
	h.timestamp = be32(pkt + 4);
	h.ssrc = be32(pkt + 8);
	h.csrc_count = pkt[0] & 0x0f;
	size_t off = RTP_HEADER_SIZE + 4u * h.csrc_count;
	if (off > len) {
		*ret_reason = "RTP CSRC list truncated";
		return -EBADMSG;
	}
	for (unsigned i = 0; i < h.csrc_count; i++)
		h.csrc[i] = be32(pkt + RTP_HEADER_SIZE + 4 * i);
	if (pkt[0] & 0x10) {
		if (len - off < 4) {
			*ret_reason = "RTP extension header truncated";
			return -EBADMSG;
		}
		h.extension = true;
		h.ext_profile = be16(pkt + off);
		h.ext_len = 4u * be16(pkt + off + 2);
		off += 4;
		if (h.ext_len > len - off) {
			*ret_reason = "RTP extension longer than the packet";
			return -EBADMSG;
		}
		h.ext_data = pkt + off;
		off += h.ext_len;
	}
	size_t end = len;
	if (pkt[0] & 0x20) {
		h.padding_len = pkt[len - 1];
		if (h.padding_len == 0) {
			*ret_reason = "RTP padding bit set with a zero padding length";
			return -EBADMSG;
		}
		if (h.padding_len > len - off) {
			*ret_reason = "RTP padding longer than the payload";
			return -EBADMSG;
		}
		end -= h.padding_len;
	}
	h.payload = pkt + off;
	h.payload_len = end - off;
	*ret = h;
	return 0;
}

int rtp_header_write(const struct rtp_header *h, uint8_t *buf, size_t cap, size_t *ret_len)
{
	if (h->csrc_count > RTP_MAX_CSRC || h->payload_type > 127)
		return -EINVAL;
	size_t n = RTP_HEADER_SIZE + 4u * h->csrc_count;
	if (cap < n)
		return -ENOBUFS;
	buf[0] = (uint8_t)(0x80 | h->csrc_count);
	buf[1] = (uint8_t)((h->marker ? 0x80 : 0) | h->payload_type);
	put_be16(buf + 2, h->seq);
	put_be32(buf + 4, h->timestamp);
	put_be32(buf + 8, h->ssrc);
	for (unsigned i = 0; i < h->csrc_count; i++)
		put_be32(buf + RTP_HEADER_SIZE + 4 * i, h->csrc[i]);
	*ret_len = n;
	return 0;
}

/* ---- packetizer ---- */

int rtp_packetizer_init(struct rtp_packetizer *p, enum kp_codec codec, uint8_t payload_type, uint32_t ssrc,
			uint16_t first_seq, size_t mtu)
{
	if ((codec != KP_CODEC_H264 && codec != KP_CODEC_H265) || payload_type > 127 || mtu < RTP_MIN_MTU ||
	    mtu > RTP_MAX_PACKET)
		return -EINVAL;
	p->codec = codec;
	p->payload_type = payload_type;
	p->ssrc = ssrc;
	p->seq = first_seq;
	p->mtu = mtu;
	return 0;
}

/* Writes the RTP header into p->pkt and emits payload_len bytes already placed after it. */
static int send_packet(struct rtp_packetizer *p, size_t payload_len, uint32_t ts, bool marker, rtp_emit_fn emit,
		       void *arg)
{
	struct rtp_header h = {
	    .marker = marker, .payload_type = p->payload_type, .seq = p->seq, .timestamp = ts, .ssrc = p->ssrc};
	size_t n;
	int r = rtp_header_write(&h, p->pkt, sizeof p->pkt, &n);
	if (r < 0)
		return r;
	p->seq++;
	return emit(arg, p->pkt, n + payload_len);
}

static int send_nal(struct rtp_packetizer *p, const uint8_t *nal, size_t n, uint32_t ts, bool last, rtp_emit_fn emit,
		    void *arg)
{
	uint8_t *out = p->pkt + RTP_HEADER_SIZE;
	if (RTP_HEADER_SIZE + n <= p->mtu) {
		memcpy(out, nal, n);
		return send_packet(p, n, ts, last, emit, arg);
	}
	size_t hs = h26x_nal_header_size(p->codec);
	size_t fu_hs = hs + 1; /* payload header + FU header */
	size_t room = p->mtu - RTP_HEADER_SIZE - fu_hs;
	unsigned type = h26x_nal_type(p->codec, nal);
	if (p->codec == KP_CODEC_H264) {
		out[0] = (uint8_t)((nal[0] & 0xe0) | H264_FU_A);
	} else {
		out[0] = (uint8_t)((nal[0] & 0x81) | H265_FU << 1);
		out[1] = nal[1];
	}
	const uint8_t *data = nal + hs;
	size_t left = n - hs;
	bool first = true;
	while (left) {
		size_t chunk = left < room ? left : room;
		bool end = chunk == left;
		out[hs] = (uint8_t)((first ? 0x80 : 0) | (end ? 0x40 : 0) | type);
		memcpy(out + fu_hs, data, chunk);
		int r = send_packet(p, fu_hs + chunk, ts, last && end, emit, arg);
		if (r)
			return r;
		data += chunk;
		left -= chunk;
		first = false;
	}
	return 0;
}

/* Aggregation packet payload header from the NALs' headers (F: any set, H.264 NRI: the
 * highest, H.265 layer id and temporal id: the lowest). */
struct agg {
	uint8_t f, nri, tid;
	unsigned lid;
	size_t len; /* bytes written after the RTP header */
	unsigned count;
};

static void agg_add(struct rtp_packetizer *p, struct agg *a, const uint8_t *nal, size_t n)
{
	uint8_t *out = p->pkt + RTP_HEADER_SIZE;
	a->f |= nal[0] & 0x80;
	if (p->codec == KP_CODEC_H264) {
		if ((nal[0] & 0x60) > a->nri)
			a->nri = nal[0] & 0x60;
	} else {
		unsigned lid = (nal[0] & 1u) << 5 | nal[1] >> 3;
		if (!a->count || lid < a->lid)
			a->lid = lid;
		if (!a->count || (nal[1] & 7) < a->tid)
			a->tid = nal[1] & 7;
	}
	put_be16(out + a->len, (uint16_t)n);
	memcpy(out + a->len + 2, nal, n);
	a->len += 2 + n;
	a->count++;
}

static void agg_finish(struct rtp_packetizer *p, struct agg *a)
{
	uint8_t *out = p->pkt + RTP_HEADER_SIZE;
	if (p->codec == KP_CODEC_H264) {
		out[0] = (uint8_t)(a->f | a->nri | H264_STAP_A);
	} else {
		out[0] = (uint8_t)(a->f | H265_AP << 1 | a->lid >> 5);
		out[1] = (uint8_t)((a->lid & 0x1f) << 3 | a->tid);
	}
}

int rtp_packetize(struct rtp_packetizer *p, const uint8_t *au, size_t len, uint32_t ts, rtp_emit_fn emit, void *arg)
{
	size_t hs = h26x_nal_header_size(p->codec);
	size_t off = 0, n;
	const uint8_t *nal;
	if (!h26x_annexb_next(au, len, &off, &nal, &n))
		return -ENODATA;
	for (;;) {
		if (n < hs)
			return -EINVAL;
		size_t next_off = off, next_n;
		const uint8_t *next;
		bool more = h26x_annexb_next(au, len, &next_off, &next, &next_n);
		bool ps = h26x_is_param_set(p->codec, h26x_nal_type(p->codec, nal));
		bool fits2 = more && next_n >= hs && RTP_HEADER_SIZE + hs + 4 + n + next_n <= p->mtu;
		if (ps && fits2 && h26x_is_param_set(p->codec, h26x_nal_type(p->codec, next))) {
			struct agg a = {.len = hs};
			agg_add(p, &a, nal, n);
			do {
				agg_add(p, &a, next, next_n);
				off = next_off;
				more = h26x_annexb_next(au, len, &next_off, &next, &next_n);
			} while (more && next_n >= hs && h26x_is_param_set(p->codec, h26x_nal_type(p->codec, next)) &&
				 RTP_HEADER_SIZE + a.len + 2 + next_n <= p->mtu);
			agg_finish(p, &a);
			int r = send_packet(p, a.len, ts, !more, emit, arg);
			if (r)
				return r;
		} else {
			int r = send_nal(p, nal, n, ts, !more, emit, arg);
			if (r)
				return r;
		}
		if (!more)
			return 0;
		nal = next;
		n = next_n;
		off = next_off;
	}
}

/* ---- depacketizer ---- */

int rtp_depack_init(struct rtp_depack *d, enum kp_codec codec, size_t max_au)
{
	if ((codec != KP_CODEC_H264 && codec != KP_CODEC_H265) || max_au < 64 || max_au > RTP_MAX_AU)
		return -EINVAL;
	*d = (struct rtp_depack){.codec = codec, .max_au = max_au};
	return 0;
}

void rtp_depack_free(struct rtp_depack *d)
{
	free(d->buf);
	free(d->out);
	d->buf = d->out = NULL;
	d->len = d->cap = d->out_cap = 0;
}

static int reserve(struct rtp_depack *d, size_t more, const char **ret_reason)
{
	if (more > d->max_au - d->len) {
		*ret_reason = "access unit exceeds the reassembly ceiling";
		return -EMSGSIZE;
	}
	size_t need = d->len + more;
	if (need <= d->cap)
		return 0;
	size_t cap = d->cap ? d->cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > d->max_au)
		cap = d->max_au;
	uint8_t *b = realloc(d->buf, cap);
	if (!b) {
		*ret_reason = "out of memory for the access unit";
		return -ENOMEM;
	}
	d->buf = b;
	d->cap = cap;
	return 0;
}

static int append(struct rtp_depack *d, const uint8_t *data, size_t n, const char **ret_reason)
{
	int r = reserve(d, n, ret_reason);
	if (r < 0)
		return r;
	memcpy(d->buf + d->len, data, n);
	d->len += n;
	return 0;
}

/* Starts a NAL unit in the output: start code plus the NAL header. first: the byte after
 * the header (for a slice: H.264's first_mb_in_slice is 0 when its top bit is set, the
 * ue(v) "1"; H.265's first_slice_segment_in_pic_flag is that bit). */
static int start_nal(struct rtp_depack *d, const uint8_t *hdr, uint8_t first, const char **ret_reason)
{
	size_t hs = h26x_nal_header_size(d->codec);
	int r = reserve(d, sizeof start_code + hs, ret_reason);
	if (r < 0)
		return r;
	append(d, start_code, sizeof start_code, ret_reason);
	append(d, hdr, hs, ret_reason);
	unsigned type = h26x_nal_type(d->codec, hdr);
	if (h26x_is_keyframe(d->codec, type))
		d->keyframe = true;
	if (h26x_is_vcl(d->codec, type)) {
		if (!d->has_slice)
			d->later_slice = !(first & 0x80);
		d->has_slice = true;
	}
	return 0;
}

static int add_nal(struct rtp_depack *d, const uint8_t *nal, size_t n, const char **ret_reason)
{
	size_t hs = h26x_nal_header_size(d->codec);
	if (n < hs) {
		*ret_reason = "NAL unit shorter than its header";
		return -EBADMSG;
	}
	if (nal[0] & 0x80) {
		*ret_reason = "NAL unit with forbidden_zero_bit set";
		return -EBADMSG;
	}
	unsigned type = h26x_nal_type(d->codec, nal);
	if (d->codec == KP_CODEC_H264 ? (type == 0 || type >= H264_STAP_A) : type >= H265_AP) {
		*ret_reason = "NAL unit of a reserved or packetization type";
		return -EBADMSG;
	}
	int r = reserve(d, sizeof start_code + n, ret_reason);
	if (r < 0)
		return r;
	r = start_nal(d, nal, n > hs ? nal[hs] : 0x80, ret_reason);
	if (r < 0)
		return r;
	return append(d, nal + hs, n - hs, ret_reason);
}

static int add_aggregate(struct rtp_depack *d, const uint8_t *p, size_t plen, size_t hs, const char **ret_reason)
{
	size_t off = hs;
	if (plen - off < 2) {
		*ret_reason = "empty aggregation packet";
		return -EBADMSG;
	}
	while (off < plen) {
		if (plen - off < 2) {
			*ret_reason = "aggregation packet: NAL size truncated";
			return -EBADMSG;
		}
		size_t sz = be16(p + off);
		off += 2;
		if (sz == 0) {
			*ret_reason = "aggregation packet: zero-size NAL unit";
			return -EBADMSG;
		}
		if (sz > plen - off) {
			*ret_reason = "aggregation packet: NAL unit overruns the packet";
			return -EBADMSG;
		}
		int r = add_nal(d, p + off, sz, ret_reason);
		if (r < 0)
			return r;
		off += sz;
	}
	return 0;
}

/* fu: the FU header byte; hdr: the rebuilt NAL header; data after the FU header. */
static int add_fragment(struct rtp_depack *d, uint8_t fu, const uint8_t *hdr, unsigned type, const uint8_t *data,
			size_t n, const char **ret_reason)
{
	bool s = fu & 0x80, e = fu & 0x40; /* both: a whole NAL unit in one FU (retina 8ff7a0f) */
	if (n == 0) {
		*ret_reason = "fragmentation unit without data";
		return -EBADMSG;
	}
	if (s) {
		if (d->in_fu) {
			*ret_reason = "fragmentation unit start inside a fragmented NAL unit";
			return -EBADMSG;
		}
		if (hdr[0] & 0x80) {
			*ret_reason = "NAL unit with forbidden_zero_bit set";
			return -EBADMSG;
		}
		int r = start_nal(d, hdr, data[0], ret_reason);
		if (r < 0)
			return r;
		d->in_fu = true;
		d->fu_type = type;
	} else {
		if (!d->in_fu) {
			*ret_reason = "fragmentation unit continues a NAL unit that never started";
			return -EBADMSG;
		}
		if (type != d->fu_type) {
			*ret_reason = "fragmentation unit type changed inside a NAL unit";
			return -EBADMSG;
		}
	}
	int r = append(d, data, n, ret_reason);
	if (r < 0)
		return r;
	if (e)
		d->in_fu = false;
	return 0;
}

static int add_payload_h264(struct rtp_depack *d, const uint8_t *p, size_t n, const char **ret_reason)
{
	unsigned type = h26x_nal_type(KP_CODEC_H264, p); /* the payload header has the NAL header's form */
	if (type >= 1 && type <= 23) {
		if (d->in_fu) {
			*ret_reason = "NAL unit interrupts a fragmented NAL unit";
			return -EBADMSG;
		}
		return add_nal(d, p, n, ret_reason);
	}
	if (type == H264_STAP_A) {
		if (d->in_fu) {
			*ret_reason = "NAL unit interrupts a fragmented NAL unit";
			return -EBADMSG;
		}
		return add_aggregate(d, p, n, 1, ret_reason);
	}
	if (type == H264_FU_A) {
		if (n < 2) {
			*ret_reason = "FU-A shorter than its headers";
			return -EBADMSG;
		}
		uint8_t hdr = (uint8_t)((p[0] & 0xe0) | (p[1] & 0x1f));
		unsigned ntype = p[1] & 0x1f;
		if (ntype == 0 || ntype >= H264_STAP_A) {
			*ret_reason = "FU-A carries a reserved or aggregation NAL type";
			return -EBADMSG;
		}
		return add_fragment(d, p[1], &hdr, ntype, p + 2, n - 2, ret_reason);
	}
	*ret_reason = type == 0 || type >= 30 ? "reserved H.264 NAL unit type"
					      : "STAP-B, MTAP and FU-B need packetization-mode 2";
	return -EPROTONOSUPPORT;
}

static int add_payload_h265(struct rtp_depack *d, const uint8_t *p, size_t n, const char **ret_reason)
{
	if (n < 2) {
		*ret_reason = "payload shorter than the H.265 NAL header";
		return -EBADMSG;
	}
	if ((p[1] & 7) == 0) {
		*ret_reason = "H.265 payload header with TID 0";
		return -EBADMSG;
	}
	unsigned type = h26x_nal_type(KP_CODEC_H265, p);
	if (type < H265_AP) {
		if (d->in_fu) {
			*ret_reason = "NAL unit interrupts a fragmented NAL unit";
			return -EBADMSG;
		}
		return add_nal(d, p, n, ret_reason);
	}
	if (type == H265_AP) {
		if (d->in_fu) {
			*ret_reason = "NAL unit interrupts a fragmented NAL unit";
			return -EBADMSG;
		}
		return add_aggregate(d, p, n, 2, ret_reason);
	}
	if (type == H265_FU) {
		if (n < 3) {
			*ret_reason = "H.265 FU shorter than its headers";
			return -EBADMSG;
		}
		unsigned ntype = p[2] & 0x3f;
		if (ntype >= H265_AP) {
			*ret_reason = "H.265 FU carries an aggregation or fragmentation type";
			return -EBADMSG;
		}
		uint8_t hdr[2] = {(uint8_t)((p[0] & 0x81) | ntype << 1), p[1]};
		return add_fragment(d, p[2], hdr, ntype, p + 3, n - 3, ret_reason);
	}
	*ret_reason = type == H265_PACI ? "H.265 PACI packets are not supported" : "reserved H.265 payload type";
	return -EPROTONOSUPPORT;
}

static void mark_broken(struct rtp_depack *d, unsigned why)
{
	if (!d->broken) {
		d->broken = true;
		d->broken_why = why;
	}
}

/* Ends the access unit in progress without output, counting it once. */
static void drop_au(struct rtp_depack *d)
{
	switch (d->broken_why) {
	case WHY_GAP:
		d->stats.dropped_gap++;
		break;
	case WHY_MALFORMED:
		d->stats.dropped_malformed++;
		break;
	case WHY_OVERSIZE:
		d->stats.dropped_oversize++;
		break;
	default:
		d->stats.dropped_no_marker++;
		break;
	}
	d->in_au = false;
}

int rtp_depack_push(struct rtp_depack *d, const uint8_t *pkt, size_t len, struct rtp_au *ret_au,
		    const char **ret_reason)
{
	struct rtp_header h;
	int r = rtp_header_parse(pkt, len, &h, ret_reason);
	if (r < 0)
		return r; /* its sequence number is unknown: the gap shows on the next packet */
	d->stats.packets++;
	bool gap = false;
	if (d->have_seq) {
		int diff = (int16_t)(h.seq - d->next_seq);
		if (diff < 0 && diff > -RTP_REORDER_WINDOW) {
			d->stats.late++;
			return 0;
		}
		gap = diff != 0;
	}
	d->have_seq = true;
	d->next_seq = (uint16_t)(h.seq + 1);

	bool done = false; /* the access unit in progress ended at this packet's timestamp */
	if (d->in_au && h.timestamp != d->ts) {
		if (!d->broken && !d->has_slice && !d->in_fu) {
			d->ts = h.timestamp; /* parameter sets, SEI: they go on into this one */
		} else if (!d->broken && !d->in_fu && (d->end_on_ts || !d->seen_marker)) {
			d->end_on_ts = true; /* a marker was never set */
			done = true;
			uint8_t *b = d->buf;
			size_t c = d->cap;
			d->buf = d->out;
			d->cap = d->out_cap;
			d->out = b;
			d->out_cap = c;
			*ret_au =
			    (struct rtp_au){.data = b, .len = d->len, .timestamp = d->ts, .keyframe = d->keyframe};
			d->stats.aus++;
			d->have_last = true;
			d->last_ts = d->ts;
			d->in_au = false;
		} else {
			mark_broken(d, WHY_NO_MARKER);
			drop_au(d);
		}
	}
	if (!d->in_au) {
		d->in_au = true;
		d->ts = h.timestamp;
		d->len = 0;
		d->broken = false;
		d->in_fu = false;
		d->keyframe = false;
		d->has_slice = false;
		d->later_slice = false;
	}
	if (gap)
		mark_broken(d, WHY_GAP);

	int err = 0;
	if (!d->broken) {
		if (h.payload_len == 0) {
			*ret_reason = "RTP packet without payload";
			err = -EBADMSG;
		} else if (d->codec == KP_CODEC_H264) {
			err = add_payload_h264(d, h.payload, h.payload_len, ret_reason);
		} else {
			err = add_payload_h265(d, h.payload, h.payload_len, ret_reason);
		}
		if (err < 0)
			mark_broken(d, err == -EMSGSIZE ? WHY_OVERSIZE : WHY_MALFORMED);
	}
	if (!d->broken && !d->end_on_ts && d->has_slice && d->later_slice && d->have_last && d->ts == d->last_ts) {
		/* the rest of the picture the marker of the last packet cut: a marker on every
		 * slice (OpenIPC Majestic). That picture is lost; the next end at timestamps. */
		d->end_on_ts = true;
		mark_broken(d, WHY_NO_MARKER);
	}
	if (done)
		return 1; /* a malformed packet here broke only the new access unit (counted when dropped) */
	if (!h.marker || d->end_on_ts || (!d->broken && !d->has_slice))
		return err;
	d->seen_marker = true;
	if (!d->broken && d->in_fu) {
		*ret_reason = "marker bit inside a fragmented NAL unit";
		err = -EBADMSG;
		mark_broken(d, WHY_MALFORMED);
	}
	if (d->broken || d->len == 0) {
		if (d->broken)
			drop_au(d);
		d->in_au = false;
		return err;
	}
	d->in_au = false;
	d->stats.aus++;
	d->have_last = true;
	d->last_ts = d->ts;
	*ret_au = (struct rtp_au){.data = d->buf, .len = d->len, .timestamp = d->ts, .keyframe = d->keyframe};
	return 1;
}
