/* Unit tests of webd's WebSocket frame reader (webd/http/ws_frame.c): the three length
 * forms, masking, incomplete input at every length, and each refusal. */
#include <string.h>

#include "test.h"
#include "ws_frame.h"

static uint8_t buf[70000];

/* A masked client frame with payload of len bytes 'a'; returns its size. */
static size_t frame(uint8_t b0, size_t len)
{
	size_t h = 2;
	buf[0] = b0;
	if (len < 126) {
		buf[1] = (uint8_t)(0x80 | len);
	} else if (len <= 0xffff) {
		buf[1] = 0x80 | 126;
		buf[2] = (uint8_t)(len >> 8);
		buf[3] = (uint8_t)len;
		h = 4;
	} else {
		buf[1] = 0x80 | 127;
		for (int i = 0; i < 8; i++)
			buf[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		h = 10;
	}
	static const uint8_t mask[4] = {1, 2, 3, 4};
	memcpy(buf + h, mask, 4);
	for (size_t i = 0; i < len; i++)
		buf[h + 4 + i] = (uint8_t)('a' ^ mask[i & 3]);
	return h + 4 + len;
}

static void test_lengths(void)
{
	static const size_t lens[] = {0, 5, 125, 126, 65535, 65536};
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		size_t n = frame(0x82, lens[k]);
		struct ws_frame f;
		CHECK_EQ(ws_frame_parse(buf, n, 65536, &f), WSF_OK);
		CHECK_EQ(f.payload_len, lens[k]);
		CHECK_EQ(f.header_len + f.payload_len, n);
		CHECK(f.fin && f.op == 2);
		ws_frame_unmask(buf + f.header_len, f.payload_len, f.mask);
		CHECK(f.payload_len == 0 || (buf[f.header_len] == 'a' && buf[n - 1] == 'a'));
		frame(0x82, lens[k]);
		for (size_t cut = 0; cut < n && cut < 200; cut++)
			CHECK_EQ(ws_frame_parse(buf, cut, 65536, &f), WSF_INCOMPLETE);
		CHECK_EQ(ws_frame_parse(buf, n - 1, 65536, &f), WSF_INCOMPLETE);
	}
}

static void test_refusals(void)
{
	struct ws_frame f;
	size_t n = frame(0x81, 65537);
	CHECK_EQ(ws_frame_parse(buf, n, 65536, &f), WSF_TOO_BIG);
	/* Decided from the header alone. */
	CHECK_EQ(ws_frame_parse(buf, 10, 65536, &f), WSF_TOO_BIG);
	n = frame(0x81, 100);
	CHECK_EQ(ws_frame_parse(buf, n, 99, &f), WSF_TOO_BIG);
	n = frame(0x89, 100);
	CHECK_EQ(ws_frame_parse(buf, n, 10, &f), WSF_OK); /* control frames: their own limit */
	n = frame(0x89, 126);
	CHECK_EQ(ws_frame_parse(buf, n, 65536, &f), WSF_BAD_CONTROL);
	n = frame(0x09, 5);
	CHECK_EQ(ws_frame_parse(buf, n, 65536, &f), WSF_BAD_CONTROL);
	n = frame(0xC1, 5);
	CHECK_EQ(ws_frame_parse(buf, n, 65536, &f), WSF_RESERVED);
	n = frame(0x81, 5);
	buf[1] &= 0x7f;
	CHECK_EQ(ws_frame_parse(buf, n, 65536, &f), WSF_UNMASKED);
}

int main(void)
{
	RUN(test_lengths);
	RUN(test_refusals);
	return TEST_EXIT();
}
