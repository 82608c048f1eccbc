/* libFuzzer harness for webd's WebSocket frame reader: the input is what a client sends
 * after the upgrade; frames are read one after another as the server does, each checked
 * to lie inside the input, and unmasked in place. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "ws_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		abort();
	memcpy(b, data, size);
	size_t off = 0, used = 0;
	for (;;) {
		struct ws_frame f;
		enum ws_frame_status st = ws_frame_parse(b + off, size - off, KP_CONTROL_MESSAGE_MAX - used, &f);
		if (st != WSF_OK)
			break;
		if (f.header_len + f.payload_len > size - off)
			abort();
		ws_frame_unmask(b + off + f.header_len, f.payload_len, f.mask);
		used = f.fin || f.op >= 8 ? 0 : used + f.payload_len;
		off += f.header_len + f.payload_len;
	}
	free(b);
	return 0;
}
