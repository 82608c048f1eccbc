/* libFuzzer harness for BCUDP datagrams: any input is parsed; whatever parses must
 * serialize back to the same bytes; discovery XML (and the raw input) goes through the
 * discovery message parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bcudp_disc.h"
#include "bcudp_packet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bcudp_packet p;
	static uint8_t out[BCUDP_MAX_PAYLOAD + BCUDP_ACK_HEADER];
	const char *reason = NULL;
	/* The discovery message parser also sees the raw bytes, past the CRC gate. */
	struct bcudp_disc raw;
	if (bcudp_disc_parse((const char *)data, size, &raw, &reason) == 0) {
		char xml[BCUDP_DISCOVERY_MAX];
		if (bcudp_disc_build(&raw, xml, sizeof xml) < 0)
			abort();
	}
	reason = NULL;
	if (bcudp_parse(data, size, &p, &reason) < 0) {
		if (!reason)
			abort();
		return 0;
	}
	int n = -1;
	switch (p.kind) {
	case BCUDP_DISCOVERY: {
		n = bcudp_write_discovery(p.disc.tid, p.disc.xml, p.disc.xml_len, out, sizeof out);
		struct bcudp_disc d;
		if (bcudp_disc_parse(p.disc.xml, p.disc.xml_len, &d, &reason) == 0) {
			char xml[BCUDP_DISCOVERY_MAX];
			if (bcudp_disc_build(&d, xml, sizeof xml) < 0)
				abort();
		}
		break;
	}
	case BCUDP_DATA:
		n = bcudp_write_data(p.data.conn_id, p.data.packet_id, p.data.payload, p.data.len, out, sizeof out);
		break;
	case BCUDP_ACK:
		n = bcudp_write_ack(p.ack.conn_id, p.ack.group, p.ack.last_id, p.ack.latency, p.ack.sack,
				    p.ack.sack_len, out, sizeof out);
		break;
	}
	/* Data payloads between 65487 and 65507 bytes parse but are too big to send. */
	if (n < 0 && !(p.kind == BCUDP_DATA && p.data.len > BCUDP_MAX_PAYLOAD - BCUDP_DATA_HEADER) &&
	    !(p.kind == BCUDP_ACK && p.ack.sack_len > BCUDP_MAX_PAYLOAD - BCUDP_ACK_HEADER))
		abort();
	if (n >= 0 && ((size_t)n != size || memcmp(out, data, size)))
		abort();
	return 0;
}
