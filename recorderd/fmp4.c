/* Fragmented MP4 boxes (ISO/IEC 14496-12, 14496-15) for one video track: the writer of
 * init segments and fragment headers, and the reader recovery uses (see fmp4.h). */
#include "fmp4.h"

#include <errno.h>
#include <string.h>

#define NTP_UNIX_OFFSET 2208988800ull

/* Sample flags (14496-12 8.8.3.1): sync samples depend on nothing, others on earlier ones. */
#define FLAGS_SYNC     0x02000000u
#define FLAGS_NON_SYNC 0x01010000u

#define TFHD_DEFAULT_FLAGS 0x000020u
#define TFHD_BASE_IS_MOOF  0x020000u
#define TRUN_DATA_OFFSET   0x000001u
#define TRUN_FIRST_FLAGS   0x000004u
#define TRUN_DURATION      0x000100u
#define TRUN_SIZE          0x000200u

struct bw {
	uint8_t *p;
	size_t len, cap;
	size_t stack[8];
	unsigned depth;
	int overflow;
};

static void u8(struct bw *b, uint32_t v)
{
	if (b->len < b->cap)
		b->p[b->len] = (uint8_t)v;
	else
		b->overflow = 1;
	b->len++;
}

static void u16(struct bw *b, uint32_t v)
{
	u8(b, v >> 8);
	u8(b, v);
}

static void u32(struct bw *b, uint32_t v)
{
	u16(b, v >> 16);
	u16(b, v);
}

static void u64(struct bw *b, uint64_t v)
{
	u32(b, (uint32_t)(v >> 32));
	u32(b, (uint32_t)v);
}

static void zeros(struct bw *b, size_t n)
{
	while (n--)
		u8(b, 0);
}

static void bytes(struct bw *b, const void *d, size_t n)
{
	const uint8_t *s = d;
	for (size_t i = 0; i < n; i++)
		u8(b, s[i]);
}

static void box(struct bw *b, const char type[4])
{
	b->stack[b->depth++] = b->len;
	u32(b, 0);
	bytes(b, type, 4);
}

static void full_box(struct bw *b, const char type[4], uint8_t version, uint32_t flags)
{
	box(b, type);
	u32(b, (uint32_t)version << 24 | flags);
}

static void end(struct bw *b)
{
	size_t at = b->stack[--b->depth];
	uint32_t size = (uint32_t)(b->len - at);
	if (at + 4 <= b->cap) {
		b->p[at] = (uint8_t)(size >> 24);
		b->p[at + 1] = (uint8_t)(size >> 16);
		b->p[at + 2] = (uint8_t)(size >> 8);
		b->p[at + 3] = (uint8_t)size;
	}
}

static void matrix(struct bw *b)
{
	static const uint32_t unity[9] = {0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000};
	for (int i = 0; i < 9; i++)
		u32(b, unity[i]);
}

static void sample_entry(struct bw *b, const struct rec_track *t)
{
	box(b, t->codec == KP_CODEC_H265 ? "hev1" : "avc1");
	zeros(b, 6);
	u16(b, 1); /* data_reference_index */
	zeros(b, 16);
	u16(b, t->width);
	u16(b, t->height);
	u32(b, 0x00480000); /* 72 dpi */
	u32(b, 0x00480000);
	u32(b, 0);
	u16(b, 1); /* frame_count */
	zeros(b, 32);
	u16(b, 0x0018);
	u16(b, 0xffff);
	box(b, t->codec == KP_CODEC_H265 ? "hvcC" : "avcC");
	bytes(b, t->config, t->config_len);
	end(b);
	end(b);
}

int rec_fmp4_init(const struct rec_track *t, uint8_t *out, size_t cap, size_t *ret_len)
{
	struct bw b = {.p = out, .cap = cap};
	box(&b, "ftyp");
	bytes(&b, "isom", 4);
	u32(&b, 0x200);
	bytes(&b, "isomiso6mp41", 12);
	bytes(&b, t->codec == KP_CODEC_H265 ? "hev1" : "avc1", 4);
	end(&b);
	box(&b, "moov");
	full_box(&b, "mvhd", 0, 0);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 1000);
	u32(&b, 0); /* duration: the fragments say */
	u32(&b, 0x00010000);
	u16(&b, 0x0100);
	zeros(&b, 10);
	matrix(&b);
	zeros(&b, 24);
	u32(&b, 2); /* next_track_ID */
	end(&b);
	box(&b, "trak");
	full_box(&b, "tkhd", 0, 3);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 1); /* track_ID */
	u32(&b, 0);
	u32(&b, 0);
	zeros(&b, 8);
	u16(&b, 0);
	u16(&b, 0);
	u16(&b, 0);
	u16(&b, 0);
	matrix(&b);
	u32(&b, (uint32_t)t->width << 16);
	u32(&b, (uint32_t)t->height << 16);
	end(&b);
	box(&b, "mdia");
	full_box(&b, "mdhd", 0, 0);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, REC_TIMESCALE);
	u32(&b, 0);
	u16(&b, 0x55c4); /* "und" */
	u16(&b, 0);
	end(&b);
	full_box(&b, "hdlr", 0, 0);
	u32(&b, 0);
	bytes(&b, "vide", 4);
	zeros(&b, 12);
	bytes(&b, "VideoHandler", 13);
	end(&b);
	box(&b, "minf");
	full_box(&b, "vmhd", 0, 1);
	zeros(&b, 8);
	end(&b);
	box(&b, "dinf");
	full_box(&b, "dref", 0, 0);
	u32(&b, 1);
	full_box(&b, "url ", 0, 1);
	end(&b);
	end(&b);
	end(&b);
	box(&b, "stbl");
	full_box(&b, "stsd", 0, 0);
	u32(&b, 1);
	sample_entry(&b, t);
	end(&b);
	const char *empty[] = {"stts", "stsc", "stco"};
	for (int i = 0; i < 3; i++) {
		full_box(&b, empty[i], 0, 0);
		u32(&b, 0);
		end(&b);
	}
	full_box(&b, "stsz", 0, 0);
	u32(&b, 0);
	u32(&b, 0);
	end(&b);
	end(&b); /* stbl */
	end(&b); /* minf */
	end(&b); /* mdia */
	end(&b); /* trak */
	box(&b, "mvex");
	full_box(&b, "trex", 0, 0);
	u32(&b, 1);
	u32(&b, 1);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 0);
	end(&b);
	end(&b); /* mvex */
	end(&b); /* moov */
	if (b.overflow)
		return -ENOSPC;
	*ret_len = b.len;
	return 0;
}

static uint64_t ntp_time(int64_t wall_us)
{
	uint64_t us = wall_us > 0 ? (uint64_t)wall_us : 0;
	uint64_t secs = us / 1000000 + NTP_UNIX_OFFSET;
	uint64_t frac = ((us % 1000000) << 32) / 1000000;
	return secs << 32 | frac;
}

static int64_t wall_from_ntp(uint64_t ntp)
{
	uint64_t secs = ntp >> 32, frac = ntp & 0xffffffffu;
	if (secs < NTP_UNIX_OFFSET)
		return 0;
	return (int64_t)((secs - NTP_UNIX_OFFSET) * 1000000 + ((frac * 1000000 + 0x80000000u) >> 32));
}

int rec_fmp4_frag_header(const struct rec_frag_desc *f, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (!f->nsamples || f->nsamples > REC_FRAG_MAX_SAMPLES)
		return -EINVAL;
	uint64_t payload = 0;
	for (unsigned i = 0; i < f->nsamples; i++)
		payload += f->samples[i].size;
	if (payload > UINT32_MAX - REC_FRAG_HEADER_MAX)
		return -EFBIG;
	struct bw b = {.p = out, .cap = cap};
	full_box(&b, "prft", 1, 0);
	u32(&b, 1);
	u64(&b, ntp_time(f->wall_us));
	u64(&b, f->base_time);
	end(&b);
	size_t moof_at = b.len;
	box(&b, "moof");
	full_box(&b, "mfhd", 0, 0);
	u32(&b, f->seq);
	end(&b);
	box(&b, "traf");
	full_box(&b, "tfhd", 0, TFHD_BASE_IS_MOOF | TFHD_DEFAULT_FLAGS);
	u32(&b, 1);
	u32(&b, FLAGS_NON_SYNC);
	end(&b);
	full_box(&b, "tfdt", 1, 0);
	u64(&b, f->base_time);
	end(&b);
	full_box(&b, "trun", 0, TRUN_DATA_OFFSET | TRUN_FIRST_FLAGS | TRUN_DURATION | TRUN_SIZE);
	u32(&b, f->nsamples);
	size_t data_offset_at = b.len;
	u32(&b, 0);
	u32(&b, f->samples[0].keyframe ? FLAGS_SYNC : FLAGS_NON_SYNC);
	for (unsigned i = 0; i < f->nsamples; i++) {
		u32(&b, f->samples[i].duration);
		u32(&b, f->samples[i].size);
	}
	end(&b); /* trun */
	end(&b); /* traf */
	end(&b); /* moof */
	uint32_t data_offset = (uint32_t)(b.len - moof_at + 8);
	u32(&b, (uint32_t)(8 + payload));
	bytes(&b, "mdat", 4);
	if (b.overflow)
		return -ENOSPC;
	out[data_offset_at] = (uint8_t)(data_offset >> 24);
	out[data_offset_at + 1] = (uint8_t)(data_offset >> 16);
	out[data_offset_at + 2] = (uint8_t)(data_offset >> 8);
	out[data_offset_at + 3] = (uint8_t)data_offset;
	*ret_len = b.len;
	return 0;
}

/* A bounded reader of big-endian fields. */
struct br {
	const uint8_t *p;
	size_t len, pos;
	int short_read;
};

static uint32_t r32(struct br *r)
{
	if (r->pos + 4 > r->len) {
		r->short_read = 1;
		r->pos = r->len;
		return 0;
	}
	const uint8_t *p = r->p + r->pos;
	r->pos += 4;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t r64(struct br *r)
{
	uint64_t hi = r32(r);
	return hi << 32 | r32(r);
}

/* Reads a box header at r->pos: its type and the end offset. -EAGAIN past the buffer. */
static int box_at(struct br *r, char type[5], size_t *ret_end)
{
	size_t at = r->pos;
	uint32_t size = r32(r);
	uint32_t t = r32(r);
	if (r->short_read)
		return -EAGAIN;
	if (size < 8)
		return -EBADMSG;
	type[0] = (char)(t >> 24);
	type[1] = (char)(t >> 16);
	type[2] = (char)(t >> 8);
	type[3] = (char)t;
	type[4] = '\0';
	*ret_end = at + size;
	return 0;
}

static int parse_trun(struct br *r, size_t end, struct rec_frag_info *fi, uint32_t *ret_data_offset,
		      uint64_t *ret_payload)
{
	uint32_t vf = r32(r);
	if (vf != (TRUN_DATA_OFFSET | TRUN_FIRST_FLAGS | TRUN_DURATION | TRUN_SIZE))
		return -EBADMSG;
	uint32_t n = r32(r);
	if (n == 0 || n > REC_FRAG_MAX_SAMPLES || end - r->pos < 8 + 8ull * n)
		return -EBADMSG;
	*ret_data_offset = r32(r);
	uint32_t first_flags = r32(r);
	if (first_flags != FLAGS_SYNC && first_flags != FLAGS_NON_SYNC)
		return -EBADMSG;
	fi->first_keyframe = first_flags == FLAGS_SYNC;
	fi->nsamples = n;
	uint64_t payload = 0, duration = 0;
	for (uint32_t i = 0; i < n; i++) {
		duration += r32(r);
		uint32_t size = r32(r);
		if (i == 0)
			fi->first_size = size;
		payload += size;
	}
	fi->duration = duration;
	*ret_payload = payload;
	return 0;
}

static int parse_traf(struct br *r, size_t end, struct rec_frag_info *fi, uint32_t *ret_data_offset,
		      uint64_t *ret_payload)
{
	int seen = 0;
	while (r->pos < end) {
		char type[5];
		size_t box_end;
		int e = box_at(r, type, &box_end);
		if (e < 0)
			return e;
		if (box_end > end)
			return -EBADMSG;
		if (!strcmp(type, "tfhd")) {
			if (r32(r) != (TFHD_BASE_IS_MOOF | TFHD_DEFAULT_FLAGS) || r32(r) != 1)
				return -EBADMSG;
			seen |= 1;
		} else if (!strcmp(type, "tfdt")) {
			if (r32(r) != 1u << 24)
				return -EBADMSG;
			fi->base_time = r64(r);
			seen |= 2;
		} else if (!strcmp(type, "trun")) {
			e = parse_trun(r, box_end, fi, ret_data_offset, ret_payload);
			if (e < 0)
				return e;
			seen |= 4;
		}
		if (r->short_read)
			return -EAGAIN;
		r->pos = box_end;
	}
	return seen == 7 ? 0 : -EBADMSG;
}

int rec_fmp4_frag_parse(const uint8_t *buf, size_t len, struct rec_frag_info *ret)
{
	struct br r = {.p = buf, .len = len};
	struct rec_frag_info fi = {0};
	char type[5];
	size_t end;
	int e = box_at(&r, type, &end);
	if (e < 0)
		return e;
	if (strcmp(type, "prft") || end - r.pos != 24)
		return -EBADMSG;
	uint32_t version_flags = r32(&r), track = r32(&r);
	fi.wall_us = wall_from_ntp(r64(&r));
	uint64_t media = r64(&r);
	if (r.short_read)
		return -EAGAIN;
	if (version_flags != 1u << 24 || track != 1)
		return -EBADMSG;
	size_t moof_at = r.pos;
	e = box_at(&r, type, &end);
	if (e < 0)
		return e;
	if (strcmp(type, "moof") || end - moof_at > REC_FRAG_HEADER_MAX)
		return -EBADMSG;
	if (end > len)
		return -EAGAIN;
	uint32_t data_offset = 0;
	uint64_t payload = 0;
	int seen = 0;
	while (r.pos < end) {
		size_t box_end;
		e = box_at(&r, type, &box_end);
		if (e < 0)
			return e;
		if (box_end > end)
			return -EBADMSG;
		if (!strcmp(type, "mfhd")) {
			if (r32(&r) != 0)
				return -EBADMSG;
			fi.seq = r32(&r);
			seen |= 1;
		} else if (!strcmp(type, "traf")) {
			if (seen & 2)
				return -EBADMSG;
			e = parse_traf(&r, box_end, &fi, &data_offset, &payload);
			if (e < 0)
				return e == -EAGAIN ? -EBADMSG : e;
			seen |= 2;
		}
		r.pos = box_end;
	}
	if (seen != 3 || fi.base_time != media)
		return -EBADMSG;
	size_t mdat_at = r.pos;
	e = box_at(&r, type, &end);
	if (e < 0)
		return e;
	if (strcmp(type, "mdat") || end - mdat_at != 8 + payload || data_offset != mdat_at + 8 - moof_at)
		return -EBADMSG;
	fi.header_len = (uint32_t)(mdat_at + 8);
	fi.total_len = end;
	*ret = fi;
	return 0;
}

int rec_fmp4_init_parse(const uint8_t *buf, size_t len, struct rec_track *ret_track, size_t *ret_len)
{
	struct br r = {.p = buf, .len = len};
	char type[5];
	size_t end;
	int e = box_at(&r, type, &end);
	if (e < 0)
		return e;
	if (strcmp(type, "ftyp") || end > 64)
		return -EBADMSG;
	r.pos = end;
	size_t moov_at = r.pos;
	e = box_at(&r, type, &end);
	if (e < 0)
		return e;
	if (strcmp(type, "moov") || end - moov_at > REC_INIT_MAX)
		return -EBADMSG;
	if (end > len)
		return -EAGAIN;
	/* The sample entry sits at a fixed path; find it by its type inside moov. */
	struct rec_track t = {0};
	for (size_t i = moov_at + 8; i + 8 <= end; i++) {
		int h265 = !memcmp(buf + i, "hev1", 4), h264 = !memcmp(buf + i, "avc1", 4);
		if (!h265 && !h264)
			continue;
		size_t entry_at = i - 4;
		struct br er = {.p = buf, .len = end, .pos = entry_at};
		size_t entry_end;
		if (box_at(&er, type, &entry_end) < 0 || entry_end > end || entry_end - entry_at < 86 + 8)
			return -EBADMSG;
		t.codec = h265 ? KP_CODEC_H265 : KP_CODEC_H264;
		t.width = (uint16_t)(buf[entry_at + 32] << 8 | buf[entry_at + 33]);
		t.height = (uint16_t)(buf[entry_at + 34] << 8 | buf[entry_at + 35]);
		er.pos = entry_at + 86;
		size_t cfg_end;
		if (box_at(&er, type, &cfg_end) < 0 || cfg_end > entry_end || cfg_end - er.pos > sizeof t.config)
			return -EBADMSG;
		t.config_len = cfg_end - er.pos;
		memcpy(t.config, buf + er.pos, t.config_len);
		*ret_track = t;
		*ret_len = end;
		return 0;
	}
	return -EBADMSG;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The first child box of [from, end) named type: its start; 0 when none. */
static size_t child(const uint8_t *buf, size_t from, size_t end, const char *type)
{
	while (from + 8 <= end) {
		uint32_t size = get32(buf + from);
		if (size < 8 || size > end - from)
			return 0;
		if (!memcmp(buf + from + 4, type, 4))
			return from;
		from += size;
	}
	return 0;
}

int rec_fmp4_frag_rebase(uint8_t *buf, size_t len, uint64_t minus)
{
	struct rec_frag_info fi;
	int r = rec_fmp4_frag_parse(buf, len, &fi);
	if (r < 0)
		return r;
	if (fi.base_time < minus)
		return -ERANGE;
	/* prft (32 bytes, version 1: validated by the parse): its media time at 24. */
	put64(buf + 24, get64(buf + 24) - minus);
	size_t moof = 32, moof_end = moof + get32(buf + moof);
	size_t traf = child(buf, moof + 8, moof_end, "traf");
	size_t tfdt = traf ? child(buf, traf + 8, traf + get32(buf + traf), "tfdt") : 0;
	if (!tfdt || get32(buf + tfdt) != 20 || buf[tfdt + 8] != 1)
		return -EBADMSG;
	put64(buf + tfdt + 12, fi.base_time - minus);
	return 0;
}
