/* BcMedia record parsing, reassembly and serialization (BAICHUAN.md sections 5 and 7.10). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bc_header.h"
#include "bc_media.h"

#define MAGIC_INFO_V1  0x31303031u /* "1001" */
#define MAGIC_INFO_V2  0x32303031u /* "1002" */
#define MAGIC_AAC      0x62773530u /* "05wb" */
#define MAGIC_AAC_ALT  0x62773531u /* "15wb" */
#define MAGIC_ADPCM    0x62773130u /* "01wb" */
#define FOURCC_H264    0x34363248u /* "H264" */
#define FOURCC_H265    0x35363248u /* "H265" */
#define ADPCM_SUBMAGIC 0x0100

/* "x0dc" is an I-frame, "x1dc" a P-frame, x a digit. Returns 1, 2 or 0. */
static int frame_magic(const uint8_t *p)
{
	if (p[0] < '0' || p[0] > '9' || p[2] != 'd' || p[3] != 'c')
		return 0;
	return p[1] == '0' ? 1 : p[1] == '1' ? 2 : 0;
}

bool bc_media_is_magic(const uint8_t *p)
{
	uint32_t m = bc_get_le32(p);
	return frame_magic(p) || m == MAGIC_INFO_V1 || m == MAGIC_INFO_V2 || m == MAGIC_AAC || m == MAGIC_AAC_ALT ||
	       m == MAGIC_ADPCM;
}

static int need(size_t have, size_t want, const char **ret_reason)
{
	if (have >= want)
		return 0;
	*ret_reason = "incomplete media record";
	return -EAGAIN;
}

static int parse_info(const uint8_t *buf, size_t len, struct bc_media_record *ret, const char **ret_reason)
{
	int err;
	if ((err = need(len, 8, ret_reason)) < 0)
		return err;
	if (bc_get_le32(buf + 4) != BC_MEDIA_INFO_SIZE) {
		*ret_reason = "media info header size is not 32";
		return -EBADMSG;
	}
	if ((err = need(len, BC_MEDIA_INFO_SIZE, ret_reason)) < 0)
		return err;
	*ret = (struct bc_media_record){
	    .kind = BC_MEDIA_INFO,
	    .record_len = BC_MEDIA_INFO_SIZE,
	    .width = bc_get_le32(buf + 8),
	    .height = bc_get_le32(buf + 12),
	    .fps = buf[17],
	};
	return 0;
}

static int parse_frame(const uint8_t *buf, size_t len, bool key, struct bc_media_record *ret, const char **ret_reason)
{
	int err;
	if ((err = need(len, 8, ret_reason)) < 0)
		return err;
	uint32_t fourcc = bc_get_le32(buf + 4);
	if (fourcc != FOURCC_H264 && fourcc != FOURCC_H265) {
		*ret_reason = "video fourcc is neither H264 nor H265";
		return -EBADMSG;
	}
	if ((err = need(len, BC_MEDIA_FRAME_HEADER, ret_reason)) < 0)
		return err;
	uint32_t size = bc_get_le32(buf + 8), extra = bc_get_le32(buf + 12);
	if (extra > BC_MEDIA_MAX_EXTRA) {
		*ret_reason = "media frame additional header too large";
		return -EMSGSIZE;
	}
	uint64_t total = (uint64_t)BC_MEDIA_FRAME_HEADER + extra + size + bc_media_pad(size);
	if (total > BC_MEDIA_MAX_RECORD) {
		*ret_reason = "media frame exceeds the 16 MiB ceiling";
		return -EMSGSIZE;
	}
	if ((err = need(len, (size_t)total, ret_reason)) < 0)
		return err;
	*ret = (struct bc_media_record){
	    .kind = key ? BC_MEDIA_IFRAME : BC_MEDIA_PFRAME,
	    .record_len = (size_t)total,
	    .codec = fourcc == FOURCC_H264 ? KP_CODEC_H264 : KP_CODEC_H265,
	    .ts_us = bc_get_le32(buf + 16),
	    .has_utc = extra >= 4,
	    .utc_s = extra >= 4 ? bc_get_le32(buf + BC_MEDIA_FRAME_HEADER) : 0,
	    .data = buf + BC_MEDIA_FRAME_HEADER + extra,
	    .len = size,
	};
	return 0;
}

static int parse_audio(const uint8_t *buf, size_t len, bool adpcm, struct bc_media_record *ret, const char **ret_reason)
{
	int err;
	if ((err = need(len, BC_MEDIA_AUDIO_HEADER, ret_reason)) < 0)
		return err;
	uint16_t size = bc_get_le16(buf + 4);
	if (size != bc_get_le16(buf + 6)) {
		*ret_reason = "audio record sizes differ";
		return -EBADMSG;
	}
	if (adpcm && size < 4) {
		*ret_reason = "ADPCM record shorter than its 4-byte header";
		return -EBADMSG;
	}
	size_t total = BC_MEDIA_AUDIO_HEADER + size + bc_media_pad(size);
	if ((err = need(len, adpcm ? BC_MEDIA_AUDIO_HEADER + 2 : total, ret_reason)) < 0)
		return err;
	if (adpcm && bc_get_le16(buf + BC_MEDIA_AUDIO_HEADER) != ADPCM_SUBMAGIC) {
		*ret_reason = "ADPCM sub-magic is not 0x0100";
		return -EBADMSG;
	}
	if ((err = need(len, total, ret_reason)) < 0)
		return err;
	*ret = (struct bc_media_record){
	    .kind = adpcm ? BC_MEDIA_ADPCM : BC_MEDIA_AAC,
	    .record_len = total,
	    .data = buf + BC_MEDIA_AUDIO_HEADER + (adpcm ? 4 : 0),
	    .len = size - (adpcm ? 4u : 0u),
	};
	return 0;
}

int bc_media_parse(const uint8_t *buf, size_t len, struct bc_media_record *ret, const char **ret_reason)
{
	int err;
	if ((err = need(len, 4, ret_reason)) < 0)
		return err;
	uint32_t m = bc_get_le32(buf);
	int fm = frame_magic(buf);
	if (fm)
		return parse_frame(buf, len, fm == 1, ret, ret_reason);
	if (m == MAGIC_INFO_V1 || m == MAGIC_INFO_V2)
		return parse_info(buf, len, ret, ret_reason);
	if (m == MAGIC_AAC || m == MAGIC_AAC_ALT)
		return parse_audio(buf, len, false, ret, ret_reason);
	if (m == MAGIC_ADPCM)
		return parse_audio(buf, len, true, ret, ret_reason);
	*ret_reason = "unknown media magic";
	return -EBADMSG;
}

int bc_media_stream_push(struct bc_media_stream *m, const uint8_t *data, size_t len)
{
	/* What is left between pushes is one incomplete record whose size was checked, so
	 * this only fires on a caller that does not drain the stream. */
	if (m->len > BC_MEDIA_MAX_RECORD || len > BC_MEDIA_MAX_RECORD)
		return -ENOBUFS;
	if (!len)
		return 0;
	if (m->start + m->len + len > m->cap) {
		if (m->len)
			memmove(m->buf, m->buf + m->start, m->len);
		m->start = 0;
		if (m->len + len > m->cap) {
			size_t cap = m->cap ? m->cap : 65536;
			while (cap < m->len + len)
				cap *= 2;
			uint8_t *b = realloc(m->buf, cap);
			if (!b)
				return -ENOMEM;
			m->buf = b;
			m->cap = cap;
		}
	}
	memcpy(m->buf + m->start + m->len, data, len);
	m->len += len;
	return 0;
}

int bc_media_stream_next(struct bc_media_stream *m, struct bc_media_record *ret)
{
	while (m->len) {
		const char *reason;
		int err = bc_media_parse(m->buf + m->start, m->len, ret, &reason);
		if (err == 0) {
			m->start += ret->record_len;
			m->len -= ret->record_len;
			if (!m->len)
				m->start = 0;
			return 0;
		}
		if (err == -EAGAIN)
			return err;
		/* Non-strict: drop the bad byte(s) and resync on the next known magic. */
		size_t skip = 1;
		while (skip + 4 <= m->len && !bc_media_is_magic(m->buf + m->start + skip))
			skip++;
		if (skip + 4 > m->len)
			skip = m->len > 3 ? m->len - 3 : m->len;
		m->start += skip;
		m->len -= skip;
		m->resyncs++;
		m->discarded += skip;
		m->last_error = reason;
	}
	return -EAGAIN;
}

void bc_media_stream_reset(struct bc_media_stream *m)
{
	m->start = 0;
	m->len = 0;
}

void bc_media_stream_free(struct bc_media_stream *m)
{
	free(m->buf);
	*m = (struct bc_media_stream){0};
}

int64_t bc_ts_unwrap(struct bc_ts_unwrap *u, uint32_t ts_us)
{
	if (!u->init) {
		u->init = true;
		u->ext_us = ts_us;
	} else {
		uint32_t delta = ts_us - u->last;
		u->ext_us += delta < 0x80000000u ? (int64_t)delta : -(int64_t)(0x100000000ull - delta);
	}
	u->last = ts_us;
	return u->ext_us;
}

size_t bc_media_write_info(uint8_t out[BC_MEDIA_INFO_SIZE], uint32_t width, uint32_t height, uint8_t fps)
{
	memset(out, 0, BC_MEDIA_INFO_SIZE);
	bc_put_le32(out, MAGIC_INFO_V2);
	bc_put_le32(out + 4, BC_MEDIA_INFO_SIZE);
	bc_put_le32(out + 8, width);
	bc_put_le32(out + 12, height);
	out[17] = fps;
	return BC_MEDIA_INFO_SIZE;
}

size_t bc_media_write_aac_header(uint8_t out[BC_MEDIA_AUDIO_HEADER], uint16_t payload_len)
{
	bc_put_le32(out, MAGIC_AAC);
	bc_put_le16(out + 4, payload_len);
	bc_put_le16(out + 6, payload_len);
	return BC_MEDIA_AUDIO_HEADER;
}

size_t bc_media_write_adpcm_header(uint8_t out[BC_MEDIA_ADPCM_HEADER], uint16_t block_len)
{
	bc_put_le32(out, MAGIC_ADPCM);
	bc_put_le16(out + 4, (uint16_t)(block_len + 4));
	bc_put_le16(out + 6, (uint16_t)(block_len + 4));
	bc_put_le16(out + 8, ADPCM_SUBMAGIC);
	bc_put_le16(out + 10, (uint16_t)((block_len - 4) / 2));
	return BC_MEDIA_ADPCM_HEADER;
}

size_t bc_media_write_frame_header(uint8_t out[BC_MEDIA_FRAME_HEADER_MAX], bool keyframe, enum kp_codec codec,
				   uint32_t payload_len, uint32_t ts_us, uint32_t utc_s)
{
	uint32_t extra = utc_s ? 8 : 0;
	memcpy(out, keyframe ? "00dc" : "01dc", 4);
	bc_put_le32(out + 4, codec == KP_CODEC_H264 ? FOURCC_H264 : FOURCC_H265);
	bc_put_le32(out + 8, payload_len);
	bc_put_le32(out + 12, extra);
	bc_put_le32(out + 16, ts_us);
	bc_put_le32(out + 20, 0);
	if (extra) {
		bc_put_le32(out + 24, utc_s);
		bc_put_le32(out + 28, 0);
	}
	return BC_MEDIA_FRAME_HEADER + extra;
}
