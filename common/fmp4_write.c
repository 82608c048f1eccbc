/* The fMP4 writer: init segments and fragment headers for one video track and the audio
 * track fmp4_audio.c describes (see fmp4.h).
 * Every box is written through a bounded big-endian writer that counts what overflows. */
#include "fmp4.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "fmp4_boxes.h"
#include "fmp4_audio.h"

static void sample_entry(struct bw *b, const struct fmp4_track *t)
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

int fmp4_write_init(const struct fmp4_track *t, uint8_t *out, size_t cap, size_t *ret_len)
{
	return fmp4_write_init_av(t, NULL, out, cap, ret_len);
}

int fmp4_write_init_av(const struct fmp4_track *t, const struct kp_audio_format *audio, uint8_t *out, size_t cap,
		       size_t *ret_len)
{
	if (audio && (!audio->rate || !audio->channels || audio->config_len > KP_AUDIO_CONFIG_MAX ||
		      (audio->codec != KP_AUDIO_AAC &&
		       (audio->codec != KP_AUDIO_OPUS || audio->rate != 48000 || audio->channels > 2))))
		return -EINVAL;
	struct bw b = {.p = out, .cap = cap};
	box(&b, "ftyp");
	bytes(&b, "isom", 4);
	u32(&b, 0x200);
	bytes(&b, "isomiso6mp41", 12);
	bytes(&b, t->codec == KP_CODEC_H265 ? "hev1" : "avc1", 4);
	end(&b);
	box(&b, "moov");
	full_box(&b, "mvhd", 0, 0);
	zeros(&b, 8); /* creation and modification time */
	u32(&b, 1000);
	u32(&b, 0); /* duration: the fragments say */
	u32(&b, 0x00010000);
	u16(&b, 0x0100);
	zeros(&b, 10);
	matrix(&b);
	zeros(&b, 24);
	u32(&b, audio ? FMP4_AUDIO_TRACK_ID + 1 : 2); /* next_track_ID */
	end(&b);
	box(&b, "trak");
	full_box(&b, "tkhd", 0, 3);
	zeros(&b, 8);  /* creation and modification time */
	u32(&b, 1);    /* track_ID */
	zeros(&b, 24); /* reserved, duration, reserved, layer, alternate_group, volume, reserved */
	matrix(&b);
	u32(&b, (uint32_t)t->width << 16);
	u32(&b, (uint32_t)t->height << 16);
	end(&b);
	box(&b, "mdia");
	full_box(&b, "mdhd", 0, 0);
	zeros(&b, 8); /* creation and modification time */
	u32(&b, FMP4_TIMESCALE);
	u32(&b, 0);      /* duration */
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
	dinf(&b);
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
	zeros(&b, 8); /* sample_size, sample_count */
	end(&b);
	end(&b); /* stbl */
	end(&b); /* minf */
	end(&b); /* mdia */
	end(&b); /* trak */
	if (audio)
		fmp4_audio_trak(&b, audio);
	box(&b, "mvex");
	full_box(&b, "trex", 0, 0);
	u32(&b, 1);    /* track_ID */
	u32(&b, 1);    /* default_sample_description_index */
	zeros(&b, 12); /* default duration, size and flags: every trun says */
	end(&b);
	if (audio)
		fmp4_audio_trex(&b);
	end(&b); /* mvex */
	end(&b); /* moov */
	if (b.overflow)
		return -ENOSPC;
	*ret_len = b.len;
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint64_t ntp_time(int64_t wall_us)
{
	uint64_t us = wall_us > 0 ? (uint64_t)wall_us : 0;
	uint64_t secs = us / 1000000 + FMP4_NTP_UNIX_OFFSET;
	uint64_t frac = ((us % 1000000) << 32) / 1000000;
	return secs << 32 | frac;
}

int fmp4_write_frag_header(const struct fmp4_frag_desc *f, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (!f->nsamples || f->nsamples > FMP4_FRAG_MAX_SAMPLES || f->naudio > FMP4_AUDIO_MAX_SAMPLES)
		return -EINVAL;
	uint64_t payload = 0, audio_payload = 0;
	for (unsigned i = 0; i < f->nsamples; i++)
		payload += f->samples[i].size;
	for (unsigned i = 0; i < f->naudio; i++)
		audio_payload += f->audio[i].size;
	if (payload + audio_payload > UINT32_MAX - FMP4_FRAG_HEADER_MAX)
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
	full_box(&b, "tfhd", 0, FMP4_TFHD_BASE_IS_MOOF | FMP4_TFHD_DEFAULT_FLAGS);
	u32(&b, 1);
	u32(&b, FMP4_FLAGS_NON_SYNC);
	end(&b);
	full_box(&b, "tfdt", 1, 0);
	u64(&b, f->base_time);
	end(&b);
	bool cto = false;
	for (unsigned i = 0; i < f->nsamples; i++)
		cto = cto || f->samples[i].cto != 0;
	/* Version 1: signed offsets; written only when a sample has one (no B-frames: none). */
	full_box(&b, "trun", cto ? 1 : 0,
		 FMP4_TRUN_DATA_OFFSET | FMP4_TRUN_FIRST_FLAGS | FMP4_TRUN_DURATION | FMP4_TRUN_SIZE |
		     (cto ? FMP4_TRUN_CTS : 0));
	u32(&b, f->nsamples);
	size_t data_offset_at = b.len;
	u32(&b, 0);
	u32(&b, f->samples[0].keyframe ? FMP4_FLAGS_SYNC : FMP4_FLAGS_NON_SYNC);
	for (unsigned i = 0; i < f->nsamples; i++) {
		u32(&b, f->samples[i].duration);
		u32(&b, f->samples[i].size);
		if (cto)
			u32(&b, (uint32_t)f->samples[i].cto);
	}
	end(&b); /* trun */
	end(&b); /* traf */
	size_t audio_offset_at = f->naudio ? fmp4_audio_traf(&b, f) : 0;
	end(&b); /* moof */
	uint32_t data_offset = (uint32_t)(b.len - moof_at + 8);
	u32(&b, (uint32_t)(8 + payload + audio_payload));
	bytes(&b, "mdat", 4);
	if (b.overflow)
		return -ENOSPC;
	put32(out + data_offset_at, data_offset);
	if (audio_offset_at)
		put32(out + audio_offset_at, data_offset + (uint32_t)payload);
	*ret_len = b.len;
	return 0;
}
