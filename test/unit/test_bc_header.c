/* Baichuan header parsing, serialization and the stream reader, including the
 * malformed headers of BAICHUAN.md section 7, items 1-5. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "bc_header.h"
#include "kp_limits.h"
#include "test.h"

static size_t mk(uint8_t *out, uint32_t magic, uint32_t id, uint32_t body_len, uint16_t cls, uint32_t offset)
{
	bc_put_le32(out, magic);
	bc_put_le32(out + 4, id);
	bc_put_le32(out + 8, body_len);
	out[12] = 2;
	out[13] = 1;
	bc_put_le16(out + 14, 0x1234);
	bc_put_le16(out + 16, 200);
	bc_put_le16(out + 18, cls);
	bc_put_le32(out + 20, offset);
	return bc_class_header_len(cls);
}

static void test_parse_modern(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, BC_MAGIC, 3, 100, BC_CLASS_REPLY, 40);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
	CHECK_EQ(h.msg_id, 3);
	CHECK_EQ(h.body_len, 100);
	CHECK_EQ(h.channel, 2);
	CHECK_EQ(h.stream_type, 1);
	CHECK_EQ(h.msg_num, 0x1234);
	CHECK_EQ(h.status, 200);
	CHECK_EQ(h.payload_offset, 40);
	CHECK_EQ(h.header_len, 24);
	/* Wire bytes of the magic. */
	CHECK(memcmp(b, "\xf0\xde\xbc\x0a", 4) == 0);
}

static void test_parse_swapped_magic(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, BC_MAGIC_SWAPPED, 109, 0, BC_CLASS_REPLY, 0);
	CHECK(memcmp(b, "\xa0\xcb\xed\x0f", 4) == 0);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
	CHECK_EQ(h.magic, BC_MAGIC_SWAPPED);
}

static void test_short_classes(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	/* A 20-byte class never reads payload_offset, even with bytes after it. */
	mk(b, BC_MAGIC, 1, 0, BC_CLASS_LEGACY, 0xffffffff);
	CHECK_EQ(bc_header_parse(b, 20, &h, &why), 0);
	CHECK_EQ(h.header_len, 20);
	CHECK_EQ(h.payload_offset, 0);
	mk(b, BC_MAGIC, 1, 50, BC_CLASS_NONCE, 0xffffffff);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
	CHECK_EQ(h.header_len, 20);
	CHECK_EQ(h.body_len, 50);
}

static void test_truncated(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, BC_MAGIC, 3, 10, BC_CLASS_MODERN, 0);
	for (size_t n = 0; n < 24; n++)
		CHECK_EQ(bc_header_parse(b, n, &h, &why), -EAGAIN);
	mk(b, BC_MAGIC, 3, 10, BC_CLASS_LEGACY, 0);
	CHECK_EQ(bc_header_parse(b, 19, &h, &why), -EAGAIN);
	CHECK_EQ(bc_header_parse(b, 20, &h, &why), 0);
}

static void test_bad_magic(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, 0x0abcdef1, 3, 10, BC_CLASS_MODERN, 0);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "magic");
	/* A wrong first byte fails before a full header arrived. */
	CHECK_EQ(bc_header_parse((const uint8_t *)"GET ", 4, &h, &why), -EBADMSG);
	CHECK_EQ(bc_header_parse((const uint8_t *)"\xf0\xde", 2, &h, &why), -EAGAIN);
	/* The typo'd swapped magic of protocol.md is not accepted. */
	CHECK_EQ(bc_header_parse((const uint8_t *)"\xa0\xcd\xed\x0f", 4, &h, &why), -EBADMSG);
}

static void test_bad_class(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, BC_MAGIC, 3, 10, 0x1234, 0);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), -EPROTO);
	CHECK_STR_CONTAINS(why, "class");
	mk(b, BC_MAGIC, 3, 10, BC_CLASS_DOWNLOAD, 0);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
}

static void test_offset_past_body(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, BC_MAGIC, 3, 10, BC_CLASS_REPLY, 11);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), -ERANGE);
	CHECK_STR_CONTAINS(why, "offset");
	mk(b, BC_MAGIC, 3, 10, BC_CLASS_REPLY, 10);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
	mk(b, BC_MAGIC, 3, 200000, BC_CLASS_REPLY, BC_EXTENSION_MAX + 1);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), -E2BIG);
	mk(b, BC_MAGIC, 3, 200000, BC_CLASS_REPLY, BC_EXTENSION_MAX);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
}

static void test_oversize_body(void)
{
	uint8_t b[24];
	struct bc_header h;
	const char *why = NULL;
	mk(b, BC_MAGIC, 3, KP_BAICHUAN_MAX_BODY + 1, BC_CLASS_REPLY, 0);
	/* Rejected from the first 20 bytes, before payload_offset is even present. */
	CHECK_EQ(bc_header_parse(b, 20, &h, &why), -EMSGSIZE);
	CHECK_STR_CONTAINS(why, "16 MiB");
	CHECK_EQ(bc_header_raw_body_len(b), 16777217);
	mk(b, BC_MAGIC, 3, KP_BAICHUAN_MAX_BODY, BC_CLASS_REPLY, 0);
	CHECK_EQ(bc_header_parse(b, 24, &h, &why), 0);
}

static void test_write_roundtrip(void)
{
	struct bc_header h = {.msg_id = 93,
			      .body_len = 7,
			      .channel = 250,
			      .msg_num = 9,
			      .status = 0xdc12,
			      .cls = BC_CLASS_MODERN,
			      .payload_offset = 3};
	uint8_t b[24];
	const char *why = NULL;
	struct bc_header g;
	CHECK_EQ(bc_header_write(&h, b, 23), -ENOBUFS);
	CHECK_EQ(bc_header_write(&h, b, 24), 24);
	CHECK_EQ(bc_header_parse(b, 24, &g, &why), 0);
	CHECK_EQ(g.magic, BC_MAGIC);
	CHECK_EQ(g.msg_id, 93);
	CHECK_EQ(g.status, 0xdc12);
	CHECK_EQ(g.payload_offset, 3);
	CHECK(memcmp(b + 16, "\x12\xdc", 2) == 0);
	h.cls = BC_CLASS_LEGACY;
	CHECK_EQ(bc_header_write(&h, b, 24), 20);
}

struct collected {
	int n;
	uint32_t ids[8];
	uint32_t lens[8];
	uint8_t last_body[16];
};

static int collect(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason)
{
	struct collected *c = arg;
	(void)ret_reason;
	if (c->n < 8) {
		c->ids[c->n] = h->msg_id;
		c->lens[c->n] = h->body_len;
	}
	memcpy(c->last_body, body, h->body_len < 16 ? h->body_len : 16);
	c->n++;
	return 0;
}

static void test_reader_slices(void)
{
	uint8_t stream[200];
	size_t n = 0;
	for (uint32_t id = 1; id <= 3; id++) {
		n += mk(stream + n, BC_MAGIC, id, id * 5, BC_CLASS_REPLY, 0);
		memset(stream + n, (int)id, id * 5);
		n += id * 5;
	}
	n += mk(stream + n, BC_MAGIC, 4, 0, BC_CLASS_LEGACY, 0);
	/* Every split of the stream into two, and byte by byte. */
	for (size_t cut = 0; cut <= n; cut++) {
		struct bc_reader r = {0};
		struct collected c = {0};
		const char *why = NULL;
		CHECK_EQ(bc_reader_feed(&r, stream, cut, collect, &c, &why), 0);
		CHECK_EQ(bc_reader_feed(&r, stream + cut, n - cut, collect, &c, &why), 0);
		CHECK_EQ(c.n, 4);
		CHECK_EQ(c.ids[2], 3);
		CHECK_EQ(c.lens[2], 15);
		CHECK_EQ(r.len, 0);
		bc_reader_free(&r);
	}
	struct bc_reader r = {0};
	struct collected c = {0};
	const char *why = NULL;
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(bc_reader_feed(&r, stream + i, 1, collect, &c, &why), 0);
	CHECK_EQ(c.n, 4);
	bc_reader_free(&r);
}

static void test_reader_rejects(void)
{
	uint8_t stream[64];
	size_t n = mk(stream, BC_MAGIC, 1, 4, BC_CLASS_REPLY, 0);
	memcpy(stream + n, "abcd", 4);
	n += 4;
	n += mk(stream + n, BC_MAGIC, 3, KP_BAICHUAN_MAX_BODY + 1, BC_CLASS_REPLY, 0);
	struct bc_reader r = {0};
	struct collected c = {0};
	const char *why = NULL;
	CHECK_EQ(bc_reader_feed(&r, stream, n, collect, &c, &why), -EMSGSIZE);
	CHECK_EQ(c.n, 1);
	/* Nothing past the header was buffered for the oversize body. */
	CHECK(r.cap < 4096 + 1);
	bc_reader_free(&r);
	memset(stream, 0x55, sizeof stream);
	CHECK_EQ(bc_reader_feed(&r, stream, 8, collect, &c, &why), -EBADMSG);
	bc_reader_free(&r);
}

int main(void)
{
	RUN(test_parse_modern);
	RUN(test_parse_swapped_magic);
	RUN(test_short_classes);
	RUN(test_truncated);
	RUN(test_bad_magic);
	RUN(test_bad_class);
	RUN(test_offset_past_body);
	RUN(test_oversize_body);
	RUN(test_write_roundtrip);
	RUN(test_reader_slices);
	RUN(test_reader_rejects);
	return TEST_EXIT();
}
