/* Bounded fragmented-MP4 reading for stored playback (see fmp4_read.h). Boxes are
 * walked with a cursor that never reads past its box; every length from the file is
 * checked before it is used. */
#include "fmp4_read.h"
#include "h26x_config.h"

#include <errno.h>
#include <string.h>

#define NTP_UNIX_OFFSET 2208988800ull

#define TFHD_BASE_DATA_OFFSET 0x000001u
#define TFHD_SAMPLE_DESC      0x000002u
#define TFHD_DEFAULT_DURATION 0x000008u
#define TFHD_DEFAULT_SIZE     0x000010u
#define TFHD_DEFAULT_FLAGS    0x000020u

#define TRUN_DATA_OFFSET 0x000001u
#define TRUN_FIRST_FLAGS 0x000004u
#define TRUN_DURATION    0x000100u
#define TRUN_SIZE        0x000200u
#define TRUN_FLAGS       0x000400u
#define TRUN_CTS         0x000800u

#define SAMPLE_NON_SYNC 0x00010000u

/* A reader over [pos, end) of buf. */
struct rd {
	const uint8_t *p;
	size_t pos, end;
	bool bad;
};

static bool need(struct rd *r, size_t n)
{
	if (r->bad || r->end - r->pos < n) {
		r->bad = true;
		r->pos = r->end;
		return false;
	}
	return true;
}

static uint32_t get16(struct rd *r)
{
	if (!need(r, 2))
		return 0;
	const uint8_t *p = r->p + r->pos;
	r->pos += 2;
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t get32(struct rd *r)
{
	if (!need(r, 4))
		return 0;
	const uint8_t *p = r->p + r->pos;
	r->pos += 4;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(struct rd *r)
{
	uint64_t hi = get32(r);
	return hi << 32 | get32(r);
}

static void skip(struct rd *r, size_t n)
{
	if (need(r, n))
		r->pos += n;
}

/* The next box inside r: its type and a reader over its body; r moves past it. */
static bool next_box(struct rd *r, uint32_t *type, struct rd *body)
{
	if (r->bad || r->pos >= r->end)
		return false;
	size_t at = r->pos;
	uint64_t size = get32(r);
	*type = get32(r);
	if (size == 1)
		size = get64(r);
	else if (size == 0)
		size = r->end - at;
	if (r->bad || size < r->pos - at || size > r->end - at) {
		r->bad = true;
		return false;
	}
	*body = (struct rd){.p = r->p, .pos = r->pos, .end = at + (size_t)size};
	r->pos = at + (size_t)size;
	return true;
}

#define FOURCC(s) ((uint32_t)(s)[0] << 24 | (uint32_t)(s)[1] << 16 | (uint32_t)(s)[2] << 8 | (uint32_t)(s)[3])

/* The avcC/hvcC record: the parameter sets (Annex-B) and the NAL length size. */
static int parse_config(struct rtc_fmp4_track *t, struct rd *r)
{
	const char *why;
	int e = h26x_config_read((enum kp_codec)t->codec, r->p + r->pos, r->end - r->pos, t->params, sizeof t->params,
				 &t->params_len, &t->nal_len_size, &why);
	return e < 0 ? -EBADMSG : 0;
}

static int parse_sample_entry(struct rtc_fmp4_track *t, uint32_t type, struct rd *r)
{
	t->codec = type == FOURCC("avc1") || type == FOURCC("avc3") ? kp_Codec_CODEC_H264 : kp_Codec_CODEC_H265;
	skip(r, 24);
	t->width = get16(r);
	t->height = get16(r);
	skip(r, 50);
	uint32_t child;
	struct rd b;
	while (next_box(r, &child, &b)) {
		if (child == FOURCC("avcC") && t->codec == kp_Codec_CODEC_H264)
			return parse_config(t, &b);
		if (child == FOURCC("hvcC") && t->codec == kp_Codec_CODEC_H265)
			return parse_config(t, &b);
	}
	return -EBADMSG;
}

static int parse_stsd(struct rtc_fmp4_track *t, struct rd *r)
{
	skip(r, 4);
	if (get32(r) < 1)
		return -EBADMSG;
	uint32_t type;
	struct rd b;
	if (!next_box(r, &type, &b))
		return -EBADMSG;
	if (type != FOURCC("avc1") && type != FOURCC("avc3") && type != FOURCC("hev1") && type != FOURCC("hvc1"))
		return -EBADMSG;
	return parse_sample_entry(t, type, &b);
}

static int parse_mdhd(struct rtc_fmp4_track *t, struct rd *r)
{
	uint32_t version = get32(r) >> 24;
	skip(r, version == 1 ? 16 : 8);
	t->timescale = get32(r);
	return r->bad || t->timescale == 0 ? -EBADMSG : 0;
}

/* Descends through the containers on the way to mdhd, stsd and trex. */
static int walk_moov(struct rtc_fmp4_track *t, struct rd *r, int depth, unsigned *seen)
{
	uint32_t type;
	struct rd b;
	if (depth > 6)
		return -EBADMSG;
	while (next_box(r, &type, &b)) {
		int e = 0;
		if (type == FOURCC("trak") || type == FOURCC("mdia") || type == FOURCC("minf") ||
		    type == FOURCC("stbl") || type == FOURCC("mvex")) {
			if (type == FOURCC("trak") && (*seen & 1))
				return -EBADMSG; /* one video track only */
			e = walk_moov(t, &b, depth + 1, seen);
			if (type == FOURCC("trak"))
				*seen |= 1;
		} else if (type == FOURCC("mdhd")) {
			e = parse_mdhd(t, &b);
			*seen |= 2;
		} else if (type == FOURCC("stsd")) {
			e = parse_stsd(t, &b);
			*seen |= 4;
		} else if (type == FOURCC("trex")) {
			skip(&b, 12);
			t->trex_duration = get32(&b);
			t->trex_size = get32(&b);
			t->trex_flags = get32(&b);
			e = b.bad ? -EBADMSG : 0;
		}
		if (e < 0)
			return e;
	}
	return r->bad ? -EBADMSG : 0;
}

int rtc_fmp4_parse_init(const uint8_t *buf, size_t len, struct rtc_fmp4_track *ret)
{
	if (len > RTC_FMP4_INIT_MAX)
		return -EBADMSG;
	memset(ret, 0, sizeof *ret);
	struct rd r = {.p = buf, .end = len};
	uint32_t type;
	struct rd b;
	while (next_box(&r, &type, &b)) {
		if (type != FOURCC("moov"))
			continue;
		unsigned seen = 0;
		int e = walk_moov(ret, &b, 0, &seen);
		if (e < 0)
			return e;
		return seen == 7 && ret->params_len ? 0 : -EBADMSG;
	}
	return -EBADMSG;
}

struct traf {
	uint32_t tfhd_flags;
	uint32_t def_duration, def_size, def_flags;
	uint64_t base_time;
	bool have_tfhd, have_tfdt;
};

static int parse_trun(const struct rtc_fmp4_track *t, struct traf *tr, struct rd *r, size_t moof_at, size_t *data_at,
		      uint64_t *dts, struct rtc_fmp4_frag *f)
{
	uint32_t vf = get32(r);
	uint32_t flags = vf & 0xffffff, version = vf >> 24;
	uint32_t n = get32(r);
	if (r->bad || n > RTC_FMP4_MAX_SAMPLES - f->nsamples)
		return -EBADMSG;
	if (flags & TRUN_DATA_OFFSET) {
		int32_t off = (int32_t)get32(r);
		if (off < 0)
			return -EBADMSG;
		*data_at = moof_at + (uint32_t)off;
	}
	uint32_t first_flags = flags & TRUN_FIRST_FLAGS ? get32(r) : 0;
	for (uint32_t i = 0; i < n; i++) {
		struct rtc_fmp4_sample *s = &f->samples[f->nsamples++];
		s->duration = flags & TRUN_DURATION ? get32(r) : tr->def_duration;
		s->size = flags & TRUN_SIZE ? get32(r) : tr->def_size;
		uint32_t sflags = flags & TRUN_FLAGS ? get32(r) : tr->def_flags;
		if (i == 0 && (flags & TRUN_FIRST_FLAGS))
			sflags = first_flags;
		uint32_t cts = flags & TRUN_CTS ? get32(r) : 0;
		s->cts = version ? (int32_t)cts : (int32_t)(cts & 0x7fffffff);
		s->keyframe = !(sflags & SAMPLE_NON_SYNC);
		s->dts = *dts;
		*dts += s->duration;
		if (*data_at > UINT32_MAX || s->size > UINT32_MAX - *data_at)
			return -EBADMSG;
		s->offset = (uint32_t)*data_at;
		*data_at += s->size;
	}
	(void)t;
	return r->bad ? -EBADMSG : 0;
}

static int parse_traf(const struct rtc_fmp4_track *t, struct rd *r, size_t moof_at, size_t mdat_guess,
		      struct rtc_fmp4_frag *f)
{
	struct traf tr = {.def_duration = t->trex_duration, .def_size = t->trex_size, .def_flags = t->trex_flags};
	size_t data_at = mdat_guess;
	uint64_t dts = 0;
	bool have_trun = false;
	uint32_t type;
	struct rd b;
	while (next_box(r, &type, &b)) {
		if (type == FOURCC("tfhd")) {
			tr.tfhd_flags = get32(&b) & 0xffffff;
			get32(&b); /* track_ID: the init has one track */
			if (tr.tfhd_flags & TFHD_BASE_DATA_OFFSET)
				return -EBADMSG; /* file offsets: a fragment read alone cannot use them */
			if (tr.tfhd_flags & TFHD_SAMPLE_DESC)
				get32(&b);
			if (tr.tfhd_flags & TFHD_DEFAULT_DURATION)
				tr.def_duration = get32(&b);
			if (tr.tfhd_flags & TFHD_DEFAULT_SIZE)
				tr.def_size = get32(&b);
			if (tr.tfhd_flags & TFHD_DEFAULT_FLAGS)
				tr.def_flags = get32(&b);
			if (b.bad)
				return -EBADMSG;
			tr.have_tfhd = true;
		} else if (type == FOURCC("tfdt")) {
			uint32_t version = get32(&b) >> 24;
			tr.base_time = version == 1 ? get64(&b) : get32(&b);
			if (b.bad)
				return -EBADMSG;
			tr.have_tfdt = true;
		} else if (type == FOURCC("trun")) {
			if (!tr.have_tfhd)
				return -EBADMSG;
			if (!have_trun)
				dts = tr.base_time;
			int e = parse_trun(t, &tr, &b, moof_at, &data_at, &dts, f);
			if (e < 0)
				return e;
			have_trun = true;
		}
	}
	if (r->bad || !tr.have_tfhd || !tr.have_tfdt || !have_trun)
		return -EBADMSG;
	f->base_time = tr.base_time;
	f->duration = dts - tr.base_time;
	return 0;
}

static int64_t wall_from_ntp(uint64_t ntp)
{
	uint64_t secs = ntp >> 32, frac = ntp & 0xffffffffu;
	if (secs < NTP_UNIX_OFFSET || secs - NTP_UNIX_OFFSET > (uint64_t)INT64_MAX / 2000000)
		return 0;
	return (int64_t)((secs - NTP_UNIX_OFFSET) * 1000000 + ((frac * 1000000 + 0x80000000u) >> 32));
}

int rtc_fmp4_parse_frag(const struct rtc_fmp4_track *t, const uint8_t *buf, size_t len, struct rtc_fmp4_frag *ret)
{
	if (len > RTC_FMP4_FRAG_MAX)
		return -EBADMSG;
	ret->nsamples = 0;
	ret->wall_us = 0;
	ret->seq = 0;
	struct rd r = {.p = buf, .end = len};
	uint32_t type;
	struct rd b, moof = {0};
	size_t moof_at = 0;
	bool have_moof = false;
	while (!have_moof) {
		size_t at = r.pos;
		if (!next_box(&r, &type, &b))
			return -EBADMSG;
		if (type == FOURCC("prft")) {
			uint32_t version = get32(&b) >> 24;
			get32(&b);
			ret->wall_us = wall_from_ntp(get64(&b));
			if (version > 1 || b.bad)
				return -EBADMSG;
		} else if (type == FOURCC("moof")) {
			moof = b;
			moof_at = at;
			have_moof = true;
		} else if (type != FOURCC("styp") && type != FOURCC("sidx") && type != FOURCC("free")) {
			return -EBADMSG;
		}
	}
	size_t mdat_at = r.pos;
	struct rd mdat;
	if (!next_box(&r, &type, &mdat) || type != FOURCC("mdat"))
		return -EBADMSG;
	bool have_traf = false;
	while (next_box(&moof, &type, &b)) {
		if (type == FOURCC("mfhd")) {
			get32(&b);
			ret->seq = get32(&b);
		} else if (type == FOURCC("traf")) {
			if (have_traf)
				return -EBADMSG;
			int e = parse_traf(t, &b, moof_at, mdat.pos, ret);
			if (e < 0)
				return e;
			have_traf = true;
		}
	}
	if (moof.bad || !have_traf || ret->nsamples == 0)
		return -EBADMSG;
	(void)mdat_at;
	for (unsigned i = 0; i < ret->nsamples; i++) {
		const struct rtc_fmp4_sample *s = &ret->samples[i];
		if (s->offset < mdat.pos || s->offset > mdat.end || s->size > mdat.end - s->offset)
			return -EBADMSG;
	}
	ret->total_len = r.pos;
	return 0;
}

size_t rtc_fmp4_annexb_cap(const struct rtc_fmp4_track *t, size_t len)
{
	/* Worst case: 1-byte lengths, 1-byte NALs: 2 bytes in, 5 out. */
	return t->params_len + len / 2 * 5 + 8;
}

int rtc_fmp4_annexb(const struct rtc_fmp4_track *t, const uint8_t *sample, size_t len, bool keyframe, uint8_t *out,
		    size_t cap, size_t *ret_len)
{
	size_t n = 0, pos = 0, ls = t->nal_len_size;
	if (ls != 1 && ls != 2 && ls != 4)
		return -EBADMSG;
	enum kp_codec codec = (enum kp_codec)t->codec;
	bool params = keyframe && !(len > ls && h26x_is_param_set(codec, h26x_nal_type(codec, sample + ls)));
	if (params) {
		if (t->params_len > cap)
			return -ENOSPC;
		memcpy(out, t->params, t->params_len);
		n = t->params_len;
	}
	while (pos < len) {
		if (len - pos < ls)
			return -EBADMSG;
		size_t nal = 0;
		for (size_t i = 0; i < ls; i++)
			nal = nal << 8 | sample[pos + i];
		pos += ls;
		if (nal > len - pos)
			return -EBADMSG;
		if (nal == 0)
			continue;
		if (cap - n < 4 + nal)
			return -ENOSPC;
		memcpy(out + n, "\0\0\0\1", 4);
		memcpy(out + n + 4, sample + pos, nal);
		n += 4 + nal;
		pos += nal;
	}
	*ret_len = n;
	return 0;
}
