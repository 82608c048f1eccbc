/* ingestd's audio converter (ingestd/audio_conv.c) end to end with libopus: a 1 kHz tone
 * encoded here as IMA ADPCM blocks (8 kHz, 244 bytes, as Reolink cameras send), G.711
 * mu-law (8 kHz) and A-law (16 kHz), pushed with camera times, comes out as Opus packets
 * (48 kHz timescale, mono, 960 samples, 20 ms apart on the 90 kHz clock) that libopus's
 * decoder turns back into the tone: its energy at 1 kHz is most of the energy, at about
 * the input's level. A tone that starts 0.5 s into the run starts within 1 ms of that
 * time in the decoded audio (the encoder's lookahead taken off the packets' times). A
 * unit 2 s late moves the run; 100 ms of jitter does not. Refused: 44.1 kHz and stereo
 * (-EPROTONOSUPPORT, no converter made), a unit one byte over ING_AUDIO_CONV_UNIT_MAX
 * (the ceiling itself converts), an ADPCM block with step index 89. */
#include <errno.h>
#include <math.h>
#include <opus.h>
#include <stdio.h>

#include "audio_adpcm.h"
#include "audio_conv.h"
#include "audio_g711.h"
#include "test.h"

#define BASE_PTS  900000 /* 10 s on the 90 kHz clock */
#define TONE_HZ   1000.0
#define AMPLITUDE 8000.0
#define MAX_PKTS  2048

struct got {
	size_t n;
	int64_t pts[MAX_PKTS];
	uint8_t data[MAX_PKTS][ING_AUDIO_CONV_PACKET_MAX];
	size_t len[MAX_PKTS];
	int bad_fmt;
};

static struct got got;

static void collect(void *arg, const struct kp_audio_unit *au)
{
	struct got *g = arg;
	if (au->fmt.codec != KP_AUDIO_OPUS || au->fmt.rate != 48000 || au->fmt.channels != 1 ||
	    au->fmt.frame_samples != 960 || au->len == 0 || au->len > ING_AUDIO_CONV_PACKET_MAX ||
	    kp_opus_packet_samples(au->data, au->len) != 960)
		g->bad_fmt++;
	if (g->n < MAX_PKTS) {
		g->pts[g->n] = au->pts_90k;
		memcpy(g->data[g->n], au->data, au->len);
		g->len[g->n] = au->len;
		g->n++;
	}
}

/* The input: silence until onset (samples), then the tone. */
static int16_t sample(size_t i, uint32_t rate, size_t onset)
{
	if (i < onset)
		return 0;
	return (int16_t)lrint(AMPLITUDE * sin(2 * M_PI * TONE_HZ * (double)(i - onset) / rate));
}

/* G.711 by search: the code whose decoded value is nearest. */
static uint8_t g711_encode(int16_t s, int alaw)
{
	uint8_t best = 0;
	int bd = 1 << 30;
	for (int c = 0; c < 256; c++) {
		int d = abs((alaw ? ing_g711_alaw((uint8_t)c) : ing_g711_ulaw((uint8_t)c)) - s);
		if (d < bd) {
			bd = d;
			best = (uint8_t)c;
		}
	}
	return best;
}

/* IMA ADPCM encoder (the IMA reference's quantizer, the decoder's reconstruction and
 * tables). */
static unsigned ima_nibble(int *pred, int *idx, int s)
{
	int step = ing_adpcm_step_table[*idx], diff = s - *pred;
	unsigned nib = 0;
	if (diff < 0) {
		nib = 8;
		diff = -diff;
	}
	for (unsigned bit = 4; bit; bit >>= 1, step >>= 1)
		if (diff >= step) {
			nib |= bit;
			diff -= step;
		}
	step = ing_adpcm_step_table[*idx];
	int d = ((2 * (int)(nib & 7) + 1) * step) >> 3;
	int p = (nib & 8) ? *pred - d : *pred + d;
	*pred = p < -32768 ? -32768 : p > 32767 ? 32767 : p;
	int i = *idx + ing_adpcm_index_table[nib];
	*idx = i < 0 ? 0 : i > 88 ? 88 : i;
	return nib;
}

/* One 244-byte block (481 samples) from s[0..480]; idx carries over. */
static void adpcm_block(const int16_t *s, int *idx, uint8_t *b)
{
	int pred = s[0];
	b[0] = (uint8_t)(pred & 0xff);
	b[1] = (uint8_t)((pred >> 8) & 0xff);
	b[2] = (uint8_t)*idx;
	b[3] = 0;
	for (int k = 0; k < 240; k++) {
		unsigned lo = ima_nibble(&pred, idx, s[1 + 2 * k]);
		unsigned hi = ima_nibble(&pred, idx, s[2 + 2 * k]);
		b[4 + k] = (uint8_t)(lo | hi << 4);
	}
}

/* Pushes seconds of input in the codec's units; times from BASE_PTS (+ jitter_90k on odd
 * units). Returns the number of units refused. */
static int push_run(struct ing_audio_conv **c, enum kp_audio_codec codec, uint32_t rate, double seconds, size_t onset,
		    int jitter_90k)
{
	size_t total = (size_t)(seconds * rate), per = codec == KP_AUDIO_ADPCM_IMA ? 481 : rate / 50;
	int refused = 0, idx = 0;
	static int16_t pcm[481];
	static uint8_t unit[ING_AUDIO_CONV_UNIT_MAX];
	for (size_t at = 0, u = 0; at + per <= total; at += per, u++) {
		for (size_t i = 0; i < per; i++)
			pcm[i] = sample(at + i, rate, onset);
		size_t len = per;
		if (codec == KP_AUDIO_ADPCM_IMA) {
			adpcm_block(pcm, &idx, unit);
			len = 244;
		} else
			for (size_t i = 0; i < per; i++)
				unit[i] = g711_encode(pcm[i], codec == KP_AUDIO_PCMA);
		struct kp_audio_unit in = {
		    .fmt = {.codec = codec, .rate = rate, .channels = 1},
		    .pts_90k = BASE_PTS + (int64_t)(at * 90000 / rate) + ((u & 1) ? jitter_90k : 0),
		    .wall_us = 1,
		    .data = unit,
		    .len = len,
		};
		const char *why = NULL;
		if (ing_audio_conv_push(c, &in, collect, &got, &why) < 0) {
			fprintf(stderr, "unit %zu refused: %s\n", u, why);
			refused++;
		}
	}
	return refused;
}

/* Decodes every packet got holds into out (48 kHz); the sample count. */
static size_t decode_all(float *out, size_t cap)
{
	int e;
	OpusDecoder *d = opus_decoder_create(48000, 1, &e);
	size_t n = 0;
	for (size_t i = 0; d && i < got.n && n + 960 <= cap; i++) {
		int k = opus_decode_float(d, got.data[i], (opus_int32)got.len[i], out + n, 960, 0);
		CHECK_EQ(k, 960);
		if (k > 0)
			n += (size_t)k;
	}
	if (d)
		opus_decoder_destroy(d);
	return n;
}

/* Of the decoded samples [from, from + n): the share of their energy at TONE_HZ (one DFT
 * bin over whole periods) and their RMS. */
static void tone_measure(const float *y, size_t from, size_t n, double *share, double *rms)
{
	double re = 0, im = 0, e = 0;
	for (size_t i = 0; i < n; i++) {
		double v = y[from + i] * 32768.0, ph = 2 * M_PI * TONE_HZ * (double)i / 48000.0;
		re += v * cos(ph);
		im -= v * sin(ph);
		e += v * v;
	}
	double tone = 2 * (re * re + im * im) / ((double)n * (double)n); /* a sine's mean square */
	*rms = sqrt(e / (double)n);
	*share = e > 0 ? tone / (e / (double)n) : 0;
}

static float decoded[48000 * 4];

static void check_tone(enum kp_audio_codec codec, uint32_t rate, const char *name)
{
	struct ing_audio_conv *c = NULL;
	memset(&got, 0, sizeof got);
	CHECK_EQ(push_run(&c, codec, rate, 2.0, 0, 0), 0);
	CHECK(c != NULL);
	ing_audio_conv_free(&c);
	CHECK(c == NULL);
	CHECK_EQ(got.bad_fmt, 0);
	CHECK(got.n >= 95); /* 2 s: 100 packets less what the last unit left unfilled */
	int steps = 0;
	for (size_t i = 1; i < got.n; i++)
		steps += got.pts[i] - got.pts[i - 1] == 1800; /* 960 samples at 48 kHz */
	CHECK_EQ(steps, (long long)got.n - 1);
	CHECK(got.pts[0] < BASE_PTS && got.pts[0] > BASE_PTS - 900); /* less the lookahead (< 10 ms) */
	size_t n = decode_all(decoded, sizeof decoded / sizeof decoded[0]);
	CHECK(n >= 95 * 960);
	double share, rms;
	tone_measure(decoded, 24000, 48000, &share, &rms); /* 0.5 s .. 1.5 s, 1,000 periods */
	fprintf(stderr, "%s: %zu packets, first at %+lld, 1 kHz share %.3f, rms %.0f (in %.0f)\n", name, got.n,
		(long long)(got.pts[0] - BASE_PTS), share, rms, AMPLITUDE / sqrt(2));
	CHECK(share > 0.9);
	CHECK(rms > 0.7 * AMPLITUDE / sqrt(2) && rms < 1.3 * AMPLITUDE / sqrt(2));
}

static void test_adpcm_tone(void)
{
	check_tone(KP_AUDIO_ADPCM_IMA, 8000, "ADPCM 8 kHz");
}

static void test_pcmu_tone(void)
{
	check_tone(KP_AUDIO_PCMU, 8000, "mu-law 8 kHz");
}

static void test_pcma_tone(void)
{
	check_tone(KP_AUDIO_PCMA, 16000, "A-law 16 kHz");
}

/* The tone starts at 0.5 s: the first decoded sample above a quarter of its amplitude is
 * within 1 ms of BASE_PTS + 0.5 s, 100 ms of jitter on every other unit notwithstanding. */
static void test_onset_on_time(void)
{
	struct ing_audio_conv *c = NULL;
	memset(&got, 0, sizeof got);
	CHECK_EQ(push_run(&c, KP_AUDIO_PCMU, 8000, 1.5, 4000, 9000), 0);
	ing_audio_conv_free(&c);
	size_t n = decode_all(decoded, sizeof decoded / sizeof decoded[0]);
	size_t j = 0;
	while (j < n && fabsf(decoded[j]) * 32768.0f < AMPLITUDE / 4)
		j++;
	CHECK(j < n);
	int64_t at = got.pts[0] + (int64_t)j * 90000 / 48000, want = BASE_PTS + 45000;
	fprintf(stderr, "onset at %+lld ticks of 90 kHz from where the camera had it\n", (long long)(at - want));
	CHECK(at - want <= 90 && want - at <= 90);
	for (size_t i = 1; i < got.n; i++)
		CHECK_EQ(got.pts[i] - got.pts[i - 1], 1800);
}

/* 2 s of lost audio: the packets after the gap carry the new time. */
static void test_resync(void)
{
	struct ing_audio_conv *c = NULL;
	memset(&got, 0, sizeof got);
	uint8_t unit[160];
	memset(unit, 0xff, sizeof unit);
	struct kp_audio_unit in = {
	    .fmt = {.codec = KP_AUDIO_PCMU, .rate = 8000, .channels = 1}, .data = unit, .len = 160};
	const char *why;
	for (int i = 0; i < 10; i++) {
		in.pts_90k = BASE_PTS + i * 1800;
		CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), 0);
	}
	size_t before = got.n;
	CHECK_EQ(before, 10);
	for (int i = 0; i < 10; i++) {
		in.pts_90k = BASE_PTS + 180000 + (10 + i) * 1800;
		CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), 0);
	}
	CHECK_EQ(got.n, 20);
	CHECK_EQ(got.pts[before] - got.pts[before - 1], 180000 + 1800);
	ing_audio_conv_free(&c);
}

static void test_refused(void)
{
	struct ing_audio_conv *c = NULL;
	static uint8_t unit[ING_AUDIO_CONV_UNIT_MAX + 1];
	const char *why = NULL;
	memset(&got, 0, sizeof got);
	struct kp_audio_unit in = {
	    .fmt = {.codec = KP_AUDIO_PCMU, .rate = 44100, .channels = 1}, .data = unit, .len = 160};
	CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), -EPROTONOSUPPORT);
	CHECK(c == NULL);
	CHECK_STR_CONTAINS(why, "8000, 12000, 16000, 24000 or 48000 Hz");
	in.fmt.rate = 8000;
	in.fmt.channels = 2;
	CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), -EPROTONOSUPPORT);
	CHECK(c == NULL);
	in.fmt.channels = 1;
	in.len = ING_AUDIO_CONV_UNIT_MAX + 1;
	CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), -EMSGSIZE);
	in.len = ING_AUDIO_CONV_UNIT_MAX;
	CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), 0);
	CHECK_EQ(got.n, ING_AUDIO_CONV_UNIT_MAX / 160);
	/* The codec changes: a new converter; its bad block is refused and nothing sent. */
	in.fmt.codec = KP_AUDIO_ADPCM_IMA;
	unit[2] = 89;
	in.len = 244;
	size_t before = got.n;
	CHECK_EQ(ing_audio_conv_push(&c, &in, collect, &got, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "step index");
	CHECK_EQ(got.n, before);
	ing_audio_conv_free(&c);
	CHECK_EQ(got.bad_fmt, 0);
}

int main(void)
{
	RUN(test_adpcm_tone);
	RUN(test_pcmu_tone);
	RUN(test_pcma_tone);
	RUN(test_onset_on_time);
	RUN(test_resync);
	RUN(test_refused);
	return TEST_EXIT();
}
