/* Annex-B scanning, NAL unit types and length-prefixed conversion for H.264 and H.265
 * (see h26x.h). */
#include "h26x.h"

#include <errno.h>
#include <string.h>

bool h26x_is_param_set(enum kp_codec codec, unsigned type)
{
	if (codec == KP_CODEC_H265)
		return type >= 32 && type <= 34;
	return type == 7 || type == 8;
}

bool h26x_is_keyframe(enum kp_codec codec, unsigned type)
{
	if (codec == KP_CODEC_H265)
		return type >= 16 && type <= 23;
	return type == 5;
}

bool h26x_is_vcl(enum kp_codec codec, unsigned type)
{
	if (codec == KP_CODEC_H265)
		return type <= 31;
	return type >= 1 && type <= 5;
}

size_t h26x_start_code(const uint8_t *buf, size_t len, size_t from)
{
	size_t i = from;
	while (i + 3 <= len) {
		if (buf[i + 2] > 1)
			i += 3;
		else if (buf[i] == 0 && buf[i + 1] == 0 && buf[i + 2] == 1)
			return i;
		else
			i++;
	}
	return len;
}

bool h26x_is_annexb(const uint8_t *buf, size_t len)
{
	return (len >= 3 && buf[0] == 0 && buf[1] == 0 && buf[2] == 1) ||
	       (len >= 4 && buf[0] == 0 && buf[1] == 0 && buf[2] == 0 && buf[3] == 1);
}

/* The end of the unit that starts at start and runs to the start code at code (or the end):
 * trailing zero bytes belong to no unit. */
static size_t unit_end(const uint8_t *buf, size_t start, size_t code)
{
	while (code > start && buf[code - 1] == 0)
		code--;
	return code;
}

bool h26x_annexb_next(const uint8_t *buf, size_t len, size_t *off, const uint8_t **ret_nal, size_t *ret_len)
{
	size_t s = h26x_start_code(buf, len, *off);
	while (s < len) {
		size_t nal = s + 3;
		size_t next = h26x_start_code(buf, len, nal);
		size_t end = unit_end(buf, nal, next);
		if (end > nal) {
			*off = next;
			*ret_nal = buf + nal;
			*ret_len = end - nal;
			return true;
		}
		s = next;
	}
	*off = len;
	return false;
}

int h26x_split(const uint8_t *buf, size_t len, struct h26x_nal *ret_nals, unsigned max)
{
	size_t code = h26x_start_code(buf, len, 0);
	for (size_t i = 0; i < code; i++)
		if (buf[i] != 0)
			return -EBADMSG;
	if (code + 3 >= len)
		return -EBADMSG;
	unsigned n = 0;
	size_t start = code + 3;
	while (start < len) {
		size_t next = h26x_start_code(buf, len, start);
		size_t end = unit_end(buf, start, next);
		if (end == start)
			return -EBADMSG;
		if (n >= max)
			return -E2BIG;
		ret_nals[n].data = buf + start;
		ret_nals[n].len = end - start;
		n++;
		start = next < len ? next + 3 : len;
	}
	return (int)n;
}

int h26x_prefixed_next(const uint8_t *buf, size_t len, unsigned lsz, size_t *off, struct h26x_nal *ret)
{
	if (*off >= len)
		return 0;
	if (len - *off < lsz)
		return -EBADMSG;
	size_t n = 0;
	for (unsigned i = 0; i < lsz; i++)
		n = n << 8 | buf[*off + i];
	size_t at = *off + lsz;
	if (n > len - at)
		return -EBADMSG;
	ret->data = buf + at;
	ret->len = n;
	*off = at + n;
	return 1;
}

static int keep(struct h26x_ps *dst, const struct h26x_nal *n)
{
	if (n->len > H26X_PS_MAX)
		return -E2BIG;
	memcpy(dst->data, n->data, n->len);
	dst->len = (uint16_t)n->len;
	return 1;
}

int h26x_param_sets(enum kp_codec codec, const struct h26x_nal *nals, unsigned n, struct h26x_param_sets *ps)
{
	int found = 0;
	for (unsigned i = 0; i < n; i++) {
		if (nals[i].len < h26x_nal_header_size(codec))
			continue;
		unsigned t = h26x_nal_type(codec, nals[i].data);
		struct h26x_ps *dst;
		if (codec == KP_CODEC_H265)
			dst = t == 32 ? &ps->vps : t == 33 ? &ps->sps : t == 34 ? &ps->pps : NULL;
		else
			dst = t == 7 ? &ps->sps : t == 8 ? &ps->pps : NULL;
		if (!dst)
			continue;
		int r = keep(dst, &nals[i]);
		if (r < 0)
			return r;
		found++;
	}
	return found;
}

size_t h26x_sample_size(const struct h26x_nal *nals, unsigned n)
{
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += 4 + nals[i].len;
	return total;
}

void h26x_to_sample(const struct h26x_nal *nals, unsigned n, uint8_t *out)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t l = (uint32_t)nals[i].len;
		out[0] = (uint8_t)(l >> 24);
		out[1] = (uint8_t)(l >> 16);
		out[2] = (uint8_t)(l >> 8);
		out[3] = (uint8_t)l;
		memcpy(out + 4, nals[i].data, l);
		out += 4 + l;
	}
}

int h26x_sample_to_annexb(uint8_t *buf, size_t len)
{
	/* Checked first, so that a bad buffer is left as it was. */
	for (int pass = 0; pass < 2; pass++) {
		size_t off = 0;
		struct h26x_nal nal;
		int r;
		while ((r = h26x_prefixed_next(buf, len, 4, &off, &nal)) > 0) {
			if (nal.len == 0)
				return -EBADMSG;
			if (pass)
				memcpy(buf + off - nal.len - 4, "\0\0\0\1", 4);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

uint32_t h264_profile_level_id(const uint8_t *nal, size_t len)
{
	if (len < 4 || h26x_nal_type(KP_CODEC_H264, nal) != 7)
		return 0;
	return (uint32_t)nal[1] << 16 | (uint32_t)nal[2] << 8 | nal[3];
}

uint32_t h264_annexb_profile_level_id(const uint8_t *buf, size_t len)
{
	size_t off = 0;
	const uint8_t *nal;
	size_t n;
	while (h26x_annexb_next(buf, len, &off, &nal, &n)) {
		uint32_t id = h264_profile_level_id(nal, n);
		if (id)
			return id;
	}
	return 0;
}
