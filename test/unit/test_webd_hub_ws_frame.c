/* The client side of a hub's signaling WebSocket (webd/hub_ws_frame.c): the upgrade
 * request and its answer's checks (status, Upgrade, the accept key of RFC 6455 4.2.2's
 * example), the site's frames at and one past their bounds, masked frames refused, and
 * our frames' headers at each length form with the mask applied. */
#include <string.h>

#include "hub_ws_frame.h"
#include "test.h"

static void test_handshake(void)
{
	/* RFC 6455's example key "dGhlIHNhbXBsZSBub25jZQ==" is these 16 bytes. */
	const uint8_t key[16] = "the sample nonce";
	char req[1024], accept[29];
	int n = hub_ws_request(req, sizeof req, "10.0.0.1:8080", "/kp/api/v1/rtc", "kp_tok", key, accept);
	CHECK(n > 0);
	CHECK_STR_EQ(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	CHECK_STR_CONTAINS(req, "GET /kp/api/v1/rtc HTTP/1.1\r\nHost: 10.0.0.1:8080\r\n");
	CHECK_STR_CONTAINS(req, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n");
	CHECK_STR_CONTAINS(req, "Authorization: Bearer kp_tok\r\n");
	CHECK_EQ(hub_ws_request(req, sizeof req, "h", "/p", "tok\r\nX-Evil: 1", key, accept), -1);
	CHECK_EQ(hub_ws_request(req, sizeof req, "h h", "/p", "t", key, accept), -1);
	CHECK_EQ(hub_ws_request(req, 64, "h", "/p", "t", key, accept), -1);

	static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n"
				 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x02hi";
	int st;
	CHECK_EQ(hub_ws_answer(ok, sizeof ok - 1, 8192, accept, &st), (int)(sizeof ok - 1 - 4));
	CHECK_EQ(st, 101);
	CHECK_EQ(hub_ws_answer(ok, 40, 8192, accept, &st), 0);
	CHECK_EQ(hub_ws_answer(ok, 40, 39, accept, &st), -2);
	static const char refused[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
	CHECK_EQ(hub_ws_answer(refused, sizeof refused - 1, 8192, accept, &st), -1);
	CHECK_EQ(st, 401);
	static const char wrong_key[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
					"Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n";
	CHECK_EQ(hub_ws_answer(wrong_key, sizeof wrong_key - 1, 8192, accept, &st), -1);
	static const char no_upgrade[] = "HTTP/1.1 101 Switching Protocols\r\n"
					 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
	CHECK_EQ(hub_ws_answer(no_upgrade, sizeof no_upgrade - 1, 8192, accept, &st), -1);
}

static void test_frames(void)
{
	static uint8_t b[70000];
	struct hub_ws_frame f;
	/* A text frame of 125, 126 and 65536 bytes; the bound at and one past. */
	const size_t lens[] = {0, 125, 126, 65535, 65536};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		uint8_t mask[4] = {0, 0, 0, 0};
		size_t h = hub_ws_frame_header(b, 1, lens[i], mask);
		CHECK_EQ(h, (lens[i] < 126 ? 2 : lens[i] <= 0xffff ? 4 : 10) + 4);
		/* the site's frame: the same header without the mask */
		b[1] &= 0x7f;
		memmove(b + h - 4, b + h, 0);
		memset(b + h - 4, 'x', lens[i]);
		CHECK_EQ(hub_ws_frame_parse(b, h - 4 + lens[i], lens[i], &f), 1);
		CHECK_EQ(f.payload_len, lens[i]);
		CHECK_EQ(f.header_len, h - 4);
		CHECK(f.fin && f.op == 1);
		if (lens[i])
			CHECK_EQ(hub_ws_frame_parse(b, h - 4 + lens[i], lens[i] - 1, &f), -3);
		CHECK_EQ(hub_ws_frame_parse(b, h - 4 + lens[i] - (lens[i] ? 1 : 0), lens[i], &f), lens[i] ? 0 : 1);
	}
	const uint8_t masked[] = {0x81, 0x81, 1, 2, 3, 4, 'x'};
	CHECK_EQ(hub_ws_frame_parse(masked, sizeof masked, 100, &f), -1);
	const uint8_t reserved[] = {0xc1, 0x01, 'x'};
	CHECK_EQ(hub_ws_frame_parse(reserved, sizeof reserved, 100, &f), -1);
	const uint8_t long_ping[] = {0x89, 126, 0, 126};
	CHECK_EQ(hub_ws_frame_parse(long_ping, sizeof long_ping, 1000, &f), -2);
	const uint8_t split_ping[] = {0x09, 0x00};
	CHECK_EQ(hub_ws_frame_parse(split_ping, sizeof split_ping, 1000, &f), -2);
	const uint8_t huge[] = {0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 0};
	CHECK_EQ(hub_ws_frame_parse(huge, sizeof huge, 65536, &f), -3);
	/* The mask applied to our payload. */
	uint8_t p[5] = "hello", mask[4] = {1, 2, 3, 4};
	hub_ws_mask(p, 5, mask);
	CHECK(p[0] == ('h' ^ 1) && p[4] == ('o' ^ 1));
	hub_ws_mask(p, 5, mask);
	CHECK(!memcmp(p, "hello", 5));
}

int main(void)
{
	RUN(test_handshake);
	RUN(test_frames);
	return TEST_EXIT();
}
