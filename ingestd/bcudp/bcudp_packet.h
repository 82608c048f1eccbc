/* BCUDP datagrams (BAICHUAN.md section 6): parsing and serializing the Discovery, Data
 * and ACK packets, the discovery XOR keystream and CRC-32. Pure code over byte buffers:
 * every malformed case of BAICHUAN.md section 7 item 11 is rejected with a reason. */
#ifndef KP_BCUDP_PACKET_H
#define KP_BCUDP_PACKET_H

#include <stddef.h>
#include <stdint.h>

#define BCUDP_MAGIC_DISCOVERY 0x2a87cf3au
#define BCUDP_MAGIC_DATA      0x2a87cf10u
#define BCUDP_MAGIC_ACK       0x2a87cf20u

#define BCUDP_DISCOVERY_HEADER 20
#define BCUDP_DATA_HEADER      20
#define BCUDP_ACK_HEADER       28
/* Largest payload a UDP datagram can carry over IPv4. */
#define BCUDP_MAX_PAYLOAD 65507
/* The MTU we advertise in C2D_C; Data payloads are chunked at MTU - 20. */
#define BCUDP_MTU   1350
#define BCUDP_CHUNK (BCUDP_MTU - BCUDP_DATA_HEADER)
/* Largest discovery XML we accept (real messages are a few hundred bytes). */
#define BCUDP_DISCOVERY_MAX 4096
/* The "no packet" id and the "nothing received yet" ACK group. */
#define BCUDP_NONE 0xffffffffu

enum bcudp_kind { BCUDP_DISCOVERY = 1, BCUDP_DATA, BCUDP_ACK };

struct bcudp_packet {
	enum bcudp_kind kind;
	union {
		struct {
			uint32_t tid;
			size_t xml_len;
			char xml[BCUDP_DISCOVERY_MAX + 1]; /* decrypted, NUL-terminated */
		} disc;
		struct {
			int32_t conn_id;
			uint32_t packet_id;
			const uint8_t *payload; /* points into the datagram */
			size_t len;
		} data;
		struct {
			int32_t conn_id;
			uint32_t group;   /* 0, or BCUDP_NONE: nothing received yet */
			uint32_t last_id; /* last in-order packet id, BCUDP_NONE = none */
			uint32_t latency;
			const uint8_t *sack; /* one byte per id after last_id: 1 received, 0 missing */
			size_t sack_len;
		} ack;
	};
};

/* Parses one datagram. Returns 0, or -EPROTO (unknown magic), -EBADMSG (truncated,
 * length mismatch, constant, reserved field, group, CRC or XML), -EMSGSIZE (payload over
 * BCUDP_MAX_PAYLOAD, discovery XML over BCUDP_DISCOVERY_MAX), each with a reason. */
int bcudp_parse(const uint8_t *buf, size_t len, struct bcudp_packet *ret, const char **ret_reason);

/* Serializers write to out and return the datagram length, or -ENOBUFS / -EMSGSIZE. */
int bcudp_write_discovery(uint32_t tid, const char *xml, size_t xml_len, uint8_t *out, size_t cap);
int bcudp_write_data(int32_t conn_id, uint32_t packet_id, const uint8_t *payload, size_t len, uint8_t *out, size_t cap);
int bcudp_write_ack(int32_t conn_id, uint32_t group, uint32_t last_id, uint32_t latency, const uint8_t *sack,
		    size_t sack_len, uint8_t *out, size_t cap);

/* CRC-32, reflected polynomial 0xEDB88320, initial value 0, no final XOR. */
uint32_t bcudp_crc32(const uint8_t *data, size_t len);
/* XORs buf with the discovery keystream for tid (encrypts and decrypts). */
void bcudp_xor(uint32_t tid, uint8_t *buf, size_t len);

#endif
