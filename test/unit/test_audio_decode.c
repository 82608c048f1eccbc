/* ingestd's own camera audio decoders (ingestd/audio_g711.c, ingestd/audio_adpcm.c)
 * against libavcodec's, which ingestd used before decision 0034: all 256 G.711 codes of
 * each law equal to pcm_mulaw's and pcm_alaw's, with G.711's end points; the fixture
 * audio_adpcm.wav (a 440 Hz tone, IMA ADPCM in 256-byte blocks) decoded block by block to
 * the same samples as adpcm_ima_wav; and the blocks refused: shorter than the header, a
 * step index of 89 (88 decodes), a reserved byte not 0, more samples than the buffer
 * holds (one short of the block's count). */
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdio.h>

#include "audio_adpcm.h"
#include "audio_g711.h"
#include "kp_build_config.h"
#include "test.h"

/* Decodes one packet with libavcodec's decoder id (mono, 8 kHz, block_align) into out;
 * the samples, or -1. */
static int lavc_decode(enum AVCodecID id, int block_align, const uint8_t *data, size_t len, int16_t *out, size_t cap)
{
	const AVCodec *d = avcodec_find_decoder(id);
	AVCodecContext *c = d ? avcodec_alloc_context3(d) : NULL;
	if (!c)
		return -1;
	c->sample_rate = 8000;
	av_channel_layout_default(&c->ch_layout, 1);
	c->block_align = block_align;
	c->bits_per_coded_sample = id == AV_CODEC_ID_ADPCM_IMA_WAV ? 4 : 8;
	AVPacket *p = av_packet_alloc();
	AVFrame *f = av_frame_alloc();
	size_t n = 0;
	int ok = avcodec_open2(c, d, NULL) == 0 && p && f && av_new_packet(p, (int)len) == 0;
	if (ok) {
		memcpy(p->data, data, len);
		ok = avcodec_send_packet(c, p) == 0;
	}
	while (ok && avcodec_receive_frame(c, f) == 0) {
		const int16_t *s = (const int16_t *)f->data[0];
		for (int i = 0; i < f->nb_samples && n < cap; i++)
			out[n++] = s[i];
		av_frame_unref(f);
	}
	av_packet_free(&p);
	av_frame_free(&f);
	avcodec_free_context(&c);
	return ok ? (int)n : -1;
}

static void test_g711(void)
{
	uint8_t codes[256];
	for (int i = 0; i < 256; i++)
		codes[i] = (uint8_t)i;
	int16_t ours[256], theirs[256];
	for (int law = 0; law < 2; law++) {
		ing_g711_decode(codes, 256, ours, law);
		CHECK_EQ(lavc_decode(law ? AV_CODEC_ID_PCM_ALAW : AV_CODEC_ID_PCM_MULAW, 1, codes, 256, theirs, 256),
			 256);
		int differ = 0;
		for (int i = 0; i < 256; i++)
			differ += ours[i] != theirs[i];
		CHECK_EQ(differ, 0);
	}
	CHECK_EQ(ing_g711_ulaw(0xff), 0);
	CHECK_EQ(ing_g711_ulaw(0x80), 32124);
	CHECK_EQ(ing_g711_ulaw(0x00), -32124);
	CHECK_EQ(ing_g711_alaw(0xd5), 8);
	CHECK_EQ(ing_g711_alaw(0x55), -8);
	CHECK_EQ(ing_g711_alaw(0xaa), 32256);
	CHECK_EQ(ing_g711_alaw(0x2a), -32256);
}

static void test_adpcm_fixture(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/test/fixtures/audio_adpcm.wav", KP_TEST_BUILD_ROOT);
	AVFormatContext *fc = NULL;
	CHECK_EQ(avformat_open_input(&fc, path, NULL, NULL), 0);
	if (!fc)
		return;
	CHECK_EQ(avformat_find_stream_info(fc, NULL) >= 0, 1);
	const AVCodecParameters *par = fc->streams[0]->codecpar;
	CHECK_EQ(par->codec_id, AV_CODEC_ID_ADPCM_IMA_WAV);
	CHECK_EQ(par->block_align, 256);
	AVPacket *p = av_packet_alloc();
	size_t blocks = 0, samples = 0, differ = 0;
	static int16_t ours[1024], theirs[1024];
	while (p && av_read_frame(fc, p) == 0) {
		for (int at = 0; at + par->block_align <= p->size; at += par->block_align) {
			const char *why = NULL;
			int n = ing_adpcm_decode_block(p->data + at, (size_t)par->block_align, ours, 1024, &why);
			int m = lavc_decode(AV_CODEC_ID_ADPCM_IMA_WAV, par->block_align, p->data + at,
					    (size_t)par->block_align, theirs, 1024);
			CHECK_EQ(n, 505);
			CHECK_EQ(m, 505);
			for (int i = 0; i < n && i < m; i++)
				differ += ours[i] != theirs[i];
			blocks++;
			samples += n > 0 ? (size_t)n : 0;
		}
		av_packet_unref(p);
	}
	av_packet_free(&p);
	avformat_close_input(&fc);
	CHECK(blocks >= 60); /* 4 s at 8 kHz: 64 blocks (the last may be short, not counted) */
	CHECK(samples >= 60 * 505);
	CHECK_EQ(differ, 0);
}

static void test_adpcm_refused(void)
{
	uint8_t b[16] = {0x34, 0x12, 88, 0, 0x77, 0x88, 0x0f, 0xf0, 1, 2, 3};
	int16_t out[32];
	const char *why = NULL;
	CHECK_EQ(ing_adpcm_block_samples(3), 0);
	CHECK_EQ(ing_adpcm_block_samples(4), 1);
	CHECK_EQ(ing_adpcm_block_samples(11), 9); /* 3 trailing bytes ignored */
	CHECK_EQ(ing_adpcm_decode_block(b, 3, out, 32, &why), -EBADMSG);
	CHECK_EQ(ing_adpcm_decode_block(b, 4, out, 32, &why), 1);
	CHECK_EQ(out[0], 0x1234);
	/* Step index 88, nibble 7: up by 32767 * 15 / 8, clamped at 32767 (twice). */
	CHECK_EQ(ing_adpcm_decode_block(b, 11, out, 32, &why), 9);
	CHECK_EQ(out[1], 32767);
	CHECK_EQ(out[2], 32767);
	CHECK_EQ(out[3], 32767 - (32767 >> 3)); /* nibble 8: down by step / 8 */
	CHECK_EQ(ing_adpcm_decode_block(b, 11, out, 8, &why), -ENOSPC);
	CHECK_STR_CONTAINS(why, "buffer");
	b[2] = 89;
	CHECK_EQ(ing_adpcm_decode_block(b, 11, out, 32, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "step index");
	b[2] = 0;
	b[3] = 1;
	CHECK_EQ(ing_adpcm_decode_block(b, 11, out, 32, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "reserved");
	b[3] = 0;
	int16_t neg[1];
	b[0] = 0x00;
	b[1] = 0x80;
	CHECK_EQ(ing_adpcm_decode_block(b, 4, neg, 1, &why), 1);
	CHECK_EQ(neg[0], -32768);
}

int main(void)
{
	RUN(test_g711);
	RUN(test_adpcm_fixture);
	RUN(test_adpcm_refused);
	return TEST_EXIT();
}
