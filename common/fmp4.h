/* KeepPeek's fragmented MP4 (ISO/IEC 14496-12, 14496-15) for one video track and, when
 * the camera sends sound, one audio track (14496-14), pure functions over buffers, shared by recorderd (writing,
 * recovery, rebuild, export) and rtcd (stored playback):
 * - fmp4_write.c: the init segment (ftyp + moov, avc1/hev1 with the avcC/hvcC record)
 *   and, per fragment, a prft box (the wall-clock time of its first sample), moof (mfhd,
 *   traf: tfhd, tfdt, trun) and the mdat header; the caller appends the sample bytes, so
 *   it knows the exact byte range of every fragment and of its keyframe. 90 kHz. The
 *   timeline is the decode time (tfdt, sample durations from DTS deltas); a fragment
 *   with B-frames gets signed composition offsets (trun version 1, 14496-12 8.8.8) and
 *   no edit list: docs/decisions/0010-bframes-timeline.md.
 * - fmp4_audio.c: the audio track (track 2, mp4a + esds or Opus + dOps, its traf after the video's,
 *   its samples after the video's in the same mdat), timescale the sample rate.
 * - fmp4_rebase.c: moves a written fragment header earlier on the timeline.
 * - fmp4_read.c: the one bounded reader of what fmp4_write.c writes (and of other
 *   fragmented MP4 with one video track): init segment and one fragment at a time,
 *   every length checked; the samples it lists are the video track's, an audio track is
 *   described and its samples only bounds-checked; fuzzed by test/fuzz/fuzz_fmp4_read.c.
 * - fmp4_annexb.c: a length-prefixed sample back to Annex-B, with the parameter sets
 *   in front of a keyframe.
 * Decision: docs/catalog.md. */
#ifndef KP_FMP4_H
#define KP_FMP4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio.h"
#include "h26x.h"
#include "h26x_config.h"

#define FMP4_TIMESCALE         90000
#define FMP4_FRAG_MAX_SAMPLES  1024
#define FMP4_INIT_MAX          (1024 + H26X_CONFIG_MAX + 512 + KP_AUDIO_CONFIG_MAX) /* what the writer makes */
#define FMP4_AUDIO_MAX_SAMPLES 1024                                                 /* audio samples in one fragment */
#define FMP4_AUDIO_TRACK_ID    2
/* prft, moof, mfhd, the video traf, the audio traf, the mdat header */
#define FMP4_FRAG_HEADER_MAX                                                                                           \
	(32 + 8 + 16 + 8 + 20 + 20 + 24 + 12 * FMP4_FRAG_MAX_SAMPLES + 8 + 20 + 20 + 20 + 8 * FMP4_AUDIO_MAX_SAMPLES + \
	 8)
#define FMP4_READ_INIT_MAX (64 * 1024) /* ftyp + moov the reader accepts */
#define FMP4_PARAMS_MAX    4096        /* VPS/SPS/PPS in Annex-B */

/* The video track of an init segment. */
struct fmp4_track {
	enum kp_codec codec;
	uint16_t width, height;
	uint8_t config[H26X_CONFIG_MAX]; /* avcC or hvcC body */
	size_t config_len;
};

/* ---- writing ---- */

struct fmp4_sample {
	uint32_t size;
	uint32_t duration; /* 90 kHz: the next sample's DTS minus this one's */
	int32_t cto;       /* composition offset, PTS - DTS, 90 kHz (B-frames) */
	uint8_t keyframe;
};

struct fmp4_frag_desc {
	uint32_t seq;       /* from 1 in each file */
	uint64_t base_time; /* 90 kHz decode time of the first sample */
	int64_t wall_us;    /* receive time of the first sample (prft) */
	const struct fmp4_sample *samples;
	unsigned nsamples;
	/* The audio track's samples of the same time span (none: naudio 0), in its
	 * timescale; their bytes follow the video samples'. */
	uint64_t audio_base_time;
	const struct fmp4_sample *audio;
	unsigned naudio;
};

/* Init segment into out (FMP4_INIT_MAX bytes suffice). */
int fmp4_write_init(const struct fmp4_track *t, uint8_t *out, size_t cap, size_t *ret_len);

/* The same with an audio track (audio NULL: video only). */
int fmp4_write_init_av(const struct fmp4_track *t, const struct kp_audio_format *audio, uint8_t *out, size_t cap,
		       size_t *ret_len);

/* prft + moof + mdat header for the samples that follow it; *ret_len bytes. */
int fmp4_write_frag_header(const struct fmp4_frag_desc *f, uint8_t *out, size_t cap, size_t *ret_len);

/* Moves a fragment header as fmp4_write_frag_header writes it (buf holding at least its
 * header_len bytes) earlier on the timeline by minus (90 kHz): tfdt and prft's media
 * time, so that an export starting in the middle of a file starts at time 0. An audio
 * traf's tfdt moves by the same time in audio_rate units (audio_rate 0: there is no
 * audio track). -ERANGE when the fragment starts before minus, -EBADMSG when it is not
 * such a header. */
int fmp4_frag_rebase(uint8_t *buf, size_t len, uint64_t minus, uint32_t audio_rate);

/* ---- reading ---- */

/* What the reader finds in an init segment. */
struct fmp4_init {
	struct fmp4_track track;
	uint32_t track_id; /* the video track's */
	/* The audio track when there is one (audio.codec KP_AUDIO_NONE otherwise): its
	 * track_ID, and rate, channels and config from its sample entry. */
	uint32_t audio_track_id;
	uint32_t audio_timescale;
	struct kp_audio_format audio;
	size_t len; /* bytes of the init segment (through moov) */
	uint32_t timescale;
	unsigned nal_len_size; /* 1, 2 or 4 */
	uint32_t trex_duration, trex_size, trex_flags;
	uint8_t params[FMP4_PARAMS_MAX]; /* the record's parameter sets, Annex-B */
	size_t params_len;
};

struct fmp4_sample_info {
	uint32_t offset; /* from the start of the fragment */
	uint32_t size;
	uint32_t duration; /* track timescale */
	int32_t cts;       /* composition offset */
	uint64_t dts;      /* track timescale, tfdt + earlier durations */
	bool keyframe;
};

struct fmp4_frag {
	uint32_t seq;
	uint64_t base_time;  /* tfdt */
	int64_t wall_us;     /* prft (0 when absent) */
	uint64_t duration;   /* sum of the sample durations */
	uint32_t header_len; /* [prft +] moof + mdat header */
	uint64_t total_len;  /* header and samples: may exceed the bytes given */
	unsigned nsamples;
	struct fmp4_sample_info samples[FMP4_FRAG_MAX_SAMPLES];
	/* Other tracks' trafs (audio): their samples counted, their first tfdt. When the
	 * caller sets audio (FMP4_AUDIO_MAX_SAMPLES entries; fmp4_read_frag leaves the pointer
	 * as it is), the audio track's samples (init's audio_track_id) go there, naudio of
	 * them (offsets from the fragment's start, dts in the audio timescale). */
	unsigned other_samples;
	uint64_t other_base_time;
	struct fmp4_sample_info *audio;
	unsigned naudio;
};

/* The init segment at the start of buf: 0; -EAGAIN when buf ends inside it; -EBADMSG
 * when it does not have exactly one H.264/H.265 video track (an audio track is read,
 * other tracks are skipped). */
int fmp4_read_init(const uint8_t *buf, size_t len, struct fmp4_init *ret);

/* The fragment whose first bytes are buf ([prft +] moof + mdat header, at most
 * FMP4_FRAG_HEADER_MAX bytes, must lie in buf; the samples may not). init gives the
 * trex defaults and the video track's ID (NULL: no defaults, the first traf is the
 * video). 0 with every sample inside the mdat, -EAGAIN when buf ends
 * inside the header, -EBADMSG otherwise. A caller reading a fragment whole checks
 * total_len against the bytes it has. */
int fmp4_read_frag(const struct fmp4_init *init, const uint8_t *buf, size_t len, struct fmp4_frag *ret);

/* ---- samples ---- */

/* Bytes that fmp4_annexb may need for a sample of len bytes. */
size_t fmp4_annexb_cap(const struct fmp4_init *init, size_t len);

/* Length-prefixed sample -> Annex-B into out; a keyframe gets the init's parameter sets
 * first unless it carries its own. 0, -EBADMSG when a NAL length overruns the sample,
 * -ENOSPC when out is too small. */
int fmp4_annexb(const struct fmp4_init *init, const uint8_t *sample, size_t len, bool keyframe, uint8_t *out,
		size_t cap, size_t *ret_len);

#endif
