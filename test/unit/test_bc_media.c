/* BcMedia record parsing, reassembly across messages, resync, and the malformed records
 * of BAICHUAN.md section 7, item 10. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "bc_header.h"
#include "bc_media.h"
#include "test.h"

/* Appends a whole frame record (header, payload, padding) to out. */
static size_t frame_n(uint8_t *out, bool key, enum kp_codec codec, const char *payload, size_t len, uint32_t ts,
		      uint32_t utc)
{
	size_t n = bc_media_write_frame_header(out, key, codec, (uint32_t)len, ts, utc);
	memcpy(out + n, payload, len);
	n += len;
	memset(out + n, 0, bc_media_pad(len));
	return n + bc_media_pad(len);
}

#define frame(out, key, codec, lit, ts, utc) frame_n(out, key, codec, lit, sizeof(lit) - 1, ts, utc)

static void test_info(void)
{
	uint8_t b[32];
	struct bc_media_record r;
	const char *why = NULL;
	CHECK_EQ(bc_media_write_info(b, 640, 360, 15), 32);
	CHECK(memcmp(b, "1002", 4) == 0);
	CHECK_EQ(bc_media_parse(b, 32, &r, &why), 0);
	CHECK_EQ(r.kind, BC_MEDIA_INFO);
	CHECK_EQ(r.width, 640);
	CHECK_EQ(r.height, 360);
	CHECK_EQ(r.fps, 15);
	CHECK_EQ(r.record_len, 32);
	CHECK_EQ(bc_media_parse(b, 31, &r, &why), -EAGAIN);
	memcpy(b, "1001", 4);
	CHECK_EQ(bc_media_parse(b, 32, &r, &why), 0);
	bc_put_le32(b + 4, 36);
	CHECK_EQ(bc_media_parse(b, 32, &r, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "32");
}

static void test_frames(void)
{
	uint8_t b[128];
	struct bc_media_record r;
	const char *why = NULL;
	size_t n = frame(b, true, KP_CODEC_H265,
			 "\0\0\0\1\x40\x01"
			 "abc",
			 123456, 1700000000);
	CHECK_EQ(n, 24 + 8 + 16);
	CHECK(memcmp(b, "00dc", 4) == 0);
	CHECK(memcmp(b + 4, "H265", 4) == 0);
	CHECK_EQ(bc_media_parse(b, n, &r, &why), 0);
	CHECK_EQ(r.kind, BC_MEDIA_IFRAME);
	CHECK_EQ(r.codec, KP_CODEC_H265);
	CHECK_EQ(r.ts_us, 123456);
	CHECK(r.has_utc);
	CHECK_EQ(r.utc_s, 1700000000);
	CHECK_EQ(r.len, 9);
	CHECK(memcmp(r.data,
		     "\0\0\0\1\x40\x01"
		     "abc",
		     9) == 0);
	CHECK_EQ(r.record_len, n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(bc_media_parse(b, i, &r, &why), -EAGAIN);
	n = frame(b, false, KP_CODEC_H264, "12345678", 7, 0);
	CHECK_EQ(n, 32); /* 8-byte payload: no padding */
	CHECK_EQ(bc_media_parse(b, n, &r, &why), 0);
	CHECK_EQ(r.kind, BC_MEDIA_PFRAME);
	CHECK(!r.has_utc);
	/* Any channel digit. */
	memcpy(b, "91dc", 4);
	CHECK_EQ(bc_media_parse(b, n, &r, &why), 0);
	memcpy(b, "92dc", 4);
	CHECK_EQ(bc_media_parse(b, n, &r, &why), -EBADMSG);
	memcpy(b, "01dc", 4);
	memcpy(b + 4, "VP80", 4);
	CHECK_EQ(bc_media_parse(b, n, &r, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "fourcc");
}

static void test_frame_limits(void)
{
	uint8_t b[64];
	struct bc_media_record r;
	const char *why = NULL;
	bc_media_write_frame_header(b, true, KP_CODEC_H264, 16 * 1024 * 1024 - 24, 0, 0);
	CHECK_EQ(bc_media_parse(b, 24, &r, &why), -EAGAIN); /* exactly the ceiling */
	bc_media_write_frame_header(b, true, KP_CODEC_H264, 16 * 1024 * 1024 - 23, 0, 0);
	CHECK_EQ(bc_media_parse(b, 24, &r, &why), -EMSGSIZE);
	CHECK_STR_CONTAINS(why, "16 MiB");
	bc_media_write_frame_header(b, true, KP_CODEC_H264, 0xffffffff, 0, 0);
	CHECK_EQ(bc_media_parse(b, 24, &r, &why), -EMSGSIZE);
	bc_media_write_frame_header(b, true, KP_CODEC_H264, 8, 0, 0);
	bc_put_le32(b + 12, 0xfffffff0); /* additional header size */
	CHECK_EQ(bc_media_parse(b, 24, &r, &why), -EMSGSIZE);
}

static void test_audio(void)
{
	uint8_t b[64] = "05wb";
	struct bc_media_record r;
	const char *why = NULL;
	bc_put_le16(b + 4, 5);
	bc_put_le16(b + 6, 5);
	memcpy(b + 8, "\xff\xf1xyz", 5);
	CHECK_EQ(bc_media_parse(b, 16, &r, &why), 0);
	CHECK_EQ(r.kind, BC_MEDIA_AAC);
	CHECK_EQ(r.len, 5);
	CHECK_EQ(r.record_len, 16);
	CHECK_EQ(bc_media_parse(b, 15, &r, &why), -EAGAIN);
	bc_put_le16(b + 6, 6);
	CHECK_EQ(bc_media_parse(b, 16, &r, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "sizes differ");
	memcpy(b, "01wb", 4);
	bc_put_le16(b + 4, 8);
	bc_put_le16(b + 6, 8);
	bc_put_le16(b + 8, 0x0100);
	bc_put_le16(b + 10, 2);
	CHECK_EQ(bc_media_parse(b, 16, &r, &why), 0);
	CHECK_EQ(r.kind, BC_MEDIA_ADPCM);
	CHECK_EQ(r.len, 4);
	bc_put_le16(b + 8, 0x7a00);
	CHECK_EQ(bc_media_parse(b, 16, &r, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "sub-magic");
	bc_put_le16(b + 4, 3);
	bc_put_le16(b + 6, 3);
	CHECK_EQ(bc_media_parse(b, 16, &r, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "shorter");
}

static void test_unknown_magic(void)
{
	struct bc_media_record r;
	const char *why = NULL;
	CHECK_EQ(bc_media_parse((const uint8_t *)"XXXXXXXXXXXX", 12, &r, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "unknown media magic");
	CHECK_EQ(bc_media_parse((const uint8_t *)"00d", 3, &r, &why), -EAGAIN);
}

static void test_stream_split(void)
{
	uint8_t all[512];
	size_t n = bc_media_write_info(all, 1920, 1080, 25);
	n += frame(all + n, true, KP_CODEC_H264, "\0\0\0\1\x67keyframe-data", 1000, 1);
	n += frame(all + n, false, KP_CODEC_H264, "\0\0\0\1\x41p", 41000, 0);
	memcpy(all + n, "05wb\2\0\2\0ab\0\0\0\0\0\0", 16);
	n += 16;
	/* Every split point over two messages gives the same four records. */
	for (size_t cut = 0; cut <= n; cut++) {
		struct bc_media_stream m = {0};
		struct bc_media_record r;
		int kinds = 0, got = 0;
		CHECK_EQ(bc_media_stream_push(&m, all, cut), 0);
		while (bc_media_stream_next(&m, &r) == 0)
			kinds |= 1 << r.kind, got++;
		CHECK_EQ(bc_media_stream_push(&m, all + cut, n - cut), 0);
		while (bc_media_stream_next(&m, &r) == 0)
			kinds |= 1 << r.kind, got++;
		CHECK_EQ(got, 4);
		CHECK_EQ(kinds, 1 << BC_MEDIA_INFO | 1 << BC_MEDIA_IFRAME | 1 << BC_MEDIA_PFRAME | 1 << BC_MEDIA_AAC);
		CHECK_EQ(m.resyncs, 0);
		bc_media_stream_free(&m);
	}
}

static void test_stream_resync(void)
{
	uint8_t all[512];
	size_t n = 0;
	memcpy(all, "garbage!garbage!", 16);
	n += 16;
	n += frame(all + n, true, KP_CODEC_H264, "\0\0\0\1\x65xx", 1, 0);
	memcpy(all + n, "1002\x24\0\0\0", 8); /* info with a bad size */
	n += 8;
	n += frame(all + n, false, KP_CODEC_H264, "\0\0\0\1\x41yy", 2, 0);
	struct bc_media_stream m = {0};
	struct bc_media_record r;
	int frames = 0;
	CHECK_EQ(bc_media_stream_push(&m, all, n), 0);
	while (bc_media_stream_next(&m, &r) == 0)
		frames++;
	CHECK_EQ(frames, 2);
	CHECK_EQ(m.resyncs, 2);
	CHECK_EQ(m.discarded, 16 + 8);
	CHECK(m.last_error != NULL);
	/* A buffer of pure garbage keeps only what could be the start of a magic. */
	memset(all, 'z', 100);
	CHECK_EQ(bc_media_stream_push(&m, all, 100), 0);
	CHECK_EQ(bc_media_stream_next(&m, &r), -EAGAIN);
	CHECK(m.len <= 3);
	bc_media_stream_free(&m);
}

static void test_ts_unwrap(void)
{
	struct bc_ts_unwrap u = {0};
	CHECK_EQ(bc_ts_unwrap(&u, 0xfff00000u), 0xfff00000ll);
	CHECK_EQ(bc_ts_unwrap(&u, 0xfffff000u), 0xfffff000ll);
	/* Across the u32 wrap the value keeps growing. */
	CHECK_EQ(bc_ts_unwrap(&u, 0x00001000u), 0x100001000ll);
	CHECK_EQ(bc_ts_unwrap(&u, 0x00002000u), 0x100002000ll);
	/* A small step back is a step back, not a jump of 71 minutes. */
	CHECK_EQ(bc_ts_unwrap(&u, 0x00001000u), 0x100001000ll);
	CHECK_EQ(bc_ts_unwrap(&u, 0xfffff000u), 0xfffff000ll);
}

int main(void)
{
	RUN(test_ts_unwrap);
	RUN(test_info);
	RUN(test_frames);
	RUN(test_frame_limits);
	RUN(test_audio);
	RUN(test_unknown_magic);
	RUN(test_stream_split);
	RUN(test_stream_resync);
	return TEST_EXIT();
}
