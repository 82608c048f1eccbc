/* The one fMP4 reader (see fmp4.h): boxes are walked with a cursor that never reads past
 * its box, and every length from the file is checked before it is used. Recovery and
 * rebuild give it a file's first bytes or a fragment's header only (-EAGAIN says more
 * is needed); stored playback gives it whole fragments. */
#include "fmp4.h"

#include <errno.h>
#include <string.h>

#include "fmp4_boxes.h"

/* A reader over [pos, end) of p. */
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

static uint32_t get8(struct rd *r)
{
	if (!need(r, 1))
		return 0;
	return r->p[r->pos++];
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

#define FOURCC(s) ((uint32_t)(s)[0] << 24 | (uint32_t)(s)[1] << 16 | (uint32_t)(s)[2] << 8 | (uint32_t)(s)[3])

/* The header of the box at r->pos: its type and end (which may lie past r->end); r
 * moves to its body. -EAGAIN when the header itself does not fit, -EBADMSG for a size
 * that cannot be (smaller than the header, or "to the end of the file"). */
static int box_header(struct rd *r, uint32_t *ret_type, uint64_t *ret_end)
{
	size_t at = r->pos;
	if (r->end - at < 8)
		return -EAGAIN;
	uint64_t size = get32(r);
	*ret_type = get32(r);
	if (size == 1) {
		if (r->end - r->pos < 8)
			return -EAGAIN;
		size = get64(r);
	}
	if (size < r->pos - at)
		return -EBADMSG;
	*ret_end = at + size;
	return 0;
}

/* The next box wholly inside r: its type and a reader over its body; r moves past it. */
static bool next_box(struct rd *r, uint32_t *type, struct rd *body)
{
	if (r->bad || r->pos >= r->end)
		return false;
	uint64_t end;
	if (box_header(r, type, &end) < 0 || end > r->end) {
		r->bad = true;
		return false;
	}
	*body = (struct rd){.p = r->p, .pos = r->pos, .end = (size_t)end};
	r->pos = (size_t)end;
	return true;
}

static int parse_sample_entry(struct fmp4_init *in, uint32_t type, struct rd *r)
{
	struct fmp4_track *t = &in->track;
	t->codec = type == FOURCC("avc1") || type == FOURCC("avc3") ? KP_CODEC_H264 : KP_CODEC_H265;
	skip(r, 24);
	t->width = (uint16_t)get16(r);
	t->height = (uint16_t)get16(r);
	skip(r, 50);
	uint32_t child;
	struct rd b;
	while (next_box(r, &child, &b)) {
		if (child != (t->codec == KP_CODEC_H264 ? FOURCC("avcC") : FOURCC("hvcC")))
			continue;
		const char *why;
		size_t n = b.end - b.pos;
		if (n > sizeof t->config || h26x_config_read(t->codec, b.p + b.pos, n, in->params, sizeof in->params,
							     &in->params_len, &in->nal_len_size, &why) < 0)
			return -EBADMSG;
		memcpy(t->config, b.p + b.pos, n);
		t->config_len = n;
		return 0;
	}
	return -EBADMSG;
}

/* Descriptor tag and length (14496-1 8.3.3: up to four 7-bit length bytes); r moves to
 * the body, body is a reader over it. */
static bool descriptor(struct rd *r, uint32_t *tag, struct rd *body)
{
	*tag = get8(r);
	size_t n = 0;
	for (int i = 0; i < 4; i++) {
		uint32_t c = get8(r);
		n = n << 7 | (c & 0x7f);
		if (!(c & 0x80))
			break;
	}
	if (r->bad || n > r->end - r->pos)
		return false;
	*body = (struct rd){.p = r->p, .pos = r->pos, .end = r->pos + n};
	r->pos += n;
	return true;
}

/* esds: ES_Descriptor > DecoderConfigDescriptor (MPEG-4 audio) > DecoderSpecificInfo. */
static int parse_esds(struct fmp4_init *in, struct rd *r)
{
	skip(r, 4);
	uint32_t tag;
	struct rd es, d;
	if (!descriptor(r, &tag, &es) || tag != 0x03)
		return -EBADMSG;
	skip(&es, 2);
	uint32_t flags = get8(&es);
	if (flags & 0x80)
		skip(&es, 2);
	if (flags & 0x40)
		skip(&es, get8(&es));
	if (flags & 0x20)
		skip(&es, 2);
	while (descriptor(&es, &tag, &d)) {
		if (tag != 0x04)
			continue;
		if (get8(&d) != 0x40) /* not MPEG-4 audio: a track we do not describe */
			return 0;
		skip(&d, 12);
		struct rd dsi;
		while (descriptor(&d, &tag, &dsi))
			if (tag == 0x05)
				return kp_aac_config_parse(dsi.p + dsi.pos, dsi.end - dsi.pos, &in->audio) < 0
					   ? -EBADMSG
					   : 0;
		return -EBADMSG;
	}
	return -EBADMSG;
}

static int parse_audio_entry(struct fmp4_init *in, struct rd *r)
{
	skip(r, 16);
	uint32_t channels = get16(r);
	skip(r, 6);
	uint32_t rate = get32(r) >> 16;
	uint32_t child;
	struct rd b;
	while (next_box(r, &child, &b)) {
		if (child != FOURCC("esds"))
			continue;
		int e = parse_esds(in, &b);
		if (e < 0 || in->audio.codec == KP_AUDIO_NONE)
			return e;
		if (rate && in->audio.rate != rate && in->audio.frame_samples == 1024)
			in->audio.rate = rate; /* the entry's rate stands over an implicit SBR config's */
		if (channels && channels <= 8 && in->audio.channels == 0)
			in->audio.channels = channels;
		return 0;
	}
	return 0;
}

/* An Opus sample entry: its dOps (version 0) gives the channels; 48 kHz. */
static int parse_opus_entry(struct fmp4_init *in, struct rd *r)
{
	skip(r, 28);
	uint32_t child;
	struct rd b;
	while (next_box(r, &child, &b)) {
		if (child != FOURCC("dOps"))
			continue;
		uint32_t version = get8(&b), channels = get8(&b);
		if (b.bad || version != 0 || channels < 1 || channels > 8)
			return -EBADMSG;
		in->audio = (struct kp_audio_format){.codec = KP_AUDIO_OPUS, .rate = 48000, .channels = channels};
		return 0;
	}
	return 0;
}

/* One trak's walk: what it is, and which boxes it had. */
struct trak {
	uint32_t id, handler, timescale;
	bool have_stsd, video_entry;
};

static int parse_stsd(struct fmp4_init *in, struct trak *tr, struct rd *r)
{
	skip(r, 4);
	if (get32(r) < 1)
		return -EBADMSG;
	uint32_t type;
	struct rd b;
	if (!next_box(r, &type, &b))
		return -EBADMSG;
	tr->have_stsd = true;
	if (tr->handler == FOURCC("soun"))
		return type == FOURCC("mp4a")   ? parse_audio_entry(in, &b)
		       : type == FOURCC("Opus") ? parse_opus_entry(in, &b)
						: 0;
	if (tr->handler != FOURCC("vide"))
		return 0;
	if (type != FOURCC("avc1") && type != FOURCC("avc3") && type != FOURCC("hev1") && type != FOURCC("hvc1"))
		return -EBADMSG;
	tr->video_entry = true;
	return parse_sample_entry(in, type, &b);
}

static int parse_mdhd(struct trak *tr, struct rd *r)
{
	uint32_t version = get32(r) >> 24;
	skip(r, version == 1 ? 16 : 8);
	tr->timescale = get32(r);
	return r->bad || tr->timescale == 0 ? -EBADMSG : 0;
}

/* Descends through a trak's containers to tkhd, mdhd, hdlr and stsd (hdlr comes before
 * minf, ISO/IEC 14496-12 8.4). */
static int walk_trak(struct fmp4_init *in, struct trak *tr, struct rd *r, int depth)
{
	uint32_t type;
	struct rd b;
	if (depth > 4)
		return -EBADMSG;
	while (next_box(r, &type, &b)) {
		int e = 0;
		if (type == FOURCC("mdia") || type == FOURCC("minf") || type == FOURCC("stbl")) {
			e = walk_trak(in, tr, &b, depth + 1);
		} else if (type == FOURCC("tkhd")) {
			uint32_t version = get32(&b) >> 24;
			skip(&b, version == 1 ? 16 : 8);
			tr->id = get32(&b);
			e = b.bad ? -EBADMSG : 0;
		} else if (type == FOURCC("mdhd")) {
			e = parse_mdhd(tr, &b);
		} else if (type == FOURCC("hdlr")) {
			skip(&b, 8);
			tr->handler = get32(&b);
			e = b.bad ? -EBADMSG : 0;
		} else if (type == FOURCC("stsd")) {
			e = parse_stsd(in, tr, &b);
		}
		if (e < 0)
			return e;
	}
	return r->bad ? -EBADMSG : 0;
}

struct trex {
	uint32_t id, duration, size, flags;
};

/* The moov's traks (one video track, at most one audio track kept) and trex boxes. */
static int walk_moov(struct fmp4_init *in, struct rd *r)
{
	uint32_t type;
	struct rd b;
	bool video = false;
	struct trex trex[4];
	unsigned ntrex = 0;
	while (next_box(r, &type, &b)) {
		int e = 0;
		if (type == FOURCC("trak")) {
			struct trak tr = {0};
			struct kp_audio_format audio = in->audio;
			e = walk_trak(in, &tr, &b, 0);
			if (e < 0)
				return e;
			if (tr.handler == FOURCC("vide")) {
				if (video || !tr.video_entry || !tr.timescale)
					return -EBADMSG; /* one video track only */
				video = true;
				in->track_id = tr.id;
				in->timescale = tr.timescale;
			} else if (tr.handler == FOURCC("soun") && in->audio.codec != KP_AUDIO_NONE &&
				   !in->audio_track_id && tr.timescale && tr.id) {
				in->audio_track_id = tr.id;
				in->audio_timescale = tr.timescale;
			} else {
				in->audio = audio; /* a track we do not describe */
			}
		} else if (type == FOURCC("mvex")) {
			struct rd x;
			while (next_box(&b, &type, &x)) {
				if (type != FOURCC("trex") || ntrex == 4)
					continue;
				skip(&x, 4);
				trex[ntrex].id = get32(&x);
				skip(&x, 4);
				trex[ntrex].duration = get32(&x);
				trex[ntrex].size = get32(&x);
				trex[ntrex].flags = get32(&x);
				if (x.bad)
					return -EBADMSG;
				ntrex++;
			}
			e = b.bad ? -EBADMSG : 0;
		}
		if (e < 0)
			return e;
	}
	if (r->bad || !video)
		return -EBADMSG;
	for (unsigned i = 0; i < ntrex; i++)
		if (trex[i].id == in->track_id || ntrex == 1) {
			in->trex_duration = trex[i].duration;
			in->trex_size = trex[i].size;
			in->trex_flags = trex[i].flags;
		}
	return 0;
}

int fmp4_read_init(const uint8_t *buf, size_t len, struct fmp4_init *ret)
{
	memset(ret, 0, sizeof *ret);
	struct rd r = {.p = buf, .end = len};
	for (;;) {
		uint32_t type;
		uint64_t end;
		int e = box_header(&r, &type, &end);
		if (e < 0)
			return e;
		if (end > FMP4_READ_INIT_MAX)
			return -EBADMSG;
		if (end > len)
			return -EAGAIN;
		if (type == FOURCC("moov")) {
			struct rd moov = {.p = buf, .pos = r.pos, .end = (size_t)end};
			e = walk_moov(ret, &moov);
			if (e < 0)
				return e;
			if (!ret->params_len)
				return -EBADMSG;
			ret->len = (size_t)end;
			return 0;
		}
		if (type != FOURCC("ftyp") && type != FOURCC("free"))
			return -EBADMSG;
		r.pos = (size_t)end;
	}
}

struct traf {
	uint32_t def_duration, def_size, def_flags;
	uint64_t base_time;
	bool have_tfhd, have_tfdt;
	uint32_t track_id;
	/* Another track's traf: its samples are counted and must lie in [mdat_body, mdat_end);
	 * the audio track's are kept too. */
	bool other, audio;
	uint64_t mdat_body, mdat_end;
};

static int parse_trun(struct traf *tr, struct rd *r, size_t moof_at, uint64_t *data_at, uint64_t *dts,
		      struct fmp4_frag *f)
{
	uint32_t vf = get32(r);
	uint32_t flags = vf & 0xffffff, version = vf >> 24;
	uint32_t n = get32(r);
	/* Both tracks are bounded: an audio trun of 2^32 samples without per-sample fields
	 * would otherwise be walked for minutes (found by fuzz_fmp4_read). */
	if (r->bad || (!tr->other && n > FMP4_FRAG_MAX_SAMPLES - f->nsamples) ||
	    (tr->other && n > FMP4_AUDIO_MAX_SAMPLES - f->other_samples))
		return -EBADMSG;
	if (flags & FMP4_TRUN_DATA_OFFSET) {
		int32_t off = (int32_t)get32(r);
		if (off < 0)
			return -EBADMSG;
		*data_at = moof_at + (uint32_t)off;
	}
	uint32_t first_flags = flags & FMP4_TRUN_FIRST_FLAGS ? get32(r) : 0;
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		struct fmp4_sample_info other, *s = tr->other ? &other : &f->samples[f->nsamples++];
		s->duration = flags & FMP4_TRUN_DURATION ? get32(r) : tr->def_duration;
		s->size = flags & FMP4_TRUN_SIZE ? get32(r) : tr->def_size;
		uint32_t sflags = flags & FMP4_TRUN_FLAGS ? get32(r) : tr->def_flags;
		if (i == 0 && (flags & FMP4_TRUN_FIRST_FLAGS))
			sflags = first_flags;
		uint32_t cts = flags & FMP4_TRUN_CTS ? get32(r) : 0;
		s->cts = version ? (int32_t)cts : (int32_t)(cts & 0x7fffffff);
		s->keyframe = !(sflags & FMP4_SAMPLE_NON_SYNC);
		s->dts = *dts;
		*dts += s->duration;
		if (*data_at > UINT32_MAX || s->size > UINT32_MAX - *data_at)
			return -EBADMSG;
		s->offset = (uint32_t)*data_at;
		*data_at += s->size;
		if (tr->other) {
			if (s->offset < tr->mdat_body || *data_at > tr->mdat_end)
				return -EBADMSG;
			f->other_samples++;
			if (tr->audio && f->audio)
				f->audio[f->naudio++] = other;
		}
	}
	return r->bad ? -EBADMSG : 0;
}

/* One traf; *is_video says whether it was the video track's (init's track_ID, or the
 * first traf when there is no init). */
static int parse_traf(const struct fmp4_init *in, struct rd *r, size_t moof_at, size_t mdat_body, uint64_t mdat_end,
		      bool first, struct fmp4_frag *f, bool *is_video)
{
	struct traf tr = {.mdat_body = mdat_body, .mdat_end = mdat_end};
	if (in)
		tr.def_duration = in->trex_duration, tr.def_size = in->trex_size, tr.def_flags = in->trex_flags;
	uint64_t data_at = mdat_body, dts = 0;
	bool have_trun = false;
	uint32_t type;
	struct rd b;
	while (next_box(r, &type, &b)) {
		if (type == FOURCC("tfhd")) {
			uint32_t flags = get32(&b) & 0xffffff;
			tr.track_id = get32(&b);
			tr.other = in ? tr.track_id != in->track_id : !first;
			tr.audio = in && tr.other && in->audio_track_id && tr.track_id == in->audio_track_id;
			if (flags & FMP4_TFHD_BASE_DATA_OFFSET)
				return -EBADMSG; /* file offsets: a fragment read alone cannot use them */
			if (flags & FMP4_TFHD_SAMPLE_DESC)
				get32(&b);
			if (flags & FMP4_TFHD_DEFAULT_DURATION)
				tr.def_duration = get32(&b);
			if (flags & FMP4_TFHD_DEFAULT_SIZE)
				tr.def_size = get32(&b);
			if (flags & FMP4_TFHD_DEFAULT_FLAGS)
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
			int e = parse_trun(&tr, &b, moof_at, &data_at, &dts, f);
			if (e < 0)
				return e;
			have_trun = true;
		}
	}
	if (r->bad || !tr.have_tfhd || !tr.have_tfdt || !have_trun)
		return -EBADMSG;
	*is_video = !tr.other;
	if (tr.other) {
		f->other_base_time = tr.base_time;
		return 0;
	}
	f->base_time = tr.base_time;
	f->duration = dts - tr.base_time;
	return 0;
}

static int64_t wall_from_ntp(uint64_t ntp)
{
	uint64_t secs = ntp >> 32, frac = ntp & 0xffffffffu;
	if (secs < FMP4_NTP_UNIX_OFFSET || secs - FMP4_NTP_UNIX_OFFSET > (uint64_t)INT64_MAX / 2000000)
		return 0;
	return (int64_t)((secs - FMP4_NTP_UNIX_OFFSET) * 1000000 + ((frac * 1000000 + 0x80000000u) >> 32));
}

/* The top-level box at r->pos, wholly inside the header bound and the buffer. */
static int header_box(struct rd *r, uint32_t *type, struct rd *body)
{
	uint64_t end;
	int e = box_header(r, type, &end);
	if (e < 0)
		return e;
	if (end > FMP4_FRAG_HEADER_MAX)
		return -EBADMSG;
	if (end > r->end)
		return -EAGAIN;
	*body = (struct rd){.p = r->p, .pos = r->pos, .end = (size_t)end};
	r->pos = (size_t)end;
	return 0;
}

int fmp4_read_frag(const struct fmp4_init *init, const uint8_t *buf, size_t len, struct fmp4_frag *ret)
{
	ret->nsamples = 0;
	ret->other_samples = 0;
	ret->naudio = 0;
	ret->wall_us = 0;
	ret->seq = 0;
	struct rd r = {.p = buf, .end = len};
	uint32_t type;
	struct rd b, moof = {0};
	size_t moof_at = 0;
	for (;;) {
		size_t at = r.pos;
		int e = header_box(&r, &type, &b);
		if (e < 0)
			return e;
		if (type == FOURCC("moof")) {
			moof = b;
			moof_at = at;
			break;
		}
		if (type == FOURCC("prft")) {
			uint32_t version = get32(&b) >> 24;
			get32(&b);
			ret->wall_us = wall_from_ntp(get64(&b));
			if (version > 1 || b.bad)
				return -EBADMSG;
		} else if (type != FOURCC("styp") && type != FOURCC("sidx") && type != FOURCC("free")) {
			return -EBADMSG;
		}
	}
	uint64_t mdat_end;
	int e = box_header(&r, &type, &mdat_end);
	if (e < 0)
		return e;
	if (type != FOURCC("mdat") || r.pos > FMP4_FRAG_HEADER_MAX || mdat_end > UINT32_MAX)
		return -EBADMSG;
	bool have_traf = false, first = true;
	while (next_box(&moof, &type, &b)) {
		if (type == FOURCC("mfhd")) {
			get32(&b);
			ret->seq = get32(&b);
		} else if (type == FOURCC("traf")) {
			bool video;
			e = parse_traf(init, &b, moof_at, r.pos, mdat_end, first, ret, &video);
			if (e < 0)
				return e;
			if (video && have_traf)
				return -EBADMSG;
			have_traf |= video;
			first = false;
		}
	}
	if (moof.bad || !have_traf || ret->nsamples == 0)
		return -EBADMSG;
	for (unsigned i = 0; i < ret->nsamples; i++) {
		const struct fmp4_sample_info *s = &ret->samples[i];
		if (s->offset < r.pos || s->offset > mdat_end || s->size > mdat_end - s->offset)
			return -EBADMSG;
	}
	ret->header_len = (uint32_t)r.pos;
	ret->total_len = mdat_end;
	return 0;
}
