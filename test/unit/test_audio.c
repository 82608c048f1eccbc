/* Recorded audio's shared code: ADTS headers (ISO/IEC 14496-3 1.A.2.2) and
 * AudioSpecificConfig (1.6.2.1) read into a track format, with the cut-short and
 * reserved values refused; the writer's audio track (mp4a + esds, the second traf and
 * its samples after the video's) read back by the fMP4 reader, which lists the video's
 * samples only; a rebase that moves the audio traf by the same time in its timescale;
 * and the file read by libavformat as an H.264 and an AAC stream. */
#include <errno.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <unistd.h>

#include "audio.h"
#include "fmp4.h"
#include "test.h"

/* An ADTS header: profile is audioObjectType - 1, crc adds the two CRC bytes. */
static size_t adts(uint8_t *p, unsigned profile, unsigned sfi, unsigned ch, unsigned frame_len, int crc,
		   unsigned blocks)
{
	p[0] = 0xff;
	p[1] = (uint8_t)(0xf0 | (crc ? 0 : 1));
	p[2] = (uint8_t)(profile << 6 | sfi << 2 | ch >> 2);
	p[3] = (uint8_t)((ch & 3) << 6 | frame_len >> 11);
	p[4] = (uint8_t)(frame_len >> 3);
	p[5] = (uint8_t)((frame_len & 7) << 5 | 0x1f);
	p[6] = (uint8_t)(0xfc | blocks);
	return crc ? 9 : 7;
}

static void test_adts(void)
{
	uint8_t buf[64] = {0};
	struct kp_audio_format f;
	size_t hl, fl;
	adts(buf, 1, 8, 1, 20, 0, 0);
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), 0);
	CHECK_EQ(hl, 7);
	CHECK_EQ(fl, 20);
	CHECK_EQ(f.codec, KP_AUDIO_AAC);
	CHECK_EQ(f.rate, 16000);
	CHECK_EQ(f.channels, 1);
	CHECK_EQ(f.frame_samples, 1024);
	CHECK_EQ(f.config_len, 2);
	CHECK_EQ(f.config[0], 0x14); /* object type 2, index 8, one channel */
	CHECK_EQ(f.config[1], 0x08);
	CHECK_EQ(kp_adts_parse(buf, 19, &hl, &fl, &f), -EAGAIN); /* the frame is cut */
	CHECK_EQ(kp_adts_parse(buf, 6, &hl, &fl, &f), -EAGAIN);  /* the header is cut */
	adts(buf, 1, 4, 2, 30, 1, 0);                            /* 44.1 kHz stereo with a CRC */
	CHECK_EQ(kp_adts_parse(buf, 30, &hl, &fl, &f), 0);
	CHECK_EQ(hl, 9);
	CHECK_EQ(f.rate, 44100);
	CHECK_EQ(f.channels, 2);
	CHECK_EQ(f.config[0], 0x12);
	CHECK_EQ(f.config[1], 0x10);
	adts(buf, 1, 8, 1, 20, 0, 1); /* two raw data blocks in one frame */
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), -EBADMSG);
	adts(buf, 1, 13, 1, 20, 0, 0); /* reserved rate index */
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), -EBADMSG);
	adts(buf, 1, 8, 0, 20, 0, 0); /* channels in the stream, not the header */
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), -EBADMSG);
	adts(buf, 1, 8, 1, 7, 0, 0); /* no payload */
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), -EBADMSG);
	adts(buf, 1, 8, 1, 20, 0, 0);
	buf[1] = 0xf7; /* layer 3 */
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), -EBADMSG);
	buf[0] = 0x47; /* no syncword */
	CHECK_EQ(kp_adts_parse(buf, 20, &hl, &fl, &f), -EBADMSG);
}

static void test_config(void)
{
	struct kp_audio_format f;
	const uint8_t lc[] = {0x14, 0x08};
	CHECK_EQ(kp_aac_config_parse(lc, sizeof lc, &f), 0);
	CHECK_EQ(f.rate, 16000);
	CHECK_EQ(f.channels, 1);
	CHECK_EQ(f.frame_samples, 1024);
	/* explicit SBR: object type 5, core 24 kHz stereo, extension 48 kHz, then AAC-LC */
	const uint8_t sbr[] = {0x2b, 0x11, 0x88, 0x00};
	CHECK_EQ(kp_aac_config_parse(sbr, sizeof sbr, &f), 0);
	CHECK_EQ(f.rate, 48000);
	CHECK_EQ(f.channels, 2);
	CHECK_EQ(f.frame_samples, 2048);
	/* an explicit rate (index 15, 24 bits: 12345 Hz) */
	const uint8_t esc[] = {0x17, 0x80, 0x18, 0x1c, 0x88, 0x00};
	CHECK_EQ(kp_aac_config_parse(esc, sizeof esc, &f), 0);
	CHECK_EQ(f.rate, 12345);
	CHECK_EQ(f.channels, 1);
	/* 960-sample frames */
	const uint8_t f960[] = {0x14, 0x0c};
	CHECK_EQ(kp_aac_config_parse(f960, sizeof f960, &f), 0);
	CHECK_EQ(f.frame_samples, 960);
	const uint8_t reserved[] = {0x16, 0x88}, nochan[] = {0x14, 0x00}, cut[] = {0x17, 0x80, 0x18};
	CHECK_EQ(kp_aac_config_parse(lc, 1, &f), -EBADMSG);
	CHECK_EQ(kp_aac_config_parse(reserved, sizeof reserved, &f), -EBADMSG);
	CHECK_EQ(kp_aac_config_parse(nochan, sizeof nochan, &f), -EBADMSG);
	CHECK_EQ(kp_aac_config_parse(cut, sizeof cut, &f), -EBADMSG);
	uint8_t big[KP_AUDIO_CONFIG_MAX + 1] = {0x14, 0x08};
	CHECK_EQ(kp_aac_config_parse(big, sizeof big, &f), -EBADMSG);
}

/* Opus TOC bytes (RFC 6716 3.1): config 1 = SILK 20 ms, 13 = hybrid 20 ms, 16 = CELT
 * 2.5 ms, 31 = CELT 20 ms; code 0 one frame, 1 and 2 two, 3 a count. */
static void test_opus(void)
{
	const uint8_t silk20[] = {1 << 3 | 0}, hybrid20x2[] = {13 << 3 | 1, 0}, celt2_5[] = {16 << 3 | 2, 1, 2};
	const uint8_t celt20x6[] = {31 << 3 | 3, 6}, celt20x7[] = {31 << 3 | 3, 7}, code3cut[] = {31 << 3 | 3};
	const uint8_t silk60x3[] = {3 << 3 | 3, 3}, zero[] = {31 << 3 | 3, 0};
	CHECK_EQ(kp_opus_packet_samples(silk20, sizeof silk20), 960);
	CHECK_EQ(kp_opus_packet_samples(hybrid20x2, sizeof hybrid20x2), 1920);
	CHECK_EQ(kp_opus_packet_samples(celt2_5, sizeof celt2_5), 240);
	CHECK_EQ(kp_opus_packet_samples(celt20x6, sizeof celt20x6), 5760); /* 120 ms: the most */
	CHECK_EQ(kp_opus_packet_samples(celt20x7, sizeof celt20x7), 0);
	CHECK_EQ(kp_opus_packet_samples(silk60x3, sizeof silk60x3), 0); /* 180 ms */
	CHECK_EQ(kp_opus_packet_samples(code3cut, sizeof code3cut), 0);
	CHECK_EQ(kp_opus_packet_samples(zero, sizeof zero), 0);
	CHECK_EQ(kp_opus_packet_samples(silk20, 0), 0);
}

static const uint8_t sps[] = {0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xbf, 0xe5, 0xc0, 0x44, 0x00, 0x00,
			      0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xc8, 0x3c, 0x58, 0xba, 0x80};
static const uint8_t pps[] = {0x68, 0xce, 0x3c, 0x80};

static void test_two_tracks(void)
{
	struct h26x_param_sets ps = {0};
	memcpy(ps.sps.data, sps, sizeof sps);
	ps.sps.len = sizeof sps;
	memcpy(ps.pps.data, pps, sizeof pps);
	ps.pps.len = sizeof pps;
	struct fmp4_track t = {.codec = KP_CODEC_H264, .width = 640, .height = 360};
	CHECK_EQ(h26x_config_write(KP_CODEC_H264, &ps, t.config, sizeof t.config, &t.config_len), 0);
	struct kp_audio_format a;
	const uint8_t lc[] = {0x14, 0x08};
	CHECK_EQ(kp_aac_config_parse(lc, sizeof lc, &a), 0);
	static uint8_t file[FMP4_INIT_MAX + FMP4_FRAG_HEADER_MAX + 4096];
	size_t len;
	CHECK_EQ(fmp4_write_init_av(&t, &a, file, sizeof file, &len), 0);
	static struct fmp4_init in;
	CHECK_EQ(fmp4_read_init(file, len, &in), 0);
	CHECK_EQ(in.track_id, 1);
	CHECK_EQ(in.timescale, FMP4_TIMESCALE);
	CHECK_EQ(in.track.width, 640);
	CHECK_EQ(in.audio_track_id, FMP4_AUDIO_TRACK_ID);
	CHECK_EQ(in.audio_timescale, 16000);
	CHECK(kp_audio_format_same(&in.audio, &a));
	size_t init_len = len;

	/* One fragment: three video samples, four audio samples after them in the mdat. */
	struct fmp4_sample v[3] = {{100, 3600, 1}, {50, 3600, 0}, {60, 3600, 0}};
	struct fmp4_sample s[4] = {{20, 1024, 1}, {21, 1024, 1}, {22, 1024, 1}, {23, 1024, 1}};
	struct fmp4_frag_desc d = {.seq = 1,
				   .base_time = 90000,
				   .wall_us = 1700000000000000,
				   .samples = v,
				   .nsamples = 3,
				   .audio_base_time = 16000,
				   .audio = s,
				   .naudio = 4};
	size_t hlen;
	CHECK_EQ(fmp4_write_frag_header(&d, file + init_len, sizeof file - init_len, &hlen), 0);
	size_t payload = 100 + 50 + 60 + 20 + 21 + 22 + 23;
	for (size_t i = 0; i < payload; i++)
		file[init_len + hlen + i] = (uint8_t)(i < 210 ? 0 : 0xa0 + (i - 210) % 16);
	static struct fmp4_frag f;
	CHECK_EQ(fmp4_read_frag(&in, file + init_len, hlen + payload, &f), 0);
	CHECK_EQ(f.nsamples, 3);
	CHECK_EQ(f.base_time, 90000);
	CHECK_EQ(f.duration, 3 * 3600);
	CHECK_EQ(f.samples[0].offset, hlen);
	CHECK_EQ(f.samples[2].size, 60);
	CHECK_EQ(f.other_samples, 4);
	CHECK_EQ(f.other_base_time, 16000);
	CHECK_EQ(f.total_len, hlen + payload);
	/* Without the init, the first traf is the video. */
	CHECK_EQ(fmp4_read_frag(NULL, file + init_len, hlen, &f), 0);
	CHECK_EQ(f.nsamples, 3);
	CHECK_EQ(f.other_samples, 4);
	/* An audio sample past the mdat is refused. */
	static uint8_t bad[FMP4_FRAG_HEADER_MAX];
	struct fmp4_frag_desc d2 = d;
	struct fmp4_sample big[4] = {{20, 1024, 1}, {21, 1024, 1}, {22, 1024, 1}, {23, 1024, 1}};
	d2.audio = big;
	CHECK_EQ(fmp4_write_frag_header(&d2, bad, sizeof bad, &hlen), 0);
	uint32_t mdat =
	    (uint32_t)bad[hlen - 8] << 24 | (uint32_t)bad[hlen - 7] << 16 | bad[hlen - 6] << 8 | bad[hlen - 5];
	mdat -= 23;
	bad[hlen - 8] = (uint8_t)(mdat >> 24);
	bad[hlen - 7] = (uint8_t)(mdat >> 16);
	bad[hlen - 6] = (uint8_t)(mdat >> 8);
	bad[hlen - 5] = (uint8_t)mdat;
	CHECK_EQ(fmp4_read_frag(&in, bad, hlen, &f), -EBADMSG);

	/* Rebased by 0.5 s: video 90000 -> 45000, audio 16000 -> 8000. */
	static uint8_t hdr[FMP4_FRAG_HEADER_MAX];
	CHECK_EQ(fmp4_read_frag(&in, file + init_len, hlen + payload, &f), 0);
	memcpy(hdr, file + init_len, f.header_len);
	CHECK_EQ(fmp4_frag_rebase(hdr, f.header_len, 45000, 0), -EBADMSG); /* an audio traf needs its rate */
	CHECK_EQ(fmp4_frag_rebase(hdr, f.header_len, 45000, 16000), 0);
	CHECK_EQ(fmp4_read_frag(&in, hdr, f.header_len, &f), 0);
	CHECK_EQ(f.base_time, 45000);
	CHECK_EQ(f.other_base_time, 8000);

	/* libavformat reads the file as an H.264 and an AAC stream (its headers only: the
	 * sample bytes are filler). */
	av_log_set_level(AV_LOG_QUIET);
	char path[] = "/tmp/kp-test-audio-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, file, init_len + hlen + payload), (ssize_t)(init_len + hlen + payload));
	close(fd);
	AVFormatContext *fmt = NULL;
	CHECK_EQ(avformat_open_input(&fmt, path, NULL, NULL), 0);
	if (fmt) {
		CHECK_EQ(fmt->nb_streams, 2);
		if (fmt->nb_streams == 2) {
			CHECK_EQ(fmt->streams[0]->codecpar->codec_id, AV_CODEC_ID_H264);
			CHECK_EQ(fmt->streams[1]->codecpar->codec_id, AV_CODEC_ID_AAC);
			CHECK_EQ(fmt->streams[1]->codecpar->sample_rate, 16000);
			CHECK_EQ(fmt->streams[1]->codecpar->extradata_size, 2);
		}
		AVPacket *pkt = av_packet_alloc();
		unsigned audio = 0;
		while (av_read_frame(fmt, pkt) >= 0) {
			if (pkt->stream_index == 1) {
				CHECK_EQ(pkt->size, 20 + audio);
				CHECK_EQ(pkt->pts, 16000 + 1024 * audio);
				audio++;
			}
			av_packet_unref(pkt);
		}
		CHECK_EQ(audio, 4);
		av_packet_free(&pkt);
		avformat_close_input(&fmt);
	}
	unlink(path);

	/* Opus: an Opus entry with dOps, read back; libavformat sees an Opus stream. */
	struct kp_audio_format o = {.codec = KP_AUDIO_OPUS, .rate = 48000, .channels = 2};
	CHECK_EQ(fmp4_write_init_av(&t, &o, file, sizeof file, &len), 0);
	CHECK_EQ(fmp4_read_init(file, len, &in), 0);
	CHECK_EQ(in.audio.codec, KP_AUDIO_OPUS);
	CHECK_EQ(in.audio.channels, 2);
	CHECK_EQ(in.audio_timescale, 48000);
	o.rate = 44100;
	CHECK_EQ(fmp4_write_init_av(&t, &o, file, sizeof file, &len), -EINVAL); /* Opus is 48 kHz */
	char opath[] = "/tmp/kp-test-opus-XXXXXX";
	o.rate = 48000;
	CHECK_EQ(fmp4_write_init_av(&t, &o, file, sizeof file, &len), 0);
	fd = mkstemp(opath);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, file, len), (ssize_t)len);
	close(fd);
	fmt = NULL;
	CHECK_EQ(avformat_open_input(&fmt, opath, NULL, NULL), 0);
	if (fmt) {
		CHECK_EQ(fmt->nb_streams, 2);
		if (fmt->nb_streams == 2)
			CHECK_EQ(fmt->streams[1]->codecpar->codec_id, AV_CODEC_ID_OPUS);
		avformat_close_input(&fmt);
	}
	unlink(opath);
}

int main(void)
{
	RUN(test_adts);
	RUN(test_config);
	RUN(test_opus);
	RUN(test_two_tracks);
	return TEST_EXIT();
}
