/* Annex-B NAL scanning and conversion to length-prefixed MP4 samples (see nal.h). */
#include "nal.h"

#include <errno.h>
#include <string.h>

/* Offset of the first byte after the next 00 00 01 at or after pos, or len. */
static size_t next_start(const uint8_t *buf, size_t len, size_t pos, size_t *ret_code_at)
{
	for (size_t i = pos; i + 3 <= len; i++) {
		if (buf[i + 2] > 1) {
			i += 2;
			continue;
		}
		if (buf[i] == 0 && buf[i + 1] == 0 && buf[i + 2] == 1) {
			*ret_code_at = i;
			return i + 3;
		}
	}
	*ret_code_at = len;
	return len;
}

int rec_nal_split(const uint8_t *buf, size_t len, struct rec_nal *ret_nals, unsigned max)
{
	size_t code_at;
	size_t start = next_start(buf, len, 0, &code_at);
	/* Only zero bytes may precede the first start code. */
	for (size_t i = 0; i < code_at; i++)
		if (buf[i] != 0)
			return -EBADMSG;
	if (start >= len)
		return -EBADMSG;
	unsigned n = 0;
	while (start < len) {
		size_t next_code;
		size_t next = next_start(buf, len, start, &next_code);
		size_t end = next_code;
		while (end > start && buf[end - 1] == 0)
			end--;
		if (end == start)
			return -EBADMSG;
		if (n >= max)
			return -E2BIG;
		ret_nals[n].data = buf + start;
		ret_nals[n].len = end - start;
		n++;
		start = next;
	}
	return (int)n;
}

int rec_nal_type(enum rec_codec codec, const struct rec_nal *n)
{
	if (n->len < (codec == REC_CODEC_H265 ? 2u : 1u))
		return -EBADMSG;
	return codec == REC_CODEC_H265 ? (n->data[0] >> 1) & 0x3f : n->data[0] & 0x1f;
}

int rec_nal_is_vcl(enum rec_codec codec, int type)
{
	if (codec == REC_CODEC_H265)
		return type >= 0 && type <= 31;
	return type >= 1 && type <= 5;
}

int rec_nal_is_keyframe_slice(enum rec_codec codec, int type)
{
	if (codec == REC_CODEC_H265)
		return type >= 16 && type <= 21; /* BLA, IDR, CRA */
	return type == 5;
}

static int keep(struct rec_ps *dst, const struct rec_nal *n)
{
	if (n->len > REC_PS_MAX)
		return -E2BIG;
	memcpy(dst->data, n->data, n->len);
	dst->len = (uint16_t)n->len;
	return 1;
}

int rec_nal_param_sets(enum rec_codec codec, const struct rec_nal *nals, unsigned n, struct rec_param_sets *ps)
{
	int found = 0;
	for (unsigned i = 0; i < n; i++) {
		int t = rec_nal_type(codec, &nals[i]);
		struct rec_ps *dst = NULL;
		if (codec == REC_CODEC_H265)
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

size_t rec_nal_sample_size(const struct rec_nal *nals, unsigned n)
{
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += 4 + nals[i].len;
	return total;
}

void rec_nal_to_sample(const struct rec_nal *nals, unsigned n, uint8_t *out)
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
