/* A bounded reader of the fragmented MP4 that recorderd writes (recorderd/fmp4.c), for
 * stored playback: the init segment (ftyp + moov: timescale, avc1/hev1/hvc1 sample
 * entry, avcC/hvcC parameter sets) and one fragment at a time ([prft] + moof + mdat:
 * tfhd, tfdt, trun -> samples with their byte ranges, durations and sync flags), and
 * the conversion of a length-prefixed sample to Annex-B with the parameter sets before
 * every keyframe. Every size is checked against the buffer; fuzzed by
 * test/fuzz/fuzz_rtc_fmp4_read.c. */
#ifndef KP_RTC_FMP4_READ_H
#define KP_RTC_FMP4_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

#define RTC_FMP4_INIT_MAX    (64 * 1024)        /* ftyp + moov */
#define RTC_FMP4_FRAG_MAX    (32 * 1024 * 1024) /* one fragment (one GOP) */
#define RTC_FMP4_PARAMS_MAX  4096               /* VPS/SPS/PPS in Annex-B */
#define RTC_FMP4_MAX_SAMPLES 1024               /* per fragment */

struct rtc_fmp4_track {
	kp_Codec codec;
	uint32_t timescale;
	uint32_t width, height;
	unsigned nal_len_size; /* 1, 2 or 4 */
	uint32_t trex_duration, trex_size, trex_flags;
	uint8_t params[RTC_FMP4_PARAMS_MAX]; /* Annex-B, start codes included */
	size_t params_len;
};

struct rtc_fmp4_sample {
	uint32_t offset; /* from the start of the fragment buffer */
	uint32_t size;
	uint32_t duration; /* track timescale */
	int32_t cts;       /* composition offset */
	uint64_t dts;      /* track timescale, tfdt + earlier durations */
	bool keyframe;
};

struct rtc_fmp4_frag {
	uint32_t seq;
	uint64_t base_time; /* tfdt */
	int64_t wall_us;    /* prft (0 when absent) */
	uint64_t duration;  /* sum of the sample durations */
	uint64_t total_len; /* bytes of [prft +] moof + mdat */
	unsigned nsamples;
	struct rtc_fmp4_sample samples[RTC_FMP4_MAX_SAMPLES];
};

/* 0 and the track; -EBADMSG when buf is not one video track's init segment. */
int rtc_fmp4_parse_init(const uint8_t *buf, size_t len, struct rtc_fmp4_track *ret);

/* 0 and the fragment's samples, all inside buf; -EBADMSG otherwise. */
int rtc_fmp4_parse_frag(const struct rtc_fmp4_track *t, const uint8_t *buf, size_t len, struct rtc_fmp4_frag *ret);

/* Bytes that rtc_fmp4_annexb may need for a sample of len bytes. */
size_t rtc_fmp4_annexb_cap(const struct rtc_fmp4_track *t, size_t len);

/* Length-prefixed sample -> Annex-B into out; a keyframe gets the track's parameter
 * sets first unless it carries its own. 0, -EBADMSG when a NAL length overruns the
 * sample, -ENOSPC when out is too small. */
int rtc_fmp4_annexb(const struct rtc_fmp4_track *t, const uint8_t *sample, size_t len, bool keyframe, uint8_t *out,
		    size_t cap, size_t *ret_len);

#endif
