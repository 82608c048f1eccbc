/* Camera audio to Opus with libopus (see audio_conv.h). */
#include "audio_conv.h"

#include <errno.h>
#include <opus.h>
#include <stdlib.h>

#include "audio_adpcm.h"
#include "audio_g711.h"

#define OPUS_RATE   48000
#define FRAME_MAX   (OPUS_RATE / 1000 * ING_AUDIO_CONV_FRAME_MS) /* input samples, at 48 kHz */
#define DECODED_MAX (2 * ING_AUDIO_CONV_UNIT_MAX)                /* ADPCM: 2 samples a byte */

struct ing_audio_conv {
	enum kp_audio_codec codec;
	uint32_t rate;
	OpusEncoder *enc;
	int frame;     /* input samples in 20 ms */
	int lookahead; /* encoder's, in input samples */
	int filled;    /* of pcm */
	int16_t pcm[FRAME_MAX];
	int16_t decoded[DECODED_MAX];
	uint8_t packet[ING_AUDIO_CONV_PACKET_MAX];
	bool anchored;
	int64_t anchor_pts;   /* 90 kHz time of input sample 0 */
	uint64_t in_samples;  /* decoded so far */
	uint64_t out_samples; /* input samples encoded so far (whole frames) */
};

void ing_audio_conv_free(struct ing_audio_conv **cp)
{
	struct ing_audio_conv *c = *cp;
	if (!c)
		return;
	if (c->enc)
		opus_encoder_destroy(c->enc);
	free(c);
	*cp = NULL;
}

static bool opus_rate(uint32_t r)
{
	return r == 8000 || r == 12000 || r == 16000 || r == 24000 || r == 48000;
}

static int conv_new(const struct kp_audio_unit *in, struct ing_audio_conv **ret, const char **why)
{
	if (in->fmt.codec != KP_AUDIO_ADPCM_IMA && in->fmt.codec != KP_AUDIO_PCMU && in->fmt.codec != KP_AUDIO_PCMA) {
		*why = "no decoder for the camera's audio codec";
		return -EPROTONOSUPPORT;
	}
	if (in->fmt.channels != 1 || !opus_rate(in->fmt.rate)) {
		*why = "Opus takes mono audio at 8000, 12000, 16000, 24000 or 48000 Hz only";
		return -EPROTONOSUPPORT;
	}
	struct ing_audio_conv *c = calloc(1, sizeof *c);
	if (!c) {
		*why = "out of memory";
		return -ENOMEM;
	}
	c->codec = in->fmt.codec;
	c->rate = in->fmt.rate;
	c->frame = (int)(c->rate / 1000 * ING_AUDIO_CONV_FRAME_MS);
	int e;
	c->enc = opus_encoder_create((opus_int32)c->rate, 1, OPUS_APPLICATION_AUDIO, &e);
	opus_int32 la = 0;
	if (!c->enc || e != OPUS_OK || opus_encoder_ctl(c->enc, OPUS_SET_BITRATE(ING_AUDIO_CONV_BITRATE)) != OPUS_OK ||
	    opus_encoder_ctl(c->enc, OPUS_GET_LOOKAHEAD(&la)) != OPUS_OK || la < 0 || la >= c->frame) {
		*why = e == OPUS_ALLOC_FAIL ? "out of memory" : "opening the Opus encoder failed";
		ing_audio_conv_free(&c);
		return e == OPUS_ALLOC_FAIL ? -ENOMEM : -EIO;
	}
	c->lookahead = (int)la;
	*ret = c;
	return 0;
}

/* The decoded samples of one unit into c->decoded: their count, or a negative errno. */
static int decode(struct ing_audio_conv *c, const struct kp_audio_unit *in, const char **why)
{
	if (c->codec == KP_AUDIO_ADPCM_IMA)
		return ing_adpcm_decode_block(in->data, in->len, c->decoded, DECODED_MAX, why);
	ing_g711_decode(in->data, in->len, c->decoded, c->codec == KP_AUDIO_PCMA);
	return (int)in->len;
}

/* Encodes c->pcm (one whole frame) and sends the packet. Its time: that of the frame's
 * first input sample, less the lookahead (audio_conv.h), on the 90 kHz clock. */
static int encode(struct ing_audio_conv *c, int64_t wall_us, ing_audio_out out, void *arg, const char **why)
{
	opus_int32 n = opus_encode(c->enc, c->pcm, c->frame, c->packet, (opus_int32)sizeof c->packet);
	if (n < 0) {
		*why = opus_strerror(n);
		return -EIO;
	}
	int64_t first = (int64_t)c->out_samples - c->lookahead;
	c->out_samples += (uint64_t)c->frame;
	c->filled = 0;
	if (n <= 1) /* DTX: nothing to send (never asked for here, but libopus may) */
		return 0;
	struct kp_audio_unit au = {
	    .fmt = {.codec = KP_AUDIO_OPUS, .rate = OPUS_RATE, .channels = 1, .frame_samples = FRAME_MAX},
	    .pts_90k = c->anchor_pts + first * 90000 / (int64_t)c->rate,
	    .wall_us = wall_us,
	    .data = c->packet,
	    .len = (size_t)n,
	};
	out(arg, &au);
	return 0;
}

int ing_audio_conv_push(struct ing_audio_conv **cp, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			const char **ret_reason)
{
	if (in->len > ING_AUDIO_CONV_UNIT_MAX) {
		*ret_reason = "audio unit larger than 8192 bytes";
		return -EMSGSIZE;
	}
	struct ing_audio_conv *c = *cp;
	if (c && (c->codec != in->fmt.codec || c->rate != in->fmt.rate))
		ing_audio_conv_free(cp);
	if (!*cp) {
		int r = conv_new(in, cp, ret_reason);
		if (r < 0)
			return r;
	}
	c = *cp;
	int n = decode(c, in, ret_reason);
	if (n < 0)
		return n;
	/* Where the run expects this unit; too far off (lost audio, a new run): move it. */
	int64_t expect = c->anchor_pts + (int64_t)(c->in_samples * 90000 / c->rate);
	int64_t off = in->pts_90k - expect;
	if (!c->anchored || off > ING_AUDIO_CONV_RESYNC_MS * 90 || off < -ING_AUDIO_CONV_RESYNC_MS * 90) {
		c->anchor_pts += off;
		c->anchored = true;
	}
	c->in_samples += (uint64_t)n;
	for (int at = 0; at < n;) {
		int k = c->frame - c->filled < n - at ? c->frame - c->filled : n - at;
		for (int i = 0; i < k; i++)
			c->pcm[c->filled + i] = c->decoded[at + i];
		c->filled += k;
		at += k;
		if (c->filled == c->frame) {
			int r = encode(c, in->wall_us, out, arg, ret_reason);
			if (r < 0)
				return r;
		}
	}
	return 0;
}
