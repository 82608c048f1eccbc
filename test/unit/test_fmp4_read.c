/* The fMP4 reader (common/fmp4_read.c, fmp4_annexb.c, fmp4_rebase.c) on real recordings
 * made by the writer through recorderd (H.264 and H.265): the init segment's codec, size,
 * timescale, avcC/hvcC record and parameter sets; every catalogued fragment's header and
 * samples (count, durations, keyframe byte range, 90 kHz times); the Annex-B conversion
 * decoded by libavcodec picture for picture; a rebased header read back; and truncated
 * or corrupted bytes refused (-EAGAIN, -EBADMSG) instead of being read past. */
#include <errno.h>
#include <libavcodec/avcodec.h>

#include "fmp4.h"
#include "test.h"
#include "test_rtc_playback_fixture.h"

static unsigned decode_all(AVCodecContext *dec, const uint8_t *data, size_t len)
{
	unsigned frames = 0;
	AVPacket *pkt = av_packet_alloc();
	AVFrame *frame = av_frame_alloc();
	if (av_new_packet(pkt, (int)len) == 0) {
		memcpy(pkt->data, data, len);
		CHECK_EQ(avcodec_send_packet(dec, pkt), 0);
		while (avcodec_receive_frame(dec, frame) == 0) {
			frames++;
			av_frame_unref(frame);
		}
	}
	av_packet_free(&pkt);
	av_frame_free(&frame);
	return frames;
}

static void read_recording(const char *name, kp_Codec codec, unsigned width, unsigned height)
{
	struct recorded r;
	if (recorded_make(&r, name, 2, 0) < 0) {
		CHECK(0);
		return;
	}
	CHECK_EQ(r.nfiles, 1);
	uint64_t init_len = r.files[0].init_len;
	uint8_t *init = recorded_read(&r, 0, 0, init_len);
	static struct fmp4_init t;
	CHECK_EQ(fmp4_read_init(init, init_len, &t), 0);
	CHECK_EQ(t.len, init_len);
	CHECK_EQ(t.track.codec, codec);
	CHECK_EQ(t.track.width, width);
	CHECK_EQ(t.track.height, height);
	CHECK(t.track.config_len > 8);
	CHECK_EQ(t.track.config[0], 1); /* configurationVersion */
	CHECK_EQ(t.timescale, 90000);
	CHECK_EQ(t.nal_len_size, 4);
	CHECK(t.params_len > 8);
	CHECK(!memcmp(t.params, "\0\0\0\1", 4));
	/* Every prefix of the init segment asks for more. */
	for (size_t cut = 0; cut < init_len; cut += 7)
		CHECK_EQ(fmp4_read_init(init, cut, &t), -EAGAIN);
	CHECK_EQ(fmp4_read_init(init, init_len, &t), 0);

	const AVCodec *c = avcodec_find_decoder(codec == kp_Codec_CODEC_H265 ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264);
	AVCodecContext *dec = avcodec_alloc_context3(c);
	dec->thread_count = 1;
	CHECK_EQ(avcodec_open2(dec, c, NULL), 0);
	static struct fmp4_frag f;
	unsigned samples = 0, decoded = 0;
	for (unsigned i = 0; i < r.nfrags; i++) {
		const struct cat_fragment *cf = &r.frags[i];
		uint8_t *buf = recorded_read(&r, 0, cf->offset, cf->length);
		CHECK_EQ(fmp4_read_frag(&t, buf, cf->length, &f), 0);
		CHECK_EQ(f.nsamples, cf->samples);
		CHECK_EQ(f.base_time, cf->base_time);
		CHECK_EQ(f.duration, cf->duration);
		CHECK_EQ(f.total_len, cf->length);
		CHECK_EQ(f.wall_us / 1000, cf->start_ms);
		CHECK(f.samples[0].keyframe);
		CHECK_EQ(cf->offset + f.samples[0].offset, cf->keyframe_offset);
		CHECK_EQ(f.samples[0].size, cf->keyframe_length);
		for (unsigned s = 0; s < f.nsamples; s++) {
			const struct fmp4_sample_info *sm = &f.samples[s];
			CHECK_EQ(sm->duration, 3600);
			CHECK_EQ(sm->dts, cf->base_time + 3600ull * s);
			CHECK_EQ(sm->keyframe, s == 0);
			size_t cap = fmp4_annexb_cap(&t, sm->size), len = 0;
			uint8_t *out = malloc(cap);
			CHECK_EQ(fmp4_annexb(&t, buf + sm->offset, sm->size, sm->keyframe, out, cap, &len), 0);
			CHECK(!memcmp(out, "\0\0\0\1", 4));
			if (sm->keyframe)
				CHECK(!memcmp(out, t.params, t.params_len));
			decoded += decode_all(dec, out, len);
			/* A length field pointing past the sample is refused. */
			uint8_t *bad = malloc(sm->size);
			memcpy(bad, buf + sm->offset, sm->size);
			bad[0] = 0x7f;
			CHECK_EQ(fmp4_annexb(&t, bad, sm->size, false, out, cap, &len), -EBADMSG);
			CHECK_EQ(fmp4_annexb(&t, buf + sm->offset, sm->size, sm->keyframe, out, 16, &len), -ENOSPC);
			free(bad);
			free(out);
		}
		samples += f.nsamples;
		/* The header alone reads the same; rebased, it starts that much earlier. */
		uint32_t header_len = f.header_len;
		uint64_t base_time = f.base_time;
		CHECK_EQ(fmp4_read_frag(&t, buf, header_len, &f), 0);
		CHECK_EQ(f.total_len, cf->length);
		CHECK_EQ(fmp4_read_frag(&t, buf, header_len - 1, &f), -EAGAIN);
		uint8_t *hdr = malloc(header_len);
		memcpy(hdr, buf, header_len);
		CHECK_EQ(fmp4_frag_rebase(hdr, header_len, base_time + 1, 0), -ERANGE);
		CHECK_EQ(fmp4_frag_rebase(hdr, header_len, base_time, 0), 0);
		CHECK_EQ(fmp4_read_frag(&t, hdr, header_len, &f), 0);
		CHECK_EQ(f.base_time, 0);
		free(hdr);
		/* Cut inside the header, the fragment asks for more; a corrupted trun sample
		 * count is refused. */
		for (uint64_t cut = 0; cut < header_len; cut += header_len / 50 + 1)
			CHECK_EQ(fmp4_read_frag(&t, buf, cut, &f), -EAGAIN);
		for (uint64_t at = 0; at + 8 <= cf->length && at < 512; at++)
			if (!memcmp(buf + at, "trun", 4)) {
				buf[at + 8] = 0xff;
				CHECK_EQ(fmp4_read_frag(&t, buf, cf->length, &f), -EBADMSG);
			}
		free(buf);
	}
	/* Drain the decoder: every recorded picture decodes. */
	CHECK_EQ(avcodec_send_packet(dec, NULL), 0);
	AVFrame *frame = av_frame_alloc();
	while (avcodec_receive_frame(dec, frame) == 0) {
		CHECK_EQ(frame->width, width);
		CHECK_EQ(frame->height, height);
		decoded++;
	}
	av_frame_free(&frame);
	avcodec_free_context(&dec);
	CHECK_EQ(samples, r.nframes);
	CHECK_EQ(decoded, samples);
	free(init);
	recorded_free(&r);
}

static void test_h264(void)
{
	read_recording("sub.h264", kp_Codec_CODEC_H264, 640, 360);
}

static void test_h265(void)
{
	read_recording("main.h265", kp_Codec_CODEC_H265, 1920, 1080);
}

/* The offset of the trun box's version byte in a fragment header, or 0. */
static size_t trun_at(const uint8_t *hdr, size_t len)
{
	for (size_t at = 4; at + 8 <= len; at++)
		if (!memcmp(hdr + at, "trun", 4))
			return at + 4;
	return 0;
}

/* Composition offsets (B-frames): written as trun version 1 with flag 0x800 (14496-12
 * 8.8.8), signed, read back per sample beside DTS from the durations; a fragment without
 * them keeps trun version 0 without the field; a rebased header keeps them. */
static void test_composition_offsets(void)
{
	/* I0 P3 B1 B2 in decode order: PTS - DTS 7200, 14400, 3600, 3600; and a signed one. */
	const int32_t cto[] = {7200, 14400, 3600, 3600, -3600};
	struct fmp4_sample sm[5];
	for (unsigned i = 0; i < 5; i++)
		sm[i] = (struct fmp4_sample){.size = 10 + i, .duration = 3600 + i, .cto = cto[i], .keyframe = i == 0};
	struct fmp4_frag_desc d = {.seq = 1, .base_time = 900000, .wall_us = 1, .samples = sm, .nsamples = 5};
	static uint8_t hdr[FMP4_FRAG_HEADER_MAX];
	size_t hlen;
	CHECK_EQ(fmp4_write_frag_header(&d, hdr, sizeof hdr, &hlen), 0);
	size_t at = trun_at(hdr, hlen);
	CHECK(at > 0);
	CHECK_EQ(hdr[at], 1);               /* version 1: signed offsets */
	CHECK_EQ(hdr[at + 2] & 0x08, 0x08); /* sample_composition_time_offsets_present */
	static struct fmp4_frag f;
	CHECK_EQ(fmp4_read_frag(NULL, hdr, hlen, &f), 0);
	CHECK_EQ(f.nsamples, 5);
	uint64_t dts = 900000;
	for (unsigned i = 0; i < 5; i++) {
		CHECK_EQ(f.samples[i].cts, cto[i]);
		CHECK_EQ(f.samples[i].dts, dts);
		CHECK_EQ(f.samples[i].duration, 3600 + i);
		CHECK_EQ(f.samples[i].size, 10 + i);
		dts += 3600 + i;
	}
	CHECK_EQ(fmp4_frag_rebase(hdr, hlen, 900000, 0), 0);
	CHECK_EQ(fmp4_read_frag(NULL, hdr, hlen, &f), 0);
	CHECK(f.base_time == 0 && f.samples[1].dts == 3600 && f.samples[1].cts == 14400);
	/* The largest fragment with offsets fits FMP4_FRAG_HEADER_MAX. */
	static struct fmp4_sample many[FMP4_FRAG_MAX_SAMPLES];
	for (unsigned i = 0; i < FMP4_FRAG_MAX_SAMPLES; i++)
		many[i] = (struct fmp4_sample){.size = 1, .duration = 3600, .cto = 7200};
	d.samples = many;
	d.nsamples = FMP4_FRAG_MAX_SAMPLES;
	CHECK_EQ(fmp4_write_frag_header(&d, hdr, sizeof hdr, &hlen), 0);
	/* Without offsets: version 0, no field, cts 0. */
	for (unsigned i = 0; i < 5; i++)
		sm[i].cto = 0;
	d.samples = sm;
	d.nsamples = 5;
	CHECK_EQ(fmp4_write_frag_header(&d, hdr, sizeof hdr, &hlen), 0);
	at = trun_at(hdr, hlen);
	CHECK(at > 0 && hdr[at] == 0 && (hdr[at + 2] & 0x08) == 0);
	CHECK_EQ(fmp4_read_frag(NULL, hdr, hlen, &f), 0);
	CHECK(f.samples[0].cts == 0 && f.samples[4].cts == 0 && f.samples[4].dts == 900000 + 4 * 3600 + 6);
}

int main(void)
{
	RUN(test_composition_offsets);
	RUN(test_h264);
	RUN(test_h265);
	return TEST_EXIT();
}
