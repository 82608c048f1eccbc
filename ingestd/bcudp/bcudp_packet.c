/* BCUDP packet parsing and serialization (BAICHUAN.md sections 6 and 7 item 11): the
 * three headers, the discovery CRC-32 and XOR keystream, and the <P2P> envelope check. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "bcudp_packet.h"

static const uint32_t xor_key[8] = {
    0x1f2d3c4b, 0x5a6c7f8d, 0x38172e4b, 0x8271635a, 0x863f1a2b, 0xa5c6f7d8, 0x8371e1b4, 0x17f2d3a5,
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t bcudp_crc32(const uint8_t *data, size_t len)
{
	uint32_t crc = 0;
	for (size_t i = 0; i < len; i++) {
		crc ^= data[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return crc;
}

void bcudp_xor(uint32_t tid, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint32_t word = xor_key[(i / 4) % 8] + tid;
		buf[i] ^= (uint8_t)(word >> (8 * (i % 4)));
	}
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The decrypted XML must be one <P2P> element, optionally after an XML declaration;
 * trailing whitespace and NUL padding are allowed. */
static int check_p2p(const char *xml, size_t len, const char **ret_reason)
{
	size_t end = len;
	while (end > 0 && (xml[end - 1] == '\0' || is_space(xml[end - 1])))
		end--;
	if (memchr(xml, '\0', end)) {
		*ret_reason = "NUL byte inside discovery XML";
		return -EBADMSG;
	}
	size_t start = 0;
	while (start < end && is_space(xml[start]))
		start++;
	if (end - start >= 5 && !memcmp(xml + start, "<?xml", 5)) {
		const char *close = memmem(xml + start, end - start, "?>", 2);
		if (!close) {
			*ret_reason = "unterminated XML declaration in discovery payload";
			return -EBADMSG;
		}
		start = (size_t)(close - xml) + 2;
		while (start < end && is_space(xml[start]))
			start++;
	}
	if (end - start < 11 || memcmp(xml + start, "<P2P>", 5) || memcmp(xml + end - 6, "</P2P>", 6)) {
		*ret_reason = "discovery XML is not a <P2P> element";
		return -EBADMSG;
	}
	return 0;
}

static int parse_discovery(const uint8_t *buf, size_t len, struct bcudp_packet *ret, const char **ret_reason)
{
	if (get32(buf + 8) != 1) {
		*ret_reason = "discovery header constant is not 1";
		return -EBADMSG;
	}
	const uint8_t *payload = buf + BCUDP_DISCOVERY_HEADER;
	size_t plen = len - BCUDP_DISCOVERY_HEADER;
	if (bcudp_crc32(payload, plen) != get32(buf + 16)) {
		*ret_reason = "discovery CRC mismatch";
		return -EBADMSG;
	}
	if (plen > BCUDP_DISCOVERY_MAX) {
		*ret_reason = "discovery XML exceeds 4096 bytes";
		return -EMSGSIZE;
	}
	uint32_t tid = get32(buf + 12);
	char *xml = ret->disc.xml;
	memcpy(xml, payload, plen);
	bcudp_xor(tid, (uint8_t *)xml, plen);
	xml[plen] = '\0';
	int r = check_p2p(xml, plen, ret_reason);
	if (r < 0)
		return r;
	ret->kind = BCUDP_DISCOVERY;
	ret->disc.tid = tid;
	ret->disc.xml_len = plen;
	return 0;
}

static int parse_data(const uint8_t *buf, size_t len, struct bcudp_packet *ret, const char **ret_reason)
{
	if (get32(buf + 8) != 0) {
		*ret_reason = "data packet reserved field is not 0";
		return -EBADMSG;
	}
	ret->kind = BCUDP_DATA;
	ret->data.conn_id = (int32_t)get32(buf + 4);
	ret->data.packet_id = get32(buf + 12);
	ret->data.payload = buf + BCUDP_DATA_HEADER;
	ret->data.len = len - BCUDP_DATA_HEADER;
	return 0;
}

static int parse_ack(const uint8_t *buf, size_t len, struct bcudp_packet *ret, const char **ret_reason)
{
	if (get32(buf + 8) != 0) {
		*ret_reason = "ACK packet reserved field is not 0";
		return -EBADMSG;
	}
	uint32_t group = get32(buf + 12);
	if (group != 0 && group != BCUDP_NONE) {
		*ret_reason = "ACK group is neither 0 nor 0xFFFFFFFF";
		return -EBADMSG;
	}
	ret->kind = BCUDP_ACK;
	ret->ack.conn_id = (int32_t)get32(buf + 4);
	ret->ack.group = group;
	ret->ack.last_id = get32(buf + 16);
	ret->ack.latency = get32(buf + 20);
	ret->ack.sack = buf + BCUDP_ACK_HEADER;
	ret->ack.sack_len = len - BCUDP_ACK_HEADER;
	return 0;
}

int bcudp_parse(const uint8_t *buf, size_t len, struct bcudp_packet *ret, const char **ret_reason)
{
	if (len < 4) {
		*ret_reason = "datagram shorter than a magic";
		return -EBADMSG;
	}
	size_t hlen, len_at;
	switch (get32(buf)) {
	case BCUDP_MAGIC_DISCOVERY:
		hlen = BCUDP_DISCOVERY_HEADER, len_at = 4;
		break;
	case BCUDP_MAGIC_DATA:
		hlen = BCUDP_DATA_HEADER, len_at = 16;
		break;
	case BCUDP_MAGIC_ACK:
		hlen = BCUDP_ACK_HEADER, len_at = 24;
		break;
	default:
		*ret_reason = "unknown BCUDP magic";
		return -EPROTO;
	}
	if (len < hlen) {
		*ret_reason = "truncated BCUDP header";
		return -EBADMSG;
	}
	uint32_t plen = get32(buf + len_at);
	if (plen > BCUDP_MAX_PAYLOAD) {
		*ret_reason = "BCUDP payload length over 65507";
		return -EMSGSIZE;
	}
	if (plen != len - hlen) {
		*ret_reason = "BCUDP payload length differs from the datagram length";
		return -EBADMSG;
	}
	switch (get32(buf)) {
	case BCUDP_MAGIC_DISCOVERY:
		return parse_discovery(buf, len, ret, ret_reason);
	case BCUDP_MAGIC_DATA:
		return parse_data(buf, len, ret, ret_reason);
	default:
		return parse_ack(buf, len, ret, ret_reason);
	}
}

int bcudp_write_discovery(uint32_t tid, const char *xml, size_t xml_len, uint8_t *out, size_t cap)
{
	if (xml_len > BCUDP_DISCOVERY_MAX)
		return -EMSGSIZE;
	if (cap < BCUDP_DISCOVERY_HEADER + xml_len)
		return -ENOBUFS;
	uint8_t *payload = out + BCUDP_DISCOVERY_HEADER;
	memcpy(payload, xml, xml_len);
	bcudp_xor(tid, payload, xml_len);
	put32(out, BCUDP_MAGIC_DISCOVERY);
	put32(out + 4, (uint32_t)xml_len);
	put32(out + 8, 1);
	put32(out + 12, tid);
	put32(out + 16, bcudp_crc32(payload, xml_len));
	return (int)(BCUDP_DISCOVERY_HEADER + xml_len);
}

int bcudp_write_data(int32_t conn_id, uint32_t packet_id, const uint8_t *payload, size_t len, uint8_t *out, size_t cap)
{
	if (len > BCUDP_MAX_PAYLOAD - BCUDP_DATA_HEADER)
		return -EMSGSIZE;
	if (cap < BCUDP_DATA_HEADER + len)
		return -ENOBUFS;
	put32(out, BCUDP_MAGIC_DATA);
	put32(out + 4, (uint32_t)conn_id);
	put32(out + 8, 0);
	put32(out + 12, packet_id);
	put32(out + 16, (uint32_t)len);
	if (len)
		memcpy(out + BCUDP_DATA_HEADER, payload, len);
	return (int)(BCUDP_DATA_HEADER + len);
}

int bcudp_write_ack(int32_t conn_id, uint32_t group, uint32_t last_id, uint32_t latency, const uint8_t *sack,
		    size_t sack_len, uint8_t *out, size_t cap)
{
	if (sack_len > BCUDP_MAX_PAYLOAD - BCUDP_ACK_HEADER)
		return -EMSGSIZE;
	if (cap < BCUDP_ACK_HEADER + sack_len)
		return -ENOBUFS;
	put32(out, BCUDP_MAGIC_ACK);
	put32(out + 4, (uint32_t)conn_id);
	put32(out + 8, 0);
	put32(out + 12, group);
	put32(out + 16, last_id);
	put32(out + 20, latency);
	put32(out + 24, (uint32_t)sack_len);
	if (sack_len)
		memcpy(out + BCUDP_ACK_HEADER, sack, sack_len);
	return (int)(BCUDP_ACK_HEADER + sack_len);
}
