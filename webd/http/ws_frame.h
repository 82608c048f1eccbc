/* RFC 6455 frame headers as the HTTP core reads them from clients: pure, no I/O. A frame is
 * accepted only whole (header and payload present), masked, without reserved bits, with
 * a payload within the caller's limit (the message ceiling minus what earlier fragments
 * used), and control frames unfragmented and at most 125 bytes. */
#ifndef KP_WEB_WS_FRAME_H
#define KP_WEB_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ws_frame_status {
	WSF_INCOMPLETE = 0,
	WSF_OK = 1,
	WSF_RESERVED = -1,    /* reserved bits set */
	WSF_UNMASKED = -2,    /* a client frame without a mask */
	WSF_BAD_CONTROL = -3, /* fragmented or long control frame */
	WSF_TOO_BIG = -4,     /* payload over the limit */
};

struct ws_frame {
	bool fin;
	int op;
	size_t header_len; /* mask included */
	size_t payload_len;
	uint8_t mask[4];
};

enum ws_frame_status ws_frame_parse(const uint8_t *b, size_t n, size_t max_payload, struct ws_frame *f);
/* XORs the payload with the mask in place. */
void ws_frame_unmask(uint8_t *payload, size_t len, const uint8_t mask[4]);

#endif
