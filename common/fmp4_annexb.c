/* A stored sample (length-prefixed NAL units, the init's NAL length size) back to the
 * Annex-B access unit a decoder or an RTP packetizer takes, with the init's parameter
 * sets in front of a keyframe that lacks them (see fmp4.h). */
#include "fmp4.h"

#include <errno.h>
#include <string.h>

size_t fmp4_annexb_cap(const struct fmp4_init *init, size_t len)
{
	/* Worst case: 1-byte lengths, 1-byte NALs: 2 bytes in, 5 out. */
	return init->params_len + len / 2 * 5 + 8;
}

int fmp4_annexb(const struct fmp4_init *init, const uint8_t *sample, size_t len, bool keyframe, uint8_t *out,
		size_t cap, size_t *ret_len)
{
	size_t n = 0, ls = init->nal_len_size;
	if (ls != 1 && ls != 2 && ls != 4)
		return -EBADMSG;
	enum kp_codec codec = init->track.codec;
	if (keyframe && !(len > ls && h26x_is_param_set(codec, h26x_nal_type(codec, sample + ls)))) {
		if (init->params_len > cap)
			return -ENOSPC;
		memcpy(out, init->params, init->params_len);
		n = init->params_len;
	}
	size_t off = 0;
	struct h26x_nal nal;
	int r;
	while ((r = h26x_prefixed_next(sample, len, (unsigned)ls, &off, &nal)) > 0) {
		if (nal.len == 0)
			continue;
		if (cap - n < 4 + nal.len)
			return -ENOSPC;
		memcpy(out + n, "\0\0\0\1", 4);
		memcpy(out + n + 4, nal.data, nal.len);
		n += 4 + nal.len;
	}
	if (r < 0)
		return r;
	*ret_len = n;
	return 0;
}
