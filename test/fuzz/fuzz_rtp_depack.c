/* libFuzzer harness for the RTP depacketizer: byte 0 picks H.264 or H.265, then records
 * of a 16-bit big-endian length and that many packet bytes. Every access unit that comes
 * out is packetized again and must survive the round trip. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rtp_h26x.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rtp_packetizer pk;
static struct rtp_depack again;

static int feed_again(void *arg, const uint8_t *pkt, size_t len)
{
	struct rtp_au *out = arg;
	const char *why;
	if (rtp_depack_push(&again, pkt, len, out, &why) < 0)
		__builtin_trap(); /* our own packets must always depacketize */
	return 0;
}

/* True when the access unit splits back into the same NAL units: none contains a start
 * code or ends in a zero byte (Annex-B cannot carry those), each is longer than its
 * header, has forbidden_zero_bit clear and a NAL type that may travel alone. Only such
 * access units must survive a round trip. */
static bool clean(enum kp_codec codec, const uint8_t *au, size_t len)
{
	size_t off = 0, n, pos = 0;
	const uint8_t *nal;
	while (h26x_annexb_next(au, len, &off, &nal, &n)) {
		if (len - pos < 4 || memcmp(au + pos, "\0\0\0\1", 4) != 0 || nal != au + pos + 4)
			return false;
		if (n < (codec == KP_CODEC_H264 ? 1u : 2u) || nal[0] & 0x80 ||
		    (codec == KP_CODEC_H265 && (nal[1] & 7) == 0))
			return false;
		unsigned type = h26x_nal_type(codec, nal);
		if (codec == KP_CODEC_H264 ? type == 0 || type >= 24 : type >= 48)
			return false;
		pos += 4 + n;
	}
	return pos == len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum kp_codec codec = data[0] & 1 ? KP_CODEC_H265 : KP_CODEC_H264;
	struct rtp_depack d;
	if (rtp_depack_init(&d, codec, 64 * 1024) < 0)
		return 0;
	size_t off = 1;
	while (size - off >= 2) {
		size_t n = (size_t)data[off] << 8 | data[off + 1];
		off += 2;
		if (n > size - off)
			n = size - off;
		struct rtp_au au;
		const char *why;
		int r = rtp_depack_push(&d, data + off, n, &au, &why);
		off += n;
		if (r != 1)
			continue;
		if (!clean(codec, au.data, au.len))
			continue;
		/* Round trip: packetize the access unit and depacketize it again. */
		rtp_depack_init(&again, codec, RTP_MAX_AU);
		rtp_packetizer_init(&pk, codec, 96, 1, 0, RTP_MIN_MTU + (au.len % 1400));
		struct rtp_au out = {0};
		if (rtp_packetize(&pk, au.data, au.len, au.timestamp, feed_again, &out) != 0 || out.len != au.len ||
		    memcmp(out.data, au.data, au.len) != 0)
			__builtin_trap();
		rtp_depack_free(&again);
	}
	rtp_depack_free(&d);
	return 0;
}
