/* Unit tests for BCUDP packets and discovery XML: round trips of every packet type,
 * known answers for the CRC-32 and the XOR keystream (computed independently with
 * python3 zlib/struct), and every malformed case of BAICHUAN.md section 7 item 11. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "bcudp_disc.h"
#include "bcudp_packet.h"
#include "test.h"

static struct bcudp_packet pkt;

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = strlen(hex) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static const char c2d_xml[] = "<P2P><C2D_C><uid>95270000YGAKNWKJ</uid><cli><port>53521</port></cli><cid>82000</cid>"
			      "<mtu>1350</mtu><debug>0</debug><p>MAC</p></C2D_C></P2P>";
/* python3: struct.pack("<IIIII", 0x2A87CF3A, len(enc), 1, 0xA7, zlib.crc32(enc, 0xFFFFFFFF)
 * ^ 0xFFFFFFFF) + enc, where enc is c2d_xml XORed with the keystream for tid 0xA7. */
static const char c2d_packet_hex[] =
    "3acf872a8b00000001000000a70000008ad1f122ce6c1f4f0abc2f68b67154063d1118e6ec230ab448c8f6956bbb36c2079aa55c"
    "b800026a5de4526691427e063d141ef0a6240ab54acaf79974921ef138eace389150442108e3053ecc16250831544dadb1735bb843"
    "95b2d065d342b67ce8dd7a8649132350e50e2f951027042e0014e0a77d01ba0fc68be418de5ef372e8dd54c078725c0abc430ac07e"
    "29";

static void test_crc_known_answer(void)
{
	/* zlib.crc32(b"123456789", 0xFFFFFFFF) ^ 0xFFFFFFFF */
	CHECK_EQ(bcudp_crc32((const uint8_t *)"123456789", 9), 0x2dfd2d88u);
	CHECK_EQ(bcudp_crc32((const uint8_t *)"<P2P></P2P>", 11), 0x91c89baeu);
	CHECK_EQ(bcudp_crc32(NULL, 0), 0);
}

static void test_keystream_known_answer(void)
{
	/* The keystream is the XOR of zeros; tid 0xFFFFFFF0 makes every word wrap mod 2^32,
	 * and 40 bytes show the cycle restarting at byte 32. */
	uint8_t ks[40] = {0}, want[40];
	unhex("3b3c2d1f7d7f6c5a3b2e17384a6371821b1a3f86c8f7c6a5a4e1718395d3f2173b3c2d1f7d7f6c5a", want);
	bcudp_xor(0xfffffff0u, ks, sizeof ks);
	CHECK(!memcmp(ks, want, sizeof ks));
}

static void test_discovery_known_packet(void)
{
	uint8_t want[512], out[512];
	size_t n = unhex(c2d_packet_hex, want);
	int len = bcudp_write_discovery(0xa7, c2d_xml, strlen(c2d_xml), out, sizeof out);
	CHECK_EQ(len, (long long)n);
	CHECK(!memcmp(out, want, n));
	const char *reason = NULL;
	CHECK_EQ(bcudp_parse(want, n, &pkt, &reason), 0);
	CHECK_EQ(pkt.kind, BCUDP_DISCOVERY);
	CHECK_EQ(pkt.disc.tid, 0xa7);
	CHECK_EQ(pkt.disc.xml_len, strlen(c2d_xml));
	CHECK(!strcmp(pkt.disc.xml, c2d_xml));

	struct bcudp_disc d;
	CHECK_EQ(bcudp_disc_parse(pkt.disc.xml, pkt.disc.xml_len, &d, &reason), 0);
	CHECK_EQ(d.type, BCUDP_C2D_C);
	CHECK(!strcmp(d.uid, "95270000YGAKNWKJ"));
	CHECK_EQ(d.port, 53521);
	CHECK_EQ(d.cid, 82000);
	CHECK_EQ(d.mtu, 1350);
}

static void test_data_round_trip(void)
{
	uint8_t payload[BCUDP_CHUNK], out[BCUDP_MTU];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 7);
	int len = bcudp_write_data(-5, 0xfffffffeu, payload, sizeof payload, out, sizeof out);
	CHECK_EQ(len, BCUDP_MTU);
	const char *reason = NULL;
	CHECK_EQ(bcudp_parse(out, (size_t)len, &pkt, &reason), 0);
	CHECK_EQ(pkt.kind, BCUDP_DATA);
	CHECK_EQ(pkt.data.conn_id, -5);
	CHECK_EQ(pkt.data.packet_id, 0xfffffffeu);
	CHECK_EQ(pkt.data.len, sizeof payload);
	CHECK(!memcmp(pkt.data.payload, payload, sizeof payload));
	CHECK_EQ(bcudp_write_data(1, 0, payload, sizeof payload, out, sizeof out - 1), -ENOBUFS);
	/* An empty data packet is well formed. */
	len = bcudp_write_data(1, 3, NULL, 0, out, sizeof out);
	CHECK_EQ(len, BCUDP_DATA_HEADER);
	CHECK_EQ(bcudp_parse(out, (size_t)len, &pkt, &reason), 0);
	CHECK_EQ(pkt.data.len, 0);
}

static void test_ack_round_trip(void)
{
	uint8_t sack[5] = {0, 1, 1, 0, 1}, out[64];
	int len = bcudp_write_ack(77, 0, 41, 12000, sack, sizeof sack, out, sizeof out);
	CHECK_EQ(len, BCUDP_ACK_HEADER + 5);
	const char *reason = NULL;
	CHECK_EQ(bcudp_parse(out, (size_t)len, &pkt, &reason), 0);
	CHECK_EQ(pkt.kind, BCUDP_ACK);
	CHECK_EQ(pkt.ack.conn_id, 77);
	CHECK_EQ(pkt.ack.group, 0);
	CHECK_EQ(pkt.ack.last_id, 41);
	CHECK_EQ(pkt.ack.latency, 12000);
	CHECK_EQ(pkt.ack.sack_len, 5);
	CHECK(!memcmp(pkt.ack.sack, sack, 5));
	len = bcudp_write_ack(77, BCUDP_NONE, BCUDP_NONE, 0, NULL, 0, out, sizeof out);
	CHECK_EQ(bcudp_parse(out, (size_t)len, &pkt, &reason), 0);
	CHECK_EQ(pkt.ack.group, BCUDP_NONE);
	CHECK_EQ(pkt.ack.last_id, BCUDP_NONE);
}

static void test_disc_messages_round_trip(void)
{
	const struct bcudp_disc msgs[] = {
	    {.type = BCUDP_C2D_C, .uid = "UID1", .port = 53500, .cid = 12, .mtu = 1350},
	    {.type = BCUDP_D2C_C_R, .cid = 12, .did = -7, .timer_def = 3000, .timer_hb = 10000, .timer_hbt = 60000},
	    {.type = BCUDP_C2D_HB, .cid = 12, .did = 99},
	    {.type = BCUDP_D2C_HB, .cid = 12, .did = 99},
	    {.type = BCUDP_C2D_DISC, .cid = 12, .did = 99},
	    {.type = BCUDP_D2C_DISC, .cid = 2147483647, .did = -2147483647 - 1},
	};
	for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
		char xml[512];
		uint8_t dgram[600];
		int n = bcudp_disc_build(&msgs[i], xml, sizeof xml);
		CHECK(n > 0);
		int len = bcudp_write_discovery((uint32_t)i * 0x01010101u, xml, (size_t)n, dgram, sizeof dgram);
		const char *reason = NULL;
		CHECK_EQ(bcudp_parse(dgram, (size_t)len, &pkt, &reason), 0);
		struct bcudp_disc d;
		CHECK_EQ(bcudp_disc_parse(pkt.disc.xml, pkt.disc.xml_len, &d, &reason), 0);
		CHECK_EQ(d.type, msgs[i].type);
		CHECK(!strcmp(d.uid, msgs[i].uid));
		CHECK_EQ(d.port, msgs[i].port);
		CHECK_EQ(d.cid, msgs[i].cid);
		CHECK_EQ(d.did, msgs[i].did);
		CHECK_EQ(d.mtu, msgs[i].mtu);
		CHECK_EQ(d.timer_def, msgs[i].timer_def);
		CHECK_EQ(d.timer_hb, msgs[i].timer_hb);
		CHECK_EQ(d.timer_hbt, msgs[i].timer_hbt);
		CHECK_EQ(d.rsp, msgs[i].rsp);
	}
	char small[20];
	CHECK_EQ(bcudp_disc_build(&msgs[0], small, sizeof small), -ENOBUFS);
}

static void test_disc_parse_rejects(void)
{
	struct bcudp_disc d;
	const char *reason = NULL;
	static const char *const bad[] = {
	    "<P2P><C2D_HB><cid>1</cid></C2D_HB></P2P>",                          /* no did */
	    "<P2P><C2D_HB><cid>x</cid><did>2</did></C2D_HB></P2P>",              /* not a number */
	    "<P2P><D2C_C_R><cid>1</cid><did>99999999999</did></D2C_C_R></P2P>",  /* out of range */
	    "<P2P><C2D_C><uid>U</uid><cid>1</cid><mtu>1350</mtu></C2D_C></P2P>", /* no cli port */
	    "<P2P><C2D_C><uid>U</uid><cli><port>70000</port></cli><cid>1</cid><mtu>1</mtu></C2D_C></P2P>",
	    "<P2P><C2D_C><uid>U</uid><cli><port>1</port></cli><mtu>1</mtu></C2D_C></P2P>", /* no cid */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		reason = NULL;
		CHECK_EQ(bcudp_disc_parse(bad[i], strlen(bad[i]), &d, &reason), -EBADMSG);
		CHECK(reason != NULL);
	}
	static const char unknown[] = "<P2P><D2C_T><sid>1</sid></D2C_T></P2P>";
	CHECK_EQ(bcudp_disc_parse(unknown, strlen(unknown), &d, &reason), -ENOTSUP);
	/* An element without its closing tag is no message we know. */
	static const char open_only[] = "<P2P><C2D_HB><cid>1</cid><did>2</did></P2P>";
	CHECK_EQ(bcudp_disc_parse(open_only, strlen(open_only), &d, &reason), -ENOTSUP);
	char uid[200] = "<P2P><C2D_C><uid>";
	memset(uid + strlen(uid), 'A', 70);
	strcat(uid, "</uid><cli><port>1</port></cli><cid>1</cid><mtu>1</mtu></C2D_C></P2P>");
	CHECK_EQ(bcudp_disc_parse(uid, strlen(uid), &d, &reason), -EBADMSG);
}

/* Parses buf and expects err with a reason containing want. */
static void expect_reject(const uint8_t *buf, size_t len, int err, const char *want)
{
	const char *reason = NULL;
	int r = bcudp_parse(buf, len, &pkt, &reason);
	CHECK_EQ(r, err);
	CHECK(reason != NULL);
	if (reason)
		CHECK_STR_CONTAINS(reason, want);
}

static void test_malformed(void)
{
	uint8_t b[600] = {0}, payload[16] = {1, 2, 3};
	size_t n;

	expect_reject(b, 3, -EBADMSG, "shorter than a magic");
	put32(b, 0x2a87cf31); /* the relay magic is not ours to accept */
	expect_reject(b, 20, -EPROTO, "unknown BCUDP magic");
	put32(b, 0x0abcdef0);
	expect_reject(b, 20, -EPROTO, "unknown BCUDP magic");

	n = (size_t)bcudp_write_data(1, 2, payload, sizeof payload, b, sizeof b);
	expect_reject(b, 19, -EBADMSG, "truncated");
	expect_reject(b, n - 1, -EBADMSG, "differs from the datagram length");
	put32(b + 16, 65508);
	expect_reject(b, n, -EMSGSIZE, "over 65507");
	n = (size_t)bcudp_write_data(1, 2, payload, sizeof payload, b, sizeof b);
	put32(b + 8, 1);
	expect_reject(b, n, -EBADMSG, "reserved field");

	n = (size_t)bcudp_write_ack(1, 0, 5, 0, payload, 3, b, sizeof b);
	expect_reject(b, 27, -EBADMSG, "truncated");
	expect_reject(b, n + 1, -EBADMSG, "differs from the datagram length");
	put32(b + 12, 1);
	expect_reject(b, n, -EBADMSG, "ACK group");
	put32(b + 12, 0);
	put32(b + 8, 0x100);
	expect_reject(b, n, -EBADMSG, "reserved field");

	n = unhex(c2d_packet_hex, b);
	put32(b + 8, 2);
	expect_reject(b, n, -EBADMSG, "constant is not 1");
	n = unhex(c2d_packet_hex, b);
	b[40] ^= 0x01;
	expect_reject(b, n, -EBADMSG, "CRC mismatch");
	n = unhex(c2d_packet_hex, b);
	put32(b + 4, 65508);
	expect_reject(b, n, -EMSGSIZE, "over 65507");
	n = unhex(c2d_packet_hex, b);
	expect_reject(b, n - 1, -EBADMSG, "differs from the datagram length");

	/* Valid CRC over XML that is not a <P2P> element, or that hides a NUL. */
	static const char *const not_p2p[] = {"<XML><C2D_C></C2D_C></XML>", "<P2P><C2D_C>", "", "<P2P>\0</P2P>",
					      "<?xml version=\"1.0\"<P2P></P2P>"};
	static const size_t not_p2p_len[] = {27, 12, 0, 12, 31};
	for (size_t i = 0; i < 5; i++) {
		n = (size_t)bcudp_write_discovery(9, not_p2p[i], not_p2p_len[i], b, sizeof b);
		const char *reason = NULL;
		CHECK_EQ(bcudp_parse(b, n, &pkt, &reason), -EBADMSG);
	}
	/* An XML declaration and NUL padding are accepted. */
	static const char decl[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<P2P><C2D_HB><cid>1</cid><did>2</did>"
				   "</C2D_HB></P2P>\n\0\0";
	n = (size_t)bcudp_write_discovery(9, decl, sizeof decl, b, sizeof b);
	const char *reason = NULL;
	CHECK_EQ(bcudp_parse(b, n, &pkt, &reason), 0);

	/* Discovery XML over 4096 bytes (with a valid CRC) is refused before it is copied. */
	static uint8_t big[BCUDP_DISCOVERY_HEADER + BCUDP_DISCOVERY_MAX + 1];
	memset(big, 'x', sizeof big);
	put32(big, BCUDP_MAGIC_DISCOVERY);
	put32(big + 4, BCUDP_DISCOVERY_MAX + 1);
	put32(big + 8, 1);
	put32(big + 12, 0);
	put32(big + 16, bcudp_crc32(big + BCUDP_DISCOVERY_HEADER, BCUDP_DISCOVERY_MAX + 1));
	expect_reject(big, sizeof big, -EMSGSIZE, "exceeds 4096");
	CHECK_EQ(bcudp_write_discovery(0, (const char *)big, BCUDP_DISCOVERY_MAX + 1, big, sizeof big), -EMSGSIZE);
}

int main(void)
{
	RUN(test_crc_known_answer);
	RUN(test_keystream_known_answer);
	RUN(test_discovery_known_packet);
	RUN(test_data_round_trip);
	RUN(test_ack_round_trip);
	RUN(test_disc_messages_round_trip);
	RUN(test_disc_parse_rejects);
	RUN(test_malformed);
	return TEST_EXIT();
}
