/* AAC framing for recorded audio (see audio.h): ADTS headers in, AudioSpecificConfig
 * out and back. Every field is read through a bounded bit reader. */
#include "audio.h"

#include <errno.h>
#include <string.h>

/* 14496-3 Table 1.18: samplingFrequencyIndex. */
static const uint32_t rates[13] = {96000, 88200, 64000, 48000, 44100, 32000, 24000,
				   22050, 16000, 12000, 11025, 8000,  7350};

struct bits {
	const uint8_t *p;
	size_t len, pos; /* in bits */
	int bad;
};

static uint32_t get(struct bits *b, unsigned n)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < n; i++) {
		if (b->pos >= b->len * 8) {
			b->bad = 1;
			return 0;
		}
		v = v << 1 | ((b->p[b->pos / 8] >> (7 - b->pos % 8)) & 1);
		b->pos++;
	}
	return v;
}

int kp_adts_parse(const uint8_t *buf, size_t len, size_t *ret_header_len, size_t *ret_frame_len,
		  struct kp_audio_format *ret)
{
	if (len < 7)
		return -EAGAIN;
	struct bits b = {.p = buf, .len = 7};
	if (get(&b, 12) != 0xfff)
		return -EBADMSG;
	get(&b, 1);          /* ID: MPEG-4 or MPEG-2, the same frames */
	if (get(&b, 2) != 0) /* layer */
		return -EBADMSG;
	unsigned protection_absent = get(&b, 1);
	unsigned profile = get(&b, 2); /* audioObjectType - 1 */
	unsigned sfi = get(&b, 4);
	get(&b, 1); /* private_bit */
	unsigned chans = get(&b, 3);
	get(&b, 4); /* original_copy, home, copyright id bit and start */
	size_t frame_len = get(&b, 13);
	get(&b, 11); /* adts_buffer_fullness */
	unsigned blocks = get(&b, 2);
	size_t hlen = protection_absent ? 7 : 9;
	if (b.bad || sfi >= 13 || chans == 0 || blocks != 0 || frame_len <= hlen)
		return -EBADMSG;
	if (len < frame_len)
		return -EAGAIN;
	memset(ret, 0, sizeof *ret);
	ret->codec = KP_AUDIO_AAC;
	ret->rate = rates[sfi];
	ret->channels = chans == 7 ? 8 : chans;
	ret->frame_samples = 1024;
	/* AudioSpecificConfig: audioObjectType (5), samplingFrequencyIndex (4),
	 * channelConfiguration (4), GASpecificConfig: three zero flags. */
	unsigned aot = profile + 1;
	ret->config[0] = (uint8_t)(aot << 3 | sfi >> 1);
	ret->config[1] = (uint8_t)((sfi & 1) << 7 | chans << 3);
	ret->config_len = 2;
	*ret_header_len = hlen;
	*ret_frame_len = frame_len;
	return 0;
}

static uint32_t object_type(struct bits *b)
{
	uint32_t aot = get(b, 5);
	return aot == 31 ? 32 + get(b, 6) : aot;
}

static uint32_t frequency(struct bits *b)
{
	uint32_t sfi = get(b, 4);
	if (sfi == 15)
		return get(b, 24);
	return sfi < 13 ? rates[sfi] : 0;
}

int kp_aac_config_parse(const uint8_t *asc, size_t len, struct kp_audio_format *ret)
{
	if (len < 2 || len > KP_AUDIO_CONFIG_MAX)
		return -EBADMSG;
	struct bits b = {.p = asc, .len = len};
	uint32_t aot = object_type(&b);
	uint32_t rate = frequency(&b);
	uint32_t chans = get(&b, 4);
	uint32_t samples = 1024;
	if (aot == 5 || aot == 29) { /* explicit SBR (and PS): the output rate, two frames */
		rate = frequency(&b);
		aot = object_type(&b);
		samples = 2048;
	}
	/* GASpecificConfig's frameLengthFlag: 960-sample frames (object types 1-7, 17-23). */
	if (((aot >= 1 && aot <= 7) || (aot >= 17 && aot <= 23)) && get(&b, 1))
		samples = samples / 1024 * 960;
	if (b.bad || rate == 0 || chans == 0 || chans > 7)
		return -EBADMSG;
	memset(ret, 0, sizeof *ret);
	ret->codec = KP_AUDIO_AAC;
	ret->rate = rate;
	ret->channels = chans == 7 ? 8 : chans;
	ret->frame_samples = samples;
	memcpy(ret->config, asc, len);
	ret->config_len = len;
	return 0;
}

uint32_t kp_opus_packet_samples(const uint8_t *p, size_t len)
{
	if (len < 1)
		return 0;
	unsigned config = p[0] >> 3;
	/* Frame sizes at 48 kHz (RFC 6716 Table 2): SILK 10/20/40/60 ms, hybrid 10/20 ms,
	 * CELT 2.5/5/10/20 ms. */
	static const uint32_t silk[4] = {480, 960, 1920, 2880}, celt[4] = {120, 240, 480, 960};
	uint32_t frame = config < 12 ? silk[config & 3] : config < 16 ? (config & 1 ? 960 : 480) : celt[config & 3];
	uint32_t frames;
	switch (p[0] & 3) {
	case 0:
		frames = 1;
		break;
	case 1:
	case 2:
		frames = 2;
		break;
	default:
		if (len < 2)
			return 0;
		frames = p[1] & 0x3f;
	}
	uint32_t n = frames * frame;
	return n == 0 || n > 5760 ? 0 : n; /* at most 120 ms */
}

int kp_audio_format_same(const struct kp_audio_format *a, const struct kp_audio_format *b)
{
	return a->codec == b->codec && a->rate == b->rate && a->channels == b->channels &&
	       a->frame_samples == b->frame_samples && a->config_len == b->config_len &&
	       !memcmp(a->config, b->config, a->config_len);
}
