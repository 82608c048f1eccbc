/* RFC 6455 client frame header parsing and unmasking (ws_frame.h). */
#include "ws_frame.h"

#include <string.h>

enum ws_frame_status ws_frame_parse(const uint8_t *b, size_t n, size_t max_payload, struct ws_frame *f)
{
	if (n < 2)
		return WSF_INCOMPLETE;
	if (b[0] & 0x70)
		return WSF_RESERVED;
	if (!(b[1] & 0x80))
		return WSF_UNMASKED;
	f->fin = b[0] & 0x80;
	f->op = b[0] & 0x0f;
	uint64_t len = b[1] & 0x7f;
	size_t h = 2;
	if (len == 126) {
		if (n < 4)
			return WSF_INCOMPLETE;
		len = (uint64_t)b[2] << 8 | b[3];
		h = 4;
	} else if (len == 127) {
		if (n < 10)
			return WSF_INCOMPLETE;
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | b[2 + i];
		h = 10;
	}
	if (f->op >= 8 && (!f->fin || len > 125))
		return WSF_BAD_CONTROL;
	if (f->op < 8 && len > max_payload)
		return WSF_TOO_BIG;
	if (n < h + 4 || n - h - 4 < len)
		return WSF_INCOMPLETE;
	memcpy(f->mask, b + h, 4);
	f->header_len = h + 4;
	f->payload_len = (size_t)len;
	return WSF_OK;
}

void ws_frame_unmask(uint8_t *payload, size_t len, const uint8_t mask[4])
{
	for (size_t i = 0; i < len; i++)
		payload[i] ^= mask[i & 3];
}
