/* BcMedia, the record stream inside msg 3 payloads (BAICHUAN.md section 5): parsing one
 * record from a buffer, a bounded per-stream reassembly buffer with non-strict resync,
 * and the record serializers the test camera uses. Pure code: no I/O. */
#ifndef KP_BC_MEDIA_H
#define KP_BC_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h26x.h"

#define BC_MEDIA_INFO_SIZE    32
#define BC_MEDIA_FRAME_HEADER 24
#define BC_MEDIA_AUDIO_HEADER 8
/* Largest additional header after a frame's 24 fixed bytes. */
#define BC_MEDIA_MAX_EXTRA 256
/* Largest record: a frame's header, extra header, payload and padding. */
#define BC_MEDIA_MAX_RECORD (16u * 1024 * 1024)

enum bc_media_kind { BC_MEDIA_INFO, BC_MEDIA_IFRAME, BC_MEDIA_PFRAME, BC_MEDIA_AAC, BC_MEDIA_ADPCM };
struct bc_media_record {
	enum bc_media_kind kind;
	size_t record_len; /* bytes consumed, padding included */
	/* INFO */
	uint32_t width, height;
	uint8_t fps;
	/* IFRAME / PFRAME */
	enum kp_codec codec;
	uint32_t ts_us;
	bool has_utc;
	uint32_t utc_s;
	/* Frames and audio: the payload (Annex-B NALs, ADTS frames, the DVI-4 block). */
	const uint8_t *data;
	size_t len;
};

/* Parses the record at the start of buf. Returns 0, -EAGAIN when the record is
 * incomplete, -EBADMSG (unknown magic, info size not 32, unknown fourcc, audio sizes
 * unequal, ADPCM sub-magic or size), -EMSGSIZE (record over BC_MEDIA_MAX_RECORD or
 * an extra header over BC_MEDIA_MAX_EXTRA). */
int bc_media_parse(const uint8_t *buf, size_t len, struct bc_media_record *ret, const char **ret_reason);

/* Does a known record magic start at p (4 bytes)? */
bool bc_media_is_magic(const uint8_t *p);

/* Zero padding after a payload of len bytes. */
static inline size_t bc_media_pad(size_t len)
{
	return (8 - len % 8) % 8;
}

/* Per-stream reassembly: msg 3 payloads in, whole records out. */
struct bc_media_stream {
	uint8_t *buf;
	size_t start, len, cap; /* unread bytes are buf[start .. start+len) */
	uint64_t resyncs;       /* times garbage was discarded */
	uint64_t discarded;     /* bytes discarded by resyncs */
	const char *last_error; /* reason of the latest resync */
};

/* Appends a payload. Returns 0, or -ENOBUFS when the buffer would exceed
 * BC_MEDIA_MAX_RECORD plus one slice (the caller should then reset the stream). */
int bc_media_stream_push(struct bc_media_stream *m, const uint8_t *data, size_t len);

/* Next whole record: 0 (valid until the next push), or -EAGAIN. Malformed data is
 * discarded up to the next known magic and counted in resyncs. */
int bc_media_stream_next(struct bc_media_stream *m, struct bc_media_record *ret);
void bc_media_stream_reset(struct bc_media_stream *m);
void bc_media_stream_free(struct bc_media_stream *m);

/* Unwraps the u32 microsecond timestamp (it wraps every 71.6 minutes) into a 64-bit
 * one starting at the first value; a step back of less than 2^31 µs stays a step back. */
struct bc_ts_unwrap {
	bool init;
	uint32_t last;
	int64_t ext_us;
};
int64_t bc_ts_unwrap(struct bc_ts_unwrap *u, uint32_t ts_us);

/* Serializers: each writes a header to out (of the given size) and returns its length. */
size_t bc_media_write_info(uint8_t out[BC_MEDIA_INFO_SIZE], uint32_t width, uint32_t height, uint8_t fps);
/* A frame header; with utc_s nonzero an 8-byte additional header carrying it. */
#define BC_MEDIA_FRAME_HEADER_MAX (BC_MEDIA_FRAME_HEADER + 8)
size_t bc_media_write_frame_header(uint8_t out[BC_MEDIA_FRAME_HEADER_MAX], bool keyframe, enum kp_codec codec,
				   uint32_t payload_len, uint32_t ts_us, uint32_t utc_s);
/* An AAC record's header ("05wb", the payload size twice, as neolink's
 * bcmedia/ser.rs bcmedia_aac writes it) for payload_len bytes of ADTS frames. */
size_t bc_media_write_aac_header(uint8_t out[BC_MEDIA_AUDIO_HEADER], uint16_t payload_len);
/* An ADPCM record's header for one block of block_len bytes (its 4-byte state
 * included): "01wb", block_len + 4 twice, the sub-magic 0x0100 and (block_len - 4) / 2,
 * as neolink's bcmedia/ser.rs bcmedia_adpcm writes it. */
#define BC_MEDIA_ADPCM_HEADER (BC_MEDIA_AUDIO_HEADER + 4)
size_t bc_media_write_adpcm_header(uint8_t out[BC_MEDIA_ADPCM_HEADER], uint16_t block_len);

#endif
