/* The audio track of a recording (see fmp4.h): track 2, whose timescale is its sample
 * rate. AAC is an MPEG-4 audio sample entry (mp4a, ISO/IEC 14496-14 5.6) whose esds
 * (14496-1 7.2.6.5: ES_Descriptor, DecoderConfigDescriptor with objectTypeIndication
 * 0x40 "Audio ISO/IEC 14496-3", DecoderSpecificInfo holding the AudioSpecificConfig,
 * SLConfigDescriptor predefined 2) describes the raw frames (no ADTS headers) its
 * samples hold. Opus is an `Opus` sample entry with a `dOps` box ("Encapsulation of
 * Opus in ISO Base Media File Format" 4.3: version 0, the channel count, PreSkip 0 as
 * a camera's encoder delay is not known, InputSampleRate 48000, OutputGain 0, channel
 * mapping family 0), one packet per sample, timescale 48000. Every audio sample is a
 * sync sample. */
#include "fmp4_audio.h"

#include "fmp4_boxes.h"

static void esds(struct bw *b, const struct kp_audio_format *a)
{
	uint32_t dsi = 2 + (uint32_t)a->config_len; /* tag, length, AudioSpecificConfig */
	uint32_t dcd = 13 + dsi;                    /* DecoderConfigDescriptor body */
	uint32_t es = 3 + 2 + dcd + 3;              /* ES_Descriptor body: ..., SLConfig */
	full_box(b, "esds", 0, 0);
	u8(b, 0x03); /* ES_DescrTag */
	u8(b, es);
	u16(b, 0);   /* ES_ID */
	u8(b, 0);    /* no dependency, URL or OCR stream */
	u8(b, 0x04); /* DecoderConfigDescrTag */
	u8(b, dcd);
	u8(b, 0x40); /* Audio ISO/IEC 14496-3 */
	u8(b, 0x15); /* streamType 5 (audio) << 2 | upStream 0 | reserved 1 */
	u8(b, 0);    /* bufferSizeDB, 24 bits */
	u16(b, 0);
	u32(b, 0);   /* maxBitrate: unknown */
	u32(b, 0);   /* avgBitrate: variable */
	u8(b, 0x05); /* DecSpecificInfoTag */
	u8(b, (uint32_t)a->config_len);
	bytes(b, a->config, a->config_len);
	u8(b, 0x06); /* SLConfigDescrTag */
	u8(b, 1);
	u8(b, 0x02); /* predefined: MP4 files */
	end(b);
}

static void dops(struct bw *b, const struct kp_audio_format *a)
{
	box(b, "dOps");
	u8(b, 0); /* Version */
	u8(b, a->channels);
	u16(b, 0); /* PreSkip */
	u32(b, 48000);
	u16(b, 0); /* OutputGain */
	u8(b, 0);  /* ChannelMappingFamily: mono or stereo */
	end(b);
}

static void sample_entry(struct bw *b, const struct kp_audio_format *a)
{
	box(b, a->codec == KP_AUDIO_OPUS ? "Opus" : "mp4a");
	zeros(b, 6);
	u16(b, 1);   /* data_reference_index */
	zeros(b, 8); /* reserved */
	u16(b, a->channels);
	u16(b, 16); /* samplesize */
	u16(b, 0);  /* pre_defined */
	u16(b, 0);
	u32(b, a->rate <= 0xffff ? a->rate << 16 : 0);
	if (a->codec == KP_AUDIO_OPUS)
		dops(b, a);
	else
		esds(b, a);
	end(b);
}

void fmp4_audio_trak(struct bw *b, const struct kp_audio_format *a)
{
	box(b, "trak");
	full_box(b, "tkhd", 0, 3);
	zeros(b, 8); /* creation and modification time */
	u32(b, FMP4_AUDIO_TRACK_ID);
	zeros(b, 16);   /* reserved, duration, reserved */
	u16(b, 0);      /* layer */
	u16(b, 0);      /* alternate_group */
	u16(b, 0x0100); /* volume */
	u16(b, 0);
	matrix(b);
	zeros(b, 8); /* width, height */
	end(b);
	box(b, "mdia");
	full_box(b, "mdhd", 0, 0);
	zeros(b, 8);
	u32(b, a->rate);
	u32(b, 0);
	u16(b, 0x55c4); /* "und" */
	u16(b, 0);
	end(b);
	full_box(b, "hdlr", 0, 0);
	u32(b, 0);
	bytes(b, "soun", 4);
	zeros(b, 12);
	bytes(b, "SoundHandler", 13);
	end(b);
	box(b, "minf");
	full_box(b, "smhd", 0, 0);
	zeros(b, 4); /* balance, reserved */
	end(b);
	dinf(b);
	box(b, "stbl");
	full_box(b, "stsd", 0, 0);
	u32(b, 1);
	sample_entry(b, a);
	end(b);
	const char *empty[] = {"stts", "stsc", "stco"};
	for (int i = 0; i < 3; i++) {
		full_box(b, empty[i], 0, 0);
		u32(b, 0);
		end(b);
	}
	full_box(b, "stsz", 0, 0);
	zeros(b, 8);
	end(b);
	end(b); /* stbl */
	end(b); /* minf */
	end(b); /* mdia */
	end(b); /* trak */
}

void fmp4_audio_trex(struct bw *b)
{
	full_box(b, "trex", 0, 0);
	u32(b, FMP4_AUDIO_TRACK_ID);
	u32(b, 1);
	zeros(b, 12);
	end(b);
}

size_t fmp4_audio_traf(struct bw *b, const struct fmp4_frag_desc *f)
{
	box(b, "traf");
	full_box(b, "tfhd", 0, FMP4_TFHD_BASE_IS_MOOF | FMP4_TFHD_DEFAULT_FLAGS);
	u32(b, FMP4_AUDIO_TRACK_ID);
	u32(b, FMP4_FLAGS_SYNC);
	end(b);
	full_box(b, "tfdt", 1, 0);
	u64(b, f->audio_base_time);
	end(b);
	full_box(b, "trun", 0, FMP4_TRUN_DATA_OFFSET | FMP4_TRUN_DURATION | FMP4_TRUN_SIZE);
	u32(b, f->naudio);
	size_t data_offset_at = b->len;
	u32(b, 0);
	for (unsigned i = 0; i < f->naudio; i++) {
		u32(b, f->audio[i].duration);
		u32(b, f->audio[i].size);
	}
	end(b); /* trun */
	end(b); /* traf */
	return data_offset_at;
}
