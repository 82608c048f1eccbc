/* libFuzzer harness for the IPC frame decoder: the input is a byte stream as it would
 * arrive on a link; every frame in it is checked between every pair of processes. */
#include <stddef.h>
#include <stdint.h>

#include "ipc_frame.h"
#include "kp_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= 4) {
		uint32_t len;
		const char *reason;
		if (kp_frame_header(data, &len, &reason) < 0 || size - 4 < len)
			return 0;
		for (int from = kp_Peer_PEER_SUPERVISOR; from <= kp_Peer_PEER_TIER; from++)
			for (int to = kp_Peer_PEER_SUPERVISOR; to <= kp_Peer_PEER_TIER; to++) {
				kp_Envelope env;
				if (kp_frame_decode(data + 4, len, (kp_Peer)from, (kp_Peer)to, KP_IPC_TAIL_MAX_PEER,
						    &env, &reason) == 0) {
					uint8_t out[KP_FRAME_HEAD_MAX];
					size_t n;
					if (kp_frame_encode(&env, out, sizeof out, &n) < 0)
						__builtin_trap(); /* whatever decodes must encode again */
				}
			}
		data += 4 + len;
		size -= 4 + len;
	}
	return 0;
}
