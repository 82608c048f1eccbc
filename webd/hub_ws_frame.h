/* The client side of RFC 6455 for a hub's signaling link to a site (hub_ws.c): the
 * upgrade request and the check of its answer, masked frames out, the site's frames in
 * (unmasked, no reserved bits, control frames whole and short, a payload within the
 * caller's bound). Pure, no I/O: test_webd_hub_ws_frame.c and a fuzzer drive it. */
#ifndef KP_WEBD_HUB_WS_FRAME_H
#define KP_WEBD_HUB_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The upgrade request for path at host (HOST[:PORT]) with the bearer token and a
 * Sec-WebSocket-Key made from key16 (16 random bytes), into buf: its length, or -1
 * when it does not fit or host, path or token hold a control character or space. */
int hub_ws_request(char *buf, size_t cap, const char *host, const char *path, const char *token,
		   const uint8_t key16[16], char accept[29]);
/* The site's answer head in b[0..n): 0 while it is incomplete (no empty line yet), the
 * length of the head (through the empty line) when it is 101 with Upgrade: websocket
 * and the Sec-WebSocket-Accept of accept, -1 when it is anything else, -2 when n passes
 * max without an empty line. */
int hub_ws_answer(const char *b, size_t n, size_t max, const char *accept, int *status);

/* One frame from the site: 0 incomplete, 1 whole (op, fin, header and payload length
 * set), -1 masked or reserved bits, -2 a bad control frame, -3 payload over max. */
struct hub_ws_frame {
	bool fin;
	int op;
	size_t header_len, payload_len;
};
int hub_ws_frame_parse(const uint8_t *b, size_t n, size_t max, struct hub_ws_frame *f);
/* The header of a masked frame (fin set) of len bytes with mask into out (at most 14
 * bytes): its length. The caller XORs the payload with hub_ws_mask. */
size_t hub_ws_frame_header(uint8_t *out, int op, size_t len, const uint8_t mask[4]);
void hub_ws_mask(uint8_t *p, size_t len, const uint8_t mask[4]);

#endif
