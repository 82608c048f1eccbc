/* common/fmp4_live.c: a keyframe's parameter sets make an init segment the one fMP4
 * reader accepts, and each access unit one fragment of one sample whose bytes are the
 * access unit's slices, length-prefixed, its parameter sets left out, on a decode
 * timeline that starts at 0 and advances by each sample's duration. */
#include <errno.h>

#include "fmp4_live.h"
#include "test.h"

/* The fixture camera's SPS (H.264 Baseline, 640x480) and PPS, then an IDR slice. */
static const uint8_t idr_au[] = {0, 0, 0, 1,    0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xf6, 0x84, 0x00, 0,
				 0, 0, 1, 0x68, 0xce, 0x3c, 0x80, 0,    0,    1,    0x65, 0x88, 0x84, 0x21};
static const uint8_t p_au[] = {0, 0, 0, 1, 0x41, 0x9a, 0x02, 0x03};

static void test_init_and_fragments(void)
{
	static uint8_t init[FMP4_INIT_MAX], frag[32768];
	size_t len;
	struct fmp4_live l;
	CHECK_EQ(fmp4_live_init(&l, KP_CODEC_H264, p_au, sizeof p_au, 640, 480, 1000, init, sizeof init, &len),
		 -EINVAL);
	CHECK_EQ(fmp4_live_init(&l, KP_CODEC_H264, idr_au, sizeof idr_au, 640, 480, 1000, init, sizeof init, &len), 0);
	static struct fmp4_init in;
	CHECK_EQ(fmp4_read_init(init, len, &in), 0);
	CHECK_EQ(in.len, len);
	CHECK_EQ(in.track.codec, KP_CODEC_H264);
	CHECK_EQ(in.track.width, 640);
	CHECK_EQ(in.nal_len_size, 4);

	static struct fmp4_frag f;
	CHECK(fmp4_live_frag_cap(sizeof idr_au) <= sizeof frag);
	CHECK_EQ(fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 0, 0, frag, sizeof frag, &len), -ERANGE);
	CHECK_EQ(fmp4_live_frag(&l, idr_au, sizeof idr_au, true, 3000, 5000, frag, sizeof frag, &len), 0);
	CHECK_EQ(fmp4_read_frag(&in, frag, len, &f), 0);
	CHECK_EQ(f.total_len, len);
	CHECK_EQ(f.seq, 1);
	CHECK_EQ(f.base_time, 0);
	CHECK_EQ(f.nsamples, 1);
	CHECK(f.samples[0].keyframe);
	CHECK_EQ(f.samples[0].size, 4 + 4);
	const uint8_t idr_sample[] = {0, 0, 0, 4, 0x65, 0x88, 0x84, 0x21};
	CHECK(!memcmp(frag + f.samples[0].offset, idr_sample, sizeof idr_sample));

	CHECK_EQ(fmp4_live_frag(&l, p_au, sizeof p_au, false, 3600, 5040, frag, sizeof frag, &len), 0);
	CHECK_EQ(fmp4_read_frag(&in, frag, len, &f), 0);
	CHECK_EQ(f.seq, 2);
	CHECK_EQ(f.base_time, 3000);
	CHECK_EQ(f.samples[0].duration, 3600);
	CHECK(!f.samples[0].keyframe);
	CHECK_EQ(fmp4_live_frag(&l, p_au, sizeof p_au, false, 3600, 0, frag, 40, &len), -ENOSPC);
	const uint8_t junk[] = {1, 2, 3};
	CHECK_EQ(fmp4_live_frag(&l, junk, sizeof junk, false, 3600, 0, frag, sizeof frag, &len), -EBADMSG);
}

int main(void)
{
	RUN(test_init_and_fragments);
	return TEST_EXIT();
}
