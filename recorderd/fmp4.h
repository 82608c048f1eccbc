/* KeepPeek's own fragmented-MP4 serializer and its reader for recovery: the init
 * segment (ftyp + moov with one video track, avc1/hev1) and, per fragment, a prft box
 * (the wall-clock time of its first sample), moof (mfhd, traf: tfhd, tfdt, trun) and the
 * mdat header; the caller appends the sample bytes, so it knows the exact byte range of
 * every fragment and of its keyframe. One 90 kHz timeline per file. Pure functions over
 * buffers; the reader is fuzzed by test/fuzz/fuzz_rec_fmp4.c. Decision: docs/catalog.md. */
#ifndef KP_REC_FMP4_H
#define KP_REC_FMP4_H

#include <stddef.h>
#include <stdint.h>

#include "h26x_config.h"

#define REC_TIMESCALE        90000
#define REC_FRAG_MAX_SAMPLES 1024
#define REC_INIT_MAX         (1024 + H26X_CONFIG_MAX)
#define REC_FRAG_HEADER_MAX  (32 + 8 + 16 + 8 + 20 + 20 + 24 + 8 * REC_FRAG_MAX_SAMPLES + 8)

struct rec_track {
	enum kp_codec codec;
	uint16_t width, height;
	uint8_t config[H26X_CONFIG_MAX]; /* avcC or hvcC body */
	size_t config_len;
};

struct rec_sample {
	uint32_t size;
	uint32_t duration; /* 90 kHz */
	uint8_t keyframe;
};

struct rec_frag_desc {
	uint32_t seq;       /* from 1 in each file */
	uint64_t base_time; /* 90 kHz decode time of the first sample */
	int64_t wall_us;    /* receive time of the first sample (prft) */
	const struct rec_sample *samples;
	unsigned nsamples;
};

/* Init segment into out (REC_INIT_MAX bytes suffice). */
int rec_fmp4_init(const struct rec_track *t, uint8_t *out, size_t cap, size_t *ret_len);

/* prft + moof + mdat header for the samples that follow it; *ret_len bytes. */
int rec_fmp4_frag_header(const struct rec_frag_desc *f, uint8_t *out, size_t cap, size_t *ret_len);

/* What the reader finds in one fragment. */
struct rec_frag_info {
	uint32_t seq;
	uint64_t base_time;
	int64_t wall_us;
	uint64_t duration; /* 90 kHz, sum of the samples */
	uint32_t nsamples;
	uint32_t header_len; /* prft + moof + mdat header: the first sample starts here */
	uint64_t total_len;  /* header and samples */
	uint32_t first_size; /* bytes of the first sample */
	uint8_t first_keyframe;
};

/* Parses the fragment whose first bytes are buf (len bytes: at least its header, which
 * REC_FRAG_HEADER_MAX bounds). 0, -EAGAIN when buf ends inside the header, -EBADMSG
 * when the bytes are not a fragment this writer makes. */
int rec_fmp4_frag_parse(const uint8_t *buf, size_t len, struct rec_frag_info *ret);

/* Length of the init segment at the start of buf and the track it describes; -EAGAIN
 * when buf ends inside it, -EBADMSG when it is not ours. */
int rec_fmp4_init_parse(const uint8_t *buf, size_t len, struct rec_track *ret_track, size_t *ret_len);

/* Moves a fragment header (prft + moof as written, buf holding at least header_len
 * bytes) earlier on the timeline by minus (90 kHz): tfdt and prft's media time. So
 * that an export starting in the middle of a file starts at time 0. -ERANGE when the
 * fragment starts before minus. */
int rec_fmp4_frag_rebase(uint8_t *buf, size_t len, uint64_t minus);

#endif
